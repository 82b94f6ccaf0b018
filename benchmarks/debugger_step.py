"""How fast the backward debugger answers on a 2,000-node graph (kernel side, no browser).

    python benchmarks/debugger_step.py [--links 1000] [--steps 20] [--runs 3]

A chain of ``links`` mul+add pairs over 40 reused leaves (about 2,000 tape nodes) is built, then
``wb.viz.debug(loss, display=False)`` (setup: the snapshot and the paused backward) and ``steps``
"step" messages as the front end sends them (each runs one node's backward and answers with the
state message). Figures per run: setup_ms, and the median and worst step in ms. Targets: a step
within 100 ms, setup within 5 s.
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import workbench as wb  # noqa: E402


def one_run(links, steps):
    ws = [wb.randn(16, requires_grad=True) for _ in range(40)]
    h = wb.randn(16)
    for k in range(links):
        h = h * 0.999 + ws[k % 40]
    loss = h.sum()
    t = time.perf_counter()
    dbg = wb.viz.debug(loss, display=False)
    setup = time.perf_counter() - t
    sent = []
    dbg.send = lambda content, buffers=None: sent.append(content)
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        dbg._on_msg(dbg, {"type": "step"}, [])
        times.append(time.perf_counter() - t)
    assert sent[-1]["position"] == steps
    dbg.stepper.close()
    return dbg.total, setup, times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--links", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'nodes':>6} {'setup_ms':>9} {'step_median_ms':>15} {'step_worst_ms':>14}")
    for _ in range(args.runs):
        total, setup, times = one_run(args.links, args.steps)
        print(f"{total:>6} {setup * 1e3:>9.0f} {statistics.median(times) * 1e3:>15.2f} {max(times) * 1e3:>14.2f}")


if __name__ == "__main__":
    main()
