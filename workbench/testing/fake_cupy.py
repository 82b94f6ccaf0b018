"""A NumPy-backed fake of the ``cupy`` module, so CI runs every CUDA code path without a GPU.

Arrays are ``ndarray`` subclasses that remember their device; module functions are NumPy's, with
results re-tagged as device arrays. It is faithful where workbench depends on CuPy's behaviour:
``.get()`` to copy to the host, ``cupy.asnumpy``/``asarray`` for transfers, ``cuda.Device`` as the
current-device context, ``cuda.runtime.getDeviceCount``, memory-pool accounting, streams and
events, ``cuda.nccl`` (``fake_nccl``: NCCL's collectives across real processes), ``RawModule`` and
``ElementwiseKernel`` (``cuda_emulator``: kernels whose threads are independent, run on the CPU; others raise
``NotEmulated``), stream capture into ``cuda.Graph`` (``fake_cuda_graph``: kernels recorded, not run, and
replayed by ``launch``; synchronisations refused while capturing), and a refusal to convert implicitly to NumPy (``numpy.asarray(cupy_array)`` raises TypeError in
real CuPy).

Use ``install()`` (or the ``fake_cuda`` pytest fixture) to route workbench's "cuda" to it.
"""
import contextlib
import time
import traceback
import types
import weakref

import numpy

from .. import _backend
from . import cuda_emulator, fake_cuda_graph, fake_nccl
from .cuda_emulator import NotEmulated

N_DEVICES = 2
_current = [0]


_SYNC_LOGS = []  # lists that count_syncs() is filling


def _synced(kind):
    # a device-to-host read: on a real GPU it waits for the device (a synchronisation) and copies
    fake_cuda_graph.refuse(f"a device-to-host read ({kind})")
    if _SYNC_LOGS:
        frames = [f for f in traceback.extract_stack()[:-2] if "fake_cupy" not in f.filename]
        where = next((f for f in reversed(frames) if "/workbench/" in f.filename and "/testing/" not in f.filename),
                     frames[-1] if frames else None)
        entry = (kind, f"{where.filename}:{where.lineno} in {where.name}" if where else "?")
        for log in _SYNC_LOGS:
            log.append(entry)


@contextlib.contextmanager
def count_syncs():
    """Collect every device-to-host read (``get``, ``item``, ``tolist``, ``float``/``int``/``bool``/index
    of a device array) made inside the block, as (kind, 'file:line in function') pairs: the hidden
    synchronisations a training step must not make."""
    log = []
    _SYNC_LOGS.append(log)
    try:
        yield log
    finally:
        _SYNC_LOGS.remove(log)


class ndarray(numpy.ndarray):
    """A fake device array: a NumPy array tagged with a device id."""

    def __array_finalize__(self, obj):
        self._dev = getattr(obj, "_dev", _current[0])

    @property
    def device(self):
        return Device(self._dev)

    @property
    def data(self):
        """CuPy's MemoryPointer: ``.ptr`` is the address of the array's first element (here in host memory, which
        the CPU emulator's kernels read)."""
        return types.SimpleNamespace(ptr=self.__array_interface__["data"][0], device=self.device)

    def get(self, stream=None, order="C", out=None):
        _synced("get")
        host = numpy.array(self.view(numpy.ndarray), order=order)
        if out is not None:
            out[...] = host
            return out
        return host

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        devs = {x._dev for x in inputs if isinstance(x, ndarray)}
        for x in inputs:
            if type(x) is numpy.ndarray and x.ndim > 0:
                raise TypeError("Unsupported type <class 'numpy.ndarray'>: fake cupy refuses to mix host arrays")
        if len(devs) > 1:
            raise ValueError(f"array device mismatch: {sorted(devs)}")
        args = [x.view(numpy.ndarray) if isinstance(x, ndarray) else x for x in inputs]
        dev = devs.pop() if devs else _current[0]
        if "out" in kwargs:
            outs = kwargs["out"]
            kwargs["out"] = tuple(o.view(numpy.ndarray) if isinstance(o, ndarray) else o for o in outs)
        if fake_cuda_graph.CAPTURING[0] is not None:  # recorded into the capture, not run
            if "out" in kwargs or method == "at":
                fake_cuda_graph.inplace(lambda: getattr(ufunc, method)(*args, **kwargs), _current_stream())
                return None if method == "at" else (outs[0] if len(outs) == 1 else outs)
            return fake_cuda_graph.kernel(lambda: _wrap(getattr(ufunc, method)(*args, **kwargs), dev), args,
                                          _current_stream())
        res = getattr(ufunc, method)(*args, **kwargs)
        return _wrap(res, dev)

    def __array_function__(self, func, types_, args, kwargs):
        return _call(func, args, kwargs)

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array explicitly."
        )

    def __reduce__(self):
        raise TypeError("fake cupy arrays cannot be pickled")

    def __repr__(self):
        return "fake_cupy." + repr(self.view(numpy.ndarray))

    def tolist(self):
        _synced("tolist")
        return self.view(numpy.ndarray).tolist()

    def item(self, *a):
        _synced("item")
        return self.view(numpy.ndarray).item(*a)

    def __float__(self):
        _synced("float")
        return float(self.view(numpy.ndarray))

    def __int__(self):
        _synced("int")
        return int(self.view(numpy.ndarray))

    def __bool__(self):
        _synced("bool")
        return bool(self.view(numpy.ndarray))

    def __index__(self):
        _synced("index")
        return self.view(numpy.ndarray).__index__()


def _flat(x, acc):
    if isinstance(x, numpy.ndarray):
        acc.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _flat(v, acc)
    return acc


def _captured_method(name, inplace=False):
    # an ndarray method that launches a kernel itself (no ufunc underneath): recorded while a capture runs
    base = getattr(numpy.ndarray, name)

    def method(self, *a, **k):
        if fake_cuda_graph.CAPTURING[0] is None:
            return base(self, *a, **k)
        if inplace:
            return fake_cuda_graph.inplace(lambda: base(self, *a, **k), _current_stream())
        if name == "__getitem__" and any(getattr(i, "dtype", None) == bool for i in _flat(a, [])):
            fake_cuda_graph.refuse("boolean-mask indexing (its result's size is read on the host)")
        return fake_cuda_graph.kernel(lambda: _wrap(base(self, *a, **k), self._dev), _flat(a, [self]),
                                      _current_stream())

    method.__name__ = name
    return method


for _name in ("astype", "copy", "__getitem__", "take", "repeat", "flatten", "ravel", "reshape", "dot", "argsort",
              "argmax", "argmin", "cumsum", "cumprod", "clip", "round", "conj", "diagonal", "transpose",
              "swapaxes", "squeeze"):
    setattr(ndarray, _name, _captured_method(_name))
for _name in ("fill", "__setitem__", "sort", "put"):
    setattr(ndarray, _name, _captured_method(_name, inplace=True))


def _nonzero(self):
    fake_cuda_graph.refuse("nonzero (its result's size is read on the host)")
    return numpy.ndarray.nonzero(self)


ndarray.nonzero = _nonzero


def _unwrap(x):
    if isinstance(x, ndarray):
        return x.view(numpy.ndarray)
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v) for v in x)
    return x


_OWNERS = weakref.WeakValueDictionary()  # host arrays that own fake device memory, for the memory pool's accounting


def _own(arr):
    if arr.base is None:
        _OWNERS[id(arr)] = arr
    return arr


def _wrap(res, dev):
    if isinstance(res, numpy.ndarray) and not isinstance(res, ndarray):
        out = _own(res).view(ndarray)
        out._dev = dev
        return out
    if isinstance(res, numpy.generic):  # CuPy returns 0-d arrays, never NumPy scalars
        out = numpy.asarray(res).view(ndarray)
        out._dev = dev
        return out
    if isinstance(res, tuple):
        return tuple(_wrap(r, dev) for r in res)
    if isinstance(res, list):
        return [_wrap(r, dev) for r in res]
    return res


def _devices(x, acc):
    if isinstance(x, ndarray):
        acc.add(x._dev)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _devices(v, acc)
    elif type(x) is numpy.ndarray and x.ndim > 0:
        raise TypeError("Unsupported type <class 'numpy.ndarray'>: fake cupy refuses to mix host arrays")


# array functions that read only metadata (no kernel), and those that write into an argument
_METADATA = {"shape", "ndim", "size", "result_type", "may_share_memory", "shares_memory", "can_cast",
             "min_scalar_type", "iscomplexobj", "isrealobj", "isscalar", "broadcast_shapes", "get_array_module"}
_INPLACE = {"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis"}


def _call(func, args, kwargs):
    devs = set()
    for a in args:
        _devices(a, devs)
    for a in kwargs.values():
        _devices(a, devs)
    if len(devs) > 1:
        raise ValueError(f"array device mismatch: {sorted(devs)}")
    dev = devs.pop() if devs else _current[0]
    uargs, ukw = _unwrap(args), {k: _unwrap(v) for k, v in kwargs.items()}
    name = getattr(func, "__name__", "")
    if fake_cuda_graph.CAPTURING[0] is not None and name not in _METADATA:  # recorded into the capture, not run
        if "out" in kwargs or name in _INPLACE:
            fake_cuda_graph.inplace(lambda: func(*uargs, **ukw), _current_stream())
            return kwargs.get("out")
        res = fake_cuda_graph.kernel(lambda: _wrap(func(*uargs, **ukw), dev), _flat(uargs, _flat(list(ukw.values()), [])),
                                     _current_stream())
        if not fake_cuda_graph._arrays(res) and res is not None:
            fake_cuda_graph.refuse(f"{name} returned a host value")
        return res
    res = func(*uargs, **ukw)
    return _wrap(res, dev)


class Device:
    def __init__(self, device=None):
        self.id = _current[0] if device is None else int(device)
        if not 0 <= self.id < N_DEVICES:
            raise RuntimeError(f"cudaErrorInvalidDevice: invalid device ordinal {self.id}")
        self._prev = []

    def __enter__(self):
        self._prev.append(_current[0])
        _current[0] = self.id
        return self

    def __exit__(self, *exc):
        _current[0] = self._prev.pop()

    def use(self):
        _current[0] = self.id

    def synchronize(self):
        fake_cuda_graph.refuse("a device synchronisation")

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(self.id)


class _MemoryPool:
    def used_bytes(self):
        return sum(a.nbytes for a in list(_OWNERS.values()))

    def total_bytes(self):
        return self.used_bytes()

    def free_all_blocks(self):
        pass

    def malloc(self, size):
        """An allocation from this pool (the fake's arrays are host memory: a token, for ``using_allocator``)."""
        return types.SimpleNamespace(size=size, pool=self)


_STREAMS = []  # the streams entered (``with stream:``), innermost last


def _current_stream():
    return _STREAMS[-1] if _STREAMS else Stream.null


class Stream:
    """A CUDA stream: a context that makes it current; ``begin_capture``/``end_capture`` make a CUDA graph."""

    null = None

    def __init__(self, null=False, non_blocking=False, ptds=False):
        self.ptr = 0 if null else id(self)

    def __enter__(self):
        _STREAMS.append(self)
        return self

    def __exit__(self, *a):
        _STREAMS.pop()
        return False

    def synchronize(self):
        fake_cuda_graph.refuse("a stream synchronisation")

    def use(self):
        return self

    def begin_capture(self, mode=None):
        fake_cuda_graph.begin(self)

    def end_capture(self):
        return fake_cuda_graph.end(self)

    def is_capturing(self):
        return fake_cuda_graph.is_capturing(self)


class Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def query(self):
        return True


def _get_elapsed_time(start, end):
    return (end.t - start.t) * 1000.0


_pool = _MemoryPool()
cuda = types.SimpleNamespace(
    Device=Device,
    Stream=Stream,
    Event=Event,
    get_elapsed_time=_get_elapsed_time,
    runtime=types.SimpleNamespace(getDeviceCount=lambda: N_DEVICES, CUDARuntimeError=fake_cuda_graph.CUDARuntimeError,
                                  deviceSynchronize=lambda: fake_cuda_graph.refuse("a device synchronisation")),
    get_current_stream=_current_stream,
    Graph=fake_cuda_graph.Graph,
    using_allocator=fake_cuda_graph.using_allocator,
    MemoryPool=_MemoryPool,
    nccl=fake_nccl,
)
Stream.null = Stream(null=True)
RawModule = cuda_emulator.EmulatedModule


def ElementwiseKernel(in_params, out_params, operation, name="kernel", **kwargs):  # noqa: N802 - CuPy's name
    """cupy.ElementwiseKernel, run by the CPU emulator; the outputs it allocates are on the current device."""
    return cuda_emulator.EmulatedElementwiseKernel(in_params, out_params, operation, name,
                                                   device_array=lambda a: _wrap(a, _current[0]), **kwargs)


def get_default_memory_pool():
    return _pool


def get_default_pinned_memory_pool():
    return _pool


def _transfer(a):
    # a host-to-device copy from pageable memory: synchronous, so refused during a capture
    if not isinstance(a, ndarray) and isinstance(a, numpy.ndarray) and a.ndim > 0:
        fake_cuda_graph.refuse("a host-to-device copy")


def asarray(a, dtype=None, order=None):
    if isinstance(a, ndarray) and a._dev == _current[0] and (dtype is None or a.dtype == dtype):
        return a
    _transfer(a)
    if isinstance(a, ndarray) and fake_cuda_graph.CAPTURING[0] is not None:
        return fake_cuda_graph.kernel(lambda: _wrap(numpy.array(a.view(numpy.ndarray), dtype=dtype,
                                                                order=order or "K"), _current[0]), [a],
                                      _current_stream())
    host = a.view(numpy.ndarray) if isinstance(a, ndarray) else a
    out = _own(numpy.array(host, dtype=dtype, order=order or "K")).view(ndarray)
    out._dev = _current[0]
    return out


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0):
    if not copy:
        return asarray(obj, dtype=dtype)
    _transfer(obj)
    if isinstance(obj, ndarray) and fake_cuda_graph.CAPTURING[0] is not None:
        return fake_cuda_graph.kernel(lambda: _wrap(numpy.array(obj.view(numpy.ndarray), dtype=dtype, copy=True,
                                                                order=order, ndmin=ndmin), _current[0]), [obj],
                                      _current_stream())
    host = obj.view(numpy.ndarray) if isinstance(obj, ndarray) else obj
    out = _own(numpy.array(host, dtype=dtype, copy=True, order=order, ndmin=ndmin)).view(ndarray)
    out._dev = _current[0]
    return out


def asnumpy(a, stream=None, order="C", out=None):
    return a.get(order=order, out=out) if isinstance(a, ndarray) else numpy.asarray(a)


def get_array_module(*args):
    return _module if any(isinstance(a, ndarray) for a in args) else numpy


def from_dlpack(x):
    return asarray(numpy.from_dlpack(x))


class _Random:
    def __init__(self):
        self._rs = numpy.random.RandomState(0)

    def seed(self, s=None):
        # CuPy takes any non-negative int as a seed; NumPy's legacy RandomState only 32 bits
        self._rs = numpy.random.RandomState(None if s is None else int(s) % 2 ** 32)

    def RandomState(self, seed=None):  # noqa: N802 - CuPy's name
        rs = _Random()
        rs.seed(seed)
        return rs

    def __getattr__(self, name):
        fn = getattr(self._rs, name)
        return lambda *a, **k: fake_cuda_graph.fixed(_wrap(fn(*a, **k), _current[0]), _current_stream())


random = _Random()


class _Module(types.ModuleType):
    def __getattr__(self, name):
        obj = getattr(numpy, name)
        if callable(obj) and not isinstance(obj, type):
            wrapped = lambda *a, **k: _call(obj, a, k)  # noqa: E731
            wrapped.__name__ = name
            setattr(self, name, wrapped)
            return wrapped
        return obj


_module = _Module("cupy", __doc__)
for _k, _v in list(globals().items()):
    if not _k.startswith("__") and _k not in ("numpy", "types", "time", "contextlib", "weakref", "_Module",
                                              "fake_nccl", "cuda_emulator", "fake_cuda_graph"):
        setattr(_module, _k, _v)
_module.__fake__ = True
# dtypes and scalar types are NumPy's, as in real CuPy
for _k in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool_",
           "complex64", "complex128", "dtype", "newaxis", "pi", "inf", "nan", "e", "generic", "integer",
           "floating", "complexfloating", "number"):
    setattr(_module, _k, getattr(numpy, _k))


def module():
    """The fake cupy module object."""
    return _module


@contextlib.contextmanager
def installed():
    """Route workbench's 'cuda' device to the fake cupy inside the block."""
    prev = _backend._cupy
    _backend.use_cupy(_module)
    try:
        yield _module
    finally:
        _backend.use_cupy(prev)


def install():
    _backend.use_cupy(_module)
    return _module
