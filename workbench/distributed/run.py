"""``python -m workbench.distributed.run``: torchrun's interface, starting the ranks of one node.

    python -m workbench.distributed.run --nproc-per-node 2 train.py --epochs 3
    python -m workbench.distributed.run --nnodes 2 --node-rank 0 --master-addr host0 --master-port 29500 \\
        --nproc-per-node 4 train.py                    # on host0; --node-rank 1 on the other host

Each rank is a process running the script with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
GROUP_RANK, MASTER_ADDR and MASTER_PORT set, as torchrun sets them; ``init_process_group()`` (env://)
joins them. When a rank fails, the launcher names it, stops the node's other ranks and exits with the
failed rank's status (the other nodes' ranks learn of it through the rendezvous server and end too).
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from .. import cuda
from . import mpi as _mpi
from . import watch as _watch


def free_port():
    """A TCP port free on this host right now (for --standalone)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _parser():
    p = argparse.ArgumentParser(prog="python -m workbench.distributed.run",
                                description="Start the ranks of a workbench.distributed job on this node "
                                            "(torchrun's flags).")
    p.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                   help="ranks on this node: a number, or 'cpu' (one per core)")
    p.add_argument("--nnodes", default="1", help="number of nodes (N, or MIN:MAX with MIN == MAX)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0, help="this node's index in [0, nnodes)")
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1",
                   help="host of node 0, where rank 0 runs the rendezvous")
    p.add_argument("--master-port", "--master_port", type=int, default=29500, help="a free port on that host")
    p.add_argument("--standalone", action="store_true",
                   help="one node: pick a free port on localhost (ignores --master-addr/--master-port)")
    p.add_argument("--rdzv-endpoint", "--rdzv_endpoint", default="", help="HOST:PORT, torchrun's name for "
                                                                           "--master-addr:--master-port")
    p.add_argument("--rdzv-backend", "--rdzv_backend", default="static", help="accepted for torchrun "
                                                                             "compatibility; the rendezvous is static")
    p.add_argument("--rdzv-id", "--rdzv_id", default="none", help="accepted for torchrun compatibility")
    p.add_argument("--max-restarts", "--max_restarts", type=int, default=0,
                   help="must be 0: a failed job is not restarted")
    p.add_argument("--grace", type=float, default=5.0,
                   help="seconds the other ranks get to stop (SIGTERM) before they are killed")
    p.add_argument("-m", "--module", action="store_true", help="run the script as a module (python -m)")
    p.add_argument("--no-python", "--no_python", action="store_true", help="run the script as a program")
    p.add_argument("script", help="the training script (or module, or program)")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    return p


def _nnodes(text):
    lo, _, hi = str(text).partition(":")
    if hi and hi != lo:
        raise SystemExit(f"error: --nnodes {text}: elastic node counts are not supported; give one number")
    return int(lo)


def _nproc(text):
    if text in ("cpu", "auto"):
        return os.cpu_count() or 1
    if text == "gpu":
        return max(cuda.device_count(), 1)
    return int(text)


def rank_envs(nproc, nnodes, node_rank, addr, port, run_id):
    """The environment of each local rank (torchrun's variables)."""
    world = nproc * nnodes
    out = []
    for local in range(nproc):
        out.append({"RANK": str(node_rank * nproc + local), "LOCAL_RANK": str(local), "WORLD_SIZE": str(world),
                    "LOCAL_WORLD_SIZE": str(nproc), "GROUP_RANK": str(node_rank), "ROLE_RANK": str(node_rank * nproc
                                                                                                  + local),
                    "ROLE_WORLD_SIZE": str(world), "MASTER_ADDR": addr, "MASTER_PORT": str(port),
                    "WORKBENCH_RUN_ID": run_id, "TORCHELASTIC_RUN_ID": run_id, "OMP_NUM_THREADS":
                    os.environ.get("OMP_NUM_THREADS", "1")})
    return out


def _describe(code):
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _stop(procs, grace):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def main(argv=None):
    """Run the launcher; returns the exit status (0 when every rank succeeded)."""
    a = _parser().parse_args(argv)
    if a.max_restarts:
        raise SystemExit("error: --max-restarts: restarting failed ranks is not supported; use 0")
    nnodes, nproc = _nnodes(a.nnodes), _nproc(a.nproc_per_node)
    if not 0 <= a.node_rank < nnodes:
        raise SystemExit(f"error: --node-rank {a.node_rank} is not in [0, --nnodes {nnodes})")
    addr, port = a.master_addr, a.master_port
    if a.rdzv_endpoint:
        addr, _, p = a.rdzv_endpoint.rpartition(":")
        port = int(p) if p else port
    if a.standalone:
        if nnodes != 1:
            raise SystemExit("error: --standalone is for one node; give --nnodes 1 or drop --standalone")
        addr, port = "127.0.0.1", free_port()
    if a.no_python:
        cmd = [a.script]
    elif a.module:
        cmd = [sys.executable, "-u", "-m", a.script]
    else:
        cmd = [sys.executable, "-u", a.script]
    cmd += a.script_args
    run_id = a.rdzv_id if a.rdzv_id != "none" else f"{addr}:{port}"
    base = _mpi.allow_root(dict(os.environ))
    procs, ranks, pumps = [], [], []
    for env in rank_envs(nproc, nnodes, a.node_rank, addr, port, run_id):
        p = subprocess.Popen(cmd, env={**base, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        procs.append(p)
        ranks.append(int(env["RANK"]))
        pumps += [_pump(p.stdout, sys.stdout), _pump(p.stderr, sys.stderr)]
    try:
        return _watch_ranks(procs, ranks, a)
    finally:
        deadline = time.monotonic() + 5.0  # what the ranks wrote last (a process they started may hold a pipe)
        for t in pumps:
            t.join(max(0.0, deadline - time.monotonic()))


_LOCK = threading.Lock()


def _pump(pipe, out):
    # the ranks' output, forwarded a whole line at a time: ranks writing to one terminal at once would
    # otherwise interleave inside lines
    def run():
        for line in iter(pipe.readline, b""):
            with _LOCK:
                out.buffer.write(line)
                out.flush()
        pipe.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _watch_ranks(procs, ranks, a):
    by_pid = {p.pid: (r, p) for r, p in zip(ranks, procs)}
    secondary = None  # a rank that ended because another failed (PEER_FAILED): name the other if it shows
    try:
        while by_pid:
            # block until the next rank exits: reaped in order, the first failure is the one to name
            if secondary is None:
                pid, status = os.wait()
            else:
                pid, status = _wait_until(secondary[3])
                if pid == 0:
                    break
            if pid not in by_pid:
                continue
            r, p = by_pid.pop(pid)
            p.returncode = code = os.waitstatus_to_exitcode(status)
            if code == _watch.PEER_FAILED and secondary is None:
                secondary = (r, pid, code, time.monotonic() + 3.0)
            elif code != 0:
                return _fail(r, pid, code, ranks, by_pid, a.grace)
        if secondary is not None:
            return _fail(*secondary[:3], ranks, by_pid, a.grace)
        return 0
    except KeyboardInterrupt:
        _stop(procs, a.grace)
        return 130


def _wait_until(deadline):
    # os.wait with a deadline: (0, 0) when it passes with no rank exiting
    while time.monotonic() < deadline:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid:
            return pid, status
        time.sleep(0.02)
    return 0, 0


def _fail(r, pid, code, ranks, by_pid, grace):
    with _LOCK:
        sys.stderr.write(f"workbench.distributed.run: rank {r} (local rank {ranks.index(r)}, pid {pid}) "
                         f"{_describe(code)}; stopping the other ranks of this node\n")
        sys.stderr.flush()
    _stop([q for _, q in by_pid.values()], grace)
    return code if code > 0 else 128 - code


def console_main():
    """The ``workbench-run`` console script."""
    sys.exit(main())


if __name__ == "__main__":
    sys.exit(main())
