"""Views: reshape, view, transpose, permute, expand, squeeze, diagonal, unfold, as_strided, flatten, movedim...

Views share memory and the version counter with their base, exactly where PyTorch's do; the gradient of
every as_strided-style view is one storage-map primitive (``StorageMap``). Writing through a view is
``ScatterView``.
"""
import math

from .. import _backend
from .._broadcast import infer_size, stretched, sum_to, write_through
from .._core import Size, Tensor
from ..autograd.function import Function, _NoGradCtx
from ..autograd.grad_mode import STATE
from ..creation import _sizes_or_keyword
from ._util import _shape_args, as_strided_raw, ufunc_at, wrap_dim
from .convert import view_dtype


def _infer_shape(shape, numel, op):
    shape = tuple(int(s) for s in shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError(f"{op}: only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"{op}: invalid shape dimension {s}")
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = shape[:neg[0]] + (numel // known,) + shape[neg[0] + 1:]
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


class Reshape(Function):
    _raw = True
    _view = True

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        return x.reshape(_infer_shape(shape, x.size, "reshape"))

    @staticmethod
    def backward(ctx, g):
        return _reshape_grad(g, ctx.in_shape), None


def _reshape_grad(g, shape):
    # a gradient is nobody's base: without a graph to record, its array reshaped, with no view bookkeeping
    # (a recorded view keeps g alive as its base, and then the engine copies a kernel's result that is
    # reshaped twice on its way to .grad instead of adopting it, as group_norm's dx)
    if STATE.enabled:
        return g.reshape(shape)
    return Tensor._make(g._data.reshape(shape))


class View(Function):
    _raw = True
    _view = True

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        shape = _infer_shape(shape, x.size, "view")
        try:
            y = x.view()
            y.shape = shape  # raises instead of copying when strides make a view impossible
        except (AttributeError, ValueError):
            raise RuntimeError(
                f"view size is not compatible with input tensor's size and stride (at least one dimension spans "
                f"across two contiguous subspaces) for shape {list(x.shape)} -> {list(shape)}. "
                "Use .reshape(...) instead.") from None
        return y

    @staticmethod
    def backward(ctx, g):
        return _reshape_grad(g, ctx.in_shape), None


def reshape(input, *sizes, shape=None):
    """The same data in a new shape; a view where possible.

    >>> import workbench as wb
    >>> wb.arange(6).reshape(2, 3)
    tensor([[0, 1, 2],
            [3, 4, 5]])
    """
    if shape is not None:  # reshape(shape=...); the check stays off the positional (hot) path
        sizes = _sizes_or_keyword(sizes, shape, "reshape", "shape")
    return Reshape.apply(input, tuple(_shape_args(sizes)))


def view(input, *sizes, size=None, dtype=None):
    """A view with a new shape (RuntimeError if the strides don't allow one).

    >>> import workbench as wb
    >>> wb.arange(4).view(2, 2).shape
    workbench.Size([2, 2])
    """
    if dtype is not None:  # x.view(dtype=...)
        if sizes or size is not None:
            raise TypeError("view() takes a shape or a dtype, not both")
        sizes = (dtype,)
    shape = sizes if size is None else _sizes_or_keyword(sizes, size, "view")
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)) and shape[0] is not None:
        return view_dtype(input, shape[0])
    return View.apply(input, tuple(_shape_args(shape)))


class Transpose(Function):
    _raw = True
    _view = True

    @staticmethod
    def forward(ctx, x, d0, d1):
        ctx.dims = (d0, d1)
        return x.swapaxes(d0, d1)

    @staticmethod
    def backward(ctx, g):
        return g.transpose(*ctx.dims), None, None


def transpose(input, dim0, dim1):
    """Swap two dims (a view).  >>> wb.zeros(2, 3).transpose(0, 1).shape  ->  workbench.Size([3, 2])"""
    n = input._data.ndim
    d0 = dim0 % n if type(dim0) is int and -n <= dim0 < n else wrap_dim(dim0, n)
    d1 = dim1 % n if type(dim1) is int and -n <= dim1 < n else wrap_dim(dim1, n)
    return Transpose.apply(input, d0, d1)


swapaxes = swapdims = transpose


def t(input):
    """Transpose a tensor of at most 2 dims.  >>> wb.zeros(2, 3).t().shape  ->  workbench.Size([3, 2])"""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return Permute.apply(input, tuple(range(input.ndim))) if input.ndim < 2 else transpose(input, 0, 1)


class Permute(Function):
    _raw = True
    _view = True

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return x.transpose(dims)

    @staticmethod
    def backward(ctx, g):
        inv = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inv[d] = i
        return g.permute(*inv), None


def permute(input, *order, dims=None):
    """Reorder dims (a view).  >>> wb.zeros(2, 3, 4).permute(2, 0, 1).shape  ->  workbench.Size([4, 2, 3])"""
    dims = _shape_args(order if dims is None else _sizes_or_keyword(order, dims, "permute", "dims"))
    n = input._data.ndim
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to "
                           f"len(dims) = {len(dims)}")
    w = tuple(d if type(d) is int and 0 <= d < n else wrap_dim(d, n) for d in dims)
    if len(set(w)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return Permute.apply(input, w)


class Expand(Function):
    _raw = True
    _view = True

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        nd = len(shape) - x.ndim
        if nd < 0:
            raise RuntimeError(f"expand: the number of sizes provided ({len(shape)}) must be greater or equal to "
                               f"the number of dimensions in the tensor ({x.ndim})")
        full = []
        for i, s in enumerate(shape):
            if s == -1:
                if i < nd:
                    raise RuntimeError("expand: -1 is not allowed in a leading, non-existing dimension")
                s = x.shape[i - nd]
            elif i >= nd and x.shape[i - nd] not in (1, s):
                raise RuntimeError(
                    f"The expanded size of the tensor ({s}) must match the existing size ({x.shape[i - nd]}) at "
                    f"non-singleton dimension {i}.  Target sizes: {list(shape)}.  Tensor sizes: {list(x.shape)}")
            full.append(s)
        if math.prod(full) == x.size:  # nothing stretched: a writeable view (NumPy's broadcast views are read-only)
            return x.reshape(tuple(full))
        return _stretch(ctx.xp, x, tuple(full))

    @staticmethod
    def backward(ctx, g):
        return g.sum_to_size(ctx.in_shape), None


_ndarray = _backend.numpy.ndarray


def _stretch(xp, x, shape):
    """``broadcast_to(x, shape)``, read-only as NumPy's. A C-contiguous NumPy array's is built directly, its
    stretched dims at stride 0 (``broadcast_to``'s Python layers cost 2.5 us, a third of a recorded expand)."""
    if x.__class__ is _ndarray and x.size and x.flags.c_contiguous:
        nd = len(shape) - x.ndim
        strides = [0] * nd
        for s, n, st in zip(shape[nd:], x.shape, x.strides):
            strides.append(st if s == n else 0)
        y = _ndarray(shape, x.dtype, x, 0, tuple(strides))
        y.flags.writeable = False
        return y
    return xp.broadcast_to(x, shape)


def expand(input, *sizes):
    """Broadcast to a larger shape without copying.  >>> wb.ones(1, 3).expand(2, 3).shape  ->  workbench.Size([2, 3])"""
    return Expand.apply(input, tuple(_shape_args(sizes)))


def expand_as(input, other):
    """expand() to other's shape.  >>> wb.ones(3).expand_as(wb.zeros(2, 3)).shape  ->  workbench.Size([2, 3])"""
    return Expand.apply(input, tuple(other.shape))


def broadcast_to(input, size):
    """Same as expand.  >>> wb.broadcast_to(wb.ones(3), (2, 3)).shape  ->  workbench.Size([2, 3])"""
    return Expand.apply(input, tuple(size))


class SumToSize(Function):
    _raw = True
    op_name = "sum_to_size"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        return sum_to(x, shape)

    @staticmethod
    def backward(ctx, g):
        return g.expand(ctx.in_shape), None


def sum_to_size(input, *size):
    """Sum broadcast dims away until the shape is ``size``.  >>> wb.ones(2, 3).sum_to_size(1, 3)  ->  tensor([[2., 2., 2.]])"""
    size = tuple(_shape_args(size))
    if tuple(input._data.shape) == size:
        return input
    return SumToSize.apply(input, size)


class Squeeze(Function):
    _raw = True
    _view = True

    @staticmethod
    def forward(ctx, x, dims):
        ctx.in_shape = x.shape
        if dims is None:
            return x.reshape(tuple(s for s in x.shape if s != 1))
        keep = tuple(s for i, s in enumerate(x.shape) if not (i in dims and s == 1))
        return x.reshape(keep)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape), None


def squeeze(input, dim=None):
    """Drop size-1 dims (all, or those in ``dim``).  >>> wb.zeros(1, 3, 1).squeeze().shape  ->  workbench.Size([3])"""
    n = input._data.ndim
    if dim is not None:
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        dim = tuple(wrap_dim(d, n) for d in dims)
    return Squeeze.apply(input, dim)


class Unsqueeze(Function):
    _raw = True
    _view = True

    @staticmethod
    def forward(ctx, x, dim):
        ctx.in_shape = x.shape
        shape = x.shape
        return x.reshape(shape[:dim] + (1,) + shape[dim:])  # expand_dims's reshape, without its 1.8 us of checks

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape), None


def unsqueeze(input, dim):
    """Insert a size-1 dim.  >>> wb.zeros(3).unsqueeze(0).shape  ->  workbench.Size([1, 3])"""
    return Unsqueeze.apply(input, wrap_dim(dim, input._data.ndim + 1))


def replay_view(vf, base):
    """Apply a recorded chain of view ops ``(cls, rest_args, parent)`` to ``base``."""
    cls, rest, parent = vf
    return cls.apply(base if parent is None else replay_view(parent, base), *rest)


def _scatter_view(base, value, vf, fill=False):
    """base with the region of view chain ``vf`` replaced by ``value`` (for in-place ops on views). ``fill``: the
    value is one number everywhere (fill_, zero_), which may be written where the region's elements share
    memory (an expanded view), as PyTorch writes it."""
    return ScatterView.apply(base, value, vf, fill)


class ScatterView(Function):
    _raw = True
    op_name = "copy_slices"

    @staticmethod
    def forward(ctx, base, value, vf, fill):
        out = ctx.xp.array(base, copy=True)
        region = _replay_raw(vf, out)
        try:
            region[...] = value
        except ValueError:
            if region.flags.writeable:
                raise
            write_through(region, value, fill=fill)  # an expanded view (PyTorch's error where it overlaps)
        ctx.vf = vf
        return out

    @staticmethod
    def backward(ctx, g):
        # the chain may hold as_strided, which addresses storage: replay it on a contiguous gradient. Zeroing
        # an overlapping region of it is PyTorch's backward error for an in-place fill of an expanded view
        g = g.contiguous()
        gb = _scatter_view(g, 0.0, ctx.vf) if ctx.needs_input_grad[0] else None
        gv = replay_view(ctx.vf, g) if ctx.needs_input_grad[1] else None
        return gb, gv, None, None


class StaleView(Function):
    """The node of a view that split, chunk or unbind returned, after its base (or another view of it) was
    modified in place: PyTorch refuses to regenerate such a view's grad_fn, and a gradient through it raises
    PyTorch's error (``message``) here. The forward passes the values through."""

    _raw = True
    op_name = "stale_view"

    @staticmethod
    def forward(ctx, x, message):
        ctx.message = message
        return x

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError(ctx.message)


def _replay_raw(vf, arr):
    cls, rest, parent = vf
    base = arr if parent is None else _replay_raw(parent, arr)
    ctx = _NoGradCtx()
    ctx.xp = _backend.xp_of(arr)
    ctx.needs_input_grad = ()
    return cls.forward(ctx, base, *rest)


# --- raw strided views and storage positions ------------------------------------------------------
def _positions(xp, shape, strides, offset):
    """Storage positions (in elements) of every element of a strided layout, as an int64 array."""
    pos = xp.full(tuple(shape), offset, dtype="int64")
    for d, (n, s) in enumerate(zip(shape, strides)):
        if n > 1 and s:
            sh = [1] * len(shape)
            sh[d] = n
            pos = pos + (xp.arange(n, dtype="int64") * s).reshape(sh)
    return pos


def _geometry(y, x):
    """(shape, element strides, element offset) of view ``y`` relative to the start of ``x``."""
    it = x.itemsize
    return (y.shape, tuple(s // it for s in y.strides), (_backend.data_ptr(y) - _backend.data_ptr(x)) // it)


def _own_geometry(x):
    it = x.itemsize
    return (x.shape, tuple(s // it for s in x.strides), 0)


class StorageMap(Function):
    """Move values between two strided layouts of one (virtual) storage: scatter-add ``v`` at the
    positions of layout ``src``, read the storage back at the positions of layout ``dst``.

    The gradient of any strided view (diagonal, unfold, as_strided) is this map from the view's
    layout to its input's, and its adjoint is the same map with the layouts swapped.
    """

    _raw = True
    op_name = "as_strided_scatter"

    @staticmethod
    def forward(ctx, v, src, dst, unique=False):
        xp = ctx.xp
        ctx.src, ctx.dst, ctx.unique = src, dst, unique
        ps = _positions(xp, *src)
        pd = _positions(xp, *dst)
        lo = min(int(ps.min()) if ps.size else 0, int(pd.min()) if pd.size else 0)
        hi = max(int(ps.max()) if ps.size else 0, int(pd.max()) if pd.size else 0)
        store = xp.zeros(hi - lo + 1, dtype=v.dtype)
        vals = xp.broadcast_to(v, ps.shape).reshape(-1)
        if unique:
            store[(ps - lo).reshape(-1)] = vals
        else:
            ufunc_at(xp, "add", store, (ps - lo).reshape(-1), vals)
        return store[pd - lo]

    @staticmethod
    def backward(ctx, g):
        return StorageMap.apply(g, ctx.dst, ctx.src, False), None, None, None


class _StridedView(Function):
    """A view made with as_strided; subclasses give ``_view_of(xp, x, *args) -> view``. Its gradient moves g
    through memory (StorageMap): from the view's positions to x's. Where x is an expanded tensor (several of
    its elements share one memory element), that would hand each of them the whole sum; a view defined by
    index (``_by_index``: diagonal, unfold) then maps by index instead, through a contiguous layout of x's
    shape, as PyTorch's diagonal_backward. as_strided is defined by memory and keeps it."""

    _raw = True
    _view = True
    _by_index = False

    @classmethod
    def forward(cls, ctx, x, *args):
        xp = ctx.xp
        y = cls._view_of(xp, x, *args)
        if cls._by_index and stretched(x):
            c = xp.empty(x.shape, x.dtype)
            ctx.geo = (_geometry(cls._view_of(xp, c, *args), c), _own_geometry(c))
        else:
            ctx.geo = (_geometry(y, x), _own_geometry(x))
        return y

    @staticmethod
    def backward(ctx, g):
        ygeo, xgeo = ctx.geo
        return (StorageMap.apply(g, ygeo, xgeo, False),) + (None,) * 4


def _diagonal_view(xp, x, offset, d1, d2):
    key = [slice(None)] * x.ndim
    if offset >= 0:
        key[d2] = slice(min(offset, x.shape[d2]), None)
    else:
        key[d1] = slice(min(-offset, x.shape[d1]), None)
    y = x[tuple(key)]
    n = max(0, min(y.shape[d1], y.shape[d2]))
    keep = [i for i in range(x.ndim) if i not in (d1, d2)]
    shape = [y.shape[i] for i in keep] + [n]
    strides = [y.strides[i] for i in keep] + [y.strides[d1] + y.strides[d2]]
    return as_strided_raw(xp, y, shape, strides)


class Diagonal(_StridedView):
    _by_index = True

    @staticmethod
    def _view_of(xp, x, offset, d1, d2):
        return _diagonal_view(xp, x, offset, d1, d2)


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal (a view sharing memory) over dims ``dim1``/``dim2``, placed last.

    >>> import workbench as wb
    >>> wb.arange(9).reshape(3, 3).diagonal()
    tensor([0, 4, 8])
    """
    n = input._data.ndim
    if n < 2:
        raise RuntimeError(f"diagonal(): expected a tensor with at least 2 dimensions, but got {n}D input of "
                           f"shape {list(input.shape)}")
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return Diagonal.apply(input, int(offset), d1, d2)


class Unfold(_StridedView):
    _by_index = True

    @staticmethod
    def _view_of(xp, x, dim, size, step):
        if x.ndim == 0:
            return as_strided_raw(xp, x, (size,), (0,))
        n = x.shape[dim]
        shape = list(x.shape)
        shape[dim] = (n - size) // step + 1
        strides = list(x.strides)
        strides[dim] = x.strides[dim] * step
        return as_strided_raw(xp, x, shape + [size], strides + [x.strides[dim]])


def unfold(input, dimension, size, step):
    """All length-``size`` slices along ``dimension``, ``step`` apart, as a new last dim (a view).

    >>> import workbench as wb
    >>> wb.arange(5).unfold(0, 2, 1)
    tensor([[0, 1],
            [1, 2],
            [2, 3],
            [3, 4]])
    """
    d = wrap_dim(dimension, input._data.ndim)
    n = input.shape[d] if input.ndim else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    return Unfold.apply(input, d, int(size), int(step))


class AsStrided(_StridedView):
    op_name = "as_strided"

    @staticmethod
    def _view_of(xp, x, size, stride, delta):
        it = x.itemsize
        if delta:
            x = as_strided_raw(xp, x, (delta + 1,), (it,))[delta:]
        return as_strided_raw(xp, x, size, tuple(s * it for s in stride))


def as_strided(input, size, stride, storage_offset=None):
    """A view of input's storage with the given size, strides (in elements) and storage offset.

    >>> import workbench as wb
    >>> wb.arange(6).as_strided((2, 2), (1, 2))
    tensor([[0, 2],
            [1, 3]])
    """
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(size)} vs {len(stride)}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    delta = 0 if storage_offset is None else int(storage_offset) - input.storage_offset()
    root = input._base if input._base is not None else input
    need = (int(storage_offset) if storage_offset is not None else input.storage_offset()) + (
        sum((n - 1) * s for n, s in zip(size, stride)) + 1 if all(size) else 0)
    if need > root.numel() or delta < 0:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                           f"{storage_offset} reach outside the storage of {root.numel()} elements available to "
                           f"this tensor (which starts at offset {input.storage_offset()}); call as_strided on "
                           "the base tensor instead")
    return AsStrided.apply(input, size, stride, delta)


# --- copying reshapes -----------------------------------------------------------------------------
def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims start_dim..end_dim into one.  >>> wb.zeros(2, 3, 4).flatten(1).shape  ->  workbench.Size([2, 12])"""
    n = input._data.ndim
    if n == 0:
        return reshape(input, (1,))
    s, e = wrap_dim(start_dim, n), wrap_dim(end_dim, n)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shp = input._data.shape
    return Reshape.apply(input, shp[:s] + (_prod(shp[s:e + 1]),) + shp[e + 1:])


def _prod(xs):
    p = 1
    for v in xs:
        p *= v
    return p


def ravel(input):
    """The elements as a 1-D tensor (a view when contiguous).  >>> wb.zeros(2, 3).ravel().shape  ->  workbench.Size([6])"""
    return reshape(input, (-1,))


def unflatten(input, dim, sizes):
    """Split one dim into ``sizes`` (one may be -1).  >>> wb.zeros(2, 6).unflatten(1, (2, 3)).shape  ->  workbench.Size([2, 2, 3])"""
    d = wrap_dim(dim, input._data.ndim)
    sizes = tuple(int(s) for s in sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    inner = _infer_shape(sizes, input.shape[d], "unflatten")
    return reshape(input, tuple(input.shape[:d]) + inner + tuple(input.shape[d + 1:]))


def view_as(input, other):
    """View with other's shape.  >>> wb.arange(4).view_as(wb.zeros(2, 2)).shape  ->  workbench.Size([2, 2])"""
    return view(input, tuple(other.shape))


def reshape_as(input, other):
    """Reshape to other's shape.  >>> wb.arange(4).reshape_as(wb.zeros(2, 2)).shape  ->  workbench.Size([2, 2])"""
    return reshape(input, tuple(other.shape))


def movedim(input, source, destination):
    """Move dims from ``source`` to ``destination`` positions (a view).

    >>> import workbench as wb
    >>> wb.zeros(2, 3, 4).movedim(0, -1).shape
    workbench.Size([3, 4, 2])
    """
    n = input._data.ndim
    if isinstance(source, int) != isinstance(destination, int):
        raise TypeError(f"movedim() received an invalid combination of arguments: source and destination must both "
                        f"be ints or both be sequences of ints, got {type(source).__name__} and "
                        f"{type(destination).__name__}")
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should contain the "
                           f"same number of dims as destination ({dst} dims)")
    src = [wrap_dim(d, n) for d in src]
    dst = [wrap_dim(d, n) for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `source` ({src}) or `destination` ({dst})")
    order = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(n) if i not in src)
    order = [o if o is not None else next(rest) for o in order]
    return Permute.apply(input, tuple(order))


moveaxis = movedim


def broadcast_shapes(*shapes):
    """The shape all ``shapes`` broadcast to.  >>> wb.broadcast_shapes((2, 1), (3,))  ->  workbench.Size([2, 3])"""
    common = [1] * max([1 if isinstance(s, int) else len(s) for s in shapes], default=0)
    for k, given in enumerate(shapes):
        shp = (given,) if isinstance(given, int) else tuple(given)
        for i in range(-1, -1 - len(shp), -1):
            s = shp[i]
            if s < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shp)}")
            if s == common[i] or s == 1:
                continue
            if common[i] != 1:  # PyTorch's words (torch._refs._broadcast_shapes)
                raise RuntimeError(f"Attempting to broadcast a dimension of length {s} at {i}! Mismatching argument "
                                   f"at index {k} had {given}; but expected shape should be broadcastable to {common}")
            common[i] = s
    return Size(common)


def broadcast_tensors(*tensors):
    """Expand every tensor to their common broadcast shape (views).

    >>> import workbench as wb
    >>> [t.shape for t in wb.broadcast_tensors(wb.zeros(2, 1), wb.zeros(3))]
    [workbench.Size([2, 3]), workbench.Size([2, 3])]
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = infer_size([t.shape for t in tensors])
    return tuple(t if tuple(t.shape) == shape else Expand.apply(t, shape) for t in tensors)


def adjoint(input):
    """The conjugate transpose of the last two dims (a view for real tensors).  >>> wb.adjoint(wb.zeros(2, 3)).shape  ->  workbench.Size([3, 2])"""
    if input.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.ndim}-D tensor.")
    m = transpose(input, -2, -1)
    return m.conj() if input.is_complex() else m


def _metadata_inplace(name, fn):
    """``name``: fn (a view op) applied to the tensor itself (its shape/strides change, its memory stays)."""

    def method(self, *args, **kwargs):
        self._check_inplace(name)
        r = fn(self, *args, **kwargs)
        self._data = r._data
        if r.grad_fn is not None:
            self.grad_fn, self._output_nr = r.grad_fn, r._output_nr
        if self._base is not None:
            self._view_fn = r._view_fn
        self._bump(name)
        return self

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place {name[:-1]}: the tensor itself takes the view's shape and strides (same memory)."
    return method


__all__ = ["reshape", "transpose", "swapaxes", "swapdims", "t", "permute", "broadcast_to", "squeeze", "unsqueeze",
           "diagonal", "as_strided", "flatten", "ravel", "unflatten", "movedim", "moveaxis", "broadcast_shapes",
           "broadcast_tensors", "adjoint"]
METHODS = {
    "reshape": reshape, "view": view, "transpose": transpose, "swapaxes": transpose, "swapdims": transpose, "t": t,
    "permute": permute, "expand": expand, "expand_as": expand_as, "broadcast_to": broadcast_to,
    "sum_to_size": sum_to_size, "squeeze": squeeze, "unsqueeze": unsqueeze, "diagonal": diagonal, "unfold": unfold,
    "as_strided": as_strided, "flatten": flatten, "ravel": ravel, "unflatten": unflatten, "view_as": view_as,
    "reshape_as": reshape_as, "movedim": movedim, "moveaxis": movedim, "adjoint": adjoint,
    "squeeze_": _metadata_inplace("squeeze_", squeeze), "unsqueeze_": _metadata_inplace("unsqueeze_", unsqueeze),
    "transpose_": _metadata_inplace("transpose_", transpose), "swapaxes_": _metadata_inplace("swapaxes_", transpose),
    "swapdims_": _metadata_inplace("swapdims_", transpose), "t_": _metadata_inplace("t_", t),
    "as_strided_": _metadata_inplace("as_strided_", as_strided),
    "T": property(lambda self: self.permute(*reversed(range(self.ndim))), doc="All dims reversed (a view)."),
    "mT": property(lambda self: self.transpose(-2, -1), doc="The last two dims swapped (a view)."),
}
