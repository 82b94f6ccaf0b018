"""Defaults of ``workbench.save`` and ``workbench.load`` that PyTorch keeps in ``torch.utils.serialization.config``.

``load.mmap``: what ``load(..., mmap=None)`` means (False: read the file). ``load.mmap_flags``:
``mmap.MAP_PRIVATE`` (copy-on-write, the default) or ``mmap.MAP_SHARED`` (writes to the loaded tensors go
to the file). ``save.storage_alignment``: the byte alignment of storages in PyTorch's zip format (64).
The other names exist for PyTorch code that sets them: ``load.endianness`` (every file workbench reads
records its byte order), ``load.calculate_storage_offsets``, ``save.compute_crc32`` (CRCs are always
written) and ``save.use_pinned_memory_for_d2h`` do not change what workbench does.

>>> import workbench as wb
>>> wb.utils.serialization.config.save.storage_alignment
64
"""
import mmap as _mmap


class load:
    mmap = False
    endianness = None
    mmap_flags = _mmap.MAP_PRIVATE
    calculate_storage_offsets = False


class save:
    compute_crc32 = True
    use_pinned_memory_for_d2h = False
    storage_alignment = 64
