"""One-pass CPU loops compiled with Numba for the activations, normalizations and softmax whose NumPy form
takes several passes over memory (optional: ``pip install workbench[numba]``).

Why: on 1M float32 elements a NumPy pass costs ~0.3-0.4 ms, and PyTorch's fused loop does in one pass what
NumPy needs 2-6 for (a select by mask, a clamp and a scale). A loop here reads its inputs once and writes
its outputs once (~0.3 ms). Numba has no vectorised ``exp`` (its scalar libm call costs ~2 ns an element,
five times NumPy's SIMD one), so ops built on ``exp`` stay NumPy's; an ``exp`` from NumPy followed by a
loop over its result was measured slower than NumPy's in-place passes (the loop does not vectorise its
division when it writes over its input).

Constants come in the input's dtype (the caller rounds them as PyTorch does, leaky_relu's slope to
float32), so the arithmetic is PyTorch's, in its order. Every caller keeps its NumPy form, the same formulas, for when ``usable`` says no: Numba
not installed, ``WORKBENCH_NUMBA=0``, CuPy arrays, other dtypes, or arrays under ``MIN_SIZE`` elements
(where NumPy's per-call cost is small and Numba's import is not worth paying). Each loop compiles on its
first call and is cached on disk (``cache=True``), so a new process loads it in milliseconds.
"""
import os

import numpy

MIN_SIZE = 1 << 15
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


def usable(*arrays):
    """Whether the loops serve these arrays: C-contiguous NumPy float32/float64 of one dtype, the first at
    least MIN_SIZE elements, and Numba importable and not switched off."""
    a = arrays[0]
    return (ENABLED[0] and a.size >= MIN_SIZE and type(a) is numpy.ndarray and a.dtype.char in "fd"
            and all(type(b) is numpy.ndarray and b.dtype == a.dtype and b.flags.c_contiguous for b in arrays)
            and _numba() is not None)


class _loop:
    """A Python loop compiled by Numba on its first call."""

    fastmath = False

    def __init__(self, fn):
        self.py, self.jit = fn, None
        self.__doc__, self.__name__ = fn.__doc__, fn.__name__

    def __call__(self, *args):
        if self.jit is None:
            self.jit = _numba().njit(cache=True, nogil=True, error_model="numpy", fastmath=self.fastmath)(self.py)
        return self.jit(*args)


class _sums_loop(_loop):
    """A loop whose float64 sums LLVM may reassociate (vectorised accumulation) and nothing else, so NaN and
    inf still propagate."""

    fastmath = {"reassoc"}


# --- rectifiers and piecewise-linear activations (flat arrays) -----------------------------------------
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
def hardswish_grad(g, x, out, three, half):  # 0 up to -3, x / 3 + 0.5 between, 1 from 3 on (PyTorch's ends)
    for i in range(x.size):
        v = x[i]
        out[i] = g[i] * (v / three + half) if -three < v < three else (g[i] if v >= three else 0.0)


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
        out[i] = v if m else v * 0.0  # v * 0 keeps NaN, as PyTorch's
        mask[i] = m


@_loop
def mask_mul(g, mask, out, slope):  # the piecewise activations' backward: g * slope where the mask holds
    for i in range(g.size):
        out[i] = g[i] * slope if mask[i] else 0.0


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
        rs = 1.0 / numpy.sqrt(v + eps)
        mean[r], rstd[r], var[r] = mu, rs, v
        if affine:
            for j in range(cols):
                out[r, j] = (x[r, j] - mu) * rs * w[j] + b[j]
        else:
            for j in range(cols):
                out[r, j] = (x[r, j] - mu) * rs


@_sums_loop
def layer_norm_grad(g, x, w, mean, rstd, dx, dw, db):
    """dx = rstd (g w - mean(g w) - xhat mean(g w xhat)) per row (w all ones without a weight); dw += g xhat
    and db += g (float64)."""
    rows, cols = x.shape
    for r in range(rows):
        mu, rs = mean[r], rstd[r]
        a = 0.0
        c = 0.0
        for j in range(cols):
            gv = g[r, j]
            xh = (x[r, j] - mu) * rs
            a += gv * w[j]
            c += gv * w[j] * xh
        a /= cols
        c /= cols
        for j in range(cols):
            gv = g[r, j]
            xh = (x[r, j] - mu) * rs
            dw[j] += gv * xh
            db[j] += gv
            dx[r, j] = rs * (gv * w[j] - a - xh * c)
