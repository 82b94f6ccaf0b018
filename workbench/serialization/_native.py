"""The workbench checkpoint format: a JSON header describing the object and every storage, then raw bytes.

A file is a fixed prefix (magic, version, header length, header CRC32), a JSON header describing the
object tree and every storage (byte offset, length, CRC32, device), then the storages' raw
little-endian bytes, each 64-byte aligned. Tensors that share memory (views of one base) share one
storage and share it again after loading. Tensors, numbers, strings, bytes, dtypes, devices and
containers of them are JSON nodes (loading them runs no code); any other object makes the whole
object one pickle, stored as a storage of its own, whose tensors and NumPy arrays are references to the
storages (version 2). The format is specified in docs/serialization-format.md.
"""
import io
import json
import mmap
import pickle
import struct
import sys
import zlib
from collections import OrderedDict

from .. import _backend
from .._backend import dtypes as _dt
from ..nn.parameter import Parameter
from ..tensor import Size, Tensor
from ._common import Blocks, CheckpointError, block_bytes, mmap_access, read_exact, to_device

np = _backend.numpy

MAGIC = b"\x89WBCKPT\n"  # a high-bit byte and a newline: text-mode and 7-bit transfers corrupt it visibly
VERSION = 2  # 1: JSON nodes only; 2 adds the pickle node. Files without a pickle are still written as 1.
ALIGN = 64
_PREFIX = struct.Struct("<8sIQI")  # magic, version, header length, header CRC32
_MAX_HEADER = 1 << 31


class _NeedsPickle(Exception):
    """Raised inside the encoder at the first value the JSON tree can't hold."""


# --- the object tree -----------------------------------------------------------------------------------
class _Encoder:
    """Turns the saved object into a JSON tree (or one pickle) and collects the tensors' memory blocks."""

    def __init__(self):
        self.records = []  # JSON records, one per distinct tensor or array object
        self._ids = {}  # id(object) -> index
        self._keep = []  # the objects themselves, alive until written
        self.blocks = Blocks()

    def encode(self, obj):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int) and type(obj) is int:
            return obj
        if type(obj) is float:
            return obj if obj == obj and obj not in (float("inf"), float("-inf")) else {"$": "float", "v": repr(obj)}
        if type(obj) is complex:
            return {"$": "complex", "v": [repr(obj.real), repr(obj.imag)]}
        if isinstance(obj, Tensor):
            return {"$": "tensor", "index": self.tensor(obj)}
        if type(obj) is list:
            return {"$": "list", "items": [self.encode(v) for v in obj]}
        if type(obj) is tuple or type(obj) is Size:
            return {"$": "size" if type(obj) is Size else "tuple", "items": [self.encode(v) for v in obj]}
        if type(obj) in (dict, OrderedDict):
            node = {"$": "dict" if type(obj) is dict else "odict",
                    "items": [[self._key(k), self.encode(v)] for k, v in obj.items()]}
            meta = getattr(obj, "_metadata", None)
            if meta is not None:
                node["metadata"] = self.encode(meta)
            return node
        if isinstance(obj, _dt.dtype):
            return {"$": "dtype", "v": obj.name}
        if isinstance(obj, _backend.device):
            return {"$": "device", "v": str(obj)}
        if isinstance(obj, np.generic) and obj.dtype.kind in "biufc":
            return self.encode(obj.item())
        if type(obj) is bytes:
            return {"$": "bytes", "v": obj.hex()}
        raise _NeedsPickle

    def _key(self, k):
        if k is None or isinstance(k, (bool, int, float, str)) or type(k) is tuple:
            return self.encode(k)
        raise _NeedsPickle

    def tensor(self, t):
        return self._add(t, t._data, t.device, (t._base if t._base is not None else t)._data,
                         {"dtype": t.dtype.name, "requires_grad": bool(t.requires_grad)}
                         | ({"parameter": True} if isinstance(t, Parameter) else {}))

    def array(self, a):
        return self._add(a, a, _backend.CPU, None, {"dtype": _dt.from_numpy_dtype(a.dtype).name, "ndarray": True})

    def _add(self, obj, data, dev, root, rec):
        i = self._ids.get(id(obj))
        if i is not None:
            return i
        _, data = self.blocks.add(data, dev, root, rec)
        rec["shape"], rec["strides"] = list(data.shape), list(data.strides)
        self._keep.append(obj)
        i = self._ids[id(obj)] = len(self.records)
        self.records.append(rec)
        return i

    def pickle(self, obj, pickle_module, protocol):
        """``obj`` as one pickle whose tensors and NumPy arrays are references into the storages."""
        enc = self

        class Pickler(pickle_module.Pickler):
            def persistent_id(self, o):
                if isinstance(o, Tensor):
                    return ("tensor", enc.tensor(o))
                if type(o) is np.ndarray and _saved_as_storage(o.dtype):
                    return ("ndarray", enc.array(o))
                return None

        buf = io.BytesIO()
        Pickler(buf, protocol=protocol).dump(obj)
        return buf.getvalue()


def _saved_as_storage(npd):
    """Whether an array of this NumPy dtype is saved as raw bytes (one workbench has the same dtype for)."""
    try:
        return _dt.from_numpy_dtype(npd).np == npd
    except TypeError:
        return False


def _plan(obj, pickle_module, protocol):
    if sys.byteorder != "little":
        raise RuntimeError("workbench checkpoints are little-endian; saving from a big-endian host is not supported")
    enc = _Encoder()
    try:
        tree, blob = enc.encode(obj), None
    except _NeedsPickle:
        enc = _Encoder()
        blob = enc.pickle(obj, pickle_module, protocol)
    storages, datas, offset, end = [], [], 0, 0
    for g in enc.blocks.groups.values():
        for rec, ptr in g["members"]:
            rec["storage"] = len(storages)
            rec["offset"] = ptr - g["lo"]
        datas.append(block_bytes(g))
        storages.append({"device": g["device"]})
    if blob is not None:
        tree = {"$": "pickle", "storage": len(storages), "protocol": protocol}
        datas.append(memoryview(blob))
        storages.append({"device": "cpu"})
    for st, data in zip(storages, datas):
        st.update(offset=offset, nbytes=len(data), crc32=zlib.crc32(data))
        end = offset + len(data)
        offset += -(-len(data) // ALIGN) * ALIGN
    version = 1 if blob is None else VERSION
    header = {"format": "workbench.checkpoint", "version": version, "byteorder": "little", "object": tree,
              "tensors": enc.records, "storages": storages, "data_nbytes": end}
    raw = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    return version, raw, datas, storages, enc


def _write_storage(f, data):
    f.write(data)


def writer(obj, pickle_module, protocol):
    """Plan the file (pickling what needs it) and return ``write(fileobj)``: nothing is written before."""
    version, raw, datas, storages, enc = _plan(obj, pickle_module, protocol)

    def write(f, _alive=enc):  # the encoder keeps the tensors alive until their bytes are written
        f.write(_PREFIX.pack(MAGIC, version, len(raw), zlib.crc32(raw)))
        f.write(raw)
        f.write(b"\0" * (-(_PREFIX.size + len(raw)) % ALIGN))
        written = 0
        for data, st in zip(datas, storages):
            if st["offset"] > written:
                f.write(b"\0" * (st["offset"] - written))
                written = st["offset"]
            _write_storage(f, data)
            written += len(data)

    return write


# --- loading -----------------------------------------------------------------------------------------
def _check_view(rec, nbytes, i):
    itemsize = _dt._by_name(rec["dtype"]).itemsize
    shape, strides, off = rec["shape"], rec["strides"], rec["offset"]
    if len(shape) != len(strides) or any(not isinstance(s, int) or s < 0 for s in shape) or off < 0:
        raise CheckpointError(f"checkpoint is corrupted: tensor {i} has an invalid shape {shape} or strides {strides}")
    if 0 in shape:
        return
    lo = off + sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    hi = off + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0) + itemsize
    if lo < 0 or hi > nbytes:
        raise CheckpointError(f"checkpoint is corrupted: tensor {i} reaches bytes [{lo}, {hi}) of a "
                              f"{nbytes}-byte storage")


class _Decoder:
    def __init__(self, tensors, bufs, unpickler):
        self.tensors, self.bufs, self.unpickler = tensors, bufs, unpickler

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        tag = node.get("$") if isinstance(node, dict) else None
        if tag == "tensor":
            return self.tensors[node["index"]]
        if tag == "list":
            return [self.decode(v) for v in node["items"]]
        if tag == "tuple":
            return tuple(self.decode(v) for v in node["items"])
        if tag == "size":
            return Size(self.decode(v) for v in node["items"])
        if tag in ("dict", "odict"):
            out = (dict if tag == "dict" else OrderedDict)((self.decode(k), self.decode(v)) for k, v in node["items"])
            if "metadata" in node:
                out._metadata = self.decode(node["metadata"])
            return out
        if tag == "float":
            return float(node["v"])
        if tag == "complex":
            return complex(float(node["v"][0]), float(node["v"][1]))
        if tag == "dtype":
            return _dt._by_name(node["v"])
        if tag == "device":
            return _backend.device(node["v"])
        if tag == "bytes":
            return bytes.fromhex(node["v"])
        if tag == "pickle" and node is self.root:
            return self._unpickle(node)
        raise CheckpointError(f"checkpoint is corrupted: unknown node {str(node)[:80]} in the object tree")

    def _unpickle(self, node):
        try:
            blob = self.bufs[node["storage"]]
        except (KeyError, IndexError, TypeError):
            raise CheckpointError("checkpoint is corrupted: its pickle node names no storage") from None
        tensors = self.tensors

        def persistent_load(pid):
            if not (isinstance(pid, tuple) and len(pid) == 2 and pid[0] in ("tensor", "ndarray")
                    and type(pid[1]) is int and 0 <= pid[1] < len(tensors)):
                raise pickle.UnpicklingError(f"checkpoint is corrupted: unknown persistent id {pid!r}")
            return tensors[pid[1]]

        return self.unpickler(io.BytesIO(memoryview(blob)), persistent_load)

    def decode_root(self, node):
        self.root = node
        return self.decode(node)


def _make_tensor(arr, rec):
    if rec.get("ndarray"):
        return arr
    rg = rec.get("requires_grad", False)
    if rec.get("parameter"):
        return Parameter(Tensor._make(arr), requires_grad=rg)
    t = Tensor._make(arr)
    if rg:
        t.requires_grad_(True)
    return t


def _header(f):
    """The JSON header of the checkpoint at ``f``'s position, and where its data section starts."""
    prefix = read_exact(f, _PREFIX.size, "the file prefix")
    magic, version, hlen, hcrc = _PREFIX.unpack(prefix)
    if version not in (1, VERSION):
        raise CheckpointError(f"checkpoint format version {version} is not supported (this workbench reads versions "
                              f"1 and {VERSION}); upgrade workbench")
    if hlen > _MAX_HEADER:
        raise CheckpointError(f"checkpoint is corrupted: header length {hlen} is implausible")
    raw = read_exact(f, hlen, "the header")
    if zlib.crc32(raw) != hcrc:
        raise CheckpointError("checkpoint is corrupted: the header's CRC32 does not match")
    try:
        header = json.loads(raw)
        header["storages"], header["tensors"], header["object"]
    except (ValueError, KeyError, TypeError) as e:
        raise CheckpointError(f"checkpoint is corrupted: unreadable header ({e})") from None
    if header.get("byteorder", "little") != "little":
        raise CheckpointError(f"checkpoint byte order {header['byteorder']!r} is not supported")
    start = -(-(_PREFIX.size + hlen) // ALIGN) * ALIGN
    read_exact(f, start - _PREFIX.size - hlen, "the header padding")
    return header, start


def pickle_bytes(f):
    """The pickle of the checkpoint at ``f``'s position (b"" when it has none), read without loading it."""
    origin = f.tell()
    header, start = _header(f)
    node = header["object"]
    if not (isinstance(node, dict) and node.get("$") == "pickle"):
        return b""
    st = header["storages"][node["storage"]]
    f.seek(origin + start + st["offset"])
    return bytes(read_exact(f, st["nbytes"], "the pickle"))


def load(f, path, locate, use_mmap, unpickler):
    """Read a workbench checkpoint from ``f`` (positioned at its magic). ``unpickler(file, persistent_load)``
    reads a version-2 file's pickle: the weights-only one or the full one."""
    origin = f.tell()
    header, start = _header(f)
    storages, records, tree = header["storages"], header["tensors"], header["object"]
    mm = None
    if use_mmap:
        mm = mmap.mmap(f.fileno(), 0, access=mmap_access())
        if len(mm) < origin + start + header.get("data_nbytes", 0):
            raise CheckpointError(f"checkpoint is truncated: {len(mm) - origin} bytes, the header describes "
                                  f"{start + header['data_nbytes']}")
        f.seek(origin + start + header.get("data_nbytes", 0))  # as if read: the next object starts there
    bufs, pos = [], 0
    for i, st in enumerate(storages):
        n = st["nbytes"]
        if mm is not None:
            buf = np.frombuffer(mm, np.uint8, n, origin + start + st["offset"]) if n else np.empty(0, np.uint8)
        else:
            read_exact(f, st["offset"] - pos, "alignment padding")
            buf = read_exact(f, n, f"storage {i}", np.empty(n, np.uint8))  # NumPy's allocator aligns it
            pos = st["offset"] + n
        if zlib.crc32(buf) != st["crc32"]:
            raise CheckpointError(f"checkpoint is corrupted: storage {i} ({n} bytes, holding tensor(s) "
                                  f"{[j for j, r in enumerate(records) if r['storage'] == i]}) fails its CRC32 check")
        bufs.append(buf)
    tensors, placed = [], {}
    for i, rec in enumerate(records):
        try:
            s = rec["storage"]
            buf = bufs[s]
            _check_view(rec, len(buf), i)
            arr = np.ndarray(tuple(rec["shape"]), _dt._by_name(rec["dtype"]).np, buffer=buf, offset=rec["offset"],
                             strides=tuple(rec["strides"]))
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise CheckpointError(f"checkpoint is corrupted: tensor {i} is badly described ({e})") from None
        if not rec.get("ndarray"):
            if s not in placed:
                placed[s] = locate(storages[s]["device"], lambda b=buf: Tensor._make(b))
            arr = to_device(arr, placed[s])
        tensors.append(_make_tensor(arr, rec))
    return _Decoder(tensors, bufs, unpickler).decode_root(tree)
