"""CUDA tensors on an ``nccl`` group: NCCL through CuPy's bindings (``cupy.cuda.nccl``).

The communicator is made on a group's first CUDA collective, as ChainerMN does: the group's rank 0 asks
NCCL for a unique id and broadcasts it over the group's MPI communicator; every rank then joins with
``NcclCommunicator(size, uid, rank)`` on its tensor's device. Ops are queued on the current CUDA stream,
so they are ordered with the kernels around them and the host does not wait (``Work.wait()`` returns at
once, as PyTorch's makes the current stream wait, not the host).
"""
from .. import _backend
from .buffers import unwire

np = _backend.numpy
_OPS = {"SUM": "NCCL_SUM", "PRODUCT": "NCCL_PROD", "MAX": "NCCL_MAX", "MIN": "NCCL_MIN", "AVG": "NCCL_AVG"}
_TYPES = {"float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64", "int8": "NCCL_INT8",
          "uint8": "NCCL_UINT8", "int32": "NCCL_INT32", "int64": "NCCL_INT64", "bool": "NCCL_UINT8",
          "bfloat16": "NCCL_BFLOAT16"}


def _module(cp):
    mod = getattr(cp.cuda, "nccl", None)
    if mod is None:
        try:
            from cupy.cuda import nccl as mod
        except ImportError as e:
            raise RuntimeError(f"backend 'nccl' needs CuPy built with NCCL (pip install nvidia-nccl-cu12 next to "
                               f"cupy-cuda12x): {e}. Use backend='gloo' to move CUDA tensors over MPI.") from None
    return mod


def communicator(pg):
    """The group's NCCL communicator, made on first use."""
    if pg.nccl is None:
        cp = _backend.cupy()
        mod = _module(cp)
        uid = mod.get_unique_id() if pg.rank() == 0 else None
        uid = pg.comm.bcast(uid, root=0)
        pg.nccl = Nccl(mod, cp, mod.NcclCommunicator(pg.size(), uid, pg.rank()), pg.size())
    return pg.nccl


class Nccl:
    """One group's NCCL communicator, with the collectives on workbench tensors."""

    def __init__(self, mod, cp, comm, size):
        self.mod, self.cp, self.comm, self.size = mod, cp, comm, size

    def _code(self, t_or_dtype):
        name = t_or_dtype.dtype.name if hasattr(t_or_dtype, "dtype") else t_or_dtype
        code = getattr(self.mod, _TYPES.get(name, ""), None)
        if code is None:
            raise TypeError(f"NCCL has no type for {name} tensors; convert them (e.g. .float()) first")
        return code

    def _op(self, name):
        code = getattr(self.mod, _OPS.get(name, ""), None)
        if code is None:
            raise ValueError(f"ReduceOp.{name} is not supported by NCCL; use SUM, AVG, PRODUCT, MIN or MAX")
        return code

    def _stream(self):
        return self.cp.cuda.get_current_stream().ptr

    def _arr(self, t):
        # a contiguous device array for the tensor (itself when it is already contiguous)
        a = t._data
        if a.dtype == np.bool_:
            a = a.view(np.uint8)
        return a if a.flags.c_contiguous else self.cp.ascontiguousarray(a)

    def _done(self, t, arr):
        if arr is not t._data and (t._data.dtype != np.bool_ or not _same(arr, t._data)):
            t._data[...] = unwire(arr, t._data.dtype).reshape(t._data.shape)
        t._bump("distributed")

    def _run(self, t, fn):
        with self.cp.cuda.Device(t.device.index or 0):
            fn()

    def all_reduce(self, t, op):
        a = self._arr(t)
        p = _backend.data_ptr(a)
        self._run(t, lambda: self.comm.allReduce(p, p, a.size, self._code(t), self._op(op), self._stream()))
        self._done(t, a)

    def broadcast(self, t, root):
        a = self._arr(t)
        p = _backend.data_ptr(a)
        self._run(t, lambda: self.comm.broadcast(p, p, a.size, self._code(t), root, self._stream()))
        self._done(t, a)

    def reduce(self, t, op, root):
        a = self._arr(t)
        p = _backend.data_ptr(a)
        self._run(t, lambda: self.comm.reduce(p, p, a.size, self._code(t), self._op(op), root, self._stream()))
        if self.comm.rank_id() == root:
            self._done(t, a)

    def all_gather(self, out, t):
        a, o = self._arr(t), self._arr(out)
        self._run(t, lambda: self.comm.allGather(_backend.data_ptr(a), _backend.data_ptr(o), a.size, self._code(t),
                                                 self._stream()))
        self._done(out, o)

    def all_gather_list(self, outs, t):
        a = self._arr(t)
        big = self.cp.empty((self.size,) + a.shape, a.dtype)
        self._run(t, lambda: self.comm.allGather(_backend.data_ptr(a), _backend.data_ptr(big), a.size,
                                                 self._code(t), self._stream()))
        for i, o in enumerate(outs):
            o._data[...] = unwire(big[i], o._data.dtype)
            o._bump("distributed")

    def reduce_scatter(self, out, t, op):
        a, o = self._arr(t), self._arr(out)
        self._run(t, lambda: self.comm.reduceScatter(_backend.data_ptr(a), _backend.data_ptr(o), o.size,
                                                     self._code(t), self._op(op), self._stream()))
        self._done(out, o)

    def reduce_scatter_list(self, out, ins, op):
        a = self.cp.concatenate([self._arr(t).reshape(-1) for t in ins])
        o = self._arr(out)
        self._run(out, lambda: self.comm.reduceScatter(_backend.data_ptr(a), _backend.data_ptr(o), o.size,
                                                       self._code(out), self._op(op), self._stream()))
        self._done(out, o)

    def send(self, t, peer):
        a = self._arr(t)
        self._run(t, lambda: self.comm.send(_backend.data_ptr(a), a.size, self._code(t), peer, self._stream()))

    def recv(self, t, peer):
        a = self._arr(t)
        self._run(t, lambda: self.comm.recv(_backend.data_ptr(a), a.size, self._code(t), peer, self._stream()))
        self._done(t, a)

    def _grouped(self, sends, recvs):
        # point-to-point sends and receives in one NCCL group (gather, scatter, all-to-all are built of them)
        self.mod.groupStart()
        try:
            for a, peer, t in sends:
                self.comm.send(_backend.data_ptr(a), a.size, self._code(t), peer, self._stream())
            for a, peer, t in recvs:
                self.comm.recv(_backend.data_ptr(a), a.size, self._code(t), peer, self._stream())
        finally:
            self.mod.groupEnd()

    def gather(self, t, outs, root):
        me = self.comm.rank_id()
        a = self._arr(t)
        if me != root:
            self._grouped([(a, root, t)], [])
            return
        bufs = [self._arr(o) for o in outs]
        bufs[me][...] = a
        self._grouped([], [(b, r, o) for r, (b, o) in enumerate(zip(bufs, outs)) if r != me])
        for b, o in zip(bufs, outs):
            self._done(o, b)

    def scatter(self, t, ins, root):
        me = self.comm.rank_id()
        a = self._arr(t)
        if me != root:
            self._grouped([], [(a, root, t)])
        else:
            self._grouped([(self._arr(x), r, x) for r, x in enumerate(ins) if r != me], [])
            a[...] = self._arr(ins[me])
        self._done(t, a)

    def all_to_all(self, out, t, out_counts, in_counts):
        me = self.comm.rank_id()
        a, o = self._arr(t).reshape(-1), self._arr(out).reshape(-1)
        ins = np.concatenate([[0], np.cumsum(in_counts)]).tolist()
        outs = np.concatenate([[0], np.cumsum(out_counts)]).tolist()
        o[outs[me]:outs[me + 1]] = a[ins[me]:ins[me + 1]]
        self._grouped([(a[ins[r]:ins[r + 1]], r, t) for r in range(self.size) if r != me and in_counts[r]],
                      [(o[outs[r]:outs[r + 1]], r, out) for r in range(self.size) if r != me and out_counts[r]])
        self._done(out, o.reshape(out._data.shape))

    def all_to_all_list(self, outs, ins):
        me = self.comm.rank_id()
        outs_a = [self._arr(x) for x in outs]
        outs_a[me][...] = self._arr(ins[me]).reshape(outs_a[me].shape)
        self._grouped([(self._arr(x), r, x) for r, x in enumerate(ins) if r != me],
                      [(b, r, x) for r, (b, x) in enumerate(zip(outs_a, outs)) if r != me])
        for b, x in zip(outs_a, outs):
            self._done(x, b)

    def destroy(self):
        self.comm.destroy()


def _same(a, b):
    return _backend.data_ptr(a) == _backend.data_ptr(b)
