"""In-place array helpers shared by the optimizers (raw numpy/cupy arrays, PyTorch's rounding order).

Every helper writes through ``tmp``, a scratch array of the parameter's shape (see
``Optimizer._scratch``), so a step allocates nothing: with large parameters every fresh temporary
costs page faults on every step.
"""


def lerp_(xp, m, end, weight, tmp):
    """m <- m + weight * (end - m), as PyTorch's lerp (the other form when weight >= 0.5).  >>> lerp_(np, m, g, 0.1, tmp)"""
    xp.subtract(end, m, out=tmp)
    if weight < 0.5:
        tmp *= weight
        m += tmp
    else:
        tmp *= 1.0 - weight
        xp.subtract(end, tmp, out=m)


def addcmul_(xp, a, t1, t2, value, tmp):
    """a <- a + value * t1 * t2.  >>> addcmul_(np, v, g, g, 0.001, tmp)"""
    xp.multiply(t1, value, out=tmp)
    tmp *= t2
    a += tmp


def addcdiv_(xp, a, t1, t2, value, tmp):
    """a <- a + value * t1 / t2.  >>> addcdiv_(np, p, m, denom, -0.01, tmp)"""
    xp.multiply(t1, value, out=tmp)
    tmp /= t2
    a += tmp


def weight_decay_(x, g, lr, wd, decoupled):
    """Weight decay: shrink x in place (decoupled, AdamW-style) or return g + wd * x (L2).  >>> g = weight_decay_(x, g, 1e-3, 0.01, True)"""
    if wd != 0:
        if decoupled:
            x *= 1 - lr * wd
        else:
            return g + x * wd
    return g


def adam_moments_(xp, m, v, g, beta1, beta2, tmp):
    """Adam's moments in place: m <- lerp(m, g, 1 - beta1), v <- beta2 v + (1 - beta2) g g.  >>> adam_moments_(np, m, v, g, 0.9, 0.999, tmp)"""
    lerp_(xp, m, g, 1 - beta1, tmp)
    v *= beta2
    addcmul_(xp, v, g, g, 1 - beta2, tmp)
