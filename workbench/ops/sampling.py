"""Sampling primitives with gradients: the standard gamma draw with its implicit reparameterization.

``_standard_gamma(alpha)`` draws x ~ Gamma(alpha, 1) from the default generator's stream for the tensor's
device. Its gradient is the implicit one (Figurnov et al. 2018): holding the draw's quantile u = P(alpha, x)
fixed, dx/dalpha = -(dP/dalpha) / (dP/dx). With the series P(alpha, x) = x^a e^-x sum_k x^k / Gamma(a+k+1),
whose terms t_k = prod_{j<=k} x / (a + j) carry digamma(a + k + 1) = digamma(a + 1) + sum_{j<=k} 1 / (a + j),
this is

    dx/dalpha = -(x / a) * sum_k t_k (log x - digamma(a + k + 1)),

summed in float64 until the terms fall below 1e-17 of the sum (so it is exact to rounding, where PyTorch's
_standard_gamma_grad uses approximations accurate to ~1e-3 .. 1e-6 relative). Beta and Dirichlet samples
are normalized gamma draws, so their gradients follow from these by the chain rule.
"""
from .._backend import device_of
from ..autograd.function import Function
from ..random import default_generator
from .special import digamma_array

_CHUNK = 32  # series terms between convergence checks


def standard_gamma_grad_array(xp, x, alpha):
    """dx/dalpha of a Gamma(alpha, 1) draw x at a fixed quantile (float64 arrays in, float64 out)."""
    with xp.errstate(all="ignore") if hasattr(xp, "errstate") else _NullCtx():
        a = alpha
        logx = xp.log(x)
        psi = digamma_array(xp, a + 1.0)
        t = xp.ones_like(x)
        total = logx - psi
        k = 0
        while True:
            for _ in range(_CHUNK):
                k += 1
                t = t * x / (a + k)
                psi = psi + 1.0 / (a + k)
                total = total + t * (logx - psi)
            # the terms decrease once a + k > x; stop when every one left is below rounding
            if k > 100000 or not bool(((t * (xp.abs(logx - psi) + 1.0) > 1e-17 * xp.abs(total)) & (t > 0)
                                       & xp.isfinite(total)).any()):
                break
        out = -(x / a) * total
        return xp.where(xp.isnan(out), 0.0, out)


class _NullCtx:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


class StandardGamma(Function):
    _raw = True
    op_name = "standard_gamma"

    @staticmethod
    def forward(ctx, alpha, generator):
        xp = ctx.xp
        rs = (generator or default_generator)._stream(device_of(alpha))
        x = rs.standard_gamma(alpha.astype("float64")).astype(alpha.dtype)
        tiny = {2: 6.103515625e-05, 4: 1.1754943508222875e-38, 8: 2.2250738585072014e-308}[x.dtype.itemsize]
        x = xp.maximum(x, x.dtype.type(tiny))  # PyTorch clamps draws to the dtype's smallest normal
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, g):
        alpha, x = ctx.saved_tensors
        xp = ctx.xp
        d = standard_gamma_grad_array(xp, x._data.astype("float64"), alpha._data.astype("float64"))
        return g * type(g)._make(d.astype(g._data.dtype)), None


def standard_gamma(alpha, generator=None):
    """Draws of Gamma(alpha, 1), differentiable in alpha (implicit reparameterization).

    >>> import workbench as wb
    >>> from workbench.ops.sampling import standard_gamma
    >>> standard_gamma(wb.full((3,), 2.0)).shape
    workbench.Size([3])
    """
    return StandardGamma.apply(alpha, generator)
