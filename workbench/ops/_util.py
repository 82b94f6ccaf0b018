"""Helpers shared by the op families: dtype promotion on raw operands, dim normalisation."""
from .. import _backend
from .._backend import dtypes as _dt

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
        return type(x.item())
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
    if hasattr(x, "dtype") and not isinstance(x, _np_generic):
        return x if x.dtype == npd else x.astype(npd)
    if isinstance(x, _np_generic):
        return x.item()
    if type(x) is int and npd.kind in "iu":
        bits = 8 * npd.itemsize
        lo = -(1 << (bits - 1)) if npd.kind == "i" else 0
        if not lo <= x < lo + (1 << bits):  # wrap as PyTorch does (NumPy 2 refuses out-of-range ints)
            x = (x - lo) % (1 << bits) + lo
    return x


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
