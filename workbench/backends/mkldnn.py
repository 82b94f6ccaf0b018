"""``workbench.backends.mkldnn``: PyTorch's oneDNN switches. Workbench's CPU path is NumPy and its BLAS,
not oneDNN, so ``is_available()`` is False; ``enabled``/``deterministic``/``allow_tf32`` are kept and
checked as PyTorch does and change nothing.

>>> import workbench as wb
>>> wb.backends.mkldnn.is_available(), wb.backends.mkldnn.enabled
(False, True)
"""
from ._flags import boolean, install


def is_available():
    """False: workbench does not use oneDNN (MKL-DNN)."""
    return False


_flags = install(__name__, {
    "enabled": boolean(True, "set_enabled_mkldnn"),
    "deterministic": boolean(False, "set_deterministic_mkldnn"),
    "allow_tf32": boolean(True, "set_allow_tf32_mkldnn"),
})


def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    """Set the switches inside a ``with`` block and restore them after."""
    return _flags(enabled=enabled, deterministic=deterministic, allow_tf32=allow_tf32)
