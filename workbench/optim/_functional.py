"""In-place array helpers shared by the optimizers (raw numpy/cupy arrays, PyTorch's rounding order).

Every helper writes through ``tmp``, a scratch array of the parameter's shape (see
``Optimizer._scratch``), so a step allocates nothing: with large parameters every fresh temporary
costs page faults on every step.
"""
from .._backend import blas, fused


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
    out <- m / (sqrt(v, or mx) / bc2_sqrt + eps), PyTorch's rounding order (``out`` may be ``tmp``).

    >>> import numpy as np
    >>> m, v, out = np.zeros(1), np.zeros(1), np.empty(1)
    >>> adam_direction_(np, m, v, None, np.ones(1), 0.5, 0.75, 0.5, 0.0, out, out)
    array([0.5])
    """
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
    g + mom b (into out, also the scratch of the damped product).

    >>> import numpy as np
    >>> b = np.ones(2); momentum_(np, b, np.array([1.0, 2.0]), 0.5, 0.0, True, np.empty(2)), b
    (array([1.75, 3.25]), array([1.5, 2.5]))
    """
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


def _loop_args(x, *arrays):
    """Whether ``fused``'s one-pass parameter updates serve x and these arrays (any size: the caller decides
    whether the group is worth it), and whether x's update then fuses the multiply-add as ``blas.axpy`` would
    (so the loop gives the NumPy form's bits either way)."""
    ok = fused.usable(x, *arrays, min_size=1) and x.flags.writeable
    return ok, ok and x.size >= blas.MIN_SIZE and blas.one_pass()


def adam_step_(xp, x, g, m, v, mx, beta1, beta2, bc2_sqrt, eps, step_size, tmp, scratch, loop=True):
    """One Adam update of the array x in place, PyTorch's rounding order: m <- lerp(m, g, 1 - beta1),
    v <- beta2 v + (1 - beta2) g g (with amsgrad, mx <- max(mx, v), used for v below),
    x <- x - step_size m / (sqrt(v) / bc2_sqrt + eps). With ``loop`` and where the compiled loop serves
    (``fused.adam_step``) one pass instead of eleven, the same roundings; else NumPy passes through ``tmp``
    and ``scratch`` (shaped like x; one array may serve as both) and ``blas.axpy``.

    >>> import numpy as np
    >>> x, m, v = np.ones(2), np.zeros(2), np.zeros(2)
    >>> adam_step_(np, x, np.array([1.0, -1.0]), m, v, None, 0.9, 0.999, 0.001 ** 0.5, 1e-8, 0.01 / 0.1,
    ...            np.empty(2), np.empty(2)); x, m
    (array([0.99, 1.01]), array([ 0.1, -0.1]))
    """
    ok, fma = _loop_args(x, g, m, v, *(() if mx is None else (mx,))) if loop else (False, False)
    if ok:
        dt = x.dtype.type
        weight = 1 - beta1
        hi = weight >= 0.5
        fused.adam_step(x.reshape(-1), g.reshape(-1), m.reshape(-1), v.reshape(-1),
                        (v if mx is None else mx).reshape(-1), dt(1.0 - weight if hi else weight), hi, dt(beta2),
                        dt(1 - beta2), dt(bc2_sqrt), dt(eps), mx is not None, dt(-step_size), fma)
        return
    adam_direction_(xp, m, v, mx, g, beta1, beta2, bc2_sqrt, eps, tmp, scratch)
    if not blas.axpy(-step_size, tmp, x):  # x += -step_size * m / denom (PyTorch's addcdiv_)
        tmp *= -step_size
        x += tmp


def sgd_step_(xp, x, g, b, lr, mom, damp, nesterov, tmp, loop=True):
    """One SGD-momentum update of the array x in place: b <- mom b + (1 - dampening) g, then x -= lr b (with
    Nesterov x -= lr (g + mom b)). With ``loop`` and where the compiled loop serves (``fused.sgd_step``) one
    pass, the same roundings; else NumPy passes (``tmp``, shaped like x, holds the damped product and
    Nesterov's direction) and ``blas.axpy``.

    >>> import numpy as np
    >>> x, b = np.ones(2), np.array([1.0, 0.0])
    >>> sgd_step_(np, x, np.array([1.0, 2.0]), b, 0.1, 0.5, 0.0, False, np.empty(2)); x, b
    (array([0.85, 0.8 ]), array([1.5, 2. ]))
    """
    ok, fma = _loop_args(x, g, b) if loop else (False, False)
    if ok:
        dt = x.dtype.type
        fused.sgd_step(x.reshape(-1), g.reshape(-1), b.reshape(-1), dt(mom), dt(1 - damp), damp != 0, nesterov,
                       dt(-lr), fma)
        return
    sgd_update_(xp, x, momentum_(xp, b, g, mom, damp, nesterov, tmp), lr, tmp)


def sgd_update_(xp, x, d, lr, tmp):
    """x -= lr d: one pass through BLAS's axpy where NumPy's BLAS serves, else a scaled copy into tmp (may be d)
    and a subtraction.

    >>> import numpy as np
    >>> x = np.ones(2); sgd_update_(np, x, np.ones(2), 0.5, np.empty(2)); x
    array([0.5, 0.5])
    """
    if not blas.axpy(-lr, d, x):
        xp.multiply(d, lr, out=tmp)
        x -= tmp
