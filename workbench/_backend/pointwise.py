"""Pointwise activations and their gradients as a few in-place ufunc passes, a cache-sized block at a time.

Why this shape: on 1M float32 elements a NumPy pass costs ~0.3 ms from memory and ~0.12 ms on a block
that stays in L2, a fresh temporary per term doubles that, and anything that selects by a random mask
(``where``, ``copyto(where=)``, boolean indexing) costs ~4 ms (the branch is mispredicted half the time).
So every kernel here selects by multiplying with a mask or by ``minimum``/``maximum``/``clip``, writes
into its output with ``out=``, and runs on blocks of ``BLOCK`` elements. The formulas are PyTorch's
(``aten/src/ATen/native/cpu/Activation.cpp``), which these results are compared against.

Each kernel is ``name(xp, out, *arrays, *params)`` on same-shape C-contiguous blocks; ``run`` applies it
over whole arrays. Selections with a mask that is true almost nowhere for real inputs (softplus above
its threshold) use ``copyto(where=)`` after an ``any()``: a predictable branch costs nothing.

Where Numba is installed, ``run`` hands C-contiguous arrays of any size to the one-pass loops of ``fused``
instead (``FUSED`` maps a kernel to its twin there), and the piecewise kernels do the same for large ones. On a
small array the loop's ~1 us call beats the NumPy form's few passes and ``errstate`` (an LSTM gate's sigmoid on
16 x 128: 8 us, PyTorch's 1.7 us).
"""
import numpy

from . import fused

BLOCK = 1 << 15  # elements: a block's few temporaries stay in the 1 MB L2


def eligible(*arrays):
    """Whether the kernels serve these arrays: float32/float64 of one shape and dtype."""
    a = arrays[0]
    dt = a.dtype
    if dt.kind != "f" or dt.itemsize < 4:
        return False
    for b in arrays[1:]:  # a loop, not all() over a generator: this runs before every activation
        if b.shape != a.shape or b.dtype != dt:
            return False
    return True


def quiet():
    """Floating-point warnings off: these kernels overflow exp to inf on purpose (1 / (1 + inf) = 0)."""
    return numpy.errstate(all="ignore")


def run(xp, kernel, arrays, *params):
    """kernel over same-shape arrays into a fresh array of their shape, blockwise on NumPy."""
    x = arrays[0]
    if x.ndim == 0:  # ufuncs return scalars for 0-d operands, and out= needs arrays
        return run(xp, kernel, [a.reshape(1) for a in arrays], *params).reshape(())
    if x.__class__ is numpy.ndarray:
        twin = FUSED.get(kernel)
        if twin is None and x.dtype.char == "f":
            twin = FUSED32.get(kernel)
        if twin is not None:  # any size: one pass, no errstate, ~1 us a call (a loop raises no NumPy warnings)
            flat = []
            for a in arrays:
                if not a.flags.c_contiguous:
                    if x.size > 2 * BLOCK:
                        break
                    a = numpy.ascontiguousarray(a)  # a small slice (an LSTM gate's): one copy, then the loop
                flat.append(a.reshape(-1))
            else:
                if fused.usable(*flat, min_size=1):
                    out = numpy.empty(x.shape, x.dtype)
                    twin(out.reshape(-1), *flat, *params)
                    return out
    out = xp.empty(x.shape, x.dtype)
    with quiet():
        if xp is not numpy or x.size <= 2 * BLOCK:
            kernel(xp, out, *arrays, *params)
            return out
        flat = [xp.ascontiguousarray(a).reshape(-1) for a in arrays]
        o = out.reshape(-1)
        for i in range(0, x.size, BLOCK):
            kernel(xp, o[i:i + BLOCK], *[a[i:i + BLOCK] for a in flat], *params)
    return out


# --- piecewise-linear: (y, the bool mask where the slope is not 0, or None when no gradient is wanted) ----
def hardtanh(xp, x, lo, hi, want_mask):
    y = xp.clip(x, lo, hi)
    if not want_mask:
        return y, None
    m = xp.greater(x, lo)
    m &= xp.less(x, hi)
    return y, m


def hardshrink(xp, x, lambd, want_mask):
    if fused.usable(x):
        y, m = xp.empty_like(x), xp.empty(x.shape, bool)
        fused.hardshrink(x.reshape(-1), y.reshape(-1), m.reshape(-1), x.dtype.type(lambd))
        return y, m if want_mask else None
    m = xp.greater(x, lambd)  # |x| > l as two bool passes: cheaper than abs into a float temporary
    m |= xp.less(x, -lambd)
    y = xp.multiply(x, m)  # x * 0 keeps NaN, as PyTorch's
    y += 0  # and -0. + 0 is 0.: a dropped negative is 0., as PyTorch's (not -0.)
    return y, m if want_mask else None


def softshrink(xp, x, lambd, want_mask):  # x - clip(x, -l, l): x - l above l, x + l below -l, 0 between
    if fused.usable(x):
        y, m = xp.empty_like(x), xp.empty(x.shape, bool)
        fused.softshrink(x.reshape(-1), y.reshape(-1), m.reshape(-1), x.dtype.type(lambd))
        return y, m if want_mask else None
    y = xp.clip(x, -lambd, lambd)
    xp.subtract(x, y, out=y)
    if not want_mask:
        return y, None
    m = xp.greater(x, lambd)  # |x| > l, so NaN has slope 0, as PyTorch's
    m |= xp.less(x, -lambd)
    return y, m


def threshold(xp, x, th, value, want_mask):  # PyTorch's x <= th ? value : x: NaN passes, with slope 1
    if fused.usable(x):
        y, m = xp.empty_like(x), xp.empty(x.shape, bool)
        fused.threshold(x.reshape(-1), y.reshape(-1), m.reshape(-1), x.dtype.type(th), x.dtype.type(value))
        return y, m if want_mask else None
    m = xp.less_equal(x, th)  # where value replaces x; a kept -0. and a value of -0. keep their signs
    y = x.copy()
    xp.copyto(y, y.dtype.type(value), where=m)
    return y, xp.logical_not(m, out=m) if want_mask else None


def hardsigmoid(xp, x, want_mask):
    if fused.usable(x):
        y, m = xp.empty_like(x), xp.empty(x.shape, bool)
        fused.hardsigmoid(x.reshape(-1), y.reshape(-1), m.reshape(-1), *map(x.dtype.type, (0, 3, 6)))
        return y, m if want_mask else None
    y = xp.add(x, 3)
    xp.clip(y, 0, 6, out=y)
    y /= 6
    if not want_mask:
        return y, None
    m = xp.greater(x, -3)
    m &= xp.less(x, 3)
    return y, m


# --- rectifiers -------------------------------------------------------------------------------------
def leaky_relu(xp, out, x, s):  # 0 <= s <= 1: max(x, s x) is x above 0 and s x below
    xp.multiply(x, s, out=out)
    if s == 0:  # inf * 0 is NaN, which max keeps; PyTorch's x > 0 ? x : x * s gives inf
        xp.copyto(out, x, where=xp.greater(x, 0))
    else:
        xp.maximum(out, x, out=out)


def leaky_relu_grad(xp, out, g, x, s):  # 0 <= s <= 1: max(x > 0, s) is 1 or s
    xp.greater(x, 0, out=out)
    xp.maximum(out, s, out=out)
    out *= g


def elu(xp, out, x, alpha, scale, input_scale):
    # PyTorch's x > 0 ? scale * x : alpha * scale * expm1(input_scale * x), so -0. gives -0. (a sum of the two
    # sides would give 0.; minimum(x, 0) is 0. at x = -0.). out may be x (elu_).
    pos = xp.greater(x, 0)
    n = xp.where(pos, x.dtype.type(0), x)
    if input_scale != 1:
        n *= input_scale
    xp.expm1(n, out=n)
    n *= alpha * scale
    xp.multiply(x, scale, out=out)
    xp.copyto(out, n, where=xp.logical_not(pos, out=pos))


def elu_grad(xp, out, g, x, alpha, scale, input_scale):
    # scale above 0, alpha * scale * input_scale * exp(input_scale * x) below (NaN stays NaN)
    xp.minimum(x, 0, out=out)
    if input_scale != 1:
        out *= input_scale
    xp.exp(out, out=out)
    c = alpha * scale * input_scale
    if c == scale:  # alpha = 1 (elu's and celu's default): exp(0) * c is already the slope above 0
        if c != 1:
            out *= c
        out *= g
        return
    out *= c
    pos = xp.greater(x, 0)
    t = out.dtype.type
    if 0 < scale and t(c) / 2 <= t(scale) <= 2 * t(c):  # selu: above 0, c - (c - scale) is scale exactly
        out -= xp.multiply(pos, t(c) - t(scale))  # (Sterbenz: c - scale is exact, and so is c minus it)
    else:
        out *= ~pos
        out += xp.multiply(pos, t(scale))
    out *= g


def hardswish(xp, out, x):  # x * clip(x + 3, 0, 6) / 6, in that order
    xp.add(x, 3, out=out)
    xp.clip(out, 0, 6, out=out)
    out *= x
    out /= 6


def hardswish_grad(xp, out, g, x):  # PyTorch's selects: 0 up to -3, g from 3 on, g * (x / 3 + 0.5) between
    xp.divide(x, 3, out=out)
    out += 0.5
    out *= g
    xp.copyto(out, g, where=xp.greater_equal(x, 3))  # selects, not masks: at x = +-inf the slope term is inf or NaN
    xp.copyto(out, out.dtype.type(0), where=xp.less_equal(x, -3))


# --- smooth activations -----------------------------------------------------------------------------
def sigmoid(xp, out, x):
    xp.negative(x, out=out)
    xp.exp(out, out=out)
    out += 1
    xp.reciprocal(out, out=out)


def sigmoid_grad_from_y(xp, out, g, y):
    xp.subtract(1, y, out=out)
    out *= y
    out *= g


def silu(xp, out, x):
    xp.negative(x, out=out)
    xp.exp(out, out=out)
    out += 1
    xp.divide(x, out, out=out)


def silu_grad(xp, out, g, x):  # s (1 + x (1 - s)), s = sigmoid(x)
    sigmoid(xp, out, x)
    t = xp.subtract(1, out)
    t *= x
    t += 1
    out *= t
    out *= g


def _exp_beta(xp, out, x, beta, threshold):
    """out <- exp(beta x); returns the mask beta x > threshold (where softplus is x itself)."""
    if beta != 1:
        xp.multiply(x, beta, out=out)
        big = xp.greater(out, threshold)
        xp.exp(out, out=out)
    else:
        big = xp.greater(x, threshold)
        xp.exp(x, out=out)
    return big


def mask_mul(xp, g, m, slope):
    """g * slope where the bool mask m holds, 0 elsewhere: the piecewise activations' backward."""
    if fused.usable(g) and m.shape == g.shape and m.flags.c_contiguous:
        d = xp.empty_like(g)
        fused.mask_mul(g.reshape(-1), m.reshape(-1), d.reshape(-1), g.dtype.type(slope))
        return d
    # a select, not g * m: an inf or NaN g where the mask is off gives 0 (not NaN), a negative one 0. (not -0.)
    return xp.where(m, g * g.dtype.type(slope) if slope != 1 else g, g.dtype.type(0))


def softplus(xp, out, x, beta, threshold):  # log1p(exp(beta x)) / beta, x where beta x > threshold
    big = _exp_beta(xp, out, x, beta, threshold)
    xp.log1p(out, out=out)
    if beta != 1:
        out /= beta
    if big.any():
        xp.copyto(out, x, where=big)


def softplus_grad(xp, out, g, x, beta, threshold):  # z / (z + 1), z = exp(beta x); 1 above the threshold
    big = _exp_beta(xp, out, x, beta, threshold)
    z1 = out + 1
    out /= z1
    out *= g
    if big.any():
        xp.copyto(out, g, where=big)


def mish(xp, out, x):
    softplus(xp, out, x, 1, 20)
    xp.tanh(out, out=out)
    out *= x


def mish_grad(xp, out, g, x):  # t + x sigmoid(x) (1 - t^2), t = tanh(softplus(x))
    softplus(xp, out, x, 1, 20)
    xp.tanh(out, out=out)
    s = xp.empty_like(out)
    sigmoid(xp, s, x)
    s *= x
    u = out * out
    xp.subtract(1, u, out=u)
    s *= u
    out += s
    out *= g


def logsigmoid(xp, out, x):  # min(x, 0) - log1p(exp(-|x|))
    t = xp.abs(x)
    xp.negative(t, out=t)
    xp.exp(t, out=t)
    xp.log1p(t, out=t)
    xp.minimum(x, 0, out=out)
    out -= t


def logsigmoid_grad(xp, out, g, x):  # sigmoid(-x) = 1 / (1 + exp(x))
    xp.exp(x, out=out)
    out += 1
    xp.divide(g, out, out=out)


# kernel -> its one-pass twin in ``fused``, called as twin(out, *arrays, *params) on flat arrays; the params come
# as the caller's Python numbers: a twin rounds to the arrays' dtype what the NumPy form would (the constants
# the kernel multiplies by, after the arithmetic it does on them in double)
FUSED = {
    leaky_relu: lambda out, x, s: fused.leaky_relu(x, out, out.dtype.type(s)),
    leaky_relu_grad: lambda out, g, x, s: fused.leaky_relu_grad(g, x, out, out.dtype.type(s)),
    hardswish: lambda out, x: fused.hardswish(x, out, *map(out.dtype.type, (0, 3, 6))),
    hardswish_grad: lambda out, g, x: fused.hardswish_grad(g, x, out, *map(out.dtype.type, (3, 0.5))),
    sigmoid_grad_from_y: lambda out, g, y: fused.sigmoid_grad_from_y(g, y, out, out.dtype.type(1)),
}
# the loops built on fused._exp and fused._log1p (float32 only)
FUSED32 = {
    sigmoid: lambda out, x: fused.sigmoid(x, out),
    silu: lambda out, x: fused.silu(x, out),
    silu_grad: lambda out, g, x: fused.silu_grad(g, x, out),
    softplus: lambda out, x, b, th: fused.softplus(x, out, *map(out.dtype.type, (b, th))),
    softplus_grad: lambda out, g, x, b, th: fused.softplus_grad(g, x, out, *map(out.dtype.type, (b, th))),
    logsigmoid: lambda out, x: fused.logsigmoid(x, out),
    logsigmoid_grad: lambda out, g, x: fused.logsigmoid_grad(g, x, out),
    mish: lambda out, x: fused.mish(x, out),
    mish_grad: lambda out, g, x: fused.mish_grad(g, x, out),
    elu: lambda out, x, a, s, i: fused.elu(x, out, *map(out.dtype.type, (s, a * s, i))),
    elu_grad: lambda out, g, x, a, s, i: fused.elu_grad(g, x, out, *map(out.dtype.type, (s, a * s * i, i))),
}
