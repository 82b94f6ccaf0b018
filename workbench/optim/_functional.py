"""In-place array helpers shared by the optimizers (raw numpy/cupy arrays, PyTorch's rounding order).

Every helper writes through ``tmp``, a scratch array of the parameter's shape (see
``Optimizer._scratch``), so a step allocates nothing: with large parameters every fresh temporary
costs page faults on every step.
"""


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
