"""Per-op cost on small tensors, op by op: workbench against PyTorch CPU, measured side by side in one run.

    python benchmarks/small_ops.py [--quick] [--only GROUP,...]

The forms users write on the small tensors of a notebook (8 x 16 float32, a batch of 8), where the
framework's per-call cost is the whole cost: each row is one call, with its input a non-leaf that requires
grad (the op is recorded, as in a model's forward), timed as the minimum over repetitions of many calls.
Both libraries run single-threaded and take turns. Groups:

* arith       operators and their Python-number forms
* activation  tensor methods and ``nn.functional``'s activations, softmax family
* reduce      sum, mean, var, max, norm...
* view        reshape, view, transpose, unsqueeze, expand, indexing
* shape       cat, stack, chunk, split, where, clamp, masked_fill
* nn          linear, layer norm, embedding, dropout, losses
* create      tensor(), zeros, randn, arange; comparisons, argmax, item (nothing recorded)

A column ``fwd+bwd`` adds ``.sum().backward()`` (or ``.backward()`` of a scalar) for the differentiable
rows. No target per row: the script prints the median ratio and the rows above 2x and 3x, for RESULTS.md.
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import workbench as wb  # noqa: E402

torch.set_num_threads(1)


def cases(lib):
    """{group: {row: (fn, differentiable)}} on one library's tensors (the same values for both)."""
    rng = np.random.default_rng(0)
    F = lib.nn.functional
    a, b = (rng.standard_normal((8, 16)).astype(np.float32) for _ in range(2))
    # non-leaves that require grad (what a model's forward sees), through a node that saves nothing, so that
    # the fwd+bwd column may run backward through it again
    x = lib.tensor(a, requires_grad=True).clone()
    y = lib.tensor(b, requires_grad=True).clone()
    p = lib.tensor(1 / (1 + np.exp(-b)), requires_grad=True).clone()  # values in (0, 1): log, sqrt, BCE targets
    w = lib.tensor(rng.standard_normal((16, 16)).astype(np.float32) * 0.25, requires_grad=True)
    v = lib.tensor(rng.standard_normal(16).astype(np.float32), requires_grad=True)
    idx = lib.tensor(rng.integers(0, 8, 8))
    cls = lib.tensor(rng.integers(0, 16, 8))
    mask = lib.tensor(b > 0)
    lin, ln = lib.nn.Linear(16, 16), lib.nn.LayerNorm(16)
    D, N = True, False
    return {
        "arith": {
            "x + y": (lambda: x + y, D), "x * y": (lambda: x * y, D), "x / y": (lambda: x / y, D),
            "x + v (broadcast)": (lambda: x + v, D), "x * 2.0": (lambda: x * 2.0, D), "1.0 - x": (lambda: 1.0 - x, D),
            "x ** 2": (lambda: x ** 2, D), "-x": (lambda: -x, D), "x.abs()": (lambda: x.abs(), D),
            "x.exp()": (lambda: x.exp(), D), "p.log()": (lambda: p.log(), D), "p.sqrt()": (lambda: p.sqrt(), D),
            "x.tanh()": (lambda: x.tanh(), D), "x @ w": (lambda: x @ w, D), "x @ v": (lambda: x @ v, D),
            "bmm (2x4x16 @ 2x16x4)": (lambda: x.view(2, 4, 16) @ x.view(2, 16, 4), D),
        },
        "activation": {
            "x.relu()": (lambda: x.relu(), D), "x.sigmoid()": (lambda: x.sigmoid(), D),
            "F.relu": (lambda: F.relu(x), D), "F.sigmoid": (lambda: F.sigmoid(x), D),
            "F.gelu": (lambda: F.gelu(x), D), "F.gelu tanh": (lambda: F.gelu(x, approximate="tanh"), D),
            "F.silu": (lambda: F.silu(x), D), "F.elu": (lambda: F.elu(x), D),
            "F.leaky_relu": (lambda: F.leaky_relu(x, 0.1), D), "F.softplus": (lambda: F.softplus(x), D),
            "F.softmax": (lambda: F.softmax(x, dim=-1), D), "F.log_softmax": (lambda: F.log_softmax(x, dim=-1), D),
            "x.softmax(-1)": (lambda: x.softmax(-1), D),
        },
        "reduce": {
            "x.sum()": (lambda: x.sum(), D), "x.sum(1)": (lambda: x.sum(1), D), "x.mean()": (lambda: x.mean(), D),
            "x.mean(1, keepdim)": (lambda: x.mean(1, keepdim=True), D), "x.var(1)": (lambda: x.var(1), D),
            "x.max(dim=1)": (lambda: x.max(dim=1)[0], D), "x.amax(1)": (lambda: x.amax(1), D),
            "x.norm()": (lambda: x.norm(), D),
        },
        "view": {
            "x.view(4, 32)": (lambda: x.view(4, 32), D), "x.reshape(-1)": (lambda: x.reshape(-1), D),
            "x.flatten()": (lambda: x.flatten(), D), "x.T": (lambda: x.T, D), "x.t()": (lambda: x.t(), D),
            "x.transpose(0, 1)": (lambda: x.transpose(0, 1), D), "x.permute(1, 0)": (lambda: x.permute(1, 0), D),
            "x.unsqueeze(0)": (lambda: x.unsqueeze(0), D), "v.expand(8, 16)": (lambda: v.expand(8, 16), D),
            "x[0]": (lambda: x[0], D), "x[:, 2:5]": (lambda: x[:, 2:5], D), "x[idx]": (lambda: x[idx], D),
            "x.T.contiguous()": (lambda: x.T.contiguous(), D),
        },
        "shape": {
            "cat": (lambda: lib.cat([x, y], 1), D), "stack": (lambda: lib.stack([x, y]), D),
            "x.chunk(2, 1)": (lambda: x.chunk(2, 1)[0], D), "x.split(4, 1)": (lambda: x.split(4, 1)[0], D),
            "where": (lambda: lib.where(mask, x, y), D), "x.clamp(-1, 1)": (lambda: x.clamp(-1, 1), D),
            "maximum": (lambda: lib.maximum(x, y), D), "masked_fill": (lambda: x.masked_fill(mask, 0.0), D),
        },
        "nn": {
            "F.linear": (lambda: F.linear(x, w, v), D), "nn.Linear": (lambda: lin(x), D),
            "F.layer_norm": (lambda: F.layer_norm(x, (16,)), D), "nn.LayerNorm": (lambda: ln(x), D),
            "F.embedding": (lambda: F.embedding(idx, w), D), "F.dropout": (lambda: F.dropout(x, 0.1), D),
            "F.mse_loss": (lambda: F.mse_loss(x, y), D), "F.l1_loss": (lambda: F.l1_loss(x, y), D),
            "F.cross_entropy": (lambda: F.cross_entropy(x, cls), D), "F.nll_loss": (lambda: F.nll_loss(x, cls), D),
            "F.binary_cross_entropy_with_logits": (lambda: F.binary_cross_entropy_with_logits(x, p.detach()), D),
        },
        "create": {
            "tensor([1., 2., 3.])": (lambda: lib.tensor([1.0, 2.0, 3.0]), N), "zeros(8, 16)": (lambda: lib.zeros(8, 16), N),
            "zeros_like": (lambda: lib.zeros_like(x), N), "randn(8, 16)": (lambda: lib.randn(8, 16), N),
            "arange(10)": (lambda: lib.arange(10), N), "x == y": (lambda: x == y, N),
            "x.argmax(1)": (lambda: x.argmax(1), N), "x[0, 0].item()": (lambda: x[0, 0].item(), N),
            "x.detach()": (lambda: x.detach(), N), "F.one_hot": (lambda: F.one_hot(idx, 16), N),
        },
    }


def _backward_of(fn):
    def run():
        out = fn()
        (out if out.ndim == 0 else out.sum()).backward()
    return run


def best_us(fn, number, repeat):
    return min(timeit.repeat(fn, number=number, repeat=repeat, timer=time.process_time)) / number * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    number, repeat = (300, 3) if args.quick else (1000, 5)
    only = set(args.only.split(",")) if args.only else None
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, {os.cpu_count()} cpus, "
          f"load {os.getloadavg()[0]:.1f}, 1 thread, process CPU time, min of {repeat} x {number} calls; "
          f"torch {torch.__version__}, numpy {np.__version__}")
    print(f"{'op (8 x 16 float32, recorded)':40s} {'wb us':>7s} {'torch us':>8s} {'ratio':>6s}   "
          f"{'fwd+bwd wb':>10s} {'torch':>7s} {'ratio':>6s}")
    wcases, tcases = cases(wb), cases(torch)
    fwd, both = [], []
    for group, rows in wcases.items():
        if only and group not in only:
            continue
        print(f"-- {group}")
        for name, (wf, diff) in rows.items():
            tf = tcases[group][name][0]
            w, t = best_us(wf, number, repeat), best_us(tf, number, repeat)
            fwd.append((w / t, name))
            line = f"{name:40s} {w:7.2f} {t:8.2f} {w / t:6.2f}"
            if diff:
                wb_, tb = best_us(_backward_of(wf), number // 2, repeat), best_us(_backward_of(tf), number // 2, repeat)
                both.append((wb_ / tb, name))
                line += f"   {wb_:10.2f} {tb:7.2f} {wb_ / tb:6.2f}"
            print(line, flush=True)
    for label, rs in (("recorded forward", fwd), ("fwd+bwd", both)):
        if not rs:
            continue
        ratios = [r for r, _ in rs]
        over2 = sorted((r, n) for r, n in rs if r > 2)
        print(f"{label}: {len(rs)} rows, median ratio {statistics.median(ratios):.2f}, "
              f"{sum(r > 3 for r in ratios)} above 3x, {len(over2)} above 2x"
              + (f" ({', '.join(f'{n} {r:.1f}' for r, n in reversed(over2))})" if over2 else ""))


if __name__ == "__main__":
    main()
