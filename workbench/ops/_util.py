"""Helpers shared by the op families: dtype promotion on raw operands, dim and size arguments, out=,
dtype errors, ufunc.at on raw arrays, dropout's uniform samples, array steps of public functions."""
from .. import _backend
from .. import random as _random
from .._backend import fused as _fused
from .._backend import dtypes as _dt
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from .._core import Tensor
from .._array_step import ArrayStep, array_step  # noqa: F401 - the op families import them from here
from .._outargs import _out, _outs, writes_out  # noqa: F401 - the op families import them from here

np = _backend.numpy
_np_generic = np.generic
_ndarray = np.ndarray
_FROM_NP = _dt._FROM_NP
_DEFAULT = _dt._default  # [the default float dtype]
_CACHE = {}
_SCALAR_CACHE = {}  # (array dtype, Python scalar type, default dtype) -> result dtype


def _key(x):
    t = type(x)
    if t is bool or t is int or t is float or t is complex:
        return t
    if isinstance(x, _np_generic):
        return type(_dt.as_number(x))
    try:
        return (x.dtype, x.ndim == 0)
    except AttributeError:  # a list, None, a string...: PyTorch's TypeError, not ours
        raise TypeError(f"unsupported operand type '{type(x).__name__}': expected a Tensor or a Python number "
                        "(convert sequences with workbench.tensor(...) first)") from None


def result_dtype(a, b):
    """The NumPy dtype of ``a op b`` under PyTorch's promotion (a, b: raw arrays or Python scalars)."""
    # fast paths (every binary op runs this): two NumPy arrays of one dtype keep it; an array and a
    # Python scalar are looked up by (dtype, scalar type, default dtype)
    if a.__class__ is _ndarray:
        tb = b.__class__
        if tb is _ndarray:
            if a.dtype == b.dtype:
                return a.dtype
        elif tb is float or tb is int or tb is bool or tb is complex:
            k = (a.dtype, tb, _DEFAULT[0])
            r = _SCALAR_CACHE.get(k)
            if r is None:
                r = _SCALAR_CACHE[k] = _dt.result_type_of([_FROM_NP[a.dtype]], [], [_dt.scalar_dtype(tb())]).np
            return r
    ka, kb = _key(a), _key(b)
    k = (ka, kb, _dt.get_default_dtype())
    r = _CACHE.get(k)
    if r is None:
        dims, zeros, scalars = [], [], []
        for kk in (ka, kb):
            if type(kk) is tuple:
                (zeros if kk[1] else dims).append(_FROM_NP[kk[0]])
            else:
                scalars.append(_dt.scalar_dtype(kk()))
        r = _CACHE[k] = _dt.result_type_of(dims, zeros, scalars).np
    return r


def result_dtype_n(*xs):
    dims, zeros, scalars = [], [], []
    for x in xs:
        k = _key(x)
        if type(k) is tuple:
            (zeros if k[1] else dims).append(_FROM_NP[k[0]])
        else:
            scalars.append(_dt.scalar_dtype(x))
    return _dt.result_type_of(dims, zeros, scalars).np


def cast(x, npd):
    """x (array or scalar) as dtype npd: arrays are converted, Python scalars stay weak."""
    if x.__class__ is _ndarray:
        return x if x.dtype == npd else x.astype(npd)
    if isinstance(x, _np_generic):
        x = _dt.as_number(x)
    elif hasattr(x, "dtype"):
        return x if x.dtype == npd else x.astype(npd)
    if type(x) is int and npd.kind in "iu":
        bits = 8 * npd.itemsize
        lo = -(1 << (bits - 1)) if npd.kind == "i" else 0
        if not lo <= x < lo + (1 << bits):  # wrap as PyTorch does (NumPy 2 refuses out-of-range ints)
            x = (x - lo) % (1 << bits) + lo
    return x


def gemm(a, b, out=None):
    """a @ b on raw arrays (into out when given). NumPy has no half-precision GEMM (ml_dtypes' bfloat16
    product even comes back float32, and float16 runs ~20x slower than float32), so 16-bit float operands
    multiply in float32 BLAS and the product is rounded once: what PyTorch's CPU kernels compute too (float32
    accumulation). CuPy keeps float16 on cuBLAS."""
    if out is None and a.ndim >= 2 and b.ndim >= 2 and a.shape[-1] == 1 == b.shape[-2]:  # an outer product: matmul
        return a * b  # takes ~20x longer over its inner dimension of 1 (the same single rounding per entry)
    d = a.dtype
    if d.itemsize == 2 and (d.kind == "V" or d.kind == "f" and a.__class__ is _ndarray):
        r = (a.astype(np.float32) @ b.astype(np.float32)).astype(d)
        if out is None:
            return r
        out[...] = r
        return out
    if out is None:
        return a @ b
    return _backend.xp_of(a).matmul(a, b, out=out)


def float_np(npd):
    """npd itself if floating/complex, else the default float dtype (int inputs to exp, sqrt...)."""
    if npd.kind in "fc" or npd.name == "bfloat16":
        return npd
    return _dt.get_default_dtype().np


def to_float(x):
    d = x.dtype
    if d.kind in "fc" or d.name == "bfloat16":
        return x
    return x.astype(_dt.get_default_dtype().np)


def norm_dims(dim, ndim, op="op"):
    """dim (None, int, or sequence) as a sorted tuple of non-negative ints, or None for all dims."""
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return None
        out = tuple(sorted({wrap_dim(d, ndim) for d in dim}))
        if len(out) != len(dim):
            raise RuntimeError(f"{op}: dim {list(dim)} appears multiple times in the list of dims")
        return out
    return (wrap_dim(dim, ndim),)


def wrap_dim(dim, ndim):
    if hasattr(dim, "__index__") and not isinstance(dim, int):
        dim = dim.__index__()
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    n = max(ndim, 1)
    if dim < -n or dim >= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def ntuple(v, n, what, op):
    """An int or a sequence of n ints as a tuple of n ints."""
    if isinstance(v, Tensor):
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            v = tuple(v) * n
        if len(v) != n:
            raise RuntimeError(f"{op}: expected {what} to be a single integer value or a list of {n} values to "
                               f"match the convolution dimensions, but got {what}={list(v)}")
        return tuple(int(a) for a in v)
    return (int(v),) * n


def _check_float(op, *ts):
    for t in ts:
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected a Tensor, got {type(t).__name__}")
    ds = {t.dtype for t in ts if t is not None}
    if len(ds) > 1:
        names = " and ".join(str(d).replace("workbench.", "") for d in ds)
        raise RuntimeError(f"{op}: expected all tensors to have the same dtype, but got {names}. "
                           "Cast them with .to(dtype) first.")


def check_operands(op, names, args, numbers=()):
    """PyTorch's TypeError where ``op`` got a non-tensor (a Python number) for an operand it takes only as a Tensor.

    ``names``: the operands' parameter names, in order; ``numbers``: those PyTorch also takes as a Scalar (its
    ``.Scalar`` overloads), where a number is fine. The rule is declared where each op is defined; an op
    without Scalar overloads names the argument, as PyTorch's parser does, one with them lists what it takes.

    >>> import workbench as wb
    >>> check_operands("maximum", ("input", "other"), (wb.ones(1), 2.0))
    Traceback (most recent call last):
    ...
    TypeError: maximum(): argument 'other' (position 2) must be Tensor, not float
    """
    for k, (name, a) in enumerate(zip(names, args)):
        if isinstance(a, Tensor) or name in numbers:
            continue
        if not numbers:
            raise TypeError(f"{op}(): argument '{name}' (position {k + 1}) must be Tensor, not {type(a).__name__}")
        got = ", ".join("Tensor" if isinstance(x, Tensor) else type(x).__name__ for x in args)
        takes = [", ".join(f"Tensor {n}" for n in names)] + [
            ", ".join(f"{'Number' if n == s else 'Tensor'} {n}" for n in names) for s in names if s in numbers]
        raise TypeError(f"{op}() received an invalid combination of arguments - got ({got}), but expected one of: "
                        + "; ".join(f"({t})" for t in takes))


def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return shape


def ufunc_at(xp, name, out, key, values):
    """``xp.<name>.at(out, key, values)``: unbuffered in-place scatter where repeated indices all count.

    >>> import numpy as np
    >>> out = np.zeros(2); ufunc_at(np, "add", out, np.array([1, 1]), 1.0); out
    array([0., 2.])
    """
    at = getattr(getattr(xp, name), "at", None)
    if at is not None:
        if xp is _backend.numpy:
            if name == "add" and _add_at_loops(out, key, values):
                return
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


def _add_at_loops(out, key, values):
    """``np.add.at(out, key, values)`` through ``fused``'s loops where they serve, in the same order (the same
    sums): rows picked by one index array (a gather's backward, index_add_) or elements by a full index
    (scatter_add). NumPy's add.at took 69% of a graph network's step (3.7x PyTorch's time). False where the
    loops do not serve (another layout or dtype, an index out of range: add.at raises for it)."""
    np = _backend.numpy
    if key.__class__ is tuple and len(key) == 1:
        key = key[0]
    if not (values.__class__ is np.ndarray and values.dtype is out.dtype and values.size >= 256
            and _fused.usable(out, min_size=1)):
        return False
    if not values.flags.c_contiguous:  # (a broadcast gradient: one copy, still far cheaper than add.at)
        values = np.ascontiguousarray(values)
    if key.__class__ is np.ndarray and key.ndim == 1 and key.dtype.kind in "iu" and out.ndim >= 1 and (
            values.shape == key.shape + out.shape[1:]) and key.size:
        n = out.shape[0]
        lo, hi = int(key.min()), int(key.max())
        if lo < -n or hi >= n:
            return False
        idx = key + n * (key < 0) if lo < 0 else key
        _fused.add_rows_at(out.reshape(n, -1), idx, values.reshape(key.size, -1))
        return True
    if key.__class__ is tuple and len(key) == out.ndim and all(
            k.__class__ is np.ndarray and k.dtype.kind in "iu" for k in key) and np.broadcast_shapes(
            *(k.shape for k in key)) == values.shape:
        try:  # (an index out of range, or negative, raises here: add.at then wraps it or raises IndexError)
            flat = np.ravel_multi_index(key, out.shape)
        except ValueError:
            return False
        _fused.add_flat_at(out.reshape(-1), flat.reshape(-1), values.reshape(-1))
        return True
    return False


def _check_scatter_src(op, region, src):
    if tuple(region.shape) != tuple(src.shape):
        raise RuntimeError(f"{op}: expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(region.shape)}")


def dtype_error(kernel, npd):
    """The error PyTorch raises when an op has no kernel for a dtype (NotImplementedError, a RuntimeError)."""
    dt = _FROM_NP.get(npd)  # raw arrays' dtypes: all in the table but bfloat16 before its first use
    return _dt.no_kernel(kernel, dt if dt is not None else _dt.from_numpy_dtype(npd),
                         "convert the input first, e.g. x.float() for math functions or x.long() for integer ops")


def _uniform(like, shape):
    """U[0, 1) samples of ``shape`` from the default generator, on like's device (float64)."""
    return _uniform_array(like._data, shape)


def _uniform_array(like, shape):
    """U[0, 1) samples of ``shape`` from the default generator, on the device of array ``like``."""
    dev = _backend.device_of(like)
    rs = _random.default_generator._stream(dev)
    with _backend.on_device(dev):
        u = rs.random(shape) if dev.type == "cpu" else rs.random_sample(shape)
    return _backend.xp_of(like).asarray(u)


def check_no_requires_grad(fn, **tensors):
    """Raise PyTorch's error when an argument it does not differentiate requires grad (under grad mode).

    ``fn`` is the name PyTorch's message gives (its ATen function, e.g. ``nll_loss_forward``); the keywords
    are the arguments by name, None for an absent one. Without this the argument would be a silent
    constant: no gradient where the caller asked for one.

    >>> import workbench as wb
    >>> from workbench.ops._util import check_no_requires_grad
    >>> check_no_requires_grad("nll_loss_forward", weight=wb.ones(2, requires_grad=True))
    Traceback (most recent call last):
    ...
    RuntimeError: The function 'nll_loss_forward' is not differentiable with respect to argument 'weight'. This input cannot have requires_grad True.
    """
    if not STATE.enabled:
        return
    for name, t in tensors.items():
        if isinstance(t, Tensor) and t.requires_grad:
            raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument '{name}'. "
                               "This input cannot have requires_grad True.")


class _NoDerivative(Function):
    """An op's result, as a node of its inputs that require grad, whose backward raises PyTorch's error."""

    _raw = True
    op_name = "no_derivative"

    @staticmethod
    def forward(ctx, name, result, *inputs):
        ctx.name = name
        return result

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError(f"derivative for aten::{ctx.name} is not implemented")


def no_derivative(name, result, *inputs):
    """``result`` (a tensor) of an op PyTorch has no derivative for (heaviside, bincount, histogram): as in
    PyTorch it requires grad when an input does, and a backward through it raises instead of giving None.
    ``inputs`` may hold None."""
    inputs = [t for t in inputs if isinstance(t, Tensor)]
    if STATE.enabled and any(t.requires_grad for t in inputs):
        return _NoDerivative.apply(name, result._data, *inputs)
    return result


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
