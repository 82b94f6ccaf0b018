"""``workbench.signal``: PyTorch's torch.signal (the window functions of ``signal.windows``)."""
from . import windows

__all__ = ["windows"]
