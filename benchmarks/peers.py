"""The issue tables' NumPy-based peer, measured here: MyGrad beside workbench and PyTorch, one run, one thread.

    python benchmarks/peers.py [--rounds R] [--steps-scale S]

#18 quotes "the best NumPy-based peer" per workload (MyGrad 0.80x on the tiny MLP, 0.77x on the digits MLP).
Those figures came from another machine; this script measures the same programs on this one, so the
targets can be read against what a NumPy engine reaches here. Each workload is written once, the way a
lecture notebook writes it, and run on each library with the same weights and batch:

* chain   the 10-op chain of 4x4 tensors, forward and backward: ((((x*w + b).tanh()*x - w).sin()*b + x).exp()).sum()
* tiny    MLP 64-16-10, batch 8, MSE, SGD by hand (raw parameter tensors, x @ w + b, relu)
* digits  MLP 64-256-256-10, batch 64, cross-entropy, SGD by hand

MyGrad has no modules or optimizers, so every library runs the raw-tensor form here (``user_forms.py`` has
the module and functional forms against PyTorch). Chainer, the issue's other peer, does not install on
Python 3.11 with NumPy 2 (its wheel build fails), so it is not measured.

Before timing, each library's first three steps must give PyTorch's values (rtol 1e-4). Timing: process CPU time, each library's steps back to back per round, rounds interleaved; the ratio of each
round, the median over rounds. Without MyGrad installed (``pip install mygrad``; ``workbench[dev]`` has it)
the script says so and measures workbench and PyTorch alone.
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import workbench as wb  # noqa: E402

torch.set_num_threads(1)

try:
    import mygrad as mg
except ImportError:  # the script still compares workbench with PyTorch
    mg = None


class Lib:
    """One library's spelling of what the programs use: tensors, the three unary ops, relu, the losses, the
    update and the gradient reset (MyGrad: module functions, ``.data`` and ``null_grad``)."""

    def __init__(self, name, mod):
        self.name, self.mod = name, mod

    def leaf(self, a):
        if self.name == "MyGrad":
            return mg.tensor(a.copy())
        return self.mod.tensor(a.copy(), requires_grad=True)

    def const(self, a):
        return mg.tensor(a, constant=True) if self.name == "MyGrad" else self.mod.tensor(a)

    def relu(self, h):
        if self.name == "MyGrad":
            from mygrad.nnet.activations import relu
            return relu(h)
        return h.relu()

    def mse(self, out, y):
        if self.name == "MyGrad":
            return mg.mean((out - y) ** 2)
        return self.mod.nn.functional.mse_loss(out, y)

    def cross_entropy(self, logits, labels):
        if self.name == "MyGrad":
            from mygrad.nnet.losses import softmax_crossentropy
            return softmax_crossentropy(logits, labels)
        return self.mod.nn.functional.cross_entropy(logits, labels)

    def sgd(self, ps, lr):
        if self.name == "MyGrad":  # MyGrad's own idiom: update the arrays, then drop the gradients
            for p in ps:
                p.data -= lr * p.grad
                p.null_grad()
            return
        with self.mod.no_grad():
            for p in ps:
                p -= lr * p.grad
                p.grad = None


def chain(lib, rng):
    x, w = (lib.leaf(rng.standard_normal((4, 4)).astype(np.float32) * 0.5) for _ in range(2))
    b = lib.const(rng.standard_normal((4, 4)).astype(np.float32) * 0.5)
    m = lib.mod

    def step():
        y = m.sum(m.exp(m.sin(m.tanh(x * w + b) * x - w) * b + x))
        y.backward()
        if lib.name == "MyGrad":
            x.null_grad(), w.null_grad()
        else:
            x.grad = w.grad = None
        return y

    return step


def mlp(lib, rng, sizes, batch, loss):
    """x @ w + b, relu between layers, the loss, backward, SGD by hand: weights drawn as nn.Linear's default."""
    ps = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        bound = 1 / np.sqrt(n_in)
        ps += [lib.leaf(rng.uniform(-bound, bound, (n_in, n_out)).astype(np.float32)),
               lib.leaf(rng.uniform(-bound, bound, n_out).astype(np.float32))]
    x = lib.const(rng.standard_normal((batch, sizes[0])).astype(np.float32))
    if loss == "mse":
        y, lossf = lib.const(rng.standard_normal((batch, sizes[-1])).astype(np.float32)), lib.mse
    else:
        labels = rng.integers(0, sizes[-1], batch)
        y = labels if lib.name == "MyGrad" else lib.mod.tensor(labels)
        lossf = lib.cross_entropy

    def step():
        h = x
        for i in range(0, len(ps) - 2, 2):
            h = lib.relu(h @ ps[i] + ps[i + 1])
        loss = lossf(h @ ps[-2] + ps[-1], y)
        loss.backward()
        lib.sgd(ps, 0.01)
        return loss

    return step


WORKLOADS = (  # name, the issue's MyGrad / PyTorch figure, builder, steps per round
    ("10-op chain, fwd+bwd, 4x4", "1.28x", chain, 1000),
    ("tiny MLP 64-16-10, b8, MSE, SGD", "0.80x", lambda lib, rng: mlp(lib, rng, (64, 16, 10), 8, "mse"), 500),
    ("digits MLP 64-256-256-10, b64, CE, SGD", "0.77x",
     lambda lib, rng: mlp(lib, rng, (64, 256, 256, 10), 64, "ce"), 100),
)


def rounds(steps_by_lib, n, r):
    for f in steps_by_lib.values():
        for _ in range(3):
            f()
    times = {k: [] for k in steps_by_lib}
    for _ in range(r):
        for k, f in steps_by_lib.items():
            t0 = time.process_time()
            for _ in range(n):
                f()
            times[k].append((time.process_time() - t0) / n)
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps-scale", type=float, default=1.0, help="multiplies each workload's steps per round")
    args = ap.parse_args()
    libs = [Lib("workbench", wb), Lib("PyTorch", torch)] + ([Lib("MyGrad", mg)] if mg else [])
    load = os.getloadavg()[0]
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, {os.cpu_count()} cpus, "
          f"load {load:.1f}, 1 thread, process CPU time, {args.rounds} rounds; torch {torch.__version__}, "
          f"numpy {np.__version__}" + (f", mygrad {mg.__version__}" if mg else ""))
    if mg is None:
        print("# MyGrad is not installed (pip install mygrad): workbench and PyTorch only")
    print(f"{'workload':40s} " + " ".join(f"{lib.name + ' ms':>13s}" for lib in libs)
          + "  wb/torch" + ("  MyGrad/torch  wb/MyGrad  (issue: MyGrad/torch)" if mg else ""))
    for name, issue, build, steps in WORKLOADS:
        fs = {lib.name: build(lib, np.random.default_rng(0)) for lib in libs}
        first = {k: [float(f().item()) for _ in range(3)] for k, f in fs.items()}  # the same program everywhere
        for k, v in first.items():
            if not np.allclose(v, first["PyTorch"], rtol=1e-4, atol=1e-6):
                sys.exit(f"{name}: {k}'s first three values {v} differ from PyTorch's {first['PyTorch']}")
        t = rounds(fs, max(1, int(steps * args.steps_scale)), args.rounds)

        def ratio(a, b):
            rs = [x / y for x, y in zip(t[a], t[b])]
            return f"{statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})"

        line = f"{name:40s} " + " ".join(f"{statistics.median(t[lib.name]) * 1e3:13.3f}" for lib in libs)
        line += f"  {ratio('workbench', 'PyTorch')}"
        if mg:
            line += f"  {ratio('MyGrad', 'PyTorch')}  {ratio('workbench', 'MyGrad')}  ({issue})"
        print(line, flush=True)


if __name__ == "__main__":
    main()
