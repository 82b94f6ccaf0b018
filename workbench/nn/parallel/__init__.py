"""``workbench.nn.parallel``: ``DistributedDataParallel`` (one replica per process, gradients all-reduced).

>>> from workbench.nn.parallel import DistributedDataParallel
"""
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
