"""Linear maps over space: linear, bilinear, convolution (im2col), fold/unfold, pooling, resampling.

Convolution is three primitives that are each other's derivatives, so gradients of any order come
from the same fast code:

* ``Conv``            x, w -> y          (im2col through a strided window view, then one matmul)
* ``ConvGradInput``   g, w -> dx         (a matmul, then col2im: one strided add per kernel position);
                                         this is also conv_transpose
* ``ConvGradWeight``  x, g -> dw         (im2col, then one matmul)

d(Conv)/dx is ConvGradInput, d(Conv)/dw is ConvGradWeight; d(ConvGradInput)/dg is Conv and
d(ConvGradInput)/dw is ConvGradWeight; d(ConvGradWeight)/dx is ConvGradInput and d/dg is Conv.

Pooling and resampling along separable axes are matmuls with small constant matrices (exact, and
differentiable to any order for free); max pooling gathers at argmax positions (``TakeRows``).
"""
import functools
import itertools
import math

from ..autograd.function import Function
from ..autograd import graph
from ..autograd.graph import GROUP
from ..tensor import Tensor

_group_ids = itertools.count()


def composite(name):
    """Decorator: the nodes a composite op records form one group, ``name#k``, that the visualizer
    collapses into a box (only the outermost composite names the group)."""

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if GROUP.get() is not None:
                return fn(*args, **kwargs)
            with graph.group(f"{name}#{next(_group_ids)}"):
                return fn(*args, **kwargs)

        return wrapper

    return deco


def ntuple(v, n, what, op):
    """An int or a sequence of n ints as a tuple of n ints."""
    if isinstance(v, Tensor):
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            v = tuple(v) * n
        if len(v) != n:
            raise RuntimeError(f"{op}: expected {what} to be a single integer value or a list of {n} values to "
                               f"match the convolution dimensions, but got {what}={list(v)}")
        return tuple(int(a) for a in v)
    return (int(v),) * n


def _check_float(op, *ts):
    for t in ts:
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected a Tensor, got {type(t).__name__}")
    ds = {t.dtype for t in ts if t is not None}
    if len(ds) > 1:
        names = " and ".join(str(d).replace("workbench.", "") for d in ds)
        raise RuntimeError(f"{op}: expected all tensors to have the same dtype, but got {names}. "
                           "Cast them with .to(dtype) first.")


# --- gather / scatter of rows (max pooling, embedding, nll) --------------------------------------
def _put_rows(xp, g, idx, nrows):
    """zeros(nrows, D) with g's rows added at idx (repeats accumulate); g: idx.shape + (D,)."""
    d = g.shape[-1] if g.ndim > idx.ndim else 1
    flat = idx.reshape(-1)
    if d == 1:
        out = xp.bincount(flat, weights=g.reshape(-1), minlength=nrows)
        return out.astype(g.dtype, copy=False).reshape((nrows,) + g.shape[idx.ndim:])
    pos = (flat[:, None] * d + xp.arange(d)).reshape(-1)
    out = xp.bincount(pos, weights=g.reshape(-1), minlength=nrows * d)
    return out.astype(g.dtype, copy=False).reshape(nrows, d)


class TakeRows(Function):
    """x.reshape(R, D)[idx]: rows of a 2-D view at integer positions (gradient: PutRows)."""

    _raw = True
    op_name = "take_rows"

    @staticmethod
    def forward(ctx, x, idx):
        ctx.nrows = x.shape[0]
        ctx.save_for_backward(idx)
        return x[idx]

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        return PutRows.apply(g, idx, ctx.nrows), None


class PutRows(Function):
    """zeros(R, D) with g's rows summed into positions idx (gradient: TakeRows)."""

    _raw = True
    op_name = "put_rows"

    @staticmethod
    def forward(ctx, g, idx, nrows):
        ctx.save_for_backward(idx)
        return _put_rows(ctx.xp, g, idx, nrows)

    @staticmethod
    def backward(ctx, gg):
        (idx,) = ctx.saved_tensors
        return TakeRows.apply(gg, idx), None, None


# --- linear ------------------------------------------------------------------------------------
class Linear(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, w, b):
        if x.shape[-1] != w.shape[-1]:
            sa = "x".join(map(str, (x.reshape(-1, x.shape[-1]).shape if x.ndim else ())))
            raise RuntimeError(f"linear: mat1 and mat2 shapes cannot be multiplied ({sa} and "
                               f"{w.shape[1]}x{w.shape[0]}); the input's last dim must equal weight.shape[1]")
        if x.dtype != w.dtype or (b is not None and b.dtype != x.dtype):
            raise RuntimeError(f"linear: expected input, weight and bias to have the same dtype, but got "
                               f"{x.dtype}, {w.dtype}" + (f" and {b.dtype}" if b is not None else "")
                               + ". Cast them with .to(dtype) first.")
        nig = ctx.needs_input_grad
        ctx.save_for_backward(x if nig[1] else None, w if nig[0] else None)
        y = x @ w.T
        if b is not None:
            y += b
        return y

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        nig = ctx.needs_input_grad
        gx = g @ w if nig[0] else None
        gw = gb = None
        if nig[1]:
            gw = g.T @ x if g.ndim == 2 else g.reshape(-1, g.shape[-1]).T @ x.reshape(-1, x.shape[-1])
        if nig[2]:
            gb = g.sum(tuple(range(g.ndim - 1))) if g.ndim > 1 else g
        return gx, gw, gb


def linear(input, weight, bias=None):
    """y = input @ weight.T + bias.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.linear(wb.ones(2, 3), wb.ones(4, 3)).shape
    workbench.Size([2, 4])
    """
    if weight.ndim == 1:
        y = input @ weight
        return y + bias if bias is not None else y
    if input.ndim == 0:
        raise RuntimeError("linear: input must have at least 1 dimension, got a 0-d tensor")
    return Linear.apply(input, weight, bias)


@composite("bilinear")
def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = input1 @ weight[o] @ input2 + bias[o].

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.bilinear(wb.ones(2, 3), wb.ones(2, 4), wb.ones(5, 3, 4)).shape
    workbench.Size([2, 5])
    """
    if weight.ndim != 3 or input1.shape[-1] != weight.shape[1] or input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear: expected weight of shape (out, {input1.shape[-1]}, {input2.shape[-1]}), "
                           f"got {list(weight.shape)}")
    o, i, j = weight.shape
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, i)
    x2 = input2.reshape(-1, j)
    t = (x1 @ weight.permute(1, 0, 2).reshape(i, o * j)).reshape(-1, o, j)
    y = (t * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(tuple(lead) + (o,))


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
    for kpos in itertools.product(*[range(k) for k in ksize]):
        sl = tuple(slice(k * d, k * d + s * (o - 1) + 1, s) for k, d, s, o in zip(kpos, dil, stride, osize))
        out[(slice(None), slice(None)) + sl] += cols[(slice(None),) + kpos]
    if any(lo) or any(hi):
        out = out[(slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(lo, spatial))]
    return out


def _im2col(xp, x, ksize, geom, osize):
    """x (N, C, *S) -> contiguous cols (G, Cg*prod(K), N*L), rows in (c, k...) and columns in (n, o...) order.

    This layout makes the forward and both backward products single (per-group) matmuls whose copies
    run along contiguous output rows.
    """
    stride, lo, hi, dil, groups = geom
    nd = len(ksize)
    v = _windows(xp, _pad(xp, x, lo, hi), ksize, stride, dil, osize)  # (N, C, *O, *K)
    v = v.transpose((1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,) + tuple(range(2, 2 + nd)))
    return xp.ascontiguousarray(v).reshape(groups, -1, x.shape[0] * math.prod(osize))


def _onl(xp, g, groups):
    """g (N, O, *L) -> contiguous (G, O/G, N*L)."""
    n, o = g.shape[:2]
    g3 = g.reshape(n, o, -1).transpose(1, 0, 2)
    return xp.ascontiguousarray(g3).reshape(groups, o // groups, -1)


def _from_onl(xp, y, n, osize):
    """(O, N*L) -> contiguous (N, O, *L)."""
    o = y.shape[0]
    return xp.ascontiguousarray(y.reshape(o, n, -1).transpose(1, 0, 2)).reshape((n, o) + tuple(osize))


class Conv(Function):
    _raw = True
    op_name = "convolution"

    @staticmethod
    def forward(ctx, x, w, b, geom, osize):
        xp = ctx.xp
        groups = geom[4]
        o = w.shape[0]
        cols = _im2col(xp, x, w.shape[2:], geom, osize)
        y = (w.reshape(groups, o // groups, -1) @ cols).reshape(o, -1)
        if b is not None:
            y += b[:, None]
        nig = ctx.needs_input_grad
        ctx.geom = geom
        ctx.save_for_backward(x if nig[1] else None, w if nig[0] else None, cols if nig[1] else None)
        ctx.xshape = x.shape
        ctx.wshape = w.shape
        return _from_onl(xp, y, x.shape[0], osize)

    @staticmethod
    def backward(ctx, g):
        x, w, cols = ctx.saved_tensors
        nig = ctx.needs_input_grad
        gx = ConvGradInput.apply(g, w, ctx.geom, ctx.xshape[2:]) if nig[0] else None
        gw = ConvGradWeight.apply(x, g, ctx.geom, ctx.wshape[2:], cols) if nig[1] else None
        gb = g.sum((0,) + tuple(range(2, g.ndim))) if nig[2] else None
        return gx, gw, gb, None, None


class ConvGradInput(Function):
    """dx of a convolution from its output gradient g (N, O, *L) and weight w (O, C/G, *K); also conv_transpose."""

    _raw = True
    op_name = "convolution_backward_input"

    @staticmethod
    def forward(ctx, g, w, geom, spatial):
        xp = ctx.xp
        stride, lo, hi, dil, groups = geom
        ksize = w.shape[2:]
        n, o = g.shape[:2]
        osize = g.shape[2:]
        w3 = w.reshape(groups, o // groups, -1)
        dcols = w3.transpose(0, 2, 1) @ _onl(xp, g, groups)  # (G, Cg*K, N*L)
        dcols = dcols.reshape((groups * w.shape[1],) + tuple(ksize) + (n,) + tuple(osize))
        ctx.geom, ctx.spatial = geom, spatial
        nig = ctx.needs_input_grad
        ctx.save_for_backward(g if nig[1] else None, w if nig[0] else None)
        ctx.wshape, ctx.osize = w.shape, osize
        gx = _col2im(xp, dcols, spatial, ksize, stride, lo, hi, dil)  # (C, N, *S)
        return xp.ascontiguousarray(gx.swapaxes(0, 1))

    @staticmethod
    def backward(ctx, gg):
        g, w = ctx.saved_tensors
        nig = ctx.needs_input_grad
        dg = Conv.apply(gg, w, None, ctx.geom, ctx.osize) if nig[0] else None
        dw = ConvGradWeight.apply(gg, g, ctx.geom, ctx.wshape[2:], None) if nig[1] else None
        return dg, dw, None, None


class ConvGradWeight(Function):
    """dw of a convolution from its input x (N, C, *S) and output gradient g (N, O, *L)."""

    _raw = True
    op_name = "convolution_backward_weight"

    @staticmethod
    def forward(ctx, x, g, geom, ksize, cols):
        xp = ctx.xp
        groups = geom[4]
        if cols is None:
            cols = _im2col(xp, x, ksize, geom, g.shape[2:])
        gw = _onl(xp, g, groups) @ cols.transpose(0, 2, 1)  # (G, O/G, Cg*K)
        ctx.geom, ctx.ksize = geom, ksize
        nig = ctx.needs_input_grad
        ctx.save_for_backward(x if nig[1] else None, g if nig[0] else None)
        ctx.xshape, ctx.osize = x.shape, g.shape[2:]
        return gw.reshape((g.shape[1], x.shape[1] // groups) + tuple(ksize))

    @staticmethod
    def backward(ctx, gw2):
        x, g = ctx.saved_tensors
        nig = ctx.needs_input_grad
        dx = ConvGradInput.apply(g, gw2, ctx.geom, ctx.xshape[2:]) if nig[0] else None
        dg = Conv.apply(x, gw2, None, ctx.geom, ctx.osize) if nig[1] else None
        return dx, dg, None, None, None


def _conv_setup(op, input, weight, bias, stride, padding, dilation, groups, nd):
    _check_float(op, input, weight, bias)
    if weight.ndim != nd + 2:
        raise RuntimeError(f"{op}: expected weight to be {nd + 2}-D (out_channels, in_channels/groups, "
                           f"{'x'.join('k' * nd)}), but got weight of size {list(weight.shape)}")
    batched = input.ndim == nd + 2
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {op}, "
                           f"but got input of size: {list(input.shape)}")
    if not batched:
        input = input.unsqueeze(0)
    stride = ntuple(stride, nd, "stride", op)
    dilation = ntuple(dilation, nd, "dilation", op)
    ksize = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            lo = hi = (0,) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError(f"{op}: padding='same' is not supported for strided convolutions")
            tot = [d * (k - 1) for k, d in zip(ksize, dilation)]
            lo = tuple(t // 2 for t in tot)
            hi = tuple(t - t // 2 for t in tot)
        else:
            raise ValueError(f"{op}: Invalid padding string {padding!r}, should be one of 'valid' or 'same'")
    else:
        lo = hi = ntuple(padding, nd, "padding", op)
    if any(s <= 0 for s in stride) or any(d <= 0 for d in dilation) or any(p < 0 for p in lo):
        raise RuntimeError(f"{op}: stride and dilation must be positive and padding non-negative, got "
                           f"stride={list(stride)}, padding={list(lo)}, dilation={list(dilation)}")
    if groups <= 0 or input.shape[1] % groups or weight.shape[0] % groups:
        raise RuntimeError(f"{op}: Given groups={groups}, expected in_channels={input.shape[1]} and "
                           f"out_channels={weight.shape[0]} to be divisible by groups")
    return input, batched, ksize, (stride, lo, hi, dilation, groups)


def _conv(op, nd, input, weight, bias, stride, padding, dilation, groups):
    x, batched, ksize, geom = _conv_setup(op, input, weight, bias, stride, padding, dilation, groups, nd)
    stride, lo, hi, dil, _ = geom
    if x.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(f"{op}: Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[1] * groups} channels, but got {x.shape[1]} "
                           "channels instead")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise RuntimeError(f"{op}: expected bias of shape [{weight.shape[0]}], got {list(bias.shape)}")
    osize = tuple(_out_size(s, k, st, a, b, d) for s, k, st, a, b, d in zip(x.shape[2:], ksize, stride, lo, hi, dil))
    if any(o <= 0 for o in osize):
        padded = " x ".join(str(s + a + b) for s, a, b in zip(x.shape[2:], lo, hi))
        eff = " x ".join(str(d * (k - 1) + 1) for k, d in zip(ksize, dil))
        raise RuntimeError(f"{op}: Calculated padded input size per channel: ({padded}). Kernel size: ({eff}). "
                           "Kernel size can't be greater than actual input size")
    y = Conv.apply(x, weight, bias, geom, osize)
    return y if batched else y.squeeze(0)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation) of (N, C, L) with (O, C/groups, K).

    >>> import workbench as wb
    >>> wb.conv1d(wb.ones(1, 2, 5), wb.ones(3, 2, 3)).shape
    workbench.Size([1, 3, 3])
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of (N, C, H, W) with (O, C/groups, KH, KW); padding may be 'same' or 'valid'.

    >>> import workbench as wb
    >>> wb.conv2d(wb.ones(1, 1, 4, 4), wb.ones(2, 1, 3, 3), padding=1).shape
    workbench.Size([1, 2, 4, 4])
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of (N, C, D, H, W) with (O, C/groups, KD, KH, KW).

    >>> import workbench as wb
    >>> wb.conv3d(wb.ones(1, 1, 3, 3, 3), wb.ones(2, 1, 2, 2, 2)).shape
    workbench.Size([1, 2, 2, 2, 2])
    """
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(op, nd, input, weight, bias, stride, padding, output_padding, groups, dilation):
    if isinstance(padding, str):
        raise ValueError(f"{op}: padding must be an int or a tuple of ints (string padding is not supported "
                         "for transposed convolutions)")
    x, batched, ksize, geom = _conv_setup(op, input, weight, bias, stride, padding, dilation, groups, nd)
    stride, lo, hi, dil, _ = geom
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(f"{op}: Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[0]} channels, but got {x.shape[1]} channels "
                           "instead")
    op_ = ntuple(output_padding, nd, "output_padding", op)
    if any(p >= max(s, d) for p, s, d in zip(op_, stride, dil)):
        raise RuntimeError(f"{op}: output padding must be smaller than either stride or dilation, but got "
                           f"output_padding={list(op_)}, stride={list(stride)}, dilation={list(dil)}")
    spatial = tuple((i - 1) * s - a - b + d * (k - 1) + p + 1
                    for i, s, a, b, d, k, p in zip(x.shape[2:], stride, lo, hi, dil, ksize, op_))
    if any(s <= 0 for s in spatial):
        raise RuntimeError(f"{op}: the output size {list(spatial)} is too small; reduce padding or enlarge the input")
    cout = weight.shape[1] * groups
    if bias is not None and tuple(bias.shape) != (cout,):
        raise RuntimeError(f"{op}: expected bias of shape [{cout}], got {list(bias.shape)}")
    y = ConvGradInput.apply(x, weight, geom, spatial)
    if bias is not None:
        y = y + bias.reshape((cout,) + (1,) * nd)
    return y if batched else y.squeeze(0)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 1-D convolution ("deconvolution"); weight is (C_in, C_out/groups, K).

    >>> import workbench as wb
    >>> wb.conv_transpose1d(wb.ones(1, 2, 3), wb.ones(2, 4, 3), stride=2).shape
    workbench.Size([1, 4, 7])
    """
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 2-D convolution; weight is (C_in, C_out/groups, KH, KW).

    >>> import workbench as wb
    >>> wb.conv_transpose2d(wb.ones(1, 2, 3, 3), wb.ones(2, 1, 2, 2), stride=2).shape
    workbench.Size([1, 1, 6, 6])
    """
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 3-D convolution; weight is (C_in, C_out/groups, KD, KH, KW).

    >>> import workbench as wb
    >>> wb.conv_transpose3d(wb.ones(1, 1, 2, 2, 2), wb.ones(1, 1, 2, 2, 2)).shape
    workbench.Size([1, 1, 3, 3, 3])
    """
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


# --- unfold / fold -----------------------------------------------------------------------------
class Unfold(Function):
    _raw = True
    op_name = "im2col"

    @staticmethod
    def forward(ctx, x, ksize, geom, osize):
        xp = ctx.xp
        stride, lo, hi, dil, _ = geom
        v = _windows(xp, _pad(xp, x, lo, hi), ksize, stride, dil, osize)  # (N, C, *O, *K)
        v = v.transpose(0, 1, 4, 5, 2, 3)
        ctx.args = (ksize, geom, x.shape[2:])
        return xp.ascontiguousarray(v).reshape(x.shape[0], -1, math.prod(osize))

    @staticmethod
    def backward(ctx, g):
        ksize, geom, spatial = ctx.args
        return Fold.apply(g, spatial, ksize, geom), None, None, None


class Fold(Function):
    _raw = True
    op_name = "col2im"

    @staticmethod
    def forward(ctx, cols, spatial, ksize, geom):
        xp = ctx.xp
        stride, lo, hi, dil, _ = geom
        osize = tuple(_out_size(s, k, st, a, b, d) for s, k, st, a, b, d in zip(spatial, ksize, stride, lo, hi, dil))
        n = cols.shape[0]
        c = cols.shape[1] // math.prod(ksize)
        v = cols.reshape((n * c,) + tuple(ksize) + (1,) + osize)
        ctx.args = (ksize, geom, osize)
        return xp.ascontiguousarray(_col2im(xp, v, spatial, ksize, stride, lo, hi, dil)).reshape((n, c) + spatial)

    @staticmethod
    def backward(ctx, g):
        ksize, geom, osize = ctx.args
        return Unfold.apply(g, ksize, geom, osize), None, None, None


def _fold_geom(op, kernel_size, dilation, padding, stride):
    k = ntuple(kernel_size, 2, "kernel_size", op)
    d = ntuple(dilation, 2, "dilation", op)
    p = ntuple(padding, 2, "padding", op)
    s = ntuple(stride, 2, "stride", op)
    return k, (s, p, p, d, 1)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding blocks: (N, C, H, W) -> (N, C*KH*KW, L) (im2col).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.unfold(wb.ones(1, 2, 4, 4), 2).shape
    workbench.Size([1, 8, 9])
    """
    if input.ndim not in (3, 4):
        raise RuntimeError(f"unfold: Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)")
    batched = input.ndim == 4
    x = input if batched else input.unsqueeze(0)
    k, geom = _fold_geom("unfold", kernel_size, dilation, padding, stride)
    osize = tuple(_out_size(s_, kk, st, a, b, d) for s_, kk, st, a, b, d in
                  zip(x.shape[2:], k, geom[0], geom[1], geom[2], geom[3]))
    if any(o <= 0 for o in osize):
        raise RuntimeError(f"unfold: the kernel {list(k)} (with dilation and padding) does not fit the input of "
                           f"spatial size {list(x.shape[2:])}")
    y = Unfold.apply(x, k, geom, osize)
    return y if batched else y.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum sliding blocks back into an image: (N, C*KH*KW, L) -> (N, C, H, W) (col2im).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.fold(wb.ones(1, 8, 9), (4, 4), 2).shape
    workbench.Size([1, 2, 4, 4])
    """
    if input.ndim not in (2, 3):
        raise RuntimeError(f"fold: Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                           f"(got {input.ndim}D)")
    batched = input.ndim == 3
    x = input if batched else input.unsqueeze(0)
    k, geom = _fold_geom("fold", kernel_size, dilation, padding, stride)
    spatial = ntuple(output_size, 2, "output_size", "fold")
    osize = tuple(_out_size(s_, kk, st, a, b, d) for s_, kk, st, a, b, d in
                  zip(spatial, k, geom[0], geom[1], geom[2], geom[3]))
    if x.shape[1] % math.prod(k) or math.prod(osize) != x.shape[2]:
        raise RuntimeError(f"fold: Expected size of input's dimension 1 to be divisible by the product of "
                           f"kernel_size ({math.prod(k)}) and dimension 2 to match the calculated number of "
                           f"sliding blocks {math.prod(osize)}, but got input of size {list(input.shape)}")
    y = Fold.apply(x, spatial, k, geom)
    return y if batched else y.squeeze(0)


__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "bilinear"]
