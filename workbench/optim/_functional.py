"""In-place array helpers shared by the optimizers (raw numpy/cupy arrays, PyTorch's rounding order).

Every helper writes through ``tmp``, a scratch array of the parameter's shape (see
``Optimizer._scratch``), so a step allocates nothing: with large parameters every fresh temporary
costs page faults on every step.
"""
from .._backend import fused


def lerp_(xp, m, end, weight, tmp):
    """m <- m + weight * (end - m), as PyTorch's lerp (the other form when weight >= 0.5).

    >>> import numpy as np
    >>> m = np.zeros(2); lerp_(np, m, np.array([1.0, 2.0]), 0.1, np.empty(2)); m
    array([0.1, 0.2])
    """
    xp.subtract(end, m, out=tmp)
    if weight < 0.5:
        tmp *= weight
        m += tmp
    else:
        tmp *= 1.0 - weight
        xp.subtract(end, tmp, out=m)


def addcmul_(xp, a, t1, t2, value, tmp):
    """a <- a + value * t1 * t2.

    >>> import numpy as np
    >>> v, g = np.ones(2), np.array([1.0, 2.0]); addcmul_(np, v, g, g, 0.5, np.empty(2)); v
    array([1.5, 3. ])
    """
    xp.multiply(t1, value, out=tmp)
    tmp *= t2
    a += tmp


def addcdiv_(xp, a, t1, t2, value, tmp):
    """a <- a + value * t1 / t2.

    >>> import numpy as np
    >>> p = np.ones(2); addcdiv_(np, p, np.array([1.0, 2.0]), np.array([2.0, 2.0]), -0.5, np.empty(2)); p
    array([0.75, 0.5 ])
    """
    xp.multiply(t1, value, out=tmp)
    tmp /= t2
    a += tmp


def weight_decay_(x, g, lr, wd, decoupled):
    """Weight decay: shrink x in place (decoupled, AdamW-style) or return g + wd * x (L2).

    >>> import numpy as np
    >>> x, g = np.ones(2), np.zeros(2)
    >>> weight_decay_(x, g, 0.1, 0.5, False), x
    (array([0.5, 0.5]), array([1., 1.]))
    >>> weight_decay_(x, g, 0.1, 0.5, True), x
    (array([0., 0.]), array([0.95, 0.95]))
    """
    if wd != 0:
        if decoupled:
            x *= 1 - lr * wd
        else:
            return g + x * wd
    return g


def adam_moments_(xp, m, v, g, beta1, beta2, tmp):
    """Adam's moments in place: m <- lerp(m, g, 1 - beta1), v <- beta2 v + (1 - beta2) g g.

    >>> import numpy as np
    >>> m, v = np.zeros(2), np.zeros(2); adam_moments_(np, m, v, np.array([1.0, 2.0]), 0.5, 0.75, np.empty(2)); m, v
    (array([0.5, 1. ]), array([0.25, 1.  ]))
    """
    lerp_(xp, m, g, 1 - beta1, tmp)
    v *= beta2
    addcmul_(xp, v, g, g, 1 - beta2, tmp)


def adam_direction_(xp, m, v, mx, g, beta1, beta2, bc2_sqrt, eps, out, tmp):
    """Adam's moments in place (``adam_moments_``; with amsgrad, mx <- max(mx, v)) and its direction
    out <- m / (sqrt(v, or mx) / bc2_sqrt + eps), PyTorch's rounding order. Where the compiled loops serve
    (``fused.adam_direction``) one pass instead of ten, the same operations on the same roundings, so the
    same bits.  >>> adam_direction_(np, m, v, None, g, 0.9, 0.999, 0.1, 1e-8, out, tmp)"""
    if fused.usable(g, m, v, out, *(() if mx is None else (mx,))):
        dt = g.dtype.type
        weight = 1 - beta1
        hi = weight >= 0.5
        fused.adam_direction(g.reshape(-1), m.reshape(-1), v.reshape(-1), (v if mx is None else mx).reshape(-1),
                             out.reshape(-1), dt(1.0 - weight if hi else weight), hi, dt(beta2), dt(1 - beta2),
                             dt(bc2_sqrt), dt(eps), mx is not None)
        return out
    adam_moments_(xp, m, v, g, beta1, beta2, tmp)
    if mx is not None:
        xp.maximum(mx, v, out=mx)
        v = mx
    xp.sqrt(v, out=out)
    out /= bc2_sqrt
    out += eps
    return xp.divide(m, out, out=out)


def momentum_(xp, b, g, mom, damp, nesterov, out):
    """SGD's momentum buffer in place, b <- mom b + (1 - dampening) g, and the direction: b, or with Nesterov
    g + mom b (into out, also the scratch of the damped product). One pass where the compiled loops serve
    (``fused.momentum``), the same bits.  >>> d = momentum_(np, b, g, 0.9, 0, False, out)"""
    if fused.usable(g, b, out):
        dt = g.dtype.type
        fused.momentum(b.reshape(-1), g.reshape(-1), out.reshape(-1), dt(mom), dt(1 - damp), damp != 0, nesterov)
        return out if nesterov else b
    b *= mom
    if damp == 0:  # g * 1.0 is g exactly: one pass less
        b += g
    else:
        xp.multiply(g, 1 - damp, out=out)
        b += out
    if not nesterov:
        return b
    xp.multiply(b, mom, out=out)
    out += g
    return out
