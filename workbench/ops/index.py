"""Indexing ops: x[key], x[key] = v, index_put, gather/scatter, index_*, masked_*, take, put, sort/topk,
unique, searchsorted, bincount; TakeRows/PutRows, the row gather/scatter of pooling, embedding and nll.

Most are the keyed get/put primitives (``GetItem``/``IndexPut``, also ``x[key]`` and ``x[key] = v``) with
an index key built here, under their own op name: one gradient rule (scatter-add back, repeated indices
accumulating) serves them all. Ops that return indices (sort, nonzero, unique...) give integer tensors
that take no gradient.
"""
import collections
import collections.abc
import warnings

from .. import _backend, creation
from .._backend import dtypes as _dt
from .._broadcast import basic_index, infer_size
from .._core import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..creation import tensor as _tensor
from ._autocast import AUTOCAST as _AUTOCAST
from ._autocast import cast as _autocast_cast
from ._util import _out, _outs, array_step, no_derivative, ufunc_at, wrap_dim, writes_out
from .elementwise import where
from .views import Expand, broadcast_tensors, reshape


def _named(name, fields):
    cls = collections.namedtuple(name, fields)
    cls.__module__ = "workbench.return_types"
    return cls


SortResult = _named("sort", ["values", "indices"])
TopkResult = _named("topk", ["values", "indices"])
KthvalueResult = _named("kthvalue", ["values", "indices"])


# --- x[key] and x[key] = v: the keyed get/put primitives ------------------------------------------
def _convert_key(key, x):
    """A Python/Tensor index as one the array library understands (Tensors become arrays)."""
    if type(key) is list and len(key) < 32 and any(
            isinstance(k, (Tensor, list, tuple, slice)) or k is None or k is Ellipsis for k in key):
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
            d = _backend.to_device(d, x.device)
        if d.dtype.kind not in "biu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if d.ndim == 0 and d.dtype.kind in "iu" and d.dtype.itemsize > 1 and d.__class__ is _backend.ndarray:
            return int(d)  # a 0-d integer tensor indexes as the integer it holds (a view, SelectBackward0: PyTorch's)
        return d
    if isinstance(k, (list, range, tuple, collections.abc.Sequence)) and not isinstance(k, (str, bytes)):
        # any sequence of integers is an index array, as in PyTorch: logprobs[range(n), Yb], x[(0, 2), :]
        xp = _backend.xp_of(x._data)
        arr = xp.asarray(_backend.numpy.asarray(k if isinstance(k, list) else list(k)))
        if arr.dtype.kind not in "biu" and arr.size:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return arr.astype(_backend.numpy.int64) if arr.size == 0 else arr
    if k is None or k is Ellipsis or isinstance(k, (int, slice)):
        if isinstance(k, slice) and k.step is not None and k.step <= 0:
            raise ValueError("step must be greater than zero")
        return k
    if isinstance(k, _backend.numpy.integer):  # a NumPy integer is an int (np.bool_ stays a mask)
        return int(k)
    if hasattr(k, "dtype") and hasattr(k, "shape"):  # a NumPy/CuPy array (already converted)
        return k
    if hasattr(k, "__index__"):
        return k.__index__()
    raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                     f"valid indices (got {type(k).__name__})")


_PLAIN = frozenset((int, slice, type(None), type(Ellipsis)))


def _torch_order(key, ndim):
    """None where NumPy and PyTorch put an advanced index's dims in the same place, else (n, p): the first n
    dims of NumPy's result belong at p in PyTorch's. They differ where only integers, or an Ellipsis that spans
    no dim, keep the index arrays apart (``x[0, :, idx]``: PyTorch (3, 2), NumPy (2, 3)). PyTorch applies
    integers first (each removes its dim; a 0-d integer tensor counts as one), so its index arrays are adjacent
    and their dims stay in place; to NumPy an integer is an index array too, and index arrays that are not
    adjacent, an Ellipsis between them or not, put their dims first."""
    if key.__class__ is not tuple:
        return None
    for k in key:  # (every basic key: ints, slices, None and Ellipsis only)
        if k.__class__ not in _PLAIN:
            break
    else:
        return None
    arrays = ints = ellipsis = None
    for i, k in enumerate(key):
        c = k.__class__
        if c is int:
            ints = (ints or []) + [i]
        elif c is slice or k is None:
            continue
        elif k is Ellipsis:
            ellipsis = i
        elif c is bool or k.ndim or k.dtype.kind == "b":
            arrays = (arrays or []) + [i]
        else:  # a 0-d integer array
            ints = (ints or []) + [i]
    if arrays is None or len(arrays) + len(ints or ()) < 2:
        return None
    adv = sorted(arrays + (ints or []))
    if adv[-1] - adv[0] + 1 == len(adv):
        return None  # adjacent for NumPy, then for PyTorch too, at the same place
    consumed = sum(k.ndim if hasattr(k, "dtype") and k.dtype.kind == "b" else
                   0 if k is None or k is Ellipsis or k.__class__ is bool else 1 for k in key)
    gone = set(ints or ())
    if ellipsis is not None and ndim == consumed:
        gone.add(ellipsis)  # it spans no dim
    rest = [i for i in range(len(key)) if i not in gone]
    where = [rest.index(i) for i in arrays]
    if where[-1] - where[0] + 1 != len(where):
        return None  # apart for both: both put the dims first
    p = sum(ndim - consumed if key[i] is Ellipsis else 1 for i in range(arrays[0]) if i not in gone)
    n = max(1 if key[i].__class__ is bool or key[i].dtype.kind == "b" else key[i].ndim for i in arrays)
    return (n, p) if p else None


def _to_torch(xp, y, order):
    """An advanced index's result (or a gradient there) moved from NumPy's dims order to PyTorch's."""
    n, p = order
    return xp.ascontiguousarray(xp.moveaxis(y, tuple(range(n)), tuple(range(p, p + n))))


def _to_numpy(xp, y, order):
    n, p = order
    return xp.moveaxis(y, tuple(range(p, p + n)), tuple(range(n)))


def _value_in_numpy_order(xp, v, shape, order):
    """A value stored through an index whose dims PyTorch orders differently (``_torch_order``): broadcast to
    the indexed region's shape in PyTorch's order (``shape``, NumPy's order), then put in NumPy's."""
    n, p = order
    want = shape[n:n + p] + shape[:n] + shape[n + p:]
    try:
        vb = xp.broadcast_to(v, want)
    except ValueError as e:
        raise _shape_mismatch(v, want, e) from None
    return _to_numpy(xp, vb, order)


def _region_shape(out, key):
    """The shape of ``out[key]``, from the index arrays alone where they name every dim (scatter's grid key), else
    by indexing (a gather of the whole region, only for its shape)."""
    if key.__class__ is tuple and len(key) == out.ndim and all(
            hasattr(k, "dtype") and k.dtype.kind in "iu" for k in key):
        return _backend.numpy.broadcast_shapes(*(k.shape for k in key))
    return out[key].shape


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
            y = x[key]
        except IndexError as e:
            raise IndexError(f"{e} (indexing a tensor of shape {list(x.shape)})") from None
        b = y.base
        if b is not None and (b is x or b is x.base):  # a view: a basic index (no index arrays)
            if key.__class__ is tuple and None in key and y.size:
                # NumPy gives the dims None adds stride 0; PyTorch's unsqueeze the stride of the dim they precede
                # times its size (as a reshape inserting them), which .stride() and .view() see
                y = x[tuple([k for k in key if k is not None])].reshape(y.shape)
            return y
        order = _torch_order(key, x.ndim)
        return y if order is None else _to_torch(ctx.xp, y, order)

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
            order = _torch_order(key, len(shape))
            ufunc_at(xp, "add", out, key, g if order is None else _to_numpy(xp, g, order))
        return out

    @staticmethod
    def backward(ctx, gg):
        return gg[ctx.key], None, None  # (a Tensor's index: GetItem, in PyTorch's order)


# Basic indexing under PyTorch's node names. PyTorch applies a basic key's parts one view at a time (select for
# an int, slice for a range, unsqueeze for None; full ranges skipped, alias when nothing is left), so its
# result's grad_fn is the last of those; an advanced key's is IndexBackward0. workbench records one node for
# the whole key (GetItem's gather and scatter), named as PyTorch names that last view: x[0] is
# SelectBackward0, x[:, 2:5] SliceBackward0, x[None] UnsqueezeBackward0, as print(y.grad_fn) and the viewer
# show them. The op (``_op``, "index") stays GetItem's.
SelectKey, SliceKey, UnsqueezeKey, AliasKey = (
    type(f"{v}Key", (GetItem,), {"node_name": f"{v}Backward0", "__module__": __name__})
    for v in ("Select", "Slice", "Unsqueeze", "Alias"))


def basic_key_op(key):
    """The GetItem primitive named after the last view PyTorch's basic indexing by ``key`` (a tuple of ints,
    slices, None and Ellipsis) applies; GetItem itself (IndexBackward0) where a part is a bool."""
    last = AliasKey
    for k in key:
        c = k.__class__
        if c is int:
            last = SelectKey
        elif c is slice:
            if not (k.start is None and k.stop is None and k.step is None):
                last = SliceKey
        elif k is None:
            last = UnsqueezeKey
        elif k is not Ellipsis:  # a bool (an advanced index in PyTorch), an int subclass
            return GetItem if c is bool else SelectKey
    return last


def getitem(input, key):
    """NumPy-style indexing: basic indices give views, advanced ones copies; both differentiable.

    >>> import workbench as wb
    >>> wb.arange(6).view(2, 3)[1, ::2]
    tensor([3, 5])
    """
    key = _convert_key(key, input)
    if _is_basic(key):  # a trailing Ellipsis makes NumPy return a 0-d view rather than a scalar copy
        if key.__class__ is slice:  # a lone range: PyTorch slices, even x[:]
            return SliceKey.apply(input, (key, Ellipsis))
        ks = key if isinstance(key, tuple) else (key,)
        if Ellipsis not in ks:
            key = ks + (Ellipsis,)
        return basic_key_op(ks).apply(input, key)
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
        order = _torch_order(key, x.ndim)
        if order is not None and hasattr(vv, "shape"):
            vv = _value_in_numpy_order(xp, vv, out[key].shape, order)
        if accumulate:
            ufunc_at(xp, "add", out, key, xp.broadcast_to(vv, _region_shape(out, key)) if hasattr(vv, "shape") else vv)
        else:
            try:
                out[key] = vv
            except ValueError as e:
                raise _shape_mismatch(v, out[key].shape, e) from None
        ctx.v_shape = getattr(v, "shape", None)
        return out

    @staticmethod
    def backward(ctx, g):
        if ctx.accumulate:
            gx = g
        else:
            gx = IndexPut.apply(g, ctx.key, 0.0)
        gv = g[ctx.key] if ctx.needs_input_grad[2] else None  # (GetItem: in PyTorch's order)
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
    k, value = _setitem_args(self, key, value)
    a = self._data
    if (STATE.enabled and (self._rg or isinstance(value, Tensor) and value._rg)
            or a.__class__ is _backend.ndarray and not a.flags.writeable):  # (the general path's error)
        return _store_recorded(self, k, value)
    # nothing records: store the elements where they go, as PyTorch's index_put_ does (IndexPut's result is
    # a copy of the whole tensor: x[i] = v in a loop over a 1M-element tensor took 0.3 ms a store)
    self._check_inplace("__setitem__")
    v = value._data if isinstance(value, Tensor) else value
    if hasattr(v, "dtype"):
        v = v.astype(a.dtype, copy=False)
        order = _torch_order(k, a.ndim)
        if order is not None:
            v = _value_in_numpy_order(_backend.xp_of(a), v, a[k].shape, order)
    try:
        a[k] = v  # NumPy and CuPy copy a source that overlaps the destination first
    except ValueError as e:
        raise _shape_mismatch(value, a[k].shape, e) from None
    self._bump("__setitem__", 2)


def _setitem_recorded(self, key, value):
    """``setitem`` through IndexPut whether or not anything records: what the profiler and the compiler's
    trace call instead, so they see the store as an ``index_put``."""
    _store_recorded(self, *_setitem_args(self, key, value))


setitem._wb_general = _setitem_recorded


def _store_recorded(self, k, value):
    # the generic in-place op around IndexPut (the graph where something requires grad), storing only region k
    if (self._base is not None and STATE.enabled and (self._rg or isinstance(value, Tensor) and value._rg)
            and not self._data.flags.writeable and basic_index(k if k.__class__ is tuple else (k,))):
        # an expanded view on the tape: the store goes into the indexed view, as PyTorch's (x[k] is a view, and
        # copy_ writes it), so only its region is written back (the whole view overlaps itself)
        view = self[k]
        view.copy_(value if isinstance(value, Tensor) else _tensor(value, dtype=self.dtype, device=self.device))
        return
    self._inplace("__setitem__", lambda x, v: IndexPut.apply(x, k, v), value, region=k)


def _setitem_args(self, key, value):
    k = _convert_key(key, self)
    if isinstance(value, Tensor) and value.device != self.device:
        if value.ndim == 0 and value.device.type == "cpu":
            value = value.item()
        else:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{self.device} and {value.device}! (in __setitem__)")
    if isinstance(value, (list, tuple)):
        value = _tensor(value, dtype=self.dtype, device=self.device)
    return k, value


def _shape_mismatch(value, shape, err):
    return RuntimeError(f"shape mismatch: value tensor of shape {list(getattr(value, 'shape', ()))} cannot be "
                        f"broadcast to indexing result of shape {list(shape)} ({err})")


# --- gather / scatter of rows (max pooling, embedding, nll) ---------------------------------------
def _put_rows(xp, g, idx, nrows):
    """zeros(nrows, D) with g's rows added at idx (repeats accumulate); g: idx.shape + (D,)."""
    d = g.shape[-1] if g.ndim > idx.ndim else 1
    flat = idx.reshape(-1)
    if d == 1:
        out = xp.bincount(flat, weights=g.reshape(-1), minlength=nrows)
        return out.astype(g.dtype, copy=False).reshape((nrows,) + g.shape[idx.ndim:])
    pos = (flat[:, None] * d + xp.arange(d)).reshape(-1)
    out = xp.bincount(pos, weights=g.reshape(-1), minlength=nrows * d)
    return out.astype(g.dtype, copy=False).reshape(nrows, d)


class TakeRows(Function):
    """x.reshape(R, D)[idx]: rows of a 2-D view at integer positions (gradient: PutRows)."""

    _raw = True
    op_name = "take_rows"

    @staticmethod
    def forward(ctx, x, idx, unique=False):  # unique: no index repeats, so the gradient is a plain scatter
        ctx.nrows, ctx.unique = x.shape[0], unique
        ctx.save_for_backward(idx)
        return x[idx]

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        return (PutRows.apply(g, idx, ctx.nrows, ctx.unique),) + (None,) * (len(ctx.needs_input_grad) - 1)


class PutRows(Function):
    """zeros(R, D) with g's rows summed into positions idx (gradient: TakeRows)."""

    _raw = True
    op_name = "put_rows"

    @staticmethod
    def forward(ctx, g, idx, nrows, unique=False):
        ctx.save_for_backward(idx)
        if unique and g.ndim == idx.ndim:  # no repeated index: a plain scatter
            out = ctx.xp.zeros(nrows, dtype=g.dtype)
            out[idx.reshape(-1)] = g.reshape(-1)
            return out
        return _put_rows(ctx.xp, g, idx, nrows)

    @staticmethod
    def backward(ctx, gg):
        (idx,) = ctx.saved_tensors
        return TakeRows.apply(gg, idx), None, None, None


# --- keyed primitives under their PyTorch names ---------------------------------------------------
class Gather(Function):
    """out[..., i, ...] = x[..., index[..., i, ...], ...] along ``dim`` (index may be smaller than x)."""

    _raw = True

    @staticmethod
    def forward(ctx, x, idx, dim):
        _check_bounds(idx, x.shape[dim], dim, "gather", RuntimeError)
        ctx.dim, ctx.shape = dim, x.shape
        if any(i != dim and n != m for i, (n, m) in enumerate(zip(idx.shape, x.shape))):
            x = x[tuple(slice(None) if i == dim else slice(0, n) for i, n in enumerate(idx.shape))]
        ctx.save_for_backward(idx)
        return ctx.xp.take_along_axis(x, idx, axis=dim)

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        xp = _backend.xp_of(g._data)
        zero = Tensor._make(xp.zeros(ctx.shape, dtype=g._data.dtype))
        return IndexPut.apply(zero, _grid_key_raw(xp, idx._data, ctx.dim), g, True), None, None


def _bounds_checked(forward, op):
    """``forward`` with the index values along the key's last dim checked first: the ops that take one index
    vector along ``dim`` (index_select, index_add, index_copy, index_fill) refuse what NumPy would wrap (-1), and
    a compiled replay runs the forward, not the public function."""
    def checked(ctx, x, key, *rest):
        d = len(key) - 1
        _check_bounds(key[d], x.shape[d], d, op, IndexError)
        return forward(ctx, x, key, *rest)
    return staticmethod(checked)


class IndexSelect(GetItem):
    _view = False
    op_name = "index_select"

    forward = _bounds_checked(GetItem.forward, "index_select")


class Scatter(IndexPut):
    """IndexPut at the grid key of (index, dim), the key built in the forward from the index array, so that a
    compiled replay builds it from that call's index (built outside, its aranges were arrays no op made)."""

    op_name = "scatter"

    @staticmethod
    def forward(ctx, x, idx, dim, v, accumulate=False):
        # the index values checked here, so that a compiled replay (which runs the forward) raises eager's error
        _check_bounds(idx, x.shape[dim] if x.ndim else 1, dim, "scatter_add" if accumulate else "scatter",
                      RuntimeError)
        return IndexPut.forward(ctx, x, _grid_key_raw(ctx.xp, idx, dim), v, accumulate)

    @staticmethod
    def backward(ctx, g):
        gx = g if ctx.accumulate else IndexPut.apply(g, ctx.key, 0.0)
        gv = g[ctx.key] if ctx.needs_input_grad[3] else None  # (GetItem: in PyTorch's order)
        return gx, None, None, gv, None


class ScatterAdd(Scatter):
    op_name = "scatter_add"


class IndexAdd(IndexPut):
    op_name = "index_add"
    forward = _bounds_checked(IndexPut.forward, "index_add")


class IndexCopy(IndexPut):
    op_name = "index_copy"
    forward = _bounds_checked(IndexPut.forward, "index_copy")


class IndexFill(IndexPut):
    op_name = "index_fill"
    forward = _bounds_checked(IndexPut.forward, "index_fill")


class MaskedScatter(IndexPut):
    op_name = "masked_scatter"


def _check_index(index, op):
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError(f"{op}(): Expected dtype int64 (or int32) for index, but got {index.dtype}")


def _on(arr, t):
    """An index array on tensor t's device."""
    if _backend.device_of(arr) != t.device:
        return _backend.to_device(arr, t.device)
    return arr


def _index_on(index, t):
    """An index tensor on tensor t's device."""
    return index if _backend.device_of(index._data) == t.device else index.to(t.device)


def _grid_key(t, index, dim):
    """The advanced-index key selecting, for every position of ``index``, element index[pos] along dim."""
    return _grid_key_raw(_backend.xp_of(t._data), _on(index._data, t), dim)


def _grid_key_raw(xp, idx, dim):
    key = []
    n = idx.ndim
    for d in range(n):
        if d == dim:
            key.append(idx)
        else:
            sh = [1] * n
            sh[d] = idx.shape[d]
            key.append(xp.arange(idx.shape[d]).reshape(sh))
    return tuple(key)


def _check_gather_like(op, input, dim, index, src=None, bounds=True):
    """bounds=False: the op's forward checks the index values (gather: a compiled replay runs the forward)."""
    _check_index(index, op)
    xs, ix = input._data.shape, index._data.shape
    n = max(len(xs), 1)
    if max(len(ix), 1) != n and index._data.size:
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as input tensor "
                           f"(index {list(ix)}, input {list(xs)})")
    d = dim if type(dim) is int and 0 <= dim < n else wrap_dim(dim, len(xs))
    ss = src._data.shape if src is not None else None
    for k in range(len(ix)):
        if k != d and ix[k] > (xs[k] if xs else 1):
            raise RuntimeError(f"Size does not match at dimension {k} expected index {list(ix)} to be "
                               f"smaller than self {list(xs)} apart from dimension {d}")
        if ss is not None and ix[k] > (ss[k] if ss else 1):
            raise RuntimeError(f"Size does not match at dimension {k} expected index {list(ix)} to be "
                               f"smaller than src {list(ss)}")
    if bounds:
        _check_bounds(index._data, xs[d] if xs else 1, d, op, RuntimeError)
    return d


def _check_bounds(data, size, d, op, exc):
    if data.size and type(data) is _backend.ndarray:  # no device sync on CUDA, as PyTorch asserts on the device
        lo, hi = int(data.min()), int(data.max())
        if lo < 0 or hi >= size:
            bad = lo if lo < 0 else hi
            if exc is IndexError:
                raise IndexError(f"{op}(): index {bad} is out of range for dimension {d} with size {size} "
                                 "(index out of range in self)")
            raise exc(f"index {bad} is out of bounds for dimension {d} with size {size} (in {op})")


def gather(input, dim, index, *, sparse_grad=False, out=None):
    """out[i][j] = input[i][index[i][j]] (for dim=1): values picked along ``dim``.

    >>> import workbench as wb
    >>> wb.gather(wb.tensor([[1, 2], [3, 4]]), 1, wb.tensor([[0, 0], [1, 0]]))
    tensor([[1, 1],
            [4, 3]])
    """

    d = _check_gather_like("gather", input, dim, index, bounds=False)
    if input.ndim == 0:
        return _out(reshape(Gather.apply(reshape(input, (1,)), reshape(index, (-1,)), 0), tuple(index.shape)), out)
    r = Gather.apply(input, index, d)
    return r if out is None else _out(r, out, "same")


def _src_part(src, index):
    # the part of src that index covers (src may be larger than index in every dim)
    if tuple(src.shape) == tuple(index.shape):
        return src
    return GetItem.apply(src, tuple(slice(0, s) for s in index.shape))


@writes_out(dtype="same")
def scatter(input, dim, index, src=None, value=None, *, reduce=None, out=None):
    """out = input with out[i][index[i][j]] = src[i][j] (dim=1); ``value`` for a scalar source.

    ``reduce='add'|'multiply'`` accumulates instead (as scatter_reduce 'sum'/'prod' with include_self).

    >>> import workbench as wb
    >>> wb.zeros(3).scatter(0, wb.tensor([2, 0]), wb.tensor([5., 7.]))
    tensor([7., 0., 5.])
    """
    if src is None and value is None:
        raise TypeError("scatter() missing the 'src' or 'value' argument")
    if not isinstance(src, Tensor) and src is not None:
        value, src = src, None
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce!r}")
        if src is None:
            src = creation.full(tuple(index.shape), value, dtype=input.dtype, device=input.device)
        return scatter_reduce(input, dim, index, src, "sum" if reduce == "add" else "prod")
    d = _check_gather_like("scatter", input, dim, index, src, bounds=False)
    if input.ndim == 0:
        return reshape(scatter(reshape(input, (1,)), 0, reshape(index, (-1,)), None if src is None else reshape(
            src, (-1,)), value), ())
    index = _index_on(index, input)
    if src is None:
        return Scatter.apply(input, index, d, value)
    if src.dtype != input.dtype:
        raise RuntimeError(f"scatter(): Expected self.dtype to be equal to src.dtype (got {input.dtype} and "
                           f"{src.dtype})")
    return Scatter.apply(input, index, d, _src_part(src, index))


def scatter_add(input, dim, index, src):
    """out = input with src added at the positions ``index`` names along ``dim`` (repeats accumulate).

    >>> import workbench as wb
    >>> wb.zeros(3).scatter_add(0, wb.tensor([0, 0, 2]), wb.tensor([1., 2., 3.]))
    tensor([3., 0., 3.])
    """
    if _AUTOCAST[0]:
        input, src = _autocast_cast("scatter_add", input, src)
    d = _check_gather_like("scatter_add", input, dim, index, src, bounds=False)
    if src.dtype != input.dtype:
        raise RuntimeError(f"scatter_add(): Expected self.dtype to be equal to src.dtype (got {input.dtype} and "
                           f"{src.dtype})")
    if input.ndim == 0:
        return reshape(scatter_add(reshape(input, (1,)), 0, reshape(index, (-1,)), reshape(src, (-1,))), ())
    return ScatterAdd.apply(input, _index_on(index, input), d, _src_part(src, index), True)


_REDUCE_UFUNC = {"sum": "add", "prod": "multiply", "mean": "add", "amax": "maximum", "amin": "minimum"}


class _RefuseBackward(Function):
    """The identity, whose backward raises ``message`` (PyTorch's DelayedError): a gradient that is right but
    not differentiable again."""
    _raw = True

    @staticmethod
    def forward(ctx, x, message):
        ctx.message = message
        return ctx.xp.array(x, copy=True)

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError(ctx.message)


class ScatterReduce(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, key, src, reduce, include_self):
        xp = ctx.xp
        out = xp.array(x, copy=True)
        if not include_self:
            ident = {"sum": 0, "mean": 0, "prod": 1}.get(reduce)
            if ident is None:
                info = xp.finfo(x.dtype) if x.dtype.kind in "fc" else xp.iinfo(x.dtype)
                ident = info.min if reduce == "amax" else info.max
                if x.dtype.kind == "f":
                    ident = -xp.inf if reduce == "amax" else xp.inf
            out[key] = ident
        ufunc_at(xp, _REDUCE_UFUNC[reduce], out, key, src)
        count = None
        if reduce == "mean":
            count = xp.zeros(x.shape, dtype=x.dtype if x.dtype.kind in "fc" else "int64")
            ufunc_at(xp, "add", count, key, xp.ones(src.shape, dtype=count.dtype))
            count = count + (1 if include_self else 0)
            c = xp.maximum(count, 1)
            out = (out / c).astype(x.dtype) if x.dtype.kind in "fc" else xp.floor_divide(out, c).astype(x.dtype)
        ctx.key, ctx.reduce, ctx.include_self = key, reduce, include_self
        ctx.save_for_backward(x, src, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, src, out = ctx.saved_tensors
        key, red, inc = ctx.key, ctx.reduce, ctx.include_self
        z = g * 0
        scattered = IndexPut.apply(x * 0 + 1, key, 0.0) == 0 if not inc else None  # positions src wrote to
        if red == "sum":
            gx = g if inc else where(scattered, z, g)
            return gx, None, g[key], None, None
        if red == "mean":
            ones = Tensor._make(src._data * 0 + 1)
            count = IndexPut.apply(x * 0 + (1 if inc else 0), key, ones, True)
            count = where(count == 0, count + 1, count)
            gc = g / count
            gx = gc if inc else where(scattered, z, gc)
            return gx, None, gc[key], None, None
        if red == "prod":
            # the product of every other contributor, from products with the zeros masked to 1 (PyTorch's
            # formulation, so the second derivative is PyTorch's too)
            one = x * 0 + 1
            xs = where(x == 0, one, x)
            gx = where(scattered, z, g) if not inc else g * ScatterReduce.apply(xs, key, src, "prod", True) / xs
            src_zero = src == 0
            n_zeros = IndexPut.apply(x * 0, key, src_zero.to(x.dtype), True)[key]
            single = src_zero & (n_zeros == 1)
            others = ScatterReduce.apply(x, key, where(single, src * 0 + 1, src), "prod", inc)
            gsrc = where(single, (g * others)[key], (g * out)[key] / where(src_zero, src * 0 + 1, src))
            if STATE.enabled and bool((n_zeros > 1).any()):
                gsrc = _RefuseBackward.apply(gsrc, "scatter_reduce(): Double backward is unsupported for src when >1 "
                                                   "zeros in src are scattered to the same position in self")
            return gx, None, gsrc, None, None
        # amax / amin: the gradient is shared evenly among the contributors equal to the result
        hit_x = (x == out).to(g.dtype) if inc else z
        hit_s = (src == out[key]).to(g.dtype)
        count = IndexPut.apply(hit_x, key, hit_s, True)
        gc = g / where(count == 0, count + 1, count)
        gx = gc * hit_x if inc else where(scattered, z, g)
        return gx, None, gc[key] * hit_s, None, None


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """Reduce src into input at ``index`` along ``dim``: 'sum', 'prod', 'mean', 'amax' or 'amin'.

    >>> import workbench as wb
    >>> wb.ones(2).scatter_reduce(0, wb.tensor([0, 0, 1]), wb.tensor([2., 3., 4.]), 'amax')
    tensor([3., 4.])
    """
    if reduce not in _REDUCE_UFUNC:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d = _check_gather_like("scatter_reduce", input, dim, index, src)
    if src.dtype != input.dtype:
        raise RuntimeError(f"scatter_reduce(): Expected self.dtype to be equal to src.dtype (got {input.dtype} and "
                           f"{src.dtype})")
    if input.ndim == 0:
        return reshape(scatter_reduce(reshape(input, (1,)), 0, reshape(index, (-1,)), reshape(src, (-1,)), reduce,
                                      include_self=include_self), ())
    return ScatterReduce.apply(input, _grid_key(input, index, d), _src_part(src, index), reduce, bool(include_self))


def _dim_key(input, dim, index):
    i = index._data
    return (slice(None),) * dim + (_on(i if i.ndim == 1 else i.reshape(-1), input),)


def _check_index_op(op, input, dim, index, source=None, bounds=True):
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index, got {index.dtype}")
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, got a {index.ndim}-D index of shape "
                         f"{list(index.shape)}")
    d = wrap_dim(dim, input.ndim)
    size = input.shape[d] if input.ndim else 1
    if bounds:  # (the forwards of index_select, index_add, index_copy and index_fill check them: _bounds_checked)
        _check_bounds(index._data, size, d, op, IndexError)
    if source is not None:
        want = list(input.shape)
        if want:
            want[d] = index.numel()
        if list(source.shape) != want and not (source.ndim == 0 and index.numel() == 1 and input.ndim <= 1):
            if op == "index_copy" and source.ndim == input.ndim and source.ndim and source.shape[d] != index.numel():
                # PyTorch's index_copy says IndexError here (index_add a RuntimeError)
                raise IndexError(f"{op}_(): Number of indices ({index.numel()}) should be equal to source.size(dim) "
                                 f"({source.shape[d]})")
            raise RuntimeError(f"{op}(): source of shape {list(source.shape)} does not match the expected shape "
                               f"{want} (input {list(input.shape)} with dim {d} of size {index.numel()})")
    return d


def index_select(input, dim, index, *, out=None):
    """The slices of ``input`` at ``index`` along ``dim``.

    >>> import workbench as wb
    >>> wb.index_select(wb.tensor([[1, 2], [3, 4]]), 0, wb.tensor([1, 1]))
    tensor([[3, 4],
            [3, 4]])
    """

    d = _check_index_op("index_select", input, dim, index, bounds=False)
    if input.ndim == 0:
        return _out(IndexSelect.apply(reshape(input, (1,)), _dim_key(input, 0, index)).reshape(index.shape), out)
    return _out(IndexSelect.apply(input, _dim_key(input, d, index)), out, "same")


@writes_out(dtype="same")
def index_add(input, dim, index, source, *, alpha=1, out=None):
    """out = input with alpha * source's slices added at ``index`` along ``dim`` (repeats accumulate).

    >>> import workbench as wb
    >>> wb.zeros(3).index_add(0, wb.tensor([0, 0]), wb.tensor([1., 2.]))
    tensor([3., 0., 0.])
    """
    d = _check_index_op("index_add", input, dim, index, source, bounds=False)
    if input.ndim == 0:
        return reshape(index_add(reshape(input, (1,)), 0, index.reshape(-1), reshape(source, (-1,)), alpha=alpha),
                       ())
    src = source if alpha == 1 else source * alpha
    return IndexAdd.apply(input, _dim_key(input, d, index), src, True)


@writes_out(dtype="same")
def index_copy(input, dim, index, source, *, out=None):
    """out = input with source's slices written at ``index`` along ``dim``.

    >>> import workbench as wb
    >>> wb.zeros(3).index_copy(0, wb.tensor([2]), wb.tensor([5.]))
    tensor([0., 0., 5.])
    """
    if _AUTOCAST[0]:
        input, source = _autocast_cast("index_copy", input, source)
    d = _check_index_op("index_copy", input, dim, index, source, bounds=False)
    if source.dtype != input.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{input.dtype} and (source) {source.dtype}")
    if input.ndim == 0:
        return reshape(index_copy(reshape(input, (1,)), 0, index.reshape(-1), reshape(source, (-1,))), ())
    return IndexCopy.apply(input, _dim_key(input, d, index), source)


def index_fill(input, dim, index, value):
    """out = input with the slices at ``index`` along ``dim`` set to ``value``.

    >>> import workbench as wb
    >>> wb.zeros(3).index_fill(0, wb.tensor([1]), 2.)
    tensor([0., 2., 0.])
    """
    d = _check_index_op("index_fill", input, dim, index, bounds=False)
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    if input.ndim == 0:
        return reshape(index_fill(reshape(input, (1,)), 0, index.reshape(-1), value), ())
    return IndexFill.apply(input, _dim_key(input, d, index), value)


def masked_fill(input, mask, value):
    """input with ``value`` where ``mask`` (broadcast to input's shape) is True.

    >>> import workbench as wb
    >>> wb.zeros(3).masked_fill(wb.tensor([True, False, True]), 1.)
    tensor([1., 0., 1.])
    """
    _check_mask(mask, "masked_fill")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        if value.dtype != input.dtype:
            value = value.to(input.dtype)
    else:
        value = creation._finish(_backend.xp_of(input._data).asarray(value).astype(input._data.dtype), False)
    return where(mask, value, input)  # broadcast as PyTorch's: mask first, then input


def _masked_fill_(self, mask, value):
    """x.masked_fill_(mask, value): the generic in-place op, but a mask that does not broadcast is named as
    PyTorch's in-place form names it, self first (the out-of-place form names the mask first)."""
    try:
        return self._inplace("masked_fill_", masked_fill, mask, value)
    except RuntimeError:
        if isinstance(mask, Tensor):
            infer_size([self.shape, mask.shape])
        raise


def _check_mask(mask, op):
    if not isinstance(mask, Tensor):
        raise TypeError(f"{op}(): argument 'mask' must be Tensor, not {type(mask).__name__}")
    if mask.dtype is not _dt.bool_:
        raise RuntimeError(f"{op}: expected BoolTensor for mask, got {mask.dtype}")


@writes_out(dtype="same")
def masked_select(input, mask, *, out=None):
    """The elements where ``mask`` is True, as a 1-D tensor (input and mask broadcast).

    >>> import workbench as wb
    >>> wb.masked_select(wb.tensor([1, 2, 3]), wb.tensor([True, False, True]))
    tensor([1, 3])
    """

    _check_mask(mask, "masked_select")
    m, x = broadcast_tensors(mask, input)  # PyTorch's order
    return GetItem.apply(x, _on(m._data, x))


def masked_scatter(input, mask, source):
    """input with the positions where ``mask`` is True filled, in order, from ``source``'s elements.

    >>> import workbench as wb
    >>> wb.zeros(3).masked_scatter(wb.tensor([True, False, True]), wb.tensor([1., 2.]))
    tensor([1., 0., 2.])
    """
    _check_mask(mask, "masked_scatter")
    if source.dtype != input.dtype:
        raise RuntimeError(f"masked_scatter_: expected self and source to have same dtypes but got {input.dtype} "
                           f"and {source.dtype}")
    xp = _backend.xp_of(input._data)
    infer_size([mask.shape, input.shape])  # PyTorch's error, in its order, for a mask that does not broadcast
    m = xp.broadcast_to(_on(mask._data, input), input._data.shape)
    k = int(m.sum())
    if k > source.numel():
        raise RuntimeError(f"masked_scatter: the mask selects {k} elements but source has only {source.numel()}")
    vals = GetItem.apply(reshape(source, (-1,)), slice(0, k))
    return MaskedScatter.apply(input, m, vals)


def take(input, index):
    """input treated as 1-D, at ``index`` (result has index's shape).

    >>> import workbench as wb
    >>> wb.take(wb.tensor([[1, 2], [3, 4]]), wb.tensor([0, 3]))
    tensor([1, 4])
    """
    _check_index(index, "take")
    n = input.numel()
    if index.device.type == "cpu" and index.numel():
        lo, hi = int(index._data.min()), int(index._data.max())
        if lo < -n or hi >= n:
            raise IndexError(f"out of range: tried to access index {hi if hi >= n else lo} on a tensor of {n} "
                             "elements.")
    return GetItem.apply(reshape(input, (-1,)), _on(index._data, input))


@writes_out(dtype="same")
def take_along_dim(input, indices, dim=None, *, out=None):
    """Values at ``indices`` along ``dim`` (input and indices broadcast), or of the flattened input.

    >>> import workbench as wb
    >>> x = wb.tensor([[10, 30, 20]])
    >>> wb.take_along_dim(x, x.argsort(dim=1), dim=1)
    tensor([[10, 20, 30]])
    """

    if dim is None:
        return gather(reshape(input, (-1,)), 0, reshape(indices, (-1,)))
    n = input.ndim
    if indices.ndim != n:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {n} dimensions for input, and {indices.ndim} dimensions for indices")
    d = wrap_dim(dim, n)
    shp_x, shp_i = list(input.shape), list(indices.shape)
    for k in range(n):
        if k != d:
            s = max(shp_x[k], shp_i[k])
            if shp_x[k] not in (1, s) or shp_i[k] not in (1, s):
                raise RuntimeError(f"take_along_dim: input {list(input.shape)} and indices {list(indices.shape)} "
                                   f"cannot be broadcast apart from dim {d}")
            shp_x[k] = shp_i[k] = s
    x = input if shp_x == list(input.shape) else Expand.apply(input, tuple(shp_x))
    i = indices if shp_i == list(indices.shape) else Expand.apply(indices, tuple(shp_i))
    return gather(x, d, i)


def put(input, index, source, accumulate=False):
    """input with the flattened positions ``index`` set from ``source`` (added when accumulate).

    >>> import workbench as wb
    >>> wb.zeros(2, 2).put(wb.tensor([3]), wb.tensor([9.]))
    tensor([[0., 0.],
            [0., 9.]])
    """
    _check_index(index, "put")
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    flat = reshape(input, (-1,))
    out = IndexPut.apply(flat, _on(index._data.reshape(-1), input), reshape(source, (-1,)), bool(accumulate))
    return reshape(out, tuple(input.shape))


# --- index-returning ops --------------------------------------------------------------------------
@writes_out(dtype="same")
def nonzero(input, *, out=None, as_tuple=False):
    """Indices of the non-zero elements: an (n, ndim) tensor, or one 1-D tensor per dim with as_tuple.

    >>> import workbench as wb
    >>> wb.nonzero(wb.tensor([0, 3, 0, 4]))
    tensor([[1],
            [3]])
    """
    xp = _backend.xp_of(input._data)

    def indices(a):
        return [i.astype("int64") for i in xp.nonzero(a if a.ndim else a.reshape(1))]

    if as_tuple:
        def nonzero(a):
            return tuple(indices(a))
    else:
        def nonzero(a):
            idx = indices(a)
            if a.ndim == 0:
                return xp.zeros((idx[0].size, 0), dtype="int64")
            return xp.stack(idx, axis=1) if idx else xp.zeros((0, 0), dtype="int64")
    nonzero.value_shaped = True  # workbench.compile checks the count where Python reads it
    return array_step(nonzero, input)


def argwhere(input):
    """Same as nonzero(input).  >>> wb.argwhere(wb.tensor([0, 1]))  ->  tensor([[1]])"""
    return nonzero(input)


def _argsort_raw(xp, x, dim, descending, stable):
    if x.dtype == bool:
        x = x.astype("uint8")
    if x.dtype.kind == "c":
        raise RuntimeError("sort(): complex tensors are not supported (they have no order)")
    if not descending:
        return xp.argsort(x, axis=dim, kind="stable")
    # stable descending: sort the reversed array ascending, then reverse back (NaN first, as PyTorch)
    n = x.shape[dim]
    r = xp.flip(x, axis=dim)
    a = xp.argsort(r, axis=dim, kind="stable")
    return xp.flip(n - 1 - a, axis=dim)


class Sort(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, dim, descending, stable, k):
        xp = ctx.xp
        if x.ndim == 0:
            idx = xp.zeros((), dtype="int64")
            vals = xp.array(x, copy=True)
        else:
            idx = _argsort_raw(xp, x, dim, descending, stable).astype("int64")
            if k is not None:
                idx = xp.ascontiguousarray(xp.take(idx, xp.arange(k[0], k[1]), axis=dim))
            vals = xp.take_along_axis(x, idx, axis=dim)
        ctx.dim = dim
        ctx.in_shape = x.shape
        ctx.save_for_backward(idx)
        ctx.mark_non_differentiable(idx)
        return vals, idx

    @staticmethod
    def backward(ctx, g, gi):
        (idx,) = ctx.saved_tensors
        if not ctx.in_shape:
            return g, None, None, None, None
        zero = Tensor._make(_backend.xp_of(g._data).zeros(ctx.in_shape, dtype=g._data.dtype))
        return zero.scatter(ctx.dim, idx, g), None, None, None, None


def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    """Sorted values and the indices they came from, along ``dim`` (a named tuple: values, indices).

    >>> import workbench as wb
    >>> wb.sort(wb.tensor([3, 1, 2])).values
    tensor([1, 2, 3])
    """
    d = wrap_dim(dim, input.ndim)
    v, i = Sort.apply(input, d, bool(descending), bool(stable), None)
    return _outs(SortResult(v, i), out, "same")  # values of input's dtype, int64 indices, as PyTorch


def argsort(input, dim=-1, descending=False, stable=False, *, out=None):
    """Indices that sort ``input`` along ``dim``.  >>> wb.argsort(wb.tensor([3, 1, 2]))  ->  tensor([1, 2, 0])"""
    d = wrap_dim(dim, input.ndim)
    xp = _backend.xp_of(input._data)
    if input.ndim == 0:
        r = array_step(lambda a: xp.zeros((), dtype="int64"), input)
    else:
        r = array_step(lambda a: _argsort_raw(xp, a, d, bool(descending), bool(stable)).astype("int64"), input)
    return _out(r, out, "same")


def msort(input, *, out=None):
    """Sort along dim 0.  >>> wb.msort(wb.tensor([[2, 1], [1, 2]]))  ->  tensor([[1, 1], [2, 2]])"""
    return _out(sort(input, 0).values, out, "same")


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """The k largest (or smallest) values along ``dim`` and their indices, largest first.

    >>> import workbench as wb
    >>> wb.topk(wb.tensor([1., 5., 3.]), 2).values
    tensor([5., 3.])
    """
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d] if input.ndim else 1
    if k < 0 or k > n:
        raise RuntimeError(f"selected index k out of range: k = {k} for dimension {d} of size {n} (topk)")
    v, i = Sort.apply(input, d, bool(largest), True, (0, int(k)))
    return _outs(TopkResult(v, i), out, "same")


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """The k-th smallest value along ``dim`` (1-based) and its index.

    >>> import workbench as wb
    >>> wb.kthvalue(wb.tensor([4., 1., 3.]), 2).values
    tensor(3.)
    """
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d] if input.ndim else 1
    if k < 1 or k > n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d} of size {n}: k = {k}")
    v, i = Sort.apply(input, d, False, True, (int(k) - 1, int(k)))
    if not keepdim and input.ndim:
        v, i = v.squeeze(d), i.squeeze(d)
    return _outs(KthvalueResult(v, i), out, "same")


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (sorted), with the inverse mapping and counts on request.

    >>> import workbench as wb
    >>> wb.unique(wb.tensor([3, 1, 3, 2]))
    tensor([1, 2, 3])
    """
    xp = _backend.xp_of(input._data)
    x = input._data
    if dim is None:
        u, inv, cnt = xp.unique(x.reshape(-1), return_inverse=True, return_counts=True)
        inv = inv.reshape(x.shape)
    else:
        d = wrap_dim(dim, input.ndim)
        if x.shape[d] == 0:
            u, inv, cnt = x, xp.zeros((0,), "int64"), xp.zeros((0,), "int64")
        else:
            u, inv, cnt = xp.unique(x, return_inverse=True, return_counts=True, axis=d)
            inv = inv.reshape(-1)
    res = [Tensor._make(u)]
    if return_inverse:
        res.append(Tensor._make(inv.astype("int64")))
    if return_counts:
        res.append(Tensor._make(cnt.astype("int64")))
    return res[0] if len(res) == 1 else tuple(res)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive values (or slices along ``dim``).

    >>> import workbench as wb
    >>> wb.unique_consecutive(wb.tensor([1, 1, 2, 2, 1]))
    tensor([1, 2, 1])
    """
    xp = _backend.xp_of(input._data)
    x = input._data
    if dim is None:
        x = x.reshape(-1)
        d = 0
    else:
        d = wrap_dim(dim, input.ndim)
        x = xp.moveaxis(x, d, 0)
    n = x.shape[0]
    if n == 0:
        change = xp.zeros((0,), bool)
    else:
        diff = x[1:] != x[:-1]
        if diff.ndim > 1:
            diff = diff.reshape(diff.shape[0], -1).any(axis=1)
        change = xp.concatenate([xp.ones((1,), bool), diff])
    starts = xp.nonzero(change)[0]
    u = x[starts]
    if dim is not None:
        u = xp.moveaxis(u, 0, d)
    res = [Tensor._make(xp.ascontiguousarray(u))]
    if return_inverse:
        inv = (xp.cumsum(change) - 1).astype("int64")
        res.append(Tensor._make(inv.reshape(input._data.shape) if dim is None else inv))
    if return_counts:
        res.append(Tensor._make(xp.diff(xp.concatenate([starts, xp.asarray([n])])).astype("int64")))
    return res[0] if len(res) == 1 else tuple(res)


@writes_out(dtype="same")
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, out=None, sorter=None):
    """Insertion indices of ``input``'s values into the innermost dim of ``sorted_sequence``.

    >>> import workbench as wb
    >>> wb.searchsorted(wb.tensor([1, 3, 5]), wb.tensor([3, 6]))
    tensor([1, 3])
    """
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    seq = sorted_sequence._data
    xp = _backend.xp_of(seq)
    scalar = not isinstance(input, Tensor)
    vals = xp.asarray(input) if scalar else _on(input._data, sorted_sequence)
    if sorter is not None:
        seq = xp.take_along_axis(seq, _on(sorter._data, sorted_sequence), axis=-1)
    how = "right" if right else "left"
    if seq.ndim <= 1:
        out = xp.searchsorted(seq, vals, side=how)
    else:
        if scalar or vals.shape[:-1] != seq.shape[:-1]:
            raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                               f"dimensions of boundaries tensor and input value tensor must match, but we got "
                               f"boundaries tensor {list(seq.shape)} and input value tensor {list(vals.shape)}")
        s2 = seq.reshape(-1, seq.shape[-1])
        v2 = vals.reshape(-1, vals.shape[-1])
        out = xp.stack([xp.searchsorted(s2[r], v2[r], side=how) for r in range(s2.shape[0])]).reshape(vals.shape)
    return Tensor._make(xp.asarray(out).astype("int32" if out_int32 else "int64"))


@writes_out(dtype="same")
def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket of each value: i with boundaries[i-1] < x <= boundaries[i] (< and >= with right=True).

    >>> import workbench as wb
    >>> wb.bucketize(wb.tensor([1, 4]), wb.tensor([1, 3, 5]))
    tensor([0, 2])
    """
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def bincount(input, weights=None, minlength=0):
    """Count occurrences of each non-negative int (summing ``weights`` instead when given).

    >>> import workbench as wb
    >>> wb.bincount(wb.tensor([0, 2, 2]))
    tensor([1, 0, 2])
    """
    if input.ndim != 1 or input.dtype.category != 1 or input.dtype is _dt.bool_:
        raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs, got {input.ndim}-d "
                           f"{input.dtype}")
    x = input._data
    xp = _backend.xp_of(x)
    if x.size and int(x.min()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is None:
        return Tensor._make(xp.bincount(x, minlength=minlength).astype("int64"))
    if weights.shape != input.shape:
        raise RuntimeError(f"weights should be 1-d and have the same length as input, got {list(weights.shape)}")
    w = _on(weights._data, input)
    out = xp.bincount(x, weights=w, minlength=minlength)
    counts = Tensor._make(out.astype("float32" if w.dtype == "float32" else "float64"))
    return no_derivative("bincount", counts, weights)


def histc(input, bins=100, min=0, max=0, *, out=None):
    """Histogram of ``bins`` equal-width bins over [min, max] (the data's range when both are 0).

    >>> import workbench as wb
    >>> wb.histc(wb.tensor([1., 2., 1.]), bins=4, min=0, max=3)
    tensor([0., 2., 1., 0.])
    """

    if not input.is_floating_point():
        raise RuntimeError(f"\"histogram_cpu\" not implemented for '{input.dtype.name.capitalize()}' (histc needs a "
                           "floating point input)")
    if bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins}")
    x = input._data.reshape(-1)
    xp = _backend.xp_of(x)
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError(f"torch.histc(): max must be larger than min, got min {min} and max {max}")
    counts, _ = xp.histogram(x, bins=bins, range=(lo, hi))
    return _out(Tensor._make(counts.astype(input._data.dtype)), out)


HistogramResult = _named("histogram", ["hist", "bin_edges"])


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """Histogram of ``input`` and its bin edges: ``bins`` equal-width bins (over ``range``, else the data's
    min and max) or a 1-D tensor of increasing edges; ``weight`` sums weights, ``density`` normalises.

    >>> import workbench as wb
    >>> hist, edges = wb.histogram(wb.tensor([1., 2., 1.]), bins=4, range=(0., 3.))
    >>> hist, edges
    (tensor([0., 2., 1., 0.]), tensor([0.0000, 0.7500, 1.5000, 2.2500, 3.0000]))
    """
    if not input.is_floating_point():
        raise RuntimeError(f"\"histogram\" not implemented for '{input.dtype}': histogram needs a floating point "
                           "input (use .float(), or bincount to count integers)")
    x = input._data.reshape(-1)
    xp = _backend.xp_of(x)
    if isinstance(bins, Tensor):
        if bins.ndim != 1 or bins.numel() < 2:
            raise RuntimeError(f"torch.histogram(): bins tensor should have one dimension and at least 2 elements, "
                               f"got shape {list(bins.shape)}")
        if bins.dtype != input.dtype:
            raise RuntimeError(f"torch.histogram: input tensor and bins tensors should have the same dtype, got "
                               f"{input.dtype} and {bins.dtype}")
        edges = _on(bins._data, input)
    else:
        if bins <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif x.size:
            lo, hi = float(x.min()), float(x.max())
        else:
            lo = hi = 0.0
        if lo > hi:
            raise RuntimeError(f"torch.histogram(): min should not exceed max, but got min {lo} max {hi}")
        if lo == hi:  # PyTorch (and NumPy) widen an empty range to [lo - 0.5, hi + 0.5]
            lo, hi = lo - 0.5, hi + 0.5
        edges = xp.linspace(lo, hi, int(bins) + 1).astype(x.dtype)
    w = None
    if weight is not None:
        if weight.shape != input.shape:
            raise RuntimeError(f"torch.histogram(): weight should have the same shape as input, got "
                               f"{list(weight.shape)} and {list(input.shape)}")
        w = _on(weight._data, input).reshape(-1)
    hist, _ = xp.histogram(x, bins=edges, weights=w, density=bool(density))
    hist = no_derivative("histogram", Tensor._make(hist.astype(x.dtype)), input, weight)
    result = HistogramResult(hist, Tensor._make(edges))
    if out is not None:
        _out(result.hist, out[0])
        _out(result.bin_edges, out[1])
        return HistogramResult(out[0], out[1])
    return result


@writes_out(dtype="same")
def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    """Reduce source's slices into input at ``index`` along ``dim``: 'prod', 'mean', 'amax' or 'amin'.

    >>> import workbench as wb
    >>> wb.ones(2).index_reduce(0, wb.tensor([0, 0]), wb.tensor([2., 3.]), 'prod')
    tensor([6., 1.])
    """
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d = _check_index_op("index_reduce", input, dim, index, source)
    if input.ndim == 0:
        return reshape(index_reduce(reshape(input, (1,)), 0, index.reshape(-1), reshape(source, (-1,)), reduce,
                                    include_self=include_self), ())
    # as scatter_reduce, with index broadcast along every other dim of source
    sh = [1] * source.ndim
    sh[d] = index.numel()
    full = index.reshape(tuple(sh)).expand(*source.shape)
    return scatter_reduce(input, d, full, source, reduce, include_self=include_self)


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero() padded with ``fill_value`` (or truncated) to exactly ``size`` rows: a fixed output shape.

    >>> import workbench as wb
    >>> wb.nonzero_static(wb.tensor([0, 3, 4]), size=3)
    tensor([[ 1],
            [ 2],
            [-1]])
    """
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, got {size}")
    nz = nonzero(input)
    xp = _backend.xp_of(nz._data)
    k = nz._data.shape[0]
    if k >= size:
        return Tensor._make(xp.ascontiguousarray(nz._data[:size]))
    pad = xp.full((size - k, nz._data.shape[1]), fill_value, dtype="int64")
    return Tensor._make(xp.concatenate([nz._data, pad]))


def index_put_(input, indices, values, accumulate=False):
    """In-place ``input[indices] = values`` (``+=`` with accumulate).  >>> wb.index_put_(wb.zeros(2), (wb.tensor([1]),), wb.tensor(5.))  ->  tensor([0., 5.])"""
    return input.index_put_(indices, values, accumulate)


def _put_(self, index, source, accumulate=False):
    return self._inplace("put_", lambda x, s: put(x, index, s, accumulate), source)


__all__ = ["gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add", "index_copy",
           "index_fill", "masked_fill", "masked_select", "masked_scatter", "take", "take_along_dim", "put",
           "nonzero", "argwhere", "sort", "argsort", "msort", "topk", "kthvalue", "unique", "unique_consecutive",
           "searchsorted", "bucketize", "bincount", "histc", "histogram", "index_reduce", "nonzero_static", "index_put",
           "index_put_"]
METHODS = {name: globals()[name] for name in __all__ if name not in ("searchsorted", "bucketize", "index_put_")}
METHODS.update({"put_": _put_, "masked_fill_": _masked_fill_, "__getitem__": getitem, "__setitem__": setitem})
INPLACE = ("index_put", "scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy", "index_fill",
           "masked_scatter", "index_reduce")
