"""``workbench.amp``: automatic mixed precision, PyTorch's ``torch.amp``.

``autocast`` runs the ops on PyTorch's lists in bfloat16/float16 (or float32) inside a region;
``GradScaler`` scales the loss so float16 gradients stay representable and skips steps whose gradients
overflowed. ``GradScaler(enabled=False)`` and ``autocast(enabled=False)`` are exact no-ops, so a script
written for a GPU (nanoGPT builds its scaler that way on the CPU) runs unchanged.

>>> import workbench as wb
>>> with wb.amp.autocast("cpu"):
...     wb.ones(2, 2) @ wb.ones(2, 2)
tensor([[2., 2.],
        [2., 2.]], dtype=workbench.bfloat16)
"""
from . import autocast_mode, grad_scaler
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "autocast_mode", "custom_bwd", "custom_fwd", "grad_scaler",
           "is_autocast_available"]
