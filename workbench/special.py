"""``workbench.special``: PyTorch's ``torch.special`` namespace.

Everything is computed in array ops on the tensor's device (ops/special.py), except the Bessel J/Y/K
functions, airy_ai and gammainc/gammaincc, which call SciPy (``cupyx.scipy`` on CUDA), an optional
dependency. Gradients follow PyTorch's formulas; where PyTorch has none (the polynomials, airy_ai, the
exponent of zeta, the first argument of gammainc) backward raises, as there.

>>> import workbench as wb
>>> wb.special.gammaln(wb.tensor([4.0]))
tensor([1.7918])
"""
from .ops.activation import log_softmax, softmax
from .ops.elementwise import exp2, expm1, log1p, logit, round, xlogy
from .ops.elementwise import sigmoid as expit
from .ops.reduce import logsumexp
from .ops.special import (airy_ai, bessel_j0, bessel_j1, bessel_y0, bessel_y1, chebyshev_polynomial_t,
                          chebyshev_polynomial_u, chebyshev_polynomial_v, chebyshev_polynomial_w, digamma, entr, erf,
                          erfc, erfcx, erfinv, gammainc, gammaincc, hermite_polynomial_h, hermite_polynomial_he, i0,
                          i0e, i1, i1e, laguerre_polynomial_l, legendre_polynomial_p, log_ndtr, modified_bessel_k0,
                          modified_bessel_k1, ndtr, ndtri, polygamma, scaled_modified_bessel_k0,
                          scaled_modified_bessel_k1, shifted_chebyshev_polynomial_t, shifted_chebyshev_polynomial_u,
                          shifted_chebyshev_polynomial_v, shifted_chebyshev_polynomial_w, sinc, spherical_bessel_j0,
                          xlog1py, zeta)
from .ops.special import lgamma as gammaln
from .ops.special import mvlgamma as _mvlgamma

psi = digamma
modified_bessel_i0 = i0
modified_bessel_i1 = i1


def multigammaln(input, p, *, out=None):
    """The multivariate log-gamma function of dimension p (PyTorch's torch.special.multigammaln).

    >>> import workbench as wb
    >>> wb.special.multigammaln(wb.tensor([2.5]), 2)
    tensor([0.8570])
    """
    return _mvlgamma(input, p, out=out)


__all__ = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
           "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf",
           "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln",
           "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l",
           "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "modified_bessel_i0",
           "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri",
           "polygamma", "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "sinc", "softmax", "spherical_bessel_j0", "xlog1py", "xlogy", "zeta"]

# NumPy's spellings (axis=, keepdims=), as PyTorch's argument parser takes them: see ops/_numpy_names.py
from .ops._numpy_names import numpy_names as _numpy_names  # noqa: E402

globals().update({_n: _numpy_names(globals()[_n]) for _n in __all__})
