"""``workbench.backends.mha``: PyTorch's switch for nn.MultiheadAttention's inference fast path.

>>> import workbench as wb
>>> wb.backends.mha.get_fastpath_enabled()
True
"""
_enabled = [True]


def get_fastpath_enabled():
    """Whether the fast path may be used (workbench's attention has one path; the switch is kept)."""
    return _enabled[0]


def set_fastpath_enabled(value):
    if not isinstance(value, bool):
        raise RuntimeError(f"set_fastpath_enabled expects a bool, but got {type(value).__name__}")
    _enabled[0] = value
