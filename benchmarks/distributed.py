"""workbench.distributed on 2 local ranks: DDP scaling and all-reduce bandwidth against raw mpi4py.

    python benchmarks/distributed.py [--steps N] [--rounds R] [--only mlp,gpt,allreduce]

- DDP training step (forward, loss, zero_grad, backward with the bucketed all-reduce, Adam step) of the
  digits MLP (batch 64) and the one-block GPT (batch 16) of ``train_cpu.py``: one process on the whole
  batch against 2 DDP ranks on half of it each. Scaling efficiency = (1-process step time) / (2-rank step
  time) / 2; 1.0 would be perfect. Also reported: the 2-rank step against one process on half the batch,
  which is what DDP adds (communication, waiting for the slower rank, and two processes sharing the
  machine), and the same 2 ranks training the plain model on their halves without DDP, which is the
  share of that due to the machine alone (cores, memory bandwidth, other load).
- All-reduce of a 25 MB float32 bucket (DDP's default ``bucket_cap_mb``): ``dist.all_reduce`` against
  ``comm.Allreduce(MPI.IN_PLACE, ...)`` from mpi4py on the same buffer and communicator, in alternating
  rounds (target: within 10 % of raw mpi4py).

Every rank and the single process run one thread (OMP/OPENBLAS/MKL_NUM_THREADS=1). Times are wall-clock
(communication is waiting, which CPU time would not count), median over steps and rounds.
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import workbench as wb  # noqa: E402
from train_cpu import CTX, VOCAB, gpt, mlp  # noqa: E402 - the models of the training benchmark

BATCH = {"mlp": 64, "gpt": 16}


def data(kind, batch):
    g = wb.Generator().manual_seed(0)
    if kind == "mlp":
        return wb.randn(batch, 64, generator=g), wb.randint(0, 10, (batch,), generator=g)
    idx = wb.randint(0, VOCAB, (batch, CTX), generator=g)
    return idx, wb.randint(0, VOCAB, (batch * CTX,), generator=g)


def step_fn(kind, model, x, y):
    opt = wb.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = wb.nn.CrossEntropyLoss()

    def step():
        out = model(x)
        if kind == "gpt":
            out = out.reshape(-1, VOCAB)
        loss = loss_fn(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def time_steps(step, steps, sync=None):
    step()  # warm up (first-touch allocations, DDP's first bucket copies)
    out = []
    for _ in range(steps):
        if sync is not None:
            sync()  # both ranks start each step together, so a step's time includes the wait for the slower
        t = time.perf_counter()
        step()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def build(kind):
    wb.manual_seed(0)
    return (mlp if kind == "mlp" else gpt)(wb.nn)


def single(kinds, steps, rounds):
    res = {}
    for kind in kinds:
        full = [time_steps(step_fn(kind, build(kind), *data(kind, BATCH[kind])), steps) for _ in range(rounds)]
        half = [time_steps(step_fn(kind, build(kind), *data(kind, BATCH[kind] // 2)), steps) for _ in range(rounds)]
        res[kind] = {"full": statistics.median(full), "half": statistics.median(half)}
    return res


def worker(kinds, steps, rounds, allreduce):
    import numpy as np

    import workbench.distributed as dist
    from workbench.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    from mpi4py import MPI  # after init_process_group, which sets up how MPI meets the other ranks

    r, n = dist.get_rank(), dist.get_world_size()
    pg = dist.process_group.resolve(None)
    assert n == 2, n
    res = {}
    for kind in kinds:
        x, y = data(kind, BATCH[kind])
        step = step_fn(kind, DDP(build(kind)), x.chunk(n)[r], y.chunk(n)[r])
        res[kind] = statistics.median([time_steps(step, steps, sync=dist.barrier) for _ in range(rounds)])
        alone = step_fn(kind, build(kind), x.chunk(n)[r], y.chunk(n)[r])  # no DDP: no communication at all
        res[kind + "_alone"] = statistics.median([time_steps(alone, steps, sync=dist.barrier)
                                                  for _ in range(rounds)])
    if allreduce:
        t = wb.zeros(25 * 1024 * 1024 // 4)
        arr = t.numpy()
        reps = max(3, steps // 4)

        def raw():
            pg.comm.Allreduce(MPI.IN_PLACE, arr, MPI.SUM)

        def ours():
            dist.all_reduce(t)

        times = {"raw": [], "ours": []}
        for _ in range(rounds):
            for name, fn in (("raw", raw), ("ours", ours)):
                dist.barrier()
                fn()
                dist.barrier()
                s = time.perf_counter()
                for _ in range(reps):
                    fn()
                times[name].append((time.perf_counter() - s) / reps)
        res["allreduce"] = {k: statistics.median(v) for k, v in times.items()}
        assert np.all(arr == 0)
    if r == 0:
        print("RESULT " + json.dumps(res), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", default="mlp,gpt,allreduce")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    only = a.only.split(",")
    kinds = [k for k in ("mlp", "gpt") if k in only]
    if a.worker:
        return worker(kinds, a.steps, a.rounds, "allreduce" in only)
    one = single(kinds, a.steps, a.rounds)
    cmd = [sys.executable, "-m", "workbench.distributed.run", "--standalone", "--nproc-per-node", "2", __file__,
           "--worker", "--steps", str(a.steps), "--rounds", str(a.rounds), "--only", a.only]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE.parent,
                          env={**os.environ, "PYTHONPATH": str(HERE.parent)})
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if proc.returncode or not lines:
        sys.exit(f"the 2-rank run failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    two = json.loads(lines[-1][len("RESULT "):])
    print(f"{platform.python_version()} on {os.cpu_count()} cores, load average "
          f"{', '.join(f'{v:.1f}' for v in os.getloadavg())}; {a.steps} steps x {a.rounds} rounds")
    for kind in kinds:
        t1, th, t2, ta = one[kind]["full"], one[kind]["half"], two[kind], two[kind + "_alone"]
        print(f"{kind:4s} batch {BATCH[kind]:3d}: 1 process {t1 * 1e3:7.2f} ms | 2 DDP ranks x {BATCH[kind] // 2} "
              f"{t2 * 1e3:7.2f} ms | speedup {t1 / t2:.2f}, scaling efficiency {t1 / t2 / 2:.2f} | "
              f"vs 1 process on half the batch ({th * 1e3:.2f} ms): {t2 / th:.2f}x, of which 2 processes "
              f"without DDP ({ta * 1e3:.2f} ms): {ta / th:.2f}x")
    if "allreduce" in two:
        raw, ours = two["allreduce"]["raw"], two["allreduce"]["ours"]
        mb = 25.0
        print(f"all_reduce 25 MB float32: mpi4py {raw * 1e3:.2f} ms ({mb / raw:.0f} MB/s) | workbench "
              f"{ours * 1e3:.2f} ms ({mb / ours:.0f} MB/s) | ratio {ours / raw:.3f} (target <= 1.10)")


if __name__ == "__main__":
    main()
