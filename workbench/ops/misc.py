"""The error function family (erf, erfc, erfinv) and the fused updates optimizers use (lerp, addcmul, addcdiv).

NumPy has no erf, so erf and erfc are W. J. Cody-style rational approximations as in Cephes (relative
error about 1e-16 in float64), written in array ops so they run on any backend; erfinv starts from
M. Giles' approximation and polishes it with Halley steps on that erf. On real CuPy the three are
CUDA's own functions, one fused kernel each.
"""
import math

from .. import _backend
from ..autograd.function import Function
from ._util import _out, cast, dtype_error, result_dtype, result_dtype_n, to_float

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
    return _out(Erfinv.apply(input), out)


# --- fused updates -------------------------------------------------------------------------------
def _float_only(op, *arrays):
    for a in arrays:
        if hasattr(a, "dtype") and a.dtype.kind in "biu":
            raise dtype_error(op, a.dtype)


class Lerp(Function):
    _raw = True

    @staticmethod
    def forward(ctx, start, end, weight):
        _float_only("lerp_kernel_scalar" if not hasattr(weight, "shape") else "lerp_kernel_tensor", start, end)
        for what, v in (("end", end), ("weight", weight)):
            if hasattr(v, "dtype") and v.dtype != start.dtype:
                raise RuntimeError(f"lerp: expected dtype {start.dtype} for `{what}` but got dtype {v.dtype}; "
                                   f"convert it with .to(input.dtype)")
        rd = result_dtype(start, end)
        s, e = cast(start, rd), cast(end, rd)
        w = cast(weight, rd) if hasattr(weight, "shape") else weight
        xp = ctx.xp
        d = e - s
        # PyTorch's form: exact at both ends (weight 0 gives start, weight 1 gives end)
        y = xp.where(xp.abs(w) < 0.5, s + w * d, e - d * (1 - w)).astype(rd, copy=False)
        ctx.save_for_backward(start if ctx.needs_input_grad[2] else None, end if ctx.needs_input_grad[2] else None,
                              weight if hasattr(weight, "shape") else None)
        ctx.w = None if hasattr(weight, "shape") else weight
        return y

    @staticmethod
    def backward(ctx, g):
        s, e, tw = ctx.saved_tensors
        w = tw if tw is not None else ctx.w
        gw = g * (e - s) if ctx.needs_input_grad[2] else None
        return g * (1 - w), g * w, gw


def lerp(input, end, weight, *, out=None):
    """input + weight * (end - input); weight a number or a tensor.

    >>> import workbench as wb
    >>> wb.lerp(wb.tensor([0.0, 10.0]), wb.tensor([10.0, 20.0]), 0.5)
    tensor([ 5., 15.])
    """
    return _out(Lerp.apply(input, end, weight), out)


class Addcmul(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, t1, t2, value):
        rd = result_dtype_n(x, t1, t2)
        a, b = cast(t1, rd), cast(t2, rd)
        ctx.value = value
        ctx.save_for_backward(t1 if ctx.needs_input_grad[2] else None, t2 if ctx.needs_input_grad[1] else None)
        p = a * b
        return ctx.xp.add(cast(x, rd), p * value if value != 1 else p).astype(rd, copy=False)

    @staticmethod
    def backward(ctx, g):
        t1, t2 = ctx.saved_tensors
        v = ctx.value
        return (g, g * t2 * v if t2 is not None else None, g * t1 * v if t1 is not None else None, None)


class Addcdiv(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, t1, t2, value):
        if result_dtype(t1, t2).kind in "biu":
            raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release "
                               "addcdiv will perform a true division of tensor1 and tensor2. Convert the tensors "
                               "to a floating dtype first, e.g. tensor1.float().")
        rd = result_dtype_n(x, t1, t2)
        a, b = cast(t1, rd), cast(t2, rd)
        ctx.value = value
        ctx.save_for_backward(t1 if ctx.needs_input_grad[2] else None, t2)
        q = a / b
        return ctx.xp.add(cast(x, rd), q * value if value != 1 else q).astype(rd, copy=False)

    @staticmethod
    def backward(ctx, g):
        t1, t2 = ctx.saved_tensors
        v = ctx.value
        gt1 = g * v / t2 if v != 1 else g / t2
        gt2 = -gt1 * t1 / t2 if t1 is not None else None
        return g, gt1, gt2, None


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    """input + value * tensor1 * tensor2, in one pass (Adam's moment updates use it).

    >>> import workbench as wb
    >>> wb.addcmul(wb.ones(2), wb.tensor([1.0, 2.0]), wb.tensor([3.0, 4.0]), value=0.5)
    tensor([2.5000, 5.0000])
    """
    return _out(Addcmul.apply(input, tensor1, tensor2, value), out)


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    """input + value * tensor1 / tensor2, in one pass (Adam's parameter update uses it).

    >>> import workbench as wb
    >>> wb.addcdiv(wb.zeros(2), wb.tensor([1.0, 2.0]), wb.tensor([2.0, 4.0]), value=-1)
    tensor([-0.5000, -0.5000])
    """
    return _out(Addcdiv.apply(input, tensor1, tensor2, value), out)


__all__ = ["erf", "erfc", "erfinv", "lerp", "addcmul", "addcdiv"]
METHODS = {n: globals()[n] for n in __all__}
INPLACE = tuple(__all__)
