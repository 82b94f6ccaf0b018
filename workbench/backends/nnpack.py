"""``workbench.backends.nnpack``: NNPACK, which workbench does not use (``is_available()`` is False).

>>> import workbench as wb
>>> wb.backends.nnpack.is_available()
False
"""
import sys

from ._flags import boolean, install


def is_available():
    """False: workbench's convolutions are its own (im2col over NumPy/CuPy), not NNPACK's."""
    return False


_flags = install(__name__, {"enabled": boolean(True, "set_nnpack_enabled")})


def set_flags(_enabled):
    """Set ``enabled``; returns the previous value (as a 1-tuple, as PyTorch does)."""
    module = sys.modules[__name__]
    old = (module.enabled,)
    module.enabled = _enabled
    return old


def flags(enabled=False):
    """Set ``enabled`` inside a ``with`` block and restore it after."""
    return _flags(enabled=enabled)
