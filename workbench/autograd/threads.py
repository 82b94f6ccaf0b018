"""Switches of PyTorch's autograd threads. workbench runs backward on the calling thread, one node at a
time, so multithreading is off.

>>> import workbench as wb
>>> wb.autograd.is_multithreading_enabled()
False
"""


def is_multithreading_enabled():
    """False: the engine walks the graph on the thread that called backward."""
    return False


class set_multithreading_enabled:
    """Accepted for code that turns PyTorch's per-device backward threads off (workbench has none)."""

    def __init__(self, mode):
        self.mode = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def clone(self):
        return set_multithreading_enabled(self.mode)
