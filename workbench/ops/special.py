"""The special functions of ``torch.special``: the error function family (erf, erfc, erfinv, erfcx),
log-gamma and its derivatives (digamma, polygamma, the Hurwitz zeta function), the normal distribution's
ndtr/ndtri/log_ndtr, the modified Bessel functions i0/i1 and their exponentially scaled forms, entr, sinc,
xlog1py and the orthogonal polynomials.

NumPy has no erf, so erf and erfc are W. J. Cody-style rational approximations as in Cephes (relative
error about 1e-16 in float64), written in array ops so they run on any backend; erfinv starts from
M. Giles' approximation and polishes it with Halley steps on that erf. On real CuPy the three are
CUDA's own functions, one fused kernel each.

Each is computed in float64 array ops (so the same code runs on NumPy, CuPy and the fake cupy) and
returned in the input's dtype. The Bessel J/Y/K functions, airy_ai and the incomplete gamma function come
from SciPy (``cupyx.scipy`` on CUDA), an optional dependency (``_backend.scipy_special``).

Accuracy, float64, against SciPy (tests/ops/test_special.py): lgamma and digamma about 1e-15 relative
(Lanczos g=7; recurrence to 10 and the asymptotic series), zeta/polygamma 1e-14 (Euler-Maclaurin, as
Cephes), i0/i1 1e-15 (power series below 30, Hankel's expansion above).
"""
import math
from fractions import Fraction

from .. import _backend
from .._backend import dtypes
from .._core import Tensor
from ..autograd.function import Function
from ._autocast import AUTOCAST as _AUTOCAST
from ._autocast import cast as _autocast_cast
from ._util import _out, cast, check_operands, dtype_error, result_dtype, to_float

_np = _backend.numpy
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)
_SQRT1_2 = math.sqrt(0.5)
# Lanczos' approximation, g = 7, nine terms (Numerical Recipes / Godfrey's coefficients)
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)
# Bernoulli numbers B_2 .. B_24: the Euler-Maclaurin tail of zeta divides by (2j)! / B_2j
_BERNOULLI = (Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
              Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510), Fraction(43867, 798),
              Fraction(-174611, 330), Fraction(854513, 138), Fraction(-236364091, 2730))
_ZETA_A = tuple(float(math.factorial(2 * j + 2) / b) for j, b in enumerate(_BERNOULLI))
# digamma's asymptotic series: psi(w) ~ log w - 1/(2w) - sum B_2k / (2k w^2k)
_PSI_ASYMP = tuple(float(b / (2 * k + 2)) for k, b in enumerate(_BERNOULLI[:7]))


_2_SQRTPI = 2.0 / math.sqrt(math.pi)
_SQRTPI_2 = math.sqrt(math.pi) / 2.0
# Cephes ndtr.c: erf(x) = x T(x^2) / U(x^2) on |x| < 1; erfc(x) = exp(-x^2) P(x) / Q(x) on [1, 8), R / S above
_T = (9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3, 7.00332514112805075473E3,
      5.55923013010394962768E4)
_U = (1.0, 3.35617141647503099647E1, 5.21357949780152679795E2, 4.59432382970980127987E3, 2.26290000613890934246E4,
      4.92673942608635921086E4)
_P = (2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0, 4.86371970985681366614E1,
      1.96520832956077098242E2, 5.26445194995477358631E2, 9.34528527171957607540E2, 1.02755188689515710272E3,
      5.57535335369399327526E2)
_Q = (1.0, 1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2, 9.75708501743205489753E2,
      1.82390916687909736289E3, 2.24633760818710981792E3, 1.65666309194161350182E3, 5.57535340817727675546E2)
_R = (5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0, 6.16021097993053585195E0,
      7.40974269950448939160E0, 2.97886665372100240670E0)
_S = (1.0, 2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1, 1.70814450747565897222E1,
      9.60896809063285878198E0, 3.36907645100081516050E0)
_KERNELS = {}


def _polevl(x, coefs):
    r = coefs[0]
    for c in coefs[1:]:
        r = r * x + c
    return r


def _real_cupy(xp):
    return xp is not _backend.numpy and not getattr(xp, "__fake__", False)


def _cuda(xp, fn, x):
    # CUDA's libdevice functions (erf/erff...), one elementwise kernel each; half precision goes via float32
    double = x.dtype.itemsize == 8
    key = (fn, double)
    k = _KERNELS.get(key)
    if k is None:
        t, name = ("float64", fn) if double else ("float32", fn + "f")
        k = _KERNELS[key] = xp.ElementwiseKernel(f"{t} x", f"{t} y", f"y = {name}(x)", f"workbench_{name}")
    if double or x.dtype.itemsize == 4:
        return k(x)
    return k(x.astype("float32")).astype(x.dtype)


def _erfc_pos(xp, a):
    """erfc(a) for a >= 1 (a float64 array)."""
    e = xp.exp(-a * a)
    small = _polevl(a, _P) / _polevl(a, _Q)
    big = _polevl(a, _R) / _polevl(a, _S)
    return e * xp.where(a < 8.0, small, big)


def erf_array(xp, x):
    """erf of a float array, computed in float64 and returned in x's dtype."""
    if _real_cupy(xp):
        return _cuda(xp, "erf", x)
    z = x.astype("float64")
    a = xp.abs(z)
    inner = z * _polevl(z * z, _T) / _polevl(z * z, _U)
    with _backend.numpy.errstate(over="ignore", under="ignore", invalid="ignore"):
        outer = xp.sign(z) * (1.0 - _erfc_pos(xp, xp.clip(a, 1.0, 30.0)))
    return xp.where(a < 1.0, inner, outer).astype(x.dtype, copy=False)


def erfc_array(xp, x):
    """erfc of a float array, without cancellation for large x."""
    if _real_cupy(xp):
        return _cuda(xp, "erfc", x)
    z = x.astype("float64")
    a = xp.abs(z)
    inner = 1.0 - z * _polevl(z * z, _T) / _polevl(z * z, _U)
    with _backend.numpy.errstate(over="ignore", under="ignore", invalid="ignore"):
        tail = _erfc_pos(xp, xp.clip(a, 1.0, 30.0))  # erfc(30) underflows: inf stays exact
    outer = xp.where(z < 0, 2.0 - tail, tail)
    return xp.where(a < 1.0, inner, outer).astype(x.dtype, copy=False)


def erfinv_array(xp, y):
    """erfinv of a float array: Giles' approximation, then three Halley/Newton steps."""
    if _real_cupy(xp):
        return _cuda(xp, "erfinv", y)
    v = y.astype("float64")
    a = xp.abs(v)
    with _backend.numpy.errstate(divide="ignore", invalid="ignore", over="ignore"):
        w = -xp.log((1.0 - a) * (1.0 + a))
        wc = w - 2.5
        p_c = _polevl(wc, (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                           -0.00125372503, -0.00417768164, 0.246640727, 1.50140941))
        wt = xp.sqrt(w) - 3.0
        p_t = _polevl(wt, (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                           -0.0076224613, 0.00943887047, 1.00167406, 2.83297682))
        x = xp.where(w < 5.0, p_c, p_t) * a
        x = xp.where(xp.isfinite(x), x, 0.0)
        tail = a > 0.5
        log1ma = xp.log(xp.where(tail, 1.0 - a, 1.0))
        for _ in range(3):
            d = _2_SQRTPI * xp.exp(-x * x)
            # Halley on erf(x) - a in the middle; Newton on log(erfc(x)) - log(1 - a) in the tails, where
            # erf(x) has no digits left and log(erfc) is nearly quadratic (fast from a rough start)
            ec = erfc_array(xp, x)
            f = erf_array(xp, x) - a
            x = xp.where(tail, x + (xp.log(ec) - log1ma) * ec / d, x - f / (d + x * f))
        x = xp.where(a == 1.0, xp.inf, xp.where(a > 1.0, xp.nan, x))
    return (xp.sign(v) * x).astype(y.dtype, copy=False)


def _special(name, fn, deriv, saves):
    def forward(ctx, x):
        x = to_float(x)
        if x.dtype.kind == "c":
            raise dtype_error(f"{name}_cpu", x.dtype)
        y = fn(ctx.xp, x)
        ctx.save_for_backward(x if saves == "x" else y)
        return y

    def backward(ctx, g):
        (s,) = ctx.saved_tensors
        return deriv(g, s)

    return type(name.capitalize(), (Function,), {"_raw": True, "op_name": name, "__module__": __name__,
                                                 "forward": staticmethod(forward),
                                                 "backward": staticmethod(backward)})


Erf = _special("erf", erf_array, lambda g, x: g * _2_SQRTPI * (-x * x).exp(), "x")
Erfc = _special("erfc", erfc_array, lambda g, x: g * -_2_SQRTPI * (-x * x).exp(), "x")
Erfinv = _special("erfinv", erfinv_array, lambda g, y: g * _SQRTPI_2 * (y * y).exp(), "y")


def erf(input, *, out=None):
    """The error function, 2/sqrt(pi) * integral of exp(-t**2) from 0 to input.

    >>> import workbench as wb
    >>> wb.erf(wb.tensor([0.0, 1.0]))
    tensor([0.0000, 0.8427])
    """
    return _out(Erf.apply(input), out)


def erfc(input, *, out=None):
    """1 - erf(input), accurate where erf is close to 1.  >>> wb.erfc(wb.tensor([0.0]))  ->  tensor([1.])"""
    return _out(Erfc.apply(input), out)


def erfinv(input, *, out=None):
    """The inverse of erf on (-1, 1) (±inf at ±1, NaN outside).  >>> wb.erfinv(wb.tensor([0.0, 0.5]))  ->  tensor([0.0000, 0.4769])"""
    if _AUTOCAST[0]:
        input, = _autocast_cast("erfinv", input)
    return _out(Erfinv.apply(input), out)


def _f64(x):
    return x.astype("float64", copy=False)


def _errstate():
    return _np.errstate(all="ignore")


# --- the gamma family ----------------------------------------------------------------------------
def lgamma_array(xp, x):
    """log|Gamma(x)| of a float array (inf at the poles and at ±inf)."""
    z = _f64(x)
    with _errstate():
        refl = z < 0.5
        y = xp.where(refl, 1.0 - z, z) - 1.0
        a = _LANCZOS[0]
        for i in range(1, 9):
            a = a + _LANCZOS[i] / (y + i)
        t = y + 7.5
        pos = _LOG_SQRT_2PI + (y + 0.5) * xp.log(t) - t + xp.log(a)
        r = z - 2.0 * xp.round(z / 2.0)  # sin(pi z) from the reduced argument: exact zeros at the integers
        neg = math.log(math.pi) - xp.log(xp.abs(xp.sin(math.pi * r))) - pos
        out = xp.where(refl, neg, pos)
        out = xp.where(xp.isinf(z) | ((z <= 0) & (z == xp.floor(z))), xp.inf, out)
    return out.astype(x.dtype, copy=False)


def digamma_array(xp, x):
    """psi(x) = d/dx log Gamma(x), PyTorch's conventions: -inf at +0, +inf at -0, NaN at negative integers."""
    z = _f64(x)
    with _errstate():
        neg = z < 0
        w = xp.where(neg, 1.0 - z, z)
        shift = 0.0
        for k in range(10):  # psi(w) = psi(w + 10) - sum 1/(w + k)
            shift = shift + 1.0 / (w + k)
        w = w + 10.0
        iw2 = 1.0 / (w * w)
        series = _PSI_ASYMP[-1]
        for c in reversed(_PSI_ASYMP[:-1]):
            series = c + iw2 * series
        psi = xp.log(w) - 0.5 / w - iw2 * series - shift
        frac = z - xp.trunc(z)
        psi = xp.where(neg, psi - math.pi / xp.tan(math.pi * frac), psi)
        psi = xp.where(neg & (frac == 0), xp.nan, psi)
        psi = xp.where(z == 0, xp.copysign(xp.inf, -z), psi)
        psi = xp.where(z == xp.inf, xp.inf, psi)
    return psi.astype(x.dtype, copy=False)


def zeta_array(xp, s, q):
    """The Hurwitz zeta function sum_k (k + q)**-s (Cephes' zeta.c: Euler-Maclaurin summation)."""
    x, q = _f64(s), _f64(q)
    with _errstate():
        n = 9
        if bool((q < 0).any()):  # negative q (polygamma at negative x): sum until q + n > 9
            n = max(n, int(math.ceil(9.0 - float(q.min()))) + 1)
        total = xp.power(q, -x)
        a = q
        b = total
        for _ in range(n):
            a = a + 1.0
            b = xp.power(a, -x)
            total = total + b
        w = a
        total = total + b * w / (x - 1.0) - 0.5 * b
        fac = 1.0
        k = 0.0
        done = xp.zeros(total.shape, bool)
        for j in range(12):
            fac = fac * (x + k)
            b = b / w
            t = fac * b / _ZETA_A[j]
            total = xp.where(done, total, total + t)
            done = done | (xp.abs(t / total) < 1.1102230246251565e-16)
            k += 1.0
            fac = fac * (x + k)
            b = b / w
            k += 1.0
        out = xp.where(x == 1.0, xp.inf, total)
        out = xp.where(x < 1.0, xp.nan, out)
        qint = (q <= 0) & (q == xp.floor(q))
        out = xp.where(qint & (x >= 1.0), xp.inf, out)
        out = xp.where((q < 0) & ~qint & (x != xp.floor(x)), xp.nan, out)
    return out


def polygamma_array(xp, n, x):
    """The n-th derivative of digamma: (-1)**(n+1) n! zeta(n + 1, x) for n >= 1."""
    if n == 0:
        return digamma_array(xp, x)
    z = _f64(x)
    y = (-1.0) ** (n + 1) * math.factorial(n) * zeta_array(xp, xp.full(z.shape, n + 1.0), z)
    return y.astype(x.dtype, copy=False)


def _unary_class(name, fwd, bwd, saves="x", raw_grad=None):
    """A unary float primitive: fwd(xp, x) -> y on float arrays, bwd(g, x, y) in Tensor ops."""

    def forward(ctx, x):
        try:
            x = to_float(x)
        except AttributeError:
            raise TypeError(f"special.{name}(): argument 'input' must be Tensor, not {type(x).__name__}") from None
        if x.dtype.kind == "c":
            raise dtype_error(f"{name}_cpu", x.dtype)
        y = fwd(ctx.xp, x)
        ctx.save_for_backward(x if "x" in saves else None, y if "y" in saves else None)
        return y

    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return bwd(g, x, y)

    return type(name.capitalize(), (Function,), {"_raw": True, "op_name": name, "__module__": __name__,
                                                 "forward": staticmethod(forward),
                                                 "backward": staticmethod(backward)})


class Polygamma(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, n):
        x = to_float(x)
        y = polygamma_array(ctx.xp, n, x)
        ctx.save_for_backward(x)
        ctx.n = n
        return y

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * Polygamma.apply(x, ctx.n + 1), None


Lgamma = _unary_class("lgamma", lgamma_array, lambda g, x, y: g * digamma(x))
Digamma = _unary_class("digamma", digamma_array, lambda g, x, y: g * Polygamma.apply(x, 1))


def lgamma(input, *, out=None):
    """log|Gamma(input)|.  >>> wb.lgamma(wb.tensor([0.5, 3.0]))  ->  tensor([0.5724, 0.6931])"""
    return _out(Lgamma.apply(input), out)


def digamma(input, *, out=None):
    """d/dx log Gamma(x).  >>> wb.digamma(wb.tensor([1.0]))  ->  tensor([-0.5772])"""
    return _out(Digamma.apply(input), out)


def polygamma(n, input, *, out=None):
    """The n-th derivative of digamma.  >>> wb.polygamma(1, wb.tensor([1.0]))  ->  tensor([1.6449])"""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"polygamma(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return _out(Polygamma.apply(input, n), out)


class Zeta(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, q):
        rd = result_dtype(x, q)
        if rd.kind in "biu":
            rd = to_float(_np.zeros(0, rd)).dtype
        xp = ctx.xp
        xa = cast(x, rd) if hasattr(x, "shape") else xp.asarray(x, dtype=rd)
        qa = cast(q, rd) if hasattr(q, "shape") else xp.asarray(q, dtype=rd)
        xa, qa = xp.broadcast_arrays(xa, qa)
        ctx.save_for_backward(x if hasattr(x, "shape") else None, q if hasattr(q, "shape") else None)
        ctx.sx = None if hasattr(x, "shape") else x
        return zeta_array(xp, xa, qa).astype(rd, copy=False)

    @staticmethod
    def backward(ctx, g):
        x, q = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise RuntimeError("the derivative for 'zeta' with respect to 'self' (the exponent) is not "
                               "implemented (as in PyTorch); detach() the exponent")
        x = x if x is not None else ctx.sx
        return None, -g * x * Zeta.apply(x + 1, q)


def zeta(input, other, *, out=None):
    """The Hurwitz zeta function sum_k (k + other)**-input.

    >>> import workbench as wb
    >>> wb.special.zeta(wb.tensor([2.0]), 1.0)
    tensor([1.6449])
    """
    return _out(Zeta.apply(input, other), out)


def mvlgamma(input, p, *, out=None):
    """The multivariate log-gamma function of dimension p.

    >>> import workbench as wb
    >>> wb.mvlgamma(wb.tensor([2.5]), 2)
    tensor([0.8570])
    """
    if isinstance(p, bool) or not isinstance(p, int):
        raise TypeError(f"mvlgamma(): argument 'p' must be int, not {type(p).__name__}")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = input if input.is_floating_point() else input.to(_float_dtype())
    total = lgamma(x)
    for j in range(1, p):
        total = total + lgamma(x - j / 2)
    return _out(total + p * (p - 1) / 4 * math.log(math.pi), out)


def _float_dtype():
    return dtypes.get_default_dtype()


# --- the normal distribution ---------------------------------------------------------------------
def erfcx_array(xp, x):
    """exp(x**2) erfc(x) without overflow: Cephes' erfc ratios, which carry the exp(-x**2) factor apart."""
    z = _f64(x)
    with _errstate():
        a = xp.abs(z)
        inner = xp.exp(z * z) * (1.0 - z * _polevl(z * z, _T) / _polevl(z * z, _U))
        mid = xp.clip(a, 1.0, 50.0)
        ratio = xp.where(mid < 8.0, _polevl(mid, _P) / _polevl(mid, _Q), _polevl(mid, _R) / _polevl(mid, _S))
        big = xp.maximum(a, 50.0)
        ib2 = 1.0 / (big * big)  # the asymptotic series, exact to rounding beyond 50
        asym = (1.0 - ib2 * (0.5 - ib2 * (0.75 - ib2 * (1.875 - ib2 * 6.5625)))) / (big * math.sqrt(math.pi))
        tail = xp.where(a < 50.0, ratio, asym)
        outer = xp.where(z < 0, 2.0 * xp.exp(z * z) - tail, tail)
        out = xp.where(a < 1.0, inner, outer)
    return out.astype(x.dtype, copy=False)


def log_ndtr_array(xp, x):
    """log Phi(x), accurate in both tails (via erfcx below -1, log1p above 0)."""
    z = _f64(x)
    t = z * _SQRT1_2
    with _errstate():
        upper = xp.log1p(-0.5 * erfc_array(xp, t))
        middle = xp.log(0.5 * erfc_array(xp, -t))
        lower = xp.log(0.5 * erfcx_array(xp, -t)) - t * t
        out = xp.where(z >= 0, upper, xp.where(z >= -1, middle, lower))
    return out.astype(x.dtype, copy=False)


def ndtri_array(xp, p):
    """The inverse of Phi: erfinv in the middle, Newton steps on log Phi in the tails (where 2p - 1
    has lost p's digits)."""
    v = _f64(p)
    with _errstate():
        central = math.sqrt(2.0) * erfinv_array(xp, 2.0 * v - 1.0)
        q = xp.clip(xp.minimum(v, 1.0 - v), 1e-300, 0.5)
        lq = xp.log(q)
        ll = -2.0 * lq
        x = -xp.sqrt(xp.maximum(ll - xp.log(ll) - math.log(2 * math.pi), 0.0))
        for _ in range(6):
            lp = log_ndtr_array(xp, x)
            x = x - (lp - lq) * xp.exp(lp + 0.5 * x * x + _LOG_SQRT_2PI)
        tail = xp.where(v < 0.5, x, -x)
        out = xp.where(xp.minimum(v, 1.0 - v) > 0.02, central, tail)
        out = xp.where(v == 0, -xp.inf, xp.where(v == 1, xp.inf, out))
        out = xp.where((v < 0) | (v > 1) | xp.isnan(v), xp.nan, out)
    return out.astype(p.dtype, copy=False)


Erfcx = _unary_class("erfcx", erfcx_array, lambda g, x, y: g * (2 * x * y - _2_SQRTPI), "xy")
LogNdtr = _unary_class("log_ndtr", log_ndtr_array,
                       lambda g, x, y: g * (-0.5 * x * x - y).exp() / _SQRT_2PI, "xy")
Ndtri = _unary_class("ndtri", ndtri_array, lambda g, x, y: g * _SQRT_2PI * (0.5 * y * y).exp(), "y")


def erfcx(input, *, out=None):
    """exp(input**2) * erfc(input), without overflow.  >>> wb.special.erfcx(wb.tensor([0.0, 30.0]))  ->  tensor([1.0000, 0.0188])"""
    return _out(Erfcx.apply(input), out)


def ndtr(input, *, out=None):
    """The standard normal CDF.  >>> wb.special.ndtr(wb.tensor([0.0]))  ->  tensor([0.5000])"""
    x = input if input.is_floating_point() else input.to(_float_dtype())
    return _out(0.5 * erfc(x * -_SQRT1_2), out)


def log_ndtr(input, *, out=None):
    """log of the standard normal CDF, accurate far into both tails.

    >>> import workbench as wb
    >>> wb.special.log_ndtr(wb.tensor([-40.0]))
    tensor([-804.6085])
    """
    return _out(LogNdtr.apply(input), out)


def ndtri(input, *, out=None):
    """The inverse of the standard normal CDF.  >>> wb.special.ndtri(wb.tensor([0.5, 0.975]))  ->  tensor([0.0000, 1.9600])"""
    return _out(Ndtri.apply(input), out)


# --- modified Bessel functions of the first kind -------------------------------------------------
_BESSEL_CUT = 30.0


def _bessel_i_scaled(xp, x, nu):
    """exp(-|x|) I_nu(|x|) for nu in (0, 1): the power series below 30, Hankel's expansion above."""
    a = xp.abs(_f64(x))
    small = xp.where(a <= _BESSEL_CUT, a, 0.0)
    z = 0.25 * small * small
    term = xp.ones_like(z) if nu == 0 else 0.5 * small
    total = term
    for k in range(1, 64):  # all terms positive: no cancellation
        term = term * z / (k * (k + nu))
        total = total + term
    series = total * xp.exp(-small)
    big = xp.where(a > _BESSEL_CUT, a, _BESSEL_CUT + 1.0)
    mu = 4.0 * nu * nu
    term = xp.ones_like(big)
    total = term
    for k in range(1, 26):
        term = -term * (mu - (2 * k - 1) ** 2) / (k * 8.0 * big)
        total = total + term
    asym = total / (_SQRT_2PI * xp.sqrt(big))
    return xp.where(a <= _BESSEL_CUT, series, xp.where(a > _BESSEL_CUT, asym, xp.nan))


def _i0e(xp, x):
    with _errstate():
        return _bessel_i_scaled(xp, x, 0).astype(x.dtype, copy=False)


def _i1e(xp, x):
    with _errstate():
        return (xp.sign(_f64(x)) * _bessel_i_scaled(xp, x, 1)).astype(x.dtype, copy=False)


def _i0(xp, x):
    with _errstate():
        return (_bessel_i_scaled(xp, x, 0) * xp.exp(xp.abs(_f64(x)))).astype(x.dtype, copy=False)


def _i1(xp, x):
    with _errstate():
        z = _f64(x)
        return (xp.sign(z) * _bessel_i_scaled(xp, x, 1) * xp.exp(xp.abs(z))).astype(x.dtype, copy=False)


def _over_x(t, x, at0):
    # t / x, with its limit at0 where x == 0
    nonzero = x != 0
    return (t / x.where(nonzero, 1.0)).where(nonzero, at0)


I0 = _unary_class("i0", _i0, lambda g, x, y: g * i1(x))
I0e = _unary_class("i0e", _i0e, lambda g, x, y: g * (i1e(x) - x.sign() * y), "xy")
I1 = _unary_class("i1", _i1, lambda g, x, y: g * (i0(x) - _over_x(y, x, 0.5)), "xy")
I1e = _unary_class("i1e", _i1e, lambda g, x, y: g * (i0e(x) - x.sign() * y - _over_x(y, x, 0.5)), "xy")


def i0(input, *, out=None):
    """The modified Bessel function of the first kind, order 0.  >>> wb.i0(wb.tensor([0.0, 1.0]))  ->  tensor([1.0000, 1.2661])"""
    return _out(I0.apply(input), out)


def i0e(input, *, out=None):
    """exp(-|input|) * i0(input).  >>> wb.special.i0e(wb.tensor([1000.0]))  ->  tensor([0.0126])"""
    return _out(I0e.apply(input), out)


def i1(input, *, out=None):
    """The modified Bessel function of the first kind, order 1.  >>> wb.special.i1(wb.tensor([1.0]))  ->  tensor([0.5652])"""
    return _out(I1.apply(input), out)


def i1e(input, *, out=None):
    """exp(-|input|) * i1(input).  >>> wb.special.i1e(wb.tensor([1.0]))  ->  tensor([0.2079])"""
    return _out(I1e.apply(input), out)


# --- entr, sinc, xlog1py -------------------------------------------------------------------------
def _entr(xp, x):
    with _errstate():
        y = -x * xp.log(xp.where(x > 0, x, 1))
        return xp.where(x < 0, -xp.inf, y).astype(x.dtype, copy=False)


def _sinc(xp, x):
    with _errstate():
        px = math.pi * xp.where(x == 0, 1, x)
        return xp.where(x == 0, 1, xp.sin(px) / px).astype(x.dtype, copy=False)


Entr = _unary_class("entr", _entr, lambda g, x, y: -g * (x.log() + 1))
Sinc = _unary_class("sinc", _sinc, lambda g, x, y: g * _over_x((math.pi * x).cos() - y, x, 0.0), "xy")


def entr(input, *, out=None):
    """-x log x elementwise (0 at 0, -inf below).  >>> wb.special.entr(wb.tensor([0.5]))  ->  tensor([0.3466])"""
    return _out(Entr.apply(input), out)


def sinc(input, *, out=None):
    """sin(pi x) / (pi x), 1 at 0.  >>> wb.sinc(wb.tensor([0.0, 0.5]))  ->  tensor([1.0000, 0.6366])"""
    return _out(Sinc.apply(input), out)


class Xlog1py(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, y):
        rd = result_dtype(x, y)
        if rd.kind == "c":
            raise dtype_error("xlog1py_cpu", rd)
        rd = to_float(_np.zeros(0, rd)).dtype
        xp = ctx.xp
        xa, ya = cast(x, rd), cast(y, rd)
        with _errstate():
            r = xp.asarray(xa * xp.log1p(ya))
            out = xp.where((xp.asarray(xa) == 0) & ~xp.isnan(ya), 0, r).astype(rd, copy=False)
        ctx.save_for_backward(x if hasattr(x, "shape") else None, y if hasattr(y, "shape") else None)
        ctx.sx, ctx.sy = (None if hasattr(x, "shape") else x), (None if hasattr(y, "shape") else y)
        return out

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        x = x if x is not None else ctx.sx
        y = y if y is not None else ctx.sy
        gx = gy = None
        if ctx.needs_input_grad[0]:
            ly = y.log1p() if isinstance(y, Tensor) else math.log1p(y) if y > -1 else float("nan")
            gx = (g * ly).where(~((x == 0) & (y <= -1)), 0.0) if isinstance(x, Tensor) else g * ly
        if ctx.needs_input_grad[1]:
            gy = g * x / (1 + y)
        return gx, gy


def xlog1py(input, other, *, out=None):
    """input * log1p(other), 0 where input == 0.  >>> wb.special.xlog1py(wb.tensor([0., 2.]), 0.)  ->  tensor([0., 0.])"""
    return _out(Xlog1py.apply(input, other), out)


# --- through SciPy: Bessel J, Y, K, airy_ai, the regularized incomplete gamma function ----------
def _scipy_unary(name, scipy_name, deriv=None, pick=None):
    """A unary primitive computed by scipy.special.<scipy_name> (output ``pick`` of a tuple-valued one);
    deriv(g, x, y) or None (no gradient, as in PyTorch)."""

    def fwd(xp, x):
        y = _backend.scipy_special(xp, scipy_name, f"special.{name}")(x)
        return (y if pick is None else y[pick]).astype(x.dtype, copy=False)

    def bwd(g, x, y):
        if deriv is None:
            raise RuntimeError(f"the derivative for 'special_{name}' is not implemented (as in PyTorch); "
                               "detach() the input")
        return deriv(g, x, y)

    cls = _unary_class(name, fwd, bwd, "xy")

    def public(input, *, out=None):
        return _out(cls.apply(input), out)

    public.__name__ = public.__qualname__ = name
    public.__doc__ = (f"SciPy's special.{scipy_name} (needs SciPy).  "
                      f">>> wb.special.{name}(wb.tensor([1.0])).shape  ->  workbench.Size([1])")
    return cls, public


BesselJ0, bessel_j0 = _scipy_unary("bessel_j0", "j0", lambda g, x, y: -g * bessel_j1(x))
BesselJ1, bessel_j1 = _scipy_unary("bessel_j1", "j1", lambda g, x, y: g * (bessel_j0(x) - _over_x(y, x, 0.5)))
BesselY0, bessel_y0 = _scipy_unary("bessel_y0", "y0", lambda g, x, y: -g * bessel_y1(x))
BesselY1, bessel_y1 = _scipy_unary("bessel_y1", "y1", lambda g, x, y: g * (bessel_y0(x) - y / x))
BesselK0, modified_bessel_k0 = _scipy_unary("modified_bessel_k0", "k0", lambda g, x, y: -g * modified_bessel_k1(x))
BesselK1, modified_bessel_k1 = _scipy_unary("modified_bessel_k1", "k1",
                                            lambda g, x, y: -g * (modified_bessel_k0(x) + y / x))
BesselK0e, scaled_modified_bessel_k0 = _scipy_unary(
    "scaled_modified_bessel_k0", "k0e", lambda g, x, y: g * (y - scaled_modified_bessel_k1(x)))
BesselK1e, scaled_modified_bessel_k1 = _scipy_unary(
    "scaled_modified_bessel_k1", "k1e", lambda g, x, y: g * (y - scaled_modified_bessel_k0(x) - y / x))


AiryAi, airy_ai = _scipy_unary("airy_ai", "airy", pick=0)


def spherical_bessel_j0(input, *, out=None):
    """sin(x) / x, 1 at 0.  >>> wb.special.spherical_bessel_j0(wb.tensor([0.0]))  ->  tensor([1.])"""
    x = input if input.is_floating_point() else input.to(_float_dtype())
    return _out(_over_x(x.sin(), x, 1.0), out)


class Gammainc(Function):
    _raw = True
    upper = False

    @classmethod
    def forward(cls, ctx, a, x):
        rd = result_dtype(a, x)
        if rd.kind in "biu":
            rd = to_float(_np.zeros(0, rd)).dtype
        xp = ctx.xp
        aa, xa = (cast(v, rd) if hasattr(v, "shape") else xp.asarray(v, dtype=rd) for v in (a, x))
        name = "gammaincc" if cls.upper else "gammainc"
        y = _backend.scipy_special(xp, name, f"special.{name}")(aa, xa).astype(rd, copy=False)
        ctx.save_for_backward(a if hasattr(a, "shape") else None, x if hasattr(x, "shape") else None)
        ctx.sa = None if hasattr(a, "shape") else a
        return y

    @classmethod
    def backward(cls, ctx, g):
        if ctx.needs_input_grad[0]:
            raise RuntimeError(f"the derivative for '{'igammac' if cls.upper else 'igamma'}' with respect to "
                               "'self' is not implemented (as in PyTorch); detach() it")
        a, x = ctx.saved_tensors
        a = a if a is not None else ctx.sa
        dens = ((a - 1) * x.log() - x - lgamma(a if isinstance(a, Tensor) else x * 0 + a)).exp()
        return None, -g * dens if cls.upper else g * dens


class Gammaincc(Gammainc):
    upper = True


def gammainc(input, other, *, out=None):
    """The regularized lower incomplete gamma function P(input, other) (needs SciPy).

    >>> import workbench as wb
    >>> wb.special.gammainc(wb.tensor([1.0]), wb.tensor([1.0]))
    tensor([0.6321])
    """
    check_operands("special_gammainc", ("input", "other"), (input, other))
    return _out(Gammainc.apply(input, other), out)


def gammaincc(input, other, *, out=None):
    """The regularized upper incomplete gamma function Q = 1 - P (needs SciPy).

    >>> import workbench as wb
    >>> wb.special.gammaincc(wb.tensor([1.0]), wb.tensor([1.0]))
    tensor([0.3679])
    """
    check_operands("special_gammaincc", ("input", "other"), (input, other))
    return _out(Gammaincc.apply(input, other), out)


# --- orthogonal polynomials (no gradient, as in PyTorch) -----------------------------------------
def _two_term(p1, step):
    # p1(x) and the recurrence p_{k+1} = step(k, x, p_k, p_{k-1}) for k >= 1
    def fn(xp, x, n):
        one = xp.ones_like(x)
        if n.size == 0:
            return one
        top = int(n.max())
        cur_prev, cur = one, p1(x)
        out = xp.where(n == 0, one, xp.where(n == 1, cur, 0.0))
        for k in range(1, max(top, 1)):
            cur_prev, cur = cur, step(k, x, cur, cur_prev)
            out = xp.where(n == k + 1, cur, out)
        return xp.where(n < 0, 0.0, out)

    return fn


_CHEB = lambda k, x, p, q: 2 * x * p - q  # noqa: E731
_POLYS = {
    "chebyshev_polynomial_t": _two_term(lambda x: x, _CHEB),
    "chebyshev_polynomial_u": _two_term(lambda x: 2 * x, _CHEB),
    "chebyshev_polynomial_v": _two_term(lambda x: 2 * x - 1, _CHEB),
    "chebyshev_polynomial_w": _two_term(lambda x: 2 * x + 1, _CHEB),
    "hermite_polynomial_h": _two_term(lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - 2 * k * q),
    "hermite_polynomial_he": _two_term(lambda x: x, lambda k, x, p, q: x * p - k * q),
    "laguerre_polynomial_l": _two_term(lambda x: 1 - x, lambda k, x, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1)),
    "legendre_polynomial_p": _two_term(lambda x: x, lambda k, x, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1)),
}


def _polynomial(name, fn, shifted=False):
    class Poly(Function):
        _raw = True
        op_name = name

        @staticmethod
        def forward(ctx, x, n):
            xp = ctx.xp
            rd = result_dtype(x, n)
            if rd.kind in "biu":
                rd = to_float(_np.zeros(0, rd)).dtype
            xa = cast(x, rd) if hasattr(x, "shape") else xp.asarray(x, dtype=rd)
            na = n if hasattr(n, "shape") else xp.asarray(n)
            xa, na = xp.broadcast_arrays(xa, na)
            xa = _f64(xa)
            if shifted:
                xa = 2 * xa - 1
            with _errstate():
                y = fn(xp, xa, xp.trunc(_f64(na)).astype("int64"))
            return y.astype(rd, copy=False)

        @staticmethod
        def backward(ctx, g):
            raise RuntimeError(f"the derivative for 'special_{name}' is not implemented (as in PyTorch)")

    Poly.__name__ = Poly.__qualname__ = "".join(p.capitalize() for p in name.split("_"))

    def public(x, n, *, out=None):
        return _out(Poly.apply(x, n), out)

    public.__name__ = public.__qualname__ = name
    public.__doc__ = f"The polynomial {name}(input, n) by its three-term recurrence.  " \
                     f">>> wb.special.{name}(wb.tensor([0.5]), 2).shape  ->  workbench.Size([1])"
    return public


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t", _POLYS["chebyshev_polynomial_t"])
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u", _POLYS["chebyshev_polynomial_u"])
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v", _POLYS["chebyshev_polynomial_v"])
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w", _POLYS["chebyshev_polynomial_w"])
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t", _POLYS["chebyshev_polynomial_t"], True)
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u", _POLYS["chebyshev_polynomial_u"], True)
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v", _POLYS["chebyshev_polynomial_v"], True)
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w", _POLYS["chebyshev_polynomial_w"], True)
hermite_polynomial_h = _polynomial("hermite_polynomial_h", _POLYS["hermite_polynomial_h"])
hermite_polynomial_he = _polynomial("hermite_polynomial_he", _POLYS["hermite_polynomial_he"])
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", _POLYS["laguerre_polynomial_l"])
legendre_polynomial_p = _polynomial("legendre_polynomial_p", _POLYS["legendre_polynomial_p"])


def igamma(input, other, *, out=None):
    """Alias of special.gammainc (needs SciPy).  >>> wb.igamma(wb.tensor([1.0]), wb.tensor([1.0]))  ->  tensor([0.6321])"""
    return gammainc(input, other, out=out)


def igammac(input, other, *, out=None):
    """Alias of special.gammaincc (needs SciPy).  >>> wb.igammac(wb.tensor([1.0]), wb.tensor([1.0]))  ->  tensor([0.3679])"""
    return gammaincc(input, other, out=out)


def erf_(input):
    """In-place erf (torch.erf_).  >>> wb.erf_(wb.tensor([0.0]))  ->  tensor([0.])"""
    return input.erf_()


def erfc_(input):
    """In-place erfc (torch.erfc_).  >>> wb.erfc_(wb.tensor([0.0]))  ->  tensor([1.])"""
    return input.erfc_()


def i0_(input):
    """In-place i0 (torch.i0_).  >>> wb.i0_(wb.tensor([0.0]))  ->  tensor([1.])"""
    return input.i0_()


def sinc_(input):
    """In-place sinc (torch.sinc_).  >>> wb.sinc_(wb.tensor([0.0]))  ->  tensor([1.])"""
    return input.sinc_()


__all__ = ["erf_", "erfc_", "i0_", "sinc_", "erf", "erfc", "erfinv", "lgamma", "digamma", "polygamma", "mvlgamma", "i0", "sinc", "igamma", "igammac"]
METHODS = {
    "erf": erf, "erfc": erfc, "erfinv": erfinv, "lgamma": lgamma, "digamma": digamma,
    "polygamma": lambda self, n: polygamma(n, self), "mvlgamma": mvlgamma, "i0": i0, "sinc": sinc, "igamma": igamma, "igammac": igammac,
}
INPLACE = ("erf", "erfc", "erfinv", "lgamma", "digamma", "polygamma", "mvlgamma", "i0", "sinc", "igamma", "igammac")
