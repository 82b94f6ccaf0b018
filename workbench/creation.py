"""Making tensors: from data (tensor, as_tensor, from_numpy) and by shape (zeros, arange, eye...)."""
import collections.abc
import math
import warnings

from . import _backend
from ._backend import dtypes as _dt
from ._core import _INFERENCE_BOX, Tensor
from .autograd.grad_mode import STATE
from ._outargs import writes_out

np = _backend.numpy


def _sizes_or_keyword(sizes, keyword, op, name="size"):
    """The sizes of ``f(*sizes)`` or of its keyword form ``f(size=(2, 3))`` (PyTorch's parser takes both)."""
    if keyword is None:
        return sizes
    if sizes:
        raise TypeError(f"{op}() got its {name} both positionally and as {name}=")
    return (keyword,)


def _size_args(size, op):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = s.item()
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"{op}(): argument 'size' must be tuple of ints, but found element of type "
                            f"{type(s).__name__} at pos {len(out)}")
        if s < 0:
            raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(int(s))
    return tuple(out)


def _finish(arr, requires_grad, op="tensor"):
    t = Tensor._make(arr)
    if requires_grad:
        t.requires_grad_(True)
    if STATE.inference:
        t._vbox = _INFERENCE_BOX
    return t


def _dev(device):
    return _backend.resolve_device(device) if device is not None else _backend.CPU


def _check_kernel(op, dt, dev, refused):
    """PyTorch's NotImplementedError for a range factory asked for a dtype of a category it has no kernel for
    (``refused``: dtype categories)."""
    if dt.category in refused:
        raise _dt.no_kernel(f"{op}_{dev.type}", dt, f"make the numbers in another dtype and compare them, e.g. "
                            f"{op}(...) != 0" if dt is _dt.bool_ else f"{op} makes real numbers: make them in a "
                            "floating dtype and convert with .to()")


def _is_sequence(x):
    # deque, range, array.array...: PyTorch takes any sequence (not text) as it takes lists
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, (str, bytes, Tensor))


def _check_no_text_dimension(data):
    """PyTorch sizes a nested sequence by walking its first elements, and a string met on that walk reads as
    one more dimension: ``ValueError: too many dimensions 'str'`` (``['a']``, ``[['a'], [1]]``). A string
    anywhere else is found by the dtype inference (``TypeError: new(): invalid data type 'str'``)."""
    x = data
    while _is_sequence(x) and len(x):
        x = x[0]
        if isinstance(x, str):
            raise ValueError(f"too many dimensions 'str': workbench.tensor takes numbers, not text ({x!r})")


def _infer_dtype(data):
    """PyTorch's dtype for data (its ``infer_scalar_type``): a Tensor, NumPy array or NumPy scalar keeps its
    own dtype; a Python bool is bool, an int int64, a float the default dtype, a complex its complex; a
    sequence promotes the dtypes of its items (``promote_types``, so ``[np.int32(1), 2]`` is int64), and an
    empty one is the default dtype."""
    if isinstance(data, Tensor):
        return data.dtype
    if isinstance(data, (np.ndarray, np.generic)):  # before float/complex: np.float64 subclasses float
        return _dt.from_numpy_dtype(data.dtype)
    if isinstance(data, bool):
        return _dt.bool_
    if isinstance(data, int):
        return _dt.int64
    if isinstance(data, float):
        return _dt.get_default_dtype()
    if isinstance(data, complex):
        return _dt.get_default_dtype().to_complex()
    if isinstance(data, str):
        raise TypeError("new(): invalid data type 'str' (workbench.tensor takes numbers, not text)")
    if hasattr(data, "__array__") or hasattr(data, "__cuda_array_interface__"):  # CuPy and other arrays
        return _dt.from_numpy_dtype(np.dtype(data.dtype))
    if isinstance(data, (list, tuple)) or _is_sequence(data):
        if len(data) == 0:
            return _dt.get_default_dtype()
        found = None
        for x in data:
            d = _infer_dtype(x)
            found = d if found is None else _dt.promote_types(found, d)
            if found is _dt.complex128:  # nothing promotes further
                return found
        return found
    raise RuntimeError(f"Could not infer dtype of {type(data).__name__}: workbench.tensor takes numbers, "  # as PyTorch
                       "nested sequences of numbers, arrays or tensors")


def _host_array(data):
    """data as a NumPy array (Tensors and CuPy arrays inside lists are brought to the host)."""
    if isinstance(data, Tensor):
        return data.detach().cpu()._data
    if isinstance(data, (list, tuple)) or _is_sequence(data):
        if any(isinstance(x, Tensor) for x in data):
            return np.stack([_host_array(x) for x in data]) if data else np.asarray(data)
        try:
            return np.asarray(data)
        except ValueError as e:
            raise ValueError(f"expected a rectangular nested sequence of numbers: {e}") from None
    if hasattr(data, "get") and not isinstance(data, np.ndarray):
        return data.get()
    return np.asarray(data)


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (a number, nested list, NumPy/CuPy array or Tensor).

    >>> import workbench as wb
    >>> wb.tensor([[1, 2], [3, 4]])
    tensor([[1, 2],
            [3, 4]])
    >>> wb.tensor(1.5, requires_grad=True)
    tensor(1.5000, requires_grad=True)
    """
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() "
                      "or sourceTensor.clone().detach().requires_grad_(True), rather than "
                      "workbench.tensor(sourceTensor).", UserWarning, stacklevel=2)
    dt = _dt.to_dtype(dtype) if dtype is not None else None
    dev = _dev(device) if device is not None else (data.device if isinstance(data, Tensor) else None)
    if dev is None and _backend.cupy_loaded() and isinstance(data, _backend.cupy().ndarray):
        dev = _backend.device_of(data)
    dev = dev or _backend.CPU
    if dt is None:
        if isinstance(data, (np.ndarray, np.generic)) or (hasattr(data, "dtype") and hasattr(data, "shape")
                                                          and not isinstance(data, Tensor)):
            dt = _dt.from_numpy_dtype(np.dtype(data.dtype))
        else:
            _check_no_text_dimension(data)
            dt = _infer_dtype(data)
    if dev.type == "cuda" and not isinstance(data, (list, tuple, Tensor)) and hasattr(data, "dtype"):
        cp = _backend.cupy()
        with cp.cuda.Device(dev.index):
            arr = cp.array(data, dtype=dt.np, copy=True)
    else:
        host = _host_array(data)
        if host.dtype == object:
            raise TypeError("can't convert np.ndarray of type numpy.object_: the only supported types are numbers")
        arr = np.array(host, dtype=dt.np, copy=True)
        if dev.type != "cpu":
            arr = _backend.to_device(arr, dev)
    if pin_memory:
        if dev.type != "cpu":
            raise RuntimeError(f"pin_memory=True needs a CPU tensor, got device {dev}: only host memory is pinned")
        arr = _backend.pinned(arr)
    t = _finish(arr, requires_grad)
    if pin_memory:
        t._pinned = True
    return t


def as_tensor(data, dtype=None, device=None):
    """A tensor sharing memory with ``data`` where possible (same dtype and device), else a copy.

    >>> import numpy as np, workbench as wb
    >>> a = np.zeros(2, dtype=np.float32); t = wb.as_tensor(a); a[0] = 1; t
    tensor([1., 0.])
    """
    dt = _dt.to_dtype(dtype) if dtype is not None else None
    if isinstance(data, Tensor):
        return data.to(dtype=dt, device=device) if (dt or device) else data
    dev = _dev(device) if device is not None else None
    if isinstance(data, np.ndarray) and (dev is None or dev.type == "cpu") and (dt is None or dt.np == data.dtype):
        if data.dtype in _dt._FROM_NP and data.dtype.kind != "u" or data.dtype == np.uint8:
            return from_numpy(data)
    if _backend.cupy_loaded() and isinstance(data, _backend.cupy().ndarray):
        src = _backend.device_of(data)
        if (dev is None or dev == src) and (dt is None or dt.np == data.dtype):
            return Tensor._make(data)
    return tensor(data, dtype=dt, device=dev)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """``obj`` as a tensor: shared with it where possible (copy=None), always a copy (copy=True), or shared
    or a ValueError (copy=False); ``requires_grad`` makes the result a leaf that requires grad.

    >>> import numpy as np, workbench as wb
    >>> a = np.zeros(2, dtype=np.float32)
    >>> wb.asarray(a, copy=True).requires_grad_(), wb.asarray([1, 2], dtype=wb.float32, requires_grad=True)
    (tensor([0., 0.], requires_grad=True), tensor([1., 2.], requires_grad=True))
    """
    if copy:
        t = obj.detach().clone() if isinstance(obj, Tensor) else tensor(obj)
        t = t.to(dtype=_dt.to_dtype(dtype) if dtype is not None else None, device=device) if (dtype or device) else t
    else:
        t = as_tensor(obj, dtype=dtype, device=device)
        shares = t is obj or t._data is obj or isinstance(obj, np.ndarray) and np.shares_memory(t._data, obj)
        if copy is False and not shares:
            raise ValueError(f"asarray(copy=False): can't alias {type(obj).__name__} of dtype "
                             f"{getattr(obj, 'dtype', 'unknown')} as a tensor of dtype {t.dtype} on {t.device}: a copy is "
                             "needed (pass copy=None or copy=True)")
    if requires_grad:
        t = t.detach().requires_grad_(True) if t is obj else t.requires_grad_(True)
    return t


def from_numpy(ndarray):
    """A CPU tensor sharing memory with a NumPy array (writes through both ways).

    >>> import numpy as np, workbench as wb
    >>> a = np.arange(3); t = wb.from_numpy(a); t[0] = 7; a
    array([7, 1, 2])
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if ndarray.dtype not in _dt._FROM_NP or ndarray.dtype.kind == "u" and ndarray.dtype != np.uint8:
        raise TypeError(f"can't convert np.ndarray of type numpy.{ndarray.dtype}. The only supported types are: "
                        "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint8, and bool.")
    if not ndarray.flags.writeable:
        warnings.warn("The given NumPy array is not writable, and workbench does not support non-writable tensors. "
                      "Writing to the tensor will fail.", UserWarning, stacklevel=2)
    return Tensor._make(ndarray)


def from_dlpack(ext_tensor):
    """A tensor sharing memory with any DLPack-capable array (NumPy, CuPy, PyTorch...)."""
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    dev_type = ext_tensor.__dlpack_device__()[0] if hasattr(ext_tensor, "__dlpack_device__") else 1
    if dev_type == 1:
        return Tensor._make(np.from_dlpack(ext_tensor))
    cp = _backend.cupy()
    return Tensor._make(cp.from_dlpack(ext_tensor))


def _factory(op, fill):
    def make(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
             memory_format=None):
        shape = _size_args(size, op)
        dt = _dt.to_dtype(dtype) if dtype is not None else _dt.get_default_dtype()
        dev = _dev(device)
        xp = _backend.xp_for(dev)
        with _backend.on_device(dev):
            arr = getattr(xp, fill)(shape, dtype=dt.np)
        t = _finish(arr, requires_grad)
        if out is not None:
            out.resize_(shape) if tuple(out.shape) != shape else None
            out.copy_(t)
            return out
        return t

    make.__name__ = make.__qualname__ = op
    return make


zeros = _factory("zeros", "zeros")
zeros.__doc__ = "A tensor of zeros.  >>> wb.zeros(2, 3).shape  ->  workbench.Size([2, 3])"
ones = _factory("ones", "ones")
ones.__doc__ = "A tensor of ones.  >>> wb.ones(2)  ->  tensor([1., 1.])"
empty = _factory("empty", "empty")
empty.__doc__ = "An uninitialised tensor.  >>> wb.empty(2, 3).shape  ->  workbench.Size([2, 3])"


@writes_out
def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """A tensor filled with fill_value; its dtype follows the value (bool, int64 or the default float).

    >>> import workbench as wb
    >>> wb.full((2,), 7)
    tensor([7, 7])
    """
    shape = _size_args((size,) if not isinstance(size, int) else (size,), "full")
    dt = _dt.to_dtype(dtype) if dtype is not None else _dt.scalar_dtype(
        fill_value.item() if isinstance(fill_value, Tensor) else fill_value)
    dev = _dev(device)
    xp = _backend.xp_for(dev)
    with _backend.on_device(dev):
        arr = xp.full(shape, fill_value.item() if isinstance(fill_value, Tensor) else fill_value, dtype=dt.np)
    return _finish(arr, requires_grad)


def _like(fn, example):
    def make(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
        return fn(*input.shape, dtype=dtype or input.dtype, device=device or input.device,
                  requires_grad=requires_grad)

    make.__name__ = fn.__name__ + "_like"
    make.__doc__ = f"{fn.__name__} with input's shape, dtype and device.  >>> {example}"
    return make


zeros_like = _like(zeros, "wb.zeros_like(wb.ones(2))  ->  tensor([0., 0.])")
ones_like = _like(ones, "wb.ones_like(wb.zeros(2))  ->  tensor([1., 1.])")
empty_like = _like(empty, "wb.empty_like(wb.ones(2, dtype=wb.int32)).dtype  ->  workbench.int32")  # values unset


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    """full with input's shape, dtype and device.  >>> wb.full_like(wb.ones(2), 3.)  ->  tensor([3., 3.])"""
    return full(tuple(input.shape), fill_value, dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad)


@writes_out
def arange(start=None, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
           pin_memory=False):
    """Values from start to end (exclusive) by step; int64 unless any argument is a float.

    >>> import workbench as wb
    >>> wb.arange(3), wb.arange(0, 1, 0.5)
    (tensor([0, 1, 2]), tensor([0.0000, 0.5000]))
    """
    if start is None and end is None:
        raise TypeError("arange() missing its end: call arange(end), arange(start, end) or arange(start, end, step)")
    if end is None:
        start, end = 0, start
    elif start is None:  # arange(end=5)
        start = 0
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    # PyTorch's rule: int64 when every bound is an integer (Python bool and int, NumPy integers), else
    # the default float (a NumPy bool counts as a number; a complex one needs a zero imaginary part)
    integral = all(isinstance(v, (int, np.integer)) for v in vals)
    for i, v in enumerate(vals):
        if isinstance(v, (complex, np.complexfloating)):
            if v.imag != 0:
                raise RuntimeError(f"arange: bound {v} has an imaginary part: arange takes real numbers")
            vals[i] = v.real
    start, end, step = vals
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange: upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    if dtype is not None:
        dt = _dt.to_dtype(dtype)
    else:
        dt = _dt.int64 if integral else _dt.get_default_dtype()
    n = max(0, math.ceil((end - start) / step))
    dev = _dev(device)
    _check_kernel("arange", dt, dev, (_dt._BOOL, _dt._COMPLEX))
    xp = _backend.xp_for(dev)
    with _backend.on_device(dev):
        # computed in float64 from the index, as PyTorch does, so float steps don't drift
        arr = (xp.arange(n, dtype=np.float64) * step + start) if dt.category >= _dt._FLOAT else xp.arange(
            start, start + n * step, step, dtype=np.int64)[:n]
        arr = arr.astype(dt.np)
    return _finish(arr, requires_grad)


def _spaced_ends(op, start, end, dtype):
    """linspace's and logspace's ends as Python numbers, and the dtype: complex ends make the default complex
    dtype, and refuse a real one, as PyTorch's."""
    a, b = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    kind = complex if isinstance(a, complex) or isinstance(b, complex) else float  # np.complex64 is no complex
    inferred = _dt.get_default_dtype().to_complex() if kind is complex else _dt.get_default_dtype()
    if dtype is None:
        return kind(a), kind(b), inferred
    dt = _dt.to_dtype(dtype)
    if kind is complex and not dt.is_complex:
        raise RuntimeError(f"{op}(): inferred dtype {inferred._scalar_name} can't be safely cast to passed dtype "
                           f"{dt._scalar_name}; pass a complex dtype or real ends")
    return kind(a), kind(b), dt


@writes_out
def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    """steps evenly spaced values from start to end inclusive.

    >>> import workbench as wb
    >>> wb.linspace(0, 1, 3)
    tensor([0.0000, 0.5000, 1.0000])
    """
    if steps < 0:
        raise RuntimeError("linspace: number of steps must be non-negative")
    start, end, dt = _spaced_ends("linspace", start, end, dtype)
    dev = _dev(device)
    _check_kernel("linspace", dt, dev, (_dt._BOOL,))
    xp = _backend.xp_for(dev)
    with _backend.on_device(dev):
        arr = xp.linspace(start, end, int(steps)).astype(dt.np)
    return _finish(arr, requires_grad)


@writes_out
def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    """base ** linspace(start, end, steps).  >>> wb.logspace(0, 2, 3)  ->  tensor([  1.,  10., 100.])"""
    start, end, dt = _spaced_ends("logspace", start, end, dtype)
    dev = _dev(device)
    _check_kernel("logspace", dt, dev, (_dt._BOOL,))
    xp = _backend.xp_for(dev)
    with _backend.on_device(dev):
        arr = (float(base) ** xp.linspace(start, end, int(steps))).astype(dt.np)
    return _finish(arr, requires_grad)


@writes_out
def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """The identity matrix (n x m).  >>> wb.eye(2)  ->  tensor([[1., 0.], [0., 1.]])"""
    dt = _dt.to_dtype(dtype) if dtype is not None else _dt.get_default_dtype()
    dev = _dev(device)
    xp = _backend.xp_for(dev)
    with _backend.on_device(dev):
        arr = xp.eye(n, n if m is None else m, dtype=dt.np)
    return _finish(arr, requires_grad)


def _legacy_construct(args, device, dtype=None):
    dt = dtype or _dt.get_default_dtype()
    if len(args) == 1 and not isinstance(args[0], int):
        return tensor(args[0], dtype=dt, device=device)
    return empty(*args, dtype=dt, device=device)


class _LegacyTensorType(type):
    # torch.FloatTensor(2, 3), torch.LongTensor([1, 2]), isinstance(t, torch.FloatTensor): old code's habits
    def __call__(cls, *args, device=None):
        return _legacy_construct(args, device, cls.dtype)

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == "cpu"


def _legacy_type(dtype):
    name = dtype._scalar_name + "Tensor"  # the dtype's own legacy name: x.type() of a CPU tensor ends in it
    doc = (f"The legacy constructor of CPU {dtype} tensors: ``{name}(*sizes)`` (uninitialised) or ``{name}(data)``."
           f"\n\n>>> import workbench as wb\n>>> isinstance(wb.{name}([1]), wb.{name})\nTrue\n")
    return _LegacyTensorType(name, (), {"dtype": dtype, "__doc__": doc, "__module__": "workbench"})


FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor = map(_legacy_type, (_dt.float32, _dt.float64, _dt.float16,
                                                                           _dt.bfloat16))
ByteTensor, CharTensor, ShortTensor, IntTensor, LongTensor, BoolTensor = map(_legacy_type, (
    _dt.uint8, _dt.int8, _dt.int16, _dt.int32, _dt.int64, _dt.bool_))


# --- Tensor.new_*: same dtype and device as self unless given ---------------------------------------
def _new(fn):
    def method(self, *sizes, size=None, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
        sizes = _sizes_or_keyword(sizes, size, "new_" + fn.__name__)
        return fn(*sizes, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)

    method.__name__ = "new_" + fn.__name__
    method.__doc__ = f"{fn.__name__} with self's dtype and device.  >>> wb.ones(2).new_{fn.__name__}(3).shape"
    return method


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach()",
                      UserWarning, stacklevel=2)
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def _new_legacy(self, *args, device=None):
    """The legacy ``x.new(*sizes)`` / ``x.new(data)``: self's dtype and device.  >>> wb.ones(2).new([1, 2])  ->  tensor([1., 2.])"""
    if not args:
        return empty(0, dtype=self.dtype, device=device or self.device)
    return _legacy_construct(args, device or self.device, self.dtype)


def _legacy_init(self, *args, device=None):
    # the legacy constructor: Tensor(data) or Tensor(*sizes) makes a default-dtype tensor
    Tensor._init_from(self, _legacy_construct(args, device)._data)


# attached to Tensor by the registry in workbench/tensor.py
METHODS = {"__init__": _legacy_init, "new_zeros": _new(zeros), "new_ones": _new(ones), "new_empty": _new(empty),
           "new_full": _new_full, "new_tensor": _new_tensor, "new": _new_legacy}
