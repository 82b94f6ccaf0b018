"""Statistics of samples: quantiles (with NumPy's five interpolation rules) and covariance/correlation
matrices. Composites of sort, gather and matmul, so gradients come from those primitives.

>>> import workbench as wb
>>> wb.quantile(wb.tensor([1., 2., 3., 4.]), 0.5)
tensor(2.5000)
"""
import warnings

from .._backend import dtypes as _dt
from .._core import Tensor
from ._util import _out, wrap_dim

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(op, input, q, dim, keepdim, interpolation, ignore_nan):
    if input.dtype not in (_dt.float32, _dt.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype, got {input.dtype}; "
                           "convert it first, e.g. x.float()")
    if input.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    scalar_q = not isinstance(q, Tensor)
    if scalar_q:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {q}")
        qs = input.new_tensor([float(q)])
    else:
        if q.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor, got {q.ndim} dimensions")
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor, got q {q.dtype} and "
                               f"input {input.dtype}")
        if not bool(((q >= 0) & (q <= 1)).all()):
            raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
        scalar_q, qs = q.ndim == 0, q.reshape(-1)
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        d = wrap_dim(dim, input.ndim)
        x = input.unsqueeze(0) if input.ndim == 0 else input
        d = 0 if input.ndim == 0 else d
    rows = x.movedim(d, -1)                                       # (..., n), NaNs sort last
    ordered = rows.sort(dim=-1).values
    n = ordered.shape[-1]
    nan = rows.isnan()
    valid = (~nan).sum(-1, keepdim=True) if ignore_nan else ordered.new_full(ordered.shape[:-1] + (1,), n)
    last = (valid - 1).clamp(min=0).to(qs.dtype)
    ranks = last * qs                                             # (..., Q)
    lo = ranks.floor().long().clamp(0, n - 1)
    hi = ranks.ceil().long().clamp(0, n - 1)
    if interpolation == "nearest":
        lo = hi = ranks.round().long().clamp(0, n - 1)
    below, above = ordered.gather(-1, lo), ordered.gather(-1, hi)
    if interpolation == "linear":
        result = below + (above - below) * (ranks - ranks.floor())
    elif interpolation == "midpoint":
        result = (below + above) / 2
    elif interpolation == "higher":
        result = above
    else:  # lower, nearest
        result = below
    empty = (valid == 0) if ignore_nan else nan.any(-1, keepdim=True)
    result = result.masked_fill(empty, float("nan")).movedim(-1, 0)   # (Q, ...)
    if keepdim:
        result = (result.reshape((result.shape[0],) + (1,) * input.ndim) if dim is None
                  else result.unsqueeze(1 + d))
    return result.squeeze(0) if scalar_q else result


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The q-th quantiles of all elements, or of each slice along ``dim`` (q a number or a 1-D tensor,
    whose quantiles stack along a new first dimension); NaN where a slice holds NaN.

    >>> import workbench as wb
    >>> wb.quantile(wb.tensor([[0., 1., 2., 3.]]), wb.tensor([0.25, 0.75]), dim=1)
    tensor([[0.7500],
            [2.2500]])
    """
    return _out(_quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False), out, "same")


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """quantile ignoring NaN (NaN only where a slice is all NaN).

    >>> import workbench as wb
    >>> wb.nanquantile(wb.tensor([1., float("nan"), 3.]), 0.5)
    tensor(2.)
    """
    return _out(_quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True), out, "same")


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in ``input``'s rows, observed in its columns (a 1-D input is
    one variable: its variance); ``fweights`` (integer counts) and ``aweights`` weigh the observations.

    >>> import workbench as wb
    >>> wb.cov(wb.tensor([[0., 1., 2.], [2., 1., 0.]]))
    tensor([[ 1., -1.],
            [-1.,  1.]])
    """
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.to(_dt.get_default_dtype())
    n_obs = x.shape[1]
    w = None
    for name, weights, integral in (("fweights", fweights, True), ("aweights", aweights, False)):
        if weights is None:
            continue
        if weights.ndim > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                               f"{weights.ndim} dimensions")
        if weights.numel() != n_obs:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                               f"input but got {weights.numel()} != {n_obs}")
        if integral and (weights.dtype.is_floating_point or weights.dtype.is_complex):
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                               f"{weights.dtype} dtype")
        if not integral and not weights.dtype.is_floating_point:
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                               f"{weights.dtype} dtype")
        if bool((weights < 0).any()):
            raise RuntimeError(f"cov(): {name} cannot be negative")
        w = weights if w is None else w * weights
    if w is None:
        avg = x.mean(1)
        w_sum = n_obs
        norm = n_obs - correction
    else:
        w = w.to(x.dtype)
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        norm = w_sum - correction * ((w * aweights).sum() / w_sum if aweights is not None else 1)
    if float(norm) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = norm * 0 if isinstance(norm, Tensor) else 0
    xm = x - avg.unsqueeze(1)
    xw = xm if w is None else xm * w
    c = (xw @ xm.t().conj()) / norm
    return c.squeeze() if input.ndim < 2 or c.shape == (1, 1) else c


def corrcoef(input):
    """Pearson correlation coefficients of the variables in ``input``'s rows (values clipped to [-1, 1]).

    >>> import workbench as wb
    >>> wb.corrcoef(wb.tensor([[0., 1., 2.], [2., 1., 0.]]))
    tensor([[ 1., -1.],
            [-1.,  1.]])
    """
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = c.diagonal().sqrt()
    c = c / std.unsqueeze(1) / std.unsqueeze(0)
    return c.clamp(-1, 1) if not c.dtype.is_complex else c


__all__ = ["quantile", "nanquantile", "cov", "corrcoef"]
METHODS = {n: globals()[n] for n in __all__}
