"""``workbench.backends.kleidiai``: Arm's KleidiAI kernels, which workbench does not use.

>>> import workbench as wb
>>> wb.backends.kleidiai.is_available()
False
"""


def is_available():
    """False: workbench's CPU kernels are NumPy's."""
    return False
