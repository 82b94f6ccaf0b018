"""``workbench.backends.cudnn``: PyTorch's cuDNN switches.

Workbench's GPU path is CuPy and its own kernels, never cuDNN, so ``is_available()`` is False and
``version()`` None, as on a PyTorch build without cuDNN. The switches (``enabled``, ``benchmark``,
``deterministic``, ``allow_tf32``, ``benchmark_limit``) are kept and checked as PyTorch checks them, so
programs that set them run; they change nothing in workbench's kernels.

>>> import workbench as wb
>>> wb.backends.cudnn.benchmark = True
>>> wb.backends.cudnn.benchmark, wb.backends.cudnn.is_available()
(True, False)
>>> wb.backends.cudnn.benchmark = False
"""
from ._flags import boolean, install


def is_available():
    """False: workbench never calls cuDNN."""
    return False


def version():
    """None: no cuDNN library is used."""
    return None


def is_acceptable(tensor):
    """Whether cuDNN would take this tensor: never, since it is not used."""
    return False


def _limit(v):
    if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
        raise RuntimeError(f"set_benchmark_limit_cudnn expects a non-negative int, but got {v!r}")
    return v


def _precision(v):
    if v not in ("none", "ieee", "tf32"):
        raise RuntimeError(f"fp32_precision must be one of 'none', 'ieee', 'tf32', got {v!r}")
    return v


_flags = install(__name__, {
    "enabled": boolean(True, "set_enabled_cudnn"),
    "benchmark": boolean(False, "set_benchmark_cudnn"),
    "deterministic": boolean(False, "set_deterministic_cudnn"),
    "allow_tf32": boolean(True, "set_allow_tf32_cudnn"),
    "benchmark_limit": (None, _limit),
    "fp32_precision": ("none", _precision),
})


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True,
          fp32_precision="none", depthwise_kernel="auto"):
    """Set the switches inside a ``with`` block and restore them after (PyTorch's defaults here disable cuDNN).

    >>> import workbench as wb
    >>> with wb.backends.cudnn.flags(enabled=True, deterministic=True):
    ...     wb.backends.cudnn.deterministic
    True
    >>> wb.backends.cudnn.deterministic
    False
    """
    return _flags(enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit, deterministic=deterministic,
                  allow_tf32=allow_tf32, fp32_precision=fp32_precision)
