"""3x3 stride-1 convolution by Winograd's F(2x2, 3x3) on the CPU: each 2x2 block of outputs from its 4x4 input
tile with 16 multiplies per channel pair instead of 36.

Why: the digits CNN's second convolution (64x16x8x8 -> 32) as im2col columns and one GEMM costs three
(4608x144)(144x32)-sized products, at OpenBLAS's 110 GFLOP/s about 350 µs each, plus ~190 µs of column
building per product; PyTorch's oneDNN runs the whole forward in ~270 µs. Here the image tiles are
transformed (V = Bᵀ d B, adds only), multiplied by the transformed kernel (U = G w Gᵀ) as 16 GEMMs of
(tiles x C)(C x O), and transformed back (Y = Aᵀ M A): 2.25x fewer multiplies, the same BLAS. The input
gradient is the same convolution of the output gradient with the flipped kernel; the weight gradient is
Gᵀ (Σ Vᵀ (A g Aᵀ)) G. All coefficients are 0, ±1 and ±1/2, so the transforms round no more than the sums
they are; in float32 the result differs from a direct convolution by about the direct form's own
rounding (tests/ops/test_conv_pool.py compares it with PyTorch's float32 error against float64).

Layout: the image goes channels-last (N, H, W, C) with its padding, so a tile's channel vectors are
contiguous; V and M are (16, tiles, channels) planes for the batched matmul, each plane a little longer
than its data (``_planes``): planes a power-of-two apart map to the same L1 sets, and the 16 streams of a
tile transform then evict each other (800 µs instead of 80). Work goes a batch chunk at a time
(``_CHUNK_BYTES``), so no temporary is larger than about a chunk of the transformed tiles. 384 KiB: on the
digits CNN (64x16x8x8 -> 32) 8 chunks of 8 images; with 512 KiB (6 of 11) a training step's peak resident
memory read 2.2-2.6 MiB, with 384 KiB 2.08-2.12 (benchmarks/RESULTS.md, 2026-12-04), at the same speed.

The tile loops are Numba (``fused``'s switch). Without it (``WORKBENCH_NUMBA=0``, no Numba) ops/conv.py keeps
the im2col path: the same transforms as NumPy array passes measured 3.8 ms fwd+bwd on the digits shape, im2col 2.4.
"""
import numpy

from . import fused

_CHUNK_BYTES = 384 << 10  # the transformed tiles and their product, per batch chunk


def usable(a, b, cin, cout):
    """Whether a convolution with cin -> cout channels whose operands are the 4-D arrays a and b takes this
    path: Numba on, NumPy float32/float64 of one dtype, at least 8 channels in and out (with fewer the
    products' inner dimension is too short for 16 GEMMs to beat one im2col GEMM: 64x1x8x8 -> 16 fwd+bwd
    465 µs as im2col, 935 here)."""
    return (type(a) is numpy.ndarray and type(b) is numpy.ndarray and a.dtype == b.dtype and a.dtype.char in "fd"
            and a.ndim == 4 and min(cin, cout) >= 8 and fused.ENABLED[0] and fused._numba() is not None)


# --- the tile transforms (Numba loops) ---------------------------------------------------------------
@fused._loop
def _tiles(p, th, tw, v):
    """v[4i+j, t, c] = (Bᵀ d B)[i, j] of tile t = (n, ty, tx), d = p[n, 2ty:2ty+4, 2tx:2tx+4, c]."""
    t = 0
    for n in range(p.shape[0]):
        for ty in range(th):
            r = 2 * ty
            for tx in range(tw):
                q = 2 * tx
                for c in range(p.shape[3]):
                    t00 = p[n, r, q, c] - p[n, r + 2, q, c]
                    t01 = p[n, r, q + 1, c] - p[n, r + 2, q + 1, c]
                    t02 = p[n, r, q + 2, c] - p[n, r + 2, q + 2, c]
                    t03 = p[n, r, q + 3, c] - p[n, r + 2, q + 3, c]
                    t10 = p[n, r + 1, q, c] + p[n, r + 2, q, c]
                    t11 = p[n, r + 1, q + 1, c] + p[n, r + 2, q + 1, c]
                    t12 = p[n, r + 1, q + 2, c] + p[n, r + 2, q + 2, c]
                    t13 = p[n, r + 1, q + 3, c] + p[n, r + 2, q + 3, c]
                    t20 = p[n, r + 2, q, c] - p[n, r + 1, q, c]
                    t21 = p[n, r + 2, q + 1, c] - p[n, r + 1, q + 1, c]
                    t22 = p[n, r + 2, q + 2, c] - p[n, r + 1, q + 2, c]
                    t23 = p[n, r + 2, q + 3, c] - p[n, r + 1, q + 3, c]
                    t30 = p[n, r + 1, q, c] - p[n, r + 3, q, c]
                    t31 = p[n, r + 1, q + 1, c] - p[n, r + 3, q + 1, c]
                    t32 = p[n, r + 1, q + 2, c] - p[n, r + 3, q + 2, c]
                    t33 = p[n, r + 1, q + 3, c] - p[n, r + 3, q + 3, c]
                    v[0, t, c] = t00 - t02
                    v[1, t, c] = t01 + t02
                    v[2, t, c] = t02 - t01
                    v[3, t, c] = t01 - t03
                    v[4, t, c] = t10 - t12
                    v[5, t, c] = t11 + t12
                    v[6, t, c] = t12 - t11
                    v[7, t, c] = t11 - t13
                    v[8, t, c] = t20 - t22
                    v[9, t, c] = t21 + t22
                    v[10, t, c] = t22 - t21
                    v[11, t, c] = t21 - t23
                    v[12, t, c] = t30 - t32
                    v[13, t, c] = t31 + t32
                    v[14, t, c] = t32 - t31
                    v[15, t, c] = t31 - t33
                t += 1


@fused._loop
def _untiles(m, th, tw, bias, y):
    """y[n, 2ty:2ty+2, 2tx:2tx+2, o] = (Aᵀ M A) of tile t's m[:, t, o] (as 4x4), plus bias[o]."""
    t = 0
    for n in range(y.shape[0]):
        for ty in range(th):
            i = 2 * ty
            for tx in range(tw):
                j = 2 * tx
                for o in range(y.shape[3]):
                    s0 = m[0, t, o] + m[4, t, o] + m[8, t, o]
                    s1 = m[1, t, o] + m[5, t, o] + m[9, t, o]
                    s2 = m[2, t, o] + m[6, t, o] + m[10, t, o]
                    s3 = m[3, t, o] + m[7, t, o] + m[11, t, o]
                    u0 = m[4, t, o] - m[8, t, o] - m[12, t, o]
                    u1 = m[5, t, o] - m[9, t, o] - m[13, t, o]
                    u2 = m[6, t, o] - m[10, t, o] - m[14, t, o]
                    u3 = m[7, t, o] - m[11, t, o] - m[15, t, o]
                    b = bias[o]
                    y[n, i, j, o] = s0 + s1 + s2 + b
                    y[n, i, j + 1, o] = s1 - s2 - s3 + b
                    y[n, i + 1, j, o] = u0 + u1 + u2 + b
                    y[n, i + 1, j + 1, o] = u1 - u2 - u3 + b
                t += 1


@fused._loop
def _grad_tiles(g, th, tw, d):
    """d[4i+j, t, o] = (A h Aᵀ)[i, j] of the 2x2 output-gradient block h = g[n, 2ty:2ty+2, 2tx:2tx+2, o]."""
    t = 0
    for n in range(g.shape[0]):
        for ty in range(th):
            i = 2 * ty
            for tx in range(tw):
                j = 2 * tx
                for o in range(g.shape[3]):
                    h00 = g[n, i, j, o]
                    h01 = g[n, i, j + 1, o]
                    h10 = g[n, i + 1, j, o]
                    h11 = g[n, i + 1, j + 1, o]
                    a0 = h00 + h10
                    a1 = h01 + h11
                    b0 = h00 - h10
                    b1 = h01 - h11
                    d[0, t, o] = h00
                    d[1, t, o] = h00 + h01
                    d[2, t, o] = h00 - h01
                    d[3, t, o] = -h01
                    d[4, t, o] = a0
                    d[5, t, o] = a0 + a1
                    d[6, t, o] = a0 - a1
                    d[7, t, o] = -a1
                    d[8, t, o] = b0
                    d[9, t, o] = b0 + b1
                    d[10, t, o] = b0 - b1
                    d[11, t, o] = -b1
                    d[12, t, o] = -h10
                    d[13, t, o] = -(h10 + h11)
                    d[14, t, o] = -(h10 - h11)
                    d[15, t, o] = h11
                t += 1


# --- the kernel transforms (small: NumPy) -----------------------------------------------------------
_G = numpy.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.0, 0.0, 1.0]])


def _kernel_tiles(w):
    """U (16, C, O) = G w Gᵀ of w (O, C, 3, 3)."""
    g = _G.astype(w.dtype)
    o, c = w.shape[:2]
    u = (w.reshape(o * c * 3, 3) @ g.T).reshape(o * c, 3, 4)  # w Gᵀ, then G (w Gᵀ) per (o, c)
    u = (g @ u).reshape(o, c, 16)
    return numpy.ascontiguousarray(u.transpose(2, 1, 0))


def _kernel_untiles(du):
    """dw (O, C, 3, 3) = Gᵀ dU G of dU (16, C, O)."""
    g = _G.astype(du.dtype)
    c, o = du.shape[1:]
    d = du.transpose(2, 1, 0).reshape(o * c, 4, 4)
    return numpy.ascontiguousarray((g.T @ d @ g).reshape(o, c, 3, 3))


# --- buffers ------------------------------------------------------------------------------------------
def _planes(rows, cols, dtype):
    """(16, rows, cols), each plane 16 elements longer than its data (see the module docstring)."""
    return numpy.empty((16, rows * cols + 16), dtype=dtype)[:, :rows * cols].reshape(16, rows, cols)


@fused._loop
def _to_channels_last(xf, xshape, n0, m, lo0, lo1, pf, hp, wp):
    """pf (m, hp, wp, C) flat, pf[n, a, b, c] = x[n0 + n, c, a - lo0, b - lo1] where that lies inside x (N, C, H,
    W) flat; the other entries (the padding, zeroed once by the caller) are left alone. Reads x's rows whole;
    unsigned indices (no wraparound test: LLVM keeps the copies tight)."""
    _n, c_n, h_n, w_n = xshape
    h0, h1 = max(0, -lo0), min(h_n, hp - lo0)
    w0, w1 = max(0, -lo1), min(w_n, wp - lo1)
    step = numpy.uint64(c_n)
    for n in range(m):
        for h in range(h0, h1):
            dst = numpy.uint64(((n * hp + h + lo0) * wp + w0 + lo1) * c_n)
            for c in range(c_n):
                src = numpy.uint64((((n0 + n) * c_n + c) * h_n + h) * w_n + w0)
                d = dst + numpy.uint64(c)
                for j in range(numpy.uint64(0), numpy.uint64(max(0, w1 - w0))):
                    pf[d + j * step] = xf[src + j]


@fused._loop
def _to_channels_first(tf, m, hh, ww, yf, yshape, n0):
    """y[n0 + n, o, h, w] = t[n, h, w, o] for h, w inside y (N, O, H, W), t (m, hh, ww, O); both flat."""
    _n, o_n, h_n, w_n = yshape
    step = numpy.uint64(o_n)
    for n in range(m):
        for o in range(o_n):
            for h in range(h_n):
                dst = numpy.uint64((((n0 + n) * o_n + o) * h_n + h) * w_n)
                src = numpy.uint64(((n * hh + h) * ww) * o_n + o)
                for j in range(numpy.uint64(0), numpy.uint64(w_n)):
                    yf[dst + j] = tf[src + j * step]


class _Padded:
    """A batch chunk of an NCHW array channels-last inside zeros (m, size[0], size[1], C), at offset lo (negative:
    cropped): one buffer per call, refilled chunk by chunk (the padding stays zero: every chunk writes the same
    entries)."""

    def __init__(self, x, nb, lo, size):
        self.x, self.lo, self.size = x, lo, tuple(size)
        self.flat = numpy.ascontiguousarray(x).reshape(-1)
        self.buf = numpy.zeros((nb,) + self.size + (x.shape[1],), dtype=x.dtype)

    def chunk(self, n0, m):
        _to_channels_last(self.flat, self.x.shape, n0, m, self.lo[0], self.lo[1], self.buf.reshape(-1),
                          self.size[0], self.size[1])
        return self.buf[:m]


def _chunk(n, per_image):
    chunks = -(-n * per_image // _CHUNK_BYTES)
    return -(-n // max(1, chunks))


def _tile_grid(osize):
    return (osize[0] + 1) // 2, (osize[1] + 1) // 2


def _conv_into(x, u, bias, lo, osize, y):
    """y (N, O, *osize) = the convolution of x (N, C, H, W), zero-padded by lo before, with the kernel whose
    transform is u (16, C, O)."""
    n, c = x.shape[:2]
    o = u.shape[2]
    th, tw = _tile_grid(osize)
    nb = min(n, _chunk(n, 16 * th * tw * (c + o) * x.itemsize))
    bias = numpy.zeros(o, dtype=x.dtype) if bias is None else bias
    padded = _Padded(x, nb, lo, (2 * th + 2, 2 * tw + 2))
    v_all = _planes(nb * th * tw, c, x.dtype)
    prod_all = _planes(nb * th * tw, o, x.dtype)
    yt = numpy.empty((nb, 2 * th, 2 * tw, o), dtype=x.dtype)
    yf = y.reshape(-1)
    for n0 in range(0, n, nb):
        m = min(nb, n - n0)
        v, prod = v_all[:, :m * th * tw], prod_all[:, :m * th * tw]
        _tiles(padded.chunk(n0, m), th, tw, v)
        numpy.matmul(v, u, out=prod)
        _untiles(prod, th, tw, bias, yt[:m])
        _to_channels_first(yt.reshape(-1), m, 2 * th, 2 * tw, yf, y.shape, n0)
    return y


def conv(x, w, bias, lo, osize):
    """The 3x3 stride-1 convolution (N, O, *osize) of x (N, C, H, W) with w (O, C, 3, 3), padded by lo
    before (and by zeros after, as far as osize reaches), plus bias (O,) or None."""
    y = numpy.empty((x.shape[0], w.shape[0]) + tuple(osize), dtype=x.dtype)
    return _conv_into(x, _kernel_tiles(w), bias, lo, osize, y)


def input_grad(g, w, lo, spatial):
    """dx (N, C, *spatial) of that convolution from its output gradient g (N, O, *osize): the convolution of
    g with the flipped kernel, g padded by 2 - lo."""
    u = _kernel_tiles(numpy.ascontiguousarray(w[:, :, ::-1, ::-1].swapaxes(0, 1)))
    dx = numpy.empty((g.shape[0], w.shape[1]) + tuple(spatial), dtype=g.dtype)
    return _conv_into(g, u, None, (2 - lo[0], 2 - lo[1]), spatial, dx)


def weight_grad(x, g, lo):
    """dw (O, C, 3, 3) of that convolution from its input x and output gradient g (N, O, *osize):
    Gᵀ (Σ over tiles of Vᵀ (A g Aᵀ)) G, with V the input's tiles."""
    n, c = x.shape[:2]
    o, osize = g.shape[1], g.shape[2:]
    th, tw = _tile_grid(osize)
    nb = min(n, _chunk(n, 16 * th * tw * (c + o) * x.itemsize))
    xs = _Padded(x, nb, lo, (2 * th + 2, 2 * tw + 2))
    gs = _Padded(g, nb, (0, 0), (2 * th, 2 * tw))
    v_all = _planes(nb * th * tw, c, x.dtype)
    d_all = _planes(nb * th * tw, o, x.dtype)
    du = None
    for n0 in range(0, n, nb):
        m = min(nb, n - n0)
        v, d = v_all[:, :m * th * tw], d_all[:, :m * th * tw]
        _tiles(xs.chunk(n0, m), th, tw, v)
        _grad_tiles(gs.chunk(n0, m), th, tw, d)
        part = numpy.matmul(v.transpose(0, 2, 1), d)  # (16, C, O)
        du = part if du is None else du.__iadd__(part)
    return _kernel_untiles(du)
