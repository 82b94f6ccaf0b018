"""The ``*_object`` collectives: any picklable Python object, sent as pickled bytes over MPI.

As in PyTorch these unpickle what other ranks send, so use them only among ranks you trust.
"""
import pickle

from .. import _backend
from . import mpi as _mpi
from .collectives import _group_rank, _start
from .work import Work

np = _backend.numpy


def _dumps(obj):
    return np.frombuffer(pickle.dumps(obj), np.uint8)


def _loads(buf):
    return pickle.loads(buf.tobytes())


def _wait(pg, desc, *reqs):
    Work(pg, desc, reqs).wait()


def allgather_bytes(pg, desc, data):
    """Every rank's uint8 array ``data``, as a list in rank order (sizes first, then one Allgatherv)."""
    n = pg.size()
    sizes = np.zeros(n, np.int64)
    _wait(pg, desc, pg.comm.Iallgather(np.array([data.size], np.int64), sizes))
    recv = np.empty(int(sizes.sum()), np.uint8)
    displs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    _wait(pg, desc, pg.comm.Iallgatherv(data, [recv, (sizes.tolist(), displs.tolist())]))
    return [recv[d:d + s] for d, s in zip(displs.tolist(), sizes.tolist())]


def all_gather_object(object_list, obj, group=None):
    """Gather a picklable ``obj`` from every rank into ``object_list`` (len = world size) on every rank.

    >>> out = [None] * dist.get_world_size(); dist.all_gather_object(out, {"rank": dist.get_rank()})  # doctest: +SKIP
    """
    pg, desc, _ = _start("all_gather_object", group, [], [])
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must have one slot per rank ({pg.size()}), "
                         f"got {len(object_list)}")
    for i, b in enumerate(allgather_bytes(pg, desc, _dumps(obj))):
        object_list[i] = _loads(b)


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replace ``object_list``'s entries on every rank with rank ``src``'s (the lists have one length).

    >>> objs = [1, "two"] if dist.get_rank() == 0 else [None, None]; dist.broadcast_object_list(objs)  # doctest: +SKIP
    """
    pg, desc, _ = _start("broadcast_object_list", group, [], [])
    root = _group_rank(pg, src, group_src, "src", "broadcast_object_list")
    me = pg.rank()
    blobs = [_dumps(o) for o in object_list] if me == root else []
    sizes = np.array([b.size for b in blobs] if me == root else [0] * len(object_list), np.int64)
    _wait(pg, desc, pg.comm.Ibcast(sizes, root))
    data = np.concatenate(blobs) if me == root and blobs else np.empty(int(sizes.sum()), np.uint8)
    _wait(pg, desc, pg.comm.Ibcast(data, root))
    if me != root:
        at = 0
        for i, s in enumerate(sizes.tolist()):
            object_list[i] = _loads(data[at:at + s])
            at += s


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """Gather ``obj`` from every rank into ``object_gather_list`` on rank ``dst`` (None elsewhere).

    >>> out = [None] * 2 if dist.get_rank() == 0 else None; dist.gather_object(dist.get_rank(), out)  # doctest: +SKIP
    """
    pg, desc, _ = _start("gather_object", group, [], [])
    root = _group_rank(pg, dst, group_dst, "dst", "gather_object")
    me, n = pg.rank(), pg.size()
    if me == root and (object_gather_list is None or len(object_gather_list) != n):
        raise ValueError(f"gather_object: object_gather_list must have one slot per rank ({n}) on the destination")
    data = _dumps(obj)
    sizes = np.zeros(n, np.int64) if me == root else None
    _wait(pg, desc, pg.comm.Igather(np.array([data.size], np.int64), sizes, root))
    if me == root:
        recv = np.empty(int(sizes.sum()), np.uint8)
        displs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64).tolist()
        _wait(pg, desc, pg.comm.Igatherv(data, [recv, (sizes.tolist(), displs)], root))
        for i, (d, s) in enumerate(zip(displs, sizes.tolist())):
            object_gather_list[i] = _loads(recv[d:d + s])
    else:
        _wait(pg, desc, pg.comm.Igatherv(data, None, root))


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,
                        group_src=None):
    """Rank i receives ``scatter_object_input_list[i]`` from rank ``src`` into ``scatter_object_output_list[0]``.

    >>> out = [None]; dist.scatter_object_list(out, ["a", "b"] if dist.get_rank() == 0 else None)  # doctest: +SKIP
    """
    pg, desc, _ = _start("scatter_object_list", group, [], [])
    root = _group_rank(pg, src, group_src, "src", "scatter_object_list")
    me, n = pg.rank(), pg.size()
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("scatter_object_list: expected argument scatter_object_output_list to be a list of size "
                         "at least 1.")
    if me == root:
        if scatter_object_input_list is None or len(scatter_object_input_list) != n:
            raise ValueError(f"scatter_object_list: scatter_object_input_list must hold {n} objects on the source")
        blobs = [_dumps(o) for o in scatter_object_input_list]
        sizes = np.array([b.size for b in blobs], np.int64)
    size = np.zeros(1, np.int64)
    _wait(pg, desc, pg.comm.Iscatter(sizes if me == root else None, size, root))
    recv = np.empty(int(size[0]), np.uint8)
    if me == root:
        displs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64).tolist()
        send = [np.concatenate(blobs), (sizes.tolist(), displs)]
    else:
        send = None
    _wait(pg, desc, pg.comm.Iscatterv(send, recv, root))
    scatter_object_output_list[0] = _loads(recv)


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None, use_batch=False):
    """Send a list of picklable objects to rank ``dst`` (which calls ``recv_object_list``).

    >>> dist.send_object_list([1, {"a": 2}], dst=1)  # doctest: +SKIP
    """
    pg, desc, _ = _start("send_object_list", group, [], [], collective=False)
    peer = _group_rank(pg, dst, group_dst, "dst", "send_object_list")
    blobs = [_dumps(o) for o in object_list]
    sizes = np.array([b.size for b in blobs], np.int64)
    data = np.concatenate(blobs) if blobs else np.empty(0, np.uint8)
    _wait(pg, desc, pg.comm.Isend(sizes, peer, 0x4F42), pg.comm.Isend(data, peer, 0x4F43))


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None, use_batch=False):
    """Receive ``len(object_list)`` objects from rank ``src`` into ``object_list``; returns the sender.

    >>> objs = [None, None]; dist.recv_object_list(objs, src=0)  # doctest: +SKIP
    0
    """
    pg, desc, _ = _start("recv_object_list", group, [], [], collective=False)
    MPI = _mpi.loaded()
    peer = MPI.ANY_SOURCE if src is None and group_src is None else _group_rank(pg, src, group_src, "src",
                                                                                 "recv_object_list")
    sizes = np.zeros(len(object_list), np.int64)
    status = MPI.Status()
    Work(pg, desc, [pg.comm.Irecv(sizes, peer, 0x4F42)], statuses=[status]).wait()
    sender = status.Get_source()
    data = np.empty(int(sizes.sum()), np.uint8)
    _wait(pg, desc, pg.comm.Irecv(data, sender, 0x4F43))
    at = 0
    for i, s in enumerate(sizes.tolist()):
        object_list[i] = _loads(data[at:at + s])
        at += s
    return pg.ranks[sender]
