"""DDP communication hooks (PyTorch's default hooks and a custom one), join() on uneven inputs, and ranks started
by hand that meet through init_method="file://..." (see workers/hooks_join.py for what each check compares)."""
import os
import subprocess
import sys

from .launch import HERE, ROOT, oks

CHECKS = ["allreduce_hook", "fp16_compress_hook", "hook_errors", "join-divide1", "join-divide0",
          "join_hook_buffers", "join_cuda_nccl", "Join_generic",
          "join_throw"]


def test_comm_hooks_and_join_on_ranks_meeting_through_a_file(tmp_path):
    rendezvous = tmp_path / "rendezvous"
    rendezvous.write_text("127.0.0.1 9\n")  # a stale file from an earlier job: its server is gone
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("WORKBENCH_DISTRIBUTED_DEBUG", None)
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "workers", "hooks_join.py"), str(rank),
                               str(rendezvous)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=env, cwd=ROOT) for rank in (1, 0)]  # rank 1 first: it must wait for rank 0
    outs = []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=150)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    out = "\n".join(outs)
    assert [p.returncode for p in procs] == [0, 0], out[-4000:]
    missing = {(r, c) for r in (0, 1) for c in CHECKS} - oks(out)
    assert not missing, f"{sorted(missing)}\n{out[-3000:]}"
    assert not rendezvous.exists()  # rank 0 removed it once every rank had read it
