"""``WORKBENCH_DISTRIBUTED_DEBUG=DETAIL`` (or PyTorch's ``TORCH_DISTRIBUTED_DEBUG=DETAIL``): before each
collective, the ranks of the group exchange a fingerprint of it (op, sequence number, dtypes, shapes,
device type) and every rank raises, naming the ranks that differ, when they do not all agree.

MPI itself catches only some mismatches ("Message truncated" when byte counts differ) and passes
others silently (equal byte counts in different shapes): this check catches all of them, at the cost of
one small all-gather per collective.
"""
import os

from .. import _backend

np = _backend.numpy


def detail():
    """Whether the cross-rank check is on (read each time: tests and users may set it at run time)."""
    level = os.environ.get("WORKBENCH_DISTRIBUTED_DEBUG") or os.environ.get("TORCH_DISTRIBUTED_DEBUG") or ""
    return level.upper() == "DETAIL"


def fingerprint(pg, op, tensors):
    shapes = ", ".join(f"{t.dtype.name}{list(t.shape)}" for t in tensors)
    dev = tensors[0].device.type if tensors else "-"
    return f"CollectiveFingerPrint(SequenceNumber={pg.seq}, OpType={op.upper()}, TensorShapes=[{shapes}], " \
           f"DeviceType={dev})"


def check(pg, op, tensors):
    """Raise on every rank of ``pg`` unless all of them are running the same collective on like tensors."""
    from .objects import allgather_bytes  # a real cycle: objects -> collectives -> debug

    mine = fingerprint(pg, op, tensors)
    blobs = allgather_bytes(pg, f"the debug check before {op} (sequence number {pg.seq})",
                            np.frombuffer(mine.encode(), np.uint8))
    prints = [b.tobytes().decode() for b in blobs]
    if len(set(prints)) == 1:
        return
    groups = {}
    for r, p in enumerate(prints):
        groups.setdefault(p, []).append(pg.ranks[r])
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[1]))
    lines = "; ".join(f"rank{'s' if len(rs) > 1 else ''} {rs} {'are' if len(rs) > 1 else 'is'} running {p}"
                      for p, rs in ordered)
    odd = sorted(r for _, rs in ordered[1:] for r in rs)
    raise RuntimeError(f"Detected mismatch between collectives on ranks (WORKBENCH_DISTRIBUTED_DEBUG=DETAIL): "
                       f"{lines}. Ranks {odd} differ from the others; every rank must call the same collectives in "
                       "the same order, on tensors of the same dtype and shape.")
