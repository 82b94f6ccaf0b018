"""Ranks meet however PyTorch users start them: the launcher (+ its console script), multiprocessing.spawn,
mpiexec, and env:// by hand; the example script runs unmodified under each."""
import os
import re
import shutil
import subprocess
import sys

import pytest

import workbench as wb
import workbench.distributed as dist
from workbench.distributed import rendezvous
from workbench.distributed.run import free_port, rank_envs

from .launch import ROOT, run

EXAMPLE = os.path.join(ROOT, "examples", "ddp_train.py")


def _checksums(out):
    # a regex, not lines: ranks started without the launcher share one pipe, and print() may interleave
    return dict(re.findall(r"rank (\d+) checksum (-?[\d.]+)", out))


def test_example_script_runs_unmodified_under_the_launcher_spawn_and_mpiexec(tmp_path):
    ck = tmp_path / "model.pt"
    rc, launched = run(EXAMPLE, "--epochs", "1", "--save", ck)
    assert rc == 0, launched
    sums = _checksums(launched)
    assert set(sums) == {"0", "1"} and sums["0"] == sums["1"], launched  # the replicas stayed identical
    assert "epoch 0 loss" in launched
    state = wb.load(ck)
    assert list(state) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]  # ddp.module's keys, no prefix
    # the same training started as PyTorch's DDP tutorial does (multiprocessing.spawn) and by mpiexec
    rc, spawned = run(EXAMPLE, "--epochs", "1", "--spawn", "2", "--port", free_port(), launcher=None)
    assert rc == 0, spawned
    assert _checksums(spawned) == sums
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable))
    if mpiexec is None:
        pytest.skip("no mpiexec next to this Python (the mpich wheel ships one)")
    rc, mpi = _mpiexec(mpiexec, EXAMPLE, "--epochs", "1")
    assert rc == 0, mpi
    assert _checksums(mpi) == sums


def _mpiexec(mpiexec, *args):
    env = {**os.environ, "PYTHONPATH": ROOT}
    p = subprocess.run([mpiexec, "-n", "2", sys.executable, *args], capture_output=True, text=True, timeout=90,
                       env=env, cwd=ROOT)
    return p.returncode, p.stdout + p.stderr


def test_console_script_and_torchrun_flags():
    script = shutil.which("workbench-run", path=os.path.dirname(sys.executable))
    if script is None:
        pytest.skip("workbench-run is not installed in this environment (pip install -e .)")
    p = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "--nproc-per-node" in p.stdout and "--master-addr" in p.stdout


def test_rank_environment_is_torchruns():
    envs = rank_envs(2, 2, 1, "host0", 29400, "job")
    assert [e["RANK"] for e in envs] == ["2", "3"] and [e["LOCAL_RANK"] for e in envs] == ["0", "1"]
    assert {e["WORLD_SIZE"] for e in envs} == {"4"} and {e["LOCAL_WORLD_SIZE"] for e in envs} == {"2"}
    assert {(e["MASTER_ADDR"], e["MASTER_PORT"], e["GROUP_RANK"]) for e in envs} == {("host0", "29400", "1")}


def test_before_init_every_call_raises_pytorchs_error():
    assert dist.is_available() and not dist.is_initialized()
    for call in (dist.get_rank, dist.get_world_size, dist.barrier, lambda: dist.all_reduce(wb.ones(2)),
                 lambda: dist.broadcast(wb.ones(2), 0), lambda: dist.new_group([0])):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            call()


def test_bad_arguments_raise_before_anything_starts(monkeypatch):
    with pytest.raises(ValueError, match="Invalid backend: 'tpu'"):
        dist.init_process_group("tpu")
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    with pytest.raises(ValueError, match="MASTER_ADDR expected, but not set"):
        dist.init_process_group("gloo", init_method="env://", rank=0, world_size=2)
    with pytest.raises(ValueError, match="needs rank and world_size"):
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:1234")
    with pytest.raises(ValueError, match="not supported"):
        dist.init_process_group("gloo", init_method="redis://x:1", rank=0, world_size=2)
    with pytest.raises(ValueError, match="three slashes"):
        dist.init_process_group("gloo", init_method="file://tmp/x", rank=0, world_size=2)
    with pytest.raises(ValueError, match="needs rank and world_size"):
        dist.init_process_group("gloo", init_method="file:///tmp/x")
    with pytest.raises(TypeError, match="ReduceOp"):
        dist.process_group.op_name("sum-ish")
    assert not dist.is_initialized()


def test_rendezvous_wire_format_round_trips():
    msg = "rank 1 (pid 3 on h) failed: ValueError: 100% bad\nsecond line"
    assert rendezvous.unquote(rendezvous.quote(msg)) == msg
    assert rendezvous.parse("cmd=put kvsname=k key=a value=b=c") == {"cmd": "put", "kvsname": "k", "key": "a",
                                                                      "value": "b=c"}
