"""The collectives and point-to-point ops on tensors, PyTorch's names and signatures, on MPI (and NCCL).

Each op checks its arguments, counts itself in the group's sequence, runs the cross-rank check when
``WORKBENCH_DISTRIBUTED_DEBUG=DETAIL``, starts a non-blocking MPI operation (or an NCCL one for CUDA
tensors of an nccl group) and returns a ``Work`` if ``async_op=True``, else waits for it.
"""
import time

from .. import _backend
from . import debug as _debug
from . import mpi as _mpi
from . import nccl
from .buffers import Buf, check_tensor, concat, empty, send_array
from .process_group import ReduceOp, _seconds, op_name, resolve
from .work import Work, _Done

np = _backend.numpy


def _describe(op, seq, tensors):
    if not tensors:
        return f"{op} (sequence number {seq})"
    t = tensors[0]
    return f"{op} (sequence number {seq}, {t.dtype.name} tensor of shape {list(t.shape)})"


def _start(op, group, tensors, fingerprint=None, collective=True):
    """The group, the op's description, and the backend for these tensors' device.

    Collectives count themselves in the group's sequence and take part in the debug check; point-to-point
    ops (``collective=False``) involve two ranks only and do neither."""
    pg = resolve(group)
    if pg.broken is not None:
        raise RuntimeError(f"workbench.distributed: {op} cannot run on group {pg.ranks}: an earlier collective "
                           f"failed ({pg.broken}) and left the group unusable")
    devs = {t.device for t in tensors}
    if len(devs) > 1:
        raise ValueError(f"{op}: all tensors must be on one device, got {sorted(map(str, devs))}")
    dev = next(iter(devs)).type if devs else None
    backend = pg.backends.get(dev) if dev else "mpi"  # no tensors (objects, barrier): the MPI communicator
    if backend is None:
        raise RuntimeError(f"{op}: no backend type associated with device type {dev}: the group's backend is "
                           f"'{pg.backend_name()}'. Use backend='gloo' (or 'cpu:gloo,cuda:nccl') for {dev} tensors.")
    if not collective:
        return pg, _describe(op, pg.seq, tensors), backend
    pg.seq += 1
    desc = _describe(op, pg.seq, tensors)
    if _debug.detail():
        _debug.check(pg, op, fingerprint if fingerprint is not None else tensors)
    return pg, desc, backend


def _run(pg, desc, reqs, finish, async_op, result=None, statuses=None):
    work = Work(pg, desc, reqs, finish, result, statuses)
    if async_op:
        return work
    work.wait()
    return None


def _group_rank(pg, rank, group_rank, what, op):
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"{op}: pass {what} or group_{what}, not both")
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"{op}: group_{what}={group_rank} is not a rank of the group (size {pg.size()})")
        return group_rank
    if rank is None:
        rank = 0
    if rank not in pg.ranks:
        raise ValueError(f"{op}: {what}={rank} is not a member of the group (global ranks {pg.ranks})")
    return pg.ranks.index(rank)


def _nccl(pg):
    return nccl.communicator(pg)


def _avg(arr, n):
    if n == 1:
        return
    if arr.dtype.kind == "f" or arr.dtype.kind == "c":
        arr /= n
    else:
        arr[...] = np.trunc(arr / n).astype(arr.dtype)  # NCCL's integer average truncates


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across the group in place; every rank gets the result.

    >>> import workbench as wb, workbench.distributed as dist  # doctest: +SKIP
    >>> t = wb.tensor([1.0, 2.0]) * (dist.get_rank() + 1); dist.all_reduce(t); t  # 2 ranks  # doctest: +SKIP
    tensor([3., 6.])
    """
    check_tensor(tensor, "all_reduce")
    name = op_name(op)
    pg, desc, backend = _start("all_reduce", group, [tensor])
    if backend == "nccl":
        _nccl(pg).all_reduce(tensor, name)
        return _Done(pg, desc, result=[tensor]) if async_op else None
    MPI = _mpi.loaded()
    b = Buf(tensor, reducing=True)
    req = pg.comm.Iallreduce(MPI.IN_PLACE, b.arr, _mpi.reduce_op(MPI, name))

    def finish():
        if name == "AVG":
            _avg(b.arr, pg.size())
        b.store()

    return _run(pg, desc, [req], finish, async_op, [tensor])


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy ``tensor`` from rank ``src`` to every rank of the group, in place.

    >>> dist.broadcast(t, src=0)  # every rank now holds rank 0's values  # doctest: +SKIP
    """
    check_tensor(tensor, "broadcast")
    pg, desc, backend = _start("broadcast", group, [tensor])
    root = _group_rank(pg, src, group_src, "src", "broadcast")
    if backend == "nccl":
        _nccl(pg).broadcast(tensor, root)
        return _Done(pg, desc) if async_op else None
    b = Buf(tensor)
    req = pg.comm.Ibcast(b.arr, root)
    return _run(pg, desc, [req], b.store, async_op, [tensor])


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` across the group into rank ``dst``'s ``tensor``.

    >>> dist.reduce(t, dst=0)  # rank 0 holds the sum  # doctest: +SKIP
    """
    check_tensor(tensor, "reduce")
    name = op_name(op)
    pg, desc, backend = _start("reduce", group, [tensor])
    root = _group_rank(pg, dst, group_dst, "dst", "reduce")
    if backend == "nccl":
        _nccl(pg).reduce(tensor, name, root)
        return _Done(pg, desc) if async_op else None
    MPI = _mpi.loaded()
    mop = _mpi.reduce_op(MPI, name)
    if pg.rank() == root:
        b = Buf(tensor, reducing=True)
        req = pg.comm.Ireduce(MPI.IN_PLACE, b.arr, mop, root)

        def finish():
            if name == "AVG":
                _avg(b.arr, pg.size())
            b.store()
    else:
        req = pg.comm.Ireduce(send_array(tensor, reducing=True), None, mop, root)
        finish = None
    return _run(pg, desc, [req], finish, async_op, [tensor])


def _check_list(op, name, tensors, like, n):
    if not isinstance(tensors, (list, tuple)) or len(tensors) != n:
        got = len(tensors) if isinstance(tensors, (list, tuple)) else type(tensors).__name__
        raise ValueError(f"{op}: {name} must be a list of {n} tensors (one per rank of the group), got {got}")
    for i, t in enumerate(tensors):
        check_tensor(t, op, f"{name}[{i}]")
        if t.shape != like.shape or t.dtype != like.dtype:
            raise ValueError(f"{op}: {name}[{i}] is {t.dtype.name} {list(t.shape)}, but every entry must match the "
                             f"tensor's {like.dtype.name} {list(like.shape)}")


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Gather ``tensor`` from every rank into ``tensor_list`` (one tensor per rank) on every rank.

    >>> out = [wb.empty(2) for _ in range(2)]; dist.all_gather(out, t)  # doctest: +SKIP
    """
    check_tensor(tensor, "all_gather")
    pg, desc, backend = _start("all_gather", group, [tensor])
    _check_list("all_gather", "tensor_list", tensor_list, tensor, pg.size())
    if backend == "nccl":
        _nccl(pg).all_gather_list(tensor_list, tensor)
        return _Done(pg, desc, result=tensor_list) if async_op else None
    send = send_array(tensor)
    recv = empty((pg.size(),) + send.shape, send)
    req = pg.comm.Iallgather(send, recv)

    def finish():
        for i, t in enumerate(tensor_list):
            Buf(t).store(recv[i])

    return _run(pg, desc, [req], finish, async_op, tensor_list)


def _check_sizes(op, big, small, n, what):
    if big.numel() != small.numel() * n:
        raise ValueError(f"{op}: the {what} tensor has {big.numel()} elements; it must have world size ({n}) times "
                         f"the {small.numel()} of the other ({list(big.shape)} vs {list(small.shape)})")
    if big.dtype != small.dtype:
        raise ValueError(f"{op}: the tensors' dtypes differ ({big.dtype.name} vs {small.dtype.name})")


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Gather every rank's ``input_tensor`` into ``output_tensor`` (rank order along the first dim).

    >>> out = wb.empty(4); dist.all_gather_into_tensor(out, wb.ones(2))  # 2 ranks  # doctest: +SKIP
    """
    check_tensor(output_tensor, "all_gather_into_tensor", "output_tensor")
    check_tensor(input_tensor, "all_gather_into_tensor", "input_tensor")
    pg, desc, backend = _start("all_gather_into_tensor", group, [input_tensor, output_tensor], [input_tensor])
    _check_sizes("all_gather_into_tensor", output_tensor, input_tensor, pg.size(), "output")
    if backend == "nccl":
        _nccl(pg).all_gather(output_tensor, input_tensor)
        return _Done(pg, desc) if async_op else None
    b = Buf(output_tensor)
    req = pg.comm.Iallgather(send_array(input_tensor), b.arr)
    return _run(pg, desc, [req], b.store, async_op, [output_tensor])


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input_list[i]`` across ranks into rank i's ``output``.

    >>> dist.reduce_scatter(out, [wb.ones(2), wb.ones(2)])  # doctest: +SKIP
    """
    check_tensor(output, "reduce_scatter", "output")
    name = op_name(op)
    pg, desc, backend = _start("reduce_scatter", group, [output], [output])
    _check_list("reduce_scatter", "input_list", input_list, output, pg.size())
    if backend == "nccl":
        _nccl(pg).reduce_scatter_list(output, input_list, name)
        return _Done(pg, desc) if async_op else None
    send = concat([send_array(t, reducing=True) for t in input_list], send_array(output, reducing=True))
    return _reduce_scatter(pg, desc, output, send, name, async_op)


def _reduce_scatter(pg, desc, output, send, name, async_op):
    MPI = _mpi.loaded()
    b = Buf(output, reducing=True)
    req = pg.comm.Ireduce_scatter_block(send, b.arr, _mpi.reduce_op(MPI, name))

    def finish():
        if name == "AVG":
            _avg(b.arr, pg.size())
        b.store()

    return _run(pg, desc, [req], finish, async_op, [output])


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input`` (world size times ``output``'s size) across ranks; rank i gets the i-th chunk.

    >>> out = wb.empty(2); dist.reduce_scatter_tensor(out, wb.ones(4))  # 2 ranks  # doctest: +SKIP
    """
    check_tensor(output, "reduce_scatter_tensor", "output")
    check_tensor(input, "reduce_scatter_tensor", "input")
    name = op_name(op)
    pg, desc, backend = _start("reduce_scatter_tensor", group, [input, output], [input])
    _check_sizes("reduce_scatter_tensor", input, output, pg.size(), "input")
    if backend == "nccl":
        _nccl(pg).reduce_scatter(output, input, name)
        return _Done(pg, desc) if async_op else None
    return _reduce_scatter(pg, desc, output, send_array(input, reducing=True), name, async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Gather ``tensor`` from every rank into ``gather_list`` on rank ``dst`` (None elsewhere).

    >>> dist.gather(t, [wb.empty(2) for _ in range(2)] if dist.get_rank() == 0 else None)  # doctest: +SKIP
    """
    check_tensor(tensor, "gather")
    pg, desc, backend = _start("gather", group, [tensor])
    root = _group_rank(pg, dst, group_dst, "dst", "gather")
    me = pg.rank()
    if me == root:
        _check_list("gather", "gather_list", gather_list, tensor, pg.size())
    elif gather_list:
        raise ValueError("gather: argument gather_list must NOT be specified on non-destination ranks")
    if backend == "nccl":
        _nccl(pg).gather(tensor, gather_list, root)
        return _Done(pg, desc) if async_op else None
    send = send_array(tensor)
    recv = empty((pg.size(),) + send.shape, send) if me == root else None
    req = pg.comm.Igather(send, recv, root)

    def finish():
        if me == root:
            for i, t in enumerate(gather_list):
                Buf(t).store(recv[i])

    return _run(pg, desc, [req], finish, async_op, gather_list or [])


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Send ``scatter_list[i]`` from rank ``src`` to rank i's ``tensor``.

    >>> dist.scatter(t, [wb.zeros(2), wb.ones(2)] if dist.get_rank() == 0 else None)  # doctest: +SKIP
    """
    check_tensor(tensor, "scatter")
    pg, desc, backend = _start("scatter", group, [tensor])
    root = _group_rank(pg, src, group_src, "src", "scatter")
    me = pg.rank()
    if me == root:
        _check_list("scatter", "scatter_list", scatter_list, tensor, pg.size())
    elif scatter_list:
        raise ValueError("scatter: argument scatter_list must NOT be specified on non-source ranks")
    if backend == "nccl":
        _nccl(pg).scatter(tensor, scatter_list, root)
        return _Done(pg, desc) if async_op else None
    b = Buf(tensor)
    send = concat([send_array(t) for t in scatter_list], b.arr) if me == root else None
    req = pg.comm.Iscatter(send, b.arr, root)
    return _run(pg, desc, [req], b.store, async_op, [tensor])


def _splits(op, name, sizes, t, n):
    rows = t.shape[0] if t.dim() else 1
    if sizes is None or len(sizes) == 0:
        if rows % n:
            raise ValueError(f"{op}: {name} tensor's first dimension ({rows}) must divide evenly by the world size "
                             f"({n}) when no split sizes are given")
        return [rows // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or sum(sizes) != rows or min(sizes) < 0:
        raise ValueError(f"{op}: {name}_split_sizes {sizes} must hold {n} non-negative sizes summing to the first "
                         f"dimension {rows}")
    return sizes


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False):
    """Split ``input`` along dim 0, send chunk i to rank i, and concatenate what arrives into ``output``.

    >>> dist.all_to_all_single(out, wb.arange(4.0))  # 2 ranks: rank r gets both ranks' r-th halves  # doctest: +SKIP
    """
    check_tensor(output, "all_to_all_single", "output")
    check_tensor(input, "all_to_all_single", "input")
    pg, desc, backend = _start("all_to_all_single", group, [input, output], [])
    n = pg.size()
    if input.dtype != output.dtype:
        raise ValueError(f"all_to_all_single: input is {input.dtype.name} but output is {output.dtype.name}")
    ins = _splits("all_to_all_single", "input", input_split_sizes, input, n)
    outs = _splits("all_to_all_single", "output", output_split_sizes, output, n)
    row_in = input.numel() // max(input.shape[0], 1) if input.dim() else 1
    row_out = output.numel() // max(output.shape[0], 1) if output.dim() else 1
    if backend == "nccl":
        _nccl(pg).all_to_all(output, input, [s * row_out for s in outs], [s * row_in for s in ins])
        return _Done(pg, desc) if async_op else None
    b = Buf(output)
    req = pg.comm.Ialltoallv(_counted(send_array(input), [s * row_in for s in ins]),
                             _counted(b.arr, [s * row_out for s in outs]))
    return _run(pg, desc, [req], b.store, async_op, [output])


def _counted(arr, counts):
    displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64).tolist()
    return [arr.reshape(-1), (counts, displs)]


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Send ``input_tensor_list[i]`` to rank i; receive rank i's into ``output_tensor_list[i]``.

    >>> dist.all_to_all([wb.empty(1) for _ in range(2)], [wb.ones(1), wb.ones(1)])  # doctest: +SKIP
    """
    pg, desc, backend = _start("all_to_all", group, list(input_tensor_list) + list(output_tensor_list), [])
    n = pg.size()
    for name, lst in (("output_tensor_list", output_tensor_list), ("input_tensor_list", input_tensor_list)):
        if len(lst) != n:
            raise ValueError(f"all_to_all: {name} must hold {n} tensors (one per rank), got {len(lst)}")
        for i, t in enumerate(lst):
            check_tensor(t, "all_to_all", f"{name}[{i}]")
    if len({t.dtype for t in list(input_tensor_list) + list(output_tensor_list)}) > 1:
        raise ValueError("all_to_all: every input and output tensor must have one dtype")
    if backend == "nccl":
        _nccl(pg).all_to_all_list(output_tensor_list, input_tensor_list)
        return _Done(pg, desc) if async_op else None
    ins = [send_array(t).reshape(-1) for t in input_tensor_list]
    send = np.concatenate(ins)
    out_counts = [t.numel() for t in output_tensor_list]
    recv = np.empty(sum(out_counts), send.dtype)
    req = pg.comm.Ialltoallv(_counted(send, [a.size for a in ins]), _counted(recv, out_counts))

    def finish():
        at = 0
        for t, c in zip(output_tensor_list, out_counts):
            Buf(t).store(recv[at:at + c])
            at += c

    return _run(pg, desc, [req], finish, async_op, output_tensor_list)


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Wait until every rank of the group reaches this call.

    >>> dist.barrier()  # doctest: +SKIP
    """
    pg, desc, _ = _start("barrier", group, [])
    work = Work(pg, desc, [pg.comm.Ibarrier()])
    if async_op:
        return work
    work.wait(timeout)
    return None


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier whose timeout error names the ranks that did not arrive (rank 0 checks each one).

    >>> dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))  # doctest: +SKIP
    """
    pg, desc, _ = _start("monitored_barrier", group, [])
    seconds = pg.timeout if timeout is None else _seconds(timeout)
    tag, me, n = 0x4D42, pg.rank(), pg.size()
    token = np.zeros(1, np.uint8)
    if me != 0:
        Work(pg, desc, [pg.comm.Isend(token, 0, tag), pg.comm.Irecv(np.zeros(1, np.uint8), 0, tag)]).wait(seconds)
        return None
    MPI = _mpi.loaded()
    reqs = {r: pg.comm.Irecv(np.zeros(1, np.uint8), r, tag) for r in range(1, n)}
    deadline = time.monotonic() + seconds
    while reqs and time.monotonic() < deadline:
        for r in [r for r, q in reqs.items() if q.Test()]:
            del reqs[r]
        if reqs:
            time.sleep(0.001)
    if reqs:
        pg.broken = "monitored_barrier timed out"
        missing = [pg.ranks[r] for r in sorted(reqs)]
        which = missing if wait_all_ranks else missing[:1]
        raise RuntimeError(f"Rank{'s' if len(which) > 1 else ''} {', '.join(map(str, which))} failed to pass "
                           f"monitoredBarrier in {seconds * 1000:.0f} ms")
    MPI.Request.Waitall([pg.comm.Isend(token, r, tag) for r in range(1, n)])
    return None


# --- point to point -------------------------------------------------------------------------------
def _p2p_group(op, group, peer, group_peer, what):
    pg = resolve(group)
    if peer is None and group_peer is None and what == "dst":
        raise ValueError(f"{op}: dst must be given")
    return pg, (None if peer is None and group_peer is None else _group_rank(pg, peer, group_peer, what, op))


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Start sending ``tensor`` to rank ``dst``; returns a Work.

    >>> work = dist.isend(wb.ones(2), dst=1); work.wait()  # doctest: +SKIP
    """
    check_tensor(tensor, "isend")
    pg, peer = _p2p_group("isend", group, dst, group_dst, "dst")
    if peer == pg.rank():
        raise ValueError(f"isend: invalid destination rank {dst}: it is this rank")
    desc = _describe(f"isend to rank {pg.ranks[peer]}", pg.seq, [tensor])
    if pg.backends.get(tensor.device.type) == "nccl":
        _nccl(pg).send(tensor, peer)
        return _Done(pg, desc)
    arr = send_array(tensor)
    return Work(pg, desc, [pg.comm.Isend(arr, peer, tag)], result=[tensor])


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Start receiving into ``tensor`` from rank ``src`` (any rank if None); returns a Work.

    >>> work = dist.irecv(t, src=0); work.wait()  # doctest: +SKIP
    """
    check_tensor(tensor, "irecv")
    pg, peer = _p2p_group("irecv", group, src, group_src, "src")
    desc = _describe(f"irecv from rank {'any' if peer is None else pg.ranks[peer]}", pg.seq, [tensor])
    if pg.backends.get(tensor.device.type) == "nccl":
        if peer is None:
            raise ValueError("irecv: NCCL needs the source rank (src=None, receive from any rank, is MPI-only)")
        _nccl(pg).recv(tensor, peer)
        done = _Done(pg, desc, result=[tensor])
        done._value = pg.ranks[peer]
        return done
    MPI = _mpi.loaded()
    b = Buf(tensor)
    status = MPI.Status()

    def finish():
        b.store()
        return pg.ranks[status.Get_source()]

    req = pg.comm.Irecv(b.arr, MPI.ANY_SOURCE if peer is None else peer, tag)
    return Work(pg, desc, [req], finish, [tensor], statuses=[status])


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to rank ``dst`` and wait until it is out.  >>> dist.send(wb.ones(2), dst=1)  # doctest: +SKIP"""
    isend(tensor, dst, group, tag, group_dst).wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from rank ``src`` (any if None); returns the sender's rank.

    >>> dist.recv(t, src=0)  # doctest: +SKIP
    0
    """
    work = irecv(tensor, src, group, tag, group_src)
    work.wait()
    return work.source_rank()


class P2POp:
    """One send or receive for ``batch_isend_irecv``: ``P2POp(dist.isend, tensor, peer)``."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``workbench.distributed.isend`` or "
                             "``workbench.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group, self.tag, self.group_peer = op, tensor, peer, group, tag, group_peer


def batch_isend_irecv(p2p_op_list):
    """Start every send/receive of ``p2p_op_list``; returns their Works.

    >>> works = dist.batch_isend_irecv([dist.P2POp(dist.isend, t, 1 - dist.get_rank())])  # doctest: +SKIP
    """
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("batch_isend_irecv: expected a non-empty list of P2POp")
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]


__all__ = ["all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
           "reduce_scatter_tensor", "gather", "scatter", "all_to_all_single", "all_to_all", "barrier",
           "monitored_barrier", "isend", "irecv", "send", "recv", "P2POp", "batch_isend_irecv"]
