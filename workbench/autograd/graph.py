"""The tape's node record, the module-scope stack, and the listeners the visualizer attaches.

A Node is what ``tensor.grad_fn`` is: one per recorded op application. It holds only what the
engine needs (edges, saved tensors) plus what the visualizer shows (op name, scope, group, site),
all cheap to record: no tensor statistics here, they are computed when a viewer asks.
"""
import contextvars
import functools
import itertools
import os
import sys
import traceback
from collections import OrderedDict
import weakref

from .. import _accel, _backend
from .._core import Tensor
from ..utils.hooks import RemovableHandle, add_hook as _add_hook  # noqa: F401 - RemovableHandle: PyTorch's path too

_seq = itertools.count()
SCOPE = contextvars.ContextVar("workbench_scope", default="")
GROUP = contextvars.ContextVar("workbench_group", default=None)


class _Listeners(OrderedDict):
    """The listeners' hook dict, with ``fns``, a tuple of its values kept in step (by item assignment,
    ``del`` and ``clear``: what ``add_hook`` and ``RemovableHandle`` use), for the loop every recorded op
    runs while something listens: iterating an OrderedDict's values there costs ~0.2 us per op, a tuple
    ~0.02 (benchmarks/op_overhead.py, "a Python listener"), and a listener may remove itself meanwhile.

    >>> d = _Listeners(); d[0] = print; d.fns
    (<built-in function print>,)
    >>> del d[0]; d.fns
    ()
    """

    def __init__(self):
        super().__init__()
        self.fns = ()

    def __setitem__(self, key, fn):
        super().__setitem__(key, fn)
        self.fns = tuple(self.values())

    def __delitem__(self, key):
        super().__delitem__(key)
        self.fns = tuple(self.values())

    def clear(self):
        super().clear()
        self.fns = ()


# callables(node, inputs, outputs) told of every node recorded, by handle id; empty: one check per op
LISTENERS = _Listeners()
TRACE = [1]  # trace level: >= 2 records the source site of every node
ANOMALY = [False, True]  # [enabled, check_nan]; set by workbench.autograd.detect_anomaly
# While a workbench.viz recorder is active: CUTS[0](tensor, reason, source) is told where the graph is
# cut (reason "detach", "no_grad" or "numpy"); None otherwise, so cutting costs one check.
CUTS = [None]
# callables(phase, roots) told when a backward pass that accumulates into .grad begins ("begin") and
# ends ("end"): the gradient monitor's per-step boundary; empty means one truthiness check per backward.
BACKWARD_HOOKS = []


def add_hook(owner, attr, fn):
    """Store ``fn`` in the hook dict ``owner.<attr>`` (created on first use); returns its RemovableHandle."""
    d = getattr(owner, attr)
    if d is None:
        d = OrderedDict()
        setattr(owner, attr, d)
    if isinstance(owner, Node):
        owner._hooked = True  # the engine checks this one flag, not four hook dicts, per node
    return _add_hook(d, fn)


# .../workbench/ (from the package: a compiled graph module's own file lies in the build cache)
_PKG = os.path.join(os.path.abspath(sys.modules[__name__.partition(".")[0]].__path__[0]), "")


# file name -> whether it is workbench's own (every backward() and in-place op asks for its caller's frame).
# Keyed by the name, a str whose hash is cached: a code object's hash is recomputed on every lookup (its
# consts and bytecode), which made this search cost as much as a small op
_OURS = {}


def user_frame(depth=2):
    """The first frame outside workbench's own code (the user's), searched from ``depth`` frames up: the
    frames the caller knows to be workbench's are skipped unread. Compiled modules (``workbench._accel``)
    have no frames, so there the search starts at the innermost Python frame (this function's own, or its
    nearest Python caller when it is compiled too)."""
    try:
        f = sys._getframe(0 if _accel.compiled_any() else depth)
    except ValueError:
        return None
    ours = _OURS
    while f is not None:
        name = f.f_code.co_filename
        mine = ours.get(name)
        if mine is None:
            mine = ours[name] = name.startswith(_PKG)
        if not mine:
            return f
        f = f.f_back
    return None


def user_site(depth=2):
    """(file, line, function) of the first frame outside workbench's own code (the user's line)."""
    f = user_frame(depth + 1)
    if f is None:
        return None
    code = f.f_code
    return (code.co_filename, f.f_lineno, code.co_name)


class Mark:
    """Where user code stands (its code object and last instruction), made a site only when asked for it.

    Taking a frame's line number costs as much as a small op; every backward() keeps the site of its call,
    and needs it only in the error of a second backward through what it freed.

    >>> site = user_mark(1).site()
    >>> site[1] > 0
    True
    """

    __slots__ = ("code", "lasti")

    def site(self):
        """(file, line, function), as user_site gives it."""
        code, lasti = self.code, self.lasti
        line = next((ln for start, end, ln in code.co_lines() if start <= lasti < end), None)
        return (code.co_filename, line, code.co_name)


def user_mark(depth=2):
    """user_site's frame as a Mark (its line is read only when needed)."""
    f = user_frame(depth + 1)
    if f is None:
        return None
    m = Mark()
    m.code, m.lasti = f.f_code, f.f_lasti
    return m


def set_trace_level(level):
    """1 (default): record op and module scope per node; 2: also the user's source line (slower).

    >>> import workbench as wb
    >>> wb.autograd.graph.set_trace_level(2)
    >>> y = wb.ones(1, requires_grad=True) * 2
    >>> y.grad_fn.site is not None
    True
    >>> wb.autograd.graph.set_trace_level(1)
    """
    TRACE[0] = int(level)


def as_site(site):
    """A site tuple (file, line, function) for a site tuple, a Mark or None."""
    return site.site() if site.__class__ is Mark else site


def format_site(site):
    """'file:line in function' for a site tuple (or a Mark)."""
    site = as_site(site)
    return f"{site[0]}:{site[1]} in {site[2]}" if site else "<unknown location>"


class _Out:
    """Marks a saved tensor that is one of the node's own outputs (kept as its array, no cycle)."""

    __slots__ = ("i", "data", "requires_grad")

    def __init__(self, i, data, requires_grad):
        self.i, self.data, self.requires_grad = i, data, requires_grad


class Node:
    """A recorded op application: ``tensor.grad_fn``. Also the ``ctx`` of its Function.

    ``next_functions`` holds one ``(node, output_nr)`` pair per tensor input, ``(None, 0)`` where the
    input does not require grad, so the backward graph can be walked as in PyTorch.

    >>> import workbench as wb
    >>> y = wb.ones(2, requires_grad=True) * 2
    >>> y.grad_fn.name(), y.grad_fn.next_functions[0][0].name()
    ('MulBackward0', 'AccumulateGrad')
    """

    # slots for what every recorded op sets; the rarely used fields are class-level defaults that an
    # instance overrides in its __dict__ only when it needs to (keeps recording cheap)
    # _saved_meta: what the saved tensors are (function.describe_saved, for cost overlays; primitives
    # record it with the node, others when backward frees them); _freed: once freed, the Mark of the
    # backward() call that freed the saved tensors. Slots, not defaults: freeing writes no __dict__.
    __slots__ = ("next_functions", "_saved", "needs_input_grad", "_tensor_pos", "scope", "group", "_seq",
                 "_out_meta", "xp", "_saved_meta", "_freed", "__dict__", "__weakref__")
    _fn = None  # the Function class this node records
    _op = ""  # short op name shown by the visualizer
    site = None  # (file, line, function) of the user code that recorded it (trace level 2, or anomaly mode)
    _hooked = False  # True once any hook (or retain_grad) is attached: the engine's one check per node
    _pre_hooks = None
    _hooks = None
    _tensor_pre_hooks = None
    _retain = None
    _materialize = True
    _non_differentiable = None
    _dirty = None
    _times = None  # [forward us, backward us] measured by workbench.profiler (None where not profiled)
    _stack = None  # anomaly mode: the forward traceback

    def name(self):
        """The node's class name, as PyTorch prints it (e.g. 'MulBackward0')."""
        return type(self).__name__

    def __repr__(self):
        return f"<{type(self).__name__} object at {id(self):#x}>"

    @property
    def metadata(self):
        """A dict for the user's own annotations (as PyTorch's ``grad_fn.metadata``)."""
        d = self.__dict__.get("_metadata")
        if d is None:
            d = self.__dict__["_metadata"] = {}
        return d

    # --- hooks ---------------------------------------------------------------------------------
    def register_prehook(self, fn):
        """fn(grad_outputs) -> new grad_outputs or None, called before this node's backward.

        >>> import workbench as wb
        >>> x = wb.ones(2, requires_grad=True); y = x * 3
        >>> h = y.grad_fn.register_prehook(lambda go: (go[0] * 2,))
        >>> y.sum().backward(); x.grad
        tensor([6., 6.])
        """
        return add_hook(self, "_pre_hooks", fn)

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) -> new grad_inputs or None, called after this node's backward.

        >>> import workbench as wb
        >>> x = wb.ones(2, requires_grad=True); y = x * x
        >>> h = y.grad_fn.register_hook(lambda gi, go: print(len(gi), len(go)))
        >>> y.sum().backward()
        2 1
        """
        return add_hook(self, "_hooks", fn)

    # --- the ctx of its Function: saving for backward ----------------------------------------------
    def save_for_backward(self, *xs):
        """Keep tensors (references, never copies) for backward; read them back as ``ctx.saved_tensors``."""
        self._saved = xs

    def mark_dirty(self, *xs):
        """Declare the inputs a custom forward modified in place (they are returned as outputs)."""
        self._dirty = xs

    def mark_non_differentiable(self, *xs):
        """Declare outputs that get no gradient (indices, masks): they come out with requires_grad=False."""
        self._non_differentiable = xs

    def set_materialize_grads(self, value):
        """With False, backward receives None (not zeros) for outputs that got no gradient."""
        self._materialize = bool(value)

    @property
    def saved_tensors(self):
        """The tensors saved by save_for_backward, after checking none was modified in place since."""
        saved = self._saved
        if saved is None:
            if self._freed:
                self._raise_freed()
            return ()
        out = []
        for entry, box, version in saved:
            if box is not None and box[0] != version:
                self._raise_modified(entry, box, version)
            if entry.__class__ is _Out:
                rg = entry.requires_grad
                out.append(Tensor._make(entry.data, rg, self if rg else None, entry.i, box))
            else:
                out.append(entry)
        return tuple(out)

    def _raise_modified(self, entry, box, version):
        data = entry.data if type(entry) is _Out else entry._data
        desc = f"[{_backend.dtypes.from_numpy_dtype(data.dtype).name} {list(data.shape)}]"
        where = self.name() + (f" in module '{self.scope}'" if self.scope else "")
        if self.site:
            where += f" (created at {format_site(self.site)})"
        mod = box[1]
        by = ""
        if mod:
            op, scope, site = mod
            by = f" It was modified by {op}" + (f" in module '{scope}'" if scope else "") + f" at {format_site(site)}."
        raise RuntimeError(
            f"one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"{desc}, saved by {where}, is at version {box[0]}; expected version {version} instead.{by} "
            "Hint: replace the in-place op with its out-of-place form (e.g. x = x.add(y) instead of x.add_(y)), "
            "or clone() the tensor before modifying it."
        )

    def _raise_freed(self):
        where = (f" in module '{self.scope}'" if self.scope else "") + (
            f", created at {format_site(self.site)}" if self.site else "")
        freed_by = self._freed
        by = f" Its saved tensors were freed by the backward() call at {format_site(freed_by.site())}." \
            if isinstance(freed_by, Mark) else ""
        raise RuntimeError(
            f"Trying to backward through the graph a second time (or directly access saved tensors after they "
            f"have already been freed), through {self.name()}{where}.{by} Saved intermediate values of the graph "
            "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True on the first "
            "backward call if you need to backward through the graph a second time or if you need to access "
            "saved tensors after calling backward."
            + ("" if self.site else " (To see the forward line that created each node, run with "
               "workbench.autograd.graph.set_trace_level(2) or inside workbench.autograd.detect_anomaly().)")
        )

    @property
    def op(self):
        """The op name the visualizer shows (e.g. 'mul')."""
        return self._op


class AccumulateGrad(Node):
    """The node that accumulates into a leaf tensor's ``.grad`` (found in ``next_functions``).

    >>> import workbench as wb
    >>> x = wb.ones(2, requires_grad=True)
    >>> (x * 2).grad_fn.next_functions[0][0].variable is x
    True
    """

    __slots__ = ("_variable_ref",)
    _op = "AccumulateGrad"

    @property
    def variable(self):
        """The leaf tensor (None once it has been garbage-collected)."""
        return self._variable_ref()


def accumulator(t):
    """The AccumulateGrad node of leaf ``t`` (one per leaf, kept while the leaf lives)."""
    node = t._acc
    if node is None:
        node = AccumulateGrad()
        node.next_functions = ()
        node._variable_ref = weakref.ref(t)
        node.xp = _backend.xp_of(t._data)
        node._seq = -1  # leaves run last among ready nodes
        node.scope = ""
        node.group = None
        node._saved = None
        node._saved_meta = node._freed = None
        node._out_meta = ((t._data.shape, t._data.dtype),)  # what the engine checks gradients against
        t._acc = node  # the leaf owns its accumulator; the accumulator only points back weakly
    return node



def gradient_edge(t):
    """(node, output_nr) where a gradient for ``t`` enters the graph: its grad_fn, else, for a leaf that
    requires grad, the leaf's AccumulateGrad; (None, 0) for a tensor that takes no gradient.

    >>> import workbench as wb
    >>> x = wb.ones(2, requires_grad=True)
    >>> gradient_edge(x)[0].name(), gradient_edge(x * 2)[0].name(), gradient_edge(wb.ones(2))
    ('AccumulateGrad', 'MulBackward0', (None, 0))
    """
    if t.grad_fn is not None:
        return t.grad_fn, t._output_nr
    if t._rg:
        return accumulator(t), 0
    return None, 0


def roots_of(tensors):
    """The distinct nodes where gradients for ``tensors`` enter the graph, in order (none for a tensor
    that takes no gradient).

    >>> import workbench as wb
    >>> x = wb.ones(2, requires_grad=True)
    >>> [n.name() for n in roots_of([x * 2, x, wb.ones(1)])]
    ['MulBackward0', 'AccumulateGrad']
    """
    return [n for n in dict.fromkeys(gradient_edge(t)[0] for t in tensors) if n is not None]


def walk(starts):
    """Every node reachable from the nodes ``starts`` through next_functions, each once (iterative: a
    100,000-node chain is fine; starts first, then in discovery order).

    >>> import workbench as wb
    >>> x = wb.ones(2, requires_grad=True)
    >>> sorted(n.name() for n in walk([(x * x).sum().grad_fn]))
    ['AccumulateGrad', 'MulBackward0', 'SumBackward0']
    """
    seen = dict.fromkeys(starts)
    stack = list(seen)
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if nxt is not None and nxt not in seen:
                seen[nxt] = None
                stack.append(nxt)
    return list(seen)

def anomaly_record(node):
    """In anomaly mode every node keeps the forward stack that created it, for backward errors."""
    f = user_frame(3)
    node.site = node.site or (None if f is None else (f.f_code.co_filename, f.f_lineno, f.f_code.co_name))
    node._stack = "".join(traceback.format_stack(f))


def scope(name):
    """Context manager pushing a module scope (dotted name) for the nodes recorded inside it.

    ``Module.__call__`` uses it with the name from ``named_modules``; nested scopes join with dots.

    >>> import workbench as wb
    >>> with wb.autograd.graph.scope("encoder.0"):
    ...     y = wb.ones(1, requires_grad=True) * 2
    >>> y.grad_fn.scope
    'encoder.0'
    """
    return _Push(SCOPE, name, True)


def group(name):
    """Context manager naming a composite op: only the outermost group is kept (softmax, not its exp).

    >>> import workbench as wb
    >>> with wb.autograd.graph.group("softmax"):
    ...     y = wb.ones(1, requires_grad=True).exp()
    >>> y.grad_fn.group
    'softmax'
    """
    return _Push(GROUP, name, False)


_group_ids = itertools.count()


def composite(name):
    """Decorator: the nodes a composite op records form one group, ``name#k``, that the visualizer
    collapses into a box (only the outermost composite names the group)."""

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if GROUP.get() is not None:
                return fn(*args, **kwargs)
            with group(f"{name}#{next(_group_ids)}"):
                return fn(*args, **kwargs)

        return wrapper

    return deco


class _Push:
    __slots__ = ("var", "value", "join", "token")

    def __init__(self, var, value, join):
        self.var, self.value, self.join = var, value, join

    def __enter__(self):
        cur = self.var.get()
        if self.join:
            new = f"{cur}.{self.value}" if cur and self.value else (self.value or cur)
        else:
            new = cur if cur is not None else self.value
        self.token = self.var.set(new)
        return self

    def __exit__(self, *exc):
        self.var.reset(self.token)
        return False


def add_listener(fn):
    """Call ``fn(node, inputs, outputs)`` for every node recorded from now on; returns a handle.

    >>> import workbench as wb
    >>> seen = []
    >>> h = wb.autograd.graph.add_listener(lambda n, i, o: seen.append(n.op))
    >>> _ = wb.ones(1, requires_grad=True) * 2; h.remove(); seen
    ['mul']
    """
    return _add_hook(LISTENERS, fn)
