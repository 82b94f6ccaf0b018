"""``workbench.distributed.algorithms``: DDP communication hooks (``ddp_comm_hooks``), as PyTorch's."""
from . import ddp_comm_hooks

__all__ = ["ddp_comm_hooks"]
