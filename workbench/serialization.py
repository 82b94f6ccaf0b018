"""Checkpoints: ``save``/``load`` in a header + raw-bytes format that never pickles and never runs code.

A file is a fixed prefix (magic, version, header length, header CRC32), a JSON header describing the
object tree and every storage (byte offset, length, CRC32, device), then the storages' raw
little-endian bytes, each 64-byte aligned. Tensors that share memory (views of one base) share one
storage and share it again after loading. The format is specified in docs/serialization-format.md.

``load`` also reads safetensors files; ``save_safetensors``/``load_safetensors`` write and read them.
"""
import ctypes
import json
import os
import struct
import sys
import tempfile
import zlib
from collections import OrderedDict

from . import _backend
from ._backend import dtypes as _dt
from .tensor import Size, Tensor

np = _backend.numpy

MAGIC = b"\x89WBCKPT\n"  # a high-bit byte and a newline: text-mode and 7-bit transfers corrupt it visibly
VERSION = 1
ALIGN = 64
_PREFIX = struct.Struct("<8sIQI")  # magic, version, header length, header CRC32
_MAX_HEADER = 1 << 31


class CheckpointError(RuntimeError):
    """A file that is not a readable checkpoint: foreign, truncated or corrupted (a RuntimeError).

    >>> import io, workbench as wb
    >>> try:
    ...     wb.load(io.BytesIO(b"not a checkpoint"))
    ... except wb.serialization.CheckpointError as e:
    ...     print(e)
    is a text file, not a workbench checkpoint (it starts with b'not a checkpoint')
    """


# --- the object tree -----------------------------------------------------------------------------------
class _Encoder:
    """Turns the saved object into a JSON tree and collects the tensors' storages."""

    def __init__(self):
        self.tensors = []  # JSON records, one per distinct tensor object
        self._tensor_ids = {}  # id(tensor) -> index
        self._keep = []  # the tensors themselves, alive until written
        self.groups = {}  # storage key -> {"lo", "hi", "device", "members": [(record, ptr)], "source"}

    def encode(self, obj, where):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int) and type(obj) is int:
            return obj
        if type(obj) is float:
            return obj if obj == obj and obj not in (float("inf"), float("-inf")) else {"$": "float", "v": repr(obj)}
        if type(obj) is complex:
            return {"$": "complex", "v": [repr(obj.real), repr(obj.imag)]}
        if isinstance(obj, Tensor):
            return {"$": "tensor", "index": self._tensor(obj, where)}
        if type(obj) is list:
            return {"$": "list", "items": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]}
        if type(obj) is tuple or type(obj) is Size:
            tag = "size" if type(obj) is Size else "tuple"
            return {"$": tag, "items": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]}
        if type(obj) in (dict, OrderedDict):
            items = [[self._key(k, where), self.encode(v, f"{where}[{k!r}]")] for k, v in obj.items()]
            node = {"$": "dict" if type(obj) is dict else "odict", "items": items}
            meta = getattr(obj, "_metadata", None)
            if meta is not None:
                node["metadata"] = self.encode(meta, f"{where}._metadata")
            return node
        if isinstance(obj, _dt.dtype):
            return {"$": "dtype", "v": obj.name}
        if isinstance(obj, _backend.device):
            return {"$": "device", "v": str(obj)}
        if isinstance(obj, np.generic) and obj.dtype.kind in "biufc":
            return self.encode(obj.item(), where)
        if type(obj) is bytes:
            return {"$": "bytes", "v": obj.hex()}
        raise TypeError(
            f"workbench.save can't store an object of type {type(obj).__module__}.{type(obj).__qualname__} at {where}: "
            "checkpoints hold tensors, numbers, strings, bytes, None, dtypes, devices and dict/OrderedDict/list/tuple "
            "of them (nothing is pickled). Save a model's state_dict(), not the model; convert NumPy arrays with "
            "workbench.from_numpy.")

    def _key(self, k, where):
        if k is None or isinstance(k, (bool, int, float, str)) or type(k) is tuple:
            return self.encode(k, where)
        raise TypeError(f"workbench.save can't store a dict key of type {type(k).__name__} at {where}: keys must be "
                        "str, int, float, bool, None or tuples of them")

    def _tensor(self, t, where):
        i = self._tensor_ids.get(id(t))
        if i is not None:
            return i
        d = t._data
        rec = {"dtype": t.dtype.name, "shape": list(d.shape), "requires_grad": bool(t.requires_grad)}
        if type(t) is not Tensor and type(t).__name__ == "Parameter":
            rec["parameter"] = True
        dev = t.device
        if dev.type == "cpu":
            owner = d
            while isinstance(owner.base, np.ndarray):
                owner = owner.base
            key = ("cpu", id(owner.base if owner.base is not None else owner))
            lo, hi = _bounds(d)
            source = None
        else:
            root = t._base if t._base is not None else t
            rd = root._data
            lo, hi = _backend.data_ptr(rd), _backend.data_ptr(rd) + rd.nbytes
            key = (str(dev), id(root))
            source = rd
            if not rd.flags.c_contiguous or _backend.data_ptr(d) < lo or _backend.data_ptr(d) + _span(d) > hi:
                d = _backend.xp_of(d).ascontiguousarray(d)  # not a view we can describe: its own storage
                lo, hi = _backend.data_ptr(d), _backend.data_ptr(d) + d.nbytes
                key, source = (str(dev), id(d)), d
                self._keep.append(d)
        rec["strides"] = list(d.strides)
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = {"lo": lo, "hi": hi, "device": str(dev), "members": [], "source": source}
        else:
            g["lo"], g["hi"] = min(g["lo"], lo), max(g["hi"], hi)
        g["members"].append((rec, _backend.data_ptr(d)))
        self._keep.append(t)
        i = self._tensor_ids[id(t)] = len(self.tensors)
        self.tensors.append(rec)
        return i


def _span(arr):
    """Bytes from an array's first element to the end of its last (for non-negative strides)."""
    if arr.size == 0:
        return 0
    return sum((n - 1) * s for n, s in zip(arr.shape, arr.strides)) + arr.itemsize


def _bounds(arr):
    if arr.size == 0:
        p = _backend.data_ptr(arr)
        return p, p
    return np.lib.array_utils.byte_bounds(arr)


def _storage_bytes(group):
    """The bytes of one storage, as a buffer (host memory read in place, or a host copy of device memory)."""
    n = group["hi"] - group["lo"]
    if group["source"] is None:
        return memoryview((ctypes.c_char * n).from_address(group["lo"])).cast("B") if n else memoryview(b"")
    host = _backend.to_device(group["source"], _backend.CPU)
    return memoryview(np.ascontiguousarray(host).reshape(-1).view(np.uint8))


def _plan(obj):
    if sys.byteorder != "little":
        raise RuntimeError("workbench checkpoints are little-endian; saving from a big-endian host is not supported")
    enc = _Encoder()
    tree = enc.encode(obj, "obj")
    storages, offset = [], 0
    for g in enc.groups.values():
        for rec, ptr in g["members"]:
            rec["storage"] = len(storages)
            rec["offset"] = ptr - g["lo"]
        data = _storage_bytes(g)
        storages.append({"offset": offset, "nbytes": len(data), "device": g["device"], "crc32": zlib.crc32(data)})
        g["data"] = data
        end = offset + len(data)
        offset += -(-len(data) // ALIGN) * ALIGN
    header = {"format": "workbench.checkpoint", "version": VERSION, "byteorder": "little", "object": tree,
              "tensors": enc.tensors, "storages": storages, "data_nbytes": end if storages else 0}
    raw = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    return raw, [g["data"] for g in enc.groups.values()], storages, enc


def _write(f, raw, datas, storages):
    f.write(_PREFIX.pack(MAGIC, VERSION, len(raw), zlib.crc32(raw)))
    f.write(raw)
    pos = _PREFIX.size + len(raw)
    f.write(b"\0" * (-pos % ALIGN))
    written = 0
    for data, st in zip(datas, storages):
        if st["offset"] > written:
            f.write(b"\0" * (st["offset"] - written))
            written = st["offset"]
        _write_storage(f, data)
        written += len(data)


def _write_storage(f, data):
    f.write(data)


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Save tensors, state dicts and nested containers of them (with numbers and strings) to ``f``.

    ``f`` is a path (written atomically: a temporary file in the same directory, fsync, rename; a failure
    leaves any old file untouched) or a binary file object. Nothing is pickled; the pickle-related
    arguments exist for PyTorch compatibility and are ignored.

    >>> import io, workbench as wb
    >>> buf = io.BytesIO()
    >>> wb.save({"w": wb.ones(2), "step": 3}, buf); _ = buf.seek(0)
    >>> wb.load(buf)
    {'w': tensor([1., 1.]), 'step': 3}
    """
    raw, datas, storages, _alive = _plan(obj)
    if isinstance(f, (str, bytes, os.PathLike)):
        path = os.fspath(f)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise RuntimeError(f"Parent directory {folder} does not exist.")
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                _write(out, raw, datas, storages)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        try:  # make the rename itself durable
            dfd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            pass
        return
    if not hasattr(f, "write"):
        raise TypeError(f"workbench.save expects a path or a binary file object, got {type(f).__name__}")
    _write(f, raw, datas, storages)
    if hasattr(f, "flush"):
        f.flush()


# --- loading -----------------------------------------------------------------------------------------
def _describe(path, head):
    """Why ``head`` (a file's first bytes) is not a workbench checkpoint, for the error message."""
    where = f"{path!r} " if path else ""
    if head.startswith(b"PK\x03\x04"):
        return (f"{where}is a zip archive, which is what torch.save writes: a PyTorch checkpoint holds pickled "
                "objects, and workbench never unpickles (that can run arbitrary code). Convert it where PyTorch is "
                "installed, e.g. safetensors.torch.save_file(torch.load(path), 'model.safetensors'), then "
                "workbench.load('model.safetensors')")
    if head[:1] == b"\x80":
        return (f"{where}looks like a pickle (a legacy torch.save file?): workbench never unpickles. Convert it "
                "to safetensors where it can be trusted and loaded")
    if head.startswith(b"\x93NUMPY"):
        return f"{where}is a NumPy .npy file: read it with numpy.load and wrap it with workbench.from_numpy"
    if not head:
        return f"{where}is empty"
    if all(32 <= b < 127 or b in (9, 10, 13) for b in head[:64]):
        return f"{where}is a text file, not a workbench checkpoint (it starts with {head[:24]!r})"
    return f"{where}is not a workbench checkpoint (its first bytes are {head[:8]!r}, expected {MAGIC!r})"


def _read_exact(f, n, what, into=None):
    buf = bytearray(n) if into is None else into
    view, got = memoryview(buf).cast("B"), 0
    while got < n:
        k = f.readinto(view[got:]) if hasattr(f, "readinto") else None
        if k is None:
            chunk = f.read(n - got)
            k = len(chunk)
            view[got:got + k] = chunk
        if not k:
            raise CheckpointError(f"checkpoint is truncated: {what} needs {n} bytes, the file ended after {got}")
        got += k
    return buf


def _is_safetensors(head, size):
    if len(head) < 9:
        return False
    n = struct.unpack("<Q", head[:8])[0]
    return head[8:9] == b"{" and 0 < n and (size is None or 8 + n <= size)


def _location_map(map_location):
    """saved location string -> target device string, or None to keep it."""
    if map_location is None:
        return lambda loc, storage: loc
    if isinstance(map_location, (str, _backend.device)):
        target = str(_backend.device(map_location) if isinstance(map_location, str) else map_location)
        return lambda loc, storage: target
    if isinstance(map_location, dict):
        table = {str(k): str(v) for k, v in map_location.items()}
        return lambda loc, storage: table.get(loc, loc)
    if callable(map_location):
        def call(loc, storage):
            r = map_location(storage(), loc)
            return loc if r is None else str(r.device)

        return call
    raise TypeError(f"map_location should be a str, device, dict or callable, got {type(map_location).__name__}")


def _to_device(arr, loc):
    dev = _backend.device(loc)
    if dev.type == "cuda":
        from . import cuda

        if not cuda.is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but workbench.cuda.is_available() is "
                               "False. If you are running on a CPU-only machine, please use workbench.load with "
                               "map_location=workbench.device('cpu') to map your storages to the CPU.")
        return _backend.to_device(arr, _backend.resolve_device(dev))
    return arr


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
    def __init__(self, tensors):
        self.tensors = tensors

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
        raise CheckpointError(f"checkpoint is corrupted: unknown node {str(node)[:80]} in the object tree")


def _make_tensor(arr, rec):
    rg = rec.get("requires_grad", False)
    if rec.get("parameter"):
        try:
            from .nn import Parameter

            return Parameter(Tensor._make(arr), requires_grad=rg)
        except ImportError:
            pass
    t = Tensor._make(arr)
    if rg:
        t.requires_grad_(True)
    return t


def _load_checkpoint(f, path, locate, use_mmap):
    origin = f.tell()
    prefix = _read_exact(f, _PREFIX.size, "the file prefix")
    magic, version, hlen, hcrc = _PREFIX.unpack(prefix)
    if version != VERSION:
        raise CheckpointError(f"checkpoint format version {version} is not supported (this workbench reads version "
                              f"{VERSION}); upgrade workbench")
    if hlen > _MAX_HEADER:
        raise CheckpointError(f"checkpoint is corrupted: header length {hlen} is implausible")
    raw = _read_exact(f, hlen, "the header")
    if zlib.crc32(raw) != hcrc:
        raise CheckpointError("checkpoint is corrupted: the header's CRC32 does not match")
    try:
        header = json.loads(raw)
        storages, records, tree = header["storages"], header["tensors"], header["object"]
    except (ValueError, KeyError, TypeError) as e:
        raise CheckpointError(f"checkpoint is corrupted: unreadable header ({e})") from None
    if header.get("byteorder", "little") != "little":
        raise CheckpointError(f"checkpoint byte order {header['byteorder']!r} is not supported")
    start = -(-(_PREFIX.size + hlen) // ALIGN) * ALIGN
    _read_exact(f, start - _PREFIX.size - hlen, "the header padding")
    mm = None
    if use_mmap:
        import mmap

        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
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
            _read_exact(f, st["offset"] - pos, "alignment padding")
            buf = _read_exact(f, n, f"storage {i}", np.empty(n, np.uint8))  # NumPy's allocator aligns it
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
        if s not in placed:
            placed[s] = locate(storages[s]["device"], lambda b=buf: Tensor._make(b))
        tensors.append(_make_tensor(_to_device(arr, placed[s]), rec))
    return _Decoder(tensors).decode(tree)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load what :func:`save` wrote (or a safetensors file, as a dict of tensors). Never runs code.

    ``map_location`` moves tensors as in PyTorch: a device or string (everything there), a dict from saved
    location to target (``{"cuda:1": "cuda:0"}``), or ``fn(storage, location)`` returning a tensor on the
    target device (or None to keep the saved one). ``mmap=True`` maps a file copy-on-write instead of
    reading it. Tensors that shared memory when saved share it again (on CPU). A foreign, truncated or
    corrupted file raises ``CheckpointError`` (a RuntimeError) saying which.

    >>> import io, workbench as wb
    >>> buf = io.BytesIO(); x = wb.arange(4.0)
    >>> wb.save([x, x[1:3]], buf); _ = buf.seek(0)
    >>> a, b = wb.load(buf, map_location="cpu")
    >>> b.fill_(7.0) is b, a.tolist()
    (True, [0.0, 7.0, 7.0, 3.0])
    """
    if pickle_module is not None:
        raise ValueError("workbench.load never unpickles, so pickle_module can't be used; checkpoints are read "
                         "from their JSON header and raw bytes")
    if pickle_load_args:
        raise TypeError(f"workbench.load got unexpected keyword arguments {sorted(pickle_load_args)}")
    locate = _location_map(map_location)
    if isinstance(f, (str, bytes, os.PathLike)):
        path = os.fsdecode(os.fspath(f))
        with open(path, "rb") as fh:
            return _load_open(fh, path, locate, mmap)
    if not hasattr(f, "read"):
        raise TypeError(f"workbench.load expects a path or a binary file object, got {type(f).__name__}")
    return _load_open(f, getattr(f, "name", None) if isinstance(getattr(f, "name", None), str) else None,
                      locate, mmap)


def _load_open(f, path, locate, use_mmap):
    if use_mmap and not hasattr(f, "fileno"):
        raise ValueError("mmap=True needs a path or a real file, not an in-memory buffer")
    if not (hasattr(f, "seekable") and f.seekable()):
        raise ValueError("workbench.load needs a seekable file object (read the data into io.BytesIO first)")
    start = f.tell()
    size = f.seek(0, os.SEEK_END) - start
    f.seek(start)
    head = f.read(16)
    f.seek(start)
    if isinstance(head, str):
        raise TypeError("workbench.load needs a binary file object: open the file with mode 'rb'")
    if head.startswith(MAGIC):
        return _load_checkpoint(f, path, locate, use_mmap)
    if 0 < len(head) < len(MAGIC) and MAGIC.startswith(head):
        raise CheckpointError(f"checkpoint is truncated: the file has {len(head)} bytes")
    if _is_safetensors(head, size):
        return _load_safetensors_file(f, size, path, locate)
    raise CheckpointError(_describe(path, head))


# --- safetensors -------------------------------------------------------------------------------------
_ST_CODES = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
             "float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64", "complex64": "C64"}
_ST_DTYPES = {v: k for k, v in _ST_CODES.items()}


def save_safetensors(tensors, path, metadata=None):
    """Write a dict of named tensors as a safetensors file (readable by the ``safetensors`` package).

    Tensors are written contiguous, each on its own (safetensors has no shared storage); ``metadata`` is
    a str -> str dict stored in the header. Written atomically like :func:`save`.

    >>> import os, tempfile, workbench as wb
    >>> from workbench.serialization import load_safetensors, save_safetensors
    >>> p = os.path.join(tempfile.mkdtemp(), "w.safetensors")
    >>> save_safetensors({"w": wb.eye(2)}, p); load_safetensors(p)["w"]
    tensor([[1., 0.],
            [0., 1.]])
    """
    if not isinstance(tensors, dict):
        raise TypeError(f"save_safetensors expects a dict of str -> Tensor, got {type(tensors).__name__}")
    header, arrays, offset = {}, [], 0
    if metadata is not None:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise ValueError("safetensors metadata must be a dict of str -> str")
        header["__metadata__"] = dict(metadata)
    for name in sorted(tensors):
        t = tensors[name]
        if not isinstance(name, str) or name == "__metadata__":
            raise ValueError(f"safetensors names must be strings other than '__metadata__', got {name!r}")
        if not isinstance(t, Tensor):
            raise TypeError(f"save_safetensors: {name!r} is a {type(t).__name__}, expected a Tensor")
        code = _ST_CODES.get(t.dtype.name)
        if code is None:
            raise ValueError(f"safetensors has no dtype for {t.dtype} (tensor {name!r})")
        arr = np.ascontiguousarray(_backend.to_device(t.detach()._data, _backend.CPU))
        header[name] = {"dtype": code, "shape": list(arr.shape), "data_offsets": [offset, offset + arr.nbytes]}
        arrays.append(arr)
        offset += arr.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    folder = os.path.dirname(os.path.abspath(os.fspath(path)))
    fd, tmp = tempfile.mkstemp(prefix=".safetensors.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(struct.pack("<Q", len(raw)) + raw)
            for arr in arrays:
                out.write(memoryview(arr.reshape(-1).view(np.uint8)))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, os.fspath(path))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _load_safetensors_file(f, size, path, locate):
    n = struct.unpack("<Q", bytes(_read_exact(f, 8, "the safetensors header length")))[0]
    if 8 + n > size:
        raise CheckpointError(f"safetensors file is truncated: the header claims {n} bytes, the file has {size}")
    try:
        header = json.loads(bytes(_read_exact(f, n, "the safetensors header")))
    except ValueError as e:
        raise CheckpointError(f"safetensors header is not valid JSON ({e})") from None
    header.pop("__metadata__", None)
    data = np.frombuffer(_read_exact(f, size - 8 - n, "the safetensors data"), np.uint8)
    out, ends = {}, []
    for name, info in header.items():
        try:
            dt = _dt._by_name(_ST_DTYPES[info["dtype"]])
            begin, end = info["data_offsets"]
            shape = tuple(info["shape"])
        except (KeyError, TypeError, ValueError) as e:
            raise CheckpointError(f"safetensors entry {name!r} is badly described ({e!r})") from None
        count = int(np.prod(shape, dtype=np.int64))
        if not 0 <= begin <= end <= len(data) or end - begin != count * dt.itemsize:
            raise CheckpointError(f"safetensors entry {name!r} has offsets [{begin}, {end}) that do not fit its "
                                  f"shape {list(shape)} and dtype {info['dtype']} in {len(data)} bytes of data")
        ends.append((begin, end))
        arr = data[begin:end].view(dt.np).reshape(shape)
        out[name] = Tensor._make(_to_device(arr, locate("cpu", lambda a=arr: Tensor._make(a))))
    ends.sort()
    if any(a[1] > b[0] for a, b in zip(ends, ends[1:])):
        raise CheckpointError("safetensors file is corrupted: two entries overlap")
    return out


def load_safetensors(path, device="cpu"):
    """Read a safetensors file into a dict of tensors on ``device``.

    >>> import os, tempfile, workbench as wb
    >>> from workbench.serialization import load_safetensors, save_safetensors
    >>> p = os.path.join(tempfile.mkdtemp(), "b.safetensors")
    >>> save_safetensors({"b": wb.zeros(3)}, p); load_safetensors(p)["b"].shape
    workbench.Size([3])
    """
    target = str(_backend.device(device) if isinstance(device, str) else device)
    with open(os.fspath(path), "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(0)
        head = fh.read(16)
        fh.seek(0)
        if not _is_safetensors(head, size):
            raise CheckpointError(_describe(os.fspath(path), head))
        return _load_safetensors_file(fh, size, os.fspath(path), lambda loc, storage: target)
