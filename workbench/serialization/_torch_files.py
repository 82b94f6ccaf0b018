"""PyTorch's two checkpoint containers, read and written without PyTorch.

The zip format (``torch.save``'s default since 1.6): an uncompressed zip whose records sit under one
folder: ``data.pkl`` (the object, pickled with protocol 2; each storage is a persistent id
``('storage', torch.FloatStorage, key, location, numel)``), ``data/<key>`` (each storage's raw bytes,
64-byte aligned), ``byteorder``, ``version``, ``.format_version``, ``.storage_alignment`` and
``.data/serialization_id``. Tensors are ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
requires_grad, hooks)``, Parameters ``_rebuild_parameter(tensor, requires_grad, hooks)``.

The legacy format (``_use_new_zipfile_serialization=False``): five pickles one after another (a magic
number, protocol version 1001, a dict describing the host, the object, the sorted list of storage keys)
and then each storage as an 8-byte little-endian element count followed by its bytes. Its persistent ids
carry a sixth item: ``(view key, offset, numel)`` for a view of a storage, or None.
"""
import io
import mmap
import pickle
import struct
import sys
import zipfile
import zlib
from collections import OrderedDict

from .. import _backend
from .._backend import dtypes as _dt
from ..nn.parameter import Parameter
from ..tensor import Size, Tensor
from . import _torch_names
from ._common import Blocks, CheckpointError, block_bytes, mmap_access, read_exact
from ..utils.serialization import config
from ._unpickler import WeightsOnlyUnpickler, persistent_ids

np = _backend.numpy

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001
_LOCAL_HEADER = struct.Struct("<4s5H3I2H")  # a zip entry's local header: its name and extra field follow
# what zipfile raises on a damaged archive, depending on which bytes are damaged
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, UnicodeDecodeError,
               NotImplementedError, zlib.error, struct.error)


def _ascii(s):
    return s.decode("ascii") if isinstance(s, bytes) else s


def _storage_pid(pid, n):
    """A persistent id's fields after 'storage' (``n`` of them), or a CheckpointError."""
    if not (isinstance(pid, tuple) and len(pid) == n + 1):
        raise pickle.UnpicklingError(f"checkpoint is corrupted: unexpected persistent id {pid!r}")
    if _ascii(pid[0]) != "storage":
        raise pickle.UnpicklingError(f"Unknown saved id type: {pid[0]}")
    storage_type = pid[1]
    if not isinstance(storage_type, _torch_names.StorageType):
        raise pickle.UnpicklingError(f"checkpoint is corrupted: storage type {storage_type!r} in {pid!r}")
    return (storage_type.dtype, _ascii(pid[2]), _ascii(pid[3])) + tuple(pid[4:])


def _target(locate, location, buf):
    return locate(location, lambda: Tensor._make(buf))


def _swap(buf, dtype, byteorder):
    """Bring a storage written on a host of the other byte order to this one's, in place."""
    if byteorder != sys.byteorder and dtype.itemsize > 1:
        buf.view(dtype.np).byteswap(inplace=True)


# --- reading ---------------------------------------------------------------------------------------------------
def is_torchscript(names):
    return any(n.endswith("/constants.pkl") or "/code/" in n for n in names)


def load_zip(f, where, locate, use_mmap, unpickler):
    """The object in a zip checkpoint open as ``f``; ``unpickler(file, persistent_load)`` unpickles."""
    try:
        zf = zipfile.ZipFile(f)
        names = zf.namelist()
    except _ZIP_ERRORS as e:
        raise CheckpointError(f"{where}is a damaged zip archive, truncated or corrupted ({e})") from None
    pkl = sorted((n for n in names if n.endswith("data.pkl") and n.count("/") <= 1), key=len)
    if is_torchscript(names):
        raise RuntimeError(f"{where}is a TorchScript archive (torch.jit.save): workbench runs no TorchScript. "
                           "Save the model's state_dict() with torch.save in PyTorch and load that into the "
                           "same model written with workbench")
    if not pkl:
        raise CheckpointError(f"{where}is a zip archive without a data.pkl record: not a file torch.save wrote")
    prefix = pkl[0][: -len("data.pkl")]
    byteorder = zf.read(prefix + "byteorder").decode() if prefix + "byteorder" in names else "little"
    mm = mmap.mmap(f.fileno(), 0, access=mmap_access()) if use_mmap else None
    storages = {}

    def persistent_load(pid):
        dtype, key, location, numel = _storage_pid(pid, 4)
        if key in storages:
            return storages[key]
        name, nbytes = f"{prefix}data/{key}", int(numel) * dtype.itemsize
        try:
            info = zf.getinfo(name)
        except KeyError:
            raise CheckpointError(f"checkpoint is corrupted: storage {key} ({name}) is missing from the archive") \
                from None
        if info.file_size != nbytes or info.compress_type != zipfile.ZIP_STORED:
            raise CheckpointError(f"checkpoint is corrupted: storage {key} holds {info.file_size} bytes, its "
                                  f"{numel} {dtype.name} elements need {nbytes}")
        if mm is not None:
            buf = np.frombuffer(mm, np.uint8, nbytes, _data_offset(mm, info)) if nbytes else np.empty(0, np.uint8)
        else:
            buf = np.empty(nbytes, np.uint8)
            try:
                with zf.open(info) as fh:
                    read_exact(fh, nbytes, f"storage {key}", buf)
                    fh.read(1)  # reaching the end makes zipfile check the CRC
            except _ZIP_ERRORS as e:
                raise CheckpointError(f"checkpoint is corrupted: storage {key} ({name}): {e}") from None
        _swap(buf, dtype, byteorder)
        st = storages[key] = _torch_names.Storage(buf, dtype, _target(locate, location, buf))
        return st

    try:
        data = zf.read(pkl[0])
    except _ZIP_ERRORS as e:
        raise CheckpointError(f"checkpoint is corrupted: {pkl[0]}: {e}") from None
    return unpickler(io.BytesIO(data), persistent_load)


def _data_offset(mm, info):
    """Where a stored zip entry's bytes start in the file (after its local header, name and extra field)."""
    fields = _LOCAL_HEADER.unpack_from(mm, info.header_offset)
    return info.header_offset + _LOCAL_HEADER.size + fields[-2] + fields[-1]


def _small(f):
    """One of the legacy format's bookkeeping pickles (numbers, strings, dicts: nothing to allowlist)."""
    return WeightsOnlyUnpickler(f, encoding="utf-8").load()


def load_legacy(f, where, locate, unpickler, pickle_load_args):
    """The object in a legacy checkpoint at ``f``'s position. The storages come after the object's pickle,
    so a first pass that calls nothing collects their dtypes, the data is read, then the object unpickled."""
    try:
        if _small(f) != LEGACY_MAGIC:
            raise CheckpointError(f"Invalid magic number; corrupt file? ({where}is a pickle, but not one that "
                                  "torch.save or workbench.save wrote)")
        version = _small(f)
        if version != LEGACY_PROTOCOL:
            raise CheckpointError(f"Invalid protocol version: {version}")
        sys_info = _small(f)
        byteorder = "little" if not isinstance(sys_info, dict) or sys_info.get("little_endian", True) else "big"
        start = f.tell()
        found = {}
        for pid in persistent_ids(f, **pickle_load_args):
            if isinstance(pid, tuple) and pid and _ascii(pid[0]) == "module":
                continue
            dtype, key, location, numel, _view = _storage_pid(pid, 5)
            found.setdefault(key, (dtype, location, int(numel)))
        keys = _small(f)
    except EOFError:
        raise CheckpointError(f"checkpoint is truncated: {where}ends inside its pickled object") from None
    storages = {}
    for key in keys:
        key = _ascii(key)
        if key not in found:
            raise CheckpointError(f"checkpoint is corrupted: storage {key!r} is listed but no tensor uses it")
        dtype, location, numel = found[key]
        (count,) = struct.unpack("<q", bytes(read_exact(f, 8, f"the size of storage {key}")))
        if count != numel:
            raise CheckpointError(f"checkpoint is corrupted: storage {key} has {count} elements, its tensors "
                                  f"expect {numel}")
        buf = read_exact(f, numel * dtype.itemsize, f"storage {key}", np.empty(numel * dtype.itemsize, np.uint8))
        _swap(buf, dtype, byteorder)
        storages[key] = _torch_names.Storage(buf, dtype, _target(locate, location, buf))
    end = f.tell()
    views = {}

    def persistent_load(pid):
        if isinstance(pid, tuple) and pid and _ascii(pid[0]) == "module":
            return pid[1]
        _dtype, key, _location, _numel, view = _storage_pid(pid, 5)
        if key not in storages:
            raise CheckpointError(f"checkpoint is corrupted: storage {key!r} has no data")
        if view is None:
            return storages[key]
        view_key, offset, numel = view
        if view_key not in views:
            st = storages[key]
            views[view_key] = st.view(int(offset) * st.dtype.itemsize, int(numel) * st.dtype.itemsize)
        return views[view_key]

    f.seek(start)
    obj = unpickler(f, persistent_load)
    f.seek(end)
    return obj


# --- writing ---------------------------------------------------------------------------------------------------
class _Name:
    """A global written by its PyTorch name (``torch._utils._rebuild_tensor_v2``), without importing it."""

    __slots__ = ("module", "name")
    _cache = {}

    def __new__(cls, module, name):
        key = (module, name)
        if key not in cls._cache:
            self = cls._cache[key] = object.__new__(cls)
            self.module, self.name = module, name
        return cls._cache[key]

    def __call__(self, *args):  # pickle's save_reduce only takes callables; this one is only ever written
        raise TypeError(f"{self.module}.{self.name} is a name written into a PyTorch pickle, not a function")


class _StorageRef:
    __slots__ = ("block",)

    def __init__(self, block):
        self.block = block


class _TorchPickler(pickle._Pickler):
    """Pickles an object as ``torch.save`` would: tensors as PyTorch's rebuild calls over storages,
    dtypes, devices and sizes by PyTorch's names. Python's pure-Python pickler, whose type table can hold
    the names; everything else pickles as usual."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol, legacy):
        super().__init__(file, protocol=protocol)
        self.blocks = Blocks()
        self.legacy = legacy

    def persistent_id(self, obj):
        if type(obj) is not _StorageRef:
            return None
        g = obj.block
        numel = (g["hi"] - g["lo"]) // g["dtype"].itemsize
        pid = ("storage", _Name("torch", _torch_names.STORAGE_NAME[g["dtype"].name]), g["key"], g["device"], numel)
        return pid + (None,) if self.legacy else pid

    def reducer_override(self, obj):
        if isinstance(obj, Parameter):
            return _Name("torch._utils", "_rebuild_parameter"), (obj.detach(), obj.requires_grad, OrderedDict())
        if isinstance(obj, Tensor):
            root = (obj._base if obj._base is not None else obj)._data
            g, arr = self.blocks.add_whole(obj._data, obj.device, root)
            if "key" not in g:
                g["key"], g["dtype"] = str(len(self.blocks.groups) - 1), obj.dtype
            item = arr.itemsize
            offset = (_backend.data_ptr(arr) - g["lo"]) // item
            return (_Name("torch._utils", "_rebuild_tensor_v2"),
                    (_StorageRef(g), offset, tuple(arr.shape), tuple(s // item for s in arr.strides),
                     obj.requires_grad, OrderedDict()))
        if isinstance(obj, _backend.device):
            return _Name("torch", "device"), (str(obj),)
        if type(obj) is Size:
            return _Name("torch", "Size"), (tuple(obj),)
        return NotImplemented

    def _save_name(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    def _save_dtype(self, obj):
        self.save(_Name("torch", obj.name))

    dispatch[_Name] = _save_name
    dispatch[_dt.dtype] = _save_dtype


def _pickled(obj, protocol, legacy):
    buf = io.BytesIO()
    p = _TorchPickler(buf, protocol, legacy)
    p.dump(obj)
    blocks = sorted(p.blocks.groups.values(), key=lambda g: int(g["key"]))
    return buf.getvalue(), blocks


def zip_writer(obj, protocol, byteorder_record=True):
    """``write(fileobj)`` for ``obj`` in PyTorch's zip format; pickling happens now, before any write."""
    data_pkl, blocks = _pickled(obj, protocol, legacy=False)
    align = int(config.save.storage_alignment)
    records = [("data.pkl", data_pkl), (".format_version", b"1"), (".storage_alignment", str(align).encode())]
    if byteorder_record:
        records.append(("byteorder", sys.byteorder.encode()))
    records += [(f"data/{g['key']}", g) for g in blocks]
    serialization_id = zlib.crc32(data_pkl) * 10 ** 30 + sum(g["hi"] - g["lo"] for g in blocks) % 10 ** 30
    records += [("version", b"3\n"), (".data/serialization_id", f"{serialization_id:040d}".encode())]

    def write(f):
        with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as zf:
            for name, data in records:
                if isinstance(data, dict):
                    data = block_bytes(data)
                info = zipfile.ZipInfo("archive/" + name, date_time=(1980, 1, 1, 0, 0, 0))
                pad = -(zf.fp.tell() + _LOCAL_HEADER.size + len(info.filename) + 4) % align
                info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad  # PyTorch's alignment padding
                zf.writestr(info, data)

    return write


def legacy_writer(obj, protocol):
    """``write(fileobj)`` for ``obj`` in PyTorch's legacy format; pickling happens now, before any write."""
    main, blocks = _pickled(obj, protocol, legacy=True)
    sys_info = {"protocol_version": LEGACY_PROTOCOL, "little_endian": sys.byteorder == "little",
                "type_sizes": {"short": 2, "int": 4, "long": 4}}
    head = b"".join(pickle.dumps(x, protocol=protocol) for x in (LEGACY_MAGIC, LEGACY_PROTOCOL, sys_info))
    keys = sorted(g["key"] for g in blocks)
    by_key = {g["key"]: g for g in blocks}

    def write(f):
        f.write(head)
        f.write(main)
        f.write(pickle.dumps(keys, protocol=protocol))
        for key in keys:
            g = by_key[key]
            f.write(struct.pack("<q", (g["hi"] - g["lo"]) // g["dtype"].itemsize))
            f.write(block_bytes(g))

    return write


def is_tar(f):
    """Whether ``f`` holds a tar archive (PyTorch's format before 0.4), keeping its position."""
    pos = f.tell()
    f.seek(pos + 257)
    magic = f.read(5)
    f.seek(pos)
    return magic == b"ustar"


def describe_tar(where):
    return (f"{where}is a PyTorch checkpoint in the tar format of PyTorch < 0.4, which workbench does not read: "
            "load it with an old PyTorch and save it again with torch.save")
