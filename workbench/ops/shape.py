"""Shape ops: views (reshape, view, transpose, permute, expand, indexing) and the reductions of
broadcasting (sum_to_size). Views share memory and the version counter with their base."""
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import wrap_dim


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
    shape = _shape_args(shape)
    if tuple(shape) == input._data.shape:
        return Reshape.apply(input, tuple(shape))
    return Reshape.apply(input, tuple(shape))


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
    return Transpose.apply(input, wrap_dim(dim0, n), wrap_dim(dim1, n))


swapaxes = swapdims = transpose


def t(input):
    """Transpose a tensor of at most 2 dims.  >>> wb.zeros(2, 3).t().shape  ->  workbench.Size([3, 2])"""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return input if input.ndim < 2 else transpose(input, 0, 1)


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
    w = tuple(wrap_dim(d, n) for d in dims)
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
            _add_at(xp, out, key, g)
        return out

    @staticmethod
    def backward(ctx, gg):
        return gg[ctx.key], None, None


def _add_at(xp, out, key, values):
    # repeated advanced indices must accumulate; NumPy's add.at does, CuPy spells it scatter_add
    if hasattr(xp, "add") and hasattr(xp.add, "at"):
        xp.add.at(out, key, values)
    else:  # pragma: no cover - real CuPy
        xp.cupyx.scatter_add(out, key, values)


def getitem(input, key):
    """NumPy-style indexing: basic indices give views, advanced ones copies; both differentiable."""
    return GetItem.apply(input, _convert_key(key, input))


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
            _add_at(xp, out, key, xp.broadcast_to(vv, out[key].shape) if hasattr(vv, "shape") else vv)
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
    """Out-of-place ``input[indices] = values`` (``+=`` with accumulate=True)."""
    key = _convert_key(tuple(indices), input)
    return IndexPut.apply(input, key, values, accumulate)


def setitem(self, key, value):
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


__all__ = ["reshape", "transpose", "swapaxes", "swapdims", "t", "permute", "broadcast_to", "squeeze", "unsqueeze",
           "index_put"]
METHODS = {
    "__getitem__": getitem, "__setitem__": setitem, "reshape": reshape, "view": view, "transpose": transpose,
    "swapaxes": transpose, "swapdims": transpose, "t": t, "permute": permute, "expand": expand,
    "expand_as": expand_as, "broadcast_to": broadcast_to, "sum_to_size": sum_to_size, "squeeze": squeeze,
    "unsqueeze": unsqueeze, "index_put": index_put,
}
INPLACE = ("index_put",)
