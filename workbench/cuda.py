"""``workbench.cuda``: CUDA devices through CuPy (imported only when first needed)."""
import sys as _sys

from . import _backend
from ._backend.dtypes import float16 as _float16
from .amp._device_aliases import _module as _amp_module


def is_available():
    """Whether a CUDA device can be used (CuPy installed and a GPU present).

    >>> import workbench as wb
    >>> isinstance(wb.cuda.is_available(), bool)
    True
    """
    try:
        return _backend.cupy().cuda.runtime.getDeviceCount() > 0
    except RuntimeError:
        return False


def device_count():
    """Number of CUDA devices (0 without CuPy or a GPU)."""
    try:
        return int(_backend.cupy().cuda.runtime.getDeviceCount())
    except RuntimeError:
        return 0


def _cp():
    return _backend.cupy()


def current_device():
    return _cp().cuda.Device().id


def set_device(device):
    idx = _backend.resolve_device(device if not isinstance(device, int) else f"cuda:{device}").index
    _cp().cuda.Device(idx).use()


def synchronize(device=None):
    """Wait for all kernels on the device to finish."""
    cp = _cp()
    if device is None:
        cp.cuda.Device().synchronize()
    else:
        cp.cuda.Device(_backend.resolve_device(device).index).synchronize()


def manual_seed(seed):
    from .random import default_generator

    default_generator.manual_seed(seed)


manual_seed_all = manual_seed


def memory_allocated(device=None):
    """Bytes held by live CuPy arrays (CuPy's default memory pool's used bytes)."""
    return int(_cp().get_default_memory_pool().used_bytes())


_peak = [0]


def max_memory_allocated(device=None):
    _peak[0] = max(_peak[0], memory_allocated(device))
    return _peak[0]


def reset_peak_memory_stats(device=None):
    _peak[0] = memory_allocated(device)


def memory_reserved(device=None):
    return int(_cp().get_default_memory_pool().total_bytes())


def empty_cache():
    """Return cached, unused blocks of CuPy's memory pool to the driver."""
    if _backend.cupy_loaded():
        _cp().get_default_memory_pool().free_all_blocks()


class device:
    """Context manager that makes a CUDA device current."""

    def __init__(self, device):
        self.idx = _backend.resolve_device(device if not isinstance(device, int) else f"cuda:{device}").index

    def __enter__(self):
        self._d = _cp().cuda.Device(self.idx)
        self._d.__enter__()

    def __exit__(self, *a):
        self._d.__exit__(*a)


class Stream:
    """A CUDA stream (CuPy's), usable as a context manager."""

    def __init__(self, device=None, priority=0):
        self._s = _cp().cuda.Stream(non_blocking=True)

    def __enter__(self):
        self._s.__enter__()
        return self

    def __exit__(self, *a):
        return self._s.__exit__(*a)

    def synchronize(self):
        self._s.synchronize()


class Event:
    """A CUDA event for timing: ``start.record(); ...; end.record(); start.elapsed_time(end)`` (ms)."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self._e = _cp().cuda.Event(block=blocking, disable_timing=not enable_timing)

    def record(self, stream=None):
        self._e.record(None if stream is None else stream._s)

    def synchronize(self):
        self._e.synchronize()

    def query(self):
        return self._e.query()

    def elapsed_time(self, end):
        return _cp().cuda.get_elapsed_time(self._e, end._e)


def current_stream(device=None):
    s = Stream.__new__(Stream)
    s._s = _cp().cuda.get_current_stream()
    return s


# torch.cuda.amp (autocast, GradScaler), importable as a submodule as in PyTorch
amp = _amp_module("cuda", _float16, __name__ + ".amp")
_sys.modules[amp.__name__] = amp
