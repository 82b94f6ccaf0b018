"""One-pass CPU loops compiled with Numba for the activations, normalizations and softmax whose NumPy form
takes several passes over memory (optional: ``pip install workbench[numba]``).

Why: on 1M float32 elements a NumPy pass costs ~0.3-0.4 ms, and PyTorch's fused loop does in one pass what
NumPy needs 2-6 for (a select by mask, a clamp and a scale). A loop here reads its inputs once and writes
its outputs once (~0.3 ms). Numba's own ``exp`` is a scalar libm call (~2 ns an element, five times
NumPy's SIMD one), so the exp-based loops (sigmoid, silu, both GELUs, glu, the elu family, softplus's gradient, the softmax
family) call ``_exp``,
a float32 polynomial written in arithmetic LLVM vectorises (with a bit cast for the power of two), ~0.45 ms
per 1M elements as a loop of its own, NumPy's ``exp`` speed, and nothing to pay again for what follows it.
The softplus family calls ``_log1p``, a polynomial too: NumPy's float32 ``exp``, ``log`` and ``log1p`` are SIMD
only on CPUs with AVX-512, and elsewhere (an AMD EPYC with AVX2) scalar calls of 2-10 ns an element.

Loops select rather than branch where an element's case is data (a branch on random signs mispredicts: 8 ns an
entry), and index from unsigned offsets where an index is a sum (``i + shift`` makes Numba test for a negative
index and wrap it, and LLVM then leaves the loop scalar).

Constants come in the input's dtype (the caller rounds them as PyTorch does, leaky_relu's slope to
float32), so the arithmetic is PyTorch's, in its order. Every caller keeps its NumPy form, the same formulas,
for when ``usable`` says no: Numba not installed, ``WORKBENCH_NUMBA=0``, CuPy arrays, other dtypes, or arrays
under a caller's ``min_size``. The loops serve any size by default (``MIN_SIZE`` is 1): a call costs ~0.5-1 us,
and on a small array NumPy's form pays more than that per pass (a softmax over 8 x 16 took 7 us in five
NumPy calls and an ``errstate``, 0.7 us as the loop). Each loop compiles on its first call and is cached on
disk (``cache=True``), so a new process loads it in milliseconds.
"""
import math
import os
import sys

import numpy

MIN_SIZE = 1
ENABLED = [os.environ.get("WORKBENCH_NUMBA", "1") != "0"]  # tests switch it off to run the NumPy forms
_NUMBA = []  # [the numba module or None], looked up on first use


def _numba():
    if not _NUMBA:
        try:
            import numba
        except ImportError:
            numba = None
        _NUMBA.append(numba)
    return _NUMBA[0]


_F32, _F64 = numpy.dtype(numpy.float32), numpy.dtype(numpy.float64)  # native byte order (NumPy's singletons)


def usable(*arrays, min_size=MIN_SIZE):
    """Whether the loops serve these arrays: C-contiguous NumPy float32/float64 of one dtype, the first at
    least ``min_size`` elements, and Numba importable and not switched off."""
    a = arrays[0]
    if not (ENABLED[0] and a.__class__ is numpy.ndarray and a.size >= min_size
            and ((dt := a.dtype) is _F32 or dt is _F64) and a.flags.c_contiguous and (_NUMBA[0] if _NUMBA else _numba()) is not None):
        return False
    for b in arrays[1:]:  # a loop, not all() over a generator: this runs before every loop call
        if not (b.__class__ is numpy.ndarray and b.dtype is dt and b.flags.c_contiguous):
            return False
    return True


def usable32(*arrays, min_size=MIN_SIZE):
    """``usable``, and float32: the loops built on ``_exp`` (a float32 polynomial)."""
    return arrays[0].dtype is _F32 and usable(*arrays, min_size=min_size)


_HELPERS = []  # functions the loops call: compiled (and inlined into them) before a loop compiles
_HELPERS_READY = []  # [True] once the intrinsics exist; _HELPERS[:_COMPILED[0]] are compiled
_COMPILED = [0]


def _helper(fn=None, **options):
    """Marks a function the loops call (of this module or another: ``depthwise``); Numba compiles it with
    ``options`` (default: inlined) in place, in its module, before the next loop compiles."""
    def mark(f):
        _HELPERS.append((f.__module__, f.__name__, options or {"inline": "always"}))
        return f
    return mark(fn) if fn is not None else mark


def _compile_helpers():
    if _HELPERS_READY:
        _compile_new_helpers()
        return
    nb = _numba()
    from llvmlite import ir
    from numba.core import types

    @nb.extending.intrinsic
    def bits(typingctx, i):  # the float32 whose bit pattern is the int32 i (LLVM's bitcast: no instruction)
        if i != types.int32:
            return None
        return types.float32(types.int32), lambda context, builder, sig, args: builder.bitcast(args[0], ir.FloatType())

    @nb.extending.intrinsic
    def ibits(typingctx, f):  # the int32 whose bit pattern is the float32 f
        if f != types.float32:
            return None
        return types.int32(types.float32), lambda context, builder, sig, args: builder.bitcast(args[0], ir.IntType(32))

    @nb.extending.intrinsic
    def fma(typingctx, a, b, c):  # a * b + c rounded once (LLVM's fma: the instruction where the CPU has it)
        if not (a == b == c and isinstance(a, types.Float)):
            return None
        return a(a, a, a), lambda context, builder, sig, args: builder.fma(*args)

    g = globals()
    g["_bits"] = bits
    g["_ibits"] = ibits
    g["_fma"] = fma
    _HELPERS_READY.append(True)
    _compile_new_helpers()


def _compile_new_helpers():
    nb = _numba()
    while _COMPILED[0] < len(_HELPERS):
        module, name, options = _HELPERS[_COMPILED[0]]
        g = sys.modules[module].__dict__
        g[name] = nb.njit(**options)(g[name])
        _COMPILED[0] += 1


class _loop:
    """A Python loop compiled by Numba on its first call. Once compiled, Numba's dispatcher takes this
    wrapper's place in the module, so a call through ``fused.<name>`` pays no Python frame (~0.25 us of a
    ~1 us call on a small array)."""

    fastmath = False

    def __init__(self, fn):
        self.py, self.jit = fn, None
        self.__doc__, self.__name__ = fn.__doc__, fn.__name__

    def __call__(self, *args):
        if self.jit is None:
            _compile_helpers()
            self.jit = _numba().njit(cache=True, nogil=True, error_model="numpy", fastmath=self.fastmath)(self.py)
            g = globals()
            if g.get(self.__name__) is self:
                g[self.__name__] = self.jit
        return self.jit(*args)


class _fma_loop(_loop):
    """A loop whose a * b + c LLVM may fuse into one rounding (the polynomials of ``_exp``, ``_erfc``);
    nothing else is relaxed, so NaN and inf propagate."""

    fastmath = {"contract"}


class _sums_loop(_loop):
    """A loop whose float64 sums LLVM may reassociate (vectorised accumulation) and nothing else, so NaN and
    inf still propagate."""

    fastmath = {"reassoc"}


# --- scatter-add: NumPy's add.at, row by row or element by element, in the same order (the same sums) --------
@_loop
def add_rows_at(out, idx, vals):
    """out[idx[i]] += vals[i] for i in order (``np.add.at(out, idx, vals)`` on rows: a gather's backward,
    index_add_); out (n, m), idx (k,) in [0, n), vals (k, m)."""
    k, m = vals.shape
    for i in range(k):
        o = out[idx[i]]
        v = vals[i]
        for j in range(m):
            o[j] += v[j]


@_loop
def add_flat_at(out, idx, vals):
    """out[idx[i]] += vals[i] for i in order, on flat arrays (``np.add.at`` with a full index: scatter_add)."""
    for i in range(idx.size):
        out[idx[i]] += vals[i]


# --- col2im: a transposed convolution's (and fold's) scatter of window columns -----------------------------
@_loop
def col2im2d(cols, shape, sh, sw, dh, dw, out, hf, wf):
    """out[a, b, oh*sh + kh*dh, ow*sw + kw*dw] += cols[a, kh, kw, b, oh, ow], tap by tap in (kh, kw) order as
    ``ops._windows._col2im``'s strided adds (the same sums); cols and out (A, B, hf, wf) flat, ``shape`` cols'
    (A, KH, KW, B, OH, OW). Unsigned indices: no wraparound test, which would keep the loop scalar."""
    a_n, kh_n, kw_n, b_n, oh_n, ow_n = shape
    u = numpy.uint64
    step = u(sw)
    for a in range(a_n):
        for kh in range(kh_n):
            for kw in range(kw_n):
                for b in range(b_n):
                    src = u(((((a * kh_n + kh) * kw_n + kw) * b_n + b) * oh_n) * ow_n)
                    for oh in range(oh_n):
                        dst = u(((a * b_n + b) * hf + oh * sh + kh * dh) * wf + kw * dw)
                        row = src + u(oh * ow_n)
                        for ow in range(u(0), u(ow_n)):
                            out[dst + ow * step] += cols[row + ow]


# --- layout (2-D arrays) ---------------------------------------------------------------------------------
@_loop
def transpose_add(yt, b, bias, out):  # out[i, j] = yt[j, i], + b[j] with ``bias``: linear's product computed
    n, m = yt.shape                   # transposed (``blas.transposed_product_pays``) put back in rows, with its
    m8, n8 = m - m % 8, n - n % 8     # bias added in the same pass (the sum rounded as NumPy's y += b), by 8x8
    for i0 in range(0, m8, 8):        # tiles: both sides' cache lines stay in L1 (half the time of a row walk
        for j0 in range(0, n8, 8):    # that reads yt a column at a time), then the edge rows and columns
            for i in range(i0, i0 + 8):
                for j in range(j0, j0 + 8):
                    out[i, j] = yt[j, i] + b[j] if bias else yt[j, i]
        for i in range(i0, i0 + 8):
            for j in range(n8, n):
                out[i, j] = yt[j, i] + b[j] if bias else yt[j, i]
    for i in range(m8, m):
        for j in range(n):
            out[i, j] = yt[j, i] + b[j] if bias else yt[j, i]


@_loop
def col_sums(g, out):  # out[j] = sum of g[:, j], rows added in order from 0.0: NumPy's g.sum(0) on C rows of >= 2
    rows, cols = g.shape  # columns, bit for bit (one column would be a contiguous, pairwise sum), at half its
    for j in range(cols):  # cost on the digits MLP's bias gradients (a call, not a reduction's setup)
        out[j] = 0.0
    for i in range(rows):
        for j in range(cols):
            out[j] += g[i, j]


# --- rectifiers and piecewise-linear activations (flat arrays) -----------------------------------------
@_loop
def relu(x, out):  # PyTorch's clamp_min(x, 0): x < 0 ? 0 : x (NaN and -0.0 kept)
    for i in range(x.size):
        v = x[i]
        out[i] = 0.0 if v < 0 else v


@_loop
def relu_grad(g, y, out):  # PyTorch's threshold_backward(g, y, 0): y <= 0 ? 0 : g (an inf g below gives 0)
    for i in range(y.size):
        out[i] = 0.0 if y[i] <= 0 else g[i]


@_loop
def leaky_relu(x, out, s):
    for i in range(x.size):
        v = x[i]
        out[i] = v if v > 0 else v * s


@_loop
def leaky_relu_grad(g, x, out, s):
    for i in range(x.size):
        out[i] = g[i] if x[i] > 0 else g[i] * s


@_loop
def hardswish(x, out, zero, three, six):  # x * clip(x + 3, 0, 6) / 6 in x's dtype, PyTorch's order (x * 6
    for i in range(x.size):               # overflows to inf in float32 as there)
        v = x[i]
        out[i] = v * min(max(v + three, zero), six) / six


@_loop
def hardswish_grad(g, x, out, three, half):  # PyTorch's: 0 up to -3, g from 3 on, g * (x / 3 + 0.5) between
    for i in range(x.size):                    # (so NaN for a NaN x)
        v = x[i]
        out[i] = 0.0 if v <= -three else (g[i] if v >= three else g[i] * (v / three + half))


@_loop
def hardsigmoid(x, out, mask, zero, three, six):  # clip(x + 3, 0, 6) / 6 in x's dtype, and where the slope
    for i in range(x.size):                         # is 1/6
        v = x[i]
        out[i] = min(max(v + three, zero), six) / six
        mask[i] = -three < v < three


@_loop
def hardshrink(x, out, mask, lambd):
    for i in range(x.size):
        v = x[i]
        m = v > lambd or v < -lambd
        out[i] = v if m else v - v  # 0. (not -0.), and NaN kept, as PyTorch's
        mask[i] = m


@_loop
def softshrink(x, out, mask, lambd):  # x - clip(x, -l, l) in one pass: the same arithmetic, so the same bits
    for i in range(x.size):  # (selects and one store each, not branches: random signs mispredicted 8 ns an entry)
        v = x[i]
        hi = v > lambd
        lo = v < -lambd
        out[i] = v - lambd if hi else (v + lambd if lo else v - v)  # 0. (not -0.) between, and NaN kept
        mask[i] = hi | lo


@_loop
def threshold(x, out, mask, th, value):  # PyTorch's x <= th ? value : x, and the slope-1 mask (NaN passes)
    for i in range(x.size):
        v = x[i]
        m = not v <= th
        out[i] = v if m else value
        mask[i] = m


@_loop
def sign(x, out, one):  # 1, -1 or 0 (+0. for +-0. and NaN, as PyTorch's): selects, one pass
    zero = one - one
    for i in range(x.size):
        v = x[i]
        out[i] = one if v > zero else (-one if v < zero else zero)


@_loop
def mask_mul(g, mask, out, slope):  # the piecewise activations' backward: g * slope where the mask holds
    zero = slope - slope  # in g's dtype: a select of one type, which LLVM vectorises (a float64 0.0 kept a branch)
    for i in range(g.size):
        v = g[i] * slope
        out[i] = v if mask[i] else zero


# --- layer norm over the rows of a 2-D C-contiguous array: statistics in float64 on a row in L1 -------------
@_sums_loop
def layer_norm(x, w, b, out, mean, rstd, var, eps, affine):  # var: the biased variance per row
    rows, cols = x.shape
    for r in range(rows):
        s = 0.0
        for j in range(cols):
            s += x[r, j]
        mu = s / cols
        q = 0.0
        for j in range(cols):
            d = x[r, j] - mu
            q += d * d
        v = q / cols
        mean[r], rstd[r], var[r] = mu, 1.0 / numpy.sqrt(v + eps), v
        mu, rs = mean[r], rstd[r]  # in x's dtype: the affine pass at its vector width, as the backward's
        if affine:
            for j in range(cols):
                out[r, j] = (x[r, j] - mu) * rs * w[j] + b[j]
        else:
            for j in range(cols):
                out[r, j] = (x[r, j] - mu) * rs


@_sums_loop
def layer_norm_grad(g, x, w, mean, rstd, dx, dw, db):
    """dx = rstd (g w - mean(g w) - xhat mean(g w xhat)) per row (w all ones without a weight); dw += g xhat
    and db += g (float64). The row sums are float64; dx is computed in x's dtype (the sums cast to it
    through a one-element array of that dtype), so float32 rows run at float32's vector width."""
    rows, cols = x.shape
    cast = numpy.empty(2, x.dtype)
    for r in range(rows):
        mu, rs = mean[r], rstd[r]
        a = 0.0
        c = 0.0
        for j in range(cols):
            gw = g[r, j] * w[j]
            a += gw
            c += gw * ((x[r, j] - mu) * rs)
        cast[0], cast[1] = a / cols, c / cols
        am, cm = cast[0], cast[1]
        for j in range(cols):
            gv = g[r, j]
            xh = (x[r, j] - mu) * rs
            dw[j] += gv * xh
            db[j] += gv
            dx[r, j] = rs * (gv * w[j] - am - xh * cm)


@_sums_loop
def row_norm_grad(g, x, mean, rstd, dx):
    """layer_norm_grad without a weight and without dw, db (the row-wise Normalize's: group norm, instance
    norm): dx = rstd (g - mean(g) - xhat mean(g xhat)), float64 row sums, dx in x's dtype."""
    rows, cols = x.shape
    cast = numpy.empty(2, x.dtype)
    for r in range(rows):
        mu, rs = mean[r], rstd[r]
        a = 0.0
        c = 0.0
        for j in range(cols):
            gv = g[r, j]
            a += gv
            c += gv * ((x[r, j] - mu) * rs)
        cast[0], cast[1] = a / cols, c / cols
        am, cm = cast[0], cast[1]
        for j in range(cols):
            dx[r, j] = rs * (g[r, j] - am - ((x[r, j] - mu) * rs) * cm)


# --- batch norm: statistics per channel of an (N, C, M) C-contiguous array, float64 sums ------------------
@_sums_loop
def channel_norm(x, out, mean, var, rstd, eps):
    """out = (x - mean_c) rstd_c, the statistics over dims 0 and 2 (two passes for them, one for out)."""
    n, c, m = x.shape
    cnt = n * m
    s = numpy.zeros(c)
    for i in range(n):
        for k in range(c):
            a = 0.0
            for j in range(m):
                a += x[i, k, j]
            s[k] += a
    for k in range(c):
        mean[k] = s[k] / cnt
        s[k] = 0.0
    for i in range(n):
        for k in range(c):
            mu = mean[k]
            q = 0.0
            for j in range(m):
                d = x[i, k, j] - mu
                q += d * d
            s[k] += q
    for k in range(c):
        var[k] = s[k] / cnt
        rstd[k] = 1.0 / numpy.sqrt(s[k] / cnt + eps)
    for i in range(n):
        for k in range(c):
            mu, rs = mean[k], rstd[k]
            for j in range(m):
                out[i, k, j] = (x[i, k, j] - mu) * rs


@_sums_loop
def channel_norm_grad(g, x, w, mean, rstd, dx, dw, db):
    """dw_c = sum g xhat, db_c = sum g (float64), then dx = rstd w (g - db / cnt - xhat dw / cnt)."""
    n, c, m = x.shape
    cnt = n * m
    for i in range(n):
        for k in range(c):
            mu, rs = mean[k], rstd[k]
            a = 0.0
            b = 0.0
            for j in range(m):
                gv = g[i, k, j]
                a += gv * ((x[i, k, j] - mu) * rs)
                b += gv
            dw[k] += a
            db[k] += b
    cast = numpy.empty(3 * c, x.dtype)
    for k in range(c):
        cast[k], cast[c + k], cast[2 * c + k] = db[k] / cnt, dw[k] / cnt, w[k] * rstd[k]
    for i in range(n):
        for k in range(c):
            mu, rs, bm, wm, sc = mean[k], rstd[k], cast[k], cast[c + k], cast[2 * c + k]
            for j in range(m):
                xh = (x[i, k, j] - mu) * rs
                dx[i, k, j] = sc * (g[i, k, j] - bm - xh * wm)


# --- exp-based activations (float32): e**x as a polynomial LLVM vectorises -------------------------------
_F = numpy.float32
_F0, _F1 = _F(0.0), _F(1.0)
_LOG2E, _ROUND, _LN2_HI, _LN2_LO = _F(1.44269504088896341), _F(12582912.0), _F(0.693359375), _F(-2.12194440e-4)
_EXP_P = tuple(map(_F, (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
                        5.0000001201e-1)))
# below _LO (ln of float32's smallest normal, 1.18e-38) e**x is 0: see _exp
_LO, _HI, _ZERO, _HALF, _ONE = _F(-87.33654), _F(89.0), _F(0.0), _F(0.5), _F(1.0)
_INF = _F(numpy.inf)
_EM1_LO = _F(-0.7)
_EM1_Q = tuple(_F(1.0 / math.factorial(k)) for k in range(9, 1, -1))  # 1/9! ... 1/2!


def _fma(a, b, c):  # replaced by an intrinsic in _compile_helpers
    return a * b + c


def _bits(i):  # replaced by an intrinsic in _compile_helpers
    raise RuntimeError("fused._bits runs compiled only")


def _ibits(f):  # replaced by an intrinsic in _compile_helpers
    raise RuntimeError("fused._ibits runs compiled only")


@_helper
def _exp(x):
    """e**x in float32 (Cephes' expf: x = n ln 2 + r, a degree-6 polynomial in r, times 2**n), within 2 ulp
    of the true value where that is a normal float32; below -87.34, where it would be denormal, 0 (as
    PyTorch's sigmoid, softmax and GELU give there); above 89 inf; NaN stays NaN (the compares are false).
    A lane below -87.34 computes e**0 and is set to 0 at the end: a product that makes or reads a denormal costs
    a microcode assist (~100 cycles on x86), which every large negative argument paid (sigmoid and softmax on
    inputs of standard deviation 40 took up to 3.6x PyTorch's time)."""
    under = x < _LO
    x = _ZERO if under else x
    x = _HI if x > _HI else x
    n = (x * _LOG2E + _ROUND) - _ROUND  # round to the nearest integer (adding 1.5 * 2**23 drops the fraction)
    r = x - n * _LN2_HI
    r = r - n * _LN2_LO
    p0, p1, p2, p3, p4, p5 = _EXP_P
    p = ((((p0 * r + p1) * r + p2) * r + p3) * r + p4) * r + p5
    p = p * (r * r) + r + _ONE
    k = numpy.int32(n)
    h = k >> 1
    y = p * _bits(numpy.int32((h + 127) << 23)) * _bits(numpy.int32((k - h + 127) << 23))
    return _ZERO if under else y


_SQRT2, _TWO, _FOUR, _TWENTY = _F(1.41421356), _F(2.0), _F(4.0), _F(20.0)
# Cephes' logf: log(1 + f) = f - f**2/2 + f**3 P(f) for 1 + f in [sqrt(1/2), sqrt(2))
_LOG_P = tuple(map(_F, (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
                        -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)))


@_helper
def _log1p(z):
    """log(1 + z) in float32 for z >= 0 (inf stays inf, NaN NaN), within 2 ulp: u = 1 + z rounded, log u from its
    exponent and a degree-8 polynomial of its mantissa (Cephes' logf), plus (z - (u - 1)) / u, the part of z the
    rounding of u dropped. NumPy's float32 log1p is a scalar libm call without AVX-512 (10 ns an element on an
    AMD EPYC: softplus, logsigmoid and mish took 3x PyTorch's time there); this is arithmetic LLVM vectorises."""
    u = _ONE + z
    i = _ibits(u)
    e = (i >> 23) - 127
    m = _bits(numpy.int32((i & 0x7FFFFF) | 0x3F800000))  # u / 2**e, in [1, 2)
    big = m > _SQRT2
    m = m * _HALF if big else m
    e = e + 1 if big else e
    f = m - _ONE
    ff = f * f
    p0, p1, p2, p3, p4, p5, p6, p7, p8 = _LOG_P
    p = ((((((((p0 * f + p1) * f + p2) * f + p3) * f + p4) * f + p5) * f + p6) * f + p7) * f + p8) * f * ff
    k = _F(e)
    r = f + (p - _HALF * ff + k * _LN2_LO) + k * _LN2_HI + (z - (u - _ONE)) / u
    return r if u < _INF else u  # inf, NaN


@_helper
def _softplus_tail(v):
    """log(1 + e**-|v|): softplus(v) = max(v, 0) + this, log sigmoid(v) = min(v, 0) - this, with no overflow."""
    return _log1p(_exp(-abs(v)))


@_helper
def _sigmoid(v):
    """1 / (1 + e**-v), as e / (1 + e) with e = e**v below 0, so neither side overflows and tiny results
    (down to denormals) keep their digits."""
    e = _exp(-abs(v))
    return (_ONE if v >= _ZERO else e) / (_ONE + e)


@_fma_loop
def softplus_grad(g, x, out, beta, threshold):  # g sigmoid(beta x), g itself above the threshold
    for i in range(x.size):
        z = x[i] * beta
        out[i] = g[i] if z > threshold else _sigmoid(z) * g[i]


@_fma_loop
def softplus(x, out, beta, threshold):  # log(1 + e**(beta x)) / beta, x where beta x > threshold
    for i in range(x.size):
        z = x[i] * beta
        y = ((z if z > _ZERO else _ZERO) + _softplus_tail(z)) / beta
        out[i] = x[i] if z > threshold else y


@_fma_loop
def softplus_tail(x, out):  # log(1 + e**-|x|): binary_cross_entropy_with_logits' sum
    for i in range(x.size):
        out[i] = _softplus_tail(x[i])


@_fma_loop
def logsigmoid(x, out):  # min(x, 0) - log(1 + e**-|x|)
    for i in range(x.size):
        v = x[i]
        out[i] = (v if v < _ZERO else _ZERO) - _softplus_tail(v)


@_fma_loop
def logsigmoid_grad(g, x, out):  # g / (1 + e**x) (sigmoid(-x) g)
    for i in range(x.size):
        out[i] = g[i] / (_ONE + _exp(x[i]))


@_helper
def _mish_n(v):  # n = e**v (e**v + 2): tanh(softplus(v)) = n / (n + 2), with no cancellation for small n
    e = _exp(v if v < _TWENTY else _TWENTY)
    return e * (e + _TWO), e


@_fma_loop
def mish(x, out):  # x tanh(softplus(x)); x above 20 (softplus's threshold, where the tanh is 1 in float32)
    for i in range(x.size):
        v = x[i]
        n, _e = _mish_n(v)
        out[i] = v if v > _TWENTY else v * (n / (n + _TWO))


@_fma_loop
def mish_grad(g, x, out):  # (t + x sigmoid(x) (1 - t**2)) g, t = n / (n + 2), 1 - t**2 = 4 (n + 1) / (n + 2)**2
    for i in range(x.size):
        v = x[i]
        n, e = _mish_n(v)
        d = n + _TWO
        t = n / d
        s = e / (_ONE + e)
        r = t + v * s * (_FOUR * (n + _ONE) / (d * d))
        out[i] = (g[i] if v > _TWENTY else r * g[i])


@_fma_loop
def sigmoid(x, out):
    for i in range(x.size):
        out[i] = _sigmoid(x[i])


@_loop
def sigmoid_grad_from_y(g, y, out, one):  # (1 - y) y g, PyTorch's order
    for i in range(y.size):
        out[i] = (one - y[i]) * y[i] * g[i]


@_fma_loop
def silu(x, out):
    for i in range(x.size):
        out[i] = x[i] * _sigmoid(x[i])


@_fma_loop
def silu_grad(g, x, out):  # s (1 + x (1 - s)) g
    for i in range(x.size):
        v = x[i]
        s = _sigmoid(v)
        out[i] = s * (_ONE + v * (_ONE - s)) * g[i]


# --- recurrent cells (float32): the gate activations and the state update of one time step in one pass -------
_TANH_SMALL, _TWO = _F(0.625), _F(2.0)
_TANH_P = tuple(map(_F, (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
                         -3.33332819422e-1)))


@_helper
def _tanh(v):
    """tanh in float32 (Cephes' tanhf): below 0.625 in magnitude v + v z P(z), z = v^2, an odd polynomial (0 and
    -0. and denormals come back as they are); above, 1 - 2 / (e**2|v| + 1) with v's sign (+-1 from 9 on, inf
    included). Within 2 ulp of the true value; NaN stays NaN."""
    a = abs(v)
    z = v * v
    p0, p1, p2, p3, p4 = _TANH_P
    p = v + v * (z * ((((p0 * z + p1) * z + p2) * z + p3) * z + p4))
    t = math.copysign(_ONE - _TWO / (_exp(a + a) + _ONE), v)
    p = v if z == _ZERO else p
    return p if a < _TANH_SMALL else t  # selects, not branches: the loops stay vectorised


# Each loop reads and writes whole rows through 1-D views, a few arrays per inner loop: with the seven arrays
# of a step in one loop LLVM could not rule out their overlap and kept it scalar (5x slower)
@_fma_loop
def lstm_cell(gi, gh, c, h2, c2, act, tc):
    """PyTorch's LSTM cell after its two products: the gates gh + gi (rows of i, f, g, o, each H wide), then
    c2 = f c + i g and h2 = o tanh(c2). Also writes the activations (sigmoid i, f, o and tanh g, in the gates'
    layout) and tanh(c2): what ``lstm_cell_grad`` reads."""
    rows, H = c.shape
    for r in range(rows):
        a, x, y = act[r], gi[r], gh[r]
        for j in range(2 * H):
            a[j] = _sigmoid(y[j] + x[j])
        for j in range(2 * H, 3 * H):
            a[j] = _tanh(y[j] + x[j])
        for j in range(3 * H, 4 * H):
            a[j] = _sigmoid(y[j] + x[j])
        cr, cn = c[r], c2[r]
        for j in range(H):
            cn[j] = a[H + j] * cr[j] + a[j] * a[2 * H + j]
        t = tc[r]
        for j in range(H):
            t[j] = _tanh(cn[j])
        hr = h2[r]
        for j in range(H):
            hr[j] = a[3 * H + j] * t[j]


@_loop
def lstm_cell_grad(dh2, dc2, c, act, tc, dgates, dc, one):
    """The gradient of the gates (one array for both products' outputs) and of c, from those of h2 and c2:
    dc2 + dh2 o (1 - tanh(c2)^2) = d, then d g i (1 - i), d c f (1 - f), d i (1 - g^2), dh2 tanh(c2) o (1 - o),
    and dc = d f."""
    rows, H = c.shape
    for r in range(rows):
        a, t, gh, dr = act[r], tc[r], dh2[r], dc[r]
        d = dc2[r]
        for j in range(H):  # dc holds d until its last loop
            dr[j] = gh[j] * a[3 * H + j] * (one - t[j] * t[j]) + d[j]
        dg, cr = dgates[r], c[r]
        for j in range(H):
            dg[j] = dr[j] * a[2 * H + j] * a[j] * (one - a[j])
        for j in range(H):
            dg[H + j] = dr[j] * cr[j] * a[H + j] * (one - a[H + j])
        for j in range(H):
            dg[2 * H + j] = dr[j] * a[j] * (one - a[2 * H + j] * a[2 * H + j])
        for j in range(H):
            dg[3 * H + j] = gh[j] * t[j] * a[3 * H + j] * (one - a[3 * H + j])
        for j in range(H):
            dr[j] = dr[j] * a[H + j]


@_fma_loop
def gru_cell(gi, gh, h, h2, act):
    """PyTorch's GRU cell after its two products (rows of r, z, n, each H wide): r = sigmoid(gh_r + gi_r),
    z = sigmoid(gh_z + gi_z), n = tanh(gi_n + r gh_n), h2 = (h - n) z + n. Also writes r, z, n (``act``)."""
    rows, H = h.shape
    for k in range(rows):
        a, x, y = act[k], gi[k], gh[k]
        for j in range(2 * H):
            a[j] = _sigmoid(y[j] + x[j])
        for j in range(H):
            a[2 * H + j] = _tanh(x[2 * H + j] + y[2 * H + j] * a[j])
        hr, ho = h[k], h2[k]
        for j in range(H):
            ho[j] = (hr[j] - a[2 * H + j]) * a[H + j] + a[2 * H + j]


@_loop
def gru_cell_grad(dh2, h, gh, act, dgi, dgh, dh, one):
    """The gradients of both products' outputs and of h, from h2's: dn = dh2 (1 - z)(1 - n^2),
    dz = dh2 (h - n) z (1 - z), dr = dn gh_n r (1 - r); d gi = (dr, dz, dn), d gh = (dr, dz, dn r), dh = dh2 z."""
    rows, H = h.shape
    for k in range(rows):
        a, g, x, y = act[k], dh2[k], dgi[k], gh[k]
        for j in range(H):
            x[2 * H + j] = g[j] * (one - a[H + j]) * (one - a[2 * H + j] * a[2 * H + j])
        hr = h[k]
        for j in range(H):
            x[H + j] = g[j] * (hr[j] - a[2 * H + j]) * a[H + j] * (one - a[H + j])
        for j in range(H):
            x[j] = x[2 * H + j] * y[2 * H + j] * a[j] * (one - a[j])
        z = dgh[k]
        for j in range(2 * H):
            z[j] = x[j]
        for j in range(H):
            z[2 * H + j] = x[2 * H + j] * a[j]
        d = dh[k]
        for j in range(H):
            d[j] = g[j] * a[H + j]


@_helper
def _expm1_neg(v):
    """e**v - 1 for v <= 0 (and NaN) in float32: above -0.7 a degree-9 Taylor polynomial (no cancellation;
    truncation below 0.3 ulp), below it _exp(v) - 1, where e**v < 1/2 and the subtraction loses nothing."""
    if v < _EM1_LO:
        return _exp(v) - _ONE
    q0, q1, q2, q3, q4, q5, q6, q7 = _EM1_Q
    return v * (((((((((q0 * v + q1) * v + q2) * v + q3) * v + q4) * v + q5) * v + q6) * v + q7) * v + _ONE))


@_fma_loop
def elu(x, out, scale, c, input_scale):  # x scale above 0, expm1(input_scale x) c at and below (c = alpha scale)
    for i in range(x.size):
        v = x[i]
        out[i] = v * scale if v > 0 else _expm1_neg(v * input_scale) * c


@_fma_loop
def elu_grad(g, x, out, scale, c, input_scale):  # g scale above 0, g c e**(input_scale x) at and below (elu,
    for i in range(x.size):                      # selu, celu: c = alpha scale input_scale)
        v = x[i]
        out[i] = scale * g[i] if v > 0 else _exp(v * input_scale) * c * g[i]


@_fma_loop
def glu(x, out, s):
    """a sigmoid(b) and the saved sigmoid(b), x: the (outer, 2, inner) view of the input whose [:, 0] is a
    and [:, 1] is b; out and s (outer, inner)."""
    outer, _, inner = x.shape
    for r in range(outer):
        for j in range(inner):
            v = _sigmoid(x[r, 1, j])
            s[r, j] = v
            out[r, j] = x[r, 0, j] * v


@_loop
def glu_grad(x, g, s, dx, one):
    """glu's dx in one pass: g s into the first half, (1 - s) a (g s) into the second (the NumPy form's
    order); x and dx the (outer, 2, inner) views, g and s (outer, inner)."""
    outer, _, inner = x.shape
    for r in range(outer):
        for j in range(inner):
            sv = s[r, j]
            ga = g[r, j] * sv
            dx[r, 0, j] = ga
            dx[r, 1, j] = (one - sv) * x[r, 0, j] * ga


# GELU: Phi(x) = erfc(-x / sqrt 2) / 2, erfc(z) = t P(t) e**-z^2, t = 1 / (1 + p z) for z >= 0 (Abramowitz &
# Stegun 7.1.26, |error| < 1.5e-7: the NumPy form's and PyTorch's CPU erf); below 0 Phi is that half-erfc
# itself, so the negative tail keeps its digits instead of cancelling in 1 - (1 - h)
_AS_P = _F(0.3275911)
_AS_A = tuple(map(_F, (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)))
_INV_SQRT2, _INV_SQRT_2PI = _F(0.7071067811865476), _F(0.3989422804014327)


# Each product that makes or reads a denormal costs a microcode assist (~100 cycles on x86): exact GELU on
# pre-activations of standard deviation 10 took 5-7x PyTorch's time. So no lane makes one unless its result is
# one: the negative side is (x t P(t) / 2) e**-z^2, each factor normal (not x (t P(t) / 2 e**-z^2), whose right
# factor goes denormal from |x| ~ 12.9); past z^2 = 86.41 (|x| > 13.15) its value is below float32's smallest
# normal and is -0. (its slope below 1e-36 is 0; PyTorch's forward gives -0. from |x| ~ 5.5); past z = 4.5 the
# positive side is x (its slope 1) exactly. Those lanes compute on a stand-in z of 0 and select.
_ZZ_FAR, _ZZ_FLAT, _INF = _F(86.41), _F(20.25), _F(math.inf)


@_helper
def _half_erfc(z, zz):
    """(t P(t) / 2, e**-zz) for z >= 0 and zz = z^2: erfc(z) / 2 is their product."""
    t = _ONE / (_ONE + _AS_P * z)
    a0, a1, a2, a3, a4 = _AS_A
    return _HALF * (((((a0 * t + a1) * t + a2) * t + a3) * t + a4) * t), _exp(-zz)


@_fma_loop
def gelu(x, out):
    for i in range(x.size):
        v = x[i]
        z = abs(v) * _INV_SQRT2
        zz = z * z
        neg = v < _ZERO
        stand = zz > _ZZ_FAR if neg else zz > _ZZ_FLAT
        q, e = _half_erfc(_ZERO if stand else z, _ZERO if stand else zz)
        yn = v * _ZERO if stand else (v * q) * e
        yp = v if stand else v * (_ONE - q * e)
        out[i] = yn if neg else yp


@_fma_loop
def gelu_grad(g, x, out):  # (Phi(x) + x pdf(x)) g
    for i in range(x.size):
        v = x[i]
        z = abs(v) * _INV_SQRT2
        zz = z * z
        neg = v < _ZERO
        stand = zz > _ZZ_FAR if neg else zz > _ZZ_FLAT
        stand = stand and z < _INF  # (+inf's slope stays nan: inf times the pdf's 0)
        q, e = _half_erfc(_ZERO if stand else z, _ZERO if stand else zz)
        sn = (q + v * _INV_SQRT_2PI) * e  # Phi + x pdf on the negative side, each factor normal
        sp = (_ONE - q * e) + v * (e * _INV_SQRT_2PI)
        lim = (_ZERO + v * _ZERO) if neg else _ONE
        out[i] = (lim if stand else (sn if neg else sp)) * g[i]


# tanh GELU: 0.5 (1 + tanh u) is sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3), and 1 - tanh^2 u = 4 s (1 - s):
# no tanh, and the negative tail keeps its digits (1 + tanh u cancels there)
_GT_C, _GT_3C, _GT_2K = _F(0.044715), _F(3 * 0.044715), _F(2 * 0.7978845608028654)


@_fma_loop
def gelu_tanh(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = v * _sigmoid((v * v * _GT_C + _ONE) * v * _GT_2K)


@_fma_loop
def gelu_tanh_grad(g, x, out):  # (s + x s (1 - s) 2 sqrt(2/pi) (1 + 3 0.044715 x^2)) g, s = sigmoid(2u)
    for i in range(x.size):
        v = x[i]
        z = (v * v * _GT_C + _ONE) * v * _GT_2K
        e = _exp(-abs(z))
        r = _ONE / (_ONE + e)
        s, q = (r, e * r) if z >= _ZERO else (e * r, r)  # s and 1 - s, each without cancelling
        out[i] = (s + v * (s * q) * ((v * v * _GT_3C + _ONE) * _GT_2K)) * g[i]


# --- softmax / log_softmax over the rows of a 2-D C-contiguous float32 array (a row stays in L1) ---------
@_helper
def _row_max(x):
    """The row's largest value, NaN ignored (a NaN makes the row NaN anyway, through its e**(x - m), as
    PyTorch's). Eight running maxima: LLVM does not vectorise a select reduction, and one chain of
    compares waits on each one's latency."""
    n = x.size
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = x[0]
    j = 0
    while j + 8 <= n:
        m0 = x[j] if x[j] > m0 else m0
        m1 = x[j + 1] if x[j + 1] > m1 else m1
        m2 = x[j + 2] if x[j + 2] > m2 else m2
        m3 = x[j + 3] if x[j + 3] > m3 else m3
        m4 = x[j + 4] if x[j + 4] > m4 else m4
        m5 = x[j + 5] if x[j + 5] > m5 else m5
        m6 = x[j + 6] if x[j + 6] > m6 else m6
        m7 = x[j + 7] if x[j + 7] > m7 else m7
        j += 8
    while j < n:
        m0 = x[j] if x[j] > m0 else m0
        j += 1
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    m4 = m5 if m5 > m4 else m4
    m6 = m7 if m7 > m6 else m6
    m0 = m2 if m2 > m0 else m0
    m4 = m6 if m6 > m4 else m4
    return m4 if m4 > m0 else m0


@_helper(fastmath={"reassoc"})
def _row_sum(x):  # float64 accumulation
    s = 0.0
    for j in range(x.size):
        s += x[j]
    return s


@_helper(fastmath={"reassoc"})
def _row_dot(x, y):
    s = 0.0
    for j in range(x.size):
        s += x[j] * y[j]
    return s


@_fma_loop
def softmax(x, out, log):
    """softmax (log_softmax if log) of each row: e**(x - max), then times 1 / sum (minus log sum), as
    PyTorch's CPU kernel."""
    rows, cols = x.shape
    for r in range(rows):
        xr, o = x[r], out[r]
        m = _row_max(xr)
        for j in range(cols):
            o[j] = _exp(xr[j] - m)
        s = _row_sum(o)
        if log:
            ls = _F(numpy.log(s))
            for j in range(cols):
                o[j] = (xr[j] - m) - ls
        else:
            c = _F(1.0 / s)
            for j in range(cols):
                o[j] *= c


@_fma_loop
def softmax_grad(y, g, out, log):
    """softmax's y (g - sum(g y)), or log_softmax's g - e**y sum(g), per row."""
    rows, cols = y.shape
    for r in range(rows):
        yr, gr, o = y[r], g[r], out[r]
        if log:
            s = _F(_row_sum(gr))
            for j in range(cols):
                o[j] = gr[j] - _exp(yr[j]) * s
        else:
            s = _F(_row_dot(gr, yr))
            for j in range(cols):
                o[j] = yr[j] * (gr[j] - s)


# --- cross-entropy of (rows, C) float32 logits against int64 class indices ----------------------------
@_fma_loop
def _ce_rows(x, t, w, loss, m, logs, ignore_index, keep, spread, weighted):
    """Per row the max m, log(sum e**(x - m)) and the loss (0 where the target is ignore_index), -log p_k as
    logs - (x_k - m), so large logits keep their digits (m + logs would round to m's ulp); returns (the
    float64 sum of the row losses, the summed weights of the non-ignored targets, the first row whose
    target is out of range or -1). keep = 1 - label_smoothing, spread = label_smoothing / C (float32)."""
    rows, cols = x.shape
    e = numpy.empty(cols, x.dtype)  # one row of e**(x - max): stays in L1
    total = 0.0
    denom = 0.0
    for r in range(rows):
        xr = x[r]
        mr = _row_max(xr)
        for j in range(cols):
            e[j] = _exp(xr[j] - mr)
        lr = _F(numpy.log(_row_sum(e)))
        m[r], logs[r] = mr, lr
        k = t[r]
        if k == ignore_index:
            loss[r] = 0.0
            continue
        if k < 0 or k >= cols:
            return total, denom, r
        wt = w[k] if weighted else _ONE
        v = keep * wt * (lr - (xr[k] - mr))
        if spread != 0:  # the smoothing term: sum_j w_j (-log p_j) (w_j = 1 without a weight)
            for j in range(cols):
                e[j] = lr - (xr[j] - mr)
            v = v + spread * _F(_row_dot(e, w) if weighted else _row_sum(e))
        loss[r] = v
        total += loss[r]
        denom += wt
    return total, denom, -1


@_fma_loop
def _ce_grad(x, t, w, m, logs, grow, gstride, dx, ignore_index, keep, spread, weighted):
    """d(row losses)/dx times grow[r * gstride]: (p - spread - keep onehot) gr with p = e**((x - m) - logs), or
    with a weight (keep w_t (p - onehot) + spread (W p - w_j)) gr (W the summed weight); 0 in ignored rows."""
    rows, cols = x.shape
    wsum = _F(_row_sum(w)) if weighted else _ZERO
    for r in range(rows):
        k = t[r]
        o = dx[r]
        if k == ignore_index:
            for j in range(cols):
                o[j] = 0.0
            continue
        xr, mr, lr, gr = x[r], m[r], logs[r], grow[r * gstride]
        if weighted:
            kw = keep * w[k]
            for j in range(cols):
                p = _exp((xr[j] - mr) - lr)
                o[j] = (kw * p + spread * (wsum * p - w[j])) * gr
            p = _exp((xr[k] - mr) - lr)
            o[k] = (kw * (p - _ONE) + spread * (wsum * p - w[k])) * gr
        else:
            for j in range(cols):
                o[j] = (_exp((xr[j] - mr) - lr) - spread) * gr
            o[k] = ((_exp((xr[k] - mr) - lr) - spread) - keep) * gr


def cross_entropy(x, t, weight, ignore_index, label_smoothing):
    """(loss rows, stats, sum of the losses, summed target weights, first bad row or -1) of C-contiguous
    float32 (rows, C) logits x against int64 targets t (``weight`` a float32 (C,) array or None); stats is
    (2, rows): each row's max and log-sum-exp after it, what ``cross_entropy_grad`` needs."""
    rows, cols = x.shape
    loss, stats = numpy.empty(rows, x.dtype), numpy.empty((2, rows), x.dtype)
    keep, spread = (_F1, _F0) if label_smoothing == 0 else (_F(1.0 - label_smoothing), _F(label_smoothing / cols))
    total, denom, bad = _ce_rows(x, t, loss if weight is None else weight, loss, stats[0], stats[1], ignore_index,
                                 keep, spread, weight is not None)
    return loss, stats, total, denom, bad


def cross_entropy_grad(x, t, weight, stats, grow, ignore_index, label_smoothing):
    """dx of ``cross_entropy``'s row losses, each row's scaled by grow (one value per row, or one for all)."""
    dx = numpy.empty_like(x)
    _ce_grad(x, t, stats[1] if weight is None else weight, stats[0], stats[1], grow, 1 if grow.size > 1 else 0, dx,
             ignore_index, _F(1.0 - label_smoothing), _F(label_smoothing / x.shape[1]), weight is not None)
    return dx


# --- huber_loss / smooth_l1_loss over flat arrays: the reduced loss and its gradient in one pass each -------
@_sums_loop
def huber_sum(x, t, delta):
    """sum over i of 0.5 d^2 where |d| < delta, else delta (|d| - delta / 2), with d = x - t in x's dtype (as
    PyTorch's elementwise loss) and the rest in float64."""
    s = 0.0
    for i in range(x.size):
        a = abs(numpy.float64(x[i] - t[i]))
        c = min(a, delta)
        s += c * (a - 0.5 * c)  # the two branches as one: c = |d| inside, delta outside
    return s


@_loop
def huber_grad(x, t, out, delta, gc):
    """clip(x - t, -delta, delta) gc, in x's dtype (delta and gc in it); a NaN difference stays NaN (compares
    are false for it), as NumPy's clip and PyTorch's backward keep it."""
    for i in range(x.size):
        d = x[i] - t[i]
        if d > delta:
            d = delta
        elif d < -delta:
            d = -delta
        out[i] = d * gc


# --- in-place arithmetic ----------------------------------------------------------------------------------
@_loop
def add_scaled_(x, u, alpha):  # x <- x + u * alpha in place: u * alpha rounded, then the sum (NumPy's two
    for i in range(x.size):    # steps, x.add_(u, alpha=...)'s bits) in one pass; alpha comes in x's dtype
        x[i] = x[i] + u[i] * alpha


@_loop
def addcmul_(x, t1, t2, value, scaled):  # x <- x + (t1 t2) value: addcmul's rounding order (the product, then
    for i in range(x.size):              # the scale where value != 1, then the sum), in one pass
        p = t1[i] * t2[i]
        x[i] = x[i] + (p * value if scaled else p)


@_loop
def addcdiv_(x, t1, t2, value, scaled):  # x <- x + (t1 / t2) value, in addcdiv's rounding order
    for i in range(x.size):
        q = t1[i] / t2[i]
        x[i] = x[i] + (q * value if scaled else q)


@_loop
def lerp_(x, e, w, one_minus_w, low):  # x <- lerp(x, e, w) for a number weight: PyTorch's two forms, exact at
    for i in range(x.size):            # both ends (x + w (e - x) where |w| < 0.5, else e - (e - x)(1 - w))
        d = e[i] - x[i]
        x[i] = x[i] + w * d if low else e[i] - d * one_minus_w


# --- optimizer updates of one parameter in one pass ------------------------------------------------------
@_helper
def _add_scaled(x, u, alpha, fused):  # x + alpha u: one rounding as BLAS's axpy (fused), else u alpha then the sum
    return _fma(alpha, u, x) if fused else x + u * alpha


@_loop
def adam_step(x, g, m, v, mx, w, hi, b2, c2, bc2, eps, amsgrad, alpha, fused):
    """One Adam update of the flat parameter x in place, in one pass: m <- lerp(m, g, weight) (w the weight, or
    1 - the weight in lerp's form for weights >= 0.5, ``hi``), v <- v b2 + g c2 g, mx <- max(mx, v) (amsgrad,
    NaN kept as NumPy's maximum), u = m / (sqrt(v, or mx) / bc2 + eps), x <- x + alpha u (``_add_scaled``).
    Each operation rounded in the arrays' dtype in the order of the NumPy form (``optim._functional.adam_step_``),
    so the results are its bits."""
    for i in range(g.size):
        gi = g[i]
        d = (gi - m[i]) * w
        mi = gi - d if hi else m[i] + d
        m[i] = mi
        vi = v[i] * b2 + gi * c2 * gi
        v[i] = vi
        if amsgrad:
            a = mx[i]
            if not (a >= vi or a != a):
                a = vi
            mx[i] = a
            vi = a
        x[i] = _add_scaled(x[i], mi / (numpy.sqrt(vi) / bc2 + eps), alpha, fused)


@_helper
def _sgd_pass(x, g, b, mom, c, damped, nesterov, alpha, fused):
    for i in range(g.size):
        gi = g[i]
        bi = b[i] * mom + (gi * c if damped else gi)
        b[i] = bi
        x[i] = _add_scaled(x[i], bi * mom + gi if nesterov else bi, alpha, fused)


@_loop
def sgd_step(x, g, b, mom, c, damped, nesterov, alpha, fused):
    """One SGD-momentum update of the flat parameter x in place, in one pass: b <- b mom + g (times c = 1 -
    dampening when ``damped``), the direction b, or with ``nesterov`` b mom + g, and x <- x + alpha direction
    (``_add_scaled``); each operation rounded in the arrays' dtype in the NumPy form's order
    (``optim._functional.sgd_step_``)."""
    _sgd_pass(x, g, b, mom, c, damped, nesterov, alpha, fused)


@_loop
def sgd_steps(xs, gs, b, mom, c, damped, nesterov, alpha, fuse_from):
    """``sgd_step`` for a whole group in one call: xs and gs are tuples of the flat parameters and their
    gradients, b their momentum buffers end to end; a parameter of ``fuse_from`` elements or more fuses its
    multiply-add (where ``sgd_step_`` would take BLAS's axpy). On the digits MLP the six calls' overhead was
    as much as their arithmetic."""
    start = 0
    for k in range(len(xs)):
        x, g = xs[k], gs[k]
        n = g.size
        _sgd_pass(x, g, b[start:start + n], mom, c, damped, nesterov, alpha, n >= fuse_from)
        start += n
