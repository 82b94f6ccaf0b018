"""Reductions over ``dim`` (int or tuple) with ``keepdim``, scans (cumsum, cummax...), and the ops that
pick one element per slice (max/min with dim, median, mode, cummax/cummin), which return named tuples from
``workbench.return_types``.

Picking ops share one primitive shape: forward finds the indices on raw arrays, and the gradient
scatters back through those indices (``shape.IndexBackward``, which accumulates repeats).
"""
import builtins
import collections
import sys
import types
import warnings

from .. import _backend
from .._backend import dtypes as _dt
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..autograd.graph import composite
from ..creation import full
from .._core import Tensor
from ._autocast import AUTOCAST as _AUTOCAST
from ._autocast import cast as _autocast_cast
from ._util import _out, _outs, array_step, norm_dims, to_float, wrap_dim
from .elementwise import isnan, maximum, minimum, where
from .index import IndexBackward
from .join import cat
from .linalg import matrix_norm

_np = _backend.numpy
_INT64 = _np.dtype("int64")
_F32 = _np.dtype("float32")
_add_reduce = _np.add.reduce
try:  # NumPy 2.3+: out=... makes a full reduction return a 0-d array, not a scalar
    _add_reduce(_np.zeros(1), None, out=...)

    def _sum_all(x):
        """SumAll's whole forward for a floating array (float16 accumulated in float32: see _half)."""
        if x.itemsize == 2:
            return _add_reduce(x, None, dtype=_F32, out=...).astype(x.dtype)
        return _add_reduce(x, None, out=...)
except TypeError:  # older NumPy (2.2 is the last for Python 3.10) gives a scalar: wrap it
    def _sum_all(x):
        if x.itemsize == 2:
            return _np.asarray(_add_reduce(x, None, dtype=_F32)).astype(x.dtype)
        return _np.asarray(_add_reduce(x, None))


# 16-bit floats accumulate in float32 and round once, as PyTorch's (NumPy sums float16 pairwise in float32 only
# along a contiguous axis, and bfloat16 never)
_half = _dt.is_half


def _wide_sum(x, axis, keepdims, acc):
    """x summed in dtype acc, a 16-bit float accumulated in float32 (see _half)."""
    if _half(acc):
        if x.dtype != acc:  # PyTorch converts to dtype first
            x = x.astype(acc)
        return x.sum(axis=axis, keepdims=keepdims, dtype=_F32).astype(acc)
    return x.sum(axis=axis, keepdims=keepdims, dtype=acc)


def _widen(x):
    """x in float32 when it is a 16-bit float (computed there and rounded once, as PyTorch), else x."""
    return x.astype(_F32) if _half(x.dtype) else x

# --- named tuples (torch.return_types) ---------------------------------------------------------------
return_types = types.ModuleType("workbench.return_types", "Named tuples returned by ops such as max(dim) and sort.")
sys.modules.setdefault("workbench.return_types", return_types)


def return_type(name, fields=("values", "indices")):
    """The named tuple ``workbench.return_types.<name>`` (made once, shared by every op family)."""
    cls = getattr(return_types, name, None)
    if cls is None:
        cls = collections.namedtuple(name, fields)
        cls.__module__ = "workbench.return_types"
        cls.__qualname__ = name

        def __repr__(self):
            body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
            return f"workbench.return_types.{type(self).__name__}(\n{body})"

        cls.__repr__ = __repr__
        setattr(return_types, name, cls)
    return cls


def _other_family_type(name):
    # named tuples other families make for themselves (sort, topk...) are found here too
    for mod_name, mod in list(sys.modules.items()):
        if mod_name.startswith("workbench.ops.") and mod is not None:
            for v in vars(mod).values():
                if isinstance(v, type) and issubclass(v, tuple) and v.__name__ == name and \
                        v.__module__ == "workbench.return_types":
                    setattr(return_types, name, v)
                    return v
    raise AttributeError(f"module 'workbench.return_types' has no attribute '{name}'")


return_types.__getattr__ = _other_family_type
for _n in ("max", "min", "median", "nanmedian", "mode", "cummax", "cummin"):
    return_type(_n)
return_type("aminmax", ("min", "max"))


# --- helpers ---------------------------------------------------------------------------------------
def _expand_back(g, in_shape, dims, keepdim):
    # undo a reduction's shape change so the gradient broadcasts over the reduced dims
    if not STATE.enabled:  # no graph to build: a broadcast view of the array (read-only, as PyTorch's expand)
        gd = g._data
        return Tensor._make(_backend.xp_of(gd).broadcast_to(gd.reshape(_kept_shape(in_shape, dims)), in_shape))
    if not in_shape:
        return g
    return g.reshape(_kept_shape(in_shape, dims)).expand(in_shape)


def _kept_shape(in_shape, dims):
    """The shape of a reduction's result with keepdim=True."""
    shape = list(in_shape)
    for d in (range(len(in_shape)) if dims is None else dims):
        shape[d] = 1
    return tuple(shape)


def _keep(t, in_shape, dims, keepdim):
    # a reduced tensor reshaped to broadcast against the input (keepdim=True form)
    if keepdim or not in_shape:
        return t
    return t.reshape(_kept_shape(in_shape, dims))


def _np_mean(x, dims, keepdims, n):
    """NumPy's mean of a floating array over dims (n elements each), its bits, without its Python layers."""
    return _np.true_divide(_np.add.reduce(x, axis=dims, keepdims=keepdims), n)


def _count(shape, dims):
    n = 1
    for d in (range(len(shape)) if dims is None else dims):
        n *= shape[d]
    return n


def _acc_dtype(x, dtype):
    """PyTorch's accumulation dtype for sum/prod/cumsum: integers and bool widen to int64."""
    if dtype is not None:
        return _dt.to_dtype(dtype).np
    d = x.dtype
    return d if d.kind in "fcV" else _INT64


def _empty_error(op, x, dims, exc=RuntimeError):
    # PyTorch: RuntimeError for a full reduction of an empty tensor (IndexError for argmax), IndexError for
    # an empty reduced dim
    if x.size == 0 and (dims is None or builtins.any(x.shape[d] == 0 for d in dims)):
        if dims is None:
            raise exc(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                      f"reduction dim with the 'dim' argument (input shape {list(x.shape)}).")
        raise IndexError(f"{op}(): Expected reduction dim {[d for d in dims if x.shape[d] == 0][0]} to have "
                         f"non-zero size (input shape {list(x.shape)}).")


def _dims(input, dim, op):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    dims = norm_dims(dim, input._data.ndim, op)
    # a 0-d tensor takes dim 0 or -1 (a dim of one element, as PyTorch): reducing it is reducing everything
    return None if dims is not None and not input._data.ndim else dims


def _in_out_dtype(dtype, out):
    """The dtype a sum-like reduction computes in when given ``out=``: ``dtype`` if given (then out must
    have it), else out's (PyTorch's reductions compute in the output's dtype)."""
    return out.dtype if dtype is None else dtype


def _check_nansum_out(input, out, dtype):
    # PyTorch runs a floating input's nansum kernel in out's dtype, which must be dtype= where given, and has
    # floating kernels only (an integer input's nansum is sum, which checks its out itself)
    if isinstance(input, Tensor) and input.dtype.is_floating_point:
        if dtype is not None and _dt.to_dtype(dtype) is not out.dtype:
            raise RuntimeError(f"nansum: provided dtype must match dtype of result. Got {out.dtype._scalar_name} "
                               f"and {_dt.to_dtype(dtype)._scalar_name}.")
        if not out.dtype.is_floating_point:
            raise _dt.no_kernel("nansum_cpu", out.dtype, "a floating input's nansum writes only into a floating "
                                "out=; convert the result with .to() instead")


# --- sum, mean, prod -----------------------------------------------------------------------------
class Sum(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        ctx.in_shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        return _wide_sum(x, dims, keepdim, _acc_dtype(x, dtype))  # a NumPy scalar: Tensor takes it

    @staticmethod
    def backward(ctx, g):
        return _expand_back(g, ctx.in_shape, ctx.dims, ctx.keepdim), None, None, None


class SumAll(Function):
    """``x.sum()``, the commonest reduction (every loss): one argument, so apply's one-tensor fast path
    takes it, and for floating input the whole forward is one ``add.reduce``."""

    _raw = True
    op_name = "sum"
    _ufunc = staticmethod(_sum_all)

    @staticmethod
    def forward(ctx, x):
        ctx.in_shape = x.shape
        if x.__class__ is _np.ndarray and x.dtype.kind in "fc":
            return _sum_all(x)  # a 0-d array (not a NumPy scalar for the Tensor to wrap again)
        return _wide_sum(x, None, False, _acc_dtype(x, None))

    @staticmethod
    def backward(ctx, g):
        gd = g._data
        if gd.__class__ is _np.ndarray and gd.dtype.kind in "fc" and not STATE.enabled:
            # the 0-d gradient seen at every position: one read-only ndarray with zero strides over its one
            # element (what np.broadcast_to makes, at a fifth of the cost)
            v = _np.ndarray(ctx.in_shape, gd.dtype, gd, 0, (0,) * len(ctx.in_shape))
            v.flags.writeable = False
            return Tensor._make(v)
        return _expand_back(g, ctx.in_shape, None, False)


def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum over all elements or over ``dim`` (integers and bool sum in int64; with ``out=``, in out's dtype).

    >>> import workbench as wb
    >>> wb.tensor([[1, 2], [3, 4]]).sum(0)
    tensor([4, 6])
    """
    if out is not None:
        return _out(sum(input, dim, keepdim, dtype=_in_out_dtype(dtype, out)), out, "same")
    if _AUTOCAST[0] and dtype is None:
        input, = _autocast_cast("sum", input)
    if dim is None and isinstance(input, Tensor):
        if not keepdim and dtype is None:
            return SumAll.apply(input)
        return Sum.apply(input, None, keepdim, dtype)
    return Sum.apply(input, _dims(input, dim, "sum"), keepdim, dtype)


@composite("nansum")
def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum treating NaN as zero.  >>> wb.nansum(wb.tensor([1.0, float('nan'), 2.0]))  ->  tensor(3.)"""
    if out is not None:
        _check_nansum_out(input, out, dtype)
        return _out(nansum(input, dim, keepdim, dtype=_in_out_dtype(dtype, out)), out, "same")
    if input.dtype.category < _dt._FLOAT:  # no NaN to skip (bfloat16 has them: not its NumPy kind "V")
        return sum(input, dim, keepdim, dtype=dtype)
    if input.dtype.is_complex and input.device.type == "cpu":  # PyTorch's CUDA kernel only
        raise RuntimeError("nansum on CPU does not support complex inputs; sum the real and imaginary parts "
                           "apart (x.real.nansum(), x.imag.nansum())")
    return sum(where(isnan(input), 0.0, input), dim, keepdim, dtype=dtype)


class Mean(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        if dtype is not None:
            x = x.astype(_dt.to_dtype(dtype).np)
        elif x.dtype.kind not in "fcV" and x.dtype.name != "bfloat16":
            raise RuntimeError(
                f"mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                f"dtype. Got: {_dt.from_numpy_dtype(x.dtype).name.capitalize()}. Convert with .float() first.")
        ctx.in_shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        ctx.n = _count(x.shape, dims)
        if ctx.n == 0:  # NaN, as PyTorch, without NumPy's "mean of empty slice" warning
            return ctx.xp.asarray(x.sum(axis=dims, keepdims=keepdim) * float("nan"))
        if _half(x.dtype):  # the float32 sum over n, rounded once (see _half)
            return ctx.xp.asarray(x.sum(axis=dims, keepdims=keepdim, dtype=_F32) / _F32.type(ctx.n)).astype(x.dtype)
        if x.__class__ is _np.ndarray and x.dtype.kind in "fc":  # NumPy's mean, its bits, without its Python layers
            return _np.asarray(_np_mean(x, dims, keepdim, ctx.n))
        return ctx.xp.asarray(x.mean(axis=dims, keepdims=keepdim))

    @staticmethod
    def backward(ctx, g):
        g = g / ctx.n if STATE.enabled else Tensor._make(g._data / ctx.n)
        return _expand_back(g, ctx.in_shape, ctx.dims, ctx.keepdim), None, None, None


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean over all elements or over ``dim``.  >>> wb.tensor([1., 2., 3.]).mean()  ->  tensor(2.)"""
    if out is not None:
        if dtype is not None:
            return _out(mean(input, dim, keepdim, dtype=dtype), out, "same")
        # a floating input is averaged in a floating or complex out's dtype; into an integer out, PyTorch's
        # cast error; an integer input keeps its own error (no dtype is inferred from out)
        floating = isinstance(input, Tensor) and input.dtype.category >= _dt._FLOAT
        into = out.dtype if floating and out.dtype.category >= _dt._FLOAT else None
        return _out(mean(input, dim, keepdim, dtype=into), out)
    return Mean.apply(input, _dims(input, dim, "mean"), keepdim, dtype)


@composite("nanmean")
def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean of the non-NaN elements.  >>> wb.nanmean(wb.tensor([1.0, float('nan'), 3.0]))  ->  tensor(2.)"""
    if input.dtype.category < _dt._FLOAT:  # even with a floating dtype=, as PyTorch
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{input.dtype._scalar_name}; convert it with .float() first")
    if out is not None:  # PyTorch's: nansum into out, then the division
        _check_nansum_out(input, out, dtype)
        return _out(nanmean(input, dim, keepdim, dtype=_in_out_dtype(dtype, out)), out, "same")
    ok = ~isnan(input)
    return nansum(input, dim, keepdim, dtype=dtype) / ok.sum(dim, keepdim)


class Prod(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, dim, keepdim, dtype):
        x = x.astype(_acc_dtype(x, dtype), copy=False)
        ctx.dim, ctx.keepdim = dim, keepdim
        y = ctx.xp.asarray(ctx.xp.prod(_widen(x), axis=dim, keepdims=keepdim)).astype(x.dtype, copy=False)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        if ctx.dim is None:  # as a product over dim 0 of the flattened input
            return _prod_grad(g.reshape((1,)), x.reshape((-1,)), y.reshape((1,)), 0).reshape(x.shape), None, None, \
                None
        if not ctx.keepdim and x.ndim:
            g, y = g.unsqueeze(ctx.dim), y.unsqueeze(ctx.dim)
        return _prod_grad(g, x, y, ctx.dim), None, None, None


def _prod_grad(g, x, y, d):
    # d prod / d x_i = product of the others; without zeros that is y / x_i. With zeros (PyTorch's rule):
    # a slice's only zero gets the product of the rest, everything else in a slice with a zero gets 0.
    zeros = x._data == 0
    if not bool(zeros.any()):
        return g * (y / x).conj()
    if STATE.enabled:  # create_graph: the products of the others as an explicit, differentiable product
        return g * where(_eye_mask(x, d), 1.0, x.unsqueeze(d)).prod(d + 1).conj()
    z = Tensor._make(zeros)
    cnt = z.sum(d, keepdim=True)
    x1 = where(z, 1.0, x)
    p1 = x1.prod(d, keepdim=True)
    return g * where(cnt == 0, p1 / x1, where((cnt == 1) & z, p1, 0.0)).conj()


def _eye_mask(x, d, upper=False):
    """An n x n mask at dims (d, d + 1) broadcasting against x.unsqueeze(d): the diagonal (or k >= i)."""
    xp = _backend.xp_of(x._data)
    n = x.shape[d]
    with _backend.on_device(x.device):
        i = xp.arange(n)
        m = (i[None, :] >= i[:, None]) if upper else (i[None, :] == i[:, None])
    return Tensor._make(m.reshape((1,) * d + (n, n) + (1,) * (x.ndim - d - 1)))


def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Product over all elements or over one ``dim`` (with ``out=``, in out's dtype).

    >>> import workbench as wb
    >>> wb.tensor([[1., 2.], [3., 4.]]).prod(1)
    tensor([ 2., 12.])
    """
    if out is not None:
        return _out(prod(input, dim, keepdim, dtype=_in_out_dtype(dtype, out)), out, "same")
    if _AUTOCAST[0] and dtype is None:
        input, = _autocast_cast("prod", input)
    if isinstance(dim, (tuple, list)):
        raise TypeError("prod(): argument 'dim' must be int, not tuple (reduce one dim at a time)")
    d = None if dim is None else wrap_dim(dim, input._data.ndim)
    return Prod.apply(input, d, keepdim, dtype)


# --- scans ---------------------------------------------------------------------------------------
def _scan(xp, a, op):
    """Inclusive scan of binary ufunc ``op`` along the last axis (Hillis-Steele: log2(n) vectorised steps)."""
    a = a.copy()
    n = a.shape[-1] if a.ndim else 0
    s = 1
    while s < n:
        a[..., s:] = op(a[..., s:], a[..., :-s])
        s *= 2
    return a


def _check_scan_dtype(op, input, dtype):
    # PyTorch's scans have no bool kernel: a bool dtype= (or out=) is refused (a bool input sums in int64)
    if dtype is not None and _dt.to_dtype(dtype) is _dt.bool_:
        raise _dt.no_kernel(f"{op}_out_{input.device.type}", _dt.bool_, f"{op} counts in integers: drop dtype=bool "
                            f"(bool input gives int64) and compare the result, e.g. {op}(x, dim) != 0")


def _revcumsum(t, d):
    return t.flip(d).cumsum(d).flip(d)


class Cumsum(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, d, dtype):
        ctx.d = d
        acc = _acc_dtype(x, dtype)
        if x.ndim == 0:
            return x.astype(acc, copy=True)
        if _half(acc):
            return ctx.xp.cumsum(x.astype(acc, copy=False), axis=d, dtype=_F32).astype(acc)
        return ctx.xp.cumsum(x, axis=d, dtype=acc)

    @staticmethod
    def backward(ctx, g):
        return (_revcumsum(g, ctx.d) if g.ndim else g), None, None


def cumsum(input, dim, *, dtype=None, out=None):
    """Running sum along ``dim``.  >>> wb.cumsum(wb.tensor([1, 2, 3]), 0)  ->  tensor([1, 3, 6])"""
    if out is not None:
        return _out(cumsum(input, dim, dtype=_in_out_dtype(dtype, out)), out, "same")
    _check_scan_dtype("cumsum", input, dtype)
    if _AUTOCAST[0] and dtype is None:
        input, = _autocast_cast("cumsum", input)
    return Cumsum.apply(input, wrap_dim(dim, input._data.ndim), dtype)


class Cumprod(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, d, dtype):
        ctx.d = d
        x = x.astype(_acc_dtype(x, dtype), copy=x.ndim == 0)
        y = x if x.ndim == 0 else ctx.xp.cumprod(_widen(x), axis=d).astype(x.dtype, copy=False)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        if x.ndim == 0:
            return g, None, None
        d = ctx.d
        zeros = x._data == 0
        if not bool(zeros.any()):
            return _revcumsum(g * y, d) / x, None, None
        if STATE.enabled:
            # create_graph: d y_k / d x_i = cumprod of x with x_i replaced by 1, for every i at once
            c = where(_eye_mask(x, d), 1.0, x.unsqueeze(d)).cumprod(d + 1)
            return (c * g.unsqueeze(d) * _eye_mask(x, d, upper=True)).sum(d + 1), None, None
        # y_k = 0 from a slice's first zero on, so inputs before it see only the terms before it (y / x is
        # safe there); the first zero sees the running product of the others; later inputs get nothing
        xp = _backend.xp_of(zeros)
        seen = xp.cumsum(zeros, axis=d)
        before = Tensor._make(seen == 0)
        first = Tensor._make(zeros & (seen == 1))
        part1 = where(before, _revcumsum(g * y, d) / where(before, x, 1.0), 0.0)
        y2 = where(first, 1.0, x).cumprod(d)
        part2 = where(first, _revcumsum(g * y2, d), 0.0)
        return part1 + part2, None, None


def cumprod(input, dim, *, dtype=None, out=None):
    """Running product along ``dim`` (gradient exact with zeros).  >>> wb.cumprod(wb.tensor([1, 2, 3]), 0)  ->  tensor([1, 2, 6])"""
    if out is not None:
        return _out(cumprod(input, dim, dtype=_in_out_dtype(dtype, out)), out, "same")
    _check_scan_dtype("cumprod", input, dtype)
    if _AUTOCAST[0] and dtype is None:
        input, = _autocast_cast("cumprod", input)
    return Cumprod.apply(input, wrap_dim(dim, input._data.ndim), dtype)


def _along_key(xp, idx, d):
    """An advanced index picking idx[..., j, ...] along dim d at every other position (idx: keepdim shape)."""
    key = []
    for k, n in enumerate(idx.shape):
        if k == d:
            key.append(idx)
        else:
            shape = [1] * idx.ndim
            shape[k] = n
            key.append(xp.arange(n).reshape(shape))
    return tuple(key)


class _Pick(Function):
    """Values at indices a rule picks along ``dim``, and the indices; the gradient goes back to those places."""

    _raw = True
    rule = None  # rule(xp, x, d) -> int64 indices with x's shape except size 1 at d (or x's shape, for scans)

    @classmethod
    def forward(cls, ctx, x, d, keepdim):
        xp = ctx.xp
        if x.ndim == 0:
            x = x.reshape(1)
            ctx.scalar = True
        else:
            ctx.scalar = False
        idx = cls.rule(xp, x, d).astype(_INT64, copy=False)
        key = _along_key(xp, idx, d)
        vals = x[key]
        ctx.in_shape, ctx.key, ctx.d, ctx.keepdim = x.shape, key, d, keepdim
        if ctx.scalar:
            vals, idx = vals.reshape(()), idx.reshape(())
        elif not keepdim:
            vals, idx = vals.squeeze(d), idx.squeeze(d)
        ctx.mark_non_differentiable(idx)
        return vals, idx

    @staticmethod
    def backward(ctx, g, gi):
        if not STATE.enabled and ctx.key[ctx.d].shape[ctx.d] == 1:  # one pick per slice (max, min, median...):
            gd = g._data  # the positions are distinct, so a plain store into zeros (PyTorch's scatter), on arrays
            kept = ctx.key[ctx.d].shape
            out = ctx.xp.zeros(ctx.in_shape, dtype=gd.dtype)
            out[ctx.key] = gd.reshape(kept)
            return Tensor._make(out.reshape(()) if ctx.scalar else out), None, None
        if ctx.scalar:
            g = g.reshape((1,))
        elif not ctx.keepdim:
            g = g.unsqueeze(ctx.d)
        gx = IndexBackward.apply(g, ctx.in_shape, ctx.key)
        return (gx.reshape(()) if ctx.scalar else gx), None, None


def _picker(name, rule):
    return type(name.capitalize(), (_Pick,), {"op_name": name, "rule": staticmethod(rule), "__module__": __name__})


def _expand(xp, a, d):
    shape = a.shape
    return a.reshape(shape[:d] + (1,) + shape[d:])  # expand_dims's reshape, without its 1.8 us of checks


def _nan_count(xp, x, d):
    return xp.isnan(x).sum(axis=d, keepdims=True) if x.dtype.kind in "fc" else xp.zeros(
        x.shape[:d] + (1,) + x.shape[d + 1:], _INT64)


def _sorted_pick(xp, x, d, pos):
    order = xp.argsort(x, axis=d, kind="stable")
    return xp.take_along_axis(order, pos, axis=d)


def _median_rule(xp, x, d):
    # the lower median; a slice holding NaN gives its first NaN (NumPy sorts NaN last)
    n = x.shape[d]
    nan = _nan_count(xp, x, d)
    pos = xp.where(nan > 0, n - nan, (n - 1) // 2)
    return _sorted_pick(xp, x, d, pos)


def _nanmedian_rule(xp, x, d):
    m = x.shape[d] - _nan_count(xp, x, d)
    return _sorted_pick(xp, x, d, xp.where(m > 0, (m - 1) // 2, 0))


def _mode_rule(xp, x, d):
    # sort, measure runs of equal values, take the first longest run (the smallest such value) and its
    # last element (PyTorch reports the last index of the mode)
    order = xp.moveaxis(xp.argsort(x, axis=d, kind="stable"), d, -1)
    s = xp.take_along_axis(xp.moveaxis(x, d, -1), order, axis=-1)
    n = s.shape[-1]
    pos = xp.arange(n)
    new = xp.ones(s.shape, dtype=bool)
    new[..., 1:] = s[..., 1:] != s[..., :-1]
    start = _scan(xp, xp.where(new, pos, 0), xp.maximum)
    run = pos - start
    end = xp.argmax(run, axis=-1)[..., None]
    return xp.moveaxis(xp.take_along_axis(order, end, axis=-1), -1, d)


def _cum_rule(better):
    def rule(xp, x, d):
        xm = xp.moveaxis(x, d, -1)
        best = _scan(xp, xm, better)
        hit = xm == best
        if x.dtype.kind in "fc":
            hit |= xp.isnan(xm)  # NaN is carried along, and its place is reported
        idx = _scan(xp, xp.where(hit, xp.arange(xm.shape[-1]), 0), xp.maximum)
        return xp.moveaxis(idx, -1, d)

    return rule


MaxDim = _picker("max", lambda xp, x, d: _expand(xp, xp.argmax(x, axis=d), d))
MinDim = _picker("min", lambda xp, x, d: _expand(xp, xp.argmin(x, axis=d), d))
MedianDim = _picker("median", _median_rule)
NanmedianDim = _picker("nanmedian", _nanmedian_rule)
ModeDim = _picker("mode", _mode_rule)
Cummax = _picker("cummax", _cum_rule(lambda a, b: _backend.xp_of(a).maximum(a, b)))
Cummin = _picker("cummin", _cum_rule(lambda a, b: _backend.xp_of(a).minimum(a, b)))


def _pick(cls, name, input, dim, keepdim, out=None):
    """(values, indices) of a picking op, written into ``out=(values, indices)`` when given: values of
    input's dtype, int64 indices (PyTorch's rule for both)."""
    if out is not None:
        return _outs(_pick(cls, name, input, dim, keepdim), out, "same")
    d = wrap_dim(dim, input._data.ndim)
    if input._data.ndim and input._data.shape[d] == 0 and cls not in (Cummax, Cummin):  # scans of nothing are empty
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size (input shape "
                         f"{list(input.shape)}).")
    if input._data.dtype.kind == "c":
        raise RuntimeError(f"{name}(): complex tensors have no order; reduce .real or .abs() instead")
    return getattr(return_types, name)(*cls.apply(input, d, keepdim))


def cummax(input, dim, *, out=None):
    """Running maximum along ``dim`` and where it was found.  >>> wb.cummax(wb.tensor([1., 3., 2.]), 0).values  ->  tensor([1., 3., 3.])"""
    return _pick(Cummax, "cummax", input, dim, True, out)


def cummin(input, dim, *, out=None):
    """Running minimum along ``dim`` and where it was found.  >>> wb.cummin(wb.tensor([3., 1., 2.]), 0).values  ->  tensor([3., 1., 1.])"""
    return _pick(Cummin, "cummin", input, dim, True, out)


def _no_whole_out(name, out):
    if out is not None:  # PyTorch's whole-tensor form has no out= overload
        raise TypeError(f"{name}() missing 1 required positional arguments: \"dim\" (out= is for the form with "
                        "dim, which writes out=(values, indices))")


def median(input, dim=None, keepdim=False, *, out=None):
    """The lower median: of all elements (a value), or along ``dim`` (values and indices).

    >>> import workbench as wb
    >>> wb.median(wb.tensor([4., 1., 3., 2.]))
    tensor(2.)
    """
    if dim is None:
        _no_whole_out("median", out)
        if input.numel() == 0:
            return Tensor._make(_backend.xp_of(input._data).asarray(float("nan"), dtype=input._data.dtype))
        return MedianAll.apply(input)
    return _pick(MedianDim, "median", input, dim, keepdim, out)


def nanmedian(input, dim=None, keepdim=False, *, out=None):
    """median ignoring NaN (NaN only where a slice is all NaN).  >>> wb.nanmedian(wb.tensor([1., float('nan'), 3.]))  ->  tensor(1.)"""
    if dim is None:
        _no_whole_out("nanmedian", out)
        if input.numel() == 0:
            return Tensor._make(_backend.xp_of(input._data).asarray(float("nan"), dtype=input._data.dtype))
        return NanmedianAll.apply(input)
    return _pick(NanmedianDim, "nanmedian", input, dim, keepdim, out)


def mode(input, dim=-1, keepdim=False, *, out=None):
    """The most frequent value along ``dim`` (the smallest on ties) and its last index.

    >>> import workbench as wb
    >>> wb.mode(wb.tensor([1, 2, 2, 3])).values
    tensor(2)
    """
    return _pick(ModeDim, "mode", input, dim, keepdim, out)


# --- max, min, amax, amin, arg* ---------------------------------------------------------------------
class _Extreme(Function):
    """amax/amin: the gradient is split evenly among the elements that tie for the extreme (PyTorch's)."""

    _raw = True
    fn = None

    @classmethod
    def forward(cls, ctx, x, dims, keepdim):
        _empty_error(cls.op_name, x, dims)
        if x.dtype.kind == "c":
            raise RuntimeError(f"{cls.op_name}(): complex tensors have no order; reduce .real or .abs() instead")
        if x.__class__ is _np.ndarray:  # np.amax's ufunc reduction, without its Python layers
            y = _np.asarray(cls.reduce(x, axis=dims, keepdims=keepdim))
        else:
            y = ctx.xp.asarray(getattr(ctx.xp, cls.fn)(x, axis=dims, keepdims=keepdim))
        ctx.in_shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        if not STATE.enabled and x._data.__class__ is _np.ndarray:  # the same steps on the arrays: no nodes
            xd, gd = x._data, g._data
            kept = _kept_shape(ctx.in_shape, ctx.dims) if ctx.in_shape else ()
            hit = xd == y._data.reshape(kept)
            count = _np.add.reduce(hit, axis=ctx.dims, keepdims=True, dtype=_INT64)
            return Tensor._make(_np.true_divide(gd.reshape(kept) * hit, count, dtype=gd.dtype)), None, None
        hit = x == _keep(y, ctx.in_shape, ctx.dims, ctx.keepdim)
        count = hit.sum(ctx.dims, keepdim=True) if ctx.dims is not None else hit.sum()
        return _keep(g, ctx.in_shape, ctx.dims, ctx.keepdim) * hit / count, None, None


class Amax(_Extreme):
    op_name = "amax"
    fn = "amax"
    reduce = _np.maximum.reduce


class Amin(_Extreme):
    op_name = "amin"
    fn = "amin"
    reduce = _np.minimum.reduce


def amax(input, dim=(), keepdim=False, *, out=None):
    """Maximum over ``dim`` (all dims by default); ties share the gradient.  >>> wb.amax(wb.tensor([[1, 5], [7, 2]]), 1)  ->  tensor([5, 7])"""
    return _out(Amax.apply(input, _dims(input, dim, "amax"), keepdim), out, "same")


def amin(input, dim=(), keepdim=False, *, out=None):
    """Minimum over ``dim`` (all dims by default); ties share the gradient.  >>> wb.amin(wb.tensor([[1, 5], [7, 2]]), 1)  ->  tensor([1, 2])"""
    return _out(Amin.apply(input, _dims(input, dim, "amin"), keepdim), out, "same")


class _Spread(Function):
    """A value of the whole tensor (max, min, median); the gradient is shared evenly by every element equal
    to it, NaN matching NaN (PyTorch's evenly_distribute_backward)."""

    _raw = True
    rule = None  # rule(xp, flat x) -> index of the chosen element

    @classmethod
    def forward(cls, ctx, x):
        _empty_error(cls.op_name, x, None)
        if x.dtype.kind == "c":
            raise RuntimeError(f"{cls.op_name}(): complex tensors have no order; reduce .real or .abs() instead")
        flat = x.reshape(-1)
        y = flat[int(cls.rule(ctx.xp, flat))].copy()  # a 0-d array
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        hit = x == y
        if x.is_floating_point():
            hit = hit | (isnan(x) & isnan(y))
        return g * hit / hit.sum()


def _median_flat(xp, x):
    return _median_rule(xp, x, 0)[0]


def _nanmedian_flat(xp, x):
    return _nanmedian_rule(xp, x, 0)[0]


MaxAll = type("MaxAll", (_Spread,), {"op_name": "max", "rule": staticmethod(lambda xp, x: xp.argmax(x))})
MinAll = type("MinAll", (_Spread,), {"op_name": "min", "rule": staticmethod(lambda xp, x: xp.argmin(x))})
MedianAll = type("MedianAll", (_Spread,), {"op_name": "median", "rule": staticmethod(_median_flat)})
NanmedianAll = type("NanmedianAll", (_Spread,), {"op_name": "nanmedian", "rule": staticmethod(_nanmedian_flat)})


def _max_min(name, cls, ext, binary):
    def fn(input, dim=None, keepdim=False, *, out=None):
        if isinstance(dim, Tensor):
            return binary(input, dim, out)
        if dim is None:
            if keepdim:
                raise TypeError(f"{name}() received an invalid combination of arguments: keepdim needs dim")
            return _out(ext.apply(input), out)  # the whole tensor's: into any out its dtype casts to
        return _pick(cls, name, input, dim, keepdim, out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{name} of all elements (a value); along ``dim``: values and indices (the first on ties); with "
                  f"a tensor: the elementwise {name}imum.  >>> wb.{name}(wb.tensor([[1., 5.], [7., 2.]]), 1).indices  "
                  f"->  tensor({[1, 0] if name == 'max' else [0, 1]})")
    return fn


def _maximum(a, b, out):
    return maximum(a, b, out=out)


def _minimum(a, b, out):
    return minimum(a, b, out=out)


max = _max_min("max", MaxDim, MaxAll, _maximum)
min = _max_min("min", MinDim, MinAll, _minimum)


@composite("aminmax")
def aminmax(input, *, dim=None, keepdim=False, out=None):
    """(min, max) in one call.  >>> tuple(wb.aminmax(wb.tensor([3, 0, 4])))  ->  (tensor(0), tensor(4))"""
    d = None if dim is None else (dim,)
    dims = _dims(input, d, "aminmax")
    r = return_types.aminmax(Amin.apply(input, dims, keepdim), Amax.apply(input, dims, keepdim))
    return _outs(r, out, "same")


def _arg(name, fn):
    def arg(input, dim=None, keepdim=False, *, out=None):
        if out is not None:  # int64 out only, as PyTorch
            return _out(arg(input, dim, keepdim), out, "same")
        x = input._data
        xp = _backend.xp_of(x)
        if x.dtype.kind == "c":
            raise RuntimeError(f"{name}(): complex tensors have no order; use .real or .abs() first")
        if x.dtype == bool:
            raise RuntimeError(f"{name}(): does not support bool input; convert it with .long() first")
        # one array step each (not a tensor made from raw arrays), so workbench.compile replays it
        if dim is None:
            _empty_error(name, x, None, IndexError)
            shape = (1,) * x.ndim if keepdim else ()
            return array_step(lambda a: xp.asarray(getattr(xp, fn)(a.reshape(-1)), dtype=_INT64).reshape(shape),
                              input)
        d = wrap_dim(dim, x.ndim)
        if x.ndim == 0:
            return array_step(lambda a: xp.zeros((), _INT64), input)
        _empty_error(name, x, (d,))
        return array_step(lambda a: xp.asarray(getattr(xp, fn)(a, axis=d, keepdims=keepdim), dtype=_INT64), input)

    arg.__name__ = arg.__qualname__ = name
    arg.__doc__ = f"Index of the {fn[3:]}imum (flat when dim is None; the first on ties).  >>> wb.{name}(wb.tensor([1, 9, 3]))  ->  tensor({int(fn == 'argmax')})"
    return arg


argmax = _arg("argmax", "argmax")
argmin = _arg("argmin", "argmin")


# --- var, std, norms, logsumexp ---------------------------------------------------------------------
def _var_args(dim, unbiased, correction, op):
    if isinstance(dim, bool):  # the legacy var(input, unbiased)
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{op}(): can't pass both unbiased and correction")
    c = correction if correction is not None else (1 if unbiased is None or unbiased else 0)
    return dim, c


def _two_over(dof):
    """2 / dof for var's gradient, inf where dof <= 0 (PyTorch's: it divides by max(dof, 0), as the forward)."""
    return 2.0 / dof if dof > 0 else float("inf")


class Var(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, dims, correction, keepdim, sqrt):
        if x.dtype.kind not in "fcV":
            raise RuntimeError(f"std and var only support floating point and complex dtypes (got "
                               f"{_dt.from_numpy_dtype(x.dtype).name}); convert with .float() first")
        xp = ctx.xp
        n = _count(x.shape, dims)
        dof = n - correction
        if dof <= 0:
            warnings.warn(f"{'std' if sqrt else 'var'}(): degrees of freedom is <= 0. Correction should be strictly "
                          "less than the reduction factor (input numel divided by output numel).", UserWarning,
                          stacklevel=4)
        xw = _widen(x)
        if xw.__class__ is _np.ndarray:  # NumPy's mean and sum, their bits, without their Python layers
            m = _np_mean(xw, dims, True, n)
        else:
            m = xw.mean(axis=dims, keepdims=True)
        dev = xw - m
        sq = (dev * dev.conj()).real if x.dtype.kind == "c" else dev * dev
        total = _np.add.reduce(sq, axis=dims, keepdims=keepdim) if sq.__class__ is _np.ndarray else sq.sum(
            axis=dims, keepdims=keepdim)
        if dof > 0:
            v = total / dof
            y = xp.asarray(xp.sqrt(v) if sqrt else v, dtype=sq.dtype if xw is x else x.dtype)
        else:
            with _np.errstate(invalid="ignore", divide="ignore"):
                v = total / 0
                y = xp.asarray(xp.sqrt(v) if sqrt else v, dtype=sq.dtype if xw is x else x.dtype)
        ctx.in_shape, ctx.dims, ctx.keepdim, ctx.dof, ctx.sqrt = x.shape, dims, keepdim, dof, sqrt
        ctx.save_for_backward(x, y if sqrt else None)
        return y

    @staticmethod
    def backward(ctx, g, *rest):
        x, y = ctx.saved_tensors
        xd = x._data
        if not STATE.enabled and xd.__class__ is _np.ndarray and xd.dtype.kind == "f" and xd.dtype.itemsize >= 4:
            # the steps below on the arrays (float32/64: the mean is Mean's add.reduce over n)
            gd = g._data
            if ctx.sqrt:
                yd = y._data
                zero = yd == 0
                gd = _np.where(zero, 0.0, gd / (2 * _np.where(zero, 1.0, yd)))
            kept = _kept_shape(ctx.in_shape, ctx.dims) if ctx.in_shape else ()
            dev = xd - _np_mean(xd, ctx.dims, True, _count(xd.shape, ctx.dims))
            return Tensor._make(gd.reshape(kept) * dev * _two_over(ctx.dof)), None, None, None, None
        if ctx.sqrt:  # d std = d var / (2 std), 0 where std == 0 (PyTorch's)
            zero = y == 0
            g = where(zero, 0.0, g / (2 * where(zero, 1.0, y)))
        g = _keep(g, ctx.in_shape, ctx.dims, ctx.keepdim)
        dev = x - (x.mean(ctx.dims, keepdim=True) if ctx.dims is not None else x.mean())
        return g * dev * _two_over(ctx.dof), None, None, None, None


class Std(Var):
    """The same computation, named std on the tape."""


def _var_input(input, dims, out):
    # PyTorch computes std/var over some of the dims in a floating out's dtype, over all of them in the
    # input's (its CPU kernel for a whole-tensor reduction)
    if out.dtype.is_floating_point and input.dtype.is_floating_point and dims is not None and len(dims) < input.ndim:
        return input.to(out.dtype)
    return input


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Variance over ``dim`` with Bessel's ``correction`` (1 by default; ``unbiased=False`` means 0).

    >>> import workbench as wb
    >>> wb.var(wb.tensor([1., 2., 3., 4.]))
    tensor(1.6667)
    """
    dim, c = _var_args(dim, unbiased, correction, "var")
    dims = _dims(input, dim, "var")
    if out is not None:
        return _out(var(_var_input(input, dims, out), dim, keepdim=keepdim, correction=c), out)
    return Var.apply(input, dims, c, keepdim, False)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Standard deviation over ``dim``; see ``var``.  >>> wb.std(wb.tensor([1., 3.]))  ->  tensor(1.4142)"""
    dim, c = _var_args(dim, unbiased, correction, "std")
    dims = _dims(input, dim, "std")
    if out is not None:
        return _out(std(_var_input(input, dims, out), dim, keepdim=keepdim, correction=c), out)
    return Std.apply(input, dims, c, keepdim, True)


@composite("var_mean")
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over ``dim``.  >>> wb.var_mean(wb.tensor([1., 3.]))  ->  (tensor(2.), tensor(2.))"""
    d, _ = _var_args(dim, unbiased, correction, "var_mean")
    return var(input, dim, unbiased, keepdim, correction=correction), mean(input, d, keepdim)


@composite("std_mean")
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over ``dim``.  >>> wb.std_mean(wb.tensor([1., 3.]))  ->  (tensor(1.4142), tensor(2.))"""
    d, _ = _var_args(dim, unbiased, correction, "std_mean")
    return std(input, dim, unbiased, keepdim, correction=correction), mean(input, d, keepdim)


class Norm(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, p, dims, keepdim):
        xp = ctx.xp
        a = xp.abs(to_float(x))
        real = a.dtype
        a = _widen(a)
        if p == 2:
            y = xp.sqrt((a * a).sum(axis=dims, keepdims=keepdim))
        elif p == 1:
            y = a.sum(axis=dims, keepdims=keepdim)
        else:
            y = ((a ** p).sum(axis=dims, keepdims=keepdim)) ** (1.0 / p)
        y = xp.asarray(y).astype(real, copy=False)
        ctx.p, ctx.in_shape, ctx.dims, ctx.keepdim = p, x.shape, dims, keepdim
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        p = ctx.p
        xd = x._data
        if (p == 1 or p == 2) and not STATE.enabled and xd.__class__ is _np.ndarray and xd.dtype.kind == "f" \
                and xd.dtype.itemsize >= 4:  # the steps below, on the arrays
            kept = _kept_shape(ctx.in_shape, ctx.dims) if ctx.in_shape else ()
            gd = g._data.reshape(kept)
            if p == 1:
                return Tensor._make(gd * _np.sign(xd)), None, None, None
            yd = y._data.reshape(kept)
            zero = yd == 0
            return Tensor._make(_np.where(zero, 0.0, xd * (gd / _np.where(zero, 1.0, yd)))), None, None, None
        g = _keep(g, ctx.in_shape, ctx.dims, ctx.keepdim)
        y = _keep(y, ctx.in_shape, ctx.dims, ctx.keepdim)
        if p == 1:
            return g * x.sgn(), None, None, None
        zero = y == 0
        y = where(zero, 1.0, y)  # 0 at the origin, as PyTorch
        if p == 2:
            gx = x * (g / y)
        else:
            gx = x.sgn() * x.abs() ** (p - 1) * (g / y ** (p - 1))
        return where(zero, 0.0, gx), None, None, None


def _vector_norm(input, p, dims, keepdim):
    if p == float("inf"):
        return input.abs().amax(dims if dims is not None else (), keepdim)
    if p == float("-inf"):
        return input.abs().amin(dims if dims is not None else (), keepdim)
    if p == 0:
        nz = Tensor._make(input._data != 0)
        return nz.sum(dims, keepdim).to(_float_of(input))
    return Norm.apply(input, p, dims, keepdim)


def _float_of(t):
    d = t.dtype
    return d.to_real() if d.category >= _dt._FLOAT else _dt.get_default_dtype()


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """Vector or matrix norm: p = 'fro', 'nuc', inf, -inf or a number, over ``dim`` (all elements by default);
    ``out`` follows keepdim, as in torch.norm (the method ``x.norm`` takes ``dtype`` there).

    >>> import workbench as wb
    >>> wb.norm(wb.tensor([3., 4.]))
    tensor(5.)
    """
    return _out(_norm(input, p, dim, keepdim, dtype), out, "same")


def _norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """``x.norm(p, dim, keepdim, dtype)``: torch.norm without out=, as PyTorch's method.

    >>> import workbench as wb
    >>> wb.tensor([[3., 4.], [0., 1.]]).norm(2, 1)
    tensor([5., 1.])
    """
    if _AUTOCAST[0] and dtype is None:
        input, = _autocast_cast("norm", input)
    if dtype is not None:
        input = input.to(dtype)
    if input._data.dtype.kind not in "fc" and input.dtype is not _dt.bfloat16:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{input.dtype.name} instead; convert with .float() first.")
    if isinstance(dim, int):
        dim = (dim,)
    if p == "nuc":
        dims = (-2, -1) if dim is None else tuple(dim)
        if len(dims) != 2:
            raise RuntimeError(f"norm(): the nuclear norm needs exactly 2 dims, got dim={dim}")
        return matrix_norm(input, "nuc", dims, keepdim)
    if p == "fro":
        if dim is not None and len(dim) > 2:
            raise RuntimeError(f"norm(): the Frobenius norm takes 1 or 2 dims, got dim={dim}")
        p = 2
    if isinstance(p, str):
        raise RuntimeError(f"norm(): p must be 'fro', 'nuc' or a number, got {p!r}")
    return _vector_norm(input, float(p) if p not in (1, 2) else p, _dims(input, dim, "norm"), keepdim)


class Logsumexp(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        xp = ctx.xp
        x = to_float(x)
        if x.size == 0:
            with _np.errstate(divide="ignore"):
                y = xp.asarray(xp.log(xp.exp(x).sum(axis=dims, keepdims=keepdim)))
        else:
            m = xp.amax(x, axis=dims, keepdims=True)
            m = xp.where(xp.isinf(m), 0, m).astype(x.dtype, copy=False)  # all -inf (or an inf) stays exact
            with _np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                y = xp.log(_wide_sum(xp.exp(x - m), dims, True, x.dtype)) + m
            if not keepdim:
                y = y.reshape([s for k, s in enumerate(y.shape) if k not in (dims or range(x.ndim))])
            y = xp.asarray(y)
        ctx.in_shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        y = _keep(y, ctx.in_shape, ctx.dims, ctx.keepdim)
        return _keep(g, ctx.in_shape, ctx.dims, ctx.keepdim) * (x - y).exp(), None, None


def logsumexp(input, dim=None, keepdim=False, *, out=None):
    """log(sum(exp(input))) over ``dim``, computed without overflow.

    >>> import workbench as wb
    >>> wb.logsumexp(wb.tensor([1000.0, 1000.0]), 0)
    tensor(1000.6932)
    """
    if _AUTOCAST[0]:
        input, = _autocast_cast("logsumexp", input)
    if out is not None:
        if out.dtype.category < _dt._FLOAT:
            raise RuntimeError(f"logsumexp(): Expected floating point type for result tensor, but got: "
                               f"{out.dtype._scalar_name}; pass a floating out= (or convert the result with .to())")
        if out.dtype.is_floating_point:  # computed in out's dtype, as PyTorch's
            input = input.to(out.dtype)
    return _out(Logsumexp.apply(input, _dims(input, dim, "logsumexp"), keepdim), out)


# --- boolean reductions and counting ----------------------------------------------------------------
def _logical_reduce(name):
    def fn(input, dim=None, keepdim=False, *, out=None):
        x = input._data
        xp = _backend.xp_of(x)
        dims = _dims(input, dim, name)
        # PyTorch's result is uint8 for a uint8 input, else bool; an out= of either dtype takes it in its own
        u8 = (x.dtype == _np.uint8) if out is None else (out.dtype is _dt.uint8)

        def reduce(a):
            r = xp.asarray(getattr(xp, name)(a, axis=dims, keepdims=keepdim))
            return r.astype(_np.uint8) if u8 else r
        return _out(array_step(reduce, input), out, "same")  # a bool or uint8 out only, as PyTorch

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Whether {'all' if name == 'all' else 'any'} elements (over ``dim``) are nonzero, a bool tensor.  "
                  f">>> wb.{name}(wb.tensor([True, False]))  ->  tensor({name == 'any'})")
    return fn


all = _logical_reduce("all")
any = _logical_reduce("any")


def count_nonzero(input, dim=None):
    """How many elements (over ``dim``) are nonzero, as int64.  >>> wb.count_nonzero(wb.tensor([3, 0, 4]))  ->  tensor(2)"""
    x = input._data
    xp = _backend.xp_of(x)
    return Tensor._make(xp.asarray((x != 0).sum(axis=_dims(input, dim, "count_nonzero")), dtype=_INT64))


@composite("diff")
def diff(input, n=1, dim=-1, prepend=None, append=None, *, out=None):
    """n-th forward difference along ``dim`` (xor for bool), with optional prepend/append.

    >>> import workbench as wb
    >>> wb.diff(wb.tensor([1, 4, 9, 16]))
    tensor([3, 5, 7])
    """
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    d = wrap_dim(dim, input.ndim)
    parts = [t for t in (prepend, input, append) if t is not None]
    if len(parts) > 1:
        parts = [t if isinstance(t, Tensor) else _as_tensor_like(t, input, d) for t in parts]
        input = cat(parts, d)
    head = (slice(None),) * d
    for _ in range(n):
        if input.shape[d] == 0:
            break
        a, b = input[head + (slice(1, None),)], input[head + (slice(None, -1),)]
        input = (a ^ b) if input.dtype is _dt.bool_ else a - b
    return _out(input, out)


def _as_tensor_like(v, like, d):
    shape = list(like.shape)
    shape[d] = 1
    return full(shape, v, dtype=like.dtype, device=like.device)


__all__ = ["sum", "nansum", "mean", "nanmean", "prod", "cumsum", "cumprod", "cummax", "cummin", "max", "min", "amax",
           "amin", "aminmax", "argmax", "argmin", "median", "nanmedian", "mode", "var", "std", "var_mean",
           "std_mean", "norm", "logsumexp", "all", "any", "count_nonzero", "diff", "return_types"]
METHODS = {n: globals()[n] for n in __all__ if n not in ("var_mean", "std_mean", "return_types")}
METHODS["norm"] = _norm
INPLACE = ("cumsum", "cumprod")
