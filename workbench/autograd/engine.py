"""The backward engine: one generator, ``iter_backward``, that yields a record per executed node.

``backward()`` and ``autograd.grad()`` drain it; the debugger (workbench.viz) pauses it one step at a
time; the recorder turns its steps into a replayable trace. There is no second engine.

The walk is iterative (dependency counts + a ready heap ordered by recording sequence, newest first,
as PyTorch does), so a 100,000-node chain needs no recursion.
"""
import heapq

from .. import _backend
from . import graph
from .grad_mode import STATE
from .graph import AccumulateGrad

_Tensor = None  # bound by workbench.tensor


class BackwardStep:
    """What one node of the backward pass did.

    node:        the Node executed (an op's grad_fn, or an AccumulateGrad for a leaf)
    grad_outputs: the gradients that arrived for the node's outputs (Tensors or None)
    grad_inputs: the gradients the node produced, one per entry of node.next_functions
    leaves:      [(tensor, grad_before, grad_after)] for AccumulateGrad steps
    """

    __slots__ = ("node", "grad_outputs", "grad_inputs", "leaves", "index")

    def __init__(self, node, grad_outputs, grad_inputs, leaves, index):
        self.node, self.grad_outputs, self.grad_inputs, self.leaves, self.index = (
            node, grad_outputs, grad_inputs, leaves, index)

    def __repr__(self):
        return f"<BackwardStep {self.index}: {self.node.name()}>"


def _start_node(t):
    if t.grad_fn is not None:
        return t.grad_fn, t._output_nr
    if t._rg:
        return graph.accumulator(t), 0
    return None, 0


def _no_grad_error(t, what):
    return RuntimeError(
        f"element 0 of {what} does not require grad and does not have a grad_fn. The graph was cut before "
        "this tensor: it was computed under no_grad()/inference_mode(), from .detach()ed tensors, through a "
        "NumPy round trip (.numpy()/.item()/wb.tensor(...)), or from inputs none of which has "
        "requires_grad=True. Set requires_grad=True on the leaves you differentiate with respect to."
    )


def iter_backward(roots, grad_roots, retain_graph=False, create_graph=False, inputs=None, accumulate=True,
                  captured=None, keep_before=False):
    """Walk the graph from ``roots`` backwards, yielding a BackwardStep per node executed.

    With ``inputs``, only the nodes on paths to those tensors run; if ``accumulate`` is False their
    gradients go into ``captured`` (a list aligned with inputs) instead of ``.grad``.
    """
    Tensor = _Tensor
    buffers = {}  # node -> list of grads, one per output
    seen_ids = set()  # grad objects already placed once: handing one to a second place must copy
    starts = []
    for t, g in zip(roots, grad_roots):
        node, nr = _start_node(t)
        if node is None:
            raise _no_grad_error(t, "tensors")
        starts.append(node)
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * _n_outputs(node)
        seen_ids.add(id(g))
        buf[nr] = g if buf[nr] is None else buf[nr] + g

    # dependency counts over the reachable graph
    deps = {}
    stack = list(dict.fromkeys(starts))
    visited = set(stack)
    while stack:
        n = stack.pop()
        for nxt, _ in n.next_functions:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                if nxt not in visited:
                    visited.add(nxt)
                    stack.append(nxt)

    capture = None
    needed = None
    if inputs is not None:
        capture = {}
        for k, t in enumerate(inputs):
            node, nr = _start_node(t)
            if node is None:
                raise RuntimeError(f"One of the differentiated Tensors (input {k}) does not require grad")
            capture.setdefault((node, nr), []).append(k)
        needed = _needed_nodes(visited, {n for n, _ in capture})

    ready = []
    for n in dict.fromkeys(starts):
        if deps.get(n, 0) == 0:
            heapq.heappush(ready, (-n._seq, id(n), n))
    hooks = graph.BACKWARD_HOOKS if accumulate and inputs is None else None
    if hooks:
        for h in list(hooks):
            h("begin", roots)
    grad_mode = STATE.enabled
    STATE.enabled = create_graph
    index = 0
    try:
        while ready:
            _, _, node = heapq.heappop(ready)
            grads = buffers.pop(node)
            if node._tensor_pre_hooks is not None or node._retain is not None:
                grads = _run_tensor_pre_hooks(node, grads)
            if capture is not None:
                for nr, g in enumerate(grads):
                    ks = capture.get((node, nr))
                    if ks:
                        for k in ks:
                            captured[k] = g
            if needed is not None and node not in needed:
                continue
            if type(node) is AccumulateGrad:
                if not accumulate:
                    continue
                step = _accumulate(node, grads[0], seen_ids, create_graph, index, keep_before)
                index += 1
                yield step
                continue
            if node._pre_hooks is not None:
                for h in list(node._pre_hooks.values()):
                    r = h(tuple(grads))
                    if r is not None:
                        grads = list(r)
            grad_inputs = _call_backward(node, grads)
            if node._hooks is not None:
                for h in list(node._hooks.values()):
                    r = h(grad_inputs, tuple(grads))
                    if r is not None:
                        grad_inputs = tuple(r)
            if graph.ANOMALY[0] and graph.ANOMALY[1]:
                _check_nan(node, grad_inputs)
            if not retain_graph:
                node._saved = None
                node._freed = True
            for (nxt, nr), g in zip(node.next_functions, grad_inputs):
                if nxt is None:
                    continue
                if g is not None:
                    g = _validate(node, nxt, nr, g)
                    buf = buffers.get(nxt)
                    if buf is None:
                        buf = buffers[nxt] = [None] * _n_outputs(nxt)
                    if buf[nr] is None:
                        buf[nr] = g
                    else:
                        buf[nr] = buf[nr] + g
                        seen_ids.add(id(buf[nr]))
                    seen_ids.add(id(g))
                d = deps[nxt] - 1
                deps[nxt] = d
                if d == 0:
                    if nxt in buffers:
                        heapq.heappush(ready, (-nxt._seq, id(nxt), nxt))
                    else:
                        _skip_subgraph(nxt, deps, buffers, ready)
            yield BackwardStep(node, tuple(grads), grad_inputs, (), index)
            index += 1
    finally:
        STATE.enabled = grad_mode
    if hooks:
        for h in list(hooks):
            h("end", roots)


def _skip_subgraph(node, deps, buffers, ready):
    # a node no gradient reached: its inputs lose one dependency each, and may become ready
    stack = [node]
    while stack:
        n = stack.pop()
        for nxt, _ in n.next_functions:
            if nxt is None:
                continue
            d = deps[nxt] - 1
            deps[nxt] = d
            if d == 0:
                if nxt in buffers:
                    heapq.heappush(ready, (-nxt._seq, id(nxt), nxt))
                else:
                    stack.append(nxt)


def _needed_nodes(visited, targets):
    # nodes from which some target is reachable; computed on the reversed edges
    parents = {}
    for n in visited:
        for nxt, _ in n.next_functions:
            if nxt is not None:
                parents.setdefault(nxt, []).append(n)
    needed = set(targets)
    stack = list(targets)
    while stack:
        n = stack.pop()
        for p in parents.get(n, ()):
            if p not in needed:
                needed.add(p)
                stack.append(p)
    return needed


def _n_outputs(node):
    m = getattr(node, "_out_meta", None)
    return len(m) if m else 1


def _materialize(node, grads):
    xp = node.xp
    out = list(grads)
    for i, g in enumerate(out):
        if g is None:
            meta = node._out_meta[i]
            if meta is not None:
                shape, dt = meta
                out[i] = _Tensor._make(xp.zeros(shape, dt))
    return out


def _call_backward(node, grads):
    if any(g is None for g in grads):
        if node._materialize:
            grads = _materialize(node, grads)
    if node._saved is None and node._freed:
        node._raise_freed()
    res = node._fn.backward(node, *grads)
    if type(res) is not tuple:
        res = (res,)
    pos = node._tensor_pos
    n_args = len(node.needs_input_grad)
    if len(res) != n_args:
        if len(res) > n_args and all(r is None for r in res[n_args:]):
            res = res[:n_args]
        elif len(res) == len(pos) and len(res) < n_args:
            return res
        else:
            raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                               f"(expected {n_args}, got {len(res)})")
    return tuple(res[i] for i in pos)


def _validate(node, nxt, nr, g):
    # the gradient for an input must match that input's shape and dtype: sum over broadcast dims
    # (as PyTorch's validate_outputs does) and cast, or fail naming the node
    meta = nxt._out_meta[nr] if type(nxt) is not AccumulateGrad else _leaf_meta(nxt)
    if meta is None:
        return g
    shape, dt = meta
    d = g._data
    if d.shape != shape:
        if _expandable(shape, d.shape):
            g = g.sum_to_size(shape)
        else:
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {nr} - got {list(d.shape)} "
                f"but expected shape compatible with {list(shape)}"
            )
    if g._data.dtype != dt:
        g = g.to(_backend.dtypes.from_numpy_dtype(dt))
    return g


def _leaf_meta(acc):
    t = acc.variable
    return None if t is None else (t._data.shape, t._data.dtype)


def _expandable(shape, target):
    if len(shape) > len(target):
        return False
    for a, b in zip(reversed(shape), reversed(target)):
        if a != b and a != 1:
            return False
    return True


def _run_tensor_pre_hooks(node, grads):
    grads = list(grads)
    if node._tensor_pre_hooks is not None:
        for (nr, h) in list(node._tensor_pre_hooks.values()):
            if grads[nr] is not None:
                r = h(grads[nr])
                if r is not None:
                    grads[nr] = r
    if node._retain is not None:
        for nr, ref in list(node._retain.items()):
            t = ref()
            if t is not None and grads[nr] is not None:
                g = grads[nr]
                if t._grad is None:
                    t._grad = g.detach().clone() if not STATE.enabled else g.clone()
                else:
                    t._grad = t._grad + g
    return grads


def _accumulate(node, g, seen_ids, create_graph, index, keep_before):
    t = node.variable
    if t is None or g is None:
        return BackwardStep(node, (g,), (), (), index)
    if node._pre_hooks is not None:
        for h in list(node._pre_hooks.values()):
            r = h((g,))
            if r is not None:
                g = r[0]
    before = t._grad
    if before is None:
        if create_graph:
            new = g
        else:
            new = g.detach()
            if id(g) in seen_ids or new._data.base is not None or not new._data.flags.c_contiguous:
                new = _Tensor._make(node.xp.array(new._data, copy=True, order="C"))
        t._grad = new
    elif create_graph:
        t._grad = before + g
    elif before._rg:
        t._grad = before.detach() + g.detach()
    else:
        if keep_before:  # the debugger shows .grad before and after: keep a copy of before
            before = _Tensor._make(node.xp.array(before._data, copy=True))
        t._grad._data += g._data.astype(t._grad._data.dtype, copy=False)
        t._grad._vbox[0] += 1
    if t._post_acc_hooks is not None:
        for h in list(t._post_acc_hooks.values()):
            h(t)
    if node._hooks is not None:
        for h in list(node._hooks.values()):
            h((), (g,))
    return BackwardStep(node, (g,), (), ((t, before, t._grad),), index)


def _check_nan(node, grad_inputs):
    for i, g in enumerate(grad_inputs):
        if g is not None and g.dtype.category >= 2 and bool(node.xp.isnan(g._data).any()):
            site = graph.format_site(node.site) if node.site else "unknown"
            stack = getattr(node, "_stack", None)
            raise RuntimeError(
                f"Function '{node.name()}' returned nan values in its {i}th output. It was created in the forward "
                f"pass at {site}" + (f" in module '{node.scope}'" if node.scope else "")
                + (".\nForward traceback:\n" + stack if stack else ".")
            )


def run_backward(roots, grad_roots, retain_graph, create_graph, inputs=None):
    for _ in iter_backward(roots, grad_roots, retain_graph, create_graph, inputs):
        pass
