"""``workbench.distributed.algorithms``: DDP communication hooks (``ddp_comm_hooks``) and ``Join`` for uneven
inputs, as PyTorch's."""
from . import ddp_comm_hooks, join
from .join import Join, Joinable, JoinHook

__all__ = ["Join", "JoinHook", "Joinable", "ddp_comm_hooks", "join"]
