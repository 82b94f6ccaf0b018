"""Elementwise number functions of the long tail: gcd/lcm of integers, the Heaviside step, the angle of a
number, and building complex tensors from parts (complex, polar). Composites where a gradient exists.

>>> import workbench as wb
>>> wb.gcd(wb.tensor([12, 18]), wb.tensor([8, 27]))
tensor([4, 9])
"""
import math

from .. import _backend
from .._backend import dtypes as _dt
from .._core import Tensor
from ._util import _out, no_derivative


def _integers(op, input, other):
    for t in (input, other):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument 'other' must be Tensor, not {type(t).__name__}")
        if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype is _dt.bool_:
            raise NotImplementedError(f'"{op}_cpu" not implemented for \'{t.dtype}\': {op} takes integer tensors; '
                                      "convert them first, e.g. x.long()")
    dt = _dt.promote_types(input.dtype, other.dtype)
    return input._data.astype(dt.np, copy=False), other._data.astype(dt.np, copy=False)


def gcd(input, other, *, out=None):
    """Elementwise greatest common divisor of integer tensors (gcd(0, 0) = 0).  >>> wb.gcd(wb.tensor([4]), wb.tensor([6]))  ->  tensor([2])"""
    a, b = _integers("gcd", input, other)
    return _out(Tensor._make(_backend.xp_of(a).gcd(a, b)), out)


def lcm(input, other, *, out=None):
    """Elementwise least common multiple of integer tensors.  >>> wb.lcm(wb.tensor([4]), wb.tensor([6]))  ->  tensor([12])"""
    a, b = _integers("lcm", input, other)
    return _out(Tensor._make(_backend.xp_of(a).lcm(a, b)), out)


def heaviside(input, values, *, out=None):
    """The step function: 0 where input < 0, 1 where input > 0, ``values`` where input == 0 (no gradient).

    >>> import workbench as wb
    >>> wb.heaviside(wb.tensor([-1.5, 0.0, 2.0]), wb.tensor([0.5]))
    tensor([0.0000, 0.5000, 1.0000])
    """
    if input.dtype is not values.dtype:
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different dtypes ({input.dtype} and "
                           f"{values.dtype}); convert values with values.to(input.dtype)")
    xp = _backend.xp_of(input._data)
    y = Tensor._make(xp.heaviside(input._data, values._data).astype(input._data.dtype, copy=False))
    return _out(no_derivative("heaviside", y, input, values), out)


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


__all__ = ["gcd", "lcm", "heaviside", "angle", "complex", "polar"]
METHODS = {n: globals()[n] for n in ("gcd", "lcm", "heaviside", "angle")}
INPLACE = ("gcd", "lcm", "heaviside")
