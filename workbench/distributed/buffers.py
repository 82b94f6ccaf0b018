"""Tensors as MPI buffers: a contiguous host array of a type MPI knows, written back when an op completes.

CPU tensors that are contiguous and of a type MPI reduces natively are passed as they are (zero copy).
CUDA tensors on an MPI group travel through host memory. float16 and bfloat16 have no MPI type: they
are reduced in float32 and moved as 16-bit words; bool is moved and reduced as bytes.
"""
from .. import _backend
from ..tensor import Tensor

np = _backend.numpy


def check_tensor(t, op, name="tensor"):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: {name} must be a workbench Tensor, got {type(t).__name__}")
    return t


def host(t):
    """The tensor's data as a host array (the array itself on CPU, a copy from a GPU)."""
    a = t._data
    return a if t.device.type == "cpu" else _backend.to_device(a, _backend.CPU)


def wire(h, reducing):
    """``h`` as an array MPI can send (and reduce, if ``reducing``); may be ``h`` itself or a copy."""
    dt = h.dtype
    if dt == np.bool_:
        w = h.view(np.uint8)
    elif dt.itemsize == 2 and dt.kind not in "iu":  # float16 and bfloat16
        w = h.astype(np.float32) if reducing else h.view(np.uint16)
    else:
        w = h
    return w if w.flags.c_contiguous else np.ascontiguousarray(w)


def unwire(w, dt):
    """Back from the wire type to dtype ``dt``."""
    if w.dtype == dt:
        return w
    if dt == np.bool_:
        return w.astype(np.bool_) if w.dtype != np.uint8 else w.view(np.bool_)
    if w.dtype == np.uint16:
        return w.view(dt)
    return w.astype(dt)


class Buf:
    """One tensor's MPI buffer: ``arr`` goes to MPI; ``store()`` writes a received result into the tensor."""

    __slots__ = ("t", "arr", "_host")

    def __init__(self, t, reducing=False):
        self.t = t
        self._host = host(t)
        self.arr = wire(self._host, reducing)

    def store(self, arr=None):
        """Write ``arr`` (default: this buffer) into the tensor, converting type and device as needed."""
        arr = self.arr if arr is None else arr
        t = self.t
        if arr is not t._data:
            val = unwire(arr, t._data.dtype).reshape(t._data.shape)
            if t.device.type != "cpu":
                val = _backend.to_device(val, t.device)
            t._data[...] = val
        t._bump("distributed")


def send_array(t, reducing=False):
    """A read-only wire array for an input tensor (no write back)."""
    return wire(host(t), reducing)


def empty(shape, like):
    return np.empty(shape, like.dtype)


def concat(arrays, like):
    out = np.empty((len(arrays),) + like.shape, like.dtype)
    for i, a in enumerate(arrays):
        out[i] = a.reshape(like.shape)
    return out
