"""How long ``import workbench`` takes in a fresh interpreter, next to ``import numpy`` (its floor: the one
third-party package it loads) and ``import torch``.

    python benchmarks/import_time.py [--runs N]

Each figure is the minimum and the median wall time over N fresh subprocesses (``python -X importtime``
is the tool to see which module costs what). tests/test_backend.py checks what the import loads, not how
long it takes.
"""
import os
import statistics
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CODE = "import time; t = time.perf_counter(); import {mod}; print(time.perf_counter() - t)"


def measure(mod, runs):
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    times = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", CODE.format(mod=mod)], capture_output=True, text=True,
                             check=True, env=env)
        times.append(float(out.stdout))
    return min(times), statistics.median(times)


def main():
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 10
    print(f"import time, {runs} fresh interpreters each (seconds)")
    print(f"{'module':<12}{'min':>8}{'median':>9}")
    for mod in ("numpy", "workbench", "torch"):
        try:
            lo, med = measure(mod, runs)
        except subprocess.CalledProcessError:  # torch is a test extra
            continue
        print(f"{mod:<12}{lo:>8.3f}{med:>9.3f}")


if __name__ == "__main__":
    main()
