"""gradcheck / gradgradcheck: analytical gradients against central finite differences."""
from .. import _backend
from .grad_mode import enable_grad, no_grad


def _as_tuple(x):
    return x if isinstance(x, tuple) else (tuple(x) if isinstance(x, list) else (x,))


def _diff_inputs(inputs):
    from ..tensor import Tensor

    return [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]


def _flat_outputs(func, inputs):
    from ..tensor import Tensor

    outs = _as_tuple(func(*inputs))
    return [o for o in outs if isinstance(o, Tensor) and (o.is_floating_point() or o.is_complex())]


def _numerical_jacobian(func, inputs, idx, out_sizes, eps):
    # column j of the Jacobian: (f(x + eps e_j) - f(x - eps e_j)) / 2 eps, per output
    np = _backend.numpy
    x = inputs[idx]
    host = x.detach().cpu()._data
    cols = [[] for _ in out_sizes]
    flat = host.reshape(-1)
    for j in range(flat.size):
        orig = flat[j].item()
        vals = []
        for sign in (1, -1):
            flat[j] = orig + sign * eps
            x._data[...] = _backend.to_device(host, x.device) if x.device.type != "cpu" else host
            with no_grad():
                vals.append([o.detach().cpu()._data.reshape(-1).astype(np.float64) for o in _flat_outputs(func, inputs)])
        flat[j] = orig
        x._data[...] = _backend.to_device(host, x.device) if x.device.type != "cpu" else host
        for k in range(len(out_sizes)):
            cols[k].append((vals[0][k] - vals[1][k]) / (2 * eps))
    return [np.stack(c, axis=1) if c else np.zeros((n, 0)) for c, n in zip(cols, out_sizes)]


def _analytical_jacobian(func, inputs, idx_list, outputs):
    np = _backend.numpy
    from . import grad

    jac = {}
    for k, o in enumerate(outputs):
        n = o.numel()
        rows = {i: [] for i in idx_list}
        if not o.requires_grad:  # constant output: zero Jacobian
            for i in idx_list:
                jac[(k, i)] = np.zeros((n, inputs[i].numel()))
            continue
        for r in range(n):
            go = np.zeros(n, dtype=o._data.dtype)
            go[r] = 1
            from ..creation import tensor

            g = tensor(go.reshape(o.shape), device=o.device)
            gs = grad(o, [inputs[i] for i in idx_list], g, retain_graph=True, allow_unused=True)
            for i, gi in zip(idx_list, gs):
                rows[i].append(np.zeros(inputs[i].numel()) if gi is None else gi.detach().cpu()._data.reshape(-1)
                               .astype(np.float64))
        for i in idx_list:
            jac[(k, i)] = np.stack(rows[i], axis=0) if rows[i] else np.zeros((0, inputs[i].numel()))
    return jac


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytical and numerical gradients disagree."""


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False, fast_mode=False,
              masked=None):
    """Check func's gradients against finite differences (use float64 inputs).

    >>> import workbench as wb
    >>> x = wb.randn(3, dtype=wb.float64, requires_grad=True)
    >>> wb.autograd.gradcheck(lambda t: (t * t).sum(), (x,))
    True
    """
    np = _backend.numpy
    inputs = _as_tuple(inputs)
    idx = _diff_inputs(inputs)
    if not idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    for i in idx:
        if inputs[i].dtype.name not in ("float64", "complex128"):
            import warnings

            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point. "
                          "gradcheck needs float64 inputs to be reliable.", UserWarning, stacklevel=2)
    outputs = _flat_outputs(func, inputs)
    if not outputs:
        raise ValueError("gradcheck: func returned no floating-point tensor")
    num = {}
    for i in idx:
        cols = _numerical_jacobian(func, inputs, i, [o.numel() for o in outputs], eps)
        for k in range(len(outputs)):
            num[(k, i)] = cols[k]
    ana = _analytical_jacobian(func, inputs, idx, outputs)
    for key, a in ana.items():
        n = num[key]
        if not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=True):
            k, i = key
            msg = (f"Jacobian mismatch for output {k} with respect to input {i},\nnumerical:{n}\nanalytical:{a}\n"
                   f"max abs difference {np.max(np.abs(a - n))}")
            if raise_exception:
                raise GradcheckError(msg)
            return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, gen_non_contig_grad_outputs=False,
                  raise_exception=True, nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, fast_mode=False, masked=False):
    """Check second derivatives: gradcheck of the function (inputs, grad_outputs) -> d func/d inputs.

    >>> import workbench as wb
    >>> x = wb.randn(3, dtype=wb.float64, requires_grad=True)
    >>> wb.autograd.gradgradcheck(lambda t: (t * t * t).sum(), (x,))
    True
    """
    from . import grad
    from ..random import randn

    inputs = _as_tuple(inputs)
    outputs = [o for o in _flat_outputs(func, inputs) if o.requires_grad]
    if grad_outputs is None:
        grad_outputs = tuple(randn(*o.shape, dtype=o.dtype, device=o.device, requires_grad=True) for o in outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    idx = _diff_inputs(inputs)

    def first_grads(*args):
        ins, gos = args[:n_in], args[n_in:]
        with enable_grad():  # gradcheck evaluates under no_grad for its finite differences
            outs = [o for o in _flat_outputs(func, ins) if o.requires_grad]
            gs = grad(outs, [ins[i] for i in idx], gos, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grads, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
