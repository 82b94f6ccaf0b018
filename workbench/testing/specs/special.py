"""Specs of workbench.special (ops/special.py): SciPy is the NumPy reference, PyTorch the contract.

Functions PyTorch cannot differentiate (the Bessel J/Y/K family, airy_ai, the polynomials) are checked
against PyTorch by value (values_only samples); their gradients, where workbench has them, by gradcheck.
"""
import numpy as np

import workbench as wb
from workbench.testing.op_specs import Sample, arr, spec


def _sp(name, *pre):
    def f(*args, **kw):
        import scipy.special

        return getattr(scipy.special, name)(*pre, *args, **kw)

    return f


def _torch(name, *pre):
    def f(*args, **kw):
        import torch

        return getattr(torch.special, name)(*pre, *args, **kw)

    return f


def S(*args, **kw):
    return Sample(list(args), kw)


def V(why, *args):
    """A values-only sample, with the reason its gradient is not checked."""
    return Sample(list(args), values_only=why)


_NO_DERIVATIVE = "PyTorch implements no derivative for it, and neither does workbench (backward raises)"


X = arr(3, 4)
POS = arr(3, 4, low=0.2, high=3.0, seed=1)
BIG = arr(3, 4, low=1.2, high=4.0, seed=4)
PROB = arr(3, 4, low=0.05, high=0.95, seed=3)
NEG = np.array([[-2.5, -1.3, -0.7, 0.4], [-3.2, -0.1, 5.5, 12.0], [-4.6, -1.9, 0.9, 30.0]])
TAIL = np.array([[-30.0, -8.0, -1.5, -0.5], [0.0, 0.7, 3.0, 9.0], [-20.0, -2.2, 1.0, 6.0]])
TINY = np.array([[1e-300, 1e-40, 1e-10, 0.01], [0.3, 0.5, 0.8, 0.999], [1 - 1e-12, 0.03, 0.97, 2e-3]])

_TRIGAMMA = "PyTorch's trigamma (the derivative) is good to ~1e-9 only: tests/ops/test_special.py compares it there"
for _name, _ref, _x in [("gammaln", "gammaln", POS * 3), ("gammaln_negative", "gammaln", NEG),
                        ("digamma", "digamma", POS * 3), ("digamma_negative", "digamma", NEG),
                        ("erfcx", "erfcx", X * 4), ("ndtr", "ndtr", X * 3), ("log_ndtr", "log_ndtr", TAIL),
                        ("ndtri", "ndtri", PROB), ("i0", "i0", X * 3),
                        ("i0e", "i0e", X * 3), ("i1", "i1", X * 3), ("i1e", "i1e", X * 3), ("entr", "entr", POS),
                        ("sinc", "sinc", X)]:
    _fn = _name.split("_negative")[0]
    _ref_fn = np.sinc if _fn == "sinc" else _sp(_ref)
    spec(f"special.{_name}", getattr(wb.special, _fn), _ref_fn, [S(_x)],
         torch_op=None if _fn == "digamma" else _torch(_fn), no_torch=_TRIGAMMA if _fn == "digamma" else "",
         family="special")
spec("special.ndtri_tails", wb.special.ndtri, _sp("ndtri"),
     [V("far in the tails finite differences cannot resolve ndtri's slope", TINY)], torch_op=_torch("ndtri"),
     family="special")
for _n in (1, 2, 3):
    spec(f"special.polygamma_{_n}", (lambda n: lambda x: wb.special.polygamma(n, x))(_n), _sp("polygamma", _n),
         [S(POS * 2), S(NEG)], torch_op=None if _n == 1 else _torch("polygamma", _n),
         no_torch=_TRIGAMMA if _n == 1 else "", family="special")
spec("polygamma_method", lambda x: x.polygamma(2), _sp("polygamma", 2), [S(POS)],
     torch_op=lambda x: x.polygamma(2), family="special")
spec("special.multigammaln", lambda x: wb.special.multigammaln(x, 3), lambda x: _sp("multigammaln")(x, 3) * 0 +
     np.vectorize(lambda v: _sp("multigammaln")(v, 3))(x), [S(BIG + 1)],
     torch_op=lambda x: _torch("multigammaln")(x, 3), family="special")
spec("special.zeta", wb.special.zeta, _sp("zeta"),
     [Sample([BIG, POS], nondiff=[0]), V("a Python-number q leaves only the exponent, which has no derivative", BIG, 0.7)],
     torch_op=_torch("zeta"), family="special")
spec("special.xlog1py", wb.special.xlog1py, lambda a, b: a * np.log1p(b), [S(X, POS), S(X, 2.0)],
     torch_op=_torch("xlog1py"), family="special")
spec("special.spherical_bessel_j0", wb.special.spherical_bessel_j0, lambda x: np.sinc(x / np.pi), [S(X * 3)],
     no_torch="PyTorch has no gradient for it (its output has no grad_fn); gradcheck checks workbench's",
     family="special")
spec("special.gammainc", wb.special.gammainc, _sp("gammainc"), [Sample([BIG, POS], nondiff=[0])],
     torch_op=_torch("gammainc"), family="special")
spec("special.gammaincc", wb.special.gammaincc, _sp("gammaincc"), [Sample([BIG, POS], nondiff=[0])],
     torch_op=_torch("gammaincc"), family="special")
for _name, _ref, _x in [("bessel_j0", "j0", X * 4), ("bessel_j1", "j1", X * 4), ("bessel_y0", "y0", POS * 3),
                        ("bessel_y1", "y1", POS * 3), ("modified_bessel_k0", "k0", POS),
                        ("modified_bessel_k1", "k1", POS), ("scaled_modified_bessel_k0", "k0e", POS),
                        ("scaled_modified_bessel_k1", "k1e", POS)]:
    spec(f"special.{_name}", getattr(wb.special, _name), _sp(_ref), [S(_x)], family="special",
         no_torch="PyTorch has no gradient for it, and its values are good to ~1e-6 only (tests/ops/test_special.py "
                  "compares them at that tolerance)")
spec("special.airy_ai", wb.special.airy_ai, lambda x: _sp("airy")(x)[0], [V(_NO_DERIVATIVE, X * 3)],
     no_torch="PyTorch's values are good to ~1e-7 only here (SciPy's, the NumPy reference, to 1e-15)", family="special")
_N = np.array([[0, 1, 2, 3], [4, 5, 7, 9], [-1, 6, 8, 11]])
for _name in ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
              "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
              "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
              "laguerre_polynomial_l", "legendre_polynomial_p"]:
    spec(f"special.{_name}", getattr(wb.special, _name), None,
         [V(_NO_DERIVATIVE, PROB if "shifted" in _name else X * 0.45, _N)],
         no_ref="PyTorch is the contract, and SciPy's eval_* differ from it at negative degrees (PyTorch gives 0)",
         torch_op=_torch(_name), family="special")
