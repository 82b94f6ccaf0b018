"""Sliding-window helpers shared by convolution and pooling (raw arrays), and the separable matrix map."""
import itertools

from .._backend import fused as _fused
from ._util import array_step


# --- convolution geometry ----------------------------------------------------------------------
def _out_size(size, k, s, lo, hi, d):
    return (size + lo + hi - d * (k - 1) - 1) // s + 1


def _pad(xp, x, lo, hi, value=0.0):
    """x (N, C, *S) padded by lo/hi on the spatial dims (a copy; x itself when there is no padding)."""
    if not any(lo) and not any(hi):
        return x
    shape = x.shape[:2] + tuple(s + a + b for s, a, b in zip(x.shape[2:], lo, hi))
    out = xp.full(shape, value, dtype=x.dtype) if value else xp.zeros(shape, dtype=x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(a, a + s) for a, s in zip(lo, x.shape[2:]))] = x
    return out


def _windows(xp, xpd, ksize, stride, dil, osize):
    """(N, C, *O, *K) strided view of the sliding windows of the (padded) input: no copy."""
    nd = len(ksize)
    eff = tuple(d * (k - 1) + 1 for k, d in zip(ksize, dil))
    v = xp.lib.stride_tricks.sliding_window_view(xpd, eff, axis=tuple(range(2, 2 + nd)))
    sl = ((slice(None),) * 2 + tuple(slice(0, s * (o - 1) + 1, s) for s, o in zip(stride, osize))
          + tuple(slice(None, None, d) for d in dil))
    return v[sl]


def _col2im(xp, cols, spatial, ksize, stride, lo, hi, dil):
    """Sum window contributions back into an image: cols (A, *K, B, *O) -> (A, B, *spatial).

    One strided add per kernel position (no scatter), then the padding is cropped away.
    """
    nd = len(ksize)
    a, b = cols.shape[0], cols.shape[1 + nd]
    osize = cols.shape[2 + nd:]
    full = tuple(s + p + q for s, p, q in zip(spatial, lo, hi))
    out = xp.zeros((a, b) + full, dtype=cols.dtype)
    if nd == 2 and _fused.usable(out) and cols.dtype == out.dtype:  # NumPy's adds of a few entries a row: 5 ns each
        _fused.col2im2d(xp.ascontiguousarray(cols).reshape(-1), cols.shape, stride[0], stride[1], dil[0], dil[1],
                        out.reshape(-1), full[0], full[1])
    else:
        for kpos in itertools.product(*[range(k) for k in ksize]):
            sl = tuple(slice(k * d, k * d + s * (o - 1) + 1, s) for k, d, s, o in zip(kpos, dil, stride, osize))
            out[(slice(None), slice(None)) + sl] += cols[(slice(None),) + kpos]
    if any(lo) or any(hi):
        out = out[(slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(lo, spatial))]
    return out


def _sep_apply(x, mats):
    """Apply a matrix along each spatial dim (None: identity): the separable linear map of pooling/resizing."""
    nd = len(mats)
    for i, m in enumerate(mats):
        if m is None:
            continue
        ax = x.ndim - nd + i
        mt = array_step(lambda m=m, dt=x._data.dtype: m.T.astype(dt))
        if ax == x.ndim - 1:
            x = x @ mt
        else:
            x = (x.transpose(ax, -1) @ mt).transpose(ax, -1)
    return x
