"""The op library. Importing it binds the operators and methods of Tensor.

Each family module defines its primitives (Function subclasses) and public functions; ``METHODS``
below lists which public functions are also Tensor methods. A family added later registers its
methods by extending ``bind``'s tables.
"""
from ..tensor import Tensor
from . import convert, elementwise, linalg_core, reduce, shape
from .convert import clone, contiguous, copy_, cpu, cuda, fill_, to, zero_
from .elementwise import (abs, add, clamp, clip, cos, div, eq, exp, ge, gt, le, log, lt, maximum, minimum,
                          mul, ne, neg, pow, relu, rsub, sigmoid, sign, sin, sqrt, sub, tanh, where)
from .linalg_core import matmul
from .reduce import mean, sum
from .shape import (broadcast_to, expand, expand_as, getitem, index_put, permute, reshape, setitem, squeeze,
                    sum_to_size, t, transpose, unsqueeze, view)


def _r(fn):
    def reflected(self, other):
        return fn(other, self)

    return reflected


def _inplace_method(name, fn):
    def method(self, *args, **kwargs):
        return self._inplace(name, lambda x, *a: fn(x, *a, **kwargs), *args)

    method.__name__ = name
    return method


def bind(methods, inplace=()):
    """Attach public functions as Tensor methods (and ``name_`` in-place variants)."""
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
    for name in inplace:
        setattr(Tensor, name + "_", _inplace_method(name + "_", methods.get(name) or globals()[name]))


bind({
    "__add__": add, "__radd__": add, "__sub__": sub, "__rsub__": rsub, "__mul__": mul, "__rmul__": mul,
    "__truediv__": div, "__rtruediv__": _r(div), "__pow__": pow, "__rpow__": _r(pow), "__neg__": neg,
    "__abs__": abs, "__matmul__": matmul, "__rmatmul__": _r(matmul),
    "__eq__": eq, "__ne__": ne, "__lt__": lt, "__le__": le, "__gt__": gt, "__ge__": ge,
    "__getitem__": getitem, "__setitem__": setitem,
    "add": add, "sub": sub, "mul": mul, "div": div, "neg": neg, "pow": pow, "abs": abs, "sign": sign,
    "exp": exp, "log": log, "sqrt": sqrt, "tanh": tanh, "sigmoid": sigmoid, "sin": sin, "cos": cos,
    "relu": relu, "clamp": clamp, "clip": clip, "maximum": maximum, "minimum": minimum,
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge,
    "sum": sum, "mean": mean, "matmul": matmul,
    "reshape": reshape, "view": view, "transpose": transpose, "permute": permute, "expand": expand,
    "expand_as": expand_as, "sum_to_size": sum_to_size, "squeeze": squeeze, "unsqueeze": unsqueeze, "t": t,
    "to": to, "cpu": cpu, "cuda": cuda, "clone": clone, "contiguous": contiguous, "copy_": copy_,
    "fill_": fill_, "zero_": zero_, "type": convert.type_, "index_put": index_put,
    "float": convert._caster(convert._dt.float32), "double": convert._caster(convert._dt.float64),
    "half": convert._caster(convert._dt.float16), "bfloat16": convert._caster(convert._dt.bfloat16),
    "int": convert._caster(convert._dt.int32), "long": convert._caster(convert._dt.int64),
    "short": convert._caster(convert._dt.int16), "char": convert._caster(convert._dt.int8),
    "byte": convert._caster(convert._dt.uint8), "bool": convert._caster(convert._dt.bool_),
    "cfloat": convert._caster(convert._dt.complex64), "cdouble": convert._caster(convert._dt.complex128),
}, inplace=("add", "sub", "mul", "div", "pow", "neg", "abs", "sign", "exp", "log", "sqrt", "tanh", "sigmoid",
            "sin", "cos", "relu", "clamp", "clip"))
Tensor.__iadd__ = Tensor.add_
Tensor.__isub__ = Tensor.sub_
Tensor.__imul__ = Tensor.mul_
Tensor.__itruediv__ = Tensor.div_
Tensor.__ipow__ = Tensor.pow_
Tensor.T = property(lambda self: self.permute(*reversed(range(self.ndim))))
Tensor.mT = property(lambda self: self.transpose(-2, -1))
Tensor.index_put_ = _inplace_method("index_put_", index_put)
