"""torch.autograd.functional: vjp, jvp, jacobian, hessian, vhp, hvp on functions of tensors.

All of them are built on ``autograd.grad``: forward-mode products use the double-vjp trick (the vjp
is linear in its cotangent, so differentiating it with respect to the cotangent gives the jvp), which
works because every backward formula is itself written in differentiable Tensor ops.
"""
from ..creation import ones_like, zeros, zeros_like
from ..ops.join import stack
from .._core import Tensor
from .backprop import grad
from .grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _tensor_cls():
    return Tensor


def _as_tuple(x, arg_name, fn_name):
    Tensor = _tensor_cls()
    is_tuple = isinstance(x, (tuple, list))
    xs = tuple(x) if is_tuple else (x,)
    for i, t in enumerate(xs):
        if not isinstance(t, Tensor):
            where = f"element {i} of " if is_tuple else ""
            raise TypeError(f"The {where}{arg_name} given to {fn_name} must be a Tensor, but got "
                            f"{type(t).__name__}.")
    return is_tuple, xs


def _prepare(inputs, create_graph):
    # inputs become fresh graph roots; with create_graph an input that already requires grad stays
    # connected (through a view) so the result can be differentiated again with respect to it
    out = []
    for t in inputs:
        if create_graph and t.requires_grad:
            out.append(t.view_as(t))
        else:
            out.append(t.detach().requires_grad_(True))
    return tuple(out)


def _finish(xs, create_graph):
    return tuple(x if x is None or create_graph else x.detach() for x in xs)


def _grads(outputs, inputs, grad_outputs, create_graph, strict, fn_name, what="input"):

    outs, gos = [], []
    for o, g in zip(outputs, grad_outputs):
        if o.requires_grad:
            outs.append(o)
            gos.append(g)
    if outs:
        gs = grad(outs, inputs, gos, retain_graph=True, create_graph=create_graph, allow_unused=True)
    else:
        gs = (None,) * len(inputs)
    result = []
    for i, (g, x) in enumerate(zip(gs, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(f"The output of the user-provided function is independent of {what} {i}. "
                                   f"This is not allowed in strict mode ({fn_name}).")
            g = zeros_like(x)
        result.append(g)
    return tuple(result)


def _check_v(v, outputs, fn_name, what):
    if v is None:
        if len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError(f"The vector v can only be None if the user-provided function returns a single "
                               f"Tensor with a single element ({fn_name}).")
        return (ones_like(outputs[0]),)
    _, vs = _as_tuple(v, "v", fn_name)
    if len(vs) != len(outputs):
        raise RuntimeError(f"v has {len(vs)} tensors but the user-provided function has {len(outputs)} {what}s "
                           f"({fn_name}).")
    for i, (a, b) in enumerate(zip(vs, outputs)):
        if a.shape != b.shape:
            raise RuntimeError(f"Entry {i} in v has invalid size: should be {list(b.shape)} but got "
                               f"{list(a.shape)} ({fn_name}).")
    return vs


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at ``inputs``.

    >>> import workbench as wb
    >>> out, g = wb.autograd.functional.vjp(lambda x: x ** 2, wb.tensor([1., 2.]), wb.tensor([1., 1.]))
    >>> g
    tensor([2., 4.])
    """
    with enable_grad():
        is_tuple, xs = _as_tuple(inputs, "inputs", "vjp")
        xs = _prepare(xs, create_graph)
        out = func(*xs)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "vjp")
        vs = _check_v(v, outs, "vjp", "output")
        g = _grads(outs, xs, vs, create_graph, strict, "vjp")
    outs = _finish(outs, create_graph)
    g = _finish(g, create_graph)
    return (outs if out_tuple else outs[0]), (g if is_tuple else g[0])


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product at ``inputs`` (double-vjp trick).

    >>> import workbench as wb
    >>> out, t = wb.autograd.functional.jvp(lambda x: x ** 2, wb.tensor([1., 2.]), wb.tensor([1., 0.]))
    >>> t
    tensor([2., 0.])
    """
    with enable_grad():
        is_tuple, xs = _as_tuple(inputs, "inputs", "jvp")
        xs = _prepare(xs, create_graph)
        if v is None:
            if len(xs) != 1 or xs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                                   "single Tensor with a single element (jvp).")
            vs = (ones_like(xs[0]),)
        else:
            _, vs = _as_tuple(v, "v", "jvp")
            if len(vs) != len(xs):
                raise RuntimeError(f"v has {len(vs)} tensors but inputs has {len(xs)} (jvp).")
            for i, (a, b) in enumerate(zip(vs, xs)):
                if a.shape != b.shape:
                    raise RuntimeError(f"Entry {i} in v has invalid size: should be {list(b.shape)} but got "
                                       f"{list(a.shape)} (jvp).")
        out = func(*xs)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "jvp")
        us = tuple(zeros_like(o).requires_grad_(True) for o in outs)  # dummy cotangents
        g = _grads(outs, xs, us, True, strict, "jvp")
        res = _grads(g, us, vs, create_graph, strict, "jvp", what="output")
    outs = _finish(outs, create_graph)
    res = _finish(res, create_graph)
    return (outs if out_tuple else outs[0]), (res if out_tuple else res[0])


def _jacobian_rows(outs, xs, create_graph, strict, fn_name):
    # J[i][j] has shape outs[i].shape + xs[j].shape: one vjp per output element
    jac = []
    for i, o in enumerate(outs):
        n = o.numel()
        rows = [[] for _ in xs]
        for k in range(n):
            e = zeros(n, dtype=o.dtype, device=o.device)
            e[k] = 1
            g = _grads((o,), xs, (e.reshape(o.shape),), create_graph, strict, fn_name)
            for j, gj in enumerate(g):
                rows[j].append(gj)
        per_input = []
        for j, x in enumerate(xs):
            if n:
                block = stack(rows[j]).reshape(tuple(o.shape) + tuple(x.shape))
            else:
                block = zeros(tuple(o.shape) + tuple(x.shape), dtype=x.dtype, device=x.device)
            per_input.append(block)
        jac.append(tuple(per_input))
    return jac


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: shape ``output.shape + input.shape`` per pair.

    ``vectorize`` and ``strategy='forward-mode'`` are accepted for compatibility; the Jacobian is
    computed row by row in reverse mode either way (the values are the same).

    >>> import workbench as wb
    >>> wb.autograd.functional.jacobian(lambda x: x ** 2, wb.tensor([1., 2.]))
    tensor([[2., 0.],
            [0., 4.]])
    """
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f'Expected strategy to be either "forward-mode" or "reverse-mode", got {strategy!r}.')
    with enable_grad():
        is_tuple, xs = _as_tuple(inputs, "inputs", "jacobian")
        xs = _prepare(xs, create_graph)
        out = func(*xs)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "jacobian")
        jac = _jacobian_rows(outs, xs, create_graph, strict, "jacobian")
    jac = [_finish(row, create_graph) for row in jac]
    if out_tuple:
        return tuple(row if is_tuple else row[0] for row in jac)
    return jac[0] if is_tuple else jac[0][0]


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar ``func`` at ``inputs``: shape ``input.shape + input.shape``.

    >>> import workbench as wb
    >>> wb.autograd.functional.hessian(lambda x: (x ** 3).sum(), wb.tensor([1., 2.]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    is_tuple, xs = _as_tuple(inputs, "inputs", "hessian")

    def gradient(*args):
        out = func(*args)
        _, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor with a single element, "
                               f"but it returned {len(outs)} tensor(s) of shape(s) {[list(o.shape) for o in outs]}.")
        return _grads(outs, args, (_one(outs[0]),), True, strict, "hessian")

    res = jacobian(gradient, xs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return res if is_tuple else res[0][0]


def _one(o):
    return ones_like(o)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H): vector-Hessian product of a scalar ``func`` at ``inputs``.

    >>> import workbench as wb
    >>> wb.autograd.functional.vhp(lambda x: (x ** 3).sum(), wb.tensor([1., 2.]), wb.tensor([1., 1.]))[1]
    tensor([ 6., 12.])
    """
    with enable_grad():
        is_tuple, xs = _as_tuple(inputs, "inputs", "vhp")
        xs = _prepare(xs, create_graph)
        if v is None:
            if len(xs) != 1 or xs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                                   "single Tensor with a single element (vhp).")
            vs = (_one(xs[0]),)
        else:
            _, vs = _as_tuple(v, "v", "vhp")
            if len(vs) != len(xs):
                raise RuntimeError(f"v has {len(vs)} tensors but inputs has {len(xs)} (vhp).")
        out = func(*xs)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "vhp")
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The function given to vhp should return a single Tensor with a single element.")
        g = _grads(outs, xs, (_one(outs[0]),), True, strict, "vhp")
        res = _grads(g, xs, vs, create_graph, strict, "vhp")
    out = _finish(outs, create_graph)[0]
    res = _finish(res, create_graph)
    return out, (res if is_tuple else res[0])


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v): Hessian-vector product (H is symmetric for smooth func, so H v = v^T H).

    >>> import workbench as wb
    >>> wb.autograd.functional.hvp(lambda x: (x ** 3).sum(), wb.tensor([1., 2.]), wb.tensor([1., 0.]))[1]
    tensor([6., 0.])
    """
    return vhp(func, inputs, v, create_graph, strict)
