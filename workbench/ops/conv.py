"""Convolution (im2col), its transpose, fold/unfold and conv_tbc.

Convolution is three primitives that are each other's derivatives, so gradients of any order come
from the same fast code:

* ``Conv``            x, w -> y          (im2col through a strided window view, then one matmul)
* ``ConvGradInput``   g, w -> dx         (a matmul, then col2im: one strided add per kernel position);
                                         this is also conv_transpose
* ``ConvGradWeight``  x, g -> dw         (im2col, then one matmul)

d(Conv)/dx is ConvGradInput, d(Conv)/dw is ConvGradWeight; d(ConvGradInput)/dg is Conv and
d(ConvGradInput)/dw is ConvGradWeight; d(ConvGradWeight)/dx is ConvGradInput and d/dg is Conv.
"""
import itertools
import math

from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from .._core import Tensor
from ._autocast import AUTOCAST as _AUTOCAST
from ._autocast import cast as _autocast_cast
from ._util import _check_float, gemm, ntuple
from ._windows import _col2im, _out_size, _pad, _windows


class _Grid:
    """Where a convolution's columns live, shared by its forward and both backward products.

    Columns are (G, Cg*prod(K), N*L): rows in (c, k...) order, columns in (n, o...) order, so all three
    products are single (per-group) matmuls. With unit strides the columns use the "flat" layout: each
    output row is as wide as the padded input row (the extra entries are dropped from outputs and are
    zero in gradients), so every kernel tap is one contiguous shift of the flattened padded image and
    im2col/col2im copy long contiguous runs instead of short strided rows. Along the inner spatial dims
    one row's right padding is the next row's left padding (a tap that reads past a row's end lands in
    the zeros before the next row's data), so a row is n + max(lo, hi) wide, not n + lo + hi: on an 8x8
    image with padding 1 the columns are 8 x 9 per image instead of 8 x 10, and so are the matmuls.
    """

    __slots__ = ("spatial", "ksize", "geom", "osize", "flat", "padded", "offs", "ext", "tail")

    def __init__(self, spatial, ksize, geom, osize):
        stride, lo, hi, dil, _ = geom
        self.spatial, self.ksize, self.geom, self.osize = tuple(spatial), tuple(ksize), geom, tuple(osize)
        self.flat = len(ksize) > 1 and all(st == 1 for st in stride)
        if self.flat:
            self.padded = (spatial[0] + lo[0] + hi[0],) + tuple(
                max(n + max(a, b), o) for n, a, b, o in zip(spatial[1:], lo[1:], hi[1:], osize[1:]))
            steps = [math.prod(self.padded[i + 1:]) for i in range(len(ksize))]
            self.offs = [sum(kp * d * st for kp, d, st in zip(kpos, dil, steps))
                         for kpos in itertools.product(*[range(k) for k in ksize])]
            self.ext = (self.osize[0],) + self.padded[1:]  # output grid with padded-width rows
            self.tail = max(0, max(self.offs) + math.prod(self.ext) - math.prod(self.padded))

    def _flat_image(self, xp, x):
        """(C, N, prod(padded) + tail): the padded image, channels first, flattened, zero tail."""
        n, c = x.shape[:2]
        lo = self.geom[1]
        buf = xp.zeros((c, n, math.prod(self.padded) + self.tail), dtype=x.dtype)
        region = buf[:, :, :math.prod(self.padded)].reshape((c, n) + self.padded)
        region[(slice(None), slice(None)) + tuple(slice(a, a + m) for a, m in zip(lo, self.spatial))] = \
            x.swapaxes(0, 1)
        return buf

    def cols(self, xp, x, groups):
        n, c = x.shape[:2]
        if not self.flat:
            stride, lo, hi, dil, _ = self.geom
            nd = len(self.ksize)
            v = _windows(xp, _pad(xp, x, lo, hi), self.ksize, stride, dil, self.osize)  # (N, C, *O, *K)
            v = v.transpose((1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,) + tuple(range(2, 2 + nd)))
            return xp.ascontiguousarray(v).reshape(groups, -1, n * math.prod(self.osize))
        buf = self._flat_image(xp, x)
        length = math.prod(self.ext)
        out = xp.empty((c, len(self.offs), n, length), dtype=x.dtype)
        for j, off in enumerate(self.offs):
            out[:, j] = buf[:, :, off:off + length]
        return out.reshape(groups, -1, n * length)

    def gcols(self, xp, g, groups):
        """g (N, O, *L) as contiguous (G, O/G, N*L) in the columns' order (zeros in the flat layout's extra entries)."""
        n, o = g.shape[:2]
        if not self.flat:
            return xp.ascontiguousarray(g.reshape(n, o, -1).swapaxes(0, 1)).reshape(groups, o // groups, -1)
        out = xp.zeros((o, n) + self.ext, dtype=g.dtype)
        out[(slice(None), slice(None)) + tuple(slice(0, m) for m in self.osize)] = g.swapaxes(0, 1)
        return out.reshape(groups, o // groups, -1)

    def output(self, xp, y, n):
        """(O, N*L) products -> contiguous (N, O, *osize)."""
        o = y.shape[0]
        if not self.flat:
            return xp.ascontiguousarray(y.reshape(o, n, -1).swapaxes(0, 1)).reshape((n, o) + self.osize)
        y = y.reshape((o, n) + self.ext)[(slice(None), slice(None)) + tuple(slice(0, m) for m in self.osize)]
        return xp.ascontiguousarray(y.swapaxes(0, 1))

    def input_grad(self, xp, w3, gc, n, c):
        """col2im(w3^T @ gc): the input gradient (N, C, *spatial) from the weight (G, O/G, Cg*K) and the output
        gradient's columns (G, O/G, N*L). In the flat layout the product is taken a batch chunk at a time
        (when a few images fit in _CHUNK_BYTES), so each chunk's window contributions are still in cache
        when its taps are summed into the image."""
        stride, lo, hi, dil, _ = self.geom
        wt = w3.swapaxes(1, 2)
        if not self.flat:
            d = gemm(wt, gc).reshape((c,) + self.ksize + (n,) + self.osize)
            return xp.ascontiguousarray(_col2im(xp, d, self.spatial, self.ksize, stride, lo, hi, dil).swapaxes(0, 1))
        length, taps = math.prod(self.ext), len(self.offs)
        nb = _CHUNK_BYTES // (c * taps * length * gc.dtype.itemsize)
        nb = n if nb < 4 else nb
        buf = xp.zeros((c, n, math.prod(self.padded) + self.tail), dtype=gc.dtype)
        for n0 in range(0, n, nb):
            m = min(nb, n - n0)
            d = gemm(wt, gc[..., n0 * length:(n0 + m) * length]).reshape(c, taps, m, length)
            for j, off in enumerate(self.offs):
                buf[:, n0:n0 + m, off:off + length] += d[:, j]
        region = buf[:, :, :math.prod(self.padded)].reshape((c, n) + self.padded)
        region = region[(slice(None), slice(None)) + tuple(slice(a, a + m) for a, m in zip(lo, self.spatial))]
        return xp.ascontiguousarray(region.swapaxes(0, 1))


_CHUNK_BYTES = 768 * 1024  # a batch chunk of window contributions, within one core's L2


class Conv(Function):
    _raw = True
    op_name = "convolution"

    @staticmethod
    def forward(ctx, x, w, b, geom, osize):
        xp = ctx.xp
        groups = geom[4]
        o = w.shape[0]
        grid = _Grid(x.shape[2:], w.shape[2:], geom, osize)
        cols = grid.cols(xp, x, groups)
        # (N*L, O/G) per group: BLAS runs faster with the long N*L side as the result's rows
        y = gemm(cols.swapaxes(1, 2), w.reshape(groups, o // groups, -1).swapaxes(1, 2)).swapaxes(1, 2).reshape(o, -1)
        if b is not None:
            y += b[:, None]
        nig = ctx.needs_input_grad
        ctx.geom = geom
        ctx.save_for_backward(x if nig[1] else None, w if nig[0] else None, cols if nig[1] else None)
        ctx.xshape = x.shape
        ctx.wshape = w.shape
        return grid.output(xp, y, x.shape[0])

    @staticmethod
    def backward(ctx, g):
        x, w, cols = ctx.saved_tensors
        nig = ctx.needs_input_grad
        gc = None
        if not STATE.enabled:  # first derivatives: both products share g's columns, and the bias sums them
            groups = ctx.geom[4]
            gc = _Grid(ctx.xshape[2:], ctx.wshape[2:], ctx.geom, g.shape[2:]).gcols(ctx.xp, g._data, groups)
        gx = ConvGradInput.apply(g, w, ctx.geom, ctx.xshape[2:], gc) if nig[0] else None
        gw = ConvGradWeight.apply(x, g, ctx.geom, ctx.wshape[2:], cols, gc) if nig[1] else None
        gb = None
        if nig[2]:  # (zeros in the flat layout's extra columns); a matrix-vector product beats sum()
            gb = (Tensor._make(gemm(gc, ctx.xp.ones(gc.shape[-1], dtype=gc.dtype)).reshape(-1)) if gc is not None
                  else g.sum((0,) + tuple(range(2, g.ndim))))
        return gx, gw, gb, None, None


class ConvGradInput(Function):
    """dx of a convolution from its output gradient g (N, O, *L) and weight w (O, C/G, *K); also conv_transpose."""

    _raw = True
    op_name = "convolution_backward_input"

    @staticmethod
    def forward(ctx, g, w, geom, spatial, gc=None):
        xp = ctx.xp
        groups = geom[4]
        n, o = g.shape[:2]
        osize = g.shape[2:]
        grid = _Grid(spatial, w.shape[2:], geom, osize)
        if gc is None:
            gc = grid.gcols(xp, g, groups)
        ctx.geom, ctx.spatial = geom, spatial
        nig = ctx.needs_input_grad
        ctx.save_for_backward(g if nig[1] else None, w if nig[0] else None)
        ctx.wshape, ctx.osize = w.shape, osize
        return grid.input_grad(xp, w.reshape(groups, o // groups, -1), gc, n, groups * w.shape[1])

    @staticmethod
    def backward(ctx, gg):
        g, w = ctx.saved_tensors
        nig = ctx.needs_input_grad
        dg = Conv.apply(gg, w, None, ctx.geom, ctx.osize) if nig[0] else None
        dw = ConvGradWeight.apply(gg, g, ctx.geom, ctx.wshape[2:], None) if nig[1] else None
        return dg, dw, None, None, None


class ConvGradWeight(Function):
    """dw of a convolution from its input x (N, C, *S) and output gradient g (N, O, *L)."""

    _raw = True
    op_name = "convolution_backward_weight"

    @staticmethod
    def forward(ctx, x, g, geom, ksize, cols, gc=None):
        xp = ctx.xp
        groups = geom[4]
        grid = _Grid(x.shape[2:], ksize, geom, g.shape[2:])
        if cols is None:
            cols = grid.cols(xp, x, groups)
        if gc is None:
            gc = grid.gcols(xp, g, groups)
        gw = gemm(cols, gc.swapaxes(1, 2)).swapaxes(1, 2)  # (G, O/G, Cg*K)
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
        return dx, dg, None, None, None, None


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
    if _AUTOCAST[0]:
        input, weight, bias = _autocast_cast("conv1d", input, weight, bias)
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of (N, C, H, W) with (O, C/groups, KH, KW); padding may be 'same' or 'valid'.

    >>> import workbench as wb
    >>> wb.conv2d(wb.ones(1, 1, 4, 4), wb.ones(2, 1, 3, 3), padding=1).shape
    workbench.Size([1, 2, 4, 4])
    """
    if _AUTOCAST[0]:
        input, weight, bias = _autocast_cast("conv2d", input, weight, bias)
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of (N, C, D, H, W) with (O, C/groups, KD, KH, KW).

    >>> import workbench as wb
    >>> wb.conv3d(wb.ones(1, 1, 3, 3, 3), wb.ones(2, 1, 2, 2, 2)).shape
    workbench.Size([1, 2, 2, 2, 2])
    """
    if _AUTOCAST[0]:
        input, weight, bias = _autocast_cast("conv3d", input, weight, bias)
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
    if _AUTOCAST[0]:
        input, weight, bias = _autocast_cast("conv_transpose1d", input, weight, bias)
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 2-D convolution; weight is (C_in, C_out/groups, KH, KW).

    >>> import workbench as wb
    >>> wb.conv_transpose2d(wb.ones(1, 2, 3, 3), wb.ones(2, 1, 2, 2), stride=2).shape
    workbench.Size([1, 1, 6, 6])
    """
    if _AUTOCAST[0]:
        input, weight, bias = _autocast_cast("conv_transpose2d", input, weight, bias)
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 3-D convolution; weight is (C_in, C_out/groups, KD, KH, KW).

    >>> import workbench as wb
    >>> wb.conv_transpose3d(wb.ones(1, 1, 2, 2, 2), wb.ones(1, 1, 2, 2, 2)).shape
    workbench.Size([1, 1, 3, 3, 3])
    """
    if _AUTOCAST[0]:
        input, weight, bias = _autocast_cast("conv_transpose3d", input, weight, bias)
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


def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution over (time, batch, channels) input with a (kernel, in, out) weight.

    >>> import workbench as wb
    >>> wb.nn.functional.conv_tbc(wb.ones(5, 2, 3), wb.ones(3, 3, 4), wb.zeros(4)).shape
    workbench.Size([3, 2, 4])
    """
    y = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return y.permute(2, 0, 1)


__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
