"""``workbench.cpu``: PyTorch's ``torch.cpu`` (the CPU device's counterpart of ``torch.cuda``).

>>> import workbench as wb
>>> wb.cpu.is_available(), wb.cpu.device_count()
(True, 1)
"""
import sys as _sys

from ._backend.dtypes import bfloat16 as _bfloat16
from .amp._device_aliases import _module as _amp_module


def is_available():
    """Always True: the CPU is always there."""
    return True


def device_count():
    """1: workbench sees the host as one device."""
    return 1


def current_device():
    """'cpu', as torch.cpu.current_device()."""
    return "cpu"


def synchronize(device=None):
    """A no-op: NumPy ops finish before they return."""


# torch.cpu.amp (autocast with bfloat16, GradScaler), importable as a submodule as in PyTorch
amp = _amp_module("cpu", _bfloat16, __name__ + ".amp")
_sys.modules[amp.__name__] = amp
