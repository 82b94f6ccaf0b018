"""``workbench.nn.parallel``: ``DataParallel`` (one device), ``data_parallel``, and ``DistributedDataParallel``
(one replica per process, gradients all-reduced).

>>> from workbench.nn.parallel import DataParallel, DistributedDataParallel
"""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
