"""Tensors across processes: shared-memory storage and the picklers' reducers.

Sharing strategy 'file_descriptor' (PyTorch's default on Linux). ``share_memory_()`` moves a tensor's
storage into an anonymous shared-memory file (``memfd_create``; an unlinked file in /dev/shm where memfd
is missing) mapped ``MAP_SHARED``. Pickled by ``multiprocessing``'s ForkingPickler (its queues, pipes and
spawned processes' arguments) a CPU tensor becomes a small handle: the file descriptor, passed with
SCM_RIGHTS by ``multiprocessing.reduction.DupFd``, plus (nbytes, dtype, shape, strides, offset). The
receiver maps the same memory, so writes on either side are seen by the other. The file has no name, so
nothing is ever left in /dev/shm, even when a process is killed: the memory goes away with the last
mapping. The sending process must still be alive when the receiver unpickles (as in PyTorch).

Sharing strategy 'file_system' (``set_sharing_strategy("file_system")``, as in PyTorch). New shared
storage is a named file, /dev/shm/workbench_<pid>_<random>, and the handle is its name: the receiver opens
it, maps it and closes the descriptor at once, so a process can hold any number of received tensors
without running out of descriptors. As PyTorch's THRefcountedMapAllocator does, the file ends in a
process-shared reference count (updated under ``flock``): each mapping holds one, and so does each handle
in flight (taken when pickled, handed over when unpickled); the last to let go unlinks the file. A process
killed before it lets go (SIGKILL), or a handle pickled and never unpickled, leaves its file in /dev/shm
(PyTorch runs a torch_shm_manager daemon to remove those; workbench has none). Each tensor travels by the
kind of storage it has: a tensor shared under one strategy keeps that storage under the other.

Ordinary pickling (``pickle.dumps``, ``copy.deepcopy``) goes through ``Tensor.__reduce_ex__`` ->
:func:`reduce_tensor` and copies the values.
"""
import ctypes
import fcntl
import mmap
import os
import secrets
import struct
import tempfile
import weakref
from multiprocessing import reduction as _mp_reduction

from .. import _backend
from .._backend import dtypes as _dt
from .._core import Tensor

np = _backend.numpy
_MAPPED = weakref.WeakValueDictionary()  # (st_dev, st_ino) -> _Segment: one mapping per shared file
STRATEGIES = ("file_descriptor", "file_system")
_strategy = ["file_descriptor"]  # PyTorch's default on Linux; set by workbench.multiprocessing
_SHM_DIR = "/dev/shm"
_COUNT = struct.Struct("q")  # the reference count ending a named file, after the data rounded up to 8 bytes


_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value


def _map(fd, nbytes):
    """Map a shared file: a ctypes buffer that unmaps when the last array using it goes.

    Not Python's ``mmap`` module: it keeps a duplicate descriptor per mapping, and a process holding
    many received batches would run out of descriptors.
    """
    addr = _libc.mmap(None, nbytes, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
    if addr is None or addr == _MAP_FAILED:
        err = ctypes.get_errno()
        raise OSError(err, f"mapping {nbytes} bytes of shared memory failed: {os.strerror(err)}")
    buf = (ctypes.c_char * nbytes).from_address(addr)
    weakref.finalize(buf, _libc.munmap, addr, nbytes)
    return buf, addr


def _count_at(nbytes):
    return -(-max(nbytes, 1) // 8) * 8


def _add_ref(name, nbytes, delta):
    """Add delta to the reference count of named file ``name`` (under its flock); unlink it at zero.
    Returns the new count, or None when the file is gone."""
    path = os.path.join(_SHM_DIR, name)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        (n,) = _COUNT.unpack(os.pread(fd, _COUNT.size, _count_at(nbytes)))
        if n <= 0:  # its last holder let go while we opened it: the file is on its way out
            return None
        n += delta
        os.pwrite(fd, _COUNT.pack(n), _count_at(nbytes))
        if n == 0:
            os.unlink(path)
        return n
    finally:
        os.close(fd)  # releases the flock


class _Segment:
    """One shared-memory file and its mapping; closes its descriptor when the last holder goes. A named
    segment (strategy 'file_system') holds no descriptor: it holds one count of its file's reference
    count, given back when the segment goes."""

    __slots__ = ("fd", "nbytes", "buf", "ptr", "created", "name", "_fin", "__weakref__")

    def __init__(self, fd, nbytes, created=False, name=None):
        self.fd = fd
        self.nbytes = nbytes
        self.name = name
        if name is None:
            self.buf, self.ptr = _map(fd, max(nbytes, 1))
            self._fin = weakref.finalize(self, os.close, fd)
        else:  # the mapping also covers the count, so that the data's buffer stays the whole mapping
            self.buf, self.ptr = _map(fd, _count_at(nbytes) + _COUNT.size)
            self.fd = None
            os.close(fd)
            self._fin = weakref.finalize(self, _add_ref, name, nbytes, -1)
        self.created = created

    def release_fd(self):
        """Close the descriptor of a segment this process received, keeping the mapping.

        The memory stays shared with the sender, but can't be sent on: sending moves it to a new segment.
        The DataLoader does this for batches, so that keeping many batches doesn't use up descriptors.
        """
        if not self.created and self.name is None and self._fin.detach() is not None:
            os.close(self.fd)
            self.fd = None

    @classmethod
    def create(cls, nbytes):
        if _strategy[0] == "file_system":
            return cls._create_named(nbytes)
        if hasattr(os, "memfd_create"):
            fd = os.memfd_create("workbench", os.MFD_CLOEXEC)
        else:
            fd, path = tempfile.mkstemp(prefix="workbench_", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
            os.unlink(path)
        try:
            os.ftruncate(fd, max(nbytes, 1))
            seg = cls(fd, nbytes, created=True)
        except BaseException:
            os.close(fd)
            raise
        st = os.fstat(fd)
        _MAPPED[(st.st_dev, st.st_ino)] = seg
        return seg

    @classmethod
    def _create_named(cls, nbytes):
        name = f"workbench_{os.getpid()}_{secrets.token_hex(8)}"
        path = os.path.join(_SHM_DIR, name)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            os.ftruncate(fd, _count_at(nbytes) + _COUNT.size)
            os.pwrite(fd, _COUNT.pack(1), _count_at(nbytes))  # this segment's count
            st = os.fstat(fd)
            seg = cls(fd, nbytes, created=True, name=name)
        except BaseException:
            os.close(fd)
            os.unlink(path)
            raise
        _MAPPED[(st.st_dev, st.st_ino)] = seg
        return seg

    @classmethod
    def attach_named(cls, name, nbytes):
        """Map named file ``name``, taking over the count its handle held in flight."""
        path = os.path.join(_SHM_DIR, name)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            raise RuntimeError(f"shared tensor storage {path} is gone: the handle was used twice, or the file "
                               "was removed from /dev/shm by hand") from None
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        seg = _MAPPED.get(key)
        if seg is not None and seg.nbytes >= nbytes:
            os.close(fd)
            _add_ref(name, nbytes, -1)  # mapped here already: the handle's count is not needed
            return seg
        seg = cls(fd, nbytes, name=name)  # this mapping holds the handle's count
        _MAPPED[key] = seg
        return seg

    @classmethod
    def attach(cls, fd, nbytes):
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        seg = _MAPPED.get(key)
        if seg is not None and seg.nbytes >= nbytes:
            if seg.fd is None:  # released earlier: this descriptor makes it sendable again
                seg.fd, seg._fin = fd, weakref.finalize(seg, os.close, fd)
            else:
                os.close(fd)
            return seg
        seg = cls(fd, nbytes)
        _MAPPED[key] = seg
        return seg

    def array(self, shape, dtype, strides, offset):
        return np.ndarray(shape, dtype, buffer=self.buf, offset=offset, strides=strides)

    def offset_of(self, arr):
        """Byte offset of ``arr`` in this segment, or None when it lies elsewhere."""
        lo, hi = _bounds(arr)
        if lo < self.ptr or hi > self.ptr + self.nbytes:
            return None
        return _backend.data_ptr(arr) - self.ptr


def _bounds(arr):
    if arr.size == 0:
        p = _backend.data_ptr(arr)
        return p, p
    return np.lib.array_utils.byte_bounds(arr)


def _root(t):
    return t._base if t._base is not None else t


def _segment_of(t):
    """The shared segment holding ``t``'s elements, or None."""
    seg = getattr(_root(t), "_shm", None)
    if seg is None or seg.fd is None and seg.name is None or seg.offset_of(t._data) is None:
        return None
    return seg


def shared_empty(shape, np_dtype):
    """A NumPy array of ``shape`` in a new shared segment, and the segment (for ``Tensor._shm``)."""
    np_dtype = np.dtype(np_dtype)
    n = int(np.prod(shape, dtype=np.int64)) * np_dtype.itemsize
    seg = _Segment.create(n)
    return seg.array(tuple(shape), np_dtype, None, 0), seg


def _shared_tensor(arr, seg, cls=Tensor, requires_grad=False):
    t = object.__new__(cls)
    Tensor._init_from(t, arr, requires_grad)
    t._shm = seg
    return t


def release_fds(obj):
    """``release_fd`` the segments of every received tensor in ``obj`` (nested dicts, lists, tuples)."""
    if isinstance(obj, Tensor):
        seg = getattr(_root(obj), "_shm", None)
        if seg is not None:
            seg.release_fd()
    elif isinstance(obj, dict):
        for v in obj.values():
            release_fds(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            release_fds(v)


def share_memory_(tensor):
    """Move ``tensor``'s storage into shared memory in place (same object, same values); returns it.

    Views taken of the tensor after the call share the memory too; views taken before it keep the old
    memory. A no-op for CUDA tensors and for tensors already shared.

    >>> import workbench as wb
    >>> t = wb.arange(3.0)
    >>> t.share_memory_() is t, t.is_shared()
    (True, True)
    """
    if tensor.device.type != "cpu" or _segment_of(tensor) is not None:
        return tensor
    root = _root(tensor)
    old = root._data
    lo, hi = _bounds(old)
    seg = _Segment.create(hi - lo)
    if hi > lo:
        ctypes.memmove(seg.ptr, lo, hi - lo)
    if tensor is not root:
        # the view keeps its place in the root's memory layout
        tensor._data = seg.array(tensor._data.shape, tensor._data.dtype, tensor._data.strides,
                                 _backend.data_ptr(tensor._data) - lo)
    root._data = seg.array(old.shape, old.dtype, old.strides, _backend.data_ptr(old) - lo)
    root._shm = seg
    return tensor


def _check_sendable(tensor):
    if tensor._rg and tensor.grad_fn is not None:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not support "
            "crossing process boundaries.  If you just want to transfer the data, call detach() on the tensor "
            "before serializing (e.g., putting it on the queue).")


def reduce_tensor_shared(tensor):
    """ForkingPickler's reducer: share the storage (moving it to shared memory first) and send a handle.

    Registered by ``workbench.multiprocessing`` for Tensor and its subclasses, so tensors put on its
    queues, sent over its pipes or passed to spawned processes travel as handles, not copies.

    >>> import workbench as wb
    >>> from multiprocessing.reduction import ForkingPickler
    >>> t = wb.zeros(1_000_000)
    >>> len(ForkingPickler.dumps(t)) < 1000, t.is_shared()
    (True, True)
    """
    _check_sendable(tensor)
    if tensor.device.type != "cpu":
        raise RuntimeError(
            f"can't send a {tensor.device} tensor to another process: workbench shares CPU tensors only "
            "(CUDA IPC handles are not supported). Send tensor.cpu() and move it back with .to(device) "
            "in the receiving process.")
    seg = _segment_of(tensor)
    if seg is None:
        share_memory_(tensor)
        seg = _segment_of(tensor)
        if seg is None:  # a view made stale by an earlier share_memory_ of its base: send a shared copy
            arr, seg = shared_empty(tensor._data.shape, tensor._data.dtype)
            arr[...] = tensor._data
            tensor = _shared_tensor(arr, seg, type(tensor), tensor._rg)
    d = tensor._data
    meta = (seg.nbytes, _dt._FROM_NP[d.dtype].name, d.shape, d.strides, seg.offset_of(d), tensor._rg)
    if seg.name is not None:
        if _add_ref(seg.name, seg.nbytes, 1) is None:  # a count for the handle in flight
            raise RuntimeError(f"shared tensor storage {seg.name} was removed from {_SHM_DIR}: can't send it")
        return (rebuild_named_tensor, (type(tensor), seg.name) + meta)
    handle = _mp_reduction.DupFd(seg.fd)
    return (rebuild_shared_tensor,
            (type(tensor), handle, seg.nbytes, _dt._FROM_NP[d.dtype].name, d.shape, d.strides, seg.offset_of(d),
             tensor._rg))


def rebuild_shared_tensor(cls, handle, nbytes, dtype, shape, strides, offset, requires_grad):
    """Map the sender's shared memory and wrap it in a tensor (the receiving end of the reducer).

    >>> import workbench as wb
    >>> from multiprocessing.reduction import ForkingPickler
    >>> ForkingPickler.loads(ForkingPickler.dumps(wb.ones(2)))
    tensor([1., 1.])
    """
    seg = _Segment.attach(handle.detach(), nbytes)
    return _shared_tensor(seg.array(shape, _dt._by_name(dtype).np, strides, offset), seg, cls, requires_grad)


def rebuild_named_tensor(cls, name, nbytes, dtype, shape, strides, offset, requires_grad):
    """Map the named shared file of a tensor sent under strategy 'file_system'.

    >>> import workbench as wb, workbench.multiprocessing as mp
    >>> from multiprocessing.reduction import ForkingPickler
    >>> mp.set_sharing_strategy("file_system")
    >>> ForkingPickler.loads(ForkingPickler.dumps(wb.ones(2)))
    tensor([1., 1.])
    >>> mp.set_sharing_strategy("file_descriptor")
    """
    seg = _Segment.attach_named(name, nbytes)
    return _shared_tensor(seg.array(shape, _dt._by_name(dtype).np, strides, offset), seg, cls, requires_grad)


def reduce_tensor(tensor):
    """``Tensor.__reduce_ex__``: ordinary pickling and ``copy.deepcopy`` copy the values.

    >>> import pickle, workbench as wb
    >>> pickle.loads(pickle.dumps(wb.tensor([1.0, 2.0])))
    tensor([1., 2.])
    """
    d = tensor._data
    dev = None
    if tensor.device.type != "cpu":
        dev, d = str(tensor.device), d.get()
    return (rebuild_tensor, (type(tensor), d, tensor._rg, dev))


def rebuild_tensor(cls, array, requires_grad, device=None):
    """Rebuild a tensor pickled by value (the inverse of :func:`reduce_tensor`).

    >>> import numpy as np, workbench as wb
    >>> rebuild_tensor(wb.Tensor, np.zeros(2, np.float32), False)
    tensor([0., 0.])
    """
    if device is not None:
        array = _backend.to_device(array, _backend.resolve_device(device))
    t = object.__new__(cls)
    Tensor._init_from(t, array, requires_grad)
    return t


def register_pickler(cls):
    """Share ``cls``'s tensors through multiprocessing (its pickler's table is keyed by exact type); the
    registry in workbench/tensor.py calls this for Tensor and for every subclass defined later."""
    _mp_reduction.ForkingPickler.register(cls, reduce_tensor_shared)


def _share_memory_method(self):
    """Move the storage into shared memory in place (see workbench.multiprocessing); returns self.

    >>> import workbench as wb
    >>> wb.zeros(2).share_memory_().is_shared()
    True
    """
    return share_memory_(self)


def _reduce_ex(self, proto):
    return reduce_tensor(self)


# attached to Tensor by the registry in workbench/tensor.py
METHODS = {"share_memory_": _share_memory_method, "__reduce_ex__": _reduce_ex}
