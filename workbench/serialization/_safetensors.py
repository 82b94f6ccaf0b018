"""safetensors files: 8-byte little-endian header length, a JSON header, then each tensor's bytes."""
import json
import os
import struct

from .. import _backend
from .._backend import dtypes as _dt
from ..tensor import Tensor
from ._common import CheckpointError, read_exact, to_device, write_to

np = _backend.numpy

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

    def write(out):
        out.write(struct.pack("<Q", len(raw)) + raw)
        for arr in arrays:
            out.write(memoryview(arr.reshape(-1).view(np.uint8)))

    write_to(os.fspath(path), write, "save_safetensors")


def load_file(f, size, path, locate):
    """The tensors of a safetensors file open as ``f`` (``size`` bytes), placed by ``locate``."""
    n = struct.unpack("<Q", bytes(read_exact(f, 8, "the safetensors header length")))[0]
    if 8 + n > size:
        raise CheckpointError(f"safetensors file is truncated: the header claims {n} bytes, the file has {size}")
    try:
        header = json.loads(bytes(read_exact(f, n, "the safetensors header")))
    except ValueError as e:
        raise CheckpointError(f"safetensors header is not valid JSON ({e})") from None
    header.pop("__metadata__", None)
    data = np.frombuffer(read_exact(f, size - 8 - n, "the safetensors data"), np.uint8)
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
        out[name] = Tensor._make(to_device(arr, locate("cpu", lambda a=arr: Tensor._make(a))))
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
        if not is_safetensors(head, size):
            raise CheckpointError(f"{os.fspath(path)!r} is not a safetensors file")
        return load_file(fh, size, os.fspath(path), lambda loc, storage: target)


def is_safetensors(head, size):
    """Whether a file's first bytes (and its size, when known) look like a safetensors file."""
    if len(head) < 9:
        return False
    n = struct.unpack("<Q", head[:8])[0]
    return head[8:9] == b"{" and 0 < n and (size is None or 8 + n <= size)
