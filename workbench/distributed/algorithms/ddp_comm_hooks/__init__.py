"""DDP communication hooks: functions ``hook(state, bucket) -> Future`` for ``register_comm_hook``."""
from . import default_hooks

__all__ = ["default_hooks"]
