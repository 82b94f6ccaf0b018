"""Ops that copy and rearrange elements: repeat, tile, repeat_interleave, flip, roll, rot90, tril/triu,
diagonal embedding (diag, diag_embed, diagflat, diagonal_scatter), tri indices and combinations."""
import itertools

from .. import _backend, creation
from .._backend import dtypes as _dt
from .._core import Tensor
from ..autograd.function import Function
from ..creation import _sizes_or_keyword
from ._util import _check_scatter_src, _out, _shape_args, wrap_dim
from .convert import clone
from .elementwise import where
from .index import index_select
from .views import Expand, StorageMap, diagonal, flatten, reshape, transpose, unsqueeze


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor whose ``(dim1, dim2)`` diagonals are the last dim of input (zeros elsewhere).

    >>> import workbench as wb
    >>> wb.diag_embed(wb.tensor([1, 2]))
    tensor([[1, 0],
            [0, 2]])
    """
    n = input._data.ndim + 1
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    m = (input.shape[-1] if input.ndim else 1) + abs(int(offset))
    rest = list(input.shape[:-1])
    shape = []
    for i in range(n):
        shape.append(m if i in (d1, d2) else rest.pop(0))
    x = input if input.ndim else input.reshape(1)
    return _embed_diagonal(x, tuple(shape), int(offset), d1, d2)


def _embed_diagonal(x, shape, offset, d1, d2):
    cont = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        cont[i] = cont[i + 1] * shape[i + 1]
    keep = [i for i in range(len(shape)) if i not in (d1, d2)]
    start = offset * cont[d2] if offset >= 0 else -offset * cont[d1]
    src = (tuple(x.shape), tuple(cont[i] for i in keep) + (cont[d1] + cont[d2],), start)
    return StorageMap.apply(x, src, (tuple(shape), tuple(cont), 0), True)


def diag(input, diagonal=0, *, out=None):
    """A 1-D input's values on a matrix diagonal, or a 2-D input's diagonal as a new 1-D tensor.

    >>> import workbench as wb
    >>> wb.diag(wb.tensor([[1, 2], [3, 4]]))
    tensor([1, 4])
    """
    if input.ndim == 1:
        return _out(diag_embed(input, diagonal, 0, 1), out, "same")
    if input.ndim == 2:
        return _out(clone(globals()["diagonal"](input, diagonal, 0, 1)), out, "same")
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


def repeat(input, *sizes):
    """Tile the tensor ``sizes[i]`` times along each dim (a copy).

    >>> import workbench as wb
    >>> wb.tensor([1, 2]).repeat(2, 2)
    tensor([[1, 2, 1, 2],
            [1, 2, 1, 2]])
    """
    sizes = tuple(int(s) for s in _shape_args(sizes))
    n = input._data.ndim
    if len(sizes) < n:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           f"tensor (repeat dims {list(sizes)} for a tensor of shape {list(input.shape)})")
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension: repeat dims {list(sizes)}")
    shape = (1,) * (len(sizes) - n) + tuple(input.shape)
    inter, big, final = [], [], []
    for r, s in zip(sizes, shape):
        inter += [1, s]
        big += [r, s]
        final.append(r * s)
    x = reshape(input, tuple(inter))
    out = reshape(Expand.apply(x, tuple(big)), tuple(final))
    if out._base is not None:  # every repeat was 1: still a copy, as in PyTorch
        out = clone(out)
    return out


def tile(input, dims):
    """repeat() that prepends 1s when ``dims`` is shorter than input.ndim.  >>> wb.tensor([1, 2]).tile((2,))  ->  tensor([1, 2, 1, 2])"""
    dims = tuple(dims) if not isinstance(dims, int) else (dims,)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return repeat(input, dims)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element ``repeats`` times (an int, or a tensor of per-element counts).

    >>> import workbench as wb
    >>> wb.repeat_interleave(wb.tensor([1, 2]), 2)
    tensor([1, 1, 2, 2])
    """
    if repeats is None:  # repeat_interleave(repeats): indices 0..n-1, each repeated
        reps = input
        if reps.ndim > 1:
            raise RuntimeError(f"repeat_interleave: repeats must be 0-dim or 1-dim tensor, got {reps.ndim}D")
        idx = creation.arange(reps.numel(), device=reps.device)
        return repeat_interleave(idx, reps, 0)
    if dim is None:
        input, dim = reshape(input, (-1,)), 0
    d = wrap_dim(dim, input._data.ndim)
    if input.ndim == 0:
        input, d = reshape(input, (1,)), 0
    n = input.shape[d]
    if isinstance(repeats, Tensor) and repeats.numel() == 1 and repeats.ndim <= 1 and n != 1:
        repeats = int(repeats.item())
    if isinstance(repeats, Tensor):
        if repeats.ndim > 1:
            raise RuntimeError(f"repeat_interleave: repeats must be 0-dim or 1-dim tensor, got {repeats.ndim}D")
        if repeats.dtype.category > 1 or repeats.dtype.name == "bool":
            raise RuntimeError(f"repeat_interleave: repeats has to be an integer tensor, got {repeats.dtype}")
        if repeats.numel() != n:
            raise RuntimeError(f"repeat_interleave: repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {repeats.numel()} and input.size({d}) = {n}")
        r = repeats._data.reshape(-1)
        if r.size and bool((r < 0).any()):
            raise RuntimeError("repeat_interleave: repeats can not be negative")
        xp = _backend.xp_of(r)
        src = xp.arange(n, dtype="int64")
        if repeats.device != input.device:
            r = _backend.to_device(r, input.device)
            xp = _backend.xp_of(r)
            src = xp.arange(n, dtype="int64")
        idx = Tensor._make(xp.repeat(src, r))
        if output_size is not None and idx.numel() != output_size:
            raise RuntimeError(f"repeat_interleave: output_size {output_size} does not match the sum of repeats "
                               f"{idx.numel()}")
        return index_select(input, d, idx)
    repeats = int(repeats)
    if repeats < 0:
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    x = unsqueeze(input, d + 1)
    shape = list(x.shape)
    shape[d + 1] = repeats
    return flatten(Expand.apply(x, tuple(shape)), d, d + 1)


# --- reordering ----------------------------------------------------------------------------------
class Flip(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return ctx.xp.array(ctx.xp.flip(x, axis=dims), copy=True) if dims else ctx.xp.array(x, copy=True)

    @staticmethod
    def backward(ctx, g):
        return Flip.apply(g, ctx.dims), None


def flip(input, *order, dims=None):
    """Reverse the order along ``dims`` (a copy, as in PyTorch).  >>> wb.flip(wb.tensor([1, 2, 3]), [0])  ->  tensor([3, 2, 1])"""
    dims = order if dims is None else _sizes_or_keyword(order, dims, "flip", "dims")
    if not dims:
        raise TypeError("flip() missing 1 required positional argument: 'dims'")
    dims = _shape_args(dims)
    n = input._data.ndim
    w = tuple(wrap_dim(d, n) for d in dims)
    if len(set(w)) != len(w):
        raise RuntimeError(f"dims has duplicates, original flip dims size={len(w)}, but unique flip dims "
                           f"size={len(set(w))}")
    return Flip.apply(input, w)


def fliplr(input):
    """Flip left-right (dim 1).  >>> wb.fliplr(wb.eye(2))  ->  tensor([[0., 1.], [1., 0.]])"""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return Flip.apply(input, (1,))


def flipud(input):
    """Flip up-down (dim 0).  >>> wb.flipud(wb.tensor([1, 2]))  ->  tensor([2, 1])"""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return Flip.apply(input, (0,))


class Roll(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        return ctx.xp.roll(x, shifts, axis=dims)

    @staticmethod
    def backward(ctx, g):
        return Roll.apply(g, tuple(-s for s in ctx.shifts), ctx.dims), None, None


def roll(input, shifts, dims=None):
    """Rotate elements along dims (flattened when dims is None).  >>> wb.roll(wb.tensor([1, 2, 3]), 1)  ->  tensor([3, 1, 2])"""
    sh = (shifts,) if isinstance(shifts, int) else tuple(int(s) for s in shifts)
    if dims is None:
        if len(sh) != 1:
            raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(sh)}, dims: 0")
        return reshape(Roll.apply(reshape(input, (-1,)), sh, (0,)), tuple(input.shape))
    dm = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(sh) != len(dm):
        raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(sh)}, dims: {len(dm)}")
    n = input._data.ndim
    return Roll.apply(input, sh, tuple(wrap_dim(d, n) for d in dm))


def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees k times in the plane of ``dims``.  >>> wb.rot90(wb.tensor([[1, 2], [3, 4]]))  ->  tensor([[2, 4], [1, 3]])"""
    dims = tuple(dims)
    n = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if n < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {n}")
    d0, d1 = wrap_dim(dims[0], n), wrap_dim(dims[1], n)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return transpose(Flip.apply(input, (d1,)), d0, d1)
    if k == 2:
        return Flip.apply(input, (d0, d1))
    if k == 3:
        return transpose(Flip.apply(input, (d0,)), d0, d1)
    return clone(input)


class Tri(Function):
    _raw = True
    op_name = "tril"

    @staticmethod
    def forward(ctx, x, k, upper):
        ctx.k, ctx.upper = k, upper
        return (ctx.xp.triu if upper else ctx.xp.tril)(x, k)

    @staticmethod
    def backward(ctx, g):
        return Tri.apply(g, ctx.k, ctx.upper), None, None


class Triu(Tri):
    op_name = "triu"


def tril(input, diagonal=0, *, out=None):
    """Zero the elements above the ``diagonal``-th diagonal.  >>> wb.tril(wb.ones(2, 2))  ->  tensor([[1., 0.], [1., 1.]])"""
    if input.ndim < 2:
        raise RuntimeError(f"tril: input tensor must have at least 2 dimensions, got shape {list(input.shape)}")
    return _out(Tri.apply(input, int(diagonal), False), out, "same")


def triu(input, diagonal=0, *, out=None):
    """Zero the elements below the ``diagonal``-th diagonal.  >>> wb.triu(wb.ones(2, 2))  ->  tensor([[1., 1.], [0., 1.]])"""
    if input.ndim < 2:
        raise RuntimeError(f"triu: input tensor must have at least 2 dimensions, got shape {list(input.shape)}")
    return _out(Triu.apply(input, int(diagonal), True), out, "same")


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """input with its diagonal ``(offset, dim1, dim2)`` replaced by src (out of place).

    >>> import workbench as wb
    >>> wb.diagonal_scatter(wb.zeros(2, 2), wb.ones(2))
    tensor([[1., 0.],
            [0., 1.]])
    """
    region = diagonal(input, offset, dim1, dim2)
    _check_scatter_src("diagonal_scatter", region, src)
    n = input.ndim
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    shape = tuple(input.shape)
    placed = _embed_diagonal(src.to(input.dtype), shape, int(offset), d1, d2)
    xp = _backend.xp_of(input._data)
    mask = _embed_diagonal(Tensor._make(xp.ones(tuple(region.shape), dtype=bool)), shape, int(offset), d1, d2)
    return where(mask, placed, input)


def diagflat(input, offset=0):
    """The flattened input on a diagonal of a 2-D tensor.  >>> wb.diagflat(wb.tensor([[1, 2]]))  ->  tensor([[1, 0], [0, 2]])"""
    return diag_embed(reshape(input, (-1,)), offset, 0, 1)


def _tri_indices(row, col, offset, dtype, device, upper):
    xp = _backend.numpy
    r, c = (xp.triu_indices if upper else xp.tril_indices)(row, offset, col)
    return creation.tensor(xp.stack([r, c]).reshape(2, -1), dtype=dtype or _dt.int64, device=device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """Row and column indices (2 x N) of the lower triangle.  >>> wb.tril_indices(2, 2).tolist()  ->  [[0, 1, 1], [0, 0, 1]]"""
    return _tri_indices(row, col, offset, dtype, device, False)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """Row and column indices (2 x N) of the upper triangle.  >>> wb.triu_indices(2, 2).tolist()  ->  [[0, 0, 1], [0, 1, 1]]"""
    return _tri_indices(row, col, offset, dtype, device, True)


def combinations(input, r=2, with_replacement=False):
    """All length-r combinations of a 1-D tensor's elements, one per row (as itertools.combinations).

    >>> import workbench as wb
    >>> wb.combinations(wb.tensor([1, 2, 3])).tolist()
    [[1, 2], [1, 3], [2, 3]]
    """


    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return creation.empty(0, dtype=input.dtype, device=input.device)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = list(pick(range(input.shape[0]), r))
    if not idx:
        return creation.empty(0, r, dtype=input.dtype, device=input.device)
    flat = creation.tensor([i for row in idx for i in row], dtype=_dt.int64, device=input.device)
    return reshape(index_select(input, 0, flat), (len(idx), r))


__all__ = ["diag_embed", "diag", "tile", "repeat_interleave", "flip", "fliplr", "flipud", "roll", "rot90", "tril",
           "triu", "diagonal_scatter", "diagflat", "tril_indices", "triu_indices", "combinations"]
METHODS = {
    "diag_embed": diag_embed, "diag": diag, "repeat": repeat, "tile": tile, "repeat_interleave": repeat_interleave,
    "flip": flip, "fliplr": fliplr, "flipud": flipud, "roll": roll, "rot90": rot90, "tril": tril, "triu": triu,
    "diagonal_scatter": diagonal_scatter, "diagflat": diagflat,
}
INPLACE = ("tril", "triu")
