"""Elementwise number functions of the long tail: gcd/lcm of integers, the Heaviside step, the angle of a
number, building complex tensors from parts (complex, polar), and floats by their parts (ldexp, frexp,
nextafter). Composites where a gradient exists, primitives where the float format is the point.

>>> import workbench as wb
>>> wb.gcd(wb.tensor([12, 18]), wb.tensor([8, 27]))
tensor([4, 9])
"""
import math

from .. import _backend
from .._backend import dtypes as _dt
from .._broadcast import broadcasting
from .._core import Tensor
from ..autograd.function import Function
from ..creation import zeros_like
from ._util import _out, _outs, cast, check_operands, dtype_error, float_np, no_derivative, result_dtype
from .reduce import return_type

_LN2 = math.log(2.0)
_np = _backend.numpy


def _integers(op, input, other):
    check_operands(op, ("input", "other"), (input, other))
    for t in (input, other):
        if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype is _dt.bool_:
            raise NotImplementedError(f'"{op}_cpu" not implemented for \'{t.dtype}\': {op} takes integer tensors; '
                                      "convert them first, e.g. x.long()")
    dt = _dt.promote_types(input.dtype, other.dtype)
    return input._data.astype(dt.np, copy=False), other._data.astype(dt.np, copy=False)


@broadcasting
def gcd(input, other, *, out=None):
    """Elementwise greatest common divisor of integer tensors (gcd(0, 0) = 0).  >>> wb.gcd(wb.tensor([4]), wb.tensor([6]))  ->  tensor([2])"""
    a, b = _integers("gcd", input, other)
    return _out(Tensor._make(_backend.xp_of(a).gcd(a, b)), out)


@broadcasting
def lcm(input, other, *, out=None):
    """Elementwise least common multiple of integer tensors.  >>> wb.lcm(wb.tensor([4]), wb.tensor([6]))  ->  tensor([12])"""
    a, b = _integers("lcm", input, other)
    return _out(Tensor._make(_backend.xp_of(a).lcm(a, b)), out)


@broadcasting
def heaviside(input, values, *, out=None):
    """The step function: 0 where input < 0, 1 where input > 0, ``values`` where input == 0 (no gradient).

    >>> import workbench as wb
    >>> wb.heaviside(wb.tensor([-1.5, 0.0, 2.0]), wb.tensor([0.5]))
    tensor([0.0000, 0.5000, 1.0000])
    """
    check_operands("heaviside", ("input", "values"), (input, values))
    if input.dtype is not values.dtype:
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different dtypes ({input.dtype} and "
                           f"{values.dtype}); convert values with values.to(input.dtype)")
    xp = _backend.xp_of(input._data)
    y = Tensor._make(xp.heaviside(input._data, values._data).astype(input._data.dtype, copy=False))
    return _out(no_derivative("heaviside", y, input, values), out, "same")


def angle(input, *, out=None):
    """The angle (argument) of each element: atan2(imag, real) for complex, pi for negative reals, 0 else
    (NaN stays NaN); integers give the default float dtype.

    >>> import workbench as wb
    >>> wb.angle(wb.tensor([-2.0, 3.0]))
    tensor([3.1416, 0.0000])
    """
    if input.dtype.is_complex:
        r = input.imag.atan2(input.real)
    else:
        x = input if input.dtype.is_floating_point else input.to(_dt.get_default_dtype())
        r = (x < 0).to(x.dtype) * math.pi + x * 0  # x * 0 carries NaN through, and a zero gradient
    return _out(r, out)


def _parts(op, a, b, first, second):
    check_operands(op, (first, second), (a, b))
    if a.dtype not in (_dt.float16, _dt.float32, _dt.float64) or b.dtype not in (_dt.float16, _dt.float32, _dt.float64):
        raise RuntimeError(f"{op}(): expected both inputs to be Half, Float or Double tensors but got {a.dtype} and "
                           f"{b.dtype}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{op}(): expected {second} to have {first}'s dtype {a.dtype} but got {b.dtype}; convert "
                           f"one with .to()")


def complex(real, imag, *, out=None):
    """A complex tensor real + i*imag from two float tensors of one dtype (differentiable in both).

    >>> import workbench as wb
    >>> wb.complex(wb.tensor([1.0]), wb.tensor([2.0]))
    tensor([1.+2.j])
    """
    _parts("complex", real, imag, "real", "imag")
    return _out(real + imag * 1j, out)


def polar(abs, angle, *, out=None):
    """The complex tensor abs * (cos(angle) + i sin(angle)).

    >>> import workbench as wb
    >>> wb.polar(wb.tensor([2.0]), wb.tensor([0.0]))
    tensor([2.+0.j])
    """
    _parts("polar", abs, angle, "abs", "angle")
    return _out(abs * angle.cos() + (abs * angle.sin()) * 1j, out)


class Ldexp(Function):
    """input * 2**other in their promoted dtype (integers: the default float), as PyTorch's: an integer
    exponent scales exactly (rounded once, to a subnormal or to inf where the result leaves the range), a
    float one is 2**other in other's dtype, then the product."""

    _raw = True
    op_name = "ldexp"

    @staticmethod
    def forward(ctx, a, b):
        rd = float_np(result_dtype(a, b))
        x, xp = cast(a, rd), ctx.xp
        if b.dtype.kind not in "biu":
            y = x * cast(xp.exp2(b), rd)
        elif rd.kind == "c":
            y = x * xp.ldexp(xp.ones((), x.real.dtype), b.astype(_np.int64))
        else:
            y = xp.ldexp(x, b.astype(_np.int64, copy=False)).astype(rd, copy=False)
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b)
        return y

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = ldexp(g, b)  # g * 2**other
        if a is None:
            return ga, None
        gb = ga * (a.conj() if a.is_complex() else a) * _LN2
        return ga, (gb.real if gb.is_complex() and not b.is_complex() else gb)


def ldexp(input, other, *, out=None):
    """input * 2**other: floats from mantissas and (typically integer) exponents; integer inputs give the
    default float dtype.  >>> wb.ldexp(wb.tensor([1., 3.]), wb.tensor([2, -1]))  ->  tensor([4.0000, 1.5000])"""
    check_operands("ldexp", ("input", "other"), (input, other))
    return _out(Ldexp.apply(input, other), out)


class Nextafter(Function):
    """The next float after input towards other, in their promoted dtype; the gradient is g for input and
    0 for other (a step of one unit in the last place moves with input), as PyTorch's."""

    _raw = True
    op_name = "nextafter"

    @staticmethod
    def forward(ctx, a, b):
        rd = result_dtype(a, b)
        if rd.kind in "biuc":
            raise dtype_error("nextafter_cpu", rd)
        return ctx.xp.nextafter(cast(a, rd), cast(b, rd))

    @staticmethod
    def backward(ctx, g):
        return g, (zeros_like(g) if ctx.needs_input_grad[1] else None)


def nextafter(input, other, *, out=None):
    """The next representable float after input towards other, elementwise (other itself where they are
    equal, NaN where either is NaN).  >>> wb.nextafter(wb.tensor([1.]), wb.tensor([2.])) - 1  ->  tensor([1.1921e-07])"""
    check_operands("nextafter", ("input", "other"), (input, other))
    return _out(Nextafter.apply(input, other), out)


class Frexp(Function):
    """(mantissa, exponent) with input = mantissa * 2**exponent, |mantissa| in [0.5, 1) (0, inf and NaN
    kept, with exponent 0); exponent is int32 and has no gradient, mantissa's is g / 2**exponent."""

    _raw = True
    op_name = "frexp"

    @staticmethod
    def forward(ctx, x):
        m, e = ctx.xp.frexp(x)
        e = e.astype(_np.int32, copy=False)
        ctx.save_for_backward(e)
        ctx.mark_non_differentiable(e)
        return m.astype(x.dtype, copy=False), e

    @staticmethod
    def backward(ctx, gm, ge):
        (e,) = ctx.saved_tensors
        return ldexp(gm, -e)


def frexp(input, *, out=None):
    """Split floats into mantissa and exponent, input = mantissa * 2**exponent (exponent: int32).

    >>> import workbench as wb
    >>> wb.frexp(wb.tensor([8.0, -3.0]))
    workbench.return_types.frexp(
    mantissa=tensor([ 0.5000, -0.7500]),
    exponent=tensor([4, 2], dtype=workbench.int32))
    """
    check_operands("frexp", ("input",), (input,))
    if not (input.dtype.is_floating_point):
        raise RuntimeError(f"torch.frexp() only supports floating-point dtypes, got {input.dtype}")
    if out is not None:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError("frexp(): out= must be a tuple of two tensors (mantissa, exponent)")
        if out[0].dtype is not input.dtype:
            raise RuntimeError(f"torch.frexp() expects mantissa to have dtype {input.dtype} but got {out[0].dtype}")
        if out[1].dtype is not _dt.int32:
            raise RuntimeError(f"torch.frexp() expects exponent to have int dtype but got {out[1].dtype}")
    return _outs(return_type("frexp", ("mantissa", "exponent"))(*Frexp.apply(input)), out)


__all__ = ["gcd", "lcm", "heaviside", "angle", "complex", "polar", "ldexp", "nextafter", "frexp"]
METHODS = {n: globals()[n] for n in ("gcd", "lcm", "heaviside", "angle", "ldexp", "nextafter", "frexp")}
INPLACE = ("gcd", "lcm", "heaviside", "ldexp", "nextafter")
