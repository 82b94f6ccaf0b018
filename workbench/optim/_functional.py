"""In-place array helpers shared by the optimizers (raw numpy/cupy arrays, PyTorch's rounding order)."""


def lerp_(m, end, weight):
    """m <- m + weight * (end - m), computed as PyTorch's lerp (the other form when weight >= 0.5)."""
    tmp = end - m
    if weight < 0.5:
        tmp *= weight
        m += tmp
    else:
        tmp *= 1.0 - weight
        m[...] = end - tmp


def addcmul_(a, t1, t2, value):
    """a <- a + value * t1 * t2."""
    tmp = t1 * value
    tmp *= t2
    a += tmp


def addcdiv_(a, t1, t2, value):
    """a <- a + value * t1 / t2."""
    tmp = t1 * value
    tmp /= t2
    a += tmp


def check_differentiable(differentiable):
    if differentiable:
        raise RuntimeError("differentiable=True is not supported: workbench optimizers update parameters in place "
                           "outside autograd. Write the update in tensor ops if you need to differentiate through it.")
