"""Joins: cat, stack and their h/v/d/column variants, atleast_nd, meshgrid, cartesian_prod, block_diag."""
import warnings

from .. import _backend, creation
from .._core import Tensor
from ..autograd.function import Function
from ._autocast import AUTOCAST as _AUTOCAST
from ._autocast import cast as _autocast_cast
from ._util import _out, cast, result_dtype_n, wrap_dim
from .pad import ConstantPad
from .slicing import narrow, unbind
from .views import Expand, reshape, unsqueeze


# --- joining and splitting -----------------------------------------------------------------------
def _legacy_empty(x, ref_ndim):
    # PyTorch skips 1-D empty tensors in cat whatever the other shapes (they still take part in promotion)
    return x.ndim == 1 and x.shape[0] == 0 and ref_ndim != 1


class Cat(Function):
    _raw = True

    @staticmethod
    def forward(ctx, *args):
        xs, dim = args[:-1], args[-1]
        x0 = xs[0]
        d0, nd = x0.dtype, x0.ndim
        same = regular = True
        sizes = []
        for x in xs:
            if x.dtype != d0:
                same = False
            if x.ndim != nd:
                regular = False
            elif nd:
                sizes.append(x.shape[dim])
        rd = d0 if same else result_dtype_n(*xs)
        if nd and regular:
            parts = xs if same else [cast(x, rd) for x in xs]
            ctx.sizes = sizes
        else:  # legacy: 1-D empty tensors are skipped whatever the others' shapes
            ref = next((x.ndim for x in xs if not (x.ndim == 1 and x.shape[0] == 0)), 1)
            keep = [not _legacy_empty(x, ref) for x in xs]
            ctx.sizes = [x.shape[dim] if k else None for x, k in zip(xs, keep)]
            parts = [cast(x, rd) for x, k in zip(xs, keep) if k]
            if not parts:
                return ctx.xp.zeros((0,), dtype=rd)
        ctx.dim = dim
        try:
            return ctx.xp.concatenate(parts, axis=dim)
        except ValueError:
            raise _cat_error(xs, dim) from None

    @staticmethod
    def backward(ctx, g):
        out, off = [], 0
        for n in ctx.sizes:
            if n is None:
                out.append(None)
            else:
                out.append(narrow(g, ctx.dim, off, n))
                off += n
        return tuple(out) + (None,)


def _cat_error(xs, d):
    """The PyTorch error for operands numpy refused to concatenate."""
    ref = next((x for x in xs if not (x.ndim == 1 and x.shape[0] == 0)), xs[0])
    for i, x in enumerate(xs):
        if x.ndim == 0:
            return RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
        if _legacy_empty(x, ref.ndim):
            continue
        if x.ndim != ref.ndim:
            return RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {x.ndim}")
        for k in range(ref.ndim):
            if k != d and x.shape[k] != ref.shape[k]:
                return RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                    f"{ref.shape[k]} but got size {x.shape[k]} for tensor number {i} in the list.")
    return RuntimeError(f"cat: cannot concatenate tensors of shapes {[list(x.shape) for x in xs]} along dim {d}")


class Stack(Function):
    _raw = True

    @staticmethod
    def forward(ctx, *args):
        *xs, dim = args
        d0 = xs[0].dtype
        if not all(x.dtype == d0 for x in xs):
            rd = result_dtype_n(*xs)
            xs = [cast(x, rd) for x in xs]
        ctx.dim, ctx.n = dim, len(xs)
        try:
            if xs[0].__class__ is _backend.numpy.ndarray:  # np.stack's own steps, without its Python layers (3 us)
                return _backend.numpy.concatenate([x.reshape(x.shape[:dim] + (1,) + x.shape[dim:]) for x in xs],
                                                  axis=dim)
            return ctx.xp.stack(xs, axis=dim)
        except ValueError:
            shapes = [list(x.shape) for x in xs]
            i = next(k for k, sh in enumerate(shapes) if sh != shapes[0])
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {shapes[0]} at entry 0 and "
                               f"{shapes[i]} at entry {i}") from None

    @staticmethod
    def backward(ctx, g):
        return unbind(g, ctx.dim) + (None,)


def _tensor_list(tensors, op):
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}(): argument 'tensors' must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    for t in tensors:
        if not isinstance(t, Tensor):
            i = next(k for k, v in enumerate(tensors) if not isinstance(v, Tensor))
            raise TypeError(f"{op}(): expected Tensor as element {i} in argument 0, but got "
                            f"{type(tensors[i]).__name__}")
    return tensors


def cat(tensors, dim=0, *, out=None):
    """Join tensors along an existing dim (dtypes promote, as in PyTorch).

    >>> import workbench as wb
    >>> wb.cat([wb.zeros(2, 3), wb.ones(1, 3)]).shape
    workbench.Size([3, 3])
    """
    if _AUTOCAST[0]:
        tensors, = _autocast_cast("cat", tensors)
    ts = _tensor_list(tensors, "cat")
    if not ts:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    ref = ts[0]
    nd = ref._data.ndim
    if nd == 1 and ref._data.shape[0] == 0:
        ref = next((t for t in ts if not (t.ndim == 1 and t.shape[0] == 0)), ref)
        nd = ref.ndim
    if nd == 0:
        raise RuntimeError(f"zero-dimensional tensor (at position {ts.index(ref)}) cannot be concatenated")
    r = Cat.apply(*ts, dim % nd if type(dim) is int and -nd <= dim < nd else wrap_dim(dim, nd))
    if out is None:
        return r
    _check_cat_out(r, out)
    return _out(r, out)


def _check_cat_out(r, out):
    # out= takes the cast rule, and PyTorch's cat (stack's too) says so with a TypeError
    if r.dtype.category > out.dtype.category:
        raise TypeError(f"torch.cat(): input types can't be cast to the desired output type {out.dtype._scalar_name}")


concat = concatenate = cat


def stack(tensors, dim=0, *, out=None):
    """Join same-shaped tensors along a new dim.  >>> wb.stack([wb.zeros(3), wb.ones(3)]).shape  ->  workbench.Size([2, 3])"""
    if _AUTOCAST[0]:
        tensors, = _autocast_cast("stack", tensors)
    ts = _tensor_list(tensors, "stack")
    if not ts:
        raise RuntimeError("stack expects a non-empty TensorList")
    r = Stack.apply(*ts, wrap_dim(dim, ts[0].ndim + 1))
    if out is None:
        return r
    _check_cat_out(r, out)
    return _out(r, out)


def atleast_1d(*tensors):
    """Each tensor with at least one dim (0-d become shape [1]).  >>> wb.atleast_1d(wb.tensor(1.)).shape  ->  workbench.Size([1])"""
    return _atleast(tensors, 1)


def atleast_2d(*tensors):
    """Each tensor with at least two dims.  >>> wb.atleast_2d(wb.tensor([1, 2])).shape  ->  workbench.Size([1, 2])"""
    return _atleast(tensors, 2)


def atleast_3d(*tensors):
    """Each tensor with at least three dims.  >>> wb.atleast_3d(wb.tensor([1, 2])).shape  ->  workbench.Size([1, 2, 1])"""
    return _atleast(tensors, 3)


def _atleast(tensors, k):
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    ts = tensors[0] if len(tensors) == 1 and not single else tensors
    out = []
    for t in ts:
        n = t.ndim
        if n >= k:
            out.append(t)
        elif k == 1 or n == 0:
            out.append(reshape(t, (1,) * k))
        elif k == 2:
            out.append(unsqueeze(t, 0))
        else:  # k == 3: (N,) -> (1, N, 1), (M, N) -> (M, N, 1)
            out.append(unsqueeze(unsqueeze(t, 0), 2) if n == 1 else unsqueeze(t, 2))
    return out[0] if single else tuple(out)


def hstack(tensors, *, out=None):
    """Concatenate column-wise (dim 0 for 1-D inputs, else dim 1).  >>> wb.hstack([wb.zeros(2), wb.ones(3)])  ->  tensor([0., 0., 1., 1., 1.])"""
    ts = atleast_1d(list(tensors))
    return cat(ts, 0 if ts[0].ndim == 1 else 1, out=out)


def vstack(tensors, *, out=None):
    """Concatenate row-wise after atleast_2d.  >>> wb.vstack([wb.zeros(3), wb.ones(3)]).shape  ->  workbench.Size([2, 3])"""
    return cat(atleast_2d(list(tensors)), 0, out=out)


row_stack = vstack


def dstack(tensors, *, out=None):
    """Concatenate depth-wise after atleast_3d.  >>> wb.dstack([wb.zeros(2), wb.ones(2)]).shape  ->  workbench.Size([1, 2, 2])"""
    return cat(atleast_3d(list(tensors)), 2, out=out)


def column_stack(tensors, *, out=None):
    """Stack 1-D tensors as columns.  >>> wb.column_stack([wb.zeros(2), wb.ones(2)]).shape  ->  workbench.Size([2, 2])"""
    ts = [reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t for t in _tensor_list(tensors, "column_stack")]
    return cat(ts, 1, out=out)


# --- grids ---------------------------------------------------------------------------------------
def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 1-D tensors (expanded views); indexing 'ij' (default) or 'xy'.

    >>> import workbench as wb
    >>> [g.tolist() for g in wb.meshgrid(wb.tensor([1, 2]), wb.tensor([3, 4]), indexing='ij')]
    [[[1, 1], [2, 2]], [[3, 4], [3, 4]]]
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    ts = list(tensors)
    if not ts:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in ts:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.ndim}D")
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)
    grids = []
    for i, t in enumerate(ts):
        sh = [1] * len(ts)
        sh[i] = -1
        grids.append(Expand.apply(reshape(t, tuple(sh)), shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    """All combinations of the 1-D inputs' elements, one per row.

    >>> import workbench as wb
    >>> wb.cartesian_prod(wb.tensor([1, 2]), wb.tensor([3, 4])).tolist()
    [[1, 3], [1, 4], [2, 3], [2, 4]]
    """
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, (-1,)) for g in grids], 1)


def block_diag(*tensors):
    """The tensors (0-, 1- or 2-D) as blocks on the diagonal of a zero matrix (dtypes promote).

    >>> import workbench as wb
    >>> wb.block_diag(wb.ones(1, 2), wb.tensor(3.))
    tensor([[1., 1., 0.],
            [0., 0., 3.]])
    """
    mats = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
        mats.append(reshape(t, (1, -1) if t.ndim == 1 else (1, 1)) if t.ndim < 2 else t)
    if not mats:
        return creation.zeros(1, 0)
    width = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        rows.append(ConstantPad.apply(m, (left, width - left - m.shape[1]), 0))
        left += m.shape[1]
    return cat(rows, 0)


__all__ = ["cat", "concat", "concatenate", "stack", "atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack",
           "row_stack", "dstack", "column_stack", "meshgrid", "cartesian_prod", "block_diag"]
