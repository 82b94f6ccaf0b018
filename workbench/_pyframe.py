"""Calls that run NumPy arithmetic inside a Python frame of workbench's own (this module is never compiled).

NumPy attributes its floating-point warnings (overflow, divide by zero, invalid value) to the Python frame
running when it raises them, and ``import workbench`` ignores those raised in workbench's own modules
(PyTorch warns of none of them). Code compiled by ``workbench._accel`` has no frames: a ufunc it called
directly would warn at the user's line. The compiled modules call NumPy arithmetic through these.

>>> import numpy as np
>>> call2(np.add, np.ones(2), 1.0)
array([2., 2.])
"""


def call1(f, a):
    return f(a)


def call2(f, a, b):
    return f(a, b)


def call1_out(f, a):
    f(a, out=a)


def call2_out(f, a, b):
    f(a, b, out=a)


def iadd_cast(a, b):
    """a += b, b cast to a's dtype first (a leaf's .grad accumulating)."""
    a += b.astype(a.dtype, copy=False)
