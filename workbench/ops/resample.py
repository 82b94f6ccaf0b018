"""Resampling: interpolate/upsample, pixel and channel shuffles, affine_grid and grid_sample.

Resizing along separable axes is a matmul with small constant matrices (exact, and differentiable to
any order for free); grid_sample gathers its taps with ``TakeRows``.
"""
import itertools
import math
import warnings

from .. import _backend
from ..autograd.function import Function
from ..autograd.graph import composite
from .._core import Tensor
from ._windows import _sep_apply
from .index import TakeRows
from .pool import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d


# --- resampling ----------------------------------------------------------------------------------
def _source_coords(xp, n_in, n_out, scale, align_corners, cubic=False):
    dst = xp.arange(n_out, dtype="float64")
    if align_corners:
        return dst * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    src = (dst + 0.5) * scale - 0.5
    return src if cubic else xp.maximum(src, 0.0)


def _resize_matrix(xp, mode, n_in, n_out, scale, align_corners):
    m = xp.zeros((n_out, n_in))
    rows = xp.arange(n_out)
    if n_in == n_out and mode == "linear":  # PyTorch's linear modes copy a dim whose size does not change
        m[rows, rows] = 1.0
    elif mode == "nearest":  # PyTorch computes the source index in float32
        f32 = xp.float32
        src = xp.minimum(xp.floor(rows.astype(f32) * f32(scale)).astype("int64"), n_in - 1)
        m[rows, src] = 1.0
    elif mode == "nearest-exact":
        f32 = xp.float32
        src = xp.minimum(xp.floor((rows.astype(f32) + f32(0.5)) * f32(scale)).astype("int64"), n_in - 1)
        m[rows, src] = 1.0
    elif mode == "linear":
        src = _source_coords(xp, n_in, n_out, scale, align_corners)
        i0 = xp.minimum(xp.floor(src).astype("int64"), n_in - 1)
        i1 = xp.minimum(i0 + 1, n_in - 1)
        lam = src - i0
        m[rows, i0] += 1.0 - lam
        m[rows, i1] += lam
    else:  # cubic convolution (A = -0.75), borders clamped, as PyTorch's bicubic
        src = _source_coords(xp, n_in, n_out, scale, align_corners, cubic=True)
        i0 = xp.floor(src).astype("int64")
        t = src - i0
        a = -0.75
        ws = [((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
              ((a + 2) * t - (a + 3)) * t * t + 1,
              ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1]
        ws.append(1.0 - ws[0] - ws[1] - ws[2])
        for j, w in enumerate(ws):
            idx = xp.clip(i0 - 1 + j, 0, n_in - 1)
            for r in range(n_out):  # clamped taps can coincide: accumulate one row at a time
                m[r, idx[r]] += w[r]
    return m


def _aa_filter(mode, x):
    x = abs(x)
    if mode == "bilinear":
        return max(0.0, 1.0 - x)
    a = -0.5  # PyTorch's antialiased bicubic uses a = -0.5 (PIL's), not the -0.75 of plain bicubic
    if x < 1:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a if x < 2 else 0.0


def _antialias_matrix(xp, mode, n_in, n_out, scale):
    """PyTorch's (PIL's) antialiased resampling: the filter widened by the downscale factor, rows normalised."""
    if n_in == n_out:  # a dim whose size does not change is copied
        return xp.eye(n_in)
    support = (2 if mode == "bilinear" else 4) * 0.5 * max(scale, 1.0)
    inv = 1.0 / scale if scale >= 1.0 else 1.0
    rows = []
    for i in range(n_out):
        center = scale * (i + 0.5)
        lo, hi = max(int(center - support + 0.5), 0), min(int(center + support + 0.5), n_in)
        w = [_aa_filter(mode, (j + lo - center + 0.5) * inv) for j in range(hi - lo)]
        total = sum(w)
        rows.append([0.0] * lo + [v / total if total else v for v in w] + [0.0] * (n_in - hi))
    return xp.asarray(rows, dtype="float64").reshape(n_out, n_in)


_MODES = {"nearest": 0, "nearest-exact": 0, "linear": 1, "bilinear": 2, "trilinear": 3, "bicubic": 2, "area": 0}


@composite("interpolate")
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize (N, C, *spatial) by size or scale_factor: nearest, (bi/tri)linear, bicubic or area.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.interpolate(wb.tensor([[[1.0, 2.0]]]), scale_factor=2, mode="linear", align_corners=True)
    tensor([[[1.0000, 1.3333, 1.6667, 2.0000]]])
    """
    if mode not in _MODES:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) "
                                  f"for the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if antialias and mode not in ("bilinear", "bicubic"):
        raise ValueError(f"Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor "
                         f"as input, got mode={mode!r}")
    nd = input.ndim - 2
    if nd < 1 or nd > 3 or (_MODES[mode] and _MODES[mode] != nd):
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                  f"{_MODES[mode] + 2 if _MODES[mode] else '3D, 4D or 5D'} input")
    linear = mode in ("linear", "bilinear", "trilinear", "bicubic")
    if align_corners is not None and not linear:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    align_corners = bool(align_corners)
    spatial = tuple(input.shape[2:])
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        out = tuple(size) if isinstance(size, (list, tuple)) else (size,) * nd
        if len(out) != nd:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {list(spatial)} and output size of {list(out)}.")
        scales = [n / o for n, o in zip(spatial, out)]
    else:
        sf = tuple(scale_factor) if isinstance(scale_factor, (list, tuple)) else (scale_factor,) * nd
        if len(sf) != nd:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                             f"input with spatial dimensions of {list(spatial)} and scale_factor of {list(sf)}.")
        out = tuple(int(math.floor(n * f)) for n, f in zip(spatial, sf))
        scales = [n / max(o, 1) for n, o in zip(spatial, out)] if recompute_scale_factor else [1.0 / f for f in sf]
    if any(o <= 0 for o in out) and mode != "area":
        raise RuntimeError(f"interpolate: Input and output sizes should be greater than 0, but got input "
                           f"{list(spatial)} and output {list(out)}")
    if mode == "area":
        return adaptive_avg_pool1d(input, out) if nd == 1 else (
            adaptive_avg_pool2d(input, out) if nd == 2 else adaptive_avg_pool3d(input, out))
    xp = _backend.xp_of(input._data)
    if antialias:
        if align_corners:
            scales = [(n - 1) / (o - 1) if o > 1 else 0.0 for n, o in zip(spatial, out)]
        mats = [_antialias_matrix(xp, mode, n, o, sc) for n, o, sc in zip(spatial, out, scales)]
        return _sep_apply(input, mats)
    kind = mode if mode in ("nearest", "nearest-exact", "bicubic") else "linear"
    mats = [_resize_matrix(xp, kind, n, o, sc, align_corners) for n, o, sc in zip(spatial, out, scales)]
    return _sep_apply(input, mats)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of interpolate.  >>> wb.nn.functional.upsample(wb.ones(1, 1, 2), scale_factor=2).shape  ->  workbench.Size([1, 1, 4])"""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.", UserWarning,
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: interpolate(mode='nearest').  >>> F.upsample_nearest(wb.ones(1, 1, 2), scale_factor=2).shape  ->  workbench.Size([1, 1, 4])"""
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: interpolate(mode='bilinear', align_corners=True).  >>> F.upsample_bilinear(wb.ones(1, 1, 2, 2), scale_factor=2).shape  ->  workbench.Size([1, 1, 4, 4])"""
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use nn.functional.interpolate instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input, upscale_factor):
    """(N, C*r*r, H, W) -> (N, C, H*r, W*r).

    >>> import workbench as wb
    >>> wb.pixel_shuffle(wb.ones(1, 4, 2, 2), 2).shape
    workbench.Size([1, 1, 4, 4])
    """
    r = int(upscale_factor)
    if input.ndim < 3 or input.shape[-3] % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                           f"of upscale_factor, but input.size(-3)={input.shape[-3] if input.ndim >= 3 else None} "
                           f"is not divisible by {r * r}")
    lead = tuple(input.shape[:-3])
    c, h, w = input.shape[-3:]
    oc = c // (r * r)
    nl = len(lead)
    x = input.reshape(lead + (oc, r, r, h, w))
    x = x.permute(*range(nl), nl, nl + 3, nl + 1, nl + 4, nl + 2)
    return x.reshape(lead + (oc, h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """(N, C, H*r, W*r) -> (N, C*r*r, H, W).

    >>> import workbench as wb
    >>> wb.pixel_unshuffle(wb.ones(1, 1, 4, 4), 2).shape
    workbench.Size([1, 4, 2, 2])
    """
    r = int(downscale_factor)
    if input.ndim < 3 or input.shape[-1] % r or input.shape[-2] % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width divisible by downscale_factor={r}, got "
                           f"input of size {list(input.shape)}")
    lead = tuple(input.shape[:-3])
    c, h, w = input.shape[-3:]
    nl = len(lead)
    x = input.reshape(lead + (c, h // r, r, w // r, r))
    x = x.permute(*range(nl), nl, nl + 2, nl + 4, nl + 1, nl + 3)
    return x.reshape(lead + (c * r * r, h // r, w // r))


def channel_shuffle(input, groups):
    """Interleave channel groups: (N, g*k, ...) viewed as (N, g, k, ...) -> (N, k, g, ...).

    >>> import workbench as wb
    >>> wb.channel_shuffle(wb.arange(4.0).reshape(1, 4, 1), 2).flatten().tolist()
    [0.0, 2.0, 1.0, 3.0]
    """
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    n, c = input.shape[:2]
    if groups <= 0 or c % groups:
        raise RuntimeError(f"channel_shuffle: number of channels ({c}) must be divisible by groups ({groups})")
    rest = tuple(input.shape[2:])
    x = input.reshape((n, groups, c // groups) + rest).transpose(1, 2)
    return x.reshape((n, c) + rest)


def _grid_coords(xp, n, align_corners, dtype):
    if align_corners:
        return xp.linspace(-1.0, 1.0, n) if n > 1 else xp.zeros(1)
    return (xp.arange(n) * 2.0 + 1.0) / n - 1.0


def _warn_align(align_corners, op):
    if align_corners is None:
        warnings.warn(f"Default {op} behavior has changed to align_corners=False since 1.3.0. Please specify "
                      "align_corners=True if the old behavior is desired. See the documentation of grid_sample for "
                      "details.", UserWarning, stacklevel=3)
        return False
    return bool(align_corners)


@composite("affine_grid")
def affine_grid(theta, size, align_corners=None):
    """Sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps theta (N, 2, 3) (or (N, 3, 4)).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.affine_grid(wb.tensor([[[1.0, 0, 0], [0, 1.0, 0]]]), (1, 1, 2, 2), align_corners=True)[0, 0]
    tensor([[-1., -1.],
            [ 1., -1.]])
    """
    align_corners = _warn_align(align_corners, "affine_grid")
    size = tuple(size)
    if len(size) == 4 and tuple(theta.shape[1:]) == (2, 3):
        sp = size[2:]
    elif len(size) == 5 and tuple(theta.shape[1:]) == (3, 4):
        sp = size[2:]
    else:
        raise ValueError(f"affine_grid: expected theta of shape (N, 2, 3) with a 4-D size or (N, 3, 4) with a "
                         f"5-D size, got theta {list(theta.shape)} and size {list(size)}")
    if theta.shape[0] != size[0]:
        raise ValueError(f"affine_grid: theta's batch {theta.shape[0]} does not match size[0]={size[0]}")
    xp = _backend.xp_of(theta._data)
    axes = [_grid_coords(xp, n, align_corners, None) for n in sp]
    mesh = xp.meshgrid(*axes, indexing="ij")  # D/H/W order
    coords = [m.reshape(-1) for m in reversed(mesh)]  # x, y(, z): x varies along W
    base = xp.stack(coords + [xp.ones_like(coords[0])], axis=1).astype(theta._data.dtype)
    grid = Tensor._make(base) @ theta.transpose(1, 2)
    return grid.reshape((size[0],) + tuple(sp) + (len(sp),))


def _unnormalize(g, n, align_corners):
    return (g + 1) / 2 * (n - 1) if align_corners else ((g + 1) * n - 1) / 2


def _reflect(c, lo, hi):
    # reflect coordinates into [lo, hi] (Tensor op, gradient flips sign on odd reflections)
    span = hi - lo
    if span <= 0:
        return c * 0
    xp = _backend.xp_of(c._data)
    d = (c - lo).abs()
    flips = xp.floor(d._data / span)
    extra = d - Tensor._make((flips * span).astype(c._data.dtype))
    even = Tensor._make((flips % 2 == 0).astype(c._data.dtype))
    return even * (extra + lo) + (1 - even) * (hi - extra)


class _ZeroGradTo(Function):
    """``out`` unchanged, and a zero gradient to ``other``: the link of an output that is piecewise constant
    in ``other`` (grid_sample's nearest mode in its grid), so ``other.grad`` is zeros as in PyTorch."""

    _raw = True
    op_name = "grid_sample_nearest"

    @staticmethod
    def forward(ctx, out, other):
        ctx.other = (other.shape, other.dtype)
        return out.copy()

    @staticmethod
    def backward(ctx, g):
        shape, dtype = ctx.other
        return g, Tensor._make(ctx.xp.zeros(shape, dtype=dtype))


@composite("grid_sample")
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample (N, C, H, W) input at grid (N, Ho, Wo, 2) locations in [-1, 1] (x, y): bilinear, nearest, bicubic.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.grid_sample(wb.ones(1, 1, 2, 2), wb.zeros(1, 1, 1, 2), align_corners=False)
    tensor([[[[1.]]]])
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    nd = input.ndim - 2
    if nd not in (2, 3) or grid.ndim != nd + 2 or grid.shape[-1] != nd or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sample: expected input (N, C, H, W) with grid (N, Ho, Wo, 2), or input "
                           f"(N, C, D, H, W) with grid (N, Do, Ho, Wo, 3), with the same N; got input "
                           f"{list(input.shape)} and grid {list(grid.shape)}")
    if mode == "bicubic" and nd != 2:
        raise RuntimeError("grid_sample: bicubic interpolation only supports 4D input")
    align_corners = _warn_align(align_corners, "grid_sample")
    n, c = input.shape[:2]
    spatial = tuple(input.shape[2:])
    xp = _backend.xp_of(input._data)
    # grid's last dim lists x (width) first: spatial dim i reads component nd - 1 - i
    coords = [_unnormalize(grid[..., nd - 1 - i], spatial[i], align_corners) for i in range(nd)]
    if mode == "bicubic":
        return _grid_sample_bicubic(input, coords[1], coords[0], padding_mode, align_corners)
    for i, size in enumerate(spatial):
        if padding_mode == "border":
            coords[i] = coords[i].clamp(0, size - 1)
        elif padding_mode == "reflection":
            lo, hi = (0, size - 1) if align_corners else (-0.5, size - 0.5)
            coords[i] = _reflect(coords[i], lo, hi).clamp(0, size - 1)
    flat = input.permute(0, *range(2, nd + 2), 1).reshape(-1, c)
    base = xp.arange(n).reshape((n,) + (1,) * nd) * math.prod(spatial)
    steps = [math.prod(spatial[i + 1:]) for i in range(nd)]
    dt = input._data.dtype

    def corner(idx):
        ok = True
        rows = base
        for i, (ci, size) in enumerate(zip(idx, spatial)):
            ok = ok & (ci >= 0) & (ci < size)
            rows = rows + xp.clip(ci, 0, size - 1) * steps[i]
        return TakeRows.apply(flat, rows) * Tensor._make(xp.asarray(ok).astype(dt)[..., None])

    if mode == "nearest":  # piecewise constant in the grid: its gradient there is zeros (PyTorch's), not None
        out = _ZeroGradTo.apply(corner([xp.rint(ci._data).astype("int64") for ci in coords]), grid)
    else:
        lows = [xp.floor(ci._data).astype("int64") for ci in coords]
        w1 = [(ci - Tensor._make(lo.astype(dt))).unsqueeze(-1) for ci, lo in zip(coords, lows)]
        out = None
        for bits in itertools.product((0, 1), repeat=nd):
            wgt = None
            for b, w in zip(bits, w1):
                f = w if b else 1 - w
                wgt = f if wgt is None else wgt * f
            term = corner([lo + b for lo, b in zip(lows, bits)]) * wgt
            out = term if out is None else out + term
    return out.permute(0, nd + 1, *range(1, nd + 1))


def _cubic_weights(t):
    """PyTorch's cubic convolution weights (A = -0.75) for taps at -1, 0, 1, 2 from fractional offset t."""
    a = -0.75
    u, v = t + 1, 2 - t
    return [((a * u - 5 * a) * u + 8 * a) * u - 4 * a, ((a + 2) * t - (a + 3)) * t * t + 1,
            ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1, ((a * v - 5 * a) * v + 8 * a) * v - 4 * a]


def _tap_coord(xp, c, size, padding_mode, align_corners):
    """Integer tap coordinates mapped by the padding mode (out-of-range ones read zeros later)."""
    if padding_mode == "border":
        return xp.clip(c, 0, size - 1)
    if padding_mode == "reflection":
        lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
        span = hi - lo
        if span <= 0:
            return xp.zeros_like(c)
        d = xp.abs(c - lo)
        flips = xp.floor(d / span)
        extra = d - flips * span
        r = xp.where(flips % 2 == 0, extra + lo, hi - extra)
        return xp.clip(r, 0, size - 1).astype("int64")
    return c


def _grid_sample_bicubic(input, ix, iy, padding_mode, align_corners):
    n, c, h, w = input.shape
    xp = _backend.xp_of(input._data)
    dt = input._data.dtype
    flat = input.permute(0, 2, 3, 1).reshape(n * h * w, c)
    base = xp.arange(n).reshape(n, 1, 1) * (h * w)
    x0 = xp.floor(ix._data)
    y0 = xp.floor(iy._data)
    wx = _cubic_weights((ix - Tensor._make(x0.astype(dt))).unsqueeze(-1))
    wy = _cubic_weights((iy - Tensor._make(y0.astype(dt))).unsqueeze(-1))
    out = None
    for j in range(4):
        yj = _tap_coord(xp, y0 + (j - 1), h, padding_mode, align_corners).astype("int64")
        row = None
        for i in range(4):
            xi = _tap_coord(xp, x0 + (i - 1), w, padding_mode, align_corners).astype("int64")
            ok = (xi >= 0) & (xi < w) & (yj >= 0) & (yj < h)
            rows = base + xp.clip(yj, 0, h - 1) * w + xp.clip(xi, 0, w - 1)
            term = TakeRows.apply(flat, rows) * Tensor._make(ok.astype(dt)[..., None]) * wx[i]
            row = term if row is None else row + term
        out = row * wy[j] if out is None else out + row * wy[j]
    return out.permute(0, 3, 1, 2)


native_channel_shuffle = channel_shuffle


__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"]
