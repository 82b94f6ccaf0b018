"""``workbench.nn.parallel``: ``DataParallel`` (one device) and ``data_parallel``.

>>> from workbench.nn.parallel import DataParallel
"""
from .data_parallel import DataParallel, data_parallel

__all__ = ["DataParallel", "data_parallel"]
