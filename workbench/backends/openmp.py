"""``workbench.backends.openmp``: workbench itself has no OpenMP parallel regions (NumPy's BLAS threads on its own).

>>> import workbench as wb
>>> wb.backends.openmp.is_available()
False
"""


def is_available():
    """False: workbench's own code has no OpenMP (threads come from NumPy's BLAS)."""
    return False
