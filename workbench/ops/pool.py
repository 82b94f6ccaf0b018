"""Pooling: max (and its unpool), average, power-average, adaptive and fractional max pooling.

Average pooling along separable axes is a matmul with small constant matrices (exact, and
differentiable to any order for free); max pooling gathers at argmax positions (``TakeRows``).
"""
import itertools
import math

from .. import _backend
from .._core import Tensor
from ..autograd.function import Function
from ..autograd.graph import composite
from ._util import _uniform, array_step, ntuple
from ._windows import _pad, _sep_apply, _windows
from .elementwise import relu
from .index import PutRows, TakeRows


# --- pooling -------------------------------------------------------------------------------------
def _pool_args(op, input, nd, kernel_size, stride, padding, dilation=1):
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: Expected {nd + 1}D or {nd + 2}D input (unbatched or batched), got input of "
                           f"size {list(input.shape)}")
    k = ntuple(kernel_size, nd, "kernel_size", op)
    s = ntuple(stride if stride is not None and stride != [] and stride != () else k, nd, "stride", op)
    p = ntuple(padding, nd, "padding", op)
    d = ntuple(dilation, nd, "dilation", op)
    if any(v <= 0 for v in k + s + d):
        raise RuntimeError(f"{op}: kernel_size, stride and dilation must be greater than zero, got "
                           f"kernel_size={list(k)}, stride={list(s)}, dilation={list(d)}")
    if any(pp > (dd * (kk - 1) + 1) // 2 for pp, kk, dd in zip(p, k, d)):
        raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, but got pad={list(p)}, "
                           f"kernel_size={list(k)} and dilation={list(d)}")
    return k, s, p, d


def _pool_out(n, k, s, p, d, ceil_mode):
    eff = d * (k - 1) + 1
    num = n + 2 * p - eff
    o = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (o - 1) * s >= n + p:  # the last window must start inside the input or left padding
        o -= 1
    return o


def _max_pool(op, nd, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    k, s, p, d = _pool_args(op, input, nd, kernel_size, stride, padding, dilation)
    batched = input.ndim == nd + 2
    x = input if batched else input.unsqueeze(0)
    spatial = tuple(x.shape[2:])
    osize = tuple(_pool_out(n, kk, ss, pp, dd, ceil_mode) for n, kk, ss, pp, dd in zip(spatial, k, s, p, d))
    if any(o <= 0 for o in osize):
        raise RuntimeError(f"{op}: Given input size: {list(x.shape[1:])}. Calculated output size: "
                           f"{[x.shape[1]] + list(osize)}. Output size is too small")
    # right padding so that ceil_mode's last window fits
    hi = tuple(max(pp, (o - 1) * ss + dd * (kk - 1) + 1 - n - pp)
               for n, o, kk, ss, pp, dd in zip(spatial, osize, k, s, p, d))
    if not return_indices:
        y = MaxPool.apply(x, k, s, p, hi, d, osize, False)
        return y if batched else y.squeeze(0)
    y, flat = MaxPool.apply(x, k, s, p, hi, d, osize, True)
    return (y, flat) if batched else (y.squeeze(0), flat.squeeze(0))


class MaxPool(Function):
    """Max over windows and its argmax, PyTorch's rule: the first maximum in window order wins, a NaN
    propagates (the last NaN wins), and a window whose valid taps are all -inf picks its first valid tap.

    The taps are strided views of the (padded) input. Over short output rows NumPy's per-row overhead
    dominates strided passes, so the taps are first copied into one contiguous (K, N, C, *O) block. The
    max is a chain of ``maximum``s and the winning tap the count of leading taps that differ from it:
    whole-array passes, no masked writes.

    Backward needs only which tap of its window won, so that is what is saved: one byte per output for up
    to 255 taps (a 2x2 pool of 64x32x8x8 keeps 32 KiB, not the 256 KiB of int64 input positions), and the
    positions are rebuilt from it when backward runs. The int64 flat indices PyTorch returns are made only
    when ``return_indices`` asks for them (``indices``).
    """

    _raw = True
    op_name = "max_pool"

    @staticmethod
    def forward(ctx, x, k, s, p, hi, d, osize, indices):
        xp = ctx.xp
        nd = len(k)
        isfloat = x.dtype.kind == "f"
        fill = -math.inf if isfloat else xp.iinfo(x.dtype).min
        padded = any(p) or any(hi)
        v = _windows(xp, _pad(xp, x, p, hi, fill), k, s, d, osize)  # (N, C, *O, *K) view
        kposs = list(itertools.product(*[range(kk) for kk in k]))
        blk = None
        if osize[-1] < 32:
            blk = xp.empty(tuple(k) + v.shape[:2 + nd], dtype=x.dtype)
            xp.copyto(blk, v.transpose(tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(2 + nd))))
            blk = blk.reshape((len(kposs),) + blk.shape[nd:])
            taps = list(blk)
        else:
            taps = [v[(Ellipsis,) + kp] for kp in kposs]
        if len(taps) == 1:
            best = taps[0].copy()
        else:
            best = xp.maximum(taps[0], taps[1])
            for t in taps[2:]:
                xp.maximum(best, t, out=best)
        # the winning tap: how many leading taps differ from the max
        tid = xp.zeros(best.shape, dtype="uint8" if len(taps) < 256 else "int32")
        if len(taps) > 1:
            ne = taps[0] != best
            tid += ne
            for t in taps[1:-1]:
                ne &= t != best
                tid += ne
        # the fix-ups below are whole-array selects, not data-dependent branches (no device sync)
        if isfloat and len(taps) > 1:  # a window holding NaN: its last NaN tap
            if blk is not None:
                j = xp.arange(len(taps), dtype=tid.dtype).reshape((len(taps),) + (1,) * best.ndim)
                last = (xp.isnan(blk) * j).max(0)
            else:
                last = xp.zeros_like(tid)
                for j, t in enumerate(taps[1:], 1):
                    xp.maximum(last, xp.isnan(t) * tid.dtype.type(j), out=last)
            last -= tid  # tid += isnan(best) * (last - tid), in the unsigned type's wrap-around arithmetic
            last *= xp.isnan(best)
            tid += last
        spatial = x.shape[2:]
        steps = [math.prod(spatial[i + 1:]) for i in range(nd)]
        if padded:  # a window whose valid taps are all -inf: its first valid tap, not padding
            first = 0
            for i in range(nd):
                o_i = xp.arange(osize[i]).reshape((osize[i],) + (1,) * (nd - 1 - i))
                first = first + xp.maximum(0, -((o_i * s[i] - p[i]) // d[i])) * math.prod(k[i + 1:])
            tid = xp.where(best == fill, first, tid).astype(tid.dtype, copy=False)
        # flat input index: the tap's offset from its window's origin, + the origin
        ctx.table = xp.asarray([sum(kp * dd * st for kp, dd, st in zip(kpos, d, steps)) for kpos in kposs],
                               dtype="int64")
        origin = 0
        for i in range(nd):
            o_i = xp.arange(osize[i]).reshape((osize[i],) + (1,) * (nd - 1 - i))
            origin = origin + (o_i * s[i] - p[i]) * steps[i]
        ctx.origin = origin
        ctx.save_for_backward(tid)
        ctx.x_shape = x.shape
        # windows that do not overlap write each input element at most once
        ctx.unique = all(ss >= dd * (kk - 1) + 1 for kk, ss, dd in zip(k, s, d))
        if not indices:
            return best
        flat = ctx.table.take(tid)
        flat += origin
        ctx.mark_non_differentiable(flat)
        return best, flat

    @staticmethod
    def backward(ctx, g, _gi=None):
        (tid,) = ctx.saved_tensors
        n, c = ctx.x_shape[:2]
        area = math.prod(ctx.x_shape[2:])
        xp = ctx.xp
        rows = ctx.table.take(tid._data)  # the input position of each window's winner, across the batch
        rows += ctx.origin
        rows += xp.arange(0, n * c * area, area).reshape((n, c) + (1,) * (rows.ndim - 2))
        dx = PutRows.apply(g, Tensor._make(rows), n * c * area, ctx.unique).reshape(ctx.x_shape)
        return dx, *(None,) * 7


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over sliding windows of (N, C, L); return_indices gives flat positions for max_unpool1d.

    >>> import workbench as wb
    >>> wb.max_pool1d(wb.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
    tensor([[[3., 2.]]])
    """
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over sliding windows of (N, C, H, W).

    >>> import workbench as wb
    >>> wb.max_pool2d(wb.arange(16.0).reshape(1, 1, 4, 4), 2)
    tensor([[[[ 5.,  7.],
              [13., 15.]]]])
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over sliding windows of (N, C, D, H, W).

    >>> import workbench as wb
    >>> wb.max_pool3d(wb.ones(1, 1, 2, 2, 2), 2).shape
    workbench.Size([1, 1, 1, 1, 1])
    """
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """max_pool1d returning (values, indices).  >>> wb.max_pool1d_with_indices(wb.ones(1, 1, 4), 2)[1]  ->  tensor([[[0, 2]]])"""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """max_pool2d returning (values, indices).  >>> F.max_pool2d_with_indices(wb.ones(1, 1, 2, 2), 2)[1]  ->  tensor([[[[0]]]])"""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _max_unpool(op, nd, input, indices, kernel_size, stride, padding, output_size):
    k, s, p, _ = _pool_args(op, input, nd, kernel_size, stride, 0)
    p = ntuple(padding, nd, "padding", op)
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    batched = input.ndim == nd + 2
    x = input if batched else input.unsqueeze(0)
    idx = indices._data if batched else indices._data[None]
    if output_size is None:
        out = tuple((i - 1) * ss - 2 * pp + kk for i, ss, pp, kk in zip(x.shape[2:], s, p, k))
    else:
        out = tuple(output_size)[-nd:]
    n, c = x.shape[:2]
    area = math.prod(out)
    xp = _backend.xp_of(idx)
    if idx.size and (bool((idx < 0).any()) or bool((idx >= area).any())):
        raise RuntimeError(f"{op}: Found an invalid max index (the output has {area} elements per channel)")
    rows = array_step(lambda i: xp.arange(n * c).reshape((n, c) + (1,) * nd) * area + (i if batched else i[None]),
                      indices)  # one array step: workbench.compile replays it
    y = Unpool.apply(x.reshape(-1), rows, n * c * area).reshape((n, c) + out)
    return y if batched else y.squeeze(0)


class Unpool(Function):
    """zeros(total) with x written at rows (a repeated row keeps one value, as PyTorch's max_unpool)."""

    _raw = True
    op_name = "max_unpool"

    @staticmethod
    def forward(ctx, x, rows, total):
        out = ctx.xp.zeros(total, dtype=x.dtype)
        rows = rows.reshape(-1)
        out[rows] = x.reshape(-1)
        ctx.save_for_backward(rows)  # flat, as x: the gradient has x's shape
        return out

    @staticmethod
    def backward(ctx, g):
        (rows,) = ctx.saved_tensors
        return TakeRows.apply(g, rows), None, None


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Place values back at the positions max_pool1d(return_indices=True) took them from, zeros elsewhere.

    >>> import workbench as wb
    >>> y, i = wb.nn.functional.max_pool1d(wb.tensor([[[1.0, 3.0]]]), 2, return_indices=True)
    >>> wb.nn.functional.max_unpool1d(y, i, 2)
    tensor([[[0., 3.]]])
    """
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Inverse of max_pool2d(return_indices=True): values at their indices, zeros elsewhere.

    >>> import workbench as wb
    >>> y, i = wb.nn.functional.max_pool2d(wb.ones(1, 1, 2, 2), 2, return_indices=True)
    >>> wb.nn.functional.max_unpool2d(y, i, 2).shape
    workbench.Size([1, 1, 2, 2])
    """
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def _avg_matrix(xp, n, k, s, p, ceil_mode, count_include_pad, first, divisor_override):
    o = _pool_out(n, k, s, p, 1, ceil_mode)
    m = xp.zeros((o, n))
    for i in range(o):
        start = i * s - p
        end = min(start + k, n + p)
        lo, hi = max(start, 0), min(end, n)
        if divisor_override:
            div = divisor_override if first else 1
        else:
            div = (end - start) if count_include_pad else (hi - lo)
        m[i, lo:hi] = 1.0 / div
    return m


def _avg_pool(op, nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    k, s, p, _ = _pool_args(op, input, nd, kernel_size, stride, padding)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError(f"{op}: divisor must be not zero")
    spatial = tuple(input.shape[input.ndim - nd:])
    if nd == 3 and any(n < kk for n, kk in zip(spatial, k)):  # PyTorch's 3-D average pool checks the unpadded size
        raise RuntimeError(f"{op}: input image (T: {spatial[0]} H: {spatial[1]} W: {spatial[2]}) smaller than "
                           f"kernel size (kT: {k[0]} kH: {k[1]} kW: {k[2]})")
    if any(_pool_out(n, kk, ss, pp, 1, ceil_mode) <= 0 for n, kk, ss, pp in zip(spatial, k, s, p)):
        raise RuntimeError(f"{op}: Given input size {list(input.shape)}, the output size is too small")
    xp = _backend.xp_of(input._data)
    mats = [_avg_matrix(xp, n, kk, ss, pp, ceil_mode, count_include_pad, i == 0, divisor_override)
            for i, (n, kk, ss, pp) in enumerate(zip(spatial, k, s, p))]
    return _sep_apply(input, mats)


@composite("avg_pool1d")
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over sliding windows of (N, C, L).

    >>> import workbench as wb
    >>> wb.avg_pool1d(wb.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
    tensor([[[2., 1.]]])
    """
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


@composite("avg_pool2d")
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over sliding windows of (N, C, H, W).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.avg_pool2d(wb.ones(1, 1, 4, 4), 2).shape
    workbench.Size([1, 1, 2, 2])
    """
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


@composite("avg_pool3d")
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over sliding windows of (N, C, D, H, W).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.avg_pool3d(wb.ones(1, 1, 2, 2, 2), 2).shape
    workbench.Size([1, 1, 1, 1, 1])
    """
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


@composite("lp_pool")
def _lp_pool(nd, input, norm_type, kernel_size, stride, ceil_mode):
    k = ntuple(kernel_size, nd, "kernel_size", f"lp_pool{nd}d")
    op = avg_pool1d if nd == 1 else avg_pool2d
    out = op(input ** norm_type, k, stride, 0, ceil_mode)
    return ((out.sign() * relu(out.abs())) * math.prod(k)) ** (1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum of x**p over each window) ** (1/p).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.lp_pool1d(wb.tensor([[[3.0, 4.0]]]), 2, 2)
    tensor([[[5.]]])
    """
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum of x**p over each 2-D window) ** (1/p).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.lp_pool2d(wb.ones(1, 1, 2, 2), 1, 2)
    tensor([[[[4.]]]])
    """
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def _adaptive_sizes(op, input, output_size, nd):
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: Expected {nd + 1}D or {nd + 2}D tensor, got input of size {list(input.shape)}")
    spatial = tuple(input.shape[input.ndim - nd:])
    out = output_size if isinstance(output_size, (list, tuple)) else (output_size,) * nd
    if len(out) != nd:
        raise ValueError(f"{op}: output_size must have {nd} elements, got {output_size}")
    out = tuple(n if o is None else int(o) for n, o in zip(spatial, out))
    if any(o < 0 for o in out):
        raise RuntimeError(f"{op}: output_size must be positive, got {list(out)}")
    return spatial, out


def _adaptive_bounds(n, o, i):
    return (i * n) // o, -(-((i + 1) * n) // o)


@composite("adaptive_avg_pool")
def _adaptive_avg(op, nd, input, output_size):
    spatial, out = _adaptive_sizes(op, input, output_size, nd)
    xp = _backend.xp_of(input._data)
    mats = []
    for n, o in zip(spatial, out):
        m = xp.zeros((o, n))
        for i in range(o):
            a, b = _adaptive_bounds(n, o, i)
            m[i, a:b] = 1.0 / (b - a)
        mats.append(m)
    return _sep_apply(input, mats)


def adaptive_avg_pool1d(input, output_size):
    """Average pooling to a fixed output length.

    >>> import workbench as wb
    >>> wb.adaptive_avg_pool1d(wb.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 1)
    tensor([[[1.5000]]])
    """
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed output size (None keeps that dim).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.adaptive_avg_pool2d(wb.ones(1, 1, 5, 7), (2, 3)).shape
    workbench.Size([1, 1, 2, 3])
    """
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input, output_size):
    """Average pooling of (N, C, D, H, W) to a fixed output size.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.adaptive_avg_pool3d(wb.ones(1, 1, 2, 3, 4), 1).shape
    workbench.Size([1, 1, 1, 1, 1])
    """
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def _adaptive_max(op, nd, input, output_size, return_indices):
    spatial, out = _adaptive_sizes(op, input, output_size, nd)
    batched = input.ndim == nd + 2
    x = input if batched else input.unsqueeze(0)
    xd = x._data
    xp = _backend.xp_of(xd)
    n, c = xd.shape[:2]
    flat = xp.zeros((n, c) + out, dtype="int64")
    # one reduction per output cell: windows differ in size, and output grids are small
    for cell in itertools.product(*[range(o) for o in out]):
        bounds = [_adaptive_bounds(s_, o, i) for s_, o, i in zip(spatial, out, cell)]
        reg = xd[(slice(None), slice(None)) + tuple(slice(a, b) for a, b in bounds)]
        arg = reg.reshape(n, c, -1).argmax(-1)
        local = xp.unravel_index(arg, tuple(b - a for a, b in bounds))
        f = 0
        for i, (a, _) in enumerate(bounds):
            f = f * spatial[i] + (local[i] + a)
        flat[(slice(None), slice(None)) + cell] = f
    area = math.prod(spatial)
    rows = xp.arange(n * c).reshape((n, c) + (1,) * nd) * area + flat
    y = TakeRows.apply(x.reshape(-1), rows)
    if not batched:
        y, flat = y.squeeze(0), flat[0]
    return (y, Tensor._make(flat)) if return_indices else y


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max pooling to a fixed output length.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.adaptive_max_pool1d(wb.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
    tensor([[[3., 2.]]])
    """
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling to a fixed output size (None keeps that dim).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.adaptive_max_pool2d(wb.ones(1, 1, 5, 7), (2, 3)).shape
    workbench.Size([1, 1, 2, 3])
    """
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max pooling of (N, C, D, H, W) to a fixed output size.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.adaptive_max_pool3d(wb.ones(1, 1, 2, 3, 4), 1).shape
    workbench.Size([1, 1, 1, 1, 1])
    """
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """max_pool3d returning (values, indices).  >>> F.max_pool3d_with_indices(wb.ones(1, 1, 2, 2, 2), 2)[1].shape  ->  workbench.Size([1, 1, 1, 1, 1])"""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    """adaptive_max_pool1d returning (values, indices).  >>> F.adaptive_max_pool1d_with_indices(wb.ones(1, 1, 4), 2)  ->  (tensor([[[1., 1.]]]), tensor([[[0, 2]]]))"""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    """adaptive_max_pool2d returning (values, indices).  >>> F.adaptive_max_pool2d_with_indices(wb.ones(1, 1, 4, 4), 2)  ->  (tensor([[[[1., 1.], [1., 1.]]]]), tensor([[[[ 0, 2], [ 8, 10]]]]))"""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    """adaptive_max_pool3d returning (values, indices).  >>> F.adaptive_max_pool3d_with_indices(wb.ones(1, 1, 2, 2, 2), 1)  ->  (tensor([[[[[1.]]]]]), tensor([[[[[0]]]]]))"""
    return adaptive_max_pool3d(input, output_size, True)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Inverse of max_pool3d(return_indices=True): values at their indices, zeros elsewhere.

    >>> import workbench as wb
    >>> y, i = wb.nn.functional.max_pool3d(wb.ones(1, 1, 2, 2, 2), 2, return_indices=True)
    >>> wb.nn.functional.max_unpool3d(y, i, 2).shape
    workbench.Size([1, 1, 2, 2, 2])
    """
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum of x**p over each 3-D window) ** (1/p).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.lp_pool3d(wb.ones(1, 1, 2, 2, 2), 1, 2).flatten().tolist()
    [8.0]
    """
    k = ntuple(kernel_size, 3, "kernel_size", "lp_pool3d")
    out = avg_pool3d(input ** norm_type, k, stride, 0, ceil_mode)
    return ((out.sign() * relu(out.abs())) * math.prod(k)) ** (1.0 / norm_type)


def _fractional_starts(xp, u, n_in, n_out, k, dtype):
    """PyTorch's pseudo-random window starts for one dim: u (planes,) in [0, 1) -> (planes, n_out)."""
    u = u.astype(dtype)
    if n_out > 1:
        alpha = dtype.type(n_in - k) / dtype.type(n_out - 1)
        i = xp.arange(n_out - 1, dtype=dtype)
        seq = ((i[None, :] + u[:, None]) * alpha).astype("int64") - (u[:, None] * alpha).astype("int64")[:, :1]
        last = xp.full((u.shape[0], 1), n_in - k, dtype="int64")
        return xp.concatenate([seq, last], axis=1)
    return xp.full((u.shape[0], max(n_out, 0)), n_in - k, dtype="int64")


def _fractional_max_pool(op, nd, input, kernel_size, output_size, output_ratio, return_indices, samples):
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: Expected {nd + 1}D or {nd + 2}D input, got input of size {list(input.shape)}")
    batched = input.ndim == nd + 2
    x = input if batched else input.unsqueeze(0)
    k = ntuple(kernel_size, nd, "kernel_size", op)
    spatial = tuple(x.shape[2:])
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
        ratio = ntuple_f(output_ratio, nd)
        output_size = tuple(int(n * r_) for n, r_ in zip(spatial, ratio))
    out = ntuple(output_size, nd, "output_size", op)
    if any(o + kk - 1 > n for o, kk, n in zip(out, k, spatial)):
        raise RuntimeError(f"{op}: output_size {list(out)} + kernel_size {list(k)} - 1 is too large for the input "
                           f"size {list(spatial)}")
    n, c = x.shape[:2]
    xd = x._data
    xp = _backend.xp_of(xd)
    if samples is None:

        u = _uniform(x, (n, c, nd)).astype(xd.dtype)
    else:
        u = samples._data.astype(xd.dtype)
    u = u.reshape(n * c, nd)
    # PyTorch reads a plane's samples as (width, height) in 2-D but as (time, height, width) in 3-D
    order = [1, 0] if nd == 2 else list(range(nd))
    starts = [_fractional_starts(xp, u[:, order[i]], spatial[i], out[i], k[i], xd.dtype) for i in range(nd)]
    planes = xd.reshape(n * c, -1)
    steps = [math.prod(spatial[i + 1:]) for i in range(nd)]
    best = arg = None
    for kpos in itertools.product(*[range(kk) for kk in k]):
        flat = 0
        for i in range(nd):
            shape = (n * c,) + tuple(out[i] if j == i else 1 for j in range(nd))
            flat = flat + (starts[i] + kpos[i]).reshape(shape) * steps[i]
        flat = xp.broadcast_to(flat, (n * c,) + out).reshape(n * c, -1)
        val = xp.take_along_axis(planes, flat, axis=1)
        if best is None:
            best, arg = val, flat
            continue
        m = (val > best) | xp.isnan(val) if xd.dtype.kind == "f" else val > best
        best = xp.where(m, val, best)
        arg = xp.where(m, flat, arg)
    rows = (xp.arange(n * c)[:, None] * math.prod(spatial) + arg).reshape((n, c) + out)
    y = TakeRows.apply(x.reshape(-1), rows)
    idx = Tensor._make(arg.reshape((n, c) + out))
    if not batched:
        y, idx = y.squeeze(0), idx.squeeze(0)
    return (y, idx) if return_indices else y


def ntuple_f(v, n):
    return tuple(float(a) for a in v) if isinstance(v, (list, tuple)) else (float(v),) * n


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Max pooling over pseudo-randomly placed windows that shrink (N, C, H, W) to output_size.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.fractional_max_pool2d(wb.ones(1, 1, 5, 5), 2, output_size=3).shape
    workbench.Size([1, 1, 3, 3])
    """
    return _fractional_max_pool("fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Max pooling over pseudo-randomly placed windows that shrink (N, C, D, H, W) to output_size.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.fractional_max_pool3d(wb.ones(1, 1, 5, 5, 5), 2, output_ratio=0.5).shape
    workbench.Size([1, 1, 2, 2, 2])
    """
    return _fractional_max_pool("fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """fractional_max_pool2d returning (values, indices).  >>> F.fractional_max_pool2d_with_indices(wb.ones(1, 1, 5, 5), 2, 3)[1].shape  ->  workbench.Size([1, 1, 3, 3])"""
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """fractional_max_pool3d returning (values, indices).  >>> F.fractional_max_pool3d_with_indices(wb.ones(1, 1, 5, 5, 5), 2, 3)[1].shape  ->  workbench.Size([1, 1, 3, 3, 3])"""
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True, _random_samples)


__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "avg_pool1d", "adaptive_avg_pool1d"]
