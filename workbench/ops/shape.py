"""Shape ops: views (reshape, view, transpose, permute, expand, indexing, diagonal, unfold, as_strided...),
joins and splits (cat, stack, split, chunk...), reorderings (flip, roll, rot90), triangles, grids and
padding, plus the keyed get/put primitives that the indexing family builds on.

Views share memory and the version counter with their base, exactly where PyTorch's do; the gradient of
every as_strided-style view is one storage-map primitive (``StorageMap``).
"""
from .. import _backend
from .._backend import dtypes as _dt
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import cast, result_dtype_n, wrap_dim


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


def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
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
        return g.reshape(ctx.in_shape), None


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
        return g.reshape(ctx.in_shape), None


def reshape(input, *shape):
    """The same data in a new shape; a view where possible.

    >>> import workbench as wb
    >>> wb.arange(6).reshape(2, 3)
    tensor([[0, 1, 2],
            [3, 4, 5]])
    """
    return Reshape.apply(input, tuple(_shape_args(shape)))


def view(input, *shape):
    """A view with a new shape (RuntimeError if the strides don't allow one).

    >>> import workbench as wb
    >>> wb.arange(4).view(2, 2).shape
    workbench.Size([2, 2])
    """
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)) and shape[0] is not None:
        from .convert import view_dtype

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


def permute(input, *dims):
    """Reorder dims (a view).  >>> wb.zeros(2, 3, 4).permute(2, 0, 1).shape  ->  workbench.Size([4, 2, 3])"""
    dims = _shape_args(dims)
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
        return ctx.xp.broadcast_to(x, tuple(full))

    @staticmethod
    def backward(ctx, g):
        return g.sum_to_size(ctx.in_shape), None


def expand(input, *sizes):
    """Broadcast to a larger shape without copying.  >>> wb.ones(1, 3).expand(2, 3).shape"""
    return Expand.apply(input, tuple(_shape_args(sizes)))


def expand_as(input, other):
    """expand() to other's shape.  >>> wb.ones(3).expand_as(wb.zeros(2, 3)).shape  ->  Size([2, 3])"""
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
        nd = x.ndim - len(shape)
        axes = tuple(range(nd)) + tuple(i + nd for i, s in enumerate(shape) if s == 1 and x.shape[i + nd] != 1)
        y = x.sum(axis=axes, keepdims=True, dtype=x.dtype) if axes else x
        return y.reshape(shape)

    @staticmethod
    def backward(ctx, g):
        return g.expand(ctx.in_shape), None


def sum_to_size(input, *size):
    """Sum broadcast dims away until the shape is ``size``.  >>> wb.ones(2, 3).sum_to_size(1, 3)"""
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
    """Drop size-1 dims (all, or those in ``dim``).  >>> wb.zeros(1, 3, 1).squeeze().shape"""
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
        return ctx.xp.expand_dims(x, dim)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape), None


def unsqueeze(input, dim):
    """Insert a size-1 dim.  >>> wb.zeros(3).unsqueeze(0).shape  ->  workbench.Size([1, 3])"""
    return Unsqueeze.apply(input, wrap_dim(dim, input._data.ndim + 1))


# --- indexing ------------------------------------------------------------------------------------
def _convert_key(key, x):
    """A Python/Tensor index as one the array library understands (Tensors become arrays)."""
    if type(key) is list and len(key) < 32 and any(
            isinstance(k, (Tensor, list, tuple, slice)) or k is None or k is Ellipsis for k in key):
        import warnings

        # PyTorch's legacy rule: such a list indexes like a tuple (NumPy would make one array of it)
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed "
                      "in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted "
                      "as tensor index, x[torch.tensor(seq)], which will result either in an error or a different "
                      "result", UserWarning, stacklevel=4)
        key = tuple(key)
    if isinstance(key, tuple):
        return tuple(_convert_key1(k, x) for k in key)
    return _convert_key1(key, x)


def _convert_key1(k, x):
    if isinstance(k, Tensor):
        if k.device != x.device and not (k.device.type == "cpu" and x.device.type == "cuda"):
            raise RuntimeError(f"indices should be either on cpu or on the same device as the indexed tensor "
                               f"({x.device})")
        d = k._data
        if k.device != x.device:
            from .. import _backend

            d = _backend.to_device(d, x.device)
        if d.dtype.kind not in "biu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return d
    if isinstance(k, list):
        from .. import _backend

        xp = _backend.xp_of(x._data)
        arr = xp.asarray(_backend.numpy.asarray(k))
        if arr.dtype.kind not in "biu" and arr.size:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return arr.astype(_backend.numpy.int64) if arr.size == 0 else arr
    if k is None or k is Ellipsis or isinstance(k, (int, slice)):
        if isinstance(k, slice) and k.step is not None and k.step <= 0:
            raise ValueError("step must be greater than zero")
        return k
    if hasattr(k, "dtype") and hasattr(k, "shape"):  # a NumPy/CuPy array (already converted)
        return k
    if hasattr(k, "__index__"):
        return k.__index__()
    raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                     f"valid indices (got {type(k).__name__})")


def _is_basic(key):
    ks = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, (int, slice)) for k in ks)


class GetItem(Function):
    _raw = True
    _view = True
    op_name = "index"

    @staticmethod
    def forward(ctx, x, key):
        ctx.in_shape = x.shape
        ctx.key = key
        try:
            return x[key]
        except IndexError as e:
            raise IndexError(f"{e} (indexing a tensor of shape {list(x.shape)})") from None

    @staticmethod
    def backward(ctx, g):
        return IndexBackward.apply(g, ctx.in_shape, ctx.key), None


class IndexBackward(Function):
    """Scatter a gradient back into a zero tensor of the input's shape (accumulating repeats)."""

    _raw = True
    op_name = "index_backward"

    @staticmethod
    def forward(ctx, g, shape, key):
        xp = ctx.xp
        ctx.key = key
        out = xp.zeros(shape, dtype=g.dtype)
        if _is_basic(key):
            out[key] = g
        else:
            ufunc_at(xp, "add", out, key, g)
        return out

    @staticmethod
    def backward(ctx, gg):
        return gg[ctx.key], None, None


def getitem(input, key):
    """NumPy-style indexing: basic indices give views, advanced ones copies; both differentiable.

    >>> import workbench as wb
    >>> wb.arange(6).view(2, 3)[1, ::2]
    tensor([3, 5])
    """
    key = _convert_key(key, input)
    if _is_basic(key):  # a trailing Ellipsis makes NumPy return a 0-d view rather than a scalar copy
        ks = key if isinstance(key, tuple) else (key,)
        if Ellipsis not in ks:
            key = ks + (Ellipsis,)
    return GetItem.apply(input, key)


class IndexPut(Function):
    """out = input with out[key] = value (or += value when accumulate); the out-of-place form."""

    _raw = True
    op_name = "index_put"

    @staticmethod
    def forward(ctx, x, key, v, accumulate=False):
        xp = ctx.xp
        out = xp.array(x, copy=True)
        ctx.key = key
        ctx.accumulate = accumulate
        vv = v if not hasattr(v, "dtype") else v.astype(x.dtype, copy=False)
        if accumulate:
            ufunc_at(xp, "add", out, key, xp.broadcast_to(vv, out[key].shape) if hasattr(vv, "shape") else vv)
        else:
            try:
                out[key] = vv
            except ValueError as e:
                raise RuntimeError(f"shape mismatch: value tensor of shape {list(getattr(v, 'shape', ()))} "
                                   f"cannot be broadcast to indexing result of shape {list(out[key].shape)} "
                                   f"({e})") from None
        ctx.v_shape = getattr(v, "shape", None)
        return out

    @staticmethod
    def backward(ctx, g):
        if ctx.accumulate:
            gx = g
        else:
            gx = IndexPut.apply(g, ctx.key, 0.0)
        gv = g[ctx.key] if ctx.needs_input_grad[2] else None
        return gx, None, gv, None


def index_put(input, indices, values, accumulate=False):
    """Out-of-place ``input[indices] = values`` (``+=`` with accumulate=True, repeats accumulating).

    >>> import workbench as wb
    >>> wb.zeros(3).index_put((wb.tensor([0, 0]),), wb.tensor(1.), accumulate=True)
    tensor([2., 0., 0.])
    """
    key = _convert_key(tuple(indices), input)
    return IndexPut.apply(input, key, values, accumulate)


def setitem(self, key, value):
    """``self[key] = value`` in place (values broadcast and cast; differentiable w.r.t. both).

    >>> import workbench as wb
    >>> x = wb.zeros(2, 2); x[:, 1] = 5.; x
    tensor([[0., 5.],
            [0., 5.]])
    """
    k = _convert_key(key, self)
    if isinstance(value, Tensor) and value.device != self.device:
        if value.ndim == 0 and value.device.type == "cpu":
            value = value.item()
        else:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{self.device} and {value.device}! (in __setitem__)")
    if isinstance(value, (list, tuple)):
        from ..creation import tensor as _tensor

        value = _tensor(value, dtype=self.dtype, device=self.device)
    self._inplace("__setitem__", lambda x, v: IndexPut.apply(x, k, v), value)


def _scatter_view(base, value, vf):
    """base with the region of view chain ``vf`` replaced by ``value`` (for in-place ops on views)."""
    return ScatterView.apply(base, value, vf)


class ScatterView(Function):
    _raw = True
    op_name = "copy_slices"

    @staticmethod
    def forward(ctx, base, value, vf):
        out = ctx.xp.array(base, copy=True)
        region = _replay_raw(vf, out)
        region[...] = value
        ctx.vf = vf
        return out

    @staticmethod
    def backward(ctx, g):
        from ..tensor import replay_view

        # the chain may hold as_strided, which addresses storage: replay it on a contiguous gradient
        g = g.contiguous()
        gb = _scatter_view(g, 0.0, ctx.vf) if ctx.needs_input_grad[0] else None
        gv = replay_view(ctx.vf, g) if ctx.needs_input_grad[1] else None
        return gb, gv, None


def _replay_raw(vf, arr):
    cls, rest, parent = vf
    base = arr if parent is None else _replay_raw(parent, arr)
    from ..autograd.function import _NoGradCtx

    ctx = _NoGradCtx()
    from .. import _backend

    ctx.xp = _backend.xp_of(arr)
    ctx.needs_input_grad = ()
    return cls.forward(ctx, base, *rest)


# --- raw helpers shared with index/linalg --------------------------------------------------------
def as_strided_raw(xp, x, shape, strides):
    """A writable view of ``x``'s memory with ``shape`` and byte ``strides``, starting at x's first element.

    >>> import numpy as np
    >>> as_strided_raw(np, np.arange(4.0), (2,), (16,))
    array([0., 2.])
    """
    r = xp.lib.stride_tricks.as_strided(x, shape=tuple(shape), strides=tuple(strides))
    if type(r) is not type(x):  # the fake cupy's arrays are an ndarray subclass that keeps its device
        r = r.view(type(x))
        r.__array_finalize__(x)
    return r


def ufunc_at(xp, name, out, key, values):
    """``xp.<name>.at(out, key, values)``: unbuffered in-place scatter where repeated indices all count.

    >>> import numpy as np
    >>> out = np.zeros(2); ufunc_at(np, "add", out, np.array([1, 1]), 1.0); out
    array([0., 2.])
    """
    at = getattr(getattr(xp, name), "at", None)
    if at is not None:
        if xp is _backend.numpy:
            at(out, key, values)
            return
        try:
            at(out, key, values)
            return
        except NotImplementedError:  # CuPy implements ufunc.at for add/subtract/maximum/minimum only
            pass
    np = _backend.numpy
    if getattr(xp, "__fake__", False):  # NumPy's ufuncs dispatch to the fake device arrays
        getattr(np, name).at(out, key, values)
        return
    # a CuPy without this ufunc.at: do it on the host (correct, slower)
    hkey = tuple(k.get() if hasattr(k, "get") else k for k in key) if isinstance(key, tuple) else (
        key.get() if hasattr(key, "get") else key)
    host = out.get()
    getattr(np, name).at(host, hkey, values.get() if hasattr(values, "get") else values)
    out[...] = xp.asarray(host)


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
    """A view made with as_strided; subclasses give ``_view_of(xp, x, *args) -> view``."""

    _raw = True
    _view = True

    @classmethod
    def forward(cls, ctx, x, *args):
        y = cls._view_of(ctx.xp, x, *args)
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


def diag(input, diagonal=0):
    """A 1-D input's values on a matrix diagonal, or a 2-D input's diagonal as a new 1-D tensor.

    >>> import workbench as wb
    >>> wb.diag(wb.tensor([[1, 2], [3, 4]]))
    tensor([1, 4])
    """
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.ndim == 2:
        from .convert import clone

        return clone(globals()["diagonal"](input, diagonal, 0, 1))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


class Unfold(_StridedView):
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


# --- copying reshapes ----------------------------------------------------------------------------
def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims start_dim..end_dim into one.  >>> wb.zeros(2, 3, 4).flatten(1).shape  ->  Size([2, 12])"""
    n = input._data.ndim
    if n == 0:
        return reshape(input, (1,))
    s, e = wrap_dim(start_dim, n), wrap_dim(end_dim, n)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shp = input.shape
    return reshape(input, tuple(shp[:s]) + (_prod(shp[s:e + 1]),) + tuple(shp[e + 1:]))


def _prod(xs):
    p = 1
    for v in xs:
        p *= v
    return p


def ravel(input):
    """The elements as a 1-D tensor (a view when contiguous).  >>> wb.zeros(2, 3).ravel().shape"""
    return reshape(input, (-1,))


def unflatten(input, dim, sizes):
    """Split one dim into ``sizes`` (one may be -1).  >>> wb.zeros(2, 6).unflatten(1, (2, 3)).shape"""
    d = wrap_dim(dim, input._data.ndim)
    sizes = tuple(int(s) for s in sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    inner = _infer_shape(sizes, input.shape[d], "unflatten")
    return reshape(input, tuple(input.shape[:d]) + inner + tuple(input.shape[d + 1:]))


def view_as(input, other):
    """View with other's shape.  >>> wb.arange(4).view_as(wb.zeros(2, 2)).shape  ->  Size([2, 2])"""
    return view(input, tuple(other.shape))


def reshape_as(input, other):
    """Reshape to other's shape.  >>> wb.arange(4).reshape_as(wb.zeros(2, 2)).shape  ->  Size([2, 2])"""
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
    """The shape all ``shapes`` broadcast to.  >>> wb.broadcast_shapes((2, 1), (3,))  ->  Size([2, 3])"""
    from ..tensor import Size

    out = []
    for shp in shapes:
        shp = (shp,) if isinstance(shp, int) else tuple(shp)
        for i, s in enumerate(reversed(shp)):
            if s < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shp)}")
            if i >= len(out):
                out.append(s)
            elif out[i] == 1:
                out[i] = s
            elif s != 1 and s != out[i]:
                raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape. "
                                   f"Mismatch is between {list(shapes)}: size {s} vs {out[i]} at dim -{i + 1}")
    return Size(reversed(out))


def broadcast_tensors(*tensors):
    """Expand every tensor to their common broadcast shape (views).

    >>> import workbench as wb
    >>> [t.shape for t in wb.broadcast_tensors(wb.zeros(2, 1), wb.zeros(3))]
    [workbench.Size([2, 3]), workbench.Size([2, 3])]
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = tuple(broadcast_shapes(*[t.shape for t in tensors]))
    return tuple(t if tuple(t.shape) == shape else Expand.apply(t, shape) for t in tensors)


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
        from .convert import clone

        out = clone(out)
    return out


def tile(input, dims):
    """repeat() that prepends 1s when ``dims`` is shorter than input.ndim.  >>> wb.tensor([1, 2]).tile((2,))"""
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
    from .. import creation

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
        from .index import index_select

        return index_select(input, d, idx)
    repeats = int(repeats)
    if repeats < 0:
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    x = unsqueeze(input, d + 1)
    shape = list(x.shape)
    shape[d + 1] = repeats
    return flatten(Expand.apply(x, tuple(shape)), d, d + 1)


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
    from .elementwise import _out

    return _out(r, out)


concat = concatenate = cat


def stack(tensors, dim=0, *, out=None):
    """Join same-shaped tensors along a new dim.  >>> wb.stack([wb.zeros(3), wb.ones(3)]).shape  ->  Size([2, 3])"""
    ts = _tensor_list(tensors, "stack")
    if not ts:
        raise RuntimeError("stack expects a non-empty TensorList")
    r = Stack.apply(*ts, wrap_dim(dim, ts[0].ndim + 1))
    if out is None:
        return r
    from .elementwise import _out

    return _out(r, out)


def atleast_1d(*tensors):
    """Each tensor with at least one dim (0-d become shape [1]).  >>> wb.atleast_1d(wb.tensor(1.)).shape"""
    return _atleast(tensors, 1)


def atleast_2d(*tensors):
    """Each tensor with at least two dims.  >>> wb.atleast_2d(wb.tensor([1, 2])).shape  ->  Size([1, 2])"""
    return _atleast(tensors, 2)


def atleast_3d(*tensors):
    """Each tensor with at least three dims.  >>> wb.atleast_3d(wb.tensor([1, 2])).shape  ->  Size([1, 2, 1])"""
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
    """Concatenate column-wise (dim 0 for 1-D inputs, else dim 1).  >>> wb.hstack([wb.zeros(2), wb.ones(3)])"""
    ts = atleast_1d(list(tensors))
    return cat(ts, 0 if ts[0].ndim == 1 else 1, out=out)


def vstack(tensors, *, out=None):
    """Concatenate row-wise after atleast_2d.  >>> wb.vstack([wb.zeros(3), wb.ones(3)]).shape  ->  Size([2, 3])"""
    return cat(atleast_2d(list(tensors)), 0, out=out)


row_stack = vstack


def dstack(tensors, *, out=None):
    """Concatenate depth-wise after atleast_3d.  >>> wb.dstack([wb.zeros(2), wb.ones(2)]).shape  ->  Size([1, 2, 2])"""
    return cat(atleast_3d(list(tensors)), 2, out=out)


def column_stack(tensors, *, out=None):
    """Stack 1-D tensors as columns.  >>> wb.column_stack([wb.zeros(2), wb.ones(2)]).shape  ->  Size([2, 2])"""
    ts = [reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t for t in _tensor_list(tensors, "column_stack")]
    return cat(ts, 1, out=out)


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
    return GetItem.apply(input, key)


def select(input, dim, index):
    """The slice at ``index`` along ``dim``, that dim removed (a view).  >>> wb.arange(6).view(2, 3).select(1, 0)"""
    n = input._data.ndim
    if n == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, n)
    size = input.shape[d]
    index = int(index)
    if index < -size or index >= size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
                         f"dimension {d}")
    return GetItem.apply(input, (slice(None),) * d + (index % size, Ellipsis))


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
    else:
        sizes = [int(v) for v in split_size_or_sections]
        if sum(sizes) != n or any(v < 0 for v in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {d}), but got split_sizes={sizes}")
    out, off = [], 0
    for s in sizes:
        out.append(narrow(tensor, d, off, s))
        off += s
    return tuple(out)


def split_with_sizes(input, split_sizes, dim=0):
    """split() with a list of sizes.  >>> wb.arange(5).split_with_sizes([2, 3], 0)"""
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
    """The slices along ``dim`` as a tuple of views.  >>> [t.tolist() for t in wb.eye(2).unbind()]"""
    d = wrap_dim(dim, input._data.ndim)
    return tuple(GetItem.apply(input, (slice(None),) * d + (i, Ellipsis)) for i in range(input.shape[d]))


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


def flip(input, *dims):
    """Reverse the order along ``dims`` (a copy, as in PyTorch).  >>> wb.flip(wb.tensor([1, 2, 3]), [0])"""
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
    """Flip left-right (dim 1).  >>> wb.fliplr(wb.eye(2))"""
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
    """Rotate elements along dims (flattened when dims is None).  >>> wb.roll(wb.tensor([1, 2, 3]), 1)"""
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
    """Rotate by 90 degrees k times in the plane of ``dims``.  >>> wb.rot90(wb.tensor([[1, 2], [3, 4]]))"""
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
    from .convert import clone

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


def tril(input, diagonal=0):
    """Zero the elements above the ``diagonal``-th diagonal.  >>> wb.tril(wb.ones(2, 2))"""
    if input.ndim < 2:
        raise RuntimeError(f"tril: input tensor must have at least 2 dimensions, got shape {list(input.shape)}")
    return Tri.apply(input, int(diagonal), False)


def triu(input, diagonal=0):
    """Zero the elements below the ``diagonal``-th diagonal.  >>> wb.triu(wb.ones(2, 2))"""
    if input.ndim < 2:
        raise RuntimeError(f"triu: input tensor must have at least 2 dimensions, got shape {list(input.shape)}")
    return Triu.apply(input, int(diagonal), True)


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
        import warnings

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


# --- padding (re-exported as workbench.nn.functional.pad) ------------------------------------------
class ConstantPad(Function):
    _raw = True
    op_name = "constant_pad_nd"

    @staticmethod
    def forward(ctx, x, pads, value):
        ctx.pads = pads
        n = len(pads) // 2
        shape = list(x.shape)
        src, dst = [slice(None)] * x.ndim, [slice(None)] * x.ndim
        for i in range(n):
            d = x.ndim - 1 - i
            lo, hi = pads[2 * i], pads[2 * i + 1]
            size = shape[d] + lo + hi
            if size < 0:
                raise RuntimeError(f"The input size {shape[d]}, plus negative padding {lo} and {hi} resulted in a "
                                   f"negative output size, which is invalid. Check dimension {d} of your input.")
            src[d] = slice(max(-lo, 0), shape[d] - max(-hi, 0))
            dst[d] = slice(max(lo, 0), max(lo, 0) + max(shape[d] - max(-lo, 0) - max(-hi, 0), 0))
            shape[d] = size
        out = ctx.xp.full(tuple(shape), value, dtype=x.dtype)
        out[tuple(dst)] = x[tuple(src)]
        return out

    @staticmethod
    def backward(ctx, g):
        return ConstantPad.apply(g, tuple(-p for p in ctx.pads), 0), None, None


def _pad_index(mode, n, lo, hi):
    idx = list(range(-lo, n + hi))
    if mode == "reflect":
        return [(-i if i < 0 else (2 * (n - 1) - i if i >= n else i)) for i in idx]
    if mode == "replicate":
        return [min(max(i, 0), n - 1) for i in idx]
    return [i % n for i in idx]  # circular


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dims: ``pad = (last_lo, last_hi, prev_lo, prev_hi, ...)``.

    Modes: 'constant' (with ``value``, negative pads crop), 'reflect', 'replicate', 'circular'.
    ``workbench.nn.functional.pad`` is this function.

    >>> import workbench as wb
    >>> from workbench.ops.shape import pad
    >>> pad(wb.tensor([[1., 2.]]), (1, 1), mode='reflect')
    tensor([[2., 1., 2., 1.]])
    """
    pads = tuple(int(p) for p in pad)
    if len(pads) % 2:
        raise RuntimeError(f"Padding length must be divisible by 2, got pad={list(pads)}")
    if len(pads) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but "
                           f"got padding length {len(pads)} and input of dimension {input.ndim}")
    if mode == "constant":
        return ConstantPad.apply(input, pads, 0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        # PyTorch's type for this input error
        raise NotImplementedError(f"Unrecognised padding mode {mode}: use 'constant', 'reflect', 'replicate' or "
                                  "'circular'")
    if value is not None and value != 0:
        raise ValueError(f"Padding mode \"{mode}\" doesn't take in value argument")
    from .. import creation
    from .index import index_select

    x = input
    for i in range(len(pads) // 2):
        d = input.ndim - 1 - i
        lo, hi = pads[2 * i], pads[2 * i + 1]
        n = x.shape[d]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({lo}, {hi}) at dimension {d} of input {list(input.shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError(f"Padding value causes wrapping around more than once: padding ({lo}, {hi}) at "
                               f"dimension {d} of input {list(input.shape)}")
        if mode == "replicate" and n == 0:
            raise RuntimeError(f"pad: replicate padding of an empty dimension {d} of input {list(input.shape)}")
        if lo or hi:
            idx = creation.tensor(_pad_index(mode, n, lo, hi), dtype=_dt.int64, device=x.device)
            x = index_select(x, d, idx)
    return x


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
    """Split row-wise (dim 0) a tensor of at least 2 dims.  >>> [t.shape for t in wb.vsplit(wb.zeros(4, 2), [1])]"""
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


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """input with its diagonal ``(offset, dim1, dim2)`` replaced by src (out of place).

    >>> import workbench as wb
    >>> wb.diagonal_scatter(wb.zeros(2, 2), wb.ones(2))
    tensor([[1., 0.],
            [0., 1.]])
    """
    from .elementwise import where

    region = diagonal(input, offset, dim1, dim2)
    _check_scatter_src("diagonal_scatter", region, src)
    n = input.ndim
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    shape = tuple(input.shape)
    placed = _embed_diagonal(src.to(input.dtype), shape, int(offset), d1, d2)
    xp = _backend.xp_of(input._data)
    mask = _embed_diagonal(Tensor._make(xp.ones(tuple(region.shape), dtype=bool)), shape, int(offset), d1, d2)
    return where(mask, placed, input)


def _check_scatter_src(op, region, src):
    if tuple(region.shape) != tuple(src.shape):
        raise RuntimeError(f"{op}: expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(region.shape)}")


def narrow_copy(input, dim, start, length):
    """narrow() as a new tensor.  >>> wb.narrow_copy(wb.arange(4), 0, 1, 2)  ->  tensor([1, 2])"""
    from .convert import clone

    return clone(narrow(input, dim, start, length))


def diagflat(input, offset=0):
    """The flattened input on a diagonal of a 2-D tensor.  >>> wb.diagflat(wb.tensor([[1, 2]]))"""
    return diag_embed(reshape(input, (-1,)), offset, 0, 1)


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
        from .. import creation

        return creation.zeros(1, 0)
    width = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        rows.append(ConstantPad.apply(m, (left, width - left - m.shape[1]), 0))
        left += m.shape[1]
    return cat(rows, 0)


def adjoint(input):
    """The conjugate transpose of the last two dims (a view for real tensors).  >>> wb.adjoint(wb.zeros(2, 3)).shape"""
    if input.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.ndim}-D tensor.")
    m = transpose(input, -2, -1)
    return m.conj() if input.is_complex() else m


def _tri_indices(row, col, offset, dtype, device, upper):
    from .. import creation

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
    import itertools

    from .. import creation
    from .index import index_select

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


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """input with the elements that ``as_strided(size, stride, storage_offset)`` would view set from src.

    >>> import workbench as wb
    >>> wb.as_strided_scatter(wb.zeros(4), wb.ones(2), (2,), (2,))
    tensor([1., 0., 1., 0.])
    """
    from .convert import clone

    base = clone(input).contiguous()
    region = as_strided(base, size, stride, storage_offset)
    _check_scatter_src("as_strided_scatter", region, src)
    return ScatterView.apply(base, src, region._view_fn)


__all__ = ["reshape", "transpose", "swapaxes", "swapdims", "t", "permute", "broadcast_to", "squeeze", "unsqueeze",
           "index_put", "diagonal", "diag_embed", "diag", "as_strided", "flatten", "ravel", "unflatten", "movedim",
           "moveaxis", "broadcast_shapes", "broadcast_tensors", "tile", "repeat_interleave", "cat", "concat",
           "concatenate", "stack", "atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "row_stack",
           "dstack", "column_stack", "narrow", "select", "split", "chunk", "tensor_split", "unbind", "flip",
           "fliplr", "flipud", "roll", "rot90", "tril", "triu", "meshgrid", "cartesian_prod", "hsplit", "vsplit",
           "dsplit", "select_scatter", "slice_scatter", "diagonal_scatter", "narrow_copy", "diagflat", "block_diag",
           "adjoint", "tril_indices", "triu_indices", "combinations", "as_strided_scatter"]
METHODS = {
    "__getitem__": getitem, "__setitem__": setitem, "reshape": reshape, "view": view, "transpose": transpose,
    "swapaxes": transpose, "swapdims": transpose, "t": t, "permute": permute, "expand": expand,
    "expand_as": expand_as, "broadcast_to": broadcast_to, "sum_to_size": sum_to_size, "squeeze": squeeze,
    "unsqueeze": unsqueeze, "index_put": index_put, "diagonal": diagonal, "diag_embed": diag_embed, "diag": diag,
    "unfold": unfold, "as_strided": as_strided, "flatten": flatten, "ravel": ravel, "unflatten": unflatten,
    "view_as": view_as, "reshape_as": reshape_as, "movedim": movedim, "moveaxis": movedim, "repeat": repeat,
    "tile": tile, "repeat_interleave": repeat_interleave, "narrow": narrow, "select": select, "split": split,
    "split_with_sizes": split_with_sizes, "chunk": chunk, "tensor_split": tensor_split, "unbind": unbind,
    "flip": flip, "fliplr": fliplr, "flipud": flipud, "roll": roll, "rot90": rot90, "tril": tril, "triu": triu,
    "hsplit": hsplit, "vsplit": vsplit, "dsplit": dsplit, "select_scatter": select_scatter,
    "slice_scatter": slice_scatter, "diagonal_scatter": diagonal_scatter, "narrow_copy": narrow_copy,
    "diagflat": diagflat, "adjoint": adjoint, "as_strided_scatter": as_strided_scatter,
    "squeeze_": _metadata_inplace("squeeze_", squeeze), "unsqueeze_": _metadata_inplace("unsqueeze_", unsqueeze),
    "transpose_": _metadata_inplace("transpose_", transpose), "swapaxes_": _metadata_inplace("swapaxes_", transpose),
    "swapdims_": _metadata_inplace("swapdims_", transpose), "t_": _metadata_inplace("t_", t),
    "as_strided_": _metadata_inplace("as_strided_", as_strided),
}
INPLACE = ("index_put", "tril", "triu")
