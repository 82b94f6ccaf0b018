"""``workbench.backends.cusparselt``: NVIDIA's cuSPARSELt, which workbench does not use.

>>> import workbench as wb
>>> wb.backends.cusparselt.is_available(), wb.backends.cusparselt.version()
(False, None)
"""


def is_available():
    """False: workbench has no semi-structured sparse kernels."""
    return False


def version():
    """None: the library is not used."""
    return None


def get_max_alg_id():
    """None: the library is not used."""
    return None
