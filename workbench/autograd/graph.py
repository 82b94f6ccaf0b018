"""The tape's node record, the module-scope stack, and the listeners the visualizer attaches.

A Node is what ``tensor.grad_fn`` is: one per recorded op application. It holds only what the
engine needs (edges, saved tensors) plus what the visualizer shows (op name, scope, group, site),
all cheap to record: no tensor statistics here, they are computed when a viewer asks.
"""
import contextvars
import itertools
import sys
import weakref

_seq = itertools.count()
SCOPE = contextvars.ContextVar("workbench_scope", default="")
GROUP = contextvars.ContextVar("workbench_group", default=None)
LISTENERS = []  # callables(node) told of every node recorded; empty means one truthiness check per op
TRACE = [1]  # trace level: >= 2 records the source site of every node
ANOMALY = [False, True]  # [enabled, check_nan]; set by workbench.autograd.detect_anomaly
# While a workbench.viz recorder is active: CUTS[0](tensor, reason, source) is told where the graph is
# cut (reason "detach", "no_grad" or "numpy"); None otherwise, so cutting costs one check.
CUTS = [None]
# callables(phase, roots) told when a backward pass that accumulates into .grad begins ("begin") and
# ends ("end"): the gradient monitor's per-step boundary; empty means one truthiness check per backward.
BACKWARD_HOOKS = []


class RemovableHandle:
    """Returned by every register_*hook; ``remove()`` detaches the hook."""

    _ids = itertools.count()

    def __init__(self, container):
        self.id = next(RemovableHandle._ids)
        self._ref = weakref.ref(container) if container is not None else None

    def remove(self):
        c = self._ref() if self._ref is not None else None
        if c is not None:
            c.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.remove()


class _HookDict(dict):
    __slots__ = ("__weakref__",)


def add_hook(owner, attr, fn):
    d = getattr(owner, attr)
    if d is None:
        d = _HookDict()
        setattr(owner, attr, d)
    h = RemovableHandle(d)
    d[h.id] = fn
    return h


def user_site(depth=2):
    """(file, line, function) of the first frame outside workbench's own code (the user's line)."""
    f = sys._getframe(depth)
    while f is not None:
        fn = f.f_code.co_filename
        if "/workbench/" not in fn.replace("\\", "/") or "/tests/" in fn.replace("\\", "/"):
            return (fn, f.f_lineno, f.f_code.co_name)
        f = f.f_back
    return None


def format_site(site):
    return f"{site[0]}:{site[1]} in {site[2]}" if site else "<unknown location>"


class Node:
    """A recorded op application: ``tensor.grad_fn``. Also the ``ctx`` of its Function.

    ``next_functions`` holds one ``(node, output_nr)`` pair per tensor input, ``None`` where the input
    does not require grad, so the backward graph can be walked as in PyTorch.
    """

    __slots__ = ("next_functions", "_saved", "_saved_versions", "_saved_boxes", "needs_input_grad",
                 "_tensor_pos", "scope", "group", "site", "_seq", "_pre_hooks", "_hooks", "_tensor_pre_hooks",
                 "_retain", "_materialize", "_non_differentiable", "_dirty", "_out_meta", "xp",
                 "_freed", "_stack", "metadata", "__dict__", "__weakref__")
    _fn = None  # the Function class this node records
    _op = ""  # short op name shown by the visualizer

    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<{type(self).__name__} object at {id(self):#x}>"

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    # --- hooks ---------------------------------------------------------------------------------
    def register_prehook(self, fn):
        """fn(grad_outputs) -> new grad_outputs or None, called before this node's backward."""
        return add_hook(self, "_pre_hooks", fn)

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) -> new grad_inputs or None, called after backward."""
        return add_hook(self, "_hooks", fn)

    # --- saved tensors -------------------------------------------------------------------------
    @property
    def saved_tensors(self):
        from .function import unpack_saved

        return unpack_saved(self)

    def _raise_freed(self):
        raise RuntimeError(
            f"Trying to backward through the graph a second time (or directly access saved tensors after they "
            f"have already been freed). Saved intermediate values of the graph are freed when you call .backward() "
            f"or autograd.grad(). The node is {self.name()}"
            + (f" in module '{self.scope}'" if self.scope else "")
            + (f", created at {format_site(self.site)}" if self.site else "")
            + ". Specify retain_graph=True on the first backward call if you need to backward through the "
            "graph a second time or if you need to access saved tensors after calling backward."
        )

    @property
    def op(self):
        return self._op


class AccumulateGrad(Node):
    """The node that accumulates into a leaf tensor's ``.grad`` (found in ``next_functions``)."""

    __slots__ = ("_variable_ref",)
    _op = "AccumulateGrad"

    @property
    def variable(self):
        return self._variable_ref()


def accumulator(t):
    """The AccumulateGrad node of leaf ``t`` (one per leaf, kept while anything references it)."""
    node = t._acc
    if node is None:
        node = AccumulateGrad()
        node.next_functions = ()
        node._variable_ref = weakref.ref(t)
        from .. import _backend

        node.xp = _backend.xp_of(t._data)
        node._seq = -1  # leaves run last among ready nodes
        node.scope = ""
        node.group = None
        node.site = None
        node._pre_hooks = node._hooks = node._tensor_pre_hooks = node._retain = None
        node._saved = None
        node._freed = False
        node.metadata = {}
        t._acc = node  # the leaf owns its accumulator; the accumulator only points back weakly
    return node


def anomaly_record(node):
    """In anomaly mode every node keeps the forward stack that created it, for backward errors."""
    import traceback

    node.site = node.site or user_site(3)
    node._stack = "".join(traceback.format_stack()[:-3])
