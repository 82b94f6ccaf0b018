"""Faults on 2 ranks: a killed rank ends the job naming it, a late rank times the op out, DETAIL mode catches
mismatched shapes that MPI passes silently, and an unused parameter is reported (workers/faults.py)."""
import time

from .launch import run


def test_a_killed_rank_ends_the_job_with_its_name_within_seconds():
    start = time.monotonic()
    rc, out = run("workers/faults.py", "kill", timeout=60)
    assert time.monotonic() - start < 30
    assert rc != 0
    assert "rank 1 (local rank 1" in out and "SIGKILL" in out, out


def test_a_collective_past_its_timeout_raises_naming_the_op():
    rc, out = run("workers/faults.py", "timeout", timeout=60)
    assert rc == 1, out
    assert "all_reduce (sequence number 2, float32 tensor of shape [3]) on rank 0 of group [0, 1] timed out" in out
    assert "workbench.distributed.run: rank 0 (local rank 0" in out, out


def test_debug_detail_raises_on_every_rank_naming_the_ranks_that_differ():
    rc, out = run("workers/faults.py", "mismatch", env={"WORKBENCH_DISTRIBUTED_DEBUG": "DETAIL"})
    assert rc == 0, out
    for r in (0, 1):
        line = next(x for x in out.splitlines() if x.startswith(f"{r} RAISED"))
        assert "Detected mismatch between collectives" in line and "float32[4]" in line and "float32[2, 2]" in line
        assert "OpType=ALL_REDUCE" in line and "SequenceNumber=2" in line


def test_without_debug_equal_byte_counts_pass_silently():
    rc, out = run("workers/faults.py", "mismatch")
    assert rc == 0 and "0 NOT RAISED" in out and "1 NOT RAISED" in out, out


def test_a_parameter_without_gradient_is_reported_at_the_next_forward():
    rc, out = run("workers/faults.py", "unused")
    assert rc == 0, out
    for r in (0, 1):
        line = next(x for x in out.splitlines() if x.startswith(f"{r} RAISED"))
        assert "find_unused_parameters=True" in line and "unused.weight" in line
