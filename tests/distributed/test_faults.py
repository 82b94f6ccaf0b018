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


def test_when_rank_0_dies_its_rendezvous_server_outlives_it_and_ends_the_others():
    # without the launcher, so the message must come from the server through rank 1
    import os
    import subprocess
    import sys

    from workbench.distributed.run import free_port

    from .launch import HERE, ROOT

    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "WORLD_SIZE": "2",
           "PYTHONPATH": ROOT}
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "workers", "faults.py"), "kill0"],
                              env={**env, "RANK": str(r)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in (0, 1)]
    start = time.monotonic()
    outs = [p.communicate(timeout=60) for p in procs]
    assert time.monotonic() - start < 30
    assert procs[0].returncode == -9 and procs[1].returncode == 75, outs
    assert "rank 0 (pid" in outs[1][1] and "died" in outs[1][1] and "Ending rank 1" in outs[1][1], outs


def test_monitored_barrier_names_the_rank_that_did_not_arrive():
    rc, out = run("workers/faults.py", "monitored", timeout=60)
    assert rc == 1, out
    assert "Rank 1 failed to pass monitoredBarrier in 1000 ms" in out, out
