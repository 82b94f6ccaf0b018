"""Convolution (im2col), its transpose, fold/unfold and conv_tbc.

Convolution is three primitives that are each other's derivatives, so gradients of any order come
from the same fast code:

* ``Conv``            x, w -> y          (im2col through a strided window view, then one matmul)
* ``ConvGradInput``   g, w -> dx         (unit strides: im2col of g and the flipped kernel; otherwise a
                                         matmul, then col2im: one strided add per kernel position);
                                         this is also conv_transpose
* ``ConvGradWeight``  x, g -> dw         (im2col, then one matmul)

d(Conv)/dx is ConvGradInput, d(Conv)/dw is ConvGradWeight; d(ConvGradInput)/dg is Conv and
d(ConvGradInput)/dw is ConvGradWeight; d(ConvGradWeight)/dx is ConvGradInput and d/dg is Conv.

Three shapes skip the columns (``_kind``), in all three primitives, so every order of derivative takes them:

* pointwise  a 1x1 kernel without padding (MobileNet's and ResNet's projections, a U-Net's head): a matrix
             product per image, on any arrays and dims; a stride reads x[..., ::s] (32x32x16x16 -> 64:
             0.71 ms forward against im2col's 1.67 and PyTorch's 0.98, on an AMD EPYC)
* depthwise  2-D with one input channel per group: a stencil over phase planes (``_backend/depthwise.py``,
             Numba); per-group im2col products were 3-5x PyTorch's time
* winograd   2-D 3x3, unit stride, one group, >= 8 channels: F(2x2, 3x3) (``_backend/winograd.py``, Numba)
"""
import math

from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from .._backend import depthwise as _dw
from .._backend import winograd as _wg
from .._core import Tensor
from ._autocast import AUTOCAST as _AUTOCAST
from ._autocast import cast as _autocast_cast
from ._util import _check_float, as_strided_raw, gemm, ntuple
from ._windows import _col2im, _out_size, _pad, _windows


class _Grid:
    """Where a convolution's columns live, shared by its forward and both backward products.

    Columns are (G, Cg*prod(K), N*L): rows in (c, k...) order, columns in (n, o...) order, so all three
    products are single (per-group) matmuls. With unit strides the columns use the "flat" layout: each
    output row is as wide as the padded input row (the extra entries are dropped from outputs and are
    zero in gradients), so every kernel tap is one constant shift of the flattened padded image. Along the
    inner spatial dims one row's right padding is the next row's left padding (a tap that reads past a
    row's end lands in the zeros before the next row's data), so a row is n + max(lo, hi) wide, not
    n + lo + hi: on an 8x8 image with padding 1 the columns are 8 x 9 per image instead of 8 x 10.

    In the flat layout nothing the size of the columns is kept: the forward saves the padded image (1/9 of
    the columns' bytes for a 3x3 kernel), and every product builds its columns a batch chunk at a time
    (within _CHUNK_BYTES, so they are still in cache for the matmul) with one strided copy per chunk. The
    input gradient gathers too, instead of scattering into the image: dx is a convolution of the output
    gradient with the flipped kernel, and the weight gradient reuses those same gradient columns against
    the saved image, so the backward builds one set of columns, not two.
    """

    __slots__ = ("spatial", "ksize", "geom", "osize", "flat", "padded", "tsteps", "span", "ext", "dext", "m0",
                 "imlen", "glead", "glen")

    def __init__(self, spatial, ksize, geom, osize):
        stride, lo, hi, dil, _ = geom
        self.spatial, self.ksize, self.geom, self.osize = tuple(spatial), tuple(ksize), geom, tuple(osize)
        self.flat = len(ksize) > 1 and all(st == 1 for st in stride)
        if self.flat:
            self.padded = (spatial[0] + lo[0] + hi[0],) + tuple(
                max(n + max(a, b), o) for n, a, b, o in zip(spatial[1:], lo[1:], hi[1:], osize[1:]))
            steps = [math.prod(self.padded[i + 1:]) for i in range(len(ksize))]
            self.tsteps = tuple(d * st for d, st in zip(dil, steps))  # flat shift of one step along each kernel dim
            self.span = sum((k - 1) * t for k, t in zip(ksize, self.tsteps))  # the farthest tap's shift
            self.ext = (self.osize[0],) + self.padded[1:]  # output grid with padded-width rows
            self.dext = (self.spatial[0],) + self.padded[1:]  # input-gradient grid, from the first data entry
            self.m0 = sum(a * st for a, st in zip(lo, steps))  # flat index of the first data entry
            self.imlen = max(math.prod(self.padded), self.span + math.prod(self.ext), self.m0 + math.prod(self.dext))
            # the output gradient per image: zeros before (the flipped taps read up to span before m0) and after
            self.glead = max(0, self.span - self.m0)
            self.glen = self.glead + max(math.prod(self.ext), self.m0 + math.prod(self.dext))

    def flat_image(self, xp, x):
        """(C, N, imlen): the padded image, channels first, each image flattened, zeros past its end."""
        n, c = x.shape[:2]
        lo = self.geom[1]
        buf = xp.zeros((c, n, self.imlen), dtype=x.dtype)
        region = buf[:, :, :math.prod(self.padded)].reshape((c, n) + self.padded)
        region[(slice(None), slice(None)) + tuple(slice(a, a + m) for a, m in zip(lo, self.spatial))] = \
            x.swapaxes(0, 1)
        return buf

    def _flat_grad(self, xp, g):
        """(O, N, glen): the output gradient on the output grid (zeros in the extra entries), with margins."""
        o, n = g.shape[1], g.shape[0]
        buf = xp.zeros((o, n, self.glen), dtype=g.dtype)
        region = buf[:, :, self.glead:self.glead + math.prod(self.ext)].reshape((o, n) + self.ext)
        region[(slice(None), slice(None)) + tuple(slice(0, m) for m in self.osize)] = g.swapaxes(0, 1)
        return buf

    def _cols(self, xp, buf, groups, n0, m, start, length):
        """Columns (G, rows/G * prod(K), m*length) of images n0..n0+m of a flat buffer (rows, N, *): tap kpos
        of image n, entry l reads buf[:, n, start + shift(kpos) + l]. One strided copy."""
        rows, _, _ = buf.shape
        it = buf.itemsize
        v = as_strided_raw(xp, buf[:, n0:, start:], (rows,) + self.ksize + (m, length),
                           (buf.strides[0],) + tuple(t * it for t in self.tsteps) + (buf.strides[1], it))
        return xp.ascontiguousarray(v).reshape(groups, -1, m * length)

    @staticmethod
    def _batch(per_image, n):
        """Images per chunk: as many as fit in _CHUNK_BYTES, spread evenly (no chunk of one left over)."""
        chunks = -(-n * per_image // _CHUNK_BYTES)
        return -(-n // max(1, chunks))

    def forward(self, xp, buf, w, b, groups, n):
        """The convolution (N, O, *osize) of the flat image buf with w (O, C/G, *K), plus bias b."""
        o = w.shape[0]
        og = o // groups
        length = math.prod(self.ext)
        wt = w.reshape(groups, og, -1).swapaxes(1, 2)  # (G, Cg*K, O/G)
        yt = xp.empty((groups, n * length, og), dtype=buf.dtype)
        nb = self._batch(buf.shape[0] * math.prod(self.ksize) * length * buf.itemsize, n)
        for n0 in range(0, n, nb):
            m = min(nb, n - n0)
            # (m*L, O/G) per group: BLAS runs faster with the long N*L side as the result's rows
            gemm(self._cols(xp, buf, groups, n0, m, 0, length).swapaxes(1, 2), wt,
                 out=yt[:, n0 * length:(n0 + m) * length])
        if b is not None:
            yt += b.reshape(groups, 1, og)
        nd = len(self.ksize)
        y = yt.reshape((groups, n) + self.ext + (og,))[(slice(None),) * 2 + tuple(slice(0, k) for k in self.osize)]
        y = y.transpose((1, 0, nd + 2) + tuple(range(2, 2 + nd)))
        return xp.ascontiguousarray(y).reshape((n, o) + self.osize)

    def grads(self, xp, g, groups, cg, w=None, buf=None, bias=False):
        """(dx, dw, db) of a convolution from its output gradient g (N, O, *osize): dx (N, C, *spatial) when the
        weight w is given, dw (O, Cg, *K) when the flat image buf is given, db (O,) when bias. One pass over
        the gradient's columns: dx = w_flipped^T @ gcols, dw_flipped = gcols @ image^T."""
        n, o = g.shape[:2]
        og, nd, kk = o // groups, len(self.ksize), math.prod(self.ksize)
        flip = (slice(None),) * 2 + (slice(None, None, -1),) * nd
        gb = self._flat_grad(xp, g)
        if w is None:  # dw alone: the image's columns (C*K rows) cost fewer copies than the gradient's (O*K)
            return None, self._weight_grad(xp, gb, buf, groups, o), self._bias_grad(xp, gb) if bias else None
        lx = math.prod(self.dext)
        start = self.glead + self.m0 - self.span
        if w is not None:  # (G, Cg, O/G * K) with taps flipped, to match the gradient's columns
            wt = xp.ascontiguousarray(w[flip].reshape(groups, og, cg, kk).swapaxes(1, 2)).reshape(groups, cg, og * kk)
            dxf = xp.empty((groups, cg, n * lx), dtype=g.dtype)
        gwf = None
        nb = self._batch(o * kk * lx * g.itemsize, n)
        for n0 in range(0, n, nb):
            m = min(nb, n - n0)
            cols = self._cols(xp, gb, groups, n0, m, start, lx)
            if w is not None:
                gemm(wt, cols, out=dxf[:, :, n0 * lx:(n0 + m) * lx])
            if buf is not None:
                part = gemm(cols, buf[:, n0:n0 + m, self.m0:self.m0 + lx].reshape(groups, cg, m * lx).swapaxes(1, 2))
                gwf = part if gwf is None else gwf.__iadd__(part)
        dx = dw = db = None
        if w is not None:
            dx = dxf.reshape((groups * cg, n) + self.dext)[(slice(None),) * 2 + tuple(slice(0, s) for s in self.spatial)]
            dx = xp.ascontiguousarray(dx.swapaxes(0, 1))
        if buf is not None:  # (G, O/G * K, Cg) -> (O, Cg, *K), taps flipped back
            dw = gwf.reshape((o,) + self.ksize + (cg,))[(slice(None),) + (slice(None, None, -1),) * nd]
            dw = xp.ascontiguousarray(xp.moveaxis(dw, -1, 1))
        if bias:
            db = self._bias_grad(xp, gb)
        return dx, dw, db

    def _weight_grad(self, xp, gb, buf, groups, o):
        """dw (O, Cg, *K) = gcols @ image columns^T, the image's columns built a chunk at a time."""
        n, length = buf.shape[1], math.prod(self.ext)
        gw = None
        nb = self._batch(buf.shape[0] * math.prod(self.ksize) * length * buf.itemsize, n)
        for n0 in range(0, n, nb):
            m = min(nb, n - n0)
            gc = gb[:, n0:n0 + m, self.glead:self.glead + length].reshape(groups, o // groups, m * length)
            part = gemm(self._cols(xp, buf, groups, n0, m, 0, length), gc.swapaxes(1, 2))  # (G, Cg*K, O/G)
            gw = part if gw is None else gw.__iadd__(part)
        return xp.ascontiguousarray(gw.swapaxes(1, 2)).reshape((o, buf.shape[0] // groups) + self.ksize)

    @staticmethod
    def _bias_grad(xp, gb):  # (zeros outside the output grid); a matrix-vector product beats sum()
        return gemm(gb.reshape(gb.shape[0], -1), xp.ones(gb.shape[1] * gb.shape[2], dtype=gb.dtype))

    # --- the strided (non-flat) layout: columns materialized --------------------------------------------
    def cols(self, xp, x, groups):
        n = x.shape[0]
        stride, lo, hi, dil, _ = self.geom
        nd = len(self.ksize)
        v = _windows(xp, _pad(xp, x, lo, hi), self.ksize, stride, dil, self.osize)  # (N, C, *O, *K)
        v = v.transpose((1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,) + tuple(range(2, 2 + nd)))
        return xp.ascontiguousarray(v).reshape(groups, -1, n * math.prod(self.osize))

    @staticmethod
    def gcols(xp, g, groups):
        """g (N, O, *L) as contiguous (G, O/G, N*L) in the columns' order."""
        n, o = g.shape[:2]
        return xp.ascontiguousarray(g.reshape(n, o, -1).swapaxes(0, 1)).reshape(groups, o // groups, -1)

    @staticmethod
    def output(xp, y, n, osize):
        """(O, N*L) products -> contiguous (N, O, *osize)."""
        o = y.shape[0]
        return xp.ascontiguousarray(y.reshape(o, n, -1).swapaxes(0, 1)).reshape((n, o) + osize)

    def input_grad(self, xp, w3, gc, n, c):
        """col2im(w3^T @ gc): the input gradient (N, C, *spatial) from the weight (G, O/G, Cg*K) and the output
        gradient's columns (G, O/G, N*L)."""
        stride, lo, hi, dil, _ = self.geom
        d = gemm(w3.swapaxes(1, 2), gc).reshape((c,) + self.ksize + (n,) + self.osize)
        return xp.ascontiguousarray(_col2im(xp, d, self.spatial, self.ksize, stride, lo, hi, dil).swapaxes(0, 1))


_CHUNK_BYTES = 768 * 1024  # a batch chunk of columns, within one core's L2


def _winograd(geom, wshape, a, b):
    """Whether a 2-D convolution with weight shape wshape, whose operands are a and b, takes Winograd's
    F(2x2, 3x3) (``_backend/winograd.py``): 3x3, unit stride and dilation, one group, NumPy float arrays."""
    stride, _, _, dil, groups = geom
    return (tuple(wshape[2:]) == (3, 3) and stride == (1, 1) and dil == (1, 1) and groups == 1
            and _wg.usable(a, b, wshape[1], wshape[0]))


def _kind(geom, wshape, a, b):
    """The direct path a convolution with weight shape wshape (operands a and b) takes, or None for im2col:
    'pointwise' (a 1x1 kernel without padding: one matrix product per image, any dims, groups and arrays),
    'depthwise' (2-D, one input channel per group: ``_backend/depthwise.py``), 'winograd' (2-D 3x3)."""
    _, lo, hi, _, groups = geom
    if all(k == 1 for k in wshape[2:]) and not any(lo) and not any(hi):
        return "pointwise"
    if len(wshape) == 4 and wshape[1] == 1 and _dw.usable(a, b, groups, groups):
        return "depthwise"
    if _winograd(geom, wshape, a, b):
        return "winograd"
    return None


def _pw_columns(xp, x, stride, groups):
    """The entries of x (N, C, *S) a 1x1 kernel with this stride reads, as contiguous (N, G, C/G, L), and the
    output's spatial size."""
    if any(s != 1 for s in stride):
        x = x[(slice(None),) * 2 + tuple(slice(None, None, s) for s in stride)]
    n, c = x.shape[:2]
    return xp.ascontiguousarray(x).reshape(n, groups, c // groups, -1), x.shape[2:]


def _pw_conv(xp, x, w, b, stride, groups):
    """The 1x1 convolution (N, O, *osize) of x with w (O, C/G, 1...): per image and group, w (O/G, C/G) @ x."""
    cols, osize = _pw_columns(xp, x, stride, groups)
    o = w.shape[0]
    y = gemm(w.reshape(groups, o // groups, -1), cols).reshape(x.shape[0], o, -1)  # (N, G, O/G, L)
    if b is not None:
        y += b[:, None]
    return y.reshape((x.shape[0], o) + tuple(osize))


def _special_grads(kind, xp, g, geom, spatial, ksize, x=None, w=None):
    """(dx, dw) of a convolution on a direct path (``_kind``) from its output gradient g (N, O, *osize): dx
    (N, C, *spatial) when the weight w is given, dw (O, C/G, *ksize) when the input x is given, else None."""
    stride, lo, _, _, groups = geom
    if kind == "depthwise":
        return _dw.grads(g, geom, spatial, ksize, x, w)
    if kind == "winograd":
        return (_wg.input_grad(g, w, lo, spatial) if w is not None else None,
                _wg.weight_grad(x, g, lo) if x is not None else None)
    n, o = g.shape[:2]
    gc = g.reshape(n, groups, o // groups, -1)
    dx = dw = None
    if w is not None:  # w^T @ g per image and group, into the strided entries the kernel read
        cg = w.shape[1]
        d = gemm(w.reshape(groups, o // groups, cg).swapaxes(1, 2), gc).reshape((n, groups * cg) + g.shape[2:])
        if tuple(g.shape[2:]) == tuple(spatial):
            dx = d
        else:
            dx = xp.zeros((n, groups * cg) + tuple(spatial), dtype=d.dtype)
            dx[(slice(None),) * 2 + tuple(slice(None, s * (m - 1) + 1, s) for s, m in zip(stride, g.shape[2:]))] = d
    if x is not None:  # sum over images of g @ x^T per group
        cols, _ = _pw_columns(xp, x, stride, groups)
        dw = gemm(gc, cols.swapaxes(2, 3)).sum(0).reshape((o, x.shape[1] // groups) + tuple(ksize))
    return dx, dw


class Conv(Function):
    _raw = True
    op_name = "convolution"

    @staticmethod
    def forward(ctx, x, w, b, geom, osize):
        xp = ctx.xp
        groups = geom[4]
        o = w.shape[0]
        grid = _Grid(x.shape[2:], w.shape[2:], geom, osize)
        nig = ctx.needs_input_grad
        ctx.geom = geom
        ctx.xshape = x.shape
        ctx.wshape = w.shape
        ctx.kind = kind = _kind(geom, w.shape, x, w)
        if kind is not None:  # the weight gradient reads x itself: nothing extra saved
            ctx.save_for_backward(x if nig[1] else None, w if nig[0] else None, None)
            if kind == "pointwise":
                return _pw_conv(xp, x, w, b, geom[0], groups)
            if kind == "depthwise":
                return _dw.conv(x, w, b, geom, osize)
            return _wg.conv(x, w, b, geom[1], osize)
        if grid.flat:  # saved for the weight gradient: the flat image, not its columns
            saved = grid.flat_image(xp, x)
            y = grid.forward(xp, saved, w, b, groups, x.shape[0])
        else:
            saved = grid.cols(xp, x, groups)
            y = gemm(saved.swapaxes(1, 2), w.reshape(groups, o // groups, -1).swapaxes(1, 2)).swapaxes(1, 2)
            y = y.reshape(o, -1)
            if b is not None:
                y += b[:, None]
            y = grid.output(xp, y, x.shape[0], grid.osize)
        ctx.save_for_backward(x if nig[1] else None, w if nig[0] else None, saved if nig[1] else None)
        return y

    @staticmethod
    def backward(ctx, g):
        x, w, saved = ctx.saved_tensors
        nig = ctx.needs_input_grad
        geom, groups = ctx.geom, ctx.geom[4]
        grid = _Grid(ctx.xshape[2:], ctx.wshape[2:], geom, g.shape[2:])
        if not STATE.enabled and ctx.kind is not None:
            gd = g._data
            dx, dw = _special_grads(ctx.kind, ctx.xp, gd, geom, ctx.xshape[2:], ctx.wshape[2:],
                                    x._data if nig[1] else None, w._data if nig[0] else None)
            db = gd.sum((0,) + tuple(range(2, gd.ndim))) if nig[2] else None
            return (*(None if a is None else Tensor._make(a) for a in (dx, dw, db)), None, None)
        if not STATE.enabled and grid.flat:  # first derivatives: all three from one pass over g's columns
            dx, dw, db = grid.grads(ctx.xp, g._data, groups, ctx.wshape[1], w._data if nig[0] else None,
                                    saved._data if nig[1] else None, nig[2])
            return (*(None if a is None else Tensor._make(a) for a in (dx, dw, db)), None, None)
        gc = None
        if not STATE.enabled:  # first derivatives: both products share g's columns, and the bias sums them
            gc = grid.gcols(ctx.xp, g._data, groups)
        gx = ConvGradInput.apply(g, w, geom, ctx.xshape[2:], gc) if nig[0] else None
        gw = ConvGradWeight.apply(x, g, geom, ctx.wshape[2:], saved, gc) if nig[1] else None
        gb = None
        if nig[2]:  # a matrix-vector product beats sum()
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
        ctx.geom, ctx.spatial = geom, spatial
        nig = ctx.needs_input_grad
        ctx.save_for_backward(g if nig[1] else None, w if nig[0] else None)
        ctx.wshape, ctx.osize = w.shape, osize
        kind = _kind(geom, w.shape, g, w)
        if kind is not None:
            return _special_grads(kind, xp, g, geom, spatial, w.shape[2:], w=w)[0]
        # the flat layout gathers over the whole input grid; where g is much smaller than it (a transposed
        # convolution growing 1x1 to 4x4), one product over g's entries and col2im's adds cost less
        if grid.flat and math.prod(grid.dext) <= 2 * math.prod(osize):
            return grid.grads(xp, g, groups, w.shape[1], w=w)[0]
        if gc is None:
            gc = grid.gcols(xp, g, groups)
        return grid.input_grad(xp, w.reshape(groups, o // groups, -1), gc, n, groups * w.shape[1])

    @staticmethod
    def backward(ctx, gg):
        g, w = ctx.saved_tensors
        nig = ctx.needs_input_grad
        dg = Conv.apply(gg, w, None, ctx.geom, ctx.osize) if nig[0] else None
        dw = ConvGradWeight.apply(gg, g, ctx.geom, ctx.wshape[2:], None) if nig[1] else None
        return dg, dw, None, None, None


class ConvGradWeight(Function):
    """dw of a convolution from its input x (N, C, *S) and output gradient g (N, O, *L); ``saved`` is what the
    forward kept (the columns, or the flat image in the flat layout), or None to build it from x."""

    _raw = True
    op_name = "convolution_backward_weight"

    @staticmethod
    def forward(ctx, x, g, geom, ksize, saved, gc=None):
        xp = ctx.xp
        groups = geom[4]
        grid = _Grid(x.shape[2:], ksize, geom, g.shape[2:])
        ctx.geom, ctx.ksize = geom, ksize
        nig = ctx.needs_input_grad
        ctx.save_for_backward(x if nig[1] else None, g if nig[0] else None)
        ctx.xshape, ctx.osize = x.shape, g.shape[2:]
        kind = _kind(geom, (g.shape[1], x.shape[1] // groups) + tuple(ksize), x, g)
        if kind is not None:
            return _special_grads(kind, xp, g, geom, x.shape[2:], ksize, x=x)[1]
        if grid.flat:
            return grid.grads(xp, g, groups, x.shape[1] // groups,
                              buf=saved if saved is not None else grid.flat_image(xp, x))[1]
        cols = saved if saved is not None else grid.cols(xp, x, groups)
        if gc is None:
            gc = grid.gcols(xp, g, groups)
        gw = gemm(cols, gc.swapaxes(1, 2)).swapaxes(1, 2)  # (G, O/G, Cg*K)
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
