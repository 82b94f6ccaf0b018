"""Elementwise ops: arithmetic, the math functions, rounding, comparisons, logic and bitwise ops.

Each primitive is a Function with ``forward`` on raw arrays and ``backward`` in Tensor ops. Binary
ops promote operands with PyTorch's rules (``_util.result_dtype``) and leave broadcasting's
gradient reduction to the engine, which sums each gradient to its input's shape. Most ops come
from two small factories, ``_unary`` and ``_binary``; ops with extra arguments are written out.
"""
import builtins
import cmath
import math

from .. import _backend
from .._backend import dtypes as _dt, fused as _fused, pointwise as _pw
from .._broadcast import broadcasting
from ..autograd.function import Function, binary_operator, fast_inplace_method, inplace_operator, unary_operator
from ..autograd.grad_mode import STATE
from .._core import Tensor
from ._autocast import AUTOCAST as _AUTOCAST
from ._autocast import cast as _autocast_cast
from ._util import _out, array_step, cast, check_operands, dtype_error, float_np, result_dtype, to_float

_LN2, _LN10 = math.log(2.0), math.log(10.0)
_ndarray = _backend.ndarray
_numpy = _backend.numpy


def _isarr(x):
    return hasattr(x, "shape")


def _is_bool(x):
    return x.dtype == bool if _isarr(x) else type(x) is bool


def _t(x):
    return x._data if isinstance(x, Tensor) else x


# --- arithmetic ----------------------------------------------------------------------------------
class Add(Function):
    _raw = True
    _ufunc = _backend.numpy.add
    _saves = ()

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        if a.__class__ is not _ndarray or b.__class__ is not _ndarray or a.dtype is not b.dtype:
            rd = result_dtype(a, b)
            a, b = cast(a, rd), cast(b, rd)
        if alpha != 1:
            b = b * alpha
            if getattr(b, "dtype", None) != a.dtype and _is_bool(a):  # bool + alpha * bool stays bool
                b = b.astype(bool) if _isarr(b) else bool(b)
            ctx.alpha = alpha  # stashed only when not 1: a ctx without it is alpha 1 (no __dict__ made)
        return ctx.xp.add(a, b)

    @staticmethod
    def backward(ctx, g):
        alpha = getattr(ctx, "alpha", 1)
        if alpha == 1:
            return g, g
        return g, g * alpha, None


def _alpha(op, a, b, alpha):
    """alpha as a Python number after PyTorch's checks of it against the result's dtype (alpha_check); the
    caller leaves it out of the op where it is 1."""
    rd = result_dtype(_t(a), _t(b))
    alpha = _dt.as_number(alpha)
    if type(alpha) is bool and rd != bool:
        raise RuntimeError(f"{op}: Boolean alpha only supported for Boolean results.")
    if rd.kind in "biu" and type(alpha) not in (bool, int):
        raise RuntimeError(f"{op}: For integral input tensors, argument alpha must not be a floating point number.")
    if rd.kind != "c" and type(alpha) is complex:
        raise RuntimeError(f"{op}: For non-complex input tensors, argument alpha must not be a complex number.")
    return alpha


def add(input, other, *, alpha=1, out=None):
    """input + alpha * other, broadcast.  >>> wb.add(wb.tensor([1, 2]), 1)  ->  tensor([2, 3])"""
    if not isinstance(input, Tensor):
        input, other = other, input
        if alpha != 1:
            raise TypeError("add(scalar, tensor, alpha=) is not supported; put the tensor first")
    if alpha.__class__ is not int or alpha != 1:
        alpha = _alpha("add", input, other, alpha)
    r = Add.apply(input, other) if alpha == 1 else Add.apply(input, other, alpha)
    return r if out is None else _out(r, out)


class Sub(Function):
    _raw = True
    _ufunc = _backend.numpy.subtract
    _saves = ()

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        if alpha != 1:
            ctx.alpha = alpha  # stashed only when not 1: a ctx without it is alpha 1 (no __dict__ made)
        if a.__class__ is _ndarray and b.__class__ is _ndarray and a.dtype is b.dtype and a.dtype.kind in "fc":
            # floating arrays of one dtype: nothing to promote or refuse
            return ctx.xp.subtract(a, b * alpha if alpha != 1 else b)
        rd = result_dtype(a, b)
        if _is_bool(a) and _is_bool(b):
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                               "`^` or `logical_xor()` operator instead.")
        if _is_bool(a) or _is_bool(b):
            raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                               "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
        a, b = cast(a, rd), cast(b, rd)
        return ctx.xp.subtract(a, b * alpha if alpha != 1 else b)

    @staticmethod
    def backward(ctx, g):  # one gradient per argument: alpha is an argument only when it is not 1
        alpha = getattr(ctx, "alpha", 1)
        if not STATE.enabled:
            return (g, Tensor._make(-g._data)) if alpha == 1 else (g, Tensor._make(g._data * -alpha), None)
        return (g, -g) if alpha == 1 else (g, g * (-alpha), None)


def sub(input, other, *, alpha=1, out=None):
    """input - alpha * other.  >>> wb.sub(wb.tensor([3., 4.]), 1)  ->  tensor([2., 3.])"""
    if alpha.__class__ is not int or alpha != 1:
        alpha = _alpha("sub", input, other, alpha)
    r = Sub.apply(input, other) if alpha == 1 else Sub.apply(input, other, alpha)
    return r if out is None else _out(r, out)


def rsub(input, other, alpha=1):
    """other - alpha * input.  >>> wb.rsub(wb.tensor([1., 2.]), 5)  ->  tensor([4., 3.])"""
    if not isinstance(input, Tensor):
        check_operands("rsub", ("input", "other"), (input, other), ("other",))
    if alpha.__class__ is not int or alpha != 1:
        alpha = _alpha("rsub", input, other, alpha)
    return Sub.apply(other, input) if alpha == 1 else Sub.apply(other, input, alpha)


def _as(d, dt):
    # a saved input (kept in its own dtype) in the gradient's dtype, for the array fast paths of backward
    return d if d.dtype is dt else cast(d, dt)


class Mul(Function):
    _raw = True
    _ufunc = _backend.numpy.multiply
    _saves = ((0, 1), (1, 0))  # as forward: a for b's gradient, b for a's

    @staticmethod
    def forward(ctx, a, b):
        nig = ctx.needs_input_grad
        # the inputs are saved as they came: a cast copy would be a constant to the second derivative
        ctx.save_for_backward(a if nig[1] else None, b if nig[0] else None)
        if a.__class__ is not _ndarray or b.__class__ is not _ndarray or a.dtype is not b.dtype:
            rd = result_dtype(a, b)
            a, b = cast(a, rd), cast(b, rd)
        return ctx.xp.multiply(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        gd = g._data
        if not STATE.enabled and gd.dtype.kind != "c":  # no graph to build: multiply the arrays directly
            return (Tensor._make(gd * _as(b._data, gd.dtype)) if b is not None else None,
                    Tensor._make(gd * _as(a._data, gd.dtype)) if a is not None else None)
        return (g * _c(b) if b is not None else None), (g * _c(a) if a is not None else None)


class MulScalar(Function):
    _raw = True
    _ufunc = _backend.numpy.multiply
    op_name = "mul"

    @staticmethod
    def forward(ctx, a, s):
        rd = result_dtype(a, s)
        ctx.s = s
        return ctx.xp.multiply(cast(a, rd), cast(s, rd))

    @staticmethod
    def backward(ctx, g):
        s = ctx.s
        if type(s) is complex:
            return g * s.conjugate(), None
        return (g * s if STATE.enabled else Tensor._make(g._data * s)), None


def mul(input, other, *, out=None):
    """input * other, broadcast.  >>> wb.mul(wb.tensor([1., 2.]), 3)  ->  tensor([3., 6.])"""
    if not isinstance(input, Tensor):
        input, other = other, input
    r = Mul.apply(input, other) if isinstance(other, Tensor) else MulScalar.apply(input, other)
    return r if out is None else _out(r, out)


def _c(t):
    """The complex conjugate where it matters: PyTorch's gradients are g * conj(f'(z))."""
    if isinstance(t, Tensor):
        return t.conj() if t._data.dtype.kind == "c" else t
    return t.conjugate() if type(t) is complex else t


def _check_int_divisor(b, rd):
    if rd.kind in "biu" and bool((b == 0).any() if _isarr(b) else b == 0):
        raise RuntimeError("ZeroDivisionError: integer division or modulo by zero; make the divisor nonzero or "
                           "divide floating-point tensors (x.float()), which give inf/nan")


class Div(Function):
    _raw = True
    _ufunc = _backend.numpy.true_divide

    @staticmethod
    def forward(ctx, a, b, rounding_mode=None):
        rd = result_dtype(a, b)
        ctx.rounding_mode = rounding_mode
        xp = ctx.xp
        if rounding_mode is None:
            rd = float_np(rd)
            ac, bc = cast(a, rd), cast(b, rd)
            if ctx.needs_input_grad[1] and not _isarr(a):  # 2.0 / x: the gradient for x needs a as a tensor
                a = xp.asarray(ac, dtype=rd)
            # array inputs are saved as they came: a cast copy would be a constant to the second derivative
            ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if _isarr(b) else None)
            ctx.b = None if _isarr(b) else bc
            r = xp.true_divide(ac, bc)
        else:
            if rd.kind in "bc":
                raise dtype_error(f"div_{rounding_mode}_cpu", rd)
            a, b = cast(a, rd), cast(b, rd)
            _check_int_divisor(b, rd)
            if rounding_mode == "trunc":
                r = xp.trunc(xp.true_divide(a, b)) if rd.kind in "fc" else _int_trunc_div(xp, a, b)
            elif rounding_mode == "floor":
                r = xp.floor_divide(a, b)
            else:
                raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                                 f"'{rounding_mode}'")
            r = xp.asarray(r).astype(rd, copy=False)
        return r if _isarr(r) else xp.asarray(r, rd)

    @staticmethod
    def backward(ctx, g):
        if ctx.rounding_mode is not None:  # piecewise constant: PyTorch's gradient is zero
            return g * 0, (g * 0 if ctx.needs_input_grad[1] else None), None
        a, b = ctx.saved_tensors
        if not STATE.enabled and g._data.dtype.kind != "c":
            rd = g._data.dtype
            bd = _as(b._data, rd) if b is not None else ctx.b
            gad = g._data / bd
            return Tensor._make(gad), (Tensor._make(-gad * _as(a._data, rd) / bd) if a is not None else None), None
        if b is None:
            b = ctx.b
        ga = g / _c(b)
        gb = -ga * _c(a / b) if a is not None else None
        return ga, gb, None


def _int_trunc_div(xp, a, b):
    q = xp.floor_divide(a, b)
    return q + ((q < 0) & (q * b != a))


def div(input, other, *, rounding_mode=None, out=None):
    """input / other (true division unless rounding_mode is 'trunc' or 'floor').

    >>> import workbench as wb
    >>> wb.div(wb.tensor([1, 2]), 2)
    tensor([0.5000, 1.0000])
    """
    r = Div.apply(input, other, rounding_mode) if rounding_mode else Div.apply(input, other)
    return r if out is None else _out(r, out)


def true_divide(input, other, *, out=None):
    """input / other, always true division.  >>> wb.true_divide(wb.tensor([3]), 2)  ->  tensor([1.5000])"""
    return _out(Div.apply(input, other), out)


def floor_divide(input, other, *, out=None):
    """input / other rounded down, as ``//``.  >>> wb.floor_divide(wb.tensor([-7, 7]), 2)  ->  tensor([-4, 3])"""
    return _out(Div.apply(input, other, "floor"), out)


class Neg(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x):
        if x.dtype == bool:
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                               "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
        return ctx.xp.negative(x)

    @staticmethod
    def backward(ctx, g):
        return -g


def neg(input, *, out=None):
    """-input.  >>> wb.neg(wb.tensor([1., -2.]))  ->  tensor([-1., 2.])"""
    return _out(Neg.apply(input), out, "same")


negative = neg


def positive(input):
    """input itself (unary +); bool tensors are refused as in PyTorch.  >>> +wb.tensor([1.])  ->  tensor([1.])"""
    if input.dtype is _dt.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


# scalar exponents computed with products and roots, as PyTorch's pow kernel does (NumPy's generic pow
# is 5-50x slower for these)
_POW_FAST = {2.0: lambda xp, a: a * a, 3.0: lambda xp, a: a * a * a, 0.5: lambda xp, a: xp.sqrt(a),
             -0.5: lambda xp, a: 1 / xp.sqrt(a), -1.0: lambda xp, a: 1 / a, -2.0: lambda xp, a: 1 / (a * a)}


class Pow(Function):
    _raw = True

    @staticmethod
    def forward(ctx, a, b):
        rd = result_dtype(a, b)
        xp = ctx.xp
        a2, b2 = cast(a, rd), cast(b, rd)
        neg = None
        if rd.kind in "iu":
            if not _isarr(b2):
                if b2 < 0:
                    raise RuntimeError("Integers to negative integer powers are not allowed.")
            elif bool((b2 < 0).any()):  # a tensor exponent: PyTorch's integer kernel computes these
                neg = b2 < 0
        if neg is not None:
            # base ** negative: 1 for base 1, +-1 for base -1 (by the exponent's parity), else 0, as PyTorch
            r = xp.power(a2, xp.where(neg, 0, b2))
            flip = xp.where((b2 % 2) == 0, 1, -1).astype(rd)
            r = xp.where(neg, xp.where(a2 == 1, 1, xp.where(a2 == -1, flip, 0)).astype(rd), r).astype(rd)
        elif rd == bool:  # a bool tensor to a bool power stays bool; two bool tensors have no kernel
            if _isarr(b):
                raise dtype_error("pow", rd)
            r = a2 | (not b2)
        elif rd.kind == "f" and not _isarr(b2) and _isarr(a2) and float(b2) in _POW_FAST:
            r = _POW_FAST[float(b2)](xp, a2)
        else:
            r = xp.power(a2, b2)
        ctx.save_for_backward(a if _isarr(a) else None, b if _isarr(b) else None,
                              r if ctx.needs_input_grad[1] else None)
        ctx.sa, ctx.sb = (None if _isarr(a) else a), (None if _isarr(b) else b)
        return r

    @staticmethod
    def backward(ctx, g):
        a, b, r = ctx.saved_tensors
        ga = gb = None
        if ctx.needs_input_grad[0]:
            if b is None:
                e = ctx.sb
                if not STATE.enabled and g._data.dtype.kind != "c" and type(e) is not complex:
                    ad = a._data
                    ga = Tensor._make(g._data * 0 if e == 0 else g._data * (2 * ad if e == 2 else e * ad ** (e - 1)))
                else:
                    ga = g * 0 if e == 0 else (g * 2 * _c(a) if e == 2 else g * _c(e * a ** (e - 1)))
            else:
                ga = where(b == 0, 0.0, g * _c(b * a ** (b - 1)))
        if ctx.needs_input_grad[1]:
            # PyTorch's convention: no gradient through the exponent where base == 0 and exponent >= 0
            if a is not None:
                gb = where((a == 0) & (b.real >= 0), 0.0, g * _c(r * a.log()))
            elif ctx.sa == 0:
                gb = where(b >= 0, 0.0, g * r * float("-inf"))
            else:
                s = ctx.sa
                gb = g * _c(r) * _c(cmath.log(s) if isinstance(s, complex) or s < 0 and r.is_complex() else
                              math.log(s) if s > 0 else float("nan"))
        return ga, gb


def pow(input, exponent, *, out=None):
    """input ** exponent; either may be a Python number.  >>> wb.pow(wb.tensor([2., 3.]), 2)  ->  tensor([4., 9.])"""
    if _AUTOCAST[0]:
        input, exponent = _autocast_cast("pow", input, exponent)
    return _out(Pow.apply(input, exponent), out)


def float_power(input, exponent, *, out=None):
    """input ** exponent computed in double precision.  >>> wb.float_power(wb.tensor([2]), 3)  ->  tensor([8.], dtype=workbench.float64)"""
    dt = _dt.complex128 if any(isinstance(v, complex) or (isinstance(v, Tensor) and v.is_complex())
                               for v in (input, exponent)) else _dt.float64
    input = input.to(dt) if isinstance(input, Tensor) else input
    exponent = exponent.to(dt) if isinstance(exponent, Tensor) else exponent
    return _out(Pow.apply(input, exponent), out)


def _float_power_(self, exponent):
    if self.dtype not in (_dt.float64, _dt.complex128):
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype._scalar_name} but the "
                           "operation's result requires dtype Double; convert it first with .double()")
    return self._inplace("float_power_", float_power, exponent)


def square(input, *, out=None):
    """input ** 2 (integers stay integers).  >>> wb.square(wb.tensor([3]))  ->  tensor([9])"""
    return _out(Pow.apply(input, 2), out)


# --- unary math ----------------------------------------------------------------------------------
def _unary(name, fwd, bwd, saves="y", doc="", ints="float", raw=None):
    """Build a unary primitive: fwd(xp, x) -> y and bwd(g, x, y) -> grad, saving x and/or y.

    fwd may be the name of a ufunc that numpy and cupy share ("exp"): it is then also the primitive's
    ``_ufunc``, which apply calls directly for floating inputs when nothing records.

    ints: what integer and bool inputs do. "float" computes in the default float dtype (as PyTorch's
    exp, sin...), "keep" runs fwd on them (floor, sign...), "error" refuses them.
    For complex inputs the gradient is conj(f'(x)) * g, PyTorch's convention, from the same bwd.
    raw(xp, g, x, y): the same gradient on arrays, one expression instead of several Tensor ops, used when
    backward builds no graph (create_graph=False); bwd stays the differentiable form. gradcheck checks
    the first, gradgradcheck the second.
    """

    save_x, save_y = "x" in saves, "y" in saves
    out_dtype = "same" if ints == "keep" else "cast"  # PyTorch's float ops cast into out; floor, sign... do not
    is_ufunc = isinstance(fwd, str)
    if is_ufunc:  # the name of a ufunc of numpy and cupy: also the no-grad fast path's forward
        ufunc = getattr(_backend.numpy, fwd)

        def fwd(xp, x, _name=fwd):
            return getattr(xp, _name)(x)
    else:  # fwd on NumPy arrays is the whole forward of a floating input: the operators' fast path calls it
        # (x.sigmoid() recorded went through apply and the forward's frame: 6.7 us on 8 x 16, PyTorch's 1.6)
        def ufunc(x, _fwd=fwd):
            return _fwd(_numpy, x)

        ufunc.__name__ = ufunc.__qualname__ = name

    def forward(ctx, x):
        try:
            kind = x.dtype.kind
        except AttributeError:
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(x).__name__}") from None
        if kind in "biu":
            if ints == "error":
                raise dtype_error(f"{name}_cpu", x.dtype)
            if ints == "float":
                x = to_float(x)
        y = ufunc(x) if ufunc is not None and x.__class__ is _ndarray else fwd(ctx.xp, x)
        ctx.save_for_backward(x if save_x else None, y if save_y else None)
        return y

    def backward(ctx, g):
        x, y = ctx.saved_tensors
        gd = g._data
        if gd.dtype.kind == "c":
            return bwd(g.conj(), x, y).conj()
        if raw is not None and not STATE.enabled:
            return Tensor._make(raw(ctx.xp, gd, x._data if save_x else None, y._data if save_y else None))
        return bwd(g, x, y)

    cls = type(name.capitalize(), (Function,), {"_raw": True, "op_name": name, "__module__": __name__,
                                                  "_ufunc": ufunc,
                                                  "_saves": ((0, None) if save_x else None,
                                                             (-1, None) if save_y else None),
                                                  "forward": staticmethod(forward),
                                                  "backward": staticmethod(backward)})

    def public(input, *, out=None):
        if _AUTOCAST[0]:
            input, = _autocast_cast(name, input)
        r = cls.apply(input)  # looked up per call: workbench.profiler times apply by swapping it
        return r if out is None else _out(r, out, out_dtype)

    public.__name__ = public.__qualname__ = name
    public.__doc__ = doc
    return cls, unary_operator(cls, public, _AUTOCAST, inplace=is_ufunc)


def _zero_grad(g, x, y):
    return g * 0


Exp, exp = _unary("exp", "exp", lambda g, x, y: g * y, "y",
                  "e**input.  >>> wb.exp(wb.tensor([0.0, 1.0]))  ->  tensor([1.0000, 2.7183])",
                  raw=lambda xp, g, x, y: g * y)
Exp2, exp2 = _unary("exp2", "exp2", lambda g, x, y: g * y * _LN2, "y",
                    "2**input.  >>> wb.exp2(wb.tensor([3.0]))  ->  tensor([8.])")
Expm1, expm1 = _unary("expm1", "expm1", lambda g, x, y: g * (y + 1), "y",
                      "e**input - 1, accurate near 0.  >>> wb.expm1(wb.tensor([0.0]))  ->  tensor([0.])",
                      raw=lambda xp, g, x, y: g * (y + 1))
Log, log = _unary("log", "log", lambda g, x, y: g / x, "x",
                  "Natural log.  >>> wb.log(wb.tensor([1.0]))  ->  tensor([0.])",
                  raw=lambda xp, g, x, y: g / x)
Log2, log2 = _unary("log2", "log2", lambda g, x, y: g / (x * _LN2), "x",
                    "Base-2 log.  >>> wb.log2(wb.tensor([8.0]))  ->  tensor([3.])")
Log10, log10 = _unary("log10", "log10", lambda g, x, y: g / (x * _LN10), "x",
                      "Base-10 log.  >>> wb.log10(wb.tensor([100.0]))  ->  tensor([2.])")
Log1p, log1p = _unary("log1p", "log1p", lambda g, x, y: g / (x + 1), "x",
                      "log(1 + input), accurate near 0.  >>> wb.log1p(wb.tensor([0.0]))  ->  tensor([0.])",
                      raw=lambda xp, g, x, y: g / (x + 1))
Sqrt, sqrt = _unary("sqrt", "sqrt", lambda g, x, y: g / (2 * y), "y",
                    "Square root.  >>> wb.sqrt(wb.tensor([4.0]))  ->  tensor([2.])",
                    raw=lambda xp, g, x, y: g / (2 * y))
Rsqrt, rsqrt = _unary("rsqrt", lambda xp, x: 1 / xp.sqrt(x), lambda g, x, y: -0.5 * g * y * y * y, "y",
                      "1 / sqrt(input).  >>> wb.rsqrt(wb.tensor([4.0]))  ->  tensor([0.5000])",
                      raw=lambda xp, g, x, y: -0.5 * g * y * y * y)
Reciprocal, reciprocal = _unary("reciprocal", lambda xp, x: 1 / x, lambda g, x, y: -g * y * y, "y",
                                "1 / input.  >>> wb.reciprocal(wb.tensor([4]))  ->  tensor([0.2500])",
                                raw=lambda xp, g, x, y: -g * y * y)
Sin, sin = _unary("sin", "sin", lambda g, x, y: g * x.cos(), "x",
                  "Sine.  >>> wb.sin(wb.tensor([0.0]))  ->  tensor([0.])",
                  raw=lambda xp, g, x, y: g * xp.cos(x))
Cos, cos = _unary("cos", "cos", lambda g, x, y: -g * x.sin(), "x",
                  "Cosine.  >>> wb.cos(wb.tensor([0.0]))  ->  tensor([1.])",
                  raw=lambda xp, g, x, y: -g * xp.sin(x))
Tan, tan = _unary("tan", "tan", lambda g, x, y: g * (1 + y * y), "y",
                  "Tangent.  >>> wb.tan(wb.tensor([0.0]))  ->  tensor([0.])")
Asin, asin = _unary("asin", "arcsin", lambda g, x, y: g * (1 - x * x).rsqrt(), "x",
                    "Inverse sine.  >>> wb.asin(wb.tensor([0.0]))  ->  tensor([0.])")
Acos, acos = _unary("acos", "arccos", lambda g, x, y: -g * (1 - x * x).rsqrt(), "x",
                    "Inverse cosine.  >>> wb.acos(wb.tensor([1.0]))  ->  tensor([0.])")
Atan, atan = _unary("atan", "arctan", lambda g, x, y: g / (1 + x * x), "x",
                    "Inverse tangent.  >>> wb.atan(wb.tensor([0.0]))  ->  tensor([0.])")
Sinh, sinh = _unary("sinh", "sinh", lambda g, x, y: g * x.cosh(), "x",
                    "Hyperbolic sine.  >>> wb.sinh(wb.tensor([0.0]))  ->  tensor([0.])")
Cosh, cosh = _unary("cosh", "cosh", lambda g, x, y: g * x.sinh(), "x",
                    "Hyperbolic cosine.  >>> wb.cosh(wb.tensor([0.0]))  ->  tensor([1.])")
Tanh, tanh = _unary("tanh", "tanh", lambda g, x, y: g * (1 - y * y), "y",
                    "Hyperbolic tangent.  >>> wb.tanh(wb.tensor([0.0]))  ->  tensor([0.])",
                    raw=lambda xp, g, x, y: g * (1 - y * y))
Asinh, asinh = _unary("asinh", "arcsinh", lambda g, x, y: g * (x * x + 1).rsqrt(), "x",
                      "Inverse hyperbolic sine.  >>> wb.asinh(wb.tensor([0.0]))  ->  tensor([0.])")
Acosh, acosh = _unary("acosh", "arccosh", lambda g, x, y: g * (x * x - 1).rsqrt(), "x",
                      "Inverse hyperbolic cosine.  >>> wb.acosh(wb.tensor([1.0]))  ->  tensor([0.])")
Atanh, atanh = _unary("atanh", "arctanh", lambda g, x, y: g / (1 - x * x), "x",
                      "Inverse hyperbolic tangent.  >>> wb.atanh(wb.tensor([0.0]))  ->  tensor([0.])")
Deg2rad, deg2rad = _unary("deg2rad", lambda xp, x: x * (math.pi / 180), lambda g, x, y: g * (math.pi / 180), "",
                          "Degrees to radians.  >>> wb.deg2rad(wb.tensor([180.0]))  ->  tensor([3.1416])")
Rad2deg, rad2deg = _unary("rad2deg", lambda xp, x: x * (180 / math.pi), lambda g, x, y: g * (180 / math.pi), "",
                          "Radians to degrees.  >>> wb.rad2deg(wb.tensor([3.14159265]))  ->  tensor([180.])")


def _sigmoid_fwd(xp, x):
    if x.dtype.kind == "c":  # no sign to split by; PyTorch computes 1 / (1 + e**-z) as written
        return 1 / (1 + xp.exp(-x))
    if _pw.eligible(x):  # 1 / (1 + e**-x) in place: e**-x overflowing to inf gives 0, as it should
        return _pw.run(xp, _pw.sigmoid, (x,))
    # split by sign so neither branch overflows
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


Sigmoid, sigmoid = _unary("sigmoid", _sigmoid_fwd, lambda g, x, y: g * y * (1 - y), "y",
                          "1 / (1 + e**-input).  >>> wb.sigmoid(wb.tensor([0.0]))  ->  tensor([0.5000])",
                          raw=lambda xp, g, x, y: (_pw.run(xp, _pw.sigmoid_grad_from_y, (g, y)) if _pw.eligible(g, y)
                                                   else g * y * (1 - y)))

# rounding: integers pass through unchanged; the gradient is zero almost everywhere (PyTorch's)
Floor, floor = _unary("floor", lambda xp, x: xp.floor(x) if x.dtype.kind not in "biu" else x.copy(), _zero_grad, "",
                      "Round down.  >>> wb.floor(wb.tensor([1.5, -1.5]))  ->  tensor([ 1., -2.])", ints="keep")
Ceil, ceil = _unary("ceil", lambda xp, x: xp.ceil(x) if x.dtype.kind not in "biu" else x.copy(), _zero_grad, "",
                    "Round up.  >>> wb.ceil(wb.tensor([1.5, -1.5]))  ->  tensor([ 2., -1.])", ints="keep")
Trunc, trunc = _unary("trunc", lambda xp, x: xp.trunc(x) if x.dtype.kind not in "biu" else x.copy(), _zero_grad, "",
                      "Round toward zero.  >>> wb.trunc(wb.tensor([1.5, -1.5]))  ->  tensor([ 1., -1.])", ints="keep")
Frac, frac = _unary("frac", lambda xp, x: x - xp.trunc(x), lambda g, x, y: g, "",
                    "input - trunc(input).  >>> wb.frac(wb.tensor([1.5, -1.25]))  ->  tensor([ 0.5000, -0.2500])",
                    ints="error")
fix = trunc


class Round(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, decimals):
        xp = ctx.xp
        if x.dtype.kind in "biu":
            if decimals:
                raise dtype_error("round_cpu", x.dtype)
            return x.copy()
        if not decimals:
            return xp.round(x)
        # PyTorch scales, rounds half to even and scales back (not NumPy's decimal-exact variant)
        s = 10.0 ** builtins.abs(decimals)
        y = xp.round(x * s) / s if decimals > 0 else xp.round(x / s) * s
        return y.astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        return g * 0, None


def round(input, *, decimals=0, out=None):
    """Round half to even, to ``decimals`` places.  >>> wb.round(wb.tensor([0.5, 1.5, 1.234]), decimals=1)  ->  tensor([0.5000, 1.5000, 1.2000])"""
    return _out(Round.apply(input, decimals), out, "same")


class Logit(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, eps):
        x = to_float(x)
        xp = ctx.xp
        z = x if eps is None else xp.clip(x, eps, 1 - eps).astype(x.dtype, copy=False)
        ctx.eps = eps
        ctx.save_for_backward(x)
        return xp.log(z / (1 - z))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        gx = g / (x * (1 - x))
        if ctx.eps is not None:  # clamped inputs are constant: no gradient outside [eps, 1 - eps]
            gx = where((x < ctx.eps) | (x > 1 - ctx.eps), 0.0, gx)
        return gx, None


def logit(input, eps=None, *, out=None):
    """log(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given.  >>> wb.logit(wb.tensor([0.5]))  ->  tensor([0.])"""
    return _out(Logit.apply(input, eps), out)


class Abs(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x):
        if x.dtype == bool:
            raise dtype_error("abs_cpu", x.dtype)
        ctx.save_for_backward(x)
        y = ctx.xp.abs(x)
        return y

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.sgn()  # sgn(0) = 0: abs'(0) = 0, as PyTorch


def abs(input, *, out=None):
    """|input|.  >>> wb.abs(wb.tensor([-1., 2.]))  ->  tensor([1., 2.])"""
    return _out(Abs.apply(input), out, "same")


absolute = abs


class Sign(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x):
        if x.dtype.kind == "c":
            raise RuntimeError("Unlike NumPy, workbench.sign is not intended to support complex numbers. Please use "
                               "workbench.sgn instead.")
        return x.copy() if x.dtype == bool else _sign(ctx.xp, x)

    @staticmethod
    def backward(ctx, g):
        return g * 0


def _sign(xp, x):
    if _fused.usable(x):  # NumPy: sign, a NaN test and a select, three passes
        out = xp.empty_like(x)
        _fused.sign(x.reshape(-1), out.reshape(-1), x.dtype.type(1))
        return out
    s = xp.sign(x)
    return xp.where(s != s, 0, s).astype(s.dtype, copy=False) if x.dtype.kind in "fV" else s  # sign(nan) = 0


def sign(input, *, out=None):
    """-1, 0 or 1 by sign.  >>> wb.sign(wb.tensor([-2., 0., 3.]))  ->  tensor([-1., 0., 1.])"""
    return _out(Sign.apply(input), out, "same")


class Sgn(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x):
        xp = ctx.xp
        if x.dtype.kind != "c":
            return x.copy() if x.dtype == bool else _sign(xp, x)
        a = xp.abs(x)
        ctx.save_for_backward(x, a)
        return xp.where(a == 0, 0, x / xp.where(a == 0, 1, a)).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        if not g.is_complex():
            return g * 0
        x, a = ctx.saved_tensors  # PyTorch's sgn_backward: (g - real(g * conj(sgn)) * sgn) / |x|, 0 at 0
        s = x / where(a == 0, 1.0, a)
        return where(a == 0, 0.0, (g - (g * s.conj()).real * s) / where(a == 0, 1.0, a))


def sgn(input, *, out=None):
    """sign for real inputs, input / |input| for complex ones.  >>> wb.sgn(wb.tensor([-2., 3.]))  ->  tensor([-1., 1.])"""
    return _out(Sgn.apply(input), out, "same")


class Conj(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x):
        return ctx.xp.conj(x) if x.dtype.kind == "c" else x

    @staticmethod
    def backward(ctx, g):
        return g.conj() if g.is_complex() else g


def conj(input):
    """Complex conjugate (real tensors are returned as they are).  >>> wb.conj(wb.tensor([1 + 2j]))  ->  tensor([1.-2.j])"""
    return Conj.apply(input) if input._data.dtype.kind == "c" else input


class Real(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x):
        return x.real

    @staticmethod
    def backward(ctx, g):
        return g


class Imag(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x):
        return x.imag

    @staticmethod
    def backward(ctx, g):
        return g * 1j


def real(input):
    """The real part (real tensors are returned as they are).  >>> wb.real(wb.tensor([1 + 2j]))  ->  tensor([1.])"""
    return Real.apply(input) if input._data.dtype.kind == "c" else input


def imag(input):
    """The imaginary part of a complex tensor.  >>> wb.imag(wb.tensor([1 + 2j]))  ->  tensor([2.])"""
    if input._data.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return Imag.apply(input)


_RELU_LOOP_MIN = 1 << 10  # from here the loop beats NumPy's maximum (~2x at 16k elements)
_RELU_COMPLEX = "clamp is not supported for complex types"  # PyTorch's relu of a complex tensor


def _relu_array(x):
    """max(x, 0) of a NumPy floating array with PyTorch's bits: NaN and -0. kept (clamp_min's). One pass:
    the loop where it serves, else NumPy's maximum with 0 first (it returns its second operand on a tie, so
    -0. stays; its select, ``where(x < 0, 0, x)``, took 4x as long on a small layer). Complex: PyTorch's error
    (``apply`` calls this for any floating or complex operand)."""
    if x.dtype.kind == "c":
        raise NotImplementedError(_RELU_COMPLEX)
    if _fused.usable(x, min_size=_RELU_LOOP_MIN):
        y = _numpy.empty_like(x)
        _fused.relu(x.reshape(-1), y.reshape(-1))
        return y
    return _numpy.maximum(x.dtype.type(0), x)


class Relu(Function):
    """max(x, 0), and g where y > 0 (else 0) back, with PyTorch's edges (clamp_min keeps NaN and -0.;
    threshold_backward passes g where y is NaN, 0 where y <= 0). On NumPy floating arrays the forward is
    ``_relu_array`` alone (its ``_ufunc``: ``x.relu()`` records it without a forward frame) and the backward
    one pass of ``fused.relu_grad`` where the loops serve (float32/64, any size)."""

    _raw = True
    op_name = "relu"
    _ufunc = staticmethod(_relu_array)
    _saves = ((-1, None),)

    @staticmethod
    def forward(ctx, x):
        kind = x.dtype.kind
        if kind == "b":
            raise RuntimeError("Boolean inputs not supported for relu")
        if kind == "c":
            raise NotImplementedError(_RELU_COMPLEX)
        if ctx.xp is _numpy and kind == "f":
            y = _relu_array(x)
        else:  # x < 0 ? 0 : x (integers, bfloat16, CuPy)
            y = ctx.xp.where(x < 0, x.dtype.type(0), x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        if not STATE.enabled:
            gd, yd = g._data, y._data
            if _fused.usable(gd, yd, min_size=1) and gd.shape == yd.shape:  # one pass, not a compare and a select
                d = _numpy.empty_like(gd)
                _fused.relu_grad(gd.reshape(-1), yd.reshape(-1), d.reshape(-1))
                return Tensor._make(d)
            # a select, not g * (y > 0): an inf or NaN g where y <= 0 gives 0 (not NaN), a negative one 0. (not -0.)
            return Tensor._make(ctx.xp.where(yd <= 0, gd.dtype.type(0), gd))
        return where(y <= 0, 0.0, g)


def relu(input):
    """max(input, 0).  >>> wb.relu(wb.tensor([-1., 2.]))  ->  tensor([0., 2.])"""
    return Relu.apply(input)


relu = unary_operator(Relu, relu, _AUTOCAST, kinds="f", inplace=False)


# --- binary math ---------------------------------------------------------------------------------
def _binary(name, fwd, bwd, kind="any", doc="", save_y=False, kernel=None, refuse="", numbers=()):
    """Build a binary primitive: fwd(xp, a, b) on operands promoted to one dtype, bwd(g, a, b, y) -> (ga, gb).

    Either operand may be a Python number. kind: "any"; "float" computes integer operands in the default
    float dtype (atan2...); "nograd" has no gradient. refuse: the NumPy dtype kinds ("b", "iu", "f", "c")
    of the promoted type that PyTorch has no kernel for (NotImplementedError, as PyTorch). numbers: the
    operands ("input", "other") PyTorch also takes as a Python number (its Scalar overloads); a number
    elsewhere is its TypeError.
    """

    def forward(ctx, a, b):
        rd = result_dtype(a, b)
        if (rd.kind if rd.kind != "V" else "f") in refuse:  # ml_dtypes' bfloat16 has kind "V"
            raise dtype_error(kernel or f"{name}_cpu", rd)
        if kind == "float":
            rd = float_np(rd)
        y = fwd(ctx.xp, cast(a, rd), cast(b, rd))
        if kind != "nograd":
            if y.dtype != rd:  # a NumPy scalar from a Python operand (log(3)) must not widen the result
                y = y.astype(rd)
            ctx.save_for_backward(a if _isarr(a) else None, b if _isarr(b) else None, y if save_y else None)
            ctx.sa, ctx.sb = (None if _isarr(a) else a), (None if _isarr(b) else b)
        else:
            ctx.mark_non_differentiable(y)
        return y

    def backward(ctx, g):
        a, b, y = ctx.saved_tensors
        return bwd(g, a if a is not None else ctx.sa, b if b is not None else ctx.sb, y)

    cls = type(name.capitalize(), (Function,), {"_raw": True, "op_name": name, "__module__": __name__,
                                                  "_nondiff": kind == "nograd", "forward": staticmethod(forward),
                                                  "backward": staticmethod(backward)})

    def public(input, other, *, out=None):
        if input.__class__ is not Tensor or other.__class__ is not Tensor:
            check_operands(name, _OPERANDS, (input, other), numbers)
        return _out(cls.apply(input, other), out)

    public.__name__ = public.__qualname__ = name
    public.__doc__ = doc
    return cls, public


_OPERANDS = ("input", "other")
_EITHER, _OTHER = ("input", "other"), ("other",)  # which operands may be a Python number (PyTorch's Scalar overloads)


def _nograd(g, a, b, y):
    return None, None


def _floor_div(a, b):
    return (a / b).floor() if isinstance(a, Tensor) or isinstance(b, Tensor) else math.floor(a / b)


def _remainder_fwd(xp, a, b):
    _check_int_divisor(b, a.dtype if _isarr(a) else b.dtype)
    return xp.remainder(a, b)


def _fmod_fwd(xp, a, b):
    _check_int_divisor(b, a.dtype if _isarr(a) else b.dtype)
    return xp.fmod(a, b)


Remainder, remainder = _binary(
    "remainder", _remainder_fwd, lambda g, a, b, y: (g, -g * _floor_div(a, b)), refuse="bc", numbers=_EITHER, doc=
    "Python's modulo: the result takes the divisor's sign.  >>> wb.remainder(wb.tensor([-3, 3]), 2)  ->  tensor([1, 1])")
Fmod, fmod = _binary(
    "fmod", _fmod_fwd, lambda g, a, b, y: (g, -g * (a / b).trunc()), refuse="bc", numbers=_OTHER, doc=
    "C's fmod: the result takes the dividend's sign.  >>> wb.fmod(wb.tensor([-3, 3]), 2)  ->  tensor([-1, 1])")
Atan2, atan2 = _binary(
    "atan2", lambda xp, a, b: xp.arctan2(a, b),
    lambda g, a, b, y: (g * b / (a * a + b * b), -g * a / (a * a + b * b)), "float", refuse="c", doc=
    "Angle of (other, input) in radians.  >>> wb.atan2(wb.tensor([1.]), wb.tensor([1.]))  ->  tensor([0.7854])")
Hypot, hypot = _binary(
    "hypot", lambda xp, a, b: xp.hypot(a, b), lambda g, a, b, y: (g * a / y, g * b / y), refuse="biuc", doc=
    "sqrt(input**2 + other**2).  >>> wb.hypot(wb.tensor([3.]), wb.tensor([4.]))  ->  tensor([5.])", save_y=True)
Copysign, copysign = _binary(
    "copysign", lambda xp, a, b: xp.copysign(a, b),
    lambda g, a, b, y: (where(a == 0, 0.0, g * (y / a)), g * 0 if isinstance(b, Tensor) else None), "float",
    refuse="c", numbers=_OTHER, doc=
    "|input| with the sign of other.  >>> wb.copysign(wb.tensor([3.]), -1.)  ->  tensor([-3.])", save_y=True)


def _xlogy_fwd(xp, x, y):
    r = x * xp.log(y)
    return xp.where((x == 0) & ~xp.isnan(y), 0, r).astype(r.dtype, copy=False)


def _xlogy_bwd(g, x, y, out):
    ly = y.log() if isinstance(y, Tensor) else math.log(y) if y > 0 else float("nan")
    gx = where((x == 0) & (y <= 0), 0.0, g * ly)
    return gx, g * x / y


Xlogy, xlogy = _binary("xlogy", _xlogy_fwd, _xlogy_bwd, "float", refuse="c", numbers=_EITHER, doc=
                       "input * log(other), 0 where input == 0.  >>> wb.xlogy(wb.tensor([0., 2.]), 1.)  ->  tensor([0., 0.])")


def _fmaxmin_bwd(pick):
    def bwd(g, a, b, y):
        # the gradient goes to whichever operand was chosen; ties to input (PyTorch's fmax/fmin)
        first = pick(a, b) | b.isnan() if isinstance(b, Tensor) else pick(a, b)
        return where(first, g, 0.0), where(first, 0.0, g)

    return bwd


Fmax, fmax = _binary("fmax", lambda xp, a, b: xp.fmax(a, b), _fmaxmin_bwd(lambda a, b: a >= b), refuse="c", doc=
                     "Elementwise max ignoring NaN.  >>> wb.fmax(wb.tensor([1., float('nan')]), wb.tensor([2., 0.]))  ->  tensor([2., 0.])")
Fmin, fmin = _binary("fmin", lambda xp, a, b: xp.fmin(a, b), _fmaxmin_bwd(lambda a, b: a <= b), refuse="c", doc=
                     "Elementwise min ignoring NaN.  >>> wb.fmin(wb.tensor([1., float('nan')]), wb.tensor([2., 0.]))  ->  tensor([1., 0.])")
Logaddexp, logaddexp = _binary(
    "logaddexp", lambda xp, a, b: xp.logaddexp(a, b),
    lambda g, a, b, y: (g * (a - y).exp(), g * (b - y).exp()), refuse="biuc", save_y=True, doc=
    "log(exp(input) + exp(other)) without overflow.  >>> wb.logaddexp(wb.tensor([1000.]), wb.tensor([1000.]))  ->  tensor([1000.6932])")
Logaddexp2, logaddexp2 = _binary(
    "logaddexp2", lambda xp, a, b: xp.logaddexp2(a, b),
    lambda g, a, b, y: (g * ((a - y) * _LN2).exp(), g * ((b - y) * _LN2).exp()), refuse="biuc", save_y=True, doc=
    "log2(2**input + 2**other) without overflow.  >>> wb.logaddexp2(wb.tensor([1.]), wb.tensor([1.]))  ->  tensor([2.])")
arctan2 = atan2


def _pick_grads(g, a, b, a_lost, b_lost):
    # PyTorch's rule: ties split the gradient, the loser gets none, and NaN (no order) passes it to both
    share = where(a == b, g / 2, g)
    return where(a_lost, 0.0, share), where(b_lost, 0.0, share)


def _arrays(xp, a, b, rd):
    # a Python number among the operands becomes a 0-d array, so it can be saved for backward
    return (a if _isarr(a) else xp.asarray(a, dtype=rd)), (b if _isarr(b) else xp.asarray(b, dtype=rd))


class Maximum(Function):
    _raw = True

    @staticmethod
    def forward(ctx, a, b):
        rd = result_dtype(a, b)
        if rd.kind == "c":
            raise RuntimeError("maximum not implemented for complex tensors.")
        a, b = _arrays(ctx.xp, cast(a, rd), cast(b, rd), rd)
        ctx.save_for_backward(a, b)
        return ctx.xp.maximum(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return _pick_grads(g, a, b, a < b, a > b)


class Minimum(Function):
    _raw = True

    @staticmethod
    def forward(ctx, a, b):
        rd = result_dtype(a, b)
        if rd.kind == "c":
            raise RuntimeError("minimum not implemented for complex tensors.")
        a, b = _arrays(ctx.xp, cast(a, rd), cast(b, rd), rd)
        ctx.save_for_backward(a, b)
        return ctx.xp.minimum(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return _pick_grads(g, a, b, a > b, a < b)


def maximum(input, other, *, out=None):
    """Elementwise max (NaN propagates).  >>> wb.maximum(wb.tensor([1., 4.]), wb.tensor([3., 2.]))  ->  tensor([3., 4.])"""
    if input.__class__ is not Tensor or other.__class__ is not Tensor:
        check_operands("maximum", _OPERANDS, (input, other))
    return _out(Maximum.apply(input, other), out)


def minimum(input, other, *, out=None):
    """Elementwise min (NaN propagates).  >>> wb.minimum(wb.tensor([1., 4.]), wb.tensor([3., 2.]))  ->  tensor([1., 2.])"""
    if input.__class__ is not Tensor or other.__class__ is not Tensor:
        check_operands("minimum", _OPERANDS, (input, other))
    return _out(Minimum.apply(input, other), out)


class Clamp(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, lo, hi):
        xp = ctx.xp
        rd = result_dtype(x, lo) if hi is None else result_dtype(x, hi) if lo is None else _dt.promote_types(
            _dt.from_numpy_dtype(result_dtype(x, lo)), _dt.from_numpy_dtype(result_dtype(x, hi))).np
        if rd.kind == "c":
            raise RuntimeError("clamp is not supported for complex types")
        if rd == bool and not (_isarr(lo) or _isarr(hi)):
            raise dtype_error("clamp_scalar_cpu", x.dtype)
        y = cast(x, rd)
        if lo is not None:
            y = xp.maximum(y, cast(lo, rd))
        if hi is not None:
            y = xp.minimum(y, cast(hi, rd))
        ctx.save_for_backward(x, lo if _isarr(lo) else None, hi if _isarr(hi) else None)
        ctx.lo, ctx.hi = lo, hi
        return y.astype(rd, copy=False)

    @staticmethod
    def backward(ctx, g):
        x, tlo, thi = ctx.saved_tensors
        if not STATE.enabled and tlo is None and thi is None:  # number bounds: one mask on the arrays
            xd, lo, hi = x._data, ctx.lo, ctx.hi
            keep = (xd >= lo) & (xd <= hi) if lo is not None and hi is not None else xd >= lo if lo is not None \
                else xd <= hi
            return Tensor._make(ctx.xp.where(keep, g._data, 0).astype(g._data.dtype, copy=False)), None, None
        lo = tlo if tlo is not None else ctx.lo
        hi = thi if thi is not None else ctx.hi
        # the boundary passes the gradient to input (PyTorch's clamp_backward)
        if lo is not None and hi is not None:
            keep = (x >= lo) & (x <= hi)
        else:
            keep = x >= lo if lo is not None else x <= hi
        gx = where(keep, g, 0.0) if ctx.needs_input_grad[0] else None
        glo = ghi = None
        if ctx.needs_input_grad[1]:
            glo = where((x < lo) & (lo < hi), g, 0.0) if hi is not None else where(x < lo, g, 0.0)
        if ctx.needs_input_grad[2]:
            ghi = where((x > hi) | (hi < lo), g, 0.0) if lo is not None else where(x > hi, g, 0.0)
        return gx, glo, ghi


def clamp(input, min=None, max=None, *, out=None):
    """Limit values to [min, max] (numbers or tensors).  >>> wb.clamp(wb.tensor([-1., 5.]), 0, 2)  ->  tensor([0., 2.])"""
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    r = Clamp.apply(input, min, max)
    return r if out is None else _out(r, out, _clamp_out_rule(min, max))


def _clamp_out_rule(min, max):
    # PyTorch's: with a tensor bound clamp is a TensorIterator op, whose result casts to out's dtype; with
    # numbers, out must have the result's dtype
    return "cast" if isinstance(min, Tensor) or isinstance(max, Tensor) else "same"


clip = clamp


def clamp_min(input, min, *, out=None):
    """max(input, min).  >>> wb.clamp_min(wb.tensor([-1., 5.]), 0)  ->  tensor([0., 5.])"""
    if not isinstance(input, Tensor):
        check_operands("clamp_min", ("input", "min"), (input, min), ("min",))
    r = Clamp.apply(input, min, None)
    return r if out is None else _out(r, out, _clamp_out_rule(min, None))


def clamp_max(input, max, *, out=None):
    """min(input, max).  >>> wb.clamp_max(wb.tensor([-1., 5.]), 0)  ->  tensor([-1., 0.])"""
    if not isinstance(input, Tensor):
        check_operands("clamp_max", ("input", "max"), (input, max), ("max",))
    r = Clamp.apply(input, None, max)
    return r if out is None else _out(r, out, _clamp_out_rule(None, max))


# --- comparisons and selection ---------------------------------------------------------------------
def _compare(name, ufunc):
    def forward(ctx, a, b):
        rd = result_dtype(a, b)
        if rd.kind == "c" and name not in ("eq", "ne"):
            raise RuntimeError(f"{name} is not supported for complex tensors; compare .real or .abs() instead")
        y = getattr(ctx.xp, ufunc)(cast(a, rd), cast(b, rd))
        ctx.mark_non_differentiable(y)
        return y

    cls = type(name.capitalize(), (Function,), {"_raw": True, "op_name": name, "__module__": __name__,
                                                  "_nondiff": True, "forward": staticmethod(forward),
                                                  "backward": staticmethod(lambda ctx, g: (None, None))})

    def public(input, other, *, out=None):
        if input.__class__ is not Tensor:
            check_operands(name, _OPERANDS, (input, other), _OTHER)
        return _out(cls.apply(input, other), out)

    public.__name__ = public.__qualname__ = name
    shown = {"eq": "[ True, False]", "ne": "[False, True]", "lt": "[False, False]", "le": "[ True, False]",
             "gt": "[False, True]", "ge": "[True, True]"}[name]
    public.__doc__ = (f"Elementwise {ufunc.replace('_', ' ')}, a bool tensor.  >>> wb.{name}(wb.tensor([1, 2]), 1)  "
                      f"->  tensor({shown})")
    return cls, public


Eq, eq = _compare("eq", "equal")
Ne, ne = _compare("ne", "not_equal")
Lt, lt = _compare("lt", "less")
Le, le = _compare("le", "less_equal")
Gt, gt = _compare("gt", "greater")
Ge, ge = _compare("ge", "greater_equal")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


class Where(Function):
    _raw = True

    @staticmethod
    def forward(ctx, cond, a, b):
        rd = result_dtype(a, b)
        if cond.dtype != bool:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                               f"{_dt.from_numpy_dtype(cond.dtype).name}; use condition.bool() or a comparison")
        ctx.save_for_backward(cond)
        r = ctx.xp.where(cond, cast(a, rd), cast(b, rd))
        return r.astype(rd, copy=False)

    @staticmethod
    def backward(ctx, g):
        (cond,) = ctx.saved_tensors
        if not STATE.enabled:
            xp, c, gd = ctx.xp, cond._data, g._data
            return (None, Tensor._make(xp.where(c, gd, 0).astype(gd.dtype, copy=False))
                    if ctx.needs_input_grad[1] else None,
                    Tensor._make(xp.where(c, 0, gd).astype(gd.dtype, copy=False)) if ctx.needs_input_grad[2] else None)
        return (None, where(cond, g, 0.0) if ctx.needs_input_grad[1] else None,
                where(cond, 0.0, g) if ctx.needs_input_grad[2] else None)


def where(condition, input=None, other=None, *, out=None):
    """input where condition else other.  >>> wb.where(wb.tensor([True, False]), 1., 0.)  ->  tensor([1., 0.])"""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        xp = _backend.xp_of(condition._data)
        with _backend.on_device(condition.device):
            input = Tensor._make(xp.asarray(input, dtype=result_dtype(input, other)))
    return _out(Where.apply(condition, input, other), out, "same")


def isnan(input):
    """True where input is NaN.  >>> wb.isnan(wb.tensor([1., float('nan')]))  ->  tensor([False,  True])"""
    return array_step(lambda d: _backend.xp_of(d).isnan(d), input)


def isinf(input):
    """True where input is ±inf.  >>> wb.isinf(wb.tensor([1., float('inf')]))  ->  tensor([False,  True])"""
    return array_step(lambda d: _backend.xp_of(d).isinf(d), input)


def isfinite(input):
    """True where input is neither inf nor NaN.  >>> wb.isfinite(wb.tensor([1., float('inf')]))  ->  tensor([ True, False])"""
    return array_step(lambda d: _backend.xp_of(d).isfinite(d), input)


def isposinf(input, *, out=None):
    """True where input is +inf.  >>> wb.isposinf(wb.tensor([-float('inf'), float('inf')]))  ->  tensor([False, True])"""
    return _out(array_step(lambda d: _backend.xp_of(d).isinf(d) & (d > 0), input), out, "same")  # bool out only


def isneginf(input, *, out=None):
    """True where input is -inf.  >>> wb.isneginf(wb.tensor([-float('inf'), float('inf')]))  ->  tensor([ True, False])"""
    return _out(array_step(lambda d: _backend.xp_of(d).isinf(d) & (d < 0), input), out, "same")


def isreal(input):
    """True where the imaginary part is 0 (everywhere for real dtypes).  >>> wb.isreal(wb.tensor([1 + 0j, 1j]))  ->  tensor([ True, False])"""
    d = input._data
    if d.dtype.kind == "c":
        return Tensor._make(d.imag == 0)
    with _backend.on_device(input.device):
        return Tensor._make(_backend.xp_of(d).ones(d.shape, dtype=bool))


def signbit(input, *, out=None):
    """True where the sign bit is set (including -0.0).  >>> wb.signbit(wb.tensor([-0.0, 1.0]))  ->  tensor([ True, False])"""
    return _out(array_step(lambda d: _backend.xp_of(d).signbit(d) if d.dtype.kind != "b" else d & False, input), out,
                "same")


def _check_same_dtype(op, a, b):
    if a.dtype != b.dtype:
        raise RuntimeError(f"{op}: {a.dtype._scalar_name} did not match {b.dtype._scalar_name} "
                           "(the two tensors must have the same dtype; convert one with .to(other.dtype))")


@broadcasting
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other|, elementwise.  >>> wb.isclose(wb.tensor([1.0]), wb.tensor([1.0 + 1e-9]))  ->  tensor([True])"""
    check_operands("isclose", _OPERANDS, (input, other))
    _check_same_dtype("isclose", input, other)
    a, b = input._data, _t(other)
    xp = _backend.xp_of(a)
    if a.dtype.kind in "biu" and (not _isarr(b) or b.dtype.kind in "biu"):
        close = a == b if rtol == 0 and atol == 0 else xp.abs(a.astype("float64") - b) <= atol + rtol * xp.abs(b)
    else:
        with _backend.numpy.errstate(invalid="ignore"):
            close = (a == b) | (xp.isfinite(a) & xp.isfinite(b) & (xp.abs(a - b) <= atol + rtol * xp.abs(b)))
    if equal_nan:
        close = close | (xp.isnan(a) & xp.isnan(b))
    return Tensor._make(xp.asarray(close))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether isclose holds everywhere.  >>> wb.allclose(wb.tensor([1.0]), wb.tensor([1.0 + 1e-9]))  ->  True"""
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


def equal(input, other):
    """True if both tensors have the same shape and values.  >>> wb.equal(wb.tensor([1, 2]), wb.tensor([1, 2]))  ->  True"""
    if input.shape != other.shape:
        return False
    if input.device != other.device:
        raise RuntimeError(f"equal: expected both tensors on the same device, got {input.device} and {other.device}")
    return bool((input._data == other._data).all())


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """Replace NaN, +inf and -inf (by default with 0 and the dtype's largest/smallest values).

    >>> import workbench as wb
    >>> wb.nan_to_num(wb.tensor([float('nan'), 1.0]))
    tensor([0., 1.])
    """
    return _out(NanToNum.apply(input, nan, posinf, neginf), out)


class NanToNum(Function):
    _raw = True
    op_name = "nan_to_num"

    @staticmethod
    def forward(ctx, x, nan, posinf, neginf):
        if x.dtype.kind in "biu":
            return x.copy()
        ctx.save_for_backward(x)
        return ctx.xp.nan_to_num(x, copy=True, nan=nan, posinf=posinf, neginf=neginf)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return where(isfinite(x), g, 0.0), None, None, None


# --- logic and bits --------------------------------------------------------------------------------
def _logical(name, ufunc):
    def fwd(xp, a, b):
        return getattr(xp, ufunc)(a, b)

    shown = {"logical_and": "[ True, False]", "logical_or": "[True, True]", "logical_xor": "[False, True]"}[name]
    cls, public = _binary(name, fwd, _nograd, "nograd",
                          f"Elementwise {name.replace('_', ' ')} of truth values, a bool tensor.  >>> "
                          f"wb.{name}(wb.tensor([True, False]), wb.tensor([True, True]))  ->  tensor({shown})")
    return cls, public


LogicalAnd, logical_and = _logical("logical_and", "logical_and")
LogicalOr, logical_or = _logical("logical_or", "logical_or")
LogicalXor, logical_xor = _logical("logical_xor", "logical_xor")


def logical_not(input, *, out=None):
    """not input, a bool tensor.  >>> wb.logical_not(wb.tensor([0, 1]))  ->  tensor([ True, False])"""
    return _out(array_step(lambda d: _backend.xp_of(d).logical_not(d), input), out)


def _bitwise(name, ufunc, kernel, refuse="fc"):
    def fwd(xp, a, b):
        return getattr(xp, ufunc)(a, b)

    shown = {"bitwise_and": 8, "bitwise_or": 14, "bitwise_xor": 6, "bitwise_left_shift": 12 << 10,
             "bitwise_right_shift": 0}[name]
    return _binary(name, fwd, _nograd, "nograd",
                   f"Elementwise {ufunc} of integer or bool tensors.  >>> wb.{name}(wb.tensor([12]), wb.tensor([10]))  "
                   f"->  tensor([{shown}])", kernel=kernel, refuse=refuse, numbers=_EITHER)


BitwiseAnd, bitwise_and = _bitwise("bitwise_and", "bitwise_and", "bitwise_and_cpu")
BitwiseOr, bitwise_or = _bitwise("bitwise_or", "bitwise_or", "bitwise_or_cpu")
BitwiseXor, bitwise_xor = _bitwise("bitwise_xor", "bitwise_xor", "bitwise_xor_cpu")
BitwiseLeftShift, bitwise_left_shift = _bitwise("bitwise_left_shift", "left_shift", "lshift_cpu", "bfc")
BitwiseRightShift, bitwise_right_shift = _bitwise("bitwise_right_shift", "right_shift", "rshift_cpu", "bfc")


def bitwise_not(input, *, out=None):
    """~input for integer and bool tensors.  >>> wb.bitwise_not(wb.tensor([0, 5]))  ->  tensor([-1, -6])"""
    d = input._data
    if d.dtype.kind not in "biu":
        raise dtype_error("bitwise_not_cpu", d.dtype)
    return _out(array_step(lambda a: _backend.xp_of(a).invert(a), input), out, "same")


def _invert(self):
    if self._data.dtype.kind not in "biu":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return bitwise_not(self)


def _r(fn):
    def reflected(self, other):
        return fn(other, self)

    reflected.__name__ = "__r" + fn.__name__ + "__"
    return reflected


def _python_op(fn):
    # Python falls back to the other operand's reflected method on NotImplemented (e.g. for lists)
    def op(self, other):
        if not isinstance(other, (Tensor, int, float, complex, bool)) and not hasattr(other, "dtype"):
            return NotImplemented
        return fn(self, other)

    op.__name__ = fn.__name__
    return op


def _inplace_op(name):
    def op(self, other):
        return getattr(self, name)(other)

    return op


__all__ = [
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "neg", "negative",
    "positive", "pow", "float_power", "square", "rsub", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
    "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "arcsin", "arccos", "arctan", "sinh",
    "cosh", "tanh", "asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg", "sigmoid",
    "floor", "ceil", "trunc", "fix", "frac", "round", "logit", "abs", "absolute", "sign", "sgn", "conj", "real", "imag",
    "relu", "remainder", "fmod", "atan2", "arctan2", "hypot", "copysign", "xlogy", "logaddexp", "logaddexp2", "fmax", "fmin", "maximum",
    "minimum", "clamp", "clip", "clamp_min", "clamp_max", "eq", "ne", "lt", "le", "gt", "ge", "greater",
    "greater_equal", "less", "less_equal", "not_equal", "where", "isnan", "isinf", "isfinite", "isposinf",
    "isneginf", "isreal", "signbit", "isclose", "allclose", "equal", "nan_to_num", "logical_and", "logical_or",
    "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
    "bitwise_right_shift",
]
subtract, multiply, divide = sub, mul, div
# the ufuncs x.add_(y), x.neg_()... run into x's array when nothing records (autograd.function.inplace_operator),
# and the dtype kinds they serve
add._wb_inplace, sub._wb_inplace = (Add._ufunc, "fc"), (Sub._ufunc, "fc")
mul._wb_inplace, div._wb_inplace, true_divide._wb_inplace = (Mul._ufunc, "fc"), (Div._ufunc, "fc"), (Div._ufunc, "fc")
neg._wb_inplace = (_backend.numpy.negative, "fc")


def _abs_inplace(name, general):
    # abs of a complex tensor is real: in place it is PyTorch's error, on every path (the profiler's included)
    def checked(self, *args, **kwargs):
        if self._data.dtype.kind == "c":
            raise RuntimeError("In-place abs is not supported for complex tensors.")
        return general(self, *args, **kwargs)

    checked.__doc__ = general.__doc__
    return inplace_operator(name, _backend.numpy.absolute, "f", checked)


abs._wb_inplace_method = _abs_inplace


def _fast_inplace(name, general, params, body):
    """An in-place method that, when nothing records and x is a floating NumPy array, runs ``body(a, **bound)``
    on x's array itself (``bound``: the Python-number arguments named ``params``); anything else goes to
    ``general``, the generic in-place op. ``body`` returns False where it does not serve (general then runs)."""
    def method(self, *args, **kwargs):
        a = self._data
        if len(args) <= len(params) and a.__class__ is _ndarray and a.dtype.kind == "f" \
                and not (self._rg and STATE.enabled):
            bound = dict(zip(params, args))
            for k, v in kwargs.items():
                if k not in params or k in bound:
                    return general(self, *args, **kwargs)
                bound[k] = v
            if all(v is None or v.__class__ is float or v.__class__ is int for v in bound.values()):
                self._check_inplace(name)
                try:
                    done = body(a, **bound) is not False
                except ValueError:  # a read-only (expanded) array: NumPy refuses before writing
                    done = False
                if done:
                    self._bump(name, 2)
                    return self
        return general(self, *args, **kwargs)

    return fast_inplace_method(method, name, general)


def _clamp_into(a, min=None, max=None):
    # Clamp's forward (maximum, then minimum) with x's array as the output: no temporary
    if min is None and max is None:
        return False  # the general path's error
    if min is not None:
        _backend.numpy.maximum(a, min, out=a)
    if max is not None:
        _backend.numpy.minimum(a, max, out=a)


def _relu_into(a):
    # Relu's loop (x < 0 ? 0 : x) reading and writing x's array; elsewhere the general path
    if not (_fused.usable(a, min_size=_RELU_LOOP_MIN) and a.flags.writeable):  # (an expanded view is not)
        return False
    flat = a.reshape(-1)
    _fused.relu(flat, flat)


clamp._wb_inplace_method = lambda name, general: _fast_inplace(name, general, ("min", "max"), _clamp_into)
clamp_min._wb_inplace_method = lambda name, general: _fast_inplace(name, general, ("min",), _clamp_into)
clamp_max._wb_inplace_method = lambda name, general: _fast_inplace(name, general, ("max",), _clamp_into)
relu._wb_inplace_method = lambda name, general: _fast_inplace(name, general, (), _relu_into)
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh

_NOT_METHODS = ("where", "rsub", "relu", "positive", "real", "imag")
METHODS = {
    **{n: globals()[n] for n in __all__ if n not in _NOT_METHODS},
    # the arithmetic operators take a fast path of their own when nothing records (autograd/function.py)
    "__add__": binary_operator(Add, add), "__radd__": binary_operator(Add, _r(add), reflected=True),
    "__sub__": binary_operator(Sub, sub), "__rsub__": binary_operator(Sub, rsub, reflected=True),
    "__mul__": binary_operator(Mul, mul), "__rmul__": binary_operator(Mul, _r(mul), reflected=True),
    "__truediv__": binary_operator(Div, div), "__rtruediv__": binary_operator(Div, _r(div), reflected=True),
    "__floordiv__": floor_divide, "__rfloordiv__": _r(floor_divide),
    "__mod__": remainder, "__rmod__": _r(remainder), "__pow__": pow, "__rpow__": _r(pow), "__neg__": neg,
    "__pos__": positive, "__abs__": abs, "__invert__": _invert,
    "__eq__": _python_op(eq), "__ne__": _python_op(ne), "__lt__": lt, "__le__": le, "__gt__": gt, "__ge__": ge,
    "__and__": bitwise_and, "__rand__": _r(bitwise_and), "__or__": bitwise_or, "__ror__": _r(bitwise_or),
    "__xor__": bitwise_xor, "__rxor__": _r(bitwise_xor), "__lshift__": bitwise_left_shift,
    "__rlshift__": _r(bitwise_left_shift), "__rshift__": bitwise_right_shift,
    "__rrshift__": _r(bitwise_right_shift),
    # augmented assignment is in-place, as in PyTorch
    "__iadd__": _inplace_op("add_"), "__isub__": _inplace_op("sub_"), "__imul__": _inplace_op("mul_"),
    "__itruediv__": _inplace_op("div_"), "__ipow__": _inplace_op("pow_"),
    "__ifloordiv__": _inplace_op("floor_divide_"), "__imod__": _inplace_op("remainder_"),
    "__iand__": _inplace_op("bitwise_and_"), "__ior__": _inplace_op("bitwise_or_"),
    "__ixor__": _inplace_op("bitwise_xor_"), "__ilshift__": _inplace_op("bitwise_left_shift_"),
    "__irshift__": _inplace_op("bitwise_right_shift_"),
    "where": lambda self, condition, other: where(condition, self, other),
    "relu": relu, "positive": positive, "real": property(real), "imag": property(imag),
    "float_power_": _float_power_,
    "resolve_conj": lambda self: self, "resolve_neg": lambda self: self, "conj_physical": conj,
}
INPLACE = (
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "remainder", "fmod",
    "pow", "square", "neg", "negative", "abs", "absolute", "sign", "sgn", "exp", "exp2", "expm1",
    "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan",
    "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh",
    "deg2rad", "rad2deg", "sigmoid", "floor", "ceil", "trunc", "fix", "frac", "round", "logit", "relu", "atan2",
    "arctan2", "hypot", "copysign", "xlogy", "clamp", "clip", "clamp_min", "clamp_max", "eq", "ne", "lt", "le", "gt",
    "ge", "greater", "greater_equal", "less", "less_equal", "not_equal", "nan_to_num", "logical_and", "logical_or",
    "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
    "bitwise_right_shift",
)
