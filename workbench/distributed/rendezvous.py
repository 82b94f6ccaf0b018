"""The rendezvous server at MASTER_ADDR:MASTER_PORT: MPI's process manager for ranks no MPI launcher started.

Why a server of our own: MPICH gives every process it did not launch the same name ("singinit"), so
two such processes cannot be joined (``Comm.Join`` and ``Accept``/``Connect`` refuse, "Local and remote
groups ... both contain process 0"). What ``mpiexec`` gives its children is a PMI server: a line-based
key-value service through which ranks exchange their addresses and meet at barriers. This module is such
a server (the PMI-1 wire protocol MPICH, Intel MPI and MVAPICH speak), so ranks started by the launcher,
``multiprocessing.spawn`` or by hand with ``env://`` / ``tcp://`` form one real ``MPI.COMM_WORLD``:
``MPI_Init`` in each sees ``PMI_PORT=MASTER_ADDR:MASTER_PORT`` and ``PMI_ID=RANK``.

The same port also serves workbench's own fault channel. Each rank keeps one "watch" connection open
for its lifetime; the server tells every rank when another rank fails (it reported an error, or its
connection closed without a goodbye: the process died) and when one leaves the job (reached its exit).
The ranks then end themselves with a message naming the rank, so nobody hangs.

Rank 0 starts the server as a separate process (``python -m workbench.distributed.rendezvous``), so it
outlives rank 0 long enough to tell the others that rank 0 died. It exits when every rank has left.
"""
import argparse
import os
import socket
import sys
import threading
import time


def keepalive(sock):
    """Detect a vanished peer machine within ~25 s (idle 10 s, then 3 probes 5 s apart)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 10), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, name):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def parse(line):
    """'cmd=put key=a value=b' -> {'cmd': 'put', 'key': 'a', 'value': 'b'} (PMI-1's wire format)."""
    out = {}
    for tok in line.split(" "):
        k, sep, v = tok.partition("=")
        if sep:
            out[k] = v
    return out


def quote(text):
    # PMI values are space-separated tokens: carry messages with spaces as %20 (and % itself as %25)
    return text.replace("%", "%25").replace(" ", "%20").replace("\n", "%0A")


def unquote(text):
    return text.replace("%0A", "\n").replace("%20", " ").replace("%25", "%")


class Server:
    """The job's PMI key-value space and barriers, plus the watch channel (see the module docstring)."""

    def __init__(self, world_size, kvsname, join_timeout):
        self.n = world_size
        self.kvsname = kvsname
        self.join_timeout = join_timeout
        self.kvs = {}
        self.cond = threading.Condition()
        self.barrier_count = 0
        self.barrier_gen = 0
        self.watchers = {}  # rank -> socket
        self.info = {}  # rank -> "pid 123 on host"
        self.left = set()  # ranks that said goodbye
        self.failed = None  # the first failure, as the message sent to everyone
        self.seen = set()  # ranks that ever connected a watch channel

    # --- PMI-1 ------------------------------------------------------------------------------
    def pmi(self, f, send, first):
        d = first
        while d is not None:
            cmd = d.get("cmd")
            if cmd == "initack":
                send("cmd=initack rc=0")
                send(f"cmd=set size={self.n}")
                send(f"cmd=set rank={int(d['pmiid'])}")
                send("cmd=set debug=0")
            elif cmd == "init":
                send("cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1")
            elif cmd == "get_maxes":
                send("cmd=maxes rc=0 kvsname_max=256 keylen_max=256 vallen_max=4096")
            elif cmd == "get_appnum":
                send("cmd=appnum rc=0 appnum=0")
            elif cmd == "get_my_kvsname":
                send(f"cmd=my_kvsname rc=0 kvsname={self.kvsname}")
            elif cmd == "get_universe_size":
                send(f"cmd=universe_size rc=0 size={self.n}")
            elif cmd == "put":
                with self.cond:
                    self.kvs[d["key"]] = d.get("value", "")
                send("cmd=put_result rc=0")
            elif cmd == "get":
                with self.cond:
                    v = self.kvs.get(d.get("key"))
                send(f"cmd=get_result rc=0 value={v}" if v is not None else
                     f"cmd=get_result rc=-1 msg=key_{d.get('key')}_not_found")
            elif cmd == "barrier_in":
                with self.cond:
                    gen = self.barrier_gen
                    self.barrier_count += 1
                    if self.barrier_count == self.n:
                        self.barrier_count = 0
                        self.barrier_gen += 1
                        self.cond.notify_all()
                    while self.barrier_gen == gen and self.failed is None:
                        self.cond.wait(1.0)
                if self.failed is not None:
                    return
                send("cmd=barrier_out rc=0")
            elif cmd == "finalize":
                send("cmd=finalize_ack rc=0")
                return
            elif cmd == "abort":
                self.fail(f"MPI aborted on a rank: {unquote(d.get('mesg', ''))}")
                return
            else:  # name publishing, spawn: not offered to ranks we did not launch
                send(f"cmd={cmd} rc=-1 msg=unsupported_by_workbench_rendezvous")
            line = f.readline()
            d = parse(line.decode().strip()) if line else None

    # --- the watch channel --------------------------------------------------------------------
    def watch(self, f, sock, d):
        rank = int(d["rank"])
        with self.cond:
            if self.failed is not None:
                sock.sendall(f"cmd=wb_failed msg={quote(self.failed)}\n".encode())
                return
            if rank in self.watchers or not 0 <= rank < self.n:
                sock.sendall(f"cmd=wb_refused msg={quote(f'rank {rank} is already taken or not in [0, {self.n})')}\n"
                             .encode())
                return
            self.watchers[rank] = sock
            self.seen.add(rank)
            self.info[rank] = f"pid {d.get('pid', '?')} on {d.get('host', '?')}"
            sock.sendall(b"cmd=wb_ok\n")
        clean = False
        while True:
            try:
                line = f.readline()
            except OSError:
                line = b""
            if not line:
                break
            m = parse(line.decode().strip())
            if m.get("cmd") == "wb_error":
                self.fail(f"rank {rank} ({self.info[rank]}) failed: {unquote(m.get('msg', ''))}", skip=rank)
            elif m.get("cmd") == "wb_bye":
                clean = True
                self.broadcast(f"cmd=wb_left rank={rank}", skip=rank)
        with self.cond:
            self.watchers.pop(rank, None)
            self.left.add(rank)
            self.cond.notify_all()
        if not clean:
            self.fail(f"rank {rank} ({self.info[rank]}) died: its process ended without leaving the process "
                      "group (killed, crashed, or exited through os._exit)")

    def broadcast(self, msg, skip=None):
        with self.cond:
            targets = [s for r, s in self.watchers.items() if r != skip]
        for s in targets:
            try:
                s.sendall((msg + "\n").encode())
            except OSError:
                pass

    def fail(self, message, skip=None):
        with self.cond:
            if self.failed is not None:
                return
            self.failed = message
            self.cond.notify_all()
        self.broadcast(f"cmd=wb_failed msg={quote(message)}", skip)

    def handle(self, sock):
        keepalive(sock)
        f = sock.makefile("rb")

        def send(line):
            sock.sendall((line + "\n").encode())

        try:
            line = f.readline()
            if not line:
                return
            d = parse(line.decode().strip())
            if d.get("cmd") == "wb_watch":
                self.watch(f, sock, d)
            else:
                self.pmi(f, send, d)
        except (OSError, ValueError, KeyError):
            pass
        finally:
            try:
                sock.close()
            except OSError:
                pass

    def serve(self, listener):
        listener.settimeout(0.5)
        start = time.monotonic()
        while True:
            with self.cond:
                done = len(self.left) == self.n or (self.failed is not None and not self.watchers)
                missing = sorted(set(range(self.n)) - self.seen)
            if done:
                return
            if missing and self.failed is None and time.monotonic() - start > self.join_timeout:
                self.fail(f"ranks {missing} never joined within the {self.join_timeout:.0f} s timeout of "
                          "init_process_group; check that every rank was started with the same MASTER_ADDR, "
                          "MASTER_PORT and WORLD_SIZE")
            try:
                sock, _ = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self.handle, args=(sock,), daemon=True).start()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--world-size", type=int, required=True)
    p.add_argument("--join-timeout", type=float, default=1800.0)
    a = p.parse_args(argv)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((a.host, a.port))
    except OSError as e:
        print(f"error: cannot listen on port {a.port}: {e}", flush=True)
        return 1
    listener.listen(128)
    print(f"ready {listener.getsockname()[1]}", flush=True)  # rank 0 waits for this line before connecting
    sys.stdout.close()
    os.close(1)
    Server(a.world_size, f"workbench_{os.getpid()}_{listener.getsockname()[1]}", a.join_timeout).serve(listener)
    return 0


if __name__ == "__main__":
    sys.exit(main())
