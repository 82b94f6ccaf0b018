"""Fused kernels: CUDA sources in ``kernels/`` launched with ``cupy.RawModule``, each registered with a
NumPy reference written in array ops.

Every entry point takes the array module first. On real CuPy with float32 contiguous inputs it
launches the CUDA kernel; otherwise (NumPy, the fake cupy of CPU CI, other dtypes) it runs the
reference with the same ``xp``, so the reference is also the CPU implementation and the two are
tested against each other (tests/kernels, and tests marked gpu on a real device).
"""
import math
import os

import numpy

from . import dtypes, fused

_DIRS = [os.path.join(os.path.dirname(os.path.dirname(__file__)), "_kernels"),  # installed wheel
         os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "kernels")]  # checkout
_MODULES = {}
THREADS = 256


def kernel_dir():
    for d in _DIRS:
        if os.path.isdir(d):
            return d
    raise RuntimeError(f"the CUDA kernel sources were not found (looked in {_DIRS}); reinstall workbench")


def sources():
    """Paths of every .cu file (what CI compiles with nvcc)."""
    d = kernel_dir()
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".cu"))


def _is_cuda(xp):
    return xp is not numpy and not getattr(xp, "__fake__", False)


def _module(xp, name):
    mod = _MODULES.get(name)
    if mod is None:
        d = kernel_dir()
        with open(os.path.join(d, name + ".cu")) as f:
            code = f.read()
        mod = _MODULES[name] = xp.RawModule(code=code, options=("-std=c++17", f"-I{d}"))
    return mod


def _fast(xp, *arrays):
    return _is_cuda(xp) and all(a.dtype == numpy.float32 and a.flags.c_contiguous for a in arrays)


def _dense(g, like):
    """g C-contiguous where it is a small strided array of like's shape (the zero-stride gradient sum() and
    mean() hand back): one copy, and then the loops, which need rows, serve it."""
    if g.__class__ is numpy.ndarray and not g.flags.c_contiguous and g.shape == like.shape and g.size <= 1 << 16:
        return numpy.ascontiguousarray(g)
    return g


def _f32(*arrays):
    """The arrays in float32 (None stays None): the 16-bit floats' softmax and norms run there."""
    return [a if a is None else a.astype(numpy.float32) for a in arrays]


def _rows(x):
    cols = x.shape[-1]
    return (x.size // cols if cols else 0), cols


def _block(cols):
    return min(THREADS, max(32, 1 << (max(cols, 1) - 1).bit_length()))


# --- softmax / log_softmax over the last dim -------------------------------------------------------
def softmax(xp, x, log=False):
    """softmax (or log_softmax) of x over its last dim.

    >>> import numpy as np
    >>> softmax(np, np.array([[0.0, 0.0]]))
    array([[0.5, 0.5]])
    """
    if dtypes.is_half(x.dtype):  # float32 inside, rounded once (PyTorch's): a 16-bit row sum stalls
        return softmax(xp, *_f32(x), log).astype(x.dtype)
    if _fast(xp, x) and x.size:
        rows, cols = _rows(x)
        y = xp.empty_like(x)
        _module(xp, "softmax").get_function("softmax_fwd")((rows,), (_block(cols),),
                                                           (x, y, numpy.int32(cols), numpy.int32(log)))
        return y
    if xp is numpy and x.size and fused.usable32(x):
        y = numpy.empty_like(x)  # (a loop raises no NumPy warnings: no errstate, ~1 us on a small array)
        c = x.shape[-1]
        fused.softmax(x.reshape(-1, c), y.reshape(-1, c), log)
        return y
    m = x.max(axis=-1, keepdims=True) if x.size else x
    z = x - m
    if log:
        e = xp.exp(z)
        z -= xp.log(e.sum(axis=-1, keepdims=True))
        return z
    xp.exp(z, out=z)
    z *= 1 / z.sum(axis=-1, keepdims=True)  # times the reciprocal, as PyTorch's CPU kernel (a multiply is cheaper)
    return z


def softmax_backward(xp, y, g, log=False):
    """The gradient of softmax (log=False) or log_softmax from its output y and upstream g."""
    if dtypes.is_half(y.dtype) or dtypes.is_half(g.dtype):
        return softmax_backward(xp, *_f32(y, g), log).astype(y.dtype)
    if _fast(xp, y, g) and y.size:
        rows, cols = _rows(y)
        dx = xp.empty_like(y)
        _module(xp, "softmax").get_function("softmax_bwd")((rows,), (_block(cols),),
                                                           (y, g, dx, numpy.int32(cols), numpy.int32(log)))
        return dx
    g = _dense(g, y)
    if xp is numpy and y.size and g.shape == y.shape and fused.usable32(y, g):
        dx = numpy.empty_like(y)
        c = y.shape[-1]
        fused.softmax_grad(y.reshape(-1, c), g.reshape(-1, c), dx.reshape(-1, c), log)
        return dx
    if log:
        e = xp.exp(y)
        e *= g.sum(axis=-1, keepdims=True)
        return xp.subtract(g, e, out=e)
    d = g * y
    xp.subtract(g, d.sum(axis=-1, keepdims=True), out=d)  # y (g - sum(g y)), reusing g y's memory
    d *= y
    return d


# --- cross-entropy from logits and class indices ---------------------------------------------------
def cross_entropy(xp, x, target, weight=None, ignore_index=-100, label_smoothing=0.0):
    """Per-row losses and what the backward needs of (rows, C) logits against int64 class indices: the rows'
    log-sum-exps (CUDA kernel), or (2, rows) maxima and log-sum-exps after them, so that large logits keep
    their digits in e**((x - max) - lse) (the NumPy form, and ``fused.cross_entropy``)."""
    rows, cols = _rows(x)
    if _fast(xp, x, *(() if weight is None else (weight,))) and rows:
        loss = xp.empty(rows, numpy.float32)
        lse = xp.empty(rows, numpy.float32)
        t = xp.ascontiguousarray(target, dtype=numpy.int64)
        _module(xp, "cross_entropy").get_function("cross_entropy_fwd")(
            (rows,), (_block(cols),), (x, t, weight if weight is not None else 0, loss, lse, numpy.int32(cols),
                                       numpy.int64(ignore_index), numpy.float32(label_smoothing)))
        return loss, lse
    m = x.max(axis=-1, keepdims=True)
    e = xp.subtract(x, m)
    xp.exp(e, out=e)
    logs = xp.log(e.sum(axis=-1, keepdims=True))
    del e
    valid = target != ignore_index
    t = xp.where(valid, target, 0)
    picked = xp.take_along_axis(x, t[..., None], axis=-1)
    wt = weight[t] if weight is not None else 1.0
    # -log p as logs - (x - m): large logits keep their digits (m + logs rounds to m's ulp)
    loss = (1.0 - label_smoothing) * wt * (logs - (picked - m))[..., 0]
    if label_smoothing:
        nlogp = xp.subtract(logs, xp.subtract(x, m))
        smooth = (nlogp * weight).sum(axis=-1) if weight is not None else nlogp.sum(axis=-1)
        loss = loss + label_smoothing / cols * smooth
    stats = xp.stack([m[..., 0], logs[..., 0]]).astype(x.dtype, copy=False)
    return xp.where(valid, loss, 0).astype(x.dtype, copy=False), stats


def cross_entropy_backward(xp, x, target, lse, grow, weight=None, ignore_index=-100, label_smoothing=0.0):
    """d loss_rows / d x scaled per row by grow (the upstream gradient of each row's loss; one value for all rows
    with (2, rows) ``lse``); ``lse`` as ``cross_entropy`` returned it."""
    rows, cols = _rows(x)
    if _fast(xp, x, lse, grow, *(() if weight is None else (weight,))) and rows:
        dx = xp.empty_like(x)
        t = xp.ascontiguousarray(target, dtype=numpy.int64)
        _module(xp, "cross_entropy").get_function("cross_entropy_bwd")(
            (rows,), (_block(cols),), (x, t, weight if weight is not None else 0, lse, grow, dx, numpy.int32(cols),
                                       numpy.int64(ignore_index), numpy.float32(label_smoothing)))
        return dx
    if lse.ndim == 2 and fused.usable32(x, grow.reshape(-1), *(() if weight is None else (weight,)), min_size=1) and (
            target.flags.c_contiguous and target.dtype == numpy.int64):
        return fused.cross_entropy_grad(x, target, weight, lse, grow.reshape(-1), ignore_index, label_smoothing)
    valid = target != ignore_index
    t = xp.where(valid, target, 0)
    if lse.ndim == 2:
        p = xp.subtract(x, lse[0][..., None])
        p -= lse[1][..., None]
    else:
        p = xp.subtract(x, lse[..., None])
    xp.exp(p, out=p)
    gr = xp.where(valid, grow, 0).astype(x.dtype, copy=False)[..., None]
    if weight is None:  # p - (1 - ls) onehot - ls / C, in place and in x's dtype (no float64 onehot)
        if label_smoothing:
            p -= label_smoothing / cols
        flat = p.reshape(-1, cols)
        flat[xp.arange(flat.shape[0]), t.reshape(-1)] -= 1.0 - label_smoothing
        p *= gr
        return p
    onehot = (xp.arange(cols) == t[..., None]).astype(x.dtype)
    d = ((1.0 - label_smoothing) * weight[t][..., None] * (p - onehot)
         + label_smoothing / cols * (weight.sum() * p - weight))
    return (gr * d).astype(x.dtype, copy=False)


# --- layer norm over the last dim ------------------------------------------------------------------
def layer_norm(xp, x, weight, bias, eps):
    """(y, mean, rstd) of layer norm over x's last dim; weight/bias may be None."""
    if dtypes.is_half(x.dtype):  # float32 inside, y rounded once (mean and rstd stay float32 for backward)
        y, mean, rstd = layer_norm(xp, *_f32(x, weight, bias), eps)
        return y.astype(x.dtype), mean, rstd
    rows, cols = _rows(x)
    ok = [a for a in (weight, bias) if a is not None]
    if _fast(xp, x, *ok) and rows:
        y = xp.empty_like(x)
        mean = xp.empty(x.shape[:-1], numpy.float32)
        rstd = xp.empty(x.shape[:-1], numpy.float32)
        _module(xp, "layer_norm").get_function("layer_norm_fwd")(
            (rows,), (_block(cols),), (x, weight if weight is not None else 0, bias if bias is not None else 0, y,
                                       mean, rstd, numpy.int32(cols), numpy.float32(eps)))
        return y, mean, rstd
    if xp is numpy and x.ndim == 2 and x.dtype.char in "fd" and rows:
        return _layer_norm_numpy(x, weight, bias, eps)
    mean = x.mean(axis=-1)
    d = x - mean[..., None]
    rstd = 1.0 / xp.sqrt((d * d).mean(axis=-1) + eps)
    y = d * rstd[..., None]
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y.astype(x.dtype, copy=False), mean, rstd


def layer_norm_backward(xp, g, x, mean, rstd, weight, need_w=True, need_b=True):
    """(dx, dweight, dbias) of layer norm; dweight/dbias are None when weight is None or not needed."""
    if dtypes.is_half(x.dtype):
        dx, dw, db = layer_norm_backward(xp, *_f32(g, x), mean, rstd, *_f32(weight), need_w, need_b)
        return (dx.astype(x.dtype), None if dw is None else dw.astype(weight.dtype),
                None if db is None else db.astype(x.dtype))
    rows, cols = _rows(x)
    if _fast(xp, g, x, mean, rstd, *(() if weight is None else (weight,))) and rows:
        dx = xp.empty_like(x)
        f = _module(xp, "layer_norm")
        f.get_function("layer_norm_bwd_dx")((rows,), (_block(cols),),
                                            (g, x, mean, rstd, weight if weight is not None else 0, dx,
                                             numpy.int32(cols)))
        dw = xp.empty(cols, numpy.float32) if weight is not None and need_w else None
        db = xp.empty(cols, numpy.float32) if need_b else None
        if dw is not None or db is not None:
            f.get_function("layer_norm_bwd_dwdb")(((cols + THREADS - 1) // THREADS,), (THREADS,),
                                                  (g, x, mean, rstd, dw if dw is not None else 0,
                                                   db if db is not None else 0, numpy.int32(rows), numpy.int32(cols)))
        return dx, dw, db
    if xp is numpy and x.ndim == 2 and x.dtype.char in "fd" and g.dtype == x.dtype and rows:
        return _layer_norm_backward_numpy(g, x, mean, rstd, weight, need_w, need_b)
    xhat = (x - mean[..., None]) * rstd[..., None]
    gw = g * weight if weight is not None else g
    a = gw.mean(axis=-1, keepdims=True)
    c = (gw * xhat).mean(axis=-1, keepdims=True)
    dx = (rstd[..., None] * (gw - a - xhat * c)).astype(x.dtype, copy=False)
    flat_g = g.reshape(-1, cols)
    dw = (flat_g * xhat.reshape(-1, cols)).sum(axis=0) if weight is not None and need_w else None
    db = flat_g.sum(axis=0) if need_b else None
    return dx, dw, db


def _row_dots(a, b):
    """sum(a * b, axis=-1) of (R, C) arrays without a temporary. (No BLAS here: OpenBLAS's threads spin after
    each call, doubling the CPU time of the NumPy passes that follow on a 2-core machine.)"""
    return numpy.einsum("ij,ij->i", a, b)


def row_norm(x, eps):
    """(xhat, mean, biased var, rstd) of each row of a C-contiguous (R, C) NumPy float array, in one
    temporary (the centred rows, normalized in place): layer norm's and the row-wise Normalize's forward."""
    if fused.usable(x):
        return _fused_rows(x, x[0], x[0], eps, False)
    cols = x.shape[1]
    mean = numpy.einsum("ij->i", x)
    mean /= cols
    d = x - mean[:, None]
    var = _row_dots(d, d)
    var /= cols
    rstd = numpy.sqrt(var + eps)
    numpy.reciprocal(rstd, out=rstd)
    d *= rstd[:, None]
    return d, mean, var, rstd


def _fused_rows(x, w, b, eps, affine):
    """row_norm's (y, mean, var, rstd) from the Numba loop (y affine when asked)."""
    rows = x.shape[0]  # three arrays, not rows of one: a node saves mean and rstd, and keeps no more alive
    y, mean, var, rstd = numpy.empty_like(x), numpy.empty(rows, x.dtype), numpy.empty(rows, x.dtype), numpy.empty(
        rows, x.dtype)
    fused.layer_norm(x, w, b, y, mean, rstd, var, eps, affine)
    return y, mean, var, rstd


def _layer_norm_numpy(x, weight, bias, eps):
    if fused.usable(x, *(a for a in (weight, bias) if a is not None)):
        affine = weight is not None and bias is not None
        y, mean, _, rstd = _fused_rows(x, weight if affine else x[0], bias if affine else x[0], eps, affine)
        if not affine and (weight is not None or bias is not None):  # one of the two: apply it after
            if weight is not None:
                y *= weight
            if bias is not None:
                y += bias
        return y, mean, rstd
    d, mean, _, rstd = row_norm(x, eps)
    if weight is not None:
        d *= weight
    if bias is not None:
        d += bias
    return d, mean, rstd


def row_norm_backward(g, x, mean, rstd):
    """dx of row_norm's xhat from its gradient g (both (R, C)): the weightless layer norm backward."""
    if fused.usable(x, g):
        dx = numpy.empty_like(x)
        fused.row_norm_grad(g, x, mean, rstd, dx)
        return dx
    return _layer_norm_backward_numpy(g, x, mean, rstd, None, False, False)[0]


def _layer_norm_backward_numpy(g, x, mean, rstd, weight, need_w, need_b):
    # dx = rstd (g w - mean(g w) - xhat mean(g w xhat)), dw = sum_rows(g xhat), db = sum_rows(g), in two
    # temporaries
    cols = x.shape[1]
    if fused.usable(x, g, *(() if weight is None else (weight,))):
        dx, dw, db = numpy.empty_like(x), numpy.zeros(cols), numpy.zeros(cols)
        fused.layer_norm_grad(g, x, weight if weight is not None else numpy.ones(cols, x.dtype), mean, rstd, dx,
                              dw, db)
        return (dx, dw.astype(x.dtype) if weight is not None and need_w else None,
                db.astype(x.dtype) if need_b else None)
    xhat = x - mean[:, None]
    xhat *= rstd[:, None]
    db = g.sum(axis=0) if need_b else None
    dw = numpy.einsum("ij,ij->j", g, xhat) if weight is not None and need_w else None
    gw = g * weight if weight is not None else g
    a = numpy.einsum("ij->i", gw)
    a /= cols
    c = _row_dots(gw, xhat)
    c /= cols
    xhat *= c[:, None]
    gw = numpy.subtract(gw, a[:, None], out=gw if weight is not None else None)
    gw -= xhat
    gw *= rstd[:, None]
    return gw, dw, db


# --- GELU -------------------------------------------------------------------------------------------
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


_INV_SQRT_2 = 1 / math.sqrt(2.0)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


def _erf(xp, x):
    if _is_cuda(xp):
        from cupyx.scipy.special import erf

        return erf(x)
    if x.dtype == numpy.float64:
        try:
            from scipy.special import erf  # exact to float64 round-off; a [dev] dependency

            return erf(x)
        except ImportError:
            pass
    # Abramowitz & Stegun 7.1.26 refined: |err| < 1.2e-7, float32's precision, and vectorised (scipy's erf is a
    # scalar loop, ten times slower on float32 GELU activations)
    t = 1.0 / (1.0 + 0.5 * xp.abs(x))
    y = 1 - t * xp.exp(-x * x - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
    return xp.where(x >= 0, y, -y)


def gelu(xp, x, approximate="none"):
    """GELU of x, exact or with the tanh approximation (16-bit floats in float32, rounded once: PyTorch's)."""
    if dtypes.is_half(x.dtype):  # (in float16, x**3 overflows from |x| ~ 40 and the tanh form's slope is nan)
        return gelu(xp, *_f32(x), approximate).astype(x.dtype)
    tanh = approximate == "tanh"
    if _fast(xp, x) and x.size:
        y = xp.empty_like(x)
        n = x.size
        _module(xp, "gelu").get_function("gelu_fwd")((min(65535, (n + THREADS - 1) // THREADS),), (THREADS,),
                                                     (x, y, numpy.int64(n), numpy.int32(tanh)))
        return y
    if xp is numpy and fused.usable32(x):
        return _fused(fused.gelu_tanh if tanh else fused.gelu, x)
    if tanh:  # in place, a block at a time; x * x * 0.044715 (x ** 3 is NumPy's generic pow, ~50x slower)
        return _blocked(xp, _gelu_tanh_block, x)
    if x.dtype != numpy.float32 or _is_cuda(xp):
        return (0.5 * x * (1 + _erf(xp, x / math.sqrt(2.0)))).astype(x.dtype, copy=False)
    return _blocked(xp, _gelu_block, x)


def _fused(loop, *arrays):
    """A ``fused`` loop over flat views of the arrays into a fresh array of their shape."""
    out = numpy.empty_like(arrays[0])
    loop(*[a.reshape(-1) for a in arrays], out.reshape(-1))  # (a loop raises no NumPy warnings: no errstate)
    return out


_BLOCK = 1 << 14  # elements per block: a block's temporaries stay in L2 across the ~20 passes


def _blocked(xp, fn, *arrays):
    """fn over the arrays (same shape) one cache-sized block at a time; small arrays in one call."""
    x = arrays[0]
    if x.ndim == 0:  # (out= needs arrays, and ufuncs return scalars for 0-d operands)
        return _blocked(xp, fn, *[a.reshape(1) for a in arrays]).reshape(())
    if x.size <= 2 * _BLOCK or xp is not numpy:
        return fn(xp, *arrays)
    flat = [xp.ascontiguousarray(a).reshape(-1) for a in arrays]
    out = xp.empty(x.size, dtype=x.dtype)
    for i in range(0, x.size, _BLOCK):
        out[i:i + _BLOCK] = fn(xp, *[a[i:i + _BLOCK] for a in flat])
    return out.reshape(x.shape)


def _gelu_block(xp, x):
    y = _phi(xp, x)[0]
    y *= x
    return y.astype(x.dtype, copy=False)


def _gelu_backward_block(xp, g, x):
    d, e = _phi(xp, x)
    e *= x
    e *= _INV_SQRT_2PI
    d += e
    d *= g
    return d.astype(x.dtype, copy=False)


def _phi(xp, x):
    """(Phi(x), exp(-x^2 / 2)): the normal CDF from Abramowitz & Stegun 7.1.26 for erfc(|x| / sqrt 2)
    (|error| < 1.5e-7, float32's precision), in place in a few whole-array passes (the polynomial of
    ``_erf`` allocates a temporary per term; np.where alone costs more than all of this)."""
    a = xp.abs(x)
    a *= _INV_SQRT_2
    t = a * 0.3275911
    t += 1
    xp.reciprocal(t, out=t)
    h = t * 1.061405429
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        h += c
        h *= t
    a *= a
    xp.negative(a, out=a)
    xp.exp(a, out=a)
    h *= a
    h *= 0.5  # 0.5 erfc(|x| / sqrt 2): Phi(x) itself below 0 (its tail keeps its digits), 1 - it from 0 on
    u = xp.multiply(h, -2.0)
    u += 1
    u *= xp.greater_equal(x, 0)
    h += u  # h + (1 - 2 h) where x >= 0
    return h, a


def _tanh_arg(x):
    """sqrt(2/pi) * (x + 0.044715 x**3), the tanh GELU's argument, as a fresh array."""
    u = x * x
    u *= 0.044715
    u += 1
    u *= x
    u *= _SQRT_2_OVER_PI
    return u


def _gelu_tanh_block(xp, x):
    y = _tanh_arg(x)
    xp.tanh(y, out=y)
    y += 1
    y *= 0.5  # before x (the same rounding, as halving is exact): (1 + t) x overflowed near float32's max
    y *= x
    return y.astype(x.dtype, copy=False)


def _gelu_tanh_backward_block(xp, g, x):
    # d = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2), t = tanh(arg), in place
    t = _tanh_arg(x)
    xp.tanh(t, out=t)
    s = x * x
    s *= 3 * 0.044715
    s += 1
    s *= 0.5 * _SQRT_2_OVER_PI
    s *= x
    t2 = t * t
    xp.subtract(1, t2, out=t2)
    s *= t2
    t += 1
    t *= 0.5
    t += s
    t *= g
    return t.astype(x.dtype, copy=False)


def gelu_backward(xp, g, x, approximate="none"):
    if dtypes.is_half(x.dtype) or dtypes.is_half(g.dtype):
        return gelu_backward(xp, *_f32(g, x), approximate).astype(x.dtype)
    tanh = approximate == "tanh"
    if _fast(xp, g, x) and x.size:
        dx = xp.empty_like(x)
        n = x.size
        _module(xp, "gelu").get_function("gelu_bwd")((min(65535, (n + THREADS - 1) // THREADS),), (THREADS,),
                                                     (g, x, dx, numpy.int64(n), numpy.int32(tanh)))
        return dx
    g = _dense(g, x)
    if xp is numpy and g.shape == x.shape and fused.usable32(x, g):
        return _fused(fused.gelu_tanh_grad if tanh else fused.gelu_grad, g, x)
    if tanh and g.shape == x.shape and g.dtype == x.dtype:
        return _blocked(xp, _gelu_tanh_backward_block, g, x)
    if tanh:
        return (g * _gelu_tanh_backward_block(xp, xp.ones_like(x), x)).astype(x.dtype, copy=False)
    elif x.dtype != numpy.float32 or _is_cuda(xp):
        d = 0.5 * (1 + _erf(xp, x / math.sqrt(2.0))) + x * xp.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    elif g.shape == x.shape and g.dtype == x.dtype:  # Phi(x) + x pdf(x), sharing exp(-x^2 / 2) with the erfc
        return _blocked(xp, _gelu_backward_block, g, x)
    else:
        d, e = _phi(xp, x)
        e *= x
        e *= _INV_SQRT_2PI
        d += e
    return (g * d).astype(x.dtype, copy=False)


# --- Adam / AdamW over a whole param group -----------------------------------------------------------
def adam_step(xp, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, *, lr, beta1, beta2, eps, weight_decay,
              step, decoupled=False, amsgrad=False, maximize=False):
    """One Adam (or AdamW when decoupled) step, in place, over lists of same-dtype arrays.

    On CUDA with float32 arrays it is one kernel launch for the whole group.
    """
    bc1 = 1.0 - beta1 ** step
    bc2_sqrt = math.sqrt(1.0 - beta2 ** step)
    arrays = params + grads + exp_avgs + exp_avg_sqs + (max_exp_avg_sqs if amsgrad else [])
    if params and _fast(xp, *arrays):
        sizes = [p.size for p in params]
        offsets = numpy.concatenate([[0], numpy.cumsum(sizes)[:-1]]).astype(numpy.int64)
        total = int(sum(sizes))

        def ptrs(arrs):
            return xp.asarray(numpy.array([a.data.ptr for a in arrs], dtype=numpy.uint64))

        maxs = max_exp_avg_sqs if amsgrad else exp_avg_sqs
        _module(xp, "adam").get_function("adam_step")(
            (min(65535, (total + THREADS - 1) // THREADS),), (THREADS,),
            (ptrs(params), ptrs(grads), ptrs(exp_avgs), ptrs(exp_avg_sqs), ptrs(maxs), xp.asarray(offsets),
             numpy.int32(len(params)), numpy.int64(total), numpy.float32(lr), numpy.float32(beta1),
             numpy.float32(beta2), numpy.float32(eps), numpy.float32(weight_decay), numpy.float32(bc1),
             numpy.float32(bc2_sqrt), numpy.int32(decoupled), numpy.int32(amsgrad), numpy.int32(maximize)))
        return
    for i, p in enumerate(params):
        g = -grads[i] if maximize else grads[i]
        if weight_decay:
            if decoupled:
                p *= 1 - lr * weight_decay
            else:
                g = g + weight_decay * p
        m, v = exp_avgs[i], exp_avg_sqs[i]
        m *= beta1
        m += (1 - beta1) * g
        v *= beta2
        v += (1 - beta2) * g * g
        if amsgrad:
            xp.maximum(max_exp_avg_sqs[i], v, out=max_exp_avg_sqs[i])
            v = max_exp_avg_sqs[i]
        denom = xp.sqrt(v) / bc2_sqrt + eps
        p -= (lr / bc1) * m / denom


# --- recurrent cells: the pointwise part of one LSTM or GRU time step (after the two products) -----------
def _cells_loop(*arrays):
    """Whether ``fused``'s float32 cell loops serve these 2-D arrays."""
    return arrays[0].ndim == 2 and fused.usable32(*arrays, min_size=1)


def _sigmoid_ref(xp, x):
    return 1 / (1 + xp.exp(-x))  # e**-x overflowing to inf gives 0, as it should (warnings are off around it)


def lstm_cell(xp, gi, gh, c):
    """One LSTM step from its products gi = x W_ih^T + b_ih and gh = h W_hh^T + b_hh (rows of the i, f, g, o
    gates, each H wide) and the cell state c: (h2, c2, the activations in the gates' layout, tanh(c2)).
    PyTorch's arithmetic: gates = gh + gi, c2 = f c + i g, h2 = o tanh(c2)."""
    H = c.shape[-1]
    if _cells_loop(gi, gh, c):
        h2, c2, tc = numpy.empty_like(c), numpy.empty_like(c), numpy.empty_like(c)
        act = numpy.empty_like(gi)
        fused.lstm_cell(gi, gh, c, h2, c2, act, tc)
        return h2, c2, act, tc
    with numpy.errstate(all="ignore"):
        gates = gh + gi
        act = xp.empty_like(gates)
        act[..., :2 * H] = _sigmoid_ref(xp, gates[..., :2 * H])
        act[..., 2 * H:3 * H] = xp.tanh(gates[..., 2 * H:3 * H])
        act[..., 3 * H:] = _sigmoid_ref(xp, gates[..., 3 * H:])
        i, f, g, o = (act[..., k * H:(k + 1) * H] for k in range(4))
        c2 = f * c + i * g
        tc = xp.tanh(c2)
        return o * tc, c2, act, tc


def lstm_cell_backward(xp, dh2, dc2, c, act, tc):
    """(d gates, dc) of ``lstm_cell`` from the gradients of h2 and c2."""
    H = c.shape[-1]
    if _cells_loop(dh2, dc2, c, act, tc):
        dgates, dc = numpy.empty_like(act), numpy.empty_like(c)
        fused.lstm_cell_grad(dh2, dc2, c, act, tc, dgates, dc, c.dtype.type(1))
        return dgates, dc
    i, f, g, o = (act[..., k * H:(k + 1) * H] for k in range(4))
    d = dh2 * o * (1 - tc * tc) + dc2
    dgates = xp.empty_like(act)
    dgates[..., :H] = d * g * i * (1 - i)
    dgates[..., H:2 * H] = d * c * f * (1 - f)
    dgates[..., 2 * H:3 * H] = d * i * (1 - g * g)
    dgates[..., 3 * H:] = dh2 * tc * o * (1 - o)
    return dgates, d * f


def gru_cell(xp, gi, gh, h):
    """One GRU step from its products gi and gh (rows of the r, z, n gates, each H wide) and the state h:
    (h2, the activations r, z, n in the gates' layout). PyTorch's arithmetic: r = sigmoid(gh_r + gi_r),
    z likewise, n = tanh(gi_n + r gh_n), h2 = (h - n) z + n."""
    H = h.shape[-1]
    if _cells_loop(gi, gh, h):
        h2, act = numpy.empty_like(h), numpy.empty_like(gi)
        fused.gru_cell(gi, gh, h, h2, act)
        return h2, act
    with numpy.errstate(all="ignore"):
        act = xp.empty_like(gi)
        act[..., :2 * H] = _sigmoid_ref(xp, gh[..., :2 * H] + gi[..., :2 * H])
        r, z = act[..., :H], act[..., H:2 * H]
        act[..., 2 * H:] = xp.tanh(gi[..., 2 * H:] + gh[..., 2 * H:] * r)
        n = act[..., 2 * H:]
        return (h - n) * z + n, act


def gru_cell_backward(xp, dh2, h, gh, act):
    """(d gi, d gh, dh) of ``gru_cell`` from the gradient of h2."""
    H = h.shape[-1]
    if _cells_loop(dh2, h, gh, act):
        dgi, dgh, dh = numpy.empty_like(act), numpy.empty_like(act), numpy.empty_like(h)
        fused.gru_cell_grad(dh2, h, gh, act, dgi, dgh, dh, h.dtype.type(1))
        return dgi, dgh, dh
    r, z, n = act[..., :H], act[..., H:2 * H], act[..., 2 * H:]
    dn = dh2 * (1 - z) * (1 - n * n)
    dr = dn * gh[..., 2 * H:] * r * (1 - r)
    dgi = xp.empty_like(act)
    dgi[..., :H] = dr
    dgi[..., H:2 * H] = dh2 * (h - n) * z * (1 - z)
    dgi[..., 2 * H:] = dn
    dgh = dgi.copy()
    dgh[..., 2 * H:] = dn * r
    return dgi, dgh, dh2 * z

