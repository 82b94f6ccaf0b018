"""Membership and position questions: isin, unravel_index, and fill_diagonal_.

>>> import workbench as wb
>>> wb.isin(wb.tensor([1, 2, 3]), wb.tensor([2, 5]))
tensor([False,  True, False])
"""
from .. import _backend
from .._backend import dtypes as _dt
from .._core import Tensor
from ..creation import tensor
from ._util import _out


def isin(elements, test_elements, *, assume_unique=False, invert=False, out=None):
    """Whether each of ``elements`` occurs in ``test_elements`` (either may be a number); bool tensor of
    elements' shape, negated with invert=True.  >>> wb.isin(3, wb.tensor([1, 3]))  ->  tensor(True)"""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() expects at least one of elements and test_elements to be a Tensor")
    like = elements if isinstance(elements, Tensor) else test_elements
    e = elements._data if isinstance(elements, Tensor) else _backend.xp_of(like._data).asarray(elements)
    t = test_elements._data if isinstance(test_elements, Tensor) else _backend.xp_of(like._data).asarray(test_elements)
    xp = _backend.xp_of(e)
    return _out(Tensor._make(xp.isin(e, t, assume_unique=assume_unique, invert=invert)), out)


def unravel_index(indices, shape):
    """The coordinates, one int64 tensor per dim of ``shape``, of flat ``indices`` into a tensor of that shape.

    >>> import workbench as wb
    >>> wb.unravel_index(wb.tensor([5, 7]), (2, 4))
    (tensor([1, 1]), tensor([1, 3]))
    """
    if not isinstance(indices, Tensor):
        indices = tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype.is_complex or indices.dtype is _dt.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    flat = indices._data.astype("int64", copy=False)
    coords = []
    for size in reversed(shape):
        coords.append(flat % size if size else flat * 0)
        flat = flat // size if size else flat * 0
    return tuple(Tensor._make(c) for c in reversed(coords))


def fill_diagonal_(self, fill_value, wrap=False):
    """Set the main diagonal (all indices equal) to ``fill_value`` in place; for a tall matrix, wrap=True
    starts the diagonal again below each square block, as NumPy's fill_diagonal does.

    >>> import workbench as wb
    >>> wb.zeros(2, 3).fill_diagonal_(5.0)
    tensor([[5., 0., 0.],
            [0., 5., 0.]])
    """
    if self.ndim < 2:
        raise RuntimeError(f"fill_diagonal_: dimensions must larger than 1, got a {self.ndim}-D tensor")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError(f"fill_diagonal_: all dimensions of input must be of equal length, got shape "
                           f"{list(self.shape)}")
    xp = _backend.xp_of(self._data)
    mask = xp.zeros(self._data.shape, dtype=bool)
    xp.fill_diagonal(mask, True, wrap=wrap)
    return self.masked_fill_(Tensor._make(mask), fill_value)  # masked_fill_'s in-place and autograd rules


__all__ = ["isin", "unravel_index"]
METHODS = {"fill_diagonal_": fill_diagonal_}
