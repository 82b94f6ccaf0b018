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
import warnings

from ..autograd.function import Function
from ..autograd.grad_mode import STATE
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
    def forward(ctx, g, idx, nrows, unique=False):
        ctx.save_for_backward(idx)
        if unique and g.ndim == idx.ndim:  # no repeated index: a plain scatter
            out = ctx.xp.zeros(nrows, dtype=g.dtype)
            out[idx.reshape(-1)] = g.reshape(-1)
            return out
        return _put_rows(ctx.xp, g, idx, nrows)

    @staticmethod
    def backward(ctx, gg):
        (idx,) = ctx.saved_tensors
        return TakeRows.apply(gg, idx), None, None, None


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
        ctx.x_shape = x.shape
        # one 2-D GEMM over all leading dims (a stacked matmul would loop over them)
        y = (x.reshape(-1, x.shape[-1]) if x.ndim > 2 else x) @ w.T
        if b is not None:
            y += b
        return y.reshape(x.shape[:-1] + (w.shape[0],)) if x.ndim > 2 else y

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        nig = ctx.needs_input_grad
        if not STATE.enabled:  # first derivatives only (no create_graph): the same products on raw arrays
            return _linear_grads_raw(g._data, x, w, nig, ctx.x_shape)
        g2 = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])
        gx = gw = gb = None
        if nig[0]:
            gx = g2 @ w
            gx = gx if g.ndim == 2 else gx.reshape(ctx.x_shape)
        if nig[1]:
            gw = g2.T @ (x if x.ndim == 2 else x.reshape(-1, x.shape[-1]))
        if nig[2]:
            gb = g2.sum(0)
        return gx, gw, gb


def _linear_grads_raw(g, x, w, nig, x_shape):
    g2 = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])
    gx = Tensor._make((g2 @ w._data).reshape(x_shape)) if nig[0] else None
    gw = Tensor._make(g2.T @ x._data.reshape(-1, x_shape[-1])) if nig[1] else None
    gb = Tensor._make(g2.sum(0)) if nig[2] else None
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
            d = (wt @ gc).reshape((c,) + self.ksize + (n,) + self.osize)
            return xp.ascontiguousarray(_col2im(xp, d, self.spatial, self.ksize, stride, lo, hi, dil).swapaxes(0, 1))
        length, taps = math.prod(self.ext), len(self.offs)
        nb = _CHUNK_BYTES // (c * taps * length * gc.dtype.itemsize)
        nb = n if nb < 4 else nb
        buf = xp.zeros((c, n, math.prod(self.padded) + self.tail), dtype=gc.dtype)
        for n0 in range(0, n, nb):
            m = min(nb, n - n0)
            d = (wt @ gc[..., n0 * length:(n0 + m) * length]).reshape(c, taps, m, length)
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
        y = (cols.swapaxes(1, 2) @ w.reshape(groups, o // groups, -1).swapaxes(1, 2)).swapaxes(1, 2).reshape(o, -1)
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
            gb = (Tensor._make((gc @ ctx.xp.ones(gc.shape[-1], dtype=gc.dtype)).reshape(-1)) if gc is not None
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
        gw = (cols @ gc.swapaxes(1, 2)).swapaxes(1, 2)  # (G, O/G, Cg*K)
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
    y, flat = MaxPool.apply(x, k, s, p, hi, d, osize)
    if not batched:
        y, flat = y.squeeze(0), flat.squeeze(0)
    return (y, flat) if return_indices else y


class MaxPool(Function):
    """Max over windows and its argmax, PyTorch's rule: the first maximum in window order wins, a NaN
    propagates (the last NaN wins), and a window whose valid taps are all -inf picks its first valid tap.

    The taps are strided views of the (padded) input. Over short output rows NumPy's per-row overhead
    dominates strided passes, so the taps are first copied into one contiguous (K, N, C, *O) block. The
    max is a chain of ``maximum``s and the winning tap the count of leading taps that differ from it:
    whole-array passes, no masked writes.
    """

    _raw = True
    op_name = "max_pool"

    @staticmethod
    def forward(ctx, x, k, s, p, hi, d, osize):
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
            tid = xp.where(best == fill, first, tid)
        # flat input index: the tap's offset from its window's origin, + the origin
        table = xp.asarray([sum(kp * dd * st for kp, dd, st in zip(kpos, d, steps)) for kpos in kposs],
                           dtype="int64")
        origin = 0
        for i in range(nd):
            o_i = xp.arange(osize[i]).reshape((osize[i],) + (1,) * (nd - 1 - i))
            origin = origin + (o_i * s[i] - p[i]) * steps[i]
        flat = table.take(tid)
        flat += origin
        n, c = x.shape[:2]
        ctx.save_for_backward(xp.arange(n * c).reshape((n, c) + (1,) * nd) * math.prod(spatial) + flat)
        ctx.x_shape = x.shape
        # windows that do not overlap write each input element at most once
        ctx.unique = all(ss >= dd * (kk - 1) + 1 for kk, ss, dd in zip(k, s, d))
        ctx.mark_non_differentiable(flat)
        return best, flat

    @staticmethod
    def backward(ctx, g, _gi=None):
        (rows,) = ctx.saved_tensors
        return PutRows.apply(g, rows, math.prod(ctx.x_shape), ctx.unique).reshape(ctx.x_shape), *(None,) * 6


def _backend_xp(arr):
    from .. import _backend

    return _backend.xp_of(arr)


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
    """max_pool1d returning (values, indices).  >>> wb.max_pool1d_with_indices(wb.ones(1, 1, 4), 2)[1]  ->  [[[0, 2]]]"""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """max_pool2d returning (values, indices).  >>> F.max_pool2d_with_indices(wb.ones(1, 1, 2, 2), 2)[1]  ->  [[[[0]]]]"""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _max_unpool(op, nd, input, indices, kernel_size, stride, padding, output_size):
    k, s, p, _ = _pool_args(op, input, nd, kernel_size, stride, 0)
    p = ntuple(padding, nd, "padding", op)
    batched = input.ndim == nd + 2
    x = input if batched else input.unsqueeze(0)
    idx = indices._data if batched else indices._data[None]
    if output_size is None:
        out = tuple((i - 1) * ss - 2 * pp + kk for i, ss, pp, kk in zip(x.shape[2:], s, p, k))
    else:
        out = tuple(output_size)[-nd:]
    n, c = x.shape[:2]
    area = math.prod(out)
    xp = _backend_xp(idx)
    if idx.size and (bool((idx < 0).any()) or bool((idx >= area).any())):
        raise RuntimeError(f"{op}: Found an invalid max index (the output has {area} elements per channel)")
    rows = xp.arange(n * c).reshape((n, c) + (1,) * nd) * area + idx
    y = Unpool.apply(x.reshape(-1), rows, n * c * area).reshape((n, c) + out)
    return y if batched else y.squeeze(0)


class Unpool(Function):
    """zeros(total) with x written at rows (a repeated row keeps one value, as PyTorch's max_unpool)."""

    _raw = True
    op_name = "max_unpool"

    @staticmethod
    def forward(ctx, x, rows, total):
        out = ctx.xp.zeros(total, dtype=x.dtype)
        out[rows.reshape(-1)] = x.reshape(-1)
        ctx.save_for_backward(rows)
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


def _sep_apply(x, mats):
    """Apply a matrix along each spatial dim (None: identity): the separable linear map of pooling/resizing."""
    nd = len(mats)
    for i, m in enumerate(mats):
        if m is None:
            continue
        ax = x.ndim - nd + i
        mt = Tensor._make(m.T.astype(x._data.dtype))
        if ax == x.ndim - 1:
            x = x @ mt
        else:
            x = (x.transpose(ax, -1) @ mt).transpose(ax, -1)
    return x


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
    xp = _backend_xp(input._data)
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
    from .elementwise import relu

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
    xp = _backend_xp(input._data)
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
    xp = _backend_xp(xd)
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
    xp = _backend_xp(input._data)
    if antialias:
        if align_corners:
            scales = [(n - 1) / (o - 1) if o > 1 else 0.0 for n, o in zip(spatial, out)]
        mats = [_antialias_matrix(xp, mode, n, o, sc) for n, o, sc in zip(spatial, out, scales)]
        return _sep_apply(input, mats)
    kind = mode if mode in ("nearest", "nearest-exact", "bicubic") else "linear"
    mats = [_resize_matrix(xp, kind, n, o, sc, align_corners) for n, o, sc in zip(spatial, out, scales)]
    return _sep_apply(input, mats)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of interpolate.  >>> wb.nn.functional.upsample(wb.ones(1, 1, 2), scale_factor=2).shape"""
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.", UserWarning,
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: interpolate(mode='nearest').  >>> F.upsample_nearest(wb.ones(1, 1, 2), scale_factor=2).shape  ->  [1, 1, 4]"""
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: interpolate(mode='bilinear', align_corners=True).  >>> F.upsample_bilinear(wb.ones(1, 1, 2, 2), scale_factor=2)"""
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
    n, c = input.shape[:2]
    if groups <= 0 or c % groups:
        raise RuntimeError(f"channel_shuffle: number of channels ({c}) must be divisible by groups ({groups})")
    rest = tuple(input.shape[2:])
    x = input.reshape((n, groups, c // groups) + rest).transpose(1, 2)
    return x.reshape((n, c) + rest)



def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """max_pool3d returning (values, indices).  >>> F.max_pool3d_with_indices(wb.ones(1, 1, 2, 2, 2), 2)[1].shape"""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    """adaptive_max_pool1d returning (values, indices).  >>> F.adaptive_max_pool1d_with_indices(wb.ones(1, 1, 4), 2)"""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    """adaptive_max_pool2d returning (values, indices).  >>> F.adaptive_max_pool2d_with_indices(wb.ones(1, 1, 4, 4), 2)"""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    """adaptive_max_pool3d returning (values, indices).  >>> F.adaptive_max_pool3d_with_indices(wb.ones(1, 1, 2, 2, 2), 1)"""
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
    from .elementwise import relu

    return ((out.sign() * relu(out.abs())) * math.prod(k)) ** (1.0 / norm_type)


def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution over (time, batch, channels) input with a (kernel, in, out) weight.

    >>> import workbench as wb
    >>> wb.nn.functional.conv_tbc(wb.ones(5, 2, 3), wb.ones(3, 3, 4), wb.zeros(4)).shape
    workbench.Size([3, 2, 4])
    """
    y = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return y.permute(2, 0, 1)


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
    xp = _backend_xp(theta._data)
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
    from .. import _backend

    xp = _backend.xp_of(c._data)
    d = (c - lo).abs()
    flips = xp.floor(d._data / span)
    extra = d - Tensor._make((flips * span).astype(c._data.dtype))
    even = Tensor._make((flips % 2 == 0).astype(c._data.dtype))
    return even * (extra + lo) + (1 - even) * (hi - extra)


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
    xp = _backend_xp(input._data)
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

    if mode == "nearest":
        out = corner([xp.rint(ci._data).astype("int64") for ci in coords])
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
    xp = _backend_xp(input._data)
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
    xp = _backend_xp(xd)
    if samples is None:
        from .activation import _uniform

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
    """fractional_max_pool2d returning (values, indices).  >>> F.fractional_max_pool2d_with_indices(wb.ones(1, 1, 5, 5), 2, 3)"""
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """fractional_max_pool3d returning (values, indices).  >>> F.fractional_max_pool3d_with_indices(wb.ones(1, 1, 5, 5, 5), 2, 3)"""
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True, _random_samples)


native_channel_shuffle = channel_shuffle

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "bilinear",
           "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "avg_pool1d", "adaptive_avg_pool1d",
           "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"]
