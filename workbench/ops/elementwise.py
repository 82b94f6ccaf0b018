"""Elementwise ops: arithmetic, the math functions, comparisons and logic.

Each primitive is a Function with ``forward`` on raw arrays and ``backward`` in Tensor ops. Binary
ops promote operands with PyTorch's rules (``_util.result_dtype``) and leave broadcasting's
gradient reduction to the engine, which sums each gradient to its input's shape.
"""
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import cast, result_dtype, to_float


def _t(x):
    return x._data if type(x) is Tensor or isinstance(x, Tensor) else x


# --- arithmetic ----------------------------------------------------------------------------------
class Add(Function):
    _raw = True

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        rd = result_dtype(a, b)
        a, b = cast(a, rd), cast(b, rd)
        if alpha != 1:
            b = b * alpha
        ctx.alpha = alpha
        return ctx.xp.add(a, b)

    @staticmethod
    def backward(ctx, g):
        return g, (g if ctx.alpha == 1 else g * ctx.alpha), None


def add(input, other, *, alpha=1, out=None):
    """input + alpha * other, broadcast.  >>> wb.add(wb.tensor([1, 2]), 1)  ->  tensor([2, 3])"""
    if not isinstance(input, Tensor):
        input, other = other, input
        if alpha != 1:
            raise TypeError("add(scalar, tensor, alpha=) is not supported; put the tensor first")
    return _out(Add.apply(input, other, alpha) if alpha != 1 else Add.apply(input, other), out)


class Sub(Function):
    _raw = True

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        rd = result_dtype(a, b)
        if rd == bool:
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                               "Use the `^` or `logical_xor()` operator instead.")
        a, b = cast(a, rd), cast(b, rd)
        ctx.alpha = alpha
        return ctx.xp.subtract(a, b * alpha if alpha != 1 else b)

    @staticmethod
    def backward(ctx, g):
        return g, (-g if ctx.alpha == 1 else g * (-ctx.alpha)), None


def sub(input, other, *, alpha=1, out=None):
    """input - alpha * other.  >>> wb.sub(wb.tensor([3., 4.]), 1)  ->  tensor([2., 3.])"""
    return _out(Sub.apply(input, other, alpha) if alpha != 1 else Sub.apply(input, other), out)


def rsub(input, other, alpha=1):
    return Sub.apply(other, input, alpha) if isinstance(other, Tensor) else Sub.apply(
        Tensor._make(_scalar_array(input, other)), input, alpha)


def _scalar_array(like, s):
    from .. import _backend

    xp = _backend.xp_of(like._data)
    return xp.asarray(s, dtype=result_dtype(like._data, s))


class Mul(Function):
    _raw = True

    @staticmethod
    def forward(ctx, a, b):
        rd = result_dtype(a, b)
        a, b = cast(a, rd), cast(b, rd)
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None)
        return ctx.xp.multiply(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return (g * b if b is not None else None), (g * a if a is not None else None)


class MulScalar(Function):
    _raw = True
    op_name = "mul"

    @staticmethod
    def forward(ctx, a, s):
        rd = result_dtype(a, s)
        ctx.s = s
        return ctx.xp.multiply(cast(a, rd), cast(s, rd))

    @staticmethod
    def backward(ctx, g):
        return g * ctx.s, None


def mul(input, other, *, out=None):
    """input * other, broadcast.  >>> wb.mul(wb.tensor([1., 2.]), 3)  ->  tensor([3., 6.])"""
    if not isinstance(input, Tensor):
        input, other = other, input
    if isinstance(other, Tensor):
        return _out(Mul.apply(input, other), out)
    return _out(MulScalar.apply(input, other), out)


class Div(Function):
    _raw = True

    @staticmethod
    def forward(ctx, a, b, rounding_mode=None):
        rd = result_dtype(a, b)
        ctx.rounding_mode = rounding_mode
        xp = ctx.xp
        if rounding_mode is None:
            rd = _true_div_dtype(rd)
            a, b = cast(a, rd), cast(b, rd)
            ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b)
            r = xp.true_divide(a, b)
        else:
            a, b = cast(a, rd), cast(b, rd)
            if rounding_mode == "trunc":
                r = xp.trunc(xp.true_divide(a, b)) if rd.kind in "fc" else _int_trunc_div(xp, a, b)
            elif rounding_mode == "floor":
                r = xp.floor_divide(a, b)
            else:
                raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                                 f"'{rounding_mode}'")
            r = xp.asarray(r).astype(rd, copy=False)
        return r if hasattr(r, "shape") else xp.asarray(r, rd)

    @staticmethod
    def backward(ctx, g):
        if ctx.rounding_mode is not None:
            return g * 0, (g * 0 if ctx.needs_input_grad[1] else None), None
        a, b = ctx.saved_tensors
        ga = g / b
        gb = -ga * a / b if a is not None else None
        return ga, gb, None


def _int_trunc_div(xp, a, b):
    q = xp.floor_divide(a, b)
    return q + ((q < 0) & (q * b != a))


def _true_div_dtype(rd):
    from .._backend import dtypes as _dt

    return rd if rd.kind in "fc" or rd.name == "bfloat16" else _dt.get_default_dtype().np


def div(input, other, *, rounding_mode=None, out=None):
    """input / other (true division unless rounding_mode is 'trunc' or 'floor').

    >>> import workbench as wb
    >>> wb.div(wb.tensor([1, 2]), 2)
    tensor([0.5000, 1.0000])
    """
    if not isinstance(input, Tensor):
        input = Tensor._make(_scalar_array(other, input))
    return _out(Div.apply(input, other, rounding_mode) if rounding_mode else Div.apply(input, other), out)


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


def neg(input):
    """-input.  >>> wb.neg(wb.tensor([1., -2.]))  ->  tensor([-1., 2.])"""
    return Neg.apply(input)


class Pow(Function):
    _raw = True

    @staticmethod
    def forward(ctx, a, b):
        rd = result_dtype(a, b)
        a, b = cast(a, rd), cast(b, rd)
        xp = ctx.xp
        if rd.kind in "iu" and bool((b < 0).any() if hasattr(b, "shape") else b < 0):
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        r = xp.power(a, b)
        ctx.save_for_backward(a, b if hasattr(b, "shape") else None, r if ctx.needs_input_grad[1] else None)
        ctx.scalar = None if hasattr(b, "shape") else b
        return r

    @staticmethod
    def backward(ctx, g):
        a, b, r = ctx.saved_tensors
        if b is None:
            e = ctx.scalar
            if e == 0:
                return g * 0, None
            ga = g * e * a ** (e - 1) if e != 2 else g * 2 * a
            return ga, None
        ga = g * b * a ** (b - 1) if ctx.needs_input_grad[0] else None
        gb = None
        if ctx.needs_input_grad[1]:
            from .. import where

            # d(a**b)/db = a**b * log(a), taken as 0 where a <= 0 (PyTorch's convention at a == 0)
            gb = g * r * where(a > 0, a, 1).log() if not a.is_complex() else g * r * a.log()
        return ga, gb


class RPowScalar(Function):
    _raw = True
    op_name = "pow"

    @staticmethod
    def forward(ctx, s, x):
        rd = result_dtype(x, s)
        r = ctx.xp.power(cast(s, rd), cast(x, rd))
        ctx.s = s
        ctx.save_for_backward(r)
        return r

    @staticmethod
    def backward(ctx, g):
        import math

        (r,) = ctx.saved_tensors
        return None, g * r * math.log(ctx.s) if ctx.s > 0 else g * 0


def pow(input, exponent, *, out=None):
    """input ** exponent.  >>> wb.pow(wb.tensor([2., 3.]), 2)  ->  tensor([4., 9.])"""
    if not isinstance(input, Tensor):
        return _out(RPowScalar.apply(input, exponent), out)
    return _out(Pow.apply(input, exponent), out)


def _out(r, out):
    if out is None:
        return r
    if out._rg and out.grad_fn is None:
        from ..autograd.grad_mode import STATE

        if STATE.enabled:
            raise RuntimeError(f"{out.__class__.__name__}(): functions with out=... arguments don't support "
                               "automatic differentiation, but one of the arguments requires grad.")
    out.resize_as_(r) if out._data.shape != r._data.shape else None
    out.copy_(r.detach())
    return out


# --- unary math ----------------------------------------------------------------------------------
def _unary(name, fwd, bwd, saves="y", doc=""):
    """Build a unary primitive: fwd(xp, x) -> y, bwd(g, x, y) -> grad, saving x or y as needed."""

    def forward(ctx, x):
        x = to_float(x)
        y = fwd(ctx.xp, x)
        if saves == "x":
            ctx.save_for_backward(x)
        elif saves == "y":
            ctx.save_for_backward(y)
        elif saves == "xy":
            ctx.save_for_backward(x, y)
        return y

    def backward(ctx, g):
        s = ctx.saved_tensors
        if saves == "x":
            return bwd(g, s[0], None)
        if saves == "y":
            return bwd(g, None, s[0])
        if saves == "xy":
            return bwd(g, s[0], s[1])
        return bwd(g, None, None)

    cls = type(name.capitalize(), (Function,), {"_raw": True, "op_name": name, "__module__": __name__,
                                                  "forward": staticmethod(forward),
                                                  "backward": staticmethod(backward)})

    def public(input, *, out=None):
        return _out(cls.apply(input), out)

    public.__name__ = public.__qualname__ = name
    public.__doc__ = doc
    return cls, public


Exp, exp = _unary("exp", lambda xp, x: xp.exp(x), lambda g, x, y: g * y, "y",
                  "e**input.  >>> wb.exp(wb.tensor([0.0, 1.0]))  ->  tensor([1.0000, 2.7183])")
Log, log = _unary("log", lambda xp, x: xp.log(x), lambda g, x, y: g / x, "x",
                  "Natural log.  >>> wb.log(wb.tensor([1.0]))  ->  tensor([0.])")
Sqrt, sqrt = _unary("sqrt", lambda xp, x: xp.sqrt(x), lambda g, x, y: g / (2 * y), "y",
                    "Square root.  >>> wb.sqrt(wb.tensor([4.0]))  ->  tensor([2.])")
Tanh, tanh = _unary("tanh", lambda xp, x: xp.tanh(x), lambda g, x, y: g * (1 - y * y), "y",
                    "Hyperbolic tangent.  >>> wb.tanh(wb.tensor([0.0]))  ->  tensor([0.])")
Sin, sin = _unary("sin", lambda xp, x: xp.sin(x), lambda g, x, y: g * x.cos(), "x",
                  "Sine.  >>> wb.sin(wb.tensor([0.0]))  ->  tensor([0.])")
Cos, cos = _unary("cos", lambda xp, x: xp.cos(x), lambda g, x, y: -g * x.sin(), "x",
                  "Cosine.  >>> wb.cos(wb.tensor([0.0]))  ->  tensor([1.])")


def _sigmoid_fwd(xp, x):
    # split by sign so neither branch overflows
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


Sigmoid, sigmoid = _unary("sigmoid", _sigmoid_fwd, lambda g, x, y: g * y * (1 - y), "y",
                          "1 / (1 + e**-input).  >>> wb.sigmoid(wb.tensor([0.0]))  ->  tensor([0.5000])")


class Abs(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ctx.xp.abs(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.sign()


def abs(input, *, out=None):
    """|input|.  >>> wb.abs(wb.tensor([-1., 2.]))  ->  tensor([1., 2.])"""
    return _out(Abs.apply(input), out)


class Sign(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return ctx.xp.sign(x)

    @staticmethod
    def backward(ctx, g):
        return g * 0


def sign(input, *, out=None):
    """-1, 0 or 1 by sign.  >>> wb.sign(wb.tensor([-2., 0., 3.]))  ->  tensor([-1., 0., 1.])"""
    return _out(Sign.apply(input), out)


class Relu(Function):
    _raw = True
    op_name = "relu"

    @staticmethod
    def forward(ctx, x):
        y = ctx.xp.maximum(x, 0).astype(x.dtype, copy=False)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (y > 0)


def relu(input):
    """max(input, 0).  >>> wb.relu(wb.tensor([-1., 2.]))  ->  tensor([0., 2.])"""
    return Relu.apply(input)


# --- comparisons and selection ---------------------------------------------------------------------
def _compare(name, ufunc):
    class Cmp(Function):
        _raw = True
        op_name = name

        @staticmethod
        def forward(ctx, a, b):
            rd = result_dtype(a, b)
            return getattr(ctx.xp, ufunc)(cast(a, rd), cast(b, rd))

        @staticmethod
        def backward(ctx, g):
            return None, None

    Cmp.__name__ = Cmp.__qualname__ = name.capitalize()
    Cmp._node_cls.__name__ = name.capitalize() + "Backward0"

    def public(input, other, *, out=None):
        if not isinstance(input, Tensor):
            input = Tensor._make(_scalar_array(other, input))
        return _out(Cmp.apply(input, other), out)

    public.__name__ = public.__qualname__ = name
    public.__doc__ = f"Elementwise {ufunc} comparison, a bool tensor.  >>> wb.{name}(wb.tensor([1, 2]), 1)"
    return Cmp, public


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
                               f"{cond.dtype}")
        ctx.save_for_backward(cond)
        r = ctx.xp.where(cond, cast(a, rd), cast(b, rd))
        return r.astype(rd, copy=False)

    @staticmethod
    def backward(ctx, g):
        (cond,) = ctx.saved_tensors
        z = g * 0
        return None, where(cond, g, z), where(cond, z, g)


def where(condition, input=None, other=None, *, out=None):
    """input where condition else other.  >>> wb.where(wb.tensor([True, False]), 1., 0.)  ->  tensor([1., 0.])"""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        input = Tensor._make(_scalar_array(condition, input).astype(result_dtype(input, other)))
    return _out(Where.apply(condition, input, other), out)


class Maximum(Function):
    _raw = True

    @staticmethod
    def forward(ctx, a, b):
        rd = result_dtype(a, b)
        a, b = cast(a, rd), cast(b, rd)
        ctx.save_for_backward(a, b)
        return ctx.xp.maximum(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        # ties split the gradient evenly, as PyTorch does
        w = (a > b) + (a == b) * 0.5
        return g * w, g * (1 - w)


class Minimum(Function):
    _raw = True

    @staticmethod
    def forward(ctx, a, b):
        rd = result_dtype(a, b)
        a, b = cast(a, rd), cast(b, rd)
        ctx.save_for_backward(a, b)
        return ctx.xp.minimum(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        w = (a < b) + (a == b) * 0.5
        return g * w, g * (1 - w)


def maximum(input, other, *, out=None):
    """Elementwise max (NaN propagates).  >>> wb.maximum(wb.tensor([1., 4.]), wb.tensor([3., 2.]))"""
    return _out(Maximum.apply(input, other), out)


def minimum(input, other, *, out=None):
    """Elementwise min (NaN propagates).  >>> wb.minimum(wb.tensor([1., 4.]), wb.tensor([3., 2.]))"""
    return _out(Minimum.apply(input, other), out)


class Clamp(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, lo, hi):
        xp = ctx.xp
        lo_ = lo if lo is None or not hasattr(lo, "shape") else lo
        y = x
        if lo_ is not None:
            y = xp.maximum(y, cast(lo_, x.dtype) if hasattr(lo_, "shape") else lo_)
        if hi is not None:
            y = xp.minimum(y, cast(hi, x.dtype) if hasattr(hi, "shape") else hi)
        y = y.astype(result_dtype(x, lo if lo is not None else hi), copy=False)
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        return y

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        m = g * 0 + 1
        if ctx.lo is not None:
            m = m * (x >= (ctx.lo if not hasattr(ctx.lo, "shape") else Tensor._make(ctx.lo)))
        if ctx.hi is not None:
            m = m * (x <= (ctx.hi if not hasattr(ctx.hi, "shape") else Tensor._make(ctx.hi)))
        return g * m, None, None


def clamp(input, min=None, max=None, *, out=None):
    """Limit values to [min, max].  >>> wb.clamp(wb.tensor([-1., 5.]), 0, 2)  ->  tensor([0., 2.])"""
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    return _out(Clamp.apply(input, _t(min), _t(max)), out)


clip = clamp


def _r(fn):
    def reflected(self, other):
        return fn(other, self)

    return reflected


__all__ = ["add", "sub", "mul", "div", "neg", "pow", "exp", "log", "sqrt", "tanh", "sin", "cos", "sigmoid", "abs",
           "sign", "relu", "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal",
           "not_equal", "where", "maximum", "minimum", "clamp", "clip", "rsub"]
METHODS = {
    "__add__": add, "__radd__": add, "__sub__": sub, "__rsub__": rsub, "__mul__": mul, "__rmul__": mul,
    "__truediv__": div, "__rtruediv__": _r(div), "__pow__": pow, "__rpow__": _r(pow), "__neg__": neg,
    "__abs__": abs, "__eq__": eq, "__ne__": ne, "__lt__": lt, "__le__": le, "__gt__": gt, "__ge__": ge,
    **{n: globals()[n] for n in __all__ if n not in ("where", "rsub")},
    "where": lambda self, condition, other: where(condition, self, other),
}
INPLACE = ("add", "sub", "mul", "div", "pow", "neg", "abs", "sign", "exp", "log", "sqrt", "tanh", "sigmoid", "sin",
           "cos", "relu", "clamp", "clip")
