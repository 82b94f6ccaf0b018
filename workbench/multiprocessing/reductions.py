"""Tensors across processes: shared-memory storage and the picklers' reducers.

Sharing strategy 'file_descriptor' (PyTorch's default on Linux). ``share_memory_()`` moves a tensor's
storage into an anonymous shared-memory file (``memfd_create``; an unlinked file in /dev/shm where memfd
is missing) mapped ``MAP_SHARED``. Pickled by ``multiprocessing``'s ForkingPickler (its queues, pipes and
spawned processes' arguments) a CPU tensor becomes a small handle: the file descriptor, passed with
SCM_RIGHTS by ``multiprocessing.reduction.DupFd``, plus (nbytes, dtype, shape, strides, offset). The
receiver maps the same memory, so writes on either side are seen by the other. The file has no name, so
nothing is ever left in /dev/shm, even when a process is killed: the memory goes away with the last
mapping. The sending process must still be alive when the receiver unpickles (as in PyTorch).

Ordinary pickling (``pickle.dumps``, ``copy.deepcopy``) goes through ``Tensor.__reduce_ex__`` ->
:func:`reduce_tensor` and copies the values.
"""
import ctypes
import mmap
import os
import tempfile
import weakref
from multiprocessing import reduction as _mp_reduction

from .. import _backend
from .._backend import dtypes as _dt
from .._core import Tensor

np = _backend.numpy
_MAPPED = weakref.WeakValueDictionary()  # (st_dev, st_ino) -> _Segment: one mapping per shared file


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


class _Segment:
    """One shared-memory file and its mapping; closes its descriptor when the last holder goes."""

    __slots__ = ("fd", "nbytes", "buf", "ptr", "created", "_fin", "__weakref__")

    def __init__(self, fd, nbytes, created=False):
        self.fd = fd
        self.nbytes = nbytes
        self.buf, self.ptr = _map(fd, max(nbytes, 1))
        self.created = created
        self._fin = weakref.finalize(self, os.close, fd)

    def release_fd(self):
        """Close the descriptor of a segment this process received, keeping the mapping.

        The memory stays shared with the sender, but can't be sent on: sending moves it to a new segment.
        The DataLoader does this for batches, so that keeping many batches doesn't use up descriptors.
        """
        if not self.created and self._fin.detach() is not None:
            os.close(self.fd)
            self.fd = None

    @classmethod
    def create(cls, nbytes):
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
    if seg is None or seg.fd is None or seg.offset_of(t._data) is None:
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
