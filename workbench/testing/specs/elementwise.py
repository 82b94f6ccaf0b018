"""Specs of the elementwise ops: arithmetic, math functions, rounding, binary math, clamp/where, fused updates.

Integer, bool and comparison ops have no gradient; their forward is checked here against NumPy and
PyTorch, and in tests/ops/test_elementwise.py across dtypes.
"""
import numpy as np

import workbench as wb
from workbench.testing.op_specs import Sample, arr, spec


def _sp(name):
    def f(x):
        import scipy.special

        return getattr(scipy.special, name)(x)

    return f


def S(*args, **kwargs):
    return Sample(list(args), kwargs)


X = arr(3, 4)
POS = arr(3, 4, low=0.2, high=3.0, seed=1)
UNIT = arr(3, 4, low=-0.9, high=0.9, seed=2)
PROB = arr(3, 4, low=0.05, high=0.95, seed=3)
BIG = arr(3, 4, low=1.2, high=4.0, seed=4)
Y = arr(3, 4, seed=5)
ROW = arr(4, seed=6)

# --- unary math: (name, workbench op, NumPy reference, input, torch op) ---------------------------
_UNARY = [
    ("exp2", wb.exp2, np.exp2, X),
    ("expm1", wb.expm1, np.expm1, X),
    ("log", wb.log, np.log, POS),
    ("log2", wb.log2, np.log2, POS),
    ("log10", wb.log10, np.log10, POS),
    ("log1p", wb.log1p, np.log1p, POS),
    ("sqrt", wb.sqrt, np.sqrt, POS),
    ("rsqrt", wb.rsqrt, lambda x: 1 / np.sqrt(x), POS),
    ("reciprocal", wb.reciprocal, lambda x: 1 / x, POS),
    ("square", wb.square, np.square, X),
    ("sin", wb.sin, np.sin, X),
    ("cos", wb.cos, np.cos, X),
    ("tan", wb.tan, np.tan, UNIT),
    ("asin", wb.asin, np.arcsin, UNIT),
    ("acos", wb.acos, np.arccos, UNIT),
    ("atan", wb.atan, np.arctan, X),
    ("sinh", wb.sinh, np.sinh, X),
    ("cosh", wb.cosh, np.cosh, X),
    ("tanh", wb.tanh, np.tanh, X),
    ("asinh", wb.asinh, np.arcsinh, X),
    ("acosh", wb.acosh, np.arccosh, BIG),
    ("atanh", wb.atanh, np.arctanh, UNIT),
    ("sigmoid", wb.sigmoid, lambda x: 1 / (1 + np.exp(-x)), X * 3),
    ("logit", wb.logit, lambda x: np.log(x / (1 - x)), PROB),
    ("erf", wb.erf, _sp("erf"), X * 1.5),
    ("erfc", wb.erfc, _sp("erfc"), X * 1.5),
    ("erfinv", wb.erfinv, _sp("erfinv"), UNIT),
    ("deg2rad", wb.deg2rad, np.deg2rad, X * 90),
    ("rad2deg", wb.rad2deg, np.rad2deg, X),
    ("neg", wb.neg, np.negative, X),
    ("abs", wb.abs, np.abs, X),
    ("sign", wb.sign, np.sign, X),
    ("sgn", wb.sgn, np.sign, X),
    ("floor", wb.floor, np.floor, X * 3),
    ("ceil", wb.ceil, np.ceil, X * 3),
    ("trunc", wb.trunc, np.trunc, X * 3),
    ("fix", wb.fix, np.trunc, X * 3),
    ("round", wb.round, np.round, X * 3),
    ("frac", wb.frac, lambda x: x - np.trunc(x), X * 3),
    ("nan_to_num", wb.nan_to_num, np.nan_to_num, X),
]
_ZERO_TENSOR_GRAD = {"sgn"}  # PyTorch answers with a ZeroTensor, which has no .numpy(): add a real zero
for _name, _op, _ref, _x in _UNARY:
    spec(_name, _op, _ref, [S(_x)], torch_op=(lambda n: lambda x: getattr(x, n)() + (0 * x if n in _ZERO_TENSOR_GRAD
                                                                                    else 0))(_name))

spec("method_chain", lambda x: x.exp().log1p().sqrt(), lambda x: np.sqrt(np.log1p(np.exp(x))), [S(X)],
     torch_op=lambda x: x.exp().log1p().sqrt())
spec("round_decimals", lambda x: wb.round(x, decimals=2), lambda x: np.round(x * 100) / 100, [S(X * 3)],
     torch_op=lambda x: x.round(decimals=2))
spec("logit_eps", lambda x: wb.logit(x, eps=0.2), lambda x: np.log(np.clip(x, .2, .8) / (1 - np.clip(x, .2, .8))),
     [S(PROB)], torch_op=lambda x: x.logit(eps=0.2))

# --- binary arithmetic -----------------------------------------------------------------------------
spec("sub", lambda a, b: a - b, np.subtract, [S(X, Y), S(X, ROW), S(X, 1.5)], torch_op=lambda a, b: a - b)
spec("sub_alpha", lambda a, b: wb.sub(a, b, alpha=2.5), lambda a, b: a - 2.5 * b, [S(X, Y)],
     torch_op=lambda a, b: a.sub(b, alpha=2.5))
spec("add_alpha", lambda a, b: wb.add(a, b, alpha=-3), lambda a, b: a - 3 * b, [S(X, ROW)],
     torch_op=lambda a, b: a.add(b, alpha=-3))
spec("rsub_scalar", lambda a: 2.0 - a, lambda a: 2.0 - a, [S(X)], torch_op=lambda a: 2.0 - a)
spec("rtruediv_scalar", lambda a: 2.0 / a, lambda a: 2.0 / a, [S(POS)], torch_op=lambda a: 2.0 / a)
spec("div_broadcast", lambda a, b: a / b, np.divide, [S(X, POS[0]), S(X, 3.0)], torch_op=lambda a, b: a / b)
spec("pow_scalar", lambda a: a ** 3, lambda a: a ** 3, [S(X)], torch_op=lambda a: a ** 3)
spec("pow_fractional", lambda a: a ** 1.5, lambda a: a ** 1.5, [S(POS)], torch_op=lambda a: a ** 1.5)
spec("pow_tensor", lambda a, b: a ** b, np.power, [S(POS, Y), S(POS, ROW)], torch_op=lambda a, b: a ** b)
spec("rpow_scalar", lambda a: 2.5 ** a, lambda a: 2.5 ** a, [S(X)], torch_op=lambda a: 2.5 ** a)
spec("float_power", wb.float_power, np.float_power, [S(POS, 2.5)], torch_op=lambda a, b: a.float_power(b))
spec("remainder", wb.remainder, np.remainder, [S(X * 3, POS), S(X * 3, -1.5)], torch_op=lambda a, b: a % b)
# PyTorch has no derivative for these two (tests/ops/test_elementwise.py checks their values against it)
spec("rmod_scalar", lambda a: 5.0 % a, lambda a: np.remainder(5.0, a), [S(POS)],
     no_torch="PyTorch implements no derivative of remainder w.r.t. the divisor; gradcheck checks workbench's")
spec("fmod", wb.fmod, np.fmod, [S(X * 3, POS), S(X * 3, 1.5)], torch_op=lambda a, b: a.fmod(b))
spec("floor_divide", lambda a, b: a // b, np.floor_divide, [S(X * 3, POS)],
     no_torch="PyTorch implements no derivative of floor_divide; workbench's (zero almost everywhere) passes gradcheck")
spec("atan2", wb.atan2, np.arctan2, [S(X, Y), S(X, ROW)], torch_op=lambda a, b: a.atan2(b))
spec("hypot", wb.hypot, np.hypot, [S(X, Y)], torch_op=lambda a, b: a.hypot(b))
spec("copysign", wb.copysign, np.copysign, [S(X, Y), S(X, -1.0)], torch_op=lambda a, b: a.copysign(b))
spec("ldexp", wb.ldexp, lambda a, b: a * np.exp2(b), [S(X, Y), S(X, ROW)], torch_op=lambda a, b: a.ldexp(b))
spec("ldexp_int_exponent", wb.ldexp, lambda a, b: a * np.exp2(b), [S(X, np.arange(-6, 6).reshape(3, 4))],
     no_torch="PyTorch's backward takes 2**other in integers, 0 for a negative exponent (tests/ops/test_float_parts.py "
              "compares the values, and the gradients for positive exponents)")
spec("nextafter", wb.nextafter, np.nextafter, [S(X, Y), S(X, ROW)], torch_op=lambda a, b: a.nextafter(b))
spec("frexp", wb.frexp, np.frexp, [S(X * 5)], torch_op=lambda a: tuple(a.frexp()), output_index=0)
spec("xlogy", wb.xlogy, lambda a, b: a * np.log(b), [S(X, POS), S(X, 2.0)], torch_op=lambda a, b: a.xlogy(b))
spec("logaddexp", wb.logaddexp, np.logaddexp, [S(X, Y), S(X * 400, ROW)], torch_op=lambda a, b: a.logaddexp(b))
spec("logaddexp2", wb.logaddexp2, np.logaddexp2, [S(X, Y)], torch_op=lambda a, b: a.logaddexp2(b))
spec("maximum", wb.maximum, np.maximum, [S(X, Y), S(X, ROW)], torch_op=lambda a, b: a.maximum(b))
spec("minimum", wb.minimum, np.minimum, [S(X, Y)], torch_op=lambda a, b: a.minimum(b))
spec("fmax", wb.fmax, np.fmax, [S(X, Y)], torch_op=lambda a, b: a.fmax(b))
spec("fmin", wb.fmin, np.fmin, [S(X, ROW)], torch_op=lambda a, b: a.fmin(b))

# --- clamp, where, lerp and the optimizer helpers ---------------------------------------------------
spec("clamp", lambda x, **k: wb.clamp(x, **k), lambda x, **k: np.clip(x, k.get("min"), k.get("max")),
     [S(X, min=-0.5, max=0.7), S(X, min=0.1), S(X, max=0.3)], torch_op=lambda x, **k: x.clamp(**k))
spec("clamp_tensor_bounds", lambda x, lo, hi: wb.clamp(x, lo, hi), lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
     [S(X, Y * 0.3 - 0.5, ROW * 0.3 + 0.5)], torch_op=lambda x, lo, hi: x.clamp(lo, hi))
spec("clamp_min", wb.clamp_min, np.maximum, [S(X, 0.2)], torch_op=lambda x, m: x.clamp_min(m))
spec("clamp_max", wb.clamp_max, np.minimum, [S(X, 0.2)], torch_op=lambda x, m: x.clamp_max(m))
_MASK = arr(3, 4, seed=9) > 0
spec("where", lambda c, a, b: wb.where(c, a, b), np.where, [Sample([_MASK, X, Y]), Sample([_MASK, X, 0.5])],
     torch_op=lambda c, a, b: a.where(c, b))
spec("lerp", wb.lerp, lambda a, b, w: a + w * (b - a), [S(X, Y, 0.3), S(X, Y, 0.8), S(X, Y, PROB)],
     torch_op=lambda a, b, w: a.lerp(b, w))
spec("addcmul", lambda x, a, b, **k: wb.addcmul(x, a, b, **k), lambda x, a, b, value=1: x + value * a * b,
     [S(X, Y, ROW), S(X, Y, ROW, value=-0.5)], torch_op=lambda x, a, b, **k: x.addcmul(a, b, **k))
spec("addcdiv", lambda x, a, b, **k: wb.addcdiv(x, a, b, **k), lambda x, a, b, value=1: x + value * a / b,
     [S(X, Y, POS), S(X, Y, POS, value=0.25)], torch_op=lambda x, a, b, **k: x.addcdiv(a, b, **k))

# --- values only: comparisons, logic, bits, tests for special values (forward on every backend) ------
_I = np.array([[5, -3, 0, 12], [7, 1, -8, 3], [2, 2, 9, -1]])
_J = np.array([[3, 1, 4, 1], [5, 9, 2, 6], [5, 3, 5, 8]])
_SPECIAL = np.array([[0.0, -1.5, np.inf, np.nan], [-np.inf, 2.0, -0.0, 1e-310], [3.0, np.nan, -2.0, 0.5]])


def V(*args, **kwargs):
    """A sample with integer or boolean inputs or outputs: values only."""
    return Sample(list(args), kwargs, values_only="integer or boolean values: there is no gradient to check")


for _name, _fn, _ref in [
    ("eq", lambda a, b: a == b, np.equal), ("ne", lambda a, b: a != b, np.not_equal),
    ("lt", lambda a, b: a < b, np.less), ("le", lambda a, b: a <= b, np.less_equal),
    ("gt", lambda a, b: a > b, np.greater), ("ge", lambda a, b: a >= b, np.greater_equal),
]:
    spec(_name, _fn, _ref, [V(X, Y), V(_I, _J), V(X, 0.5)], torch_op=(lambda f: lambda a, b: f(a, b))(_fn))
for _name in ("logical_and", "logical_or", "logical_xor"):
    spec(_name, getattr(wb, _name), getattr(np, _name), [V(X, Y), V(_I, _J > 3)],
         torch_op=(lambda n: lambda a, b: getattr(a, n)(b))(_name))

for _name, _fn, _ref in [
    ("bitwise_and", lambda a, b: a & b, np.bitwise_and), ("bitwise_or", lambda a, b: a | b, np.bitwise_or),
    ("bitwise_xor", lambda a, b: a ^ b, np.bitwise_xor), ("left_shift", lambda a, b: a << (b & 7), lambda a, b: np.left_shift(a, b & 7)),
    ("right_shift", lambda a, b: a >> (b & 7), lambda a, b: np.right_shift(a, b & 7)),
]:
    spec(_name, _fn, _ref, [V(_I, _J), V(_I > 0, _J > 2)] if "shift" not in _name else [V(_I, _J)],
         torch_op=(lambda f: lambda a, b: f(a, b))(_fn))

for _name in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "logical_not"):
    spec(_name, getattr(wb, _name), getattr(np, _name, None) if _name not in ("signbit",) else np.signbit,
         [V(_SPECIAL)], torch_op=(lambda n: lambda x: getattr(x, n)())(_name))
spec("bitwise_not", lambda a: ~a, np.invert, [V(_I), V(_I > 0)], torch_op=lambda a: ~a)
spec("isclose", lambda a, b: wb.isclose(a, b, rtol=0.1, equal_nan=True),
     lambda a, b: np.isclose(a, b, rtol=0.1, equal_nan=True), [V(_SPECIAL, _SPECIAL * 1.05)],
     torch_op=lambda a, b: a.isclose(b, rtol=0.1, equal_nan=True))
spec("nan_to_num_special", lambda x: wb.nan_to_num(x, nan=1.0, posinf=5.0), lambda x: np.nan_to_num(x, nan=1.0, posinf=5.0),
     [Sample([_SPECIAL], values_only="inf and nan inputs: finite differences are undefined there")],
     torch_op=lambda x: x.nan_to_num(nan=1.0, posinf=5.0))
spec("int_floor_divide", lambda a, b: a // b, np.floor_divide, [V(_I, _J)], torch_op=lambda a, b: a // b)
spec("int_remainder", lambda a, b: a % b, np.remainder, [V(_I, _J), V(_I, -3)], torch_op=lambda a, b: a % b)
spec("int_fmod", wb.fmod, np.fmod, [V(_I, _J)], torch_op=lambda a, b: a.fmod(b))
