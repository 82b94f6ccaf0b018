"""Process-wide switches that real programs set at the top: determinism, float32 matmul precision, threads,
warn-always, denormals; and the one workbench sets itself, the cyclic collector's first threshold.

Each is kept and checked as PyTorch checks it, and does what it can on NumPy/CuPy:

* ``use_deterministic_algorithms``: workbench's CPU ops are deterministic already (NumPy reductions are
  ordered); the flag is recorded for code that reads it back.
* ``set_float32_matmul_precision``: recorded and read back; in PyTorch 'high'/'medium' let CUDA use TF32,
  while workbench's CuPy matmuls keep CuPy's default and NumPy always computes in float32.
* ``set_num_threads`` / ``get_num_threads``: the threads of the BLAS NumPy links (OpenBLAS in NumPy's
  wheels), set through its own API; elementwise NumPy ops are single-threaded.

>>> import workbench as wb
>>> wb.set_float32_matmul_precision("high"); wb.get_float32_matmul_precision()
'high'
>>> wb.use_deterministic_algorithms(True); wb.are_deterministic_algorithms_enabled()
True
>>> wb.use_deterministic_algorithms(False)
"""
import ctypes
import gc
import os

from ._backend import blas as _blas

GC_THRESHOLD = 10_000


def tune_gc():
    """Raise CPython's first collection threshold to ``GC_THRESHOLD`` (``import workbench`` calls this).

    The tape is Python objects, a node, a tensor and a few tuples an op, that reference counting frees as a
    step's graph goes. The cyclic collector counts them as allocations: at its default threshold (700 net
    allocations) it runs several times a step, scans a tape that is alive, promotes it to older generations,
    and so brings on full collections that scan every object in the process. An LSTM written by hand spent 8%
    of its step collecting (15% with torch imported too), and none once the threshold was above a step's tape
    (benchmarks/RESULTS.md). PyTorch's tape is C++ and never counts. Cyclic garbage is still collected, after
    10,000 net allocations instead of 700. A threshold already higher is kept; ``WORKBENCH_GC_THRESHOLD=N``
    sets N instead (``0``: leave the collector as it is); ``gc.set_threshold`` afterwards overrides it.

    >>> import gc, workbench
    >>> gc.get_threshold()[0] >= 700
    True
    """
    want = os.environ.get("WORKBENCH_GC_THRESHOLD")
    try:
        want = GC_THRESHOLD if want is None else int(want)
    except ValueError:
        raise ValueError(f"WORKBENCH_GC_THRESHOLD must be an integer (0 leaves the collector as it is), got {want!r}") from None
    t0, t1, t2 = gc.get_threshold()
    if want > t0:
        gc.set_threshold(want, t1, t2)


_STATE = {"deterministic": False, "warn_only": False, "matmul_precision": "highest", "warn_always": False,
          "interop_threads": 1}
_PRECISIONS = ("highest", "high", "medium")
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Ask for deterministic algorithms (workbench's CPU ops already are; recorded for read-back)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms expects a bool, but got {type(mode).__name__}")
    _STATE["deterministic"], _STATE["warn_only"] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled():
    return _STATE["deterministic"]


def is_deterministic_algorithms_warn_only_enabled():
    return _STATE["warn_only"]


def set_deterministic_debug_mode(debug_mode):
    """'default'/0, 'warn'/1 or 'error'/2, as ``use_deterministic_algorithms(True, warn_only=...)``."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    if not _STATE["deterministic"]:
        return 0
    return 1 if _STATE["warn_only"] else 2


def set_float32_matmul_precision(precision):
    """'highest' (float32 throughout), 'high' or 'medium' (TF32/bfloat16 allowed where the device has them)."""
    if precision not in _PRECISIONS:
        raise RuntimeError(f"Invalid precision {precision!r}: expected one of {', '.join(_PRECISIONS)}")
    _STATE["matmul_precision"] = precision


def get_float32_matmul_precision():
    return _STATE["matmul_precision"]


def set_warn_always(b):
    """Repeat warnings PyTorch gives once per process (recorded; workbench's warnings follow Python's filters)."""
    _STATE["warn_always"] = bool(b)


def is_warn_always_enabled():
    return _STATE["warn_always"]


def set_flush_denormal(mode):
    """PyTorch returns whether flushing denormals is supported: NumPy offers no such switch, so False."""
    return False


def _openblas(name):
    for path in _blas._mapped_blas_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for sym in (f"scipy_openblas_{name}64_", f"openblas_{name}64_", f"openblas_{name}"):
            fn = getattr(lib, sym, None)
            if fn is not None:
                return fn
    return None


def get_num_threads():
    """Threads the BLAS uses for matrix products (the CPU count when no OpenBLAS is found)."""
    fn = _openblas("get_num_threads")
    return int(fn()) if fn is not None else os.cpu_count() or 1


def set_num_threads(int):  # noqa: A002 - PyTorch's parameter name
    """Set the BLAS's thread count (matrix products, convolutions' GEMMs)."""
    if not isinstance(int, type(1)) or int < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {int!r}")
    fn = _openblas("set_num_threads")
    if fn is not None:
        fn.argtypes = [ctypes.c_int]
        fn(int)


def get_num_interop_threads():
    return _STATE["interop_threads"]


def set_num_interop_threads(int):  # noqa: A002 - PyTorch's parameter name
    """Recorded (workbench runs independent ops one after another on the calling thread)."""
    if not isinstance(int, type(1)) or int < 1:
        raise RuntimeError(f"set_num_interop_threads expects a positive integer, got {int!r}")
    _STATE["interop_threads"] = int


def init_num_threads():
    """Nothing to initialise: the BLAS sets its threads up when NumPy loads it."""


__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_float32_matmul_precision", "get_float32_matmul_precision",
           "set_warn_always", "is_warn_always_enabled", "set_flush_denormal", "get_num_threads", "set_num_threads",
           "get_num_interop_threads", "set_num_interop_threads", "init_num_threads"]
