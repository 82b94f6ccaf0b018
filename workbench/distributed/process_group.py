"""Process groups: how ranks meet (``init_process_group``), the groups they form, and what they are.

Every group is an MPI communicator. Ranks started by an MPI launcher (``mpiexec``, ``srun``) use its
``COMM_WORLD``. Ranks started any other way (workbench's launcher, ``multiprocessing.spawn``, by hand with
``env://``, ``tcp://`` or ``file://``) meet at a rendezvous server that rank 0 starts at MASTER_ADDR:MASTER_PORT
(for ``file://``: on a free port, whose address rank 0 writes into the file) and that acts as their MPI
process manager (see ``rendezvous``), so they too get one real ``COMM_WORLD``.
CUDA tensors on an ``nccl`` group go through NCCL (CuPy's ``cupy.cuda.nccl``), its communicator created on
first use from a unique id broadcast over the group's MPI communicator, as ChainerMN does.
"""
import datetime
import enum
import os
import socket
import subprocess
import sys
import time

from . import mpi as _mpi
from . import rendezvous as _rendezvous
from . import watch as _watch

DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)


class Backend(str):
    """A backend name: 'mpi', 'gloo' (an alias of mpi, so CPU PyTorch scripts run unchanged) or 'nccl'.

    >>> import workbench.distributed as dist
    >>> dist.Backend("GLOO"), dist.Backend.NCCL
    ('gloo', 'nccl')
    """

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    backend_list = ["gloo", "nccl", "mpi"]

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got {type(name).__name__}")
        value = name.lower()
        if value not in cls.backend_list and ":" not in value:
            raise ValueError(f"Invalid backend: '{name}'. workbench.distributed offers 'mpi', 'gloo' (runs on MPI) "
                             "and 'nccl' (CUDA tensors, through CuPy)")
        return str.__new__(cls, value)


class ReduceOp:
    """The reductions of ``all_reduce``, ``reduce`` and ``reduce_scatter``.

    >>> import workbench.distributed as dist
    >>> dist.ReduceOp.SUM, dist.ReduceOp.MAX.name
    (<RedOpType.SUM: 0>, 'MAX')
    """

    class RedOpType(enum.IntEnum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7

    SUM, AVG, PRODUCT, MIN, MAX = RedOpType.SUM, RedOpType.AVG, RedOpType.PRODUCT, RedOpType.MIN, RedOpType.MAX
    BAND, BOR, BXOR = RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR


def op_name(op):
    """'SUM', 'AVG', ... for a ReduceOp (or its name); TypeError naming the accepted ones otherwise."""
    if isinstance(op, ReduceOp.RedOpType):
        return op.name
    if isinstance(op, str) and op.upper() in ReduceOp.RedOpType.__members__:
        return op.upper()
    raise TypeError(f"op must be a workbench.distributed.ReduceOp (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR), "
                    f"got {op!r}")


class ProcessGroup:
    """A set of ranks that run collectives together: an MPI communicator plus workbench's bookkeeping.

    ``rank()`` and ``size()`` are this process's rank within the group and the group's size.

    >>> import workbench.distributed as dist  # doctest: +SKIP
    >>> dist.init_process_group("gloo"); g = dist.new_group([0, 1]); g.size()  # doctest: +SKIP
    2
    """

    def __init__(self, comm, ranks, backends, timeout, name):
        self.comm = comm
        self.ranks = ranks  # the global rank of each group rank
        self.backends = backends  # device type -> "mpi" | "nccl"
        self.timeout = timeout
        self.group_name = name
        self.seq = 0
        self.broken = None  # why this group can no longer run collectives (a timeout left one pending)
        self.nccl = None

    def rank(self):
        return self.comm.Get_rank()

    def size(self):
        return self.comm.Get_size()

    def name(self):
        return self.backend_name()

    def backend_name(self):
        if "given" in self.backends:  # the name the user asked for ('gloo' runs on MPI but reads 'gloo')
            return Backend(self.backends["given"])
        names = set(self.backends.values())
        if len(names) == 1:
            return Backend(next(iter(names)))
        return ",".join(f"{k}:{v}" for k, v in self.backends.items())

    def __repr__(self):
        return f"<ProcessGroup {self.group_name}: ranks {self.ranks}, backend {self.backend_name()}>"


class GroupMember:
    """``GroupMember.WORLD`` is the default group once initialized; ``NON_GROUP_MEMBER`` is what
    ``new_group`` returns on ranks outside the new group."""

    WORLD = None
    NON_GROUP_MEMBER = -100


group = GroupMember  # PyTorch's dist.group.WORLD
_WORLD = {"pg": None, "mpi_world": None, "groups": 0}


def _seconds(timeout):
    if timeout is None:
        return DEFAULT_TIMEOUT.total_seconds()
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    if isinstance(timeout, (int, float)):
        return float(timeout)
    raise TypeError(f"timeout must be a datetime.timedelta, got {type(timeout).__name__}")


def _backends(backend):
    if backend is None:
        return {"cpu": "mpi", "cuda": "nccl", "given": "cpu:gloo,cuda:nccl"}
    name = Backend(backend)
    if ":" in name:  # "cpu:gloo,cuda:nccl"
        out = {}
        for part in name.split(","):
            dev, _, b = part.partition(":")
            b = Backend(b)
            out[dev.strip()] = "nccl" if b == "nccl" else "mpi"
        out["given"] = str(name)
        return out
    if name == "nccl":
        return {"cuda": "nccl", "given": "nccl"}
    return {"cpu": "mpi", "cuda": "mpi", "given": str(name)}


def _env_int(name, given, what):
    if given is not None and given >= 0:
        return int(given)
    v = os.environ.get(name)
    if v is None:
        raise ValueError(f"Error initializing workbench.distributed using env:// rendezvous: environment variable "
                         f"{name} expected, but not set ({what}; the launcher `python -m workbench.distributed.run` "
                         "sets it, or pass it to init_process_group)")
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"environment variable {name} must be an integer, got {v!r}") from None


def _rendezvous_address(init_method, rank, world_size):
    """(addr, port, rank, world_size) from an env://, tcp:// or file:// init_method (file://: addr is the file's
    path and port None: rank 0 picks the port)."""
    if init_method.startswith("env://"):
        addr = os.environ.get("MASTER_ADDR")
        if addr is None:
            raise ValueError("Error initializing workbench.distributed using env:// rendezvous: environment variable "
                             "MASTER_ADDR expected, but not set (the host of rank 0)")
        port = _env_int("MASTER_PORT", None, "a free TCP port on rank 0's host")
        return addr, port, _env_int("RANK", rank, "this process's rank"), \
            _env_int("WORLD_SIZE", world_size, "the number of ranks")
    if init_method.startswith("tcp://"):
        hostport = init_method[len("tcp://"):].split("?")[0].rstrip("/")
        addr, sep, port = hostport.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"init_method {init_method!r}: expected tcp://HOST:PORT")
        if rank is None or rank < 0 or world_size is None or world_size < 0:
            raise ValueError(f"init_method {init_method!r} needs rank and world_size: "
                             "init_process_group(backend, init_method, rank=r, world_size=n)")
        return addr.strip("[]"), int(port), rank, world_size
    if init_method.startswith("file://"):
        path = init_method[len("file://"):].split("?")[0]
        if not path.startswith("/"):
            raise ValueError(f"init_method {init_method!r}: expected file:///ABSOLUTE/PATH (three slashes)")
        if rank is None or rank < 0 or world_size is None or world_size < 0:
            raise ValueError(f"init_method {init_method!r} needs rank and world_size: "
                             "init_process_group(backend, init_method, rank=r, world_size=n)")
        if not os.path.isdir(os.path.dirname(path)):
            raise ValueError(f"init_method {init_method!r}: the folder {os.path.dirname(path)!r} does not exist; "
                             "the file must be on a file system every rank sees")
        return path, None, rank, world_size
    raise ValueError(f"init_method {init_method!r} is not supported: use 'env://' (MASTER_ADDR, MASTER_PORT, RANK, "
                     "WORLD_SIZE), 'tcp://HOST:PORT' or 'file:///PATH' with rank and world_size, or start the ranks "
                     "with an MPI launcher (mpiexec -n N python script.py)")


def _publish(path, port):
    """Rank 0 of a file:// job: write where its rendezvous server listens (atomically: readers see all or nothing).

    The host is MASTER_ADDR if set, else this machine's name: what the other ranks connect to."""
    host = os.environ.get("MASTER_ADDR") or socket.gethostname()
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(f"{host} {port}\n")
    os.replace(tmp, path)
    return host


def _await_published(path, rank, seconds):
    """Ranks > 0 of a file:// job: (host, port) of a live rendezvous server read from the file.

    A file left by an earlier job names a server that is gone: its address refuses connections, so keep
    reading until rank 0 has replaced it."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with open(path) as f:
                host, port = f.read().split()
            with socket.create_connection((host, int(port)), timeout=2.0):
                return host, int(port)
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"init_process_group: rank {rank} found no rendezvous address from rank 0 in "
                               f"{path!r} within {seconds:.0f} s; is rank 0 running with the same init_method, and "
                               "is the file on a file system both ranks see?")
        time.sleep(0.05)


def _start_server(port, world_size, timeout):
    """Rank 0: start the rendezvous server process on ``port`` (0: any free one) and wait until it listens;
    returns the port."""
    # run as a file, not `-m workbench...`: it needs only the standard library, so it starts in milliseconds
    proc = subprocess.Popen(
        [sys.executable, _rendezvous.__file__, "--port", str(port), "--world-size", str(world_size),
         "--join-timeout", str(timeout)], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True)
    line = proc.stdout.readline().decode().strip()
    proc.stdout.close()
    if not line.startswith("ready "):
        proc.wait()
        raise RuntimeError(f"init_process_group: rank 0 could not start the rendezvous server on port {port}: "
                           f"{line or 'it exited'}. The port may be in use: choose another MASTER_PORT.")
    return int(line.split()[1])


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Join this process to the job's default process group (PyTorch's signature and env:// defaults).

    Ranks started by ``python -m workbench.distributed.run``, ``multiprocessing.spawn`` or by hand meet
    through MASTER_ADDR/MASTER_PORT (``env://``) or ``tcp://HOST:PORT``; ranks started by ``mpiexec`` use its
    MPI world. ``backend``: "gloo" or "mpi" (CPU, and CUDA tensors through host memory), "nccl" (CUDA), or
    None for "cpu:gloo,cuda:nccl".

    >>> import workbench.distributed as dist
    >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29533", rank=0, world_size=1)
    >>> dist.get_rank(), dist.get_world_size(), dist.get_backend()
    (0, 1, 'gloo')
    >>> dist.destroy_process_group()
    """
    if _WORLD["pg"] is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None:
        raise ValueError("init_process_group: workbench.distributed meets ranks through MPI and its own rendezvous, "
                         "not a c10d Store; pass init_method='env://' or 'tcp://HOST:PORT' instead of store=")
    backends = _backends(backend)
    seconds = _seconds(timeout)
    world = _WORLD["mpi_world"]
    if world is None:
        world = _join_world(init_method, rank, world_size, seconds)
    n, r = world.Get_size(), world.Get_rank()
    if (world_size not in (None, -1) and world_size != n) or (rank not in (None, -1) and rank != r):
        raise ValueError(f"init_process_group: this process is rank {r} of {n} in its MPI world, but rank={rank}, "
                         f"world_size={world_size} were asked for")
    pg = ProcessGroup(world.Dup(), list(range(n)), backends, seconds, group_name or "default_pg")
    _WORLD["pg"] = pg
    GroupMember.WORLD = pg


def _join_world(init_method, rank, world_size, seconds):
    if _mpi.launched_by_mpi():
        MPI = _mpi.load()
        _watch.install(MPI.COMM_WORLD.Get_rank(), None)
    else:
        if _mpi.loaded() is not None or _mpi.initialized_elsewhere():
            raise RuntimeError(
                "init_process_group: MPI was already initialised in this process (mpi4py.MPI was imported) before "
                "the process group was set up, so it cannot join other ranks; import mpi4py.MPI only after "
                "init_process_group, or start the ranks with mpiexec")
        addr, port, rank, world_size = _rendezvous_address(init_method or "env://", rank, world_size)
        if not 0 <= rank < world_size:
            raise ValueError(f"init_process_group: rank {rank} is not in [0, world_size={world_size})")
        if world_size == 1:
            MPI = _mpi.load()
            _watch.install(0, None)
        else:
            path = addr if port is None else None  # file://
            if rank == 0:
                port = _start_server(port or 0, world_size, seconds)
                if path is not None:
                    addr = _publish(path, port)
            elif path is not None:
                addr, port = _await_published(path, rank, seconds)
            watcher = _watch.connect(addr, port, rank, seconds)
            _watch.install(rank, watcher)
            MPI = _mpi.load(pmi=(addr, port, rank))
            if MPI.COMM_WORLD.Get_size() != world_size:
                raise RuntimeError(f"init_process_group: MPI formed a world of {MPI.COMM_WORLD.Get_size()} ranks, "
                                   f"not the {world_size} asked for (was MPI initialised before?)")
            MPI.COMM_WORLD.Barrier()  # every rank has mapped the node's shared memory: its names can go
            _watch.unlink_mpi_shm()
            if path is not None and rank == 0:  # every rank has read it: a later job must not find this address
                os.unlink(path)
    world = MPI.COMM_WORLD
    _WORLD["mpi_world"] = world
    return world


def destroy_process_group(group=None):
    """Free ``group`` (default: all groups and the default one). The MPI world stays up until exit, so a
    later ``init_process_group`` in this process joins the same ranks again.

    >>> import workbench.distributed as dist  # doctest: +SKIP
    >>> dist.destroy_process_group()  # doctest: +SKIP
    """
    pg = _default() if group is None or group is GroupMember.WORLD else group
    if pg.nccl is not None:
        pg.nccl.destroy()
        pg.nccl = None
    if pg.broken is None:
        pg.comm.Free()
    if group is None or group is GroupMember.WORLD:
        _WORLD["pg"] = None
        GroupMember.WORLD = None


def is_available():
    """True when MPI (mpi4py) can be loaded.  >>> import workbench.distributed as dist; dist.is_available()"""
    return _mpi.is_available()


def is_initialized():
    """Whether the default process group exists.

    >>> import workbench.distributed as dist
    >>> dist.is_initialized()
    False
    """
    return _WORLD["pg"] is not None


def is_mpi_available():
    return _mpi.is_available()


def is_gloo_available():
    return _mpi.is_available()


def is_nccl_available():
    """Whether CuPy's NCCL bindings import (a GPU build of CuPy with NCCL)."""
    try:
        from cupy.cuda import nccl  # noqa: F401
    except Exception:
        return False
    return True


def is_torchelastic_launched():
    return "TORCHELASTIC_RUN_ID" in os.environ or "WORKBENCH_RUN_ID" in os.environ


def _default():
    pg = _WORLD["pg"]
    if pg is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return pg


def resolve(group):
    """The ProcessGroup a collective runs on (None -> the default group)."""
    if group is None or group is GroupMember.WORLD:
        return _default()
    _default()
    if group == GroupMember.NON_GROUP_MEMBER:
        raise ValueError("this rank is not a member of the group passed in: new_group() returned "
                         "GroupMember.NON_GROUP_MEMBER here; only the group's ranks may use it")
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup from new_group() or None, got {type(group).__name__}")
    return group


def get_rank(group=None):
    """This process's rank in ``group`` (the default group if None); -1 if it is not a member.

    >>> import workbench.distributed as dist  # doctest: +SKIP
    >>> dist.get_rank()  # doctest: +SKIP
    0
    """
    if group == GroupMember.NON_GROUP_MEMBER:
        _default()
        return -1
    return resolve(group).rank()


def get_world_size(group=None):
    """The number of ranks in ``group`` (the default group if None); -1 if this rank is not a member."""
    if group == GroupMember.NON_GROUP_MEMBER:
        _default()
        return -1
    return resolve(group).size()


def get_backend(group=None):
    """The backend name of ``group``: 'gloo', 'mpi', 'nccl' or 'cpu:gloo,cuda:nccl'."""
    return resolve(group).backend_name()


def get_process_group_ranks(group):
    """The global ranks of ``group``'s members, in group-rank order."""
    return list(resolve(group).ranks)


def get_global_rank(group, group_rank):
    """The global rank of ``group_rank`` in ``group``."""
    pg = resolve(group)
    if not 0 <= group_rank < len(pg.ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {pg.ranks}")
    return pg.ranks[group_rank]


def get_group_rank(group, global_rank):
    """The rank within ``group`` of the process with global rank ``global_rank``."""
    pg = resolve(group)
    if global_rank not in pg.ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg.ranks}")
    return pg.ranks.index(global_rank)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None, sort_ranks=True):
    """A group of some of the ranks (all of them if ``ranks`` is None). Every rank must call it, as in
    PyTorch; ranks outside the group get ``GroupMember.NON_GROUP_MEMBER``.

    >>> import workbench.distributed as dist  # doctest: +SKIP
    >>> g = dist.new_group([0, 1]); dist.all_reduce(t, group=g)  # doctest: +SKIP
    """
    world = _default()
    n = world.size()
    members = list(range(n)) if ranks is None else [int(r) for r in ranks]
    bad = [r for r in members if not 0 <= r < n]
    if bad or len(set(members)) != len(members):
        raise ValueError(f"new_group: ranks {members} must be distinct ranks in [0, {n})")
    if sort_ranks:
        members = sorted(members)
    me = world.rank()
    MPI = _mpi.loaded()
    key = members.index(me) if me in members else 0
    comm = world.comm.Split(0 if me in members else MPI.UNDEFINED, key)
    _WORLD["groups"] += 1
    if comm == MPI.COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    backends = world.backends if backend is None else _backends(backend)
    return ProcessGroup(comm, members, backends, world.timeout if timeout is None else _seconds(timeout),
                        group_desc or str(_WORLD["groups"]))
