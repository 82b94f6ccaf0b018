"""Slices and splits: narrow, select, split, chunk, unbind, tensor_split, and the *_scatter ops that embed a slice."""
from .._core import Tensor
from ..autograd.function import Function, _register_view
from ..autograd.grad_mode import STATE
from ._util import _check_scatter_src, _out, wrap_dim
from .convert import clone
from .index import GetItem, IndexPut, SelectKey, SliceKey
from .views import ScatterView, as_strided


def narrow(input, dim, start, length):
    """The slice ``start:start+length`` along ``dim`` (a view).  >>> wb.arange(5).narrow(0, 1, 2)  ->  tensor([1, 2])"""
    n = input._data.ndim
    if n == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, n)
    size = input.shape[d]
    start = int(start)
    length = int(length)
    if start < -size or start > size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    key = (slice(None),) * d + (slice(start, start + length),)
    return SliceKey.apply(input, key)


def select(input, dim, index):
    """The slice at ``index`` along ``dim``, that dim removed (a view).  >>> wb.arange(6).view(2, 3).select(1, 0)  ->  tensor([0, 3])"""
    n = input._data.ndim
    if n == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, n)
    size = input.shape[d]
    index = int(index)
    if index < -size or index >= size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
                         f"dimension {d}")
    return SelectKey.apply(input, (slice(None),) * d + (index % size, Ellipsis))


def split(tensor, split_size_or_sections, dim=0):
    """Views of consecutive chunks: of a given size (the last may be smaller), or of listed sizes.

    >>> import workbench as wb
    >>> [t.tolist() for t in wb.arange(5).split(2)]
    [[0, 1], [2, 3], [4]]
    """
    d = wrap_dim(dim, tensor._data.ndim)
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, int) or (isinstance(split_size_or_sections, Tensor)
                                                    and split_size_or_sections.ndim == 0):
        s = int(split_size_or_sections)
        if s < 0 or (s == 0 and n != 0):
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
                               if s == 0 else f"split expects split_size be non-negative, but got split_size={s}")
        sizes = [min(s, n - i) for i in range(0, n, s)] if n else [0]
        op = "Split"
    else:
        sizes = [int(v) for v in split_size_or_sections]
        if sum(sizes) != n or any(v < 0 for v in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {d}), but got split_sizes={sizes}")
        op = "SplitWithSizes"
    keys, off = [], 0
    for s in sizes:
        keys.append((slice(None),) * d + (slice(off, off + s), Ellipsis))
        off += s
    return _pieces(tensor, keys, d, op)


class _Pieces(Function):
    """The views split, chunk and unbind return, recorded as one node (PyTorch's SplitBackward0,
    SplitWithSizesBackward0, UnbindBackward0) whose backward puts every piece's gradient into one array of the
    input's shape. A node per piece (a slice each) allocated a zero array of the whole input per piece in
    backward, and the engine summed them: three for an attention's q, k, v, four for an LSTM's gates."""

    _raw = True

    @staticmethod
    def forward(ctx, x, keys, dim):
        ctx.dim = dim
        return tuple(x[k] for k in keys)

    @staticmethod
    def backward(ctx, *grads):
        unbind = ctx._fn._unbind
        if STATE.enabled:  # create_graph: the join recorded
            from .join import cat, stack  # (join imports this module: a cycle)
            return (stack if unbind else cat)(list(grads), ctx.dim), None, None
        arrays = [g._data for g in grads]
        xp = ctx.xp
        return Tensor._make(xp.stack(arrays, ctx.dim) if unbind else xp.concatenate(arrays, ctx.dim)), None, None


# one primitive per PyTorch node name (op_name makes it: SplitBackward0, SplitWithSizesBackward0, UnbindBackward0)
_PIECES = {op: type(f"_{op}Pieces", (_Pieces,), {"op_name": name, "_unbind": op == "Unbind", "__module__": __name__})
           for op, name in (("Split", "split"), ("SplitWithSizes", "split_with_sizes"), ("Unbind", "unbind"))}


def _pieces(input, keys, dim, op):
    """The views input[key] for each key (basic indices along ``dim``), as PyTorch's multi-output view op
    ``op``. Recorded (grad mode on, input requires grad), one node makes them all, and each is then the view
    a slice would have been (the input's version counter and base, and how to replay it from the base, for
    ``Tensor._check_inplace`` and the stale-view checks); otherwise each is a plain slice."""
    if not (STATE.enabled and input._rg) or not keys:  # (unbind of an empty dim: no pieces, no node)
        return _multi_output_views(tuple(GetItem.apply(input, k) for k in keys), op)
    outs = _PIECES[op].apply(input, tuple(keys), dim)
    root = input._base if input._base is not None else input
    parent = None if input._base is None else input._view_fn
    replayable = input._base is None or parent is not None
    box, register = input._vbox, root.grad_fn is not None
    for i, (k, t) in enumerate(zip(keys, outs)):  # (one pass: _multi_output_views's marks too)
        t._vbox, t._base = box, root
        d = t.__dict__
        if replayable:
            d["_view_fn"] = (GetItem, (k,), parent)
        if t._rg:
            d["_multi_view"] = (op, i)
        if register:
            _register_view(root, t)
    if outs[0]._rg:
        root._multi_base = True
    return outs


def _multi_output_views(views, op):
    """The views one call returned together (split, chunk, unbind), marked while grad mode records and their
    input requires grad: PyTorch then forbids in-place ops on them, and on views of them, with grad mode on
    (``Tensor._check_inplace``); ``op`` is PyTorch's name for the call in that error."""
    if STATE.enabled and views and views[0]._rg:
        for i, v in enumerate(views):
            v._multi_view = (op, i)
        if views[0]._base is not None:
            views[0]._base._multi_base = True
    return views


def split_with_sizes(input, split_sizes, dim=0):
    """split() with a list of sizes.  >>> wb.arange(5).split_with_sizes([2, 3], 0)  ->  (tensor([0, 1]), tensor([2, 3, 4]))"""
    return split(input, list(split_sizes), dim)


def chunk(input, chunks, dim=0):
    """Split into ``chunks`` views of equal size (the last may be smaller; there may be fewer).

    >>> import workbench as wb
    >>> [t.tolist() for t in wb.arange(5).chunk(2)]
    [[0, 1, 2], [3, 4]]
    """
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = wrap_dim(dim, input._data.ndim)
    n = input.shape[d]
    size = -(-n // chunks)
    if n == 0:
        return tuple(narrow(input, d, 0, 0) for _ in range(chunks))
    return split(input, size, d)


def tensor_split(input, indices_or_sections, dim=0):
    """Split into n near-equal views, or at the given indices (NumPy's array_split).

    >>> import workbench as wb
    >>> [t.tolist() for t in wb.arange(5).tensor_split(3)]
    [[0, 1], [2, 3], [4]]
    """
    d = wrap_dim(dim, input._data.ndim)
    n = input.shape[d]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if ios.dtype.category != 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have integer dtype, but got "
                               f"{ios.dtype}")
        if ios.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {ios.ndim} dims")
        ios = int(ios.item()) if ios.ndim == 0 else [int(v) for v in ios.tolist()]
    if isinstance(ios, int):
        if ios <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {ios}")
        q, r = divmod(n, ios)
        bounds = [i * q + min(i, r) for i in range(ios + 1)]
    else:
        bounds = [0] + [int(i) for i in ios] + [n]
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        a = min(max(a + n if a < 0 else a, 0), n)
        b = min(max(b + n if b < 0 else b, 0), n)
        out.append(narrow(input, d, a, max(b - a, 0)))
    return tuple(out)


def unbind(input, dim=0):
    """The slices along ``dim`` as a tuple of views.  >>> [t.tolist() for t in wb.eye(2).unbind()]  ->  [[1.0, 0.0], [0.0, 1.0]]"""
    d = wrap_dim(dim, input._data.ndim)
    return _pieces(input, [(slice(None),) * d + (i, Ellipsis) for i in range(input.shape[d])], d, "Unbind")


# --- split/scatter variants ------------------------------------------------------------------------
def _split_sections(input, sections, dim, op):
    if isinstance(sections, int):
        n = input.shape[dim]
        if sections == 0 or n % sections:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size of the dimension "
                               f"{n} is not divisible by the split_size {sections}!")
    return tensor_split(input, sections, dim)


def hsplit(input, sections):
    """Split column-wise (dim 1, or dim 0 of a 1-D tensor); an int must divide the size.

    >>> import workbench as wb
    >>> [t.shape for t in wb.hsplit(wb.zeros(2, 4), 2)]
    [workbench.Size([2, 2]), workbench.Size([2, 2])]
    """
    if input.ndim < 1:
        raise RuntimeError("torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with 0 "
                           "dimensions!")
    return _split_sections(input, sections, 0 if input.ndim == 1 else 1, "hsplit")


def vsplit(input, sections):
    """Split row-wise (dim 0) a tensor of at least 2 dims.  >>> [t.shape for t in wb.vsplit(wb.zeros(4, 2), [1])]  ->  [workbench.Size([1, 2]), workbench.Size([3, 2])]"""
    if input.ndim < 2:
        raise RuntimeError(f"torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with "
                           f"{input.ndim} dimensions!")
    return _split_sections(input, sections, 0, "vsplit")


def dsplit(input, sections):
    """Split depth-wise (dim 2) a tensor of at least 3 dims.  >>> len(wb.dsplit(wb.zeros(1, 1, 4), 2))  ->  2"""
    if input.ndim < 3:
        raise RuntimeError(f"torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with "
                           f"{input.ndim} dimensions!")
    return _split_sections(input, sections, 2, "dsplit")


def select_scatter(input, src, dim, index):
    """input with the slice ``select(dim, index)`` replaced by src (out of place).

    >>> import workbench as wb
    >>> wb.select_scatter(wb.zeros(2, 2), wb.ones(2), 0, 0)
    tensor([[1., 1.],
            [0., 0.]])
    """
    region = select(input, dim, index)
    _check_scatter_src("select_scatter", region, src)
    d = wrap_dim(dim, input.ndim)
    return IndexPut.apply(input, (slice(None),) * d + (int(index) % input.shape[d], Ellipsis), src)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """input with the slice ``start:end:step`` along dim replaced by src (out of place).

    >>> import workbench as wb
    >>> wb.slice_scatter(wb.zeros(4), wb.ones(2), start=1, end=3)
    tensor([0., 1., 1., 0.])
    """
    d = wrap_dim(dim, input.ndim)
    key = (slice(None),) * d + (slice(start, end, step), Ellipsis)
    _check_scatter_src("slice_scatter", GetItem.apply(input, key), src)
    return IndexPut.apply(input, key, src)


def narrow_copy(input, dim, start, length, *, out=None):
    """narrow() as a new tensor.  >>> wb.narrow_copy(wb.arange(4), 0, 1, 2)  ->  tensor([1, 2])"""
    return _out(clone(narrow(input, dim, start, length)), out, "same")


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """input with the elements that ``as_strided(size, stride, storage_offset)`` would view set from src.

    >>> import workbench as wb
    >>> wb.as_strided_scatter(wb.zeros(4), wb.ones(2), (2,), (2,))
    tensor([1., 0., 1., 0.])
    """
    base = clone(input).contiguous()
    region = as_strided(base, size, stride, storage_offset)
    _check_scatter_src("as_strided_scatter", region, src)
    return ScatterView.apply(base, src, region._view_fn, False)


__all__ = ["narrow", "select", "split", "chunk", "tensor_split", "unbind", "hsplit", "vsplit", "dsplit",
           "select_scatter", "slice_scatter", "narrow_copy", "as_strided_scatter"]
METHODS = {
    "narrow": narrow, "select": select, "split": split, "split_with_sizes": split_with_sizes, "chunk": chunk,
    "tensor_split": tensor_split, "unbind": unbind, "hsplit": hsplit, "vsplit": vsplit, "dsplit": dsplit,
    "select_scatter": select_scatter, "slice_scatter": slice_scatter, "narrow_copy": narrow_copy,
    "as_strided_scatter": as_strided_scatter,
}
