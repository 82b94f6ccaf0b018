"""gradcheck / gradgradcheck: analytical gradients against central finite differences.

Complex tensors are checked as PyTorch does: every complex input or output counts as two real
coordinates (real and imaginary part). The analytical row of a real output coordinate c is the
gradient workbench returns for the real loss c; for a complex input that gradient is
dc/d(re) + i dc/d(im) (PyTorch's convention), which is compared with the finite differences
of c in the real and imaginary direction.
"""
import inspect
import warnings

from .. import _backend
from .._option_flags import ACTED_ON, NO_EFFECT, REFUSED, flags_of
from ..creation import ones_like, tensor
from .._core import Tensor
from .backprop import grad
from .grad_mode import enable_grad, no_grad


_NO_FORWARD_AD = ("workbench checks reverse mode (backward) only: it has no forward-mode AD of its own (jvp is "
                  "the double-vjp of backward, which this check covers)")
# PyTorch's boolean options of gradcheck and gradgradcheck, and what workbench does with each (docs/optim.md
# shows the table; tests/optim/test_option_flags.py checks it against both functions' signatures and PyTorch's)
FLAGS = {
    "raise_exception": (ACTED_ON, "False returns False on a mismatch instead of raising GradcheckError"),
    "check_grad_dtypes": (ACTED_ON, "each gradient's dtype must be its input's"),
    "gen_non_contig_grad_outputs": (ACTED_ON, "the generated grad_outputs are non-contiguous views"),
    "fast_mode": (NO_EFFECT, "PyTorch's fast mode compares one random projection u^T J v of each Jacobian instead of "
                             "every entry, a speed choice; workbench compares every entry, so whatever fails fast "
                             "mode fails here too"),
    "check_undefined_grad": (NO_EFFECT, "the check feeds backward undefined output gradients; workbench's engine "
                                        "hands a backward zeros for them (materialize_grads) unless its Function "
                                        "opts out"),
    "check_backward_ad": (REFUSED, _NO_FORWARD_AD + ", and PyTorch requires one of check_forward_ad and "
                                                    "check_backward_ad"),
    "check_rev_over_rev": (REFUSED, _NO_FORWARD_AD + ", and PyTorch requires one of check_fwd_over_rev and "
                                                     "check_rev_over_rev"),
    "check_forward_ad": (REFUSED, _NO_FORWARD_AD),
    "check_fwd_over_rev": (REFUSED, _NO_FORWARD_AD),
    "check_batched_forward_grad": (REFUSED, _NO_FORWARD_AD),
    "check_batched_grad": (REFUSED, "the vmap of backward over a batch of grad_outputs is not checked; check "
                                    "each grad_output on its own (gradcheck does, row by row)"),
    "masked": (REFUSED, "it is about sparse tensors' unspecified elements, and workbench has no sparse tensors"),
}


def _check_flags(fn, args):
    """Refuse what FLAGS refuses: the value of a REFUSED flag other than fn's default (AssertionError where
    PyTorch itself asserts, i.e. for the flags whose default is True)."""
    params = inspect.signature(fn).parameters
    for name in flags_of(fn, FLAGS):
        default = params[name].default
        if FLAGS[name][0] == REFUSED and bool(args[name]) != bool(default):
            exc = AssertionError if default else RuntimeError
            raise exc(f"{fn.__name__}({name}={args[name]!r}) is not supported: {FLAGS[name][1]}. Leave it at "
                      f"{default!r}, or check that property with PyTorch")


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytical and numerical gradients disagree (a RuntimeError).

    >>> import workbench as wb
    >>> x = wb.ones(2, dtype=wb.float64, requires_grad=True)
    >>> wb.autograd.gradcheck(lambda t: t.detach() * t, (x,), raise_exception=False)
    False
    """


def _as_tuple(x):
    return x if isinstance(x, tuple) else (tuple(x) if isinstance(x, list) else (x,))


def _diff_inputs(inputs):
    return [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]


def _outputs(func, inputs):
    outs = _as_tuple(func(*inputs))
    return [o for o in outs if isinstance(o, Tensor) and (o.is_floating_point() or o.is_complex())]


def _real_coords(arr):
    # a host array as float64 real coordinates: [re..., im...] for complex, the values otherwise
    np = _backend.numpy
    a = _backend.to_device(arr, _backend.CPU).reshape(-1)
    if a.dtype.kind == "c":
        return np.concatenate([a.real, a.imag]).astype(np.float64)
    return a.astype(np.float64)


def _numerical(func, inputs, i, eps):
    # columns of d(output coords)/d(input i coords), by central differences, one list per output
    np = _backend.numpy
    x = inputs[i]
    host = _backend.to_device(x._data, _backend.CPU).copy()
    flat = host.reshape(-1)
    steps = [1.0] + ([1j] if host.dtype.kind == "c" else [])
    cols = None
    for step in steps:
        for j in range(flat.size):
            orig = flat[j]
            vals = []
            for sign in (1, -1):
                flat[j] = orig + sign * eps * step
                x._data[...] = _backend.to_device(host, x.device)
                with no_grad():
                    vals.append([_real_coords(o._data) for o in _outputs(func, inputs)])
            flat[j] = orig
            x._data[...] = _backend.to_device(host, x.device)
            if cols is None:
                cols = [[] for _ in vals[0]]
            for k in range(len(vals[0])):
                cols[k].append((vals[0][k] - vals[1][k]) / (2 * eps))
    return [np.stack(c, axis=1) for c in cols] if cols else []


def _analytical(inputs, idx, outputs):
    np = _backend.numpy

    jac = {}
    for k, o in enumerate(outputs):
        n = o.numel()
        parts = [1.0, 1j] if o.is_complex() else [1.0]
        rows = {i: [] for i in idx}
        for part in parts:
            for r in range(n):
                if not o.requires_grad:
                    for i in idx:
                        rows[i].append(np.zeros(_real_coords(inputs[i]._data).size))
                    continue
                v = np.zeros(n, dtype=o._data.dtype)
                v[r] = part
                gs = grad(o, [inputs[i] for i in idx], tensor(v.reshape(tuple(o.shape)), device=o.device),
                          retain_graph=True, allow_unused=True)
                for i, gi in zip(idx, gs):
                    if gi is None:
                        rows[i].append(np.zeros(_real_coords(inputs[i]._data).size))
                    else:
                        g = gi._data
                        if inputs[i].is_complex() and g.dtype.kind != "c":
                            g = g.astype(inputs[i]._data.dtype)
                        rows[i].append(_real_coords(g))
        for i in idx:  # an empty output has an empty Jacobian
            jac[(k, i)] = np.stack(rows[i], axis=0) if n else np.zeros((0, _real_coords(inputs[i]._data).size))
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True,
              fast_mode=False, masked=None):
    """Check func's gradients against finite differences (use float64 or complex128 inputs).

    Returns True, or raises GradcheckError (returns False with raise_exception=False) naming the
    output and input whose Jacobians differ, with both Jacobians.

    >>> import workbench as wb
    >>> x = wb.randn(3, dtype=wb.float64, requires_grad=True)
    >>> wb.autograd.gradcheck(lambda t: (t * t).sum(), (x,))
    True
    """
    _check_flags(gradcheck, locals())
    np = _backend.numpy
    inputs = _as_tuple(inputs)
    idx = _diff_inputs(inputs)
    if not idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for i in idx:
        if inputs[i].dtype.name not in ("float64", "complex128"):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating "
                          "point or complex.", UserWarning, stacklevel=2)
    with enable_grad():
        outputs = _outputs(func, inputs)
    if not outputs:
        raise ValueError("gradcheck: the function returned no floating-point or complex tensor")

    def fail(msg):
        if raise_exception:
            raise GradcheckError(msg)
        return False

    if check_grad_dtypes:
        for o in outputs:
            if o.requires_grad:
                gs = grad(o, [inputs[i] for i in idx], ones_like(o), retain_graph=True, allow_unused=True)
                for i, g in zip(idx, gs):
                    if g is not None and g.dtype != inputs[i].dtype:
                        return fail(f"Gradient has dtype mismatch: input {i} is {inputs[i].dtype}, its gradient "
                                    f"{g.dtype}")
    ana = _analytical(inputs, idx, outputs)
    for i in idx:
        num = _numerical(func, inputs, i, eps)
        for k in range(len(outputs)):
            a, n = ana[(k, i)], num[k]
            if not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=True):
                kind = " (complex: real and imaginary parts as separate coordinates)" if (
                    outputs[k].is_complex() or inputs[i].is_complex()) else ""
                return fail(f"Jacobian mismatch for output {k} with respect to input {i}{kind},\n"
                            f"numerical:{n}\nanalytical:{a}\nmax abs difference {np.max(np.abs(a - n))}\n")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False):
    """Check second derivatives: gradcheck of the function (inputs, grad_outputs) -> d func/d inputs.

    >>> import workbench as wb
    >>> x = wb.randn(3, dtype=wb.float64, requires_grad=True)
    >>> wb.autograd.gradgradcheck(lambda t: (t * t * t).sum(), (x,))
    True
    """
    _check_flags(gradgradcheck, locals())
    np = _backend.numpy
    inputs = _as_tuple(inputs)
    with enable_grad():
        outputs = [o for o in _outputs(func, inputs) if o.requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        gos = []
        for o in outputs:
            v = rng.standard_normal(tuple(o.shape))
            if o.is_complex():
                v = v + 1j * rng.standard_normal(tuple(o.shape))
            if gen_non_contig_grad_outputs:  # every other element of a doubled last dim: a strided view
                go = tensor(np.stack([v, v], axis=-1).astype(o._data.dtype), device=o.device)[..., 0]
                gos.append(go.requires_grad_())
            else:
                gos.append(tensor(v.astype(o._data.dtype), device=o.device, requires_grad=True))
        grad_outputs = tuple(gos)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    idx = _diff_inputs(inputs)

    def first_grads(*args):
        ins, gos = args[:n_in], args[n_in:]
        with enable_grad():  # gradcheck evaluates under no_grad for its finite differences
            outs = [o for o in _outputs(func, ins) if o.requires_grad]
            gs = grad(outs, [ins[i] for i in idx], gos, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grads, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, check_grad_dtypes=check_grad_dtypes)
