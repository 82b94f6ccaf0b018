"""The array backends: NumPy for "cpu", CuPy for "cuda". The only place that imports numpy or cupy.

Op code receives its array module as ``ctx.xp`` and never imports one itself. CuPy is imported the
first time a CUDA device is asked for, so ``import workbench`` stays fast where CuPy is absent.
Tests install a NumPy-backed fake of cupy (``workbench.testing.fake_cupy``) to run every CUDA path
on a machine without a GPU.
"""
import ctypes
import os
import sys

import numpy

from . import dtypes
from .device import CPU, device

np = numpy
ndarray = numpy.ndarray


def _keep_freed_memory():
    """Let glibc keep freed blocks for reuse instead of returning every large one to the OS.

    NumPy allocates each op's output with malloc; by default glibc mmaps blocks above 128 KiB (or trims
    the heap top) and unmaps them on free, so every large temporary page-faults again on first touch:
    that more than doubled the time of a small CNN's training step. Skipped when the user set MALLOC_*
    variables, which glibc applies itself.
    """
    if not sys.platform.startswith("linux") or any(k.startswith("MALLOC_") for k in os.environ):
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: blocks up to 32 MiB (glibc's maximum) come from the heap
        libc.mallopt(-1, 256 << 20)  # M_TRIM_THRESHOLD: keep up to 256 MiB of free heap top
        libc.mallopt(-2, 32 << 20)  # M_TOP_PAD: grow the heap in 32 MiB steps
    except (OSError, AttributeError):  # not glibc (musl, ...): leave the allocator alone
        pass


_keep_freed_memory()
_cupy = None  # the cupy module once loaded (real or fake)
_cupy_error = None
_CUDA_DEVICES = {}


def cupy():
    """The cupy module, imported on first use; RuntimeError if it cannot be had."""
    global _cupy, _cupy_error
    if _cupy is None:
        if _cupy_error is not None:
            raise RuntimeError(_cupy_error)
        try:
            import cupy as cp

            cp.cuda.runtime.getDeviceCount()
        except Exception as e:  # ImportError, or CUDA driver errors on machines without a GPU
            _cupy_error = (
                "CUDA is not available: workbench runs 'cuda' tensors with CuPy, and "
                f"importing or initialising it failed ({type(e).__name__}: {e}). Install the [cuda] extra "
                "(pip install workbench[cuda]) on a machine with an NVIDIA GPU, or use device='cpu'."
            )
            raise RuntimeError(_cupy_error) from None
        _cupy = cp
    return _cupy


def pinned(arr):
    """A copy of host array ``arr`` in page-locked memory from CuPy's pinned pool (it copies to a GPU
    asynchronously); a plain copy on the fake cupy; RuntimeError without CUDA, as PyTorch."""
    cp = cupy()
    if getattr(cp, "__fake__", False):
        return numpy.array(arr, copy=True)
    host = numpy.ndarray(arr.shape, arr.dtype, buffer=cp.cuda.alloc_pinned_memory(max(arr.nbytes, 1)))
    host[...] = arr
    return host


def use_cupy(module):
    """Install a cupy module (the fake one in tests); None forgets it and re-imports lazily."""
    global _cupy, _cupy_error
    _cupy, _cupy_error = module, None
    _CUDA_DEVICES.clear()


def cupy_loaded():
    return _cupy is not None


def xp_of(arr):
    """The array module (numpy or cupy) that owns ``arr``."""
    if type(arr) is ndarray or isinstance(arr, (ndarray, numpy.generic)):
        if _cupy is not None and isinstance(arr, _cupy.ndarray):
            return _cupy
        return numpy
    if _cupy is not None and isinstance(arr, _cupy.ndarray):
        return _cupy
    raise TypeError(f"expected a NumPy or CuPy array, got {type(arr).__name__}")


def device_of(arr):
    """The device of an array: CPU for NumPy, cuda:N for CuPy."""
    if type(arr) is ndarray:
        return CPU
    if _cupy is not None and isinstance(arr, _cupy.ndarray):
        i = arr.device.id
        d = _CUDA_DEVICES.get(i)
        if d is None:
            d = _CUDA_DEVICES[i] = device("cuda", i)
        return d
    return CPU


def xp_for(dev):
    """The array module that holds tensors on ``dev``."""
    return numpy if dev.type == "cpu" else cupy()


def resolve_device(dev):
    """A device from a device, string or int; 'cuda' gets the current CUDA device's index."""
    if dev is None:
        return CPU
    if not isinstance(dev, device):
        dev = device(dev)
    if dev.type == "cuda":
        cp = cupy()
        n = cp.cuda.runtime.getDeviceCount()
        idx = cp.cuda.Device().id if dev.index is None else dev.index
        if idx >= n:
            raise RuntimeError(f"CUDA error: invalid device ordinal: cuda:{idx} requested, {n} device(s) available")
        return _CUDA_DEVICES.get(idx) or _CUDA_DEVICES.setdefault(idx, device("cuda", idx))
    return CPU


def to_device(arr, dev):
    """Copy (or pass through) an array to ``dev``; the one place host<->device transfers happen."""
    src = device_of(arr)
    if src == dev:
        return arr
    if dev.type == "cpu":
        return arr.get()
    cp = cupy()
    with cp.cuda.Device(dev.index):
        return cp.asarray(arr)


def asarray(data, dt, dev):
    """An array of dtype ``dt`` (workbench dtype) on ``dev`` from array-like ``data``."""
    if dev.type == "cpu":
        return numpy.asarray(data, dtype=dt.np)
    cp = cupy()
    with cp.cuda.Device(dev.index):
        return cp.asarray(data, dtype=dt.np)


def on_device(dev):
    """A context manager making ``dev`` current for allocations (no-op on CPU)."""
    if dev.type == "cpu":
        return _NULL
    return cupy().cuda.Device(dev.index)


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


_NULL = _Null()


def data_ptr(arr):
    """The address of an array's first element."""
    if type(arr) is ndarray or isinstance(arr, ndarray):
        return arr.__array_interface__["data"][0]
    return arr.data.ptr


def scipy_special(xp, name, op):
    """Function ``name`` of ``scipy.special`` (of ``cupyx.scipy.special`` for CuPy arrays).

    SciPy is an optional dependency: only the Bessel J/Y/K functions, airy_ai and gammainc need it (every
    other special function is computed in array ops). Without it, ModuleNotFoundError names the op.
    """
    real_cupy = xp is not numpy and not getattr(xp, "__fake__", False)
    try:
        if real_cupy:
            import cupyx.scipy.special as sp
        else:
            import scipy.special as sp
    except ImportError:
        pkg = "cupyx.scipy (part of CuPy)" if real_cupy else "SciPy (pip install scipy)"
        raise ModuleNotFoundError(f"{op} needs {pkg}: workbench computes it with that library's "
                                  f"special.{name}") from None
    fn = getattr(sp, name)
    if xp is numpy or real_cupy:
        return fn
    # the fake cupy used in CPU tests: compute on the host copy, hand back a device array
    return lambda *args: xp.asarray(fn(*[xp.asnumpy(a) if hasattr(a, "shape") else a for a in args]))
