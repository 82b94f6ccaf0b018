"""Specs of the ops that other specs reach under another spelling: aliases and method forms that are their own
function objects (``wb.mul`` beside ``*``, ``x.t()`` beside ``x.T``), queries with tensor values, casts.

``forms`` checks the function and the method in one spec: its op returns both results, so one sample
serves the two spellings (tiny shapes keep the finite differences cheap on every device).
"""
import numpy as np
import scipy.special as sp

import workbench as wb
from workbench.testing.op_specs import Sample, arr, spec

X, Y = arr(2, 3), arr(2, 3, seed=1)
POS = arr(2, 3, seed=2, positive=True)
_I = np.array([[4, -6, 0], [9, 3, 12]])
_J = np.array([[6, 4, 0], [3, 3, 8]])
_BOOL = "boolean or integer output: there is no gradient"


def _torch():
    import torch

    return torch


def _both(fn_ns, name, method=True):
    # (ns.name(*a), a[0].name(*a[1:])): the function and the method form on the same arguments
    def op(*a, **k):
        out = (getattr(fn_ns(), name)(*a, **k),)
        if method:
            out += (getattr(a[0], name)(*a[1:], **k),)
        return tuple(o for r in out for o in (r if isinstance(r, tuple) else (r,)))
    return op


def forms(name, ref, samples, method=True, torch=True, **kw):
    """The spec ``<name>_forms``: ``wb.name`` and ``Tensor.name`` together (and torch's pair as the contract)."""
    n = 2 if method else 1

    def want(*a, **k):
        r = ref(*a, **k)
        return (r if isinstance(r, tuple) else (r,)) * n

    torch_op = _both(_torch, name, method) if torch else None
    return spec(name + "_forms", _both(lambda: wb, name, method), want, samples, torch_op=torch_op, **kw)


def S(*args, **kw):
    return Sample(list(args), kw)


def V(*args, **kw):
    return Sample(list(args), kw, values_only=_BOOL)


# --- aliases and method forms ------------------------------------------------------------------------------
forms("mul", np.multiply, [S(X, Y), S(X, 2.5)])
forms("multiply", np.multiply, [S(X, Y)])
forms("div", lambda a, b, rounding_mode=None: np.trunc(a / b) if rounding_mode else a / b, [S(X, POS), S(X * 3, POS, rounding_mode="trunc")],
      no_gradgrad="rounding_mode='trunc' is piecewise constant: its first derivative is zero almost everywhere, and "
                  "the true-division sample checks the second")
forms("divide", np.divide, [S(X, POS)])
forms("true_divide", np.divide, [S(X, POS)])
forms("rsub", lambda a, b: b - a, [S(X, Y)], method=False)
for _name, _ref in (("eq", np.equal), ("ne", np.not_equal), ("not_equal", np.not_equal)):
    forms(_name, _ref, [V(_I, _J), V(X, Y)])
forms("bitwise_not", np.invert, [V(_I)])
forms("relu", lambda x: np.maximum(x, 0), [S(X)])
for _name in ("positive", "conj", "resolve_conj", "resolve_neg", "clone"):
    forms(_name, lambda x: x, [S(X)])
forms("detach", lambda x: x, [S(X)], no_grad="detach cuts the graph: no gradient, by design")
forms("t", np.transpose, [S(X)])
forms("adjoint", lambda x: np.swapaxes(x, -1, -2), [S(arr(2, 2, 3))])
spec("transpose_properties", lambda x: (x.T, x.mT, x.H, x.mH), lambda x: (x.T, np.swapaxes(x, -1, -2), x.T,
                                                                            np.swapaxes(x, -1, -2)),
     [S(X)], torch_op=lambda x: (x.T, x.mT, x.H, x.mH))
forms("narrow_copy", lambda x, d, s, n: x[:, s:s + n], [S(arr(2, 4), 1, 1, 2)])
forms("dsplit", lambda x, n: tuple(np.dsplit(x, n)), [S(arr(2, 2, 4), 2)])
forms("atleast_1d", np.atleast_1d, [S(np.array(1.5)), S(X)], method=False)
forms("atleast_2d", np.atleast_2d, [S(arr(3))], method=False)
spec("column_stack", lambda a, b: wb.column_stack([a, b]), lambda a, b: np.column_stack([a, b]), [S(arr(3), X.T)],
     torch_op=lambda a, b: _torch().column_stack([a, b]))
spec("chain_matmul", lambda a, b, c: wb.chain_matmul(a, b, c), lambda a, b, c: a @ b @ c,
     [S(X, arr(3, 2, seed=1), arr(2, 2, seed=2))], torch_op=lambda a, b, c: _torch().chain_matmul(a, b, c))
spec("method_forms", lambda x, y: (x.softmax(1), x.log_softmax(1), x.expand_as(y), x.type_as(y),
                                   y.sum_to_size(1, 3), *x.split_with_sizes([1, 2], 1)),
     lambda x, y: (np.exp(x) / np.exp(x).sum(1, keepdims=True), x - np.log(np.exp(x).sum(1, keepdims=True)),
                   np.broadcast_to(x, y.shape), x, y.sum(0, keepdims=True), x[:, :1], x[:, 1:]),
     [S(arr(1, 3), arr(2, 3, seed=1))],
     torch_op=lambda x, y: (x.softmax(1), x.log_softmax(1), x.expand_as(y), x.type_as(y), y.sum_to_size(1, 3),
                            *x.split_with_sizes([1, 2], 1)))
spec("reflected_operators", lambda a: (2.0 + a, +a, 3.0 - a), lambda a: (2.0 + a, a, 3.0 - a), [S(X)],
     torch_op=lambda a: (2.0 + a, +a, 3.0 - a))
spec("rmatmul", lambda a, b: a.__rmatmul__(b), lambda a, b: b @ a, [S(arr(3, 2), X)],
     torch_op=lambda a, b: a.__rmatmul__(b))
spec("reflected_integer_operators", lambda a: (3 & a, 3 | a, 3 ^ a, 1 << (a & 3), 64 >> (a & 3), 50 // (a + 20)),
     lambda a: (3 & a, 3 | a, 3 ^ a, 1 << (a & 3), 64 >> (a & 3), 50 // (a + 20)), [V(_I)],
     torch_op=lambda a: (3 & a, 3 | a, 3 ^ a, 1 << (a & 3), 64 >> (a & 3), 50 // (a + 20)))

# --- linear algebra under its older names ------------------------------------------------------------------
_WELL = np.eye(3) * 2 + arr(3, 3, seed=3, low=-0.4, high=0.4)
forms("inverse", np.linalg.inv, [S(_WELL)])
forms("pinverse", np.linalg.pinv, [S(arr(3, 2))])
spec("cholesky", lambda a: (wb.cholesky(a @ a.mT + 1e-3 * a.new_ones(())),
                            (a @ a.mT + 1e-3 * a.new_ones(())).cholesky(upper=True)),
     lambda a: (np.linalg.cholesky(a @ a.T + 1e-3), np.linalg.cholesky(a @ a.T + 1e-3).T), [S(_WELL)],
     torch_op=lambda a: (_torch().cholesky(a @ a.mT + 1e-3 * a.new_ones(())),
                         (a @ a.mT + 1e-3 * a.new_ones(())).cholesky(upper=True)))
forms("qr", lambda a: tuple(np.linalg.qr(a)), [S(arr(3, 2))])
spec("linalg_diagonal", lambda x: wb.linalg.diagonal(x, offset=1), lambda x: np.diagonal(x, 1, -2, -1),
     [S(arr(2, 3, 3))], torch_op=lambda x: _torch().linalg.diagonal(x, offset=1))
forms("dist", lambda a, b, p=2: np.linalg.norm((a - b).ravel(), p), [S(X, Y), S(X, Y, 3)])
forms("renorm", lambda x, p, d, m: x * np.minimum(1, m / np.sqrt((x * x).sum(1, keepdims=True))),
      [S(arr(3, 4), 2, 0, 1.0)])

# --- special functions under their Tensor names --------------------------------------------------------------
forms("mvlgamma", lambda x, p: np.vectorize(lambda v: sp.multigammaln(v, p))(x), [S(POS + 1, 2)])
forms("igamma", sp.gammainc, [Sample([POS + 1, POS], nondiff=[0])])
forms("igammac", sp.gammaincc, [Sample([POS + 1, POS], nondiff=[0])])
forms("heaviside", np.heaviside, [Sample([np.array([[-1.0, 0.0, 2.0]]), np.array([[0.5, 0.5, 0.5]])],
                                         values_only="a step: PyTorch implements no derivative, nor does workbench")])
forms("gcd", np.gcd, [V(_I, _J)])
forms("lcm", np.lcm, [V(_I, _J)])
forms("angle", np.angle, [S(X + 0.1)])
spec("polar", lambda r, t: wb.polar(r, t), lambda r, t: r * np.exp(1j * t), [S(POS, X)],
     torch_op=lambda r, t: _torch().polar(r, t))
spec("complex", lambda a, b: wb.complex(a, b), lambda a, b: a + 1j * b, [S(X, Y)],
     torch_op=lambda a, b: _torch().complex(a, b))

# --- reductions and queries with tensor values ----------------------------------------------------------------
_Z = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
forms("count_nonzero", lambda x, dim=None: np.count_nonzero(x, axis=dim), [S(_Z), S(_Z, dim=1)],
      no_grad=_BOOL)
forms("all", lambda x, dim=None: np.all(x, axis=dim), [S(_Z), S(_Z, dim=0)], no_grad=_BOOL)
forms("any", lambda x, dim=None: np.any(x, axis=dim), [S(_Z), S(_Z, dim=1)], no_grad=_BOOL)
forms("argmax", lambda x, dim=None: np.argmax(x, axis=dim), [S(X), S(X, dim=1)], no_grad=_BOOL)
forms("argmin", lambda x, dim=None: np.argmin(x, axis=dim), [S(X), S(X, dim=0)], no_grad=_BOOL)
forms("argwhere", np.argwhere, [S(_Z)], no_grad=_BOOL)
forms("aminmax", lambda x, dim=None: (np.min(x, axis=dim), np.max(x, axis=dim)), [S(X), S(X, dim=1)])
forms("isreal", np.isreal, [V(X)])
spec("isin", lambda a, b: wb.isin(a, b), np.isin, [V(_I, np.array([0, 3, 9]))],
     torch_op=lambda a, b: _torch().isin(a, b))
_BOOLS = "returns a Python bool, which the NumPy reference checks; PyTorch's is the same comparison"
forms("allclose", lambda a, b: np.allclose(a, b), [S(X, X + 1e-9), S(X, Y)], no_grad=_BOOL, no_torch=_BOOLS,
      torch=False)
forms("equal", lambda a, b: np.array_equal(a, b), [S(X, X), S(X, Y)], no_grad=_BOOL, no_torch=_BOOLS, torch=False)
forms("cov", np.cov, [S(arr(2, 5))])
forms("corrcoef", np.corrcoef, [S(arr(2, 5))])
forms("quantile", lambda x, q, dim=None: np.quantile(x, q, axis=dim), [S(arr(2, 5), 0.3, dim=1), S(arr(5), 0.8)])
forms("nanquantile", lambda x, q, dim=None: np.nanquantile(x, q, axis=dim), [S(arr(2, 5), 0.3, dim=1)])
forms("histogram", lambda x, bins: tuple(np.histogram(x, bins)), [S(arr(10), 4)], no_grad=_BOOL)
spec("trapezoid", lambda y, x: (wb.trapezoid(y, x), wb.trapz(y, x), wb.cumulative_trapezoid(y, x)),
     lambda y, x: (np.trapezoid(y, x), np.trapezoid(y, x), np.cumsum((y[..., 1:] + y[..., :-1]) / 2 * np.diff(x), -1)),
     [S(arr(2, 4), np.array([0.0, 0.5, 1.5, 2.0]))],
     torch_op=lambda y, x: (_torch().trapezoid(y, x), _torch().trapz(y, x), _torch().cumulative_trapezoid(y, x)))
spec("unravel_index", lambda i: wb.unravel_index(i, (3, 4)), lambda i: np.unravel_index(i, (3, 4)),
     [S(np.array([0, 5, 11]))], torch_op=lambda i: _torch().unravel_index(i, (3, 4)), no_grad=_BOOL)
forms("nonzero_static", lambda x, size: np.concatenate([np.argwhere(x), -np.ones((size - 3, 2), int)]),
      [S(_Z, size=5)], no_grad=_BOOL)

# --- casts and in-place writes that have no out-of-place op --------------------------------------------------
spec("cast_double", lambda x: (x.double(), x.cdouble().real), lambda x: (x.astype(np.float64), x), [S(X)],
     torch_op=lambda x: (x.double(), x.cdouble().real), dtypes=("float64",))
spec("casts", lambda x: (x.float(), x.half(), x.int(), x.long(), x.short(), x.char(), x.byte(), x.bool(),
                         x.cfloat()),
     lambda x: (x.astype(np.float32), x.astype(np.float16), x.astype(np.int32), x.astype(np.int64),
                x.astype(np.int16), x.astype(np.int8), x.astype(np.uint8), x.astype(bool), x.astype(np.complex64)),
     [Sample([np.array([[0.0, 1.7, -2.2], [3.5, 0.25, 9.0]])],
             values_only="casts to narrower or integer dtypes: gradcheck needs float64 in and out")],
     torch_op=lambda x: (x.float(), x.half(), x.int(), x.long(), x.short(), x.char(), x.byte(), x.bool(), x.cfloat()))
spec("writes", lambda x: (x.clone().fill_diagonal_(5.0), x.clone().fill_(2.0), x.clone().zero_()),
     lambda x: (np.where(np.eye(*x.shape, dtype=bool), 5.0, x), np.full_like(x, 2.0), np.zeros_like(x)),
     [S(X)], torch_op=lambda x: (x.clone().fill_diagonal_(5.0), x.clone().fill_(2.0), x.clone().zero_()))
spec("copy_", lambda x, y: x.clone().copy_(y), lambda x, y: y + 0 * x, [S(X, Y)],
     no_torch="gap: after x.clone().copy_(y) PyTorch gives x a zero gradient, workbench leaves x.grad None")
