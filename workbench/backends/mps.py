"""``workbench.backends.mps``: Apple's Metal backend, which workbench does not have.

>>> import workbench as wb
>>> wb.backends.mps.is_available(), wb.backends.mps.is_built()
(False, False)
"""


def is_available():
    """False: workbench runs on the CPU (NumPy) and on CUDA GPUs (CuPy) only."""
    return False


def is_built():
    """False: workbench has no Metal backend."""
    return False


def is_macos_or_newer(major, minor):
    """False: there is no MPS device to ask about."""
    return False
