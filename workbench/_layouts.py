"""PyTorch's layout and memory-format objects (``torch.strided``, ``torch.channels_last``...).

workbench tensors are dense and strided, and every op writes NumPy's row-major order. Functions that take
a ``memory_format`` accept these objects and keep that order: values are the same as PyTorch's, only the
stride order (a speed matter for cuDNN kernels workbench does not use) differs.

>>> import workbench as wb
>>> wb.zeros(2).layout
workbench.strided
>>> wb.ones(1, 3, 4, 4).contiguous(memory_format=wb.channels_last).shape
workbench.Size([1, 3, 4, 4])
"""


class layout:
    """A tensor layout; workbench has one, ``workbench.strided``."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "workbench." + self.name

    def __reduce__(self):
        return self.name  # pickles as the module-level singleton


class memory_format:
    """A memory format (accepted where PyTorch takes one; workbench keeps row-major order)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "workbench." + self.name

    def __reduce__(self):
        return self.name


strided = layout("strided")
contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
legacy_contiguous_format = contiguous_format  # PyTorch's alias, kept for old code

__all__ = ["layout", "memory_format", "strided", "contiguous_format", "preserve_format", "channels_last",
           "channels_last_3d", "legacy_contiguous_format"]
