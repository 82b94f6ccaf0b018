"""``Variable``: PyTorch's pre-0.4 wrapper, kept as PyTorch keeps it, so old code runs.

``Variable(t)`` returns a tensor sharing ``t``'s storage (a leaf), with ``requires_grad`` as asked;
``isinstance(x, Variable)`` is true of every tensor.

>>> import workbench as wb
>>> from workbench.autograd import Variable
>>> v = Variable(wb.ones(2), requires_grad=True)
>>> (v * 3).sum().backward(); v.grad
tensor([3., 3.])
"""
import warnings

from .._core import Tensor
from ..creation import empty


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """Wrap a tensor as a leaf (``volatile`` is gone: use ``workbench.no_grad()``)."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with workbench.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)
