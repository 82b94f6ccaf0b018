"""What every checkpoint reader and writer shares: the error type, exact reads, atomic writes, where
tensors go on load (``map_location``) and the memory blocks that saved tensors occupy."""
import ctypes
import mmap
import os
import tempfile

from .. import _backend, cuda
from ..utils.serialization import config

np = _backend.numpy


class CheckpointError(RuntimeError):
    """A file that is not a readable checkpoint: foreign, truncated or corrupted (a RuntimeError).

    >>> import io, workbench as wb
    >>> try:
    ...     wb.load(io.BytesIO(b"not a checkpoint"))
    ... except wb.serialization.CheckpointError as e:
    ...     print(e)
    is a text file, not a checkpoint workbench or PyTorch wrote (it starts with b'not a checkpoint')
    """


def read_exact(f, n, what, into=None):
    """``n`` bytes from ``f`` (into ``into`` if given), or CheckpointError naming ``what`` was cut off."""
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


def write_to(f, write, what="workbench.save"):
    """Run ``write(fileobj)`` on a path atomically, or on an open binary file in place.

    A path gets a temporary file in the same directory, fsync, rename over the destination, fsync of the
    directory: a failure at any point (an exception, a full disk, a kill) leaves the old file as it was.
    """
    if isinstance(f, (str, bytes, os.PathLike)):
        path = os.fsdecode(os.fspath(f))
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise RuntimeError(f"Parent directory {folder} does not exist.")
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                write(out)
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
        raise TypeError(f"{what} expects a path or a binary file object, got {type(f).__name__}")
    write(f)
    if hasattr(f, "flush"):
        f.flush()


def location_map(map_location):
    """``map_location`` as PyTorch takes it -> fn(saved location, storage()) giving the target device string."""
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


def mmap_access():
    """How ``load(..., mmap=True)`` maps files: copy-on-write, or shared when ``config.load.mmap_flags`` is
    ``mmap.MAP_SHARED`` (writes to the tensors then reach the file)."""
    return mmap.ACCESS_WRITE if config.load.mmap_flags == mmap.MAP_SHARED else mmap.ACCESS_COPY


def to_device(arr, loc):
    """A host array moved to the device named ``loc`` (itself for the CPU)."""
    dev = _backend.device(loc)
    if dev.type == "cuda":
        if not cuda.is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but workbench.cuda.is_available() is "
                               "False. If you are running on a CPU-only machine, please use workbench.load with "
                               "map_location=workbench.device('cpu') to map your storages to the CPU.")
        return _backend.to_device(arr, _backend.resolve_device(dev))
    return arr


# --- the memory blocks saved tensors occupy ------------------------------------------------------------
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


class Blocks:
    """Groups the arrays being saved by the memory they share, so that views are saved once.

    A block is a dict: ``lo``/``hi`` addresses, ``device``, ``source`` (the device array to copy from, or
    None for host memory read in place) and ``members``, a list of ``(record, data pointer)``.
    """

    def __init__(self):
        self.groups = {}
        self._keep = []  # arrays and copies alive until written

    def _group(self, key, lo, hi, device, source, record, arr):
        self._keep.append(arr)
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = {"lo": lo, "hi": hi, "device": str(device), "members": [], "source": source}
        else:
            g["lo"], g["hi"] = min(g["lo"], lo), max(g["hi"], hi)
        g["members"].append((record, _backend.data_ptr(arr)))
        return g, arr

    def add(self, arr, device, root=None, record=None):
        """Add ``arr`` (on ``device``; ``root`` is its base tensor's array on a GPU) -> ``(block, arr as saved)``.

        On the CPU a block is the span of host memory its arrays reach (a slice saves only its span); on a
        GPU it is the base tensor's memory, and an array that is not a view of it gets a copy of its own.
        """
        if device.type == "cpu":
            owner = _owner(arr)
            lo, hi = _bounds(arr)
            return self._group(("cpu", id(owner.base if owner.base is not None else owner)), lo, hi, device, None,
                               record, arr)
        rd = root if root is not None else arr
        lo, hi = _backend.data_ptr(rd), _backend.data_ptr(rd) + rd.nbytes
        if not rd.flags.c_contiguous or _backend.data_ptr(arr) < lo or _backend.data_ptr(arr) + _span(arr) > hi:
            arr = rd = _backend.xp_of(arr).ascontiguousarray(arr)
            lo, hi = _backend.data_ptr(arr), _backend.data_ptr(arr) + arr.nbytes
        return self._group((str(device), id(rd)), lo, hi, device, rd, record, arr)

    def add_whole(self, arr, device, root=None, record=None):
        """As :meth:`add`, for PyTorch's format: a block is a whole storage of one dtype, fixed when first seen
        (its base array's memory), and views are in whole elements with non-negative strides (others get a
        copy of their own, as does a view at an offset that is not a whole number of elements)."""
        for attempt in (0, 1):
            if device.type == "cpu":
                rd = _owner(arr)
            else:
                rd = root if root is not None and root.flags.c_contiguous else arr
            lo, hi = _bounds(rd) if device.type == "cpu" else (_backend.data_ptr(rd),
                                                                  _backend.data_ptr(rd) + rd.nbytes)
            key = (str(device), id(rd), arr.dtype)
            g = self.groups.get(key)
            if g is not None:
                lo, hi = g["lo"], g["hi"]
            hi = lo + (hi - lo) // arr.itemsize * arr.itemsize
            ptr = _backend.data_ptr(arr)
            if (attempt or (_element_view(arr) and (ptr - lo) % arr.itemsize == 0 and lo <= ptr
                            and ptr + _span(arr) <= hi)):
                return self._group(key, lo, hi, device, None if device.type == "cpu" else rd, record, arr)
            arr, root = _backend.xp_of(arr).array(arr, order="C", copy=True), None


def _owner(arr):
    """The outermost NumPy array in ``arr``'s chain of bases: the memory it is a view of."""
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


def _element_view(arr):
    """Whether PyTorch can describe ``arr`` as a view: non-negative strides in whole elements."""
    return all(s >= 0 and s % arr.itemsize == 0 for s in arr.strides)


def block_bytes(group):
    """The bytes of one block, as a buffer (host memory read in place, or a host copy of device memory)."""
    n = group["hi"] - group["lo"]
    if group["source"] is None:
        return memoryview((ctypes.c_char * n).from_address(group["lo"])).cast("B") if n else memoryview(b"")
    host = _backend.to_device(group["source"], _backend.CPU)
    return memoryview(np.ascontiguousarray(host).reshape(-1).view(np.uint8))[: n]
