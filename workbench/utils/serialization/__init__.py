"""``workbench.utils.serialization``: the ``config`` of ``workbench.save``/``load``, as PyTorch's.

>>> import workbench as wb
>>> wb.utils.serialization.config.load.mmap
False
"""
from . import config

__all__ = ["config"]
