"""backward() and grad(): the entry points that build the root gradients and drain the engine."""
from .._core import Tensor
from ..creation import tensor, zeros_like
from ..ops.join import stack
from . import engine


def _as_list(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def _make_grads(outputs, grads, create_graph):
    if grads is None:
        grads = [None] * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs; got {len(grads)} gradients "
                           f"for {len(outputs)} outputs")
    out = []
    for o, g in zip(outputs, grads):
        if g is None:
            if o.numel() != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs (the output has shape "
                    f"{list(o.shape)}); pass gradient= with a tensor of that shape, or reduce the output first "
                    "(e.g. loss.sum() or loss.mean())")
            d = o._data
            if d.dtype.kind not in "fc" and d.dtype.name != "bfloat16":
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {o.dtype}")
            xp = engine.xp_of(d)
            g = Tensor._make(xp.array(1, d.dtype) if d.ndim == 0 else xp.ones(d.shape, d.dtype))
        elif not isinstance(g, Tensor):
            g = tensor(g, dtype=o.dtype, device=o.device)
        else:
            if g.shape != o.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {list(g.shape)} and "
                                   f"output[0] has a shape of {list(o.shape)}.")
            if g.device != o.device:
                raise RuntimeError(f"invalid gradient - expected device {o.device} but got {g.device}")
            if not create_graph:
                g = g.detach()
        out.append(g)
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves (or of ``inputs``).

    >>> import workbench as wb
    >>> x = wb.tensor([1., 2.], requires_grad=True)
    >>> wb.autograd.backward((x * x).sum()); x.grad
    tensor([2., 4.])
    """
    outputs = _as_list(tensors)
    grads = _as_list(grad_tensors if grad_tensors is not None else grad_variables)
    if retain_graph is None:
        retain_graph = create_graph
    for k, o in enumerate(outputs):
        if not o._rg:
            raise engine.no_grad_error(o, "tensors")
    grads = _make_grads(outputs, grads, create_graph)
    ins = _as_list(inputs)
    if ins is not None and len(ins) == 0:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    if ins is None:
        engine.run_backward(outputs, grads, retain_graph, create_graph)
        return
    captured = [None] * len(ins)
    engine.run_backward(outputs, grads, retain_graph, create_graph, ins, True, captured)
    for t, g in zip(ins, captured):  # non-leaf inputs get their .grad as leaves do
        if t.grad_fn is not None and g is not None:
            t._grad = g if t._grad is None else t._grad + g


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``, returned (not accumulated).

    >>> import workbench as wb
    >>> x = wb.tensor(3.0, requires_grad=True)
    >>> wb.autograd.grad(x ** 2, x)
    (tensor(6.),)
    """
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    for o in outs:
        if not o._rg:
            raise engine.no_grad_error(o, "differentiated tensors")
    if retain_graph is None:
        retain_graph = create_graph
    go = _as_list(grad_outputs)
    if is_grads_batched:  # one backward per slice of the leading dim of grad_outputs, stacked
        return _batched_grad(outs, ins, go, retain_graph, create_graph, allow_unused, materialize_grads)
    grads = _make_grads(outs, go, create_graph)
    captured = [None] * len(ins)
    engine.run_backward(outs, grads, retain_graph, create_graph, ins, False, captured)
    result = []
    for k, (t, g) in enumerate(zip(ins, captured)):
        if g is None:
            if materialize_grads:
                g = zeros_like(t)
            elif not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated Tensors (input {k}, shape {list(t.shape)}) appears to not have "
                    "been used in the graph. Set allow_unused=True if this is the desired behavior.")
        elif not create_graph:
            g = g.detach()
        result.append(g)
    return tuple(result)


def _batched_grad(outs, ins, go, retain_graph, create_graph, allow_unused, materialize_grads):
    if go is None or any(g is None for g in go):
        raise RuntimeError("is_grads_batched=True needs a batched grad_output for every output")
    n = go[0].shape[0]
    rows = []
    for b in range(n):
        rows.append(grad(outs, ins, [g[b] for g in go], retain_graph=True if b < n - 1 else retain_graph,
                         create_graph=create_graph, allow_unused=allow_unused, materialize_grads=materialize_grads))
    result = []
    for k in range(len(ins)):
        col = [r[k] for r in rows]
        result.append(None if all(c is None for c in col) else stack(
            [c if c is not None else zeros_like(ins[k]) for c in col]))
    return tuple(result)
