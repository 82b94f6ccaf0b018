"""A compiled call in grad mode whose outputs are differentiated later (``loss = f(cmodel(x)); loss.backward()``).

At trace time, once the call has run eagerly, the backward of the region it recorded on the tape (the
nodes made during the call) is run once more, under the tracer, on ones as output gradients, with the
graph retained and nothing accumulated: that records the region's backward program. The gradient each
region node sends across the region's boundary (to a parameter's AccumulateGrad, to an argument's
grad_fn) is kept as one output of that program, in the order eager sends them.

A replay runs the forward program and puts ONE node on the tape (``RegionNode``): its edges are those
boundary edges, one per gradient sent (an edge repeats when eager sends several), so the engine sums and
accumulates them exactly as eager does, hooks on the leaves included; its backward runs the recorded
backward program on the arrays the forward program kept. Its saved tensors are the arguments, outside
tensors and outputs that region nodes saved, with their versions: an in-place change of one after the
call raises at backward as in eager, and ``retain_graph=False`` frees the kept arrays.
"""
from .. import _backend
from ..autograd import graph as _graph
from ..autograd.engine import iter_backward
from ..autograd.function import Function
from ..autograd.graph import GROUP, SCOPE, Node, _Out
from ..autograd.grad_mode import STATE
from ..tensor import Tensor
from .program import tensors_in
from .trace import Unsupported

_make = Tensor._make
_SAVED_SLOT = Node.__dict__["_saved"]


class _Replayed(Function):
    """The Function of a replay's node: its backward is the recorded backward program."""

    _raw = True

    @staticmethod
    def backward(ctx, *grads):
        return ctx._run_backward(grads)


def _get_saved(node):
    return _SAVED_SLOT.__get__(node)


def _set_saved(node, value):
    _SAVED_SLOT.__set__(node, value)
    if value is None:  # freed by a backward without retain_graph: so are the arrays the forward kept
        node._env = None


class RegionNode(Node):
    """The one tape node of a replayed grad-mode call (its class is named for the module:
    ``Compiled<Module>Backward0``)."""

    __slots__ = ("_env", "_region")
    _fn = _Replayed
    _saved = property(_get_saved, _set_saved)

    def _run_backward(self, grads):
        if STATE.enabled:
            raise RuntimeError(f"{self.name()}: workbench.compile does not support double backward "
                               "(create_graph=True) through a compiled call's replay; call the module uncompiled "
                               "(or compile it with disable=True) to differentiate its gradients")
        self.saved_tensors  # the version check, or the 'backward through the graph a second time' error
        res = self._region.backward(self._env, [g._data for g in grads])
        return tuple([_make(r) for r in res])


class Region:
    """What the replay of a traced grad-mode call needs: the node class, the backward program (set by
    Program) and, per replay, ``finish`` to build the node and the outputs."""

    def __init__(self, name, split, outputs, contributions, saved, saved_outs, gins, shares):
        self.node_cls = type(f"Compiled{name}Backward0", (RegionNode,),
                             {"__slots__": (), "_op": f"compiled {name}", "__module__": __name__})
        self.split = split  # index of the first event of the backward program
        self.outputs = outputs  # the call's output tensors that carry gradients, in order (trace time; dropped
        # once the program is built)
        self.out_index = {id(t): k for k, t in enumerate(outputs)}
        self.contributions = contributions  # [(source, slot)]: a gradient sent across the boundary
        self.saved = saved  # [source]: tensors region nodes saved, whose versions the node checks
        self.saved_outs = saved_outs  # indices of the outputs region nodes saved
        self.gins = gins  # slot of each output's gradient
        self.shares = shares if any(j != k for k, j in enumerate(shares)) else None
        self.backward = None

    def finish(self, env, arrays, sources, saved):
        node = self.node_cls()
        node._saved_meta = node._freed = None
        node.xp = _backend.xp_of(arrays[0])
        node._seq = next(_graph._seq)
        node.scope = SCOPE.get()
        node.group = GROUP.get()
        node.next_functions = tuple([_graph.gradient_edge(t) for t in sources])
        n = len(sources)
        node.needs_input_grad = (True,) * n
        node._tensor_pos = tuple(range(n))
        node._env = env
        node._region = self
        outs = tuple([_make(a, True, node, k) for k, a in enumerate(arrays)])
        if self.shares is not None:  # outputs that were views of one tensor share its version counter again
            for o, j in zip(outs, self.shares):
                o._vbox = outs[j]._vbox
        node._out_meta = tuple([(a.shape, a.dtype) for a in arrays])
        entries = [(t, t._vbox, t._vbox[0]) for t in saved]
        for k, o in enumerate(outs):
            if k in self.saved_outs:
                entries.append((_Out(k, o._data, True), o._vbox, 0))
        node._saved = tuple(entries)
        return outs


def record(T, name, result, arg_tensors, seq0):
    """Record the backward of the call's region (nodes numbered after ``seq0``) into ``T``; a ``Region``, or
    None when no output carries a gradient. Raises ``Unsupported`` with the reason it cannot be replayed."""
    cands = list({id(t): t for t in tensors_in(result)}.values())  # each tensor once, in order
    outputs = [t for t in cands if t.grad_fn is not None and t.grad_fn._seq > seq0]
    if not outputs or any(id(t.grad_fn) in T.differentiated for t in outputs):
        return None  # nothing to differentiate later, or the call differentiated it itself (a training step)
    region = set()
    stack = [t.grad_fn for t in outputs]
    boundary = []
    while stack:
        n = stack.pop()
        if n in region:
            continue
        region.add(n)
        if n._hooked:
            T.fail(f"a hook is registered on {n.name()}, inside the call (hooks run Python code the replay would "
                   "skip)")
        for nxt, nr in n.next_functions:
            if nxt is None:
                continue
            if nxt._seq > seq0:
                stack.append(nxt)
            else:
                boundary.append((nxt, nr))
    if any(n._freed is not None for n in region):
        # the call ran backward through it already (return loss * accum after loss.backward()): eager's output
        # cannot be differentiated again either, so there is no backward to replay
        return None
    # where each boundary edge comes from: an argument or a tensor the call read from outside
    source_of = {}
    for src, t in list(arg_tensors) + [(("ext", t), t) for t, _slot in T.externals.values()]:
        if t._rg:
            node, nr = _graph.gradient_edge(t)
            source_of.setdefault((id(node), nr), src)
    edges = list(dict.fromkeys(boundary))
    for node, nr in edges:
        if (id(node), nr) not in source_of:
            T.fail(f"a gradient of the call flows into {node.name()}, which belongs to no tensor the call was given "
                   "or read (the replay could not find that edge again)")
    inner = {n for n, _ in edges}
    outer = [n for n in inner if n.__class__ is not _graph.AccumulateGrad]
    beyond = _graph.walk([nxt for n in outer for nxt, _ in n.next_functions if nxt is not None])
    if any(n in inner for n in beyond):
        T.fail("an argument of the call was computed from a tensor the call also uses (the call's backward "
               "and the argument's would interleave)")
    # saved tensors to version-check: arguments, outside tensors and outputs that region nodes saved
    boxes = {}
    for src, t in list(arg_tensors) + [(("ext", t), t) for t, _slot in T.externals.values()]:
        boxes.setdefault(id(t._vbox), src)
    shares = []  # per output, the first output that shares its version counter (views of one tensor)
    for k, t in enumerate(outputs):
        first = boxes.setdefault(id(t._vbox), ("out", k))
        if first[0] != "out":
            T.fail("the call returns a view of a tensor it was given or read (the replay's output would not share "
                   "its memory and version counter)")
        shares.append(first[1])
    saved = {}
    for n in region:
        for entry in n._saved or ():
            box = entry[1]
            if box is not None and id(box) in boxes:
                saved.setdefault(id(box), boxes[id(box)])
    # the output gradients are inputs of the backward program
    gins, grads = [], []
    for t in outputs:
        d = t._data
        g = _backend.xp_of(d).ones(d.shape, d.dtype)
        s = T.new_slot(g)
        T.bindings[s] = ("gin", len(gins))
        gins.append(s)
        grads.append(_make(g))
    split = len(T.events)
    hooked = [n for n, _ in edges if n._hooked]
    for n in hooked:  # the boundary's hooks run when the replay's gradients arrive there, not now
        n._hooked = False
    contributions = []
    try:
        run = iter_backward(outputs, grads, retain_graph=True, inputs=edges, accumulate=False,
                            captured=[None] * len(edges))
        for step in run:
            node = step.node
            if node not in region:
                continue
            for (nxt, nr), g in zip(node.next_functions, step.grad_inputs):
                if nxt is not None and g is not None and nxt._seq <= seq0:
                    if T.reason is not None:
                        raise Unsupported(T.reason)
                    contributions.append((source_of[(id(nxt), nr)], _grad_slot(T, g, node)))
    except Unsupported:
        raise
    except Exception as e:  # the eager backward of this call will raise it too
        T.fail(f"the call's backward could not run at trace time ({type(e).__name__}: {e})")
    finally:
        for n in hooked:
            n._hooked = True
    if T.reason is not None:
        raise Unsupported(T.reason)
    for ev in T.events[split:]:
        if ev.kind not in ("call", "backward"):
            T.fail(f"the call's backward ran {ev.op}, which the replay's backward cannot repeat")
    return Region(name, split, outputs, contributions, [s for s in saved.values() if s[0] != "out"],
                  {s[1] for s in saved.values() if s[0] == "out"}, gins, shares)


def _grad_slot(T, g, node):
    # a gradient must come from a recorded op (or be a constant a formula made): else it would be frozen
    n = T.slot_of.get(id(g._data))
    if n is not None:
        return n
    made = T.made.get(id(g._data))
    if made is None or made[0] != "const":
        T.fail(f"the backward of {node.name()} produced a gradient outside any recorded op")
    return T._made_slot(g._data, made, node.name())
