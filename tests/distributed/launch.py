"""Run a worker script on 2 local ranks through the launcher, bounded in time, and return what it printed."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run(script, *args, nproc=2, timeout=90, env=None, launcher=("-m", "workbench.distributed.run", "--standalone")):
    """(returncode, stdout + stderr) of ``script`` (a path relative to tests/distributed) on ``nproc`` ranks."""
    path = script if os.path.isabs(script) else os.path.join(HERE, script)
    cmd = [sys.executable, *launcher, "--nproc-per-node", str(nproc), path, *map(str, args)] if launcher else \
        [sys.executable, path, *map(str, args)]
    full = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env or {})}
    full.pop("WORKBENCH_DISTRIBUTED_DEBUG", None) if not env or "WORKBENCH_DISTRIBUTED_DEBUG" not in env else None
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full, cwd=ROOT)
    return p.returncode, p.stdout + p.stderr


def oks(output):
    """The set of 'OK name' lines the ranks printed, as {(rank, name)}."""
    out = set()
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "OK":
            out.add((int(parts[0]), parts[2]))
    return out
