"""One rank's side of the fault channel, and how a rank leaves the job (at exit, or when it fails).

A rank that the rendezvous server tells of another rank's failure or death ends itself at once, with a
message naming that rank: it cannot finish its collectives, and waiting would hang the job. A rank whose
script ends (or calls ``sys.exit``) says goodbye first, so that ranks still waiting on it in a collective
learn that it left and fail with a message, instead of waiting for their timeout.
"""
import atexit
import os
import socket
import sys
import threading
import time

from . import mpi as _mpi
from .rendezvous import keepalive, parse, quote, unquote

_STATE = {"watcher": None, "failed": False, "hooked": False, "rank": None}
# the exit status of a rank that ends because another rank failed: the launcher names the other one
PEER_FAILED = 75


def unlink_mpi_shm():
    """Remove the names of the MPICH shared-memory files this process maps (its memory stays mapped).

    MPICH names its node-local segments /dev/shm/mpich_shm_* and unlinks them only in MPI_Finalize, which
    ranks that fail (or that we let exit without the finalize barrier) never reach: each would leave 2 MB
    behind. Once every rank of the node has mapped a segment nobody opens it by name again.
    """
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split(None, 5)[5].strip() for line in f if "/mpich_shm_" in line}
    except OSError:
        return
    for path in paths:
        try:
            os.unlink(path.removesuffix(" (deleted)"))
        except OSError:
            pass


def _die(message):
    unlink_mpi_shm()
    rank = _STATE["rank"]
    sys.stderr.write(f"workbench.distributed: {message}. Ending rank {rank} (pid {os.getpid()}).\n")
    sys.stderr.flush()
    os._exit(PEER_FAILED)


class Watcher(threading.Thread):
    """The watch connection to the rendezvous server; ``left`` maps ranks that left the job to when."""

    def __init__(self, sock, rank, where):
        super().__init__(name="workbench-distributed-watch", daemon=True)
        self.sock, self.rank, self.where = sock, rank, where
        self.left = {}
        self.closing = False
        self.file = sock.makefile("rb")

    def run(self):
        while True:
            try:
                line = self.file.readline()
            except OSError:
                line = b""
            if not line:
                if not self.closing:
                    _die(f"the rendezvous server at {self.where} (started by rank 0) is gone: rank 0's machine "
                         "died or the server was killed")
                return
            m = parse(line.decode().strip())
            cmd = m.get("cmd")
            if cmd == "wb_failed":
                if not self.closing:
                    _die(unquote(m.get("msg", "another rank failed")))
                return
            if cmd == "wb_left":
                self.left[int(m["rank"])] = time.monotonic()

    def send(self, line):
        try:
            self.sock.sendall((line + "\n").encode())
        except OSError:
            pass

    def close(self):
        self.closing = True
        try:
            self.sock.close()
        except OSError:
            pass


def connect(addr, port, rank, timeout):
    """Open the watch connection to the server at addr:port (retrying until it listens) and start watching."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock = socket.create_connection((addr, port), timeout=max(1.0, min(10.0, deadline - time.monotonic())))
            break
        except OSError as e:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"init_process_group: rank {rank} could not reach the rendezvous server at {addr}:{port} within "
                    f"{timeout:.0f} s ({e}); is rank 0 running with the same MASTER_ADDR and MASTER_PORT?") from None
            time.sleep(0.1)
    keepalive(sock)
    sock.settimeout(None)
    sock.sendall(f"cmd=wb_watch rank={rank} pid={os.getpid()} host={quote(socket.gethostname())}\n".encode())
    f = sock.makefile("rb")
    reply = parse(f.readline().decode().strip())
    if reply.get("cmd") != "wb_ok":
        sock.close()
        why = unquote(reply.get("msg", "the server closed the connection"))
        raise RuntimeError(f"init_process_group: the rendezvous server at {addr}:{port} refused rank {rank}: {why}")
    w = Watcher(sock, rank, f"{addr}:{port}")
    w.file = f
    w.start()
    return w


def install(rank, watcher):
    """Hook this process's exit: say goodbye and finalize MPI on a normal exit; report an uncaught error."""
    _STATE["rank"], _STATE["watcher"] = rank, watcher
    if _STATE["hooked"]:
        return
    _STATE["hooked"] = True
    previous = sys.excepthook

    def excepthook(tp, value, tb):
        previous(tp, value, tb)
        fail(f"{tp.__name__}: {value}")

    sys.excepthook = excepthook
    atexit.register(_at_exit)


def fail(message):
    """This rank is going down with an error: tell the others (they end too) and never finalize MPI."""
    _STATE["failed"] = True
    w = _STATE["watcher"]
    if w is not None:
        w.closing = True  # the server's news of this failure is no reason to end twice
        unlink_mpi_shm()
        w.send(f"cmd=wb_error msg={quote(message)}")
    else:
        MPI = _mpi.loaded()
        if MPI is not None and MPI.Is_initialized() and not MPI.Is_finalized() and MPI.COMM_WORLD.Get_size() > 1:
            sys.stderr.write(f"workbench.distributed: rank {_STATE['rank']} failed ({message}); aborting the MPI job\n")
            sys.stderr.flush()
            MPI.COMM_WORLD.Abort(1)  # the MPI launcher ends every rank


def _at_exit():
    if _STATE["failed"]:
        return
    w = _STATE["watcher"]
    if w is not None:
        # every collective has completed (each op waits for its own), so there is nothing left to flush;
        # MPI_Finalize would instead wait for every rank at a barrier, and crash in MPICH when a rank fails
        # meanwhile. The goodbye tells ranks still waiting on this one that it is gone.
        w.closing = True
        unlink_mpi_shm()
        w.send("cmd=wb_bye")
        w.close()
        return
    MPI = _mpi.loaded()
    if MPI is not None and MPI.Is_initialized() and not MPI.Is_finalized():
        MPI.Finalize()  # started by an MPI launcher, which expects it
