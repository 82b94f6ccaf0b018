"""``workbench.backends.mkl``: whether the BLAS NumPy uses (and so workbench's matmuls) is Intel's MKL.

>>> import workbench as wb
>>> isinstance(wb.backends.mkl.is_available(), bool)
True
"""
from .. import _backend


def is_available():
    """True when NumPy was built against MKL."""
    try:
        blas = _backend.numpy.__config__.CONFIG["Build Dependencies"]["blas"]["name"]
    except (AttributeError, KeyError, TypeError):
        return False
    return "mkl" in str(blas).lower()
