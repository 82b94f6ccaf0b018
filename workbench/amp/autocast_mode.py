"""``autocast``: run the ops on PyTorch's autocast lists in lower precision (or float32) inside a region.

The context manager only flips the state in ops/_autocast.py; the listed ops cast their own inputs
there (one flag check each when autocast is off). The state is thread-local, as in PyTorch: a region
entered in one thread does not change the ops of another, and a new thread starts with autocast off.

>>> import workbench as wb
>>> a, b = wb.ones(2, 3), wb.ones(3, 2)
>>> with wb.autocast("cpu"):
...     (a @ b).dtype, (a + 1).dtype
(workbench.bfloat16, workbench.float32)
"""
import collections.abc
import functools
import warnings

from .. import cuda
from .._backend import dtypes as _dt
from ..ops import _autocast as _state
from ..tensor import Tensor

_SUPPORTED = (_dt.bfloat16, _dt.float16)


def is_autocast_available(device_type):
    """Whether autocast works for ``device_type`` ('cpu' and 'cuda').  >>> wb.amp.is_autocast_available("cpu")  ->  True"""
    return device_type in _state.DEVICE_TYPES


def _check_device(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if not is_autocast_available(device_type):
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")


class autocast:  # noqa: N801 - PyTorch's name
    """Context manager (and decorator) that enables mixed precision for the ops inside it.

    device_type: 'cpu' (default dtype bfloat16) or 'cuda' (float16). On the CPU, matmul, linear, conv,
    bmm, addmm, baddbmm and attention run in ``dtype``; losses, fft and linalg in float32; cat/stack
    promote. On CUDA also exp/log/pow/softmax/norms/losses run in float32 (PyTorch's lists, see
    workbench/ops/_autocast.py). ``enabled=False`` turns it off inside an enabled region.

    >>> import workbench as wb
    >>> lin = wb.nn.Linear(4, 2)
    >>> with wb.autocast(device_type="cpu", dtype=wb.bfloat16):
    ...     y = lin(wb.randn(3, 4))
    >>> y.dtype, lin.weight.dtype
    (workbench.bfloat16, workbench.float32)
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        _check_device(device_type)
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled:
            if device_type == "cuda":
                if not cuda.is_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                    enabled = False
            elif self.fast_dtype not in _SUPPORTED:
                name = device_type.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
                              stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you mean to "
                            "use autocast as a context manager? For example:\n"
                            "    with torch.autocast(device_type=...):\n"
                            "        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self.__class__(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)

        return decorate_autocast


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for ``device_type`` (PyTorch's no-argument form asks about CUDA)."""
    return _state.STATE.enabled["cuda" if device_type is None else device_type]


def set_autocast_enabled(device_type, enabled=None):
    """Turn autocast on or off for ``device_type`` (also PyTorch's old one-argument form, for CUDA)."""
    if enabled is None:  # set_autocast_enabled(bool)
        device_type, enabled = "cuda", device_type
    _check_device(device_type)
    _state.set_enabled(device_type, bool(enabled))


def get_autocast_dtype(device_type):
    """The lower-precision dtype autocast uses on ``device_type``.  >>> wb.get_autocast_dtype("cpu")  ->  workbench.bfloat16"""
    _check_device(device_type)
    return _state.STATE.dtype[device_type]


def set_autocast_dtype(device_type, dtype):
    _check_device(device_type)
    _state.STATE.dtype[device_type] = dtype


def is_autocast_cpu_enabled():
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    set_autocast_dtype("cuda", dtype)


def is_autocast_cache_enabled():
    return _state.STATE.cache_enabled


def set_autocast_cache_enabled(enabled):
    _state.STATE.cache_enabled = bool(enabled)


def clear_autocast_cache():
    """Drop the cached lower-precision copies of the parameters (autocast does it on leaving)."""
    _state.clear_cache()


def autocast_increment_nesting():
    s = _state.STATE
    s.nesting += 1
    return s.nesting


def autocast_decrement_nesting():
    s = _state.STATE
    s.nesting -= 1
    return s.nesting


def _cast(value, device_type, dtype):
    if isinstance(value, Tensor):
        ok = value.is_floating_point() and value.device.type == device_type and value.dtype is not _dt.float64
        return value.to(dtype) if ok else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable) and not hasattr(value, "__array__"):
        it = (_cast(v, device_type, dtype) for v in value)
        return type(value)(it) if isinstance(value, (list, tuple)) else it
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorate a custom Function's forward: under autocast, cast floating inputs to ``cast_inputs`` and run
    forward with autocast off (or, with cast_inputs=None, run it under the current autocast state).

    >>> import workbench as wb
    >>> class Double(wb.autograd.Function):
    ...     @staticmethod
    ...     @wb.amp.custom_fwd(device_type="cpu", cast_inputs=wb.float32)
    ...     def forward(ctx, x):
    ...         return x * 2
    ...     @staticmethod
    ...     @wb.amp.custom_bwd(device_type="cpu")
    ...     def backward(ctx, g):
    ...         return g * 2
    >>> with wb.autocast("cpu"):
    ...     Double.apply(wb.ones(2, dtype=wb.bfloat16)).dtype
    workbench.float32
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        on = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if on:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorate a custom Function's backward so it runs under the autocast state its forward saw."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
