"""A NumPy-backed fake of ``cupy.cuda.nccl`` (CuPy's NCCL bindings) for the fake cupy: real processes, real data.

What it keeps of NCCL: the API (``get_unique_id``, ``NcclCommunicator(ndev, commId, rank)`` and its
``allReduce``/``reduce``/``broadcast``/``bcast``/``reduceScatter``/``allGather``/``send``/``recv`` on raw
buffer addresses, counts, datatype and op codes and a stream), the unique id as a 128-byte tuple that
the caller must hand to every rank, and that every rank must call each collective in the same order.
As in NCCL the unique id carries the address of a bootstrap root in the process that made it: here that
root (a thread) also does the arithmetic. Each rank sends it its buffer and receives its result, so the
calls complete synchronously, which is what the fake cupy's streams are.
"""
import ast
import ctypes
import os
import socket
import struct
import threading

import numpy

available = True
NCCL_UNIQUE_ID_BYTES = 128
NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN, NCCL_AVG = 0, 1, 2, 3, 4
NCCL_INT8 = NCCL_CHAR = 0
NCCL_UINT8 = 1
NCCL_INT32 = NCCL_INT = 2
NCCL_UINT32 = 3
NCCL_INT64 = 4
NCCL_UINT64 = 5
NCCL_FLOAT16 = NCCL_HALF = 6
NCCL_FLOAT32 = NCCL_FLOAT = 7
NCCL_FLOAT64 = NCCL_DOUBLE = 8
_TYPES = {NCCL_INT8: numpy.int8, NCCL_UINT8: numpy.uint8, NCCL_INT32: numpy.int32, NCCL_UINT32: numpy.uint32,
          NCCL_INT64: numpy.int64, NCCL_UINT64: numpy.uint64, NCCL_FLOAT16: numpy.float16,
          NCCL_FLOAT32: numpy.float32, NCCL_FLOAT64: numpy.float64}
_MAGIC = b"WBFAKENCCL"


class NcclError(RuntimeError):
    pass


def get_version():
    return 22000


def _view(ptr, count, datatype):
    dt = numpy.dtype(_TYPES[datatype])
    if count == 0:
        return numpy.empty(0, dt)
    return numpy.frombuffer((ctypes.c_char * (count * dt.itemsize)).from_address(ptr), dt)


def _send(sock, header, payload=b""):
    h = repr(header).encode()
    sock.sendall(struct.pack("!II", len(h), len(payload)) + h + payload)


def _recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise NcclError("NCCL_ERROR_SYSTEM_ERROR: a peer closed its connection (remote process exited)")
        buf += chunk
    return bytes(buf)


def _recv(sock):
    hl, pl = struct.unpack("!II", _recv_exact(sock, 8))
    return ast.literal_eval(_recv_exact(sock, hl).decode()), _recv_exact(sock, pl)


class _Root:
    """The bootstrap root of one unique id: gathers each collective from every rank and answers each."""

    def __init__(self):
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.cond = threading.Condition()
        self.socks = {}
        self.calls = {}  # sequence number -> {rank: (header, payload)}
        self.mail = {}  # (src, dst) -> [payload, ...]
        self.local = None  # the rank living in this process: answered last, so it cannot exit (ending
        # this root's daemon threads) before the other ranks have their answers
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            sock, _ = self.listener.accept()
            hello, _ = _recv(sock)
            with self.cond:
                self.socks[hello["rank"]] = sock
                self.n = hello["ndev"]
                if hello["pid"] == os.getpid():
                    self.local = hello["rank"]
            threading.Thread(target=self.serve, args=(sock, hello["rank"]), daemon=True).start()

    def serve(self, sock, rank):
        while True:
            try:
                head, payload = _recv(sock)
            except (NcclError, OSError):
                return
            if head["op"] == "send":
                with self.cond:
                    self.mail.setdefault((rank, head["peer"]), []).append(payload)
                    self.cond.notify_all()
                _send(sock, {"ok": True})
            elif head["op"] == "recv":
                key = (head["peer"], rank)
                with self.cond:
                    while not self.mail.get(key):
                        self.cond.wait()
                    data = self.mail[key].pop(0)
                _send(sock, {"ok": True}, data)
            else:
                with self.cond:
                    got = self.calls.setdefault(head["seq"], {})
                    got[rank] = (head, payload)
                    complete = len(got) == self.n
                    if complete:
                        del self.calls[head["seq"]]
                if complete:
                    self.answer(got)

    def answer(self, got):
        heads = {r: h for r, (h, _) in got.items()}
        first = heads[0]
        odd = [r for r, h in heads.items() if (h["op"], h["count"], h["dtype"]) != (first["op"], first["count"],
                                                                                   first["dtype"])]
        arrays = {r: numpy.frombuffer(p, _TYPES[h["dtype"]]) for r, (h, p) in got.items()}
        n = len(got)
        if odd:
            out = {r: ({"error": f"NCCL_ERROR_INVALID_USAGE: ranks {odd} called a different collective or count "
                                 f"than rank 0 ({first['op']}, count {first['count']})"}, b"") for r in got}
        else:
            out = {r: ({"ok": True}, res.tobytes()) for r, res in self.compute(first, arrays, n).items()}
        for r in sorted(out, key=lambda r: r == self.local):
            _send(self.socks[r], *out[r])

    @staticmethod
    def compute(head, arrays, n):
        op, red = head["op"], head.get("redop")
        stack = numpy.stack([arrays[r] for r in range(n)]) if op != "broadcast" else None
        if op in ("allReduce", "reduce", "reduceScatter"):
            if red == NCCL_SUM:
                total = stack.sum(0, dtype=stack.dtype)
            elif red == NCCL_PROD:
                total = stack.prod(0, dtype=stack.dtype)
            elif red == NCCL_MAX:
                total = stack.max(0)
            elif red == NCCL_MIN:
                total = stack.min(0)
            else:  # AVG: NCCL divides the sum (integer types truncate)
                s = stack.sum(0, dtype=stack.dtype)
                total = (s / n).astype(s.dtype) if s.dtype.kind == "f" else numpy.trunc(s / n).astype(s.dtype)
            if op == "allReduce":
                return {r: total for r in range(n)}
            if op == "reduce":
                return {r: total if r == head["root"] else total[:0] for r in range(n)}
            chunk = head["count"] // n
            return {r: total[r * chunk:(r + 1) * chunk] for r in range(n)}
        if op == "broadcast":
            return {r: arrays[head["root"]] for r in range(n)}
        if op == "allGather":
            return {r: stack.reshape(-1) for r in range(n)}
        raise NcclError(f"NCCL_ERROR_INVALID_USAGE: unknown collective {op}")


def get_unique_id():
    """A 128-entry tuple of signed bytes naming a new bootstrap root in this process."""
    root = _Root()
    raw = _MAGIC + struct.pack("!H", root.port)
    raw += bytes(NCCL_UNIQUE_ID_BYTES - len(raw))
    return tuple(b - 256 if b > 127 else b for b in raw)


def groupStart():  # noqa: N802 - CuPy's name
    pass


def groupEnd():  # noqa: N802
    pass


class NcclCommunicator:
    """One rank of a fake NCCL communicator (``ndev`` ranks sharing ``commId``)."""

    def __init__(self, ndev, commId, rank):  # noqa: N803
        raw = bytes(b % 256 for b in commId)
        if len(commId) != NCCL_UNIQUE_ID_BYTES or not raw.startswith(_MAGIC):
            raise NcclError("NCCL_ERROR_INVALID_ARGUMENT: commId is not a unique id from get_unique_id()")
        port = struct.unpack("!H", raw[len(_MAGIC):len(_MAGIC) + 2])[0]
        self._ndev, self._rank, self._seq = ndev, rank, 0
        self._sock = socket.create_connection(("127.0.0.1", port))
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        _send(self._sock, {"rank": rank, "ndev": ndev, "pid": os.getpid()})

    def _call(self, head, payload=b""):
        if self._sock is None:
            raise NcclError("NCCL_ERROR_INVALID_USAGE: the communicator was destroyed")
        _send(self._sock, head, payload)
        reply, data = _recv(self._sock)
        if "error" in reply:
            raise NcclError(reply["error"])
        return data

    def _collective(self, op, sendbuf, recvbuf, count, recvcount, datatype, **extra):
        self._seq += 1
        data = _view(sendbuf, count, datatype).tobytes()
        out = self._call({"op": op, "seq": self._seq, "count": count, "dtype": datatype, **extra}, data)
        _view(recvbuf, recvcount, datatype)[...] = numpy.frombuffer(out, _TYPES[datatype])

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):  # noqa: N802
        self._collective("allReduce", sendbuf, recvbuf, count, count, datatype, redop=op)

    def reduce(self, sendbuf, recvbuf, count, datatype, op, root, stream):
        self._collective("reduce", sendbuf, recvbuf, count, count if self._rank == root else 0, datatype,
                         redop=op, root=root)

    def broadcast(self, sendbuff, recvbuff, count, datatype, root, stream):
        self._collective("broadcast", sendbuff, recvbuff, count, count, datatype, root=root)

    def bcast(self, buff, count, datatype, root, stream):
        self.broadcast(buff, buff, count, datatype, root, stream)

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):  # noqa: N802
        self._collective("reduceScatter", sendbuf, recvbuf, recvcount * self._ndev, recvcount, datatype, redop=op)

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):  # noqa: N802
        self._collective("allGather", sendbuf, recvbuf, count, count * self._ndev, datatype)

    def send(self, sendbuf, count, datatype, peer, stream):
        self._call({"op": "send", "peer": peer}, _view(sendbuf, count, datatype).tobytes())

    def recv(self, recvbuf, count, datatype, peer, stream):
        data = self._call({"op": "recv", "peer": peer})
        _view(recvbuf, count, datatype)[...] = numpy.frombuffer(data, _TYPES[datatype])

    def rank_id(self):
        return self._rank

    def size(self):
        return self._ndev

    def device_id(self):
        return 0

    def destroy(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    abort = destroy
