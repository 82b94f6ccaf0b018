"""Training-step time of workbench against PyTorch CPU on the same models, one thread each.

    python benchmarks/train_cpu.py [--steps N] [--rounds R] [--only mlp,cnn,gpt,wide]

Models (issue 4): the digits MLP (64-256-256-10, batch 64; target within 1.2x of PyTorch), the digits
CNN (conv3x3 16, ReLU, conv3x3 32, ReLU, max-pool 2, linear 10 on 8x8 images, batch 64; within 2x), a
one-block GPT (d 128, 4 heads, seq 64, batch 16; within 2x), and a wide MLP (1024 wide, batch 512)
against the NumPy BLAS limit: the same matmuls (forward and both backward products per layer) timed
in raw NumPy, which is the ceiling for any NumPy-based framework (within 5%).

Times are process CPU time (one thread each, so this is the step's compute; wall-clock on a shared
machine swings with other jobs' load). A step is forward, loss, zero_grad, backward and an Adam step (plain SGD for the wide MLP, whose point
is the framework's overhead around matmuls; Adam's own element-wise passes would add ~7% there, in
any framework). Each model's two frameworks are timed
in alternating rounds and the median round is reported, so a noisy shared machine biases neither.
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


def mlp(nn):
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))


def cnn(nn):
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 4 * 4, 10))


WIDE = 1024
WIDE_LAYERS = 3


def wide(nn):
    layers = []
    for _ in range(WIDE_LAYERS - 1):
        layers += [nn.Linear(WIDE, WIDE), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(WIDE, WIDE))


VOCAB, CTX, D, HEADS = 65, 64, 128, 4


def gpt(nn):
    lib = torch if nn is torch.nn else wb

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(VOCAB, D)
            self.pos = nn.Embedding(CTX, D)
            self.block = nn.TransformerEncoderLayer(D, HEADS, 4 * D, dropout=0.0, activation="gelu",
                                                    batch_first=True, norm_first=True)
            self.norm = nn.LayerNorm(D)
            self.head = nn.Linear(D, VOCAB)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(CTX), persistent=False)

        def forward(self, idx):
            h = self.tok(idx) + self.pos(lib.arange(idx.shape[1]))
            h = self.block(h, src_mask=self.mask, is_causal=True)
            return self.head(self.norm(h))

    return GPT()


def make_pair(build):
    torch.manual_seed(0)
    tm = build(torch.nn)
    wm = build(wb.nn)
    wm.load_state_dict({k: wb.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    return tm, wm


def stepper(lib, model, x, y, loss_kind, optimizer="Adam"):
    opt = getattr(lib.optim, optimizer)(model.parameters(), lr=1e-3)
    nn = lib.nn
    loss_fn = nn.MSELoss() if loss_kind == "mse" else nn.CrossEntropyLoss()
    vocab = VOCAB

    def step():
        out = model(x)
        if loss_kind == "seq":
            out = out.reshape(-1, vocab)
        loss = loss_fn(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def time_pair(fns, steps, rounds):
    for f in fns:
        for _ in range(3):
            f()
    per = [[] for _ in fns]
    for _ in range(rounds):
        for i, f in enumerate(fns):
            t = time.process_time()
            for _ in range(steps):
                f()
            per[i].append((time.process_time() - t) / steps)
    return [statistics.median(p) for p in per]


def numpy_wide_limit():
    """The same matmuls as one wide-MLP step, in raw float32 NumPy: per layer X@W^T, dY^T@X and dY@W
    (the last one skipped for the first layer, whose input needs no gradient)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((512, WIDE)).astype(np.float32)
    ws = [rng.standard_normal((WIDE, WIDE)).astype(np.float32) for _ in range(WIDE_LAYERS)]

    def step():
        h = x
        acts = []
        for w in ws:
            acts.append(h)
            h = h @ w.T
        g = h
        for i, (w, a) in enumerate(zip(reversed(ws), reversed(acts))):
            g.T @ a
            if i < len(ws) - 1:
                g = g @ w

    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="mlp,cnn,gpt,wide", help="comma-separated subset of mlp, cnn, gpt, wide")
    args = ap.parse_args()
    only = set(args.only.split(","))
    rng = np.random.default_rng(0)
    cases = []
    xs = rng.standard_normal((64, 64)).astype(np.float32)
    ys = rng.integers(0, 10, 64)
    cases.append(("mlp", "digits MLP 64-256-256-10, batch 64", mlp, xs, ys, "ce", 1.2))
    xi = rng.standard_normal((64, 1, 8, 8)).astype(np.float32)
    cases.append(("cnn", "digits CNN conv16-conv32-pool-fc, batch 64", cnn, xi, ys, "ce", 2.0))
    xt = rng.integers(0, VOCAB, (16, CTX))
    yt = rng.integers(0, VOCAB, 16 * CTX)
    cases.append(("gpt", "one-block GPT d128 h4 seq64, batch 16", gpt, xt, yt, "seq", 2.0))
    xw = rng.standard_normal((512, WIDE)).astype(np.float32)
    yw = rng.standard_normal((512, WIDE)).astype(np.float32)
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cpus, 1 thread, process CPU time; torch {torch.__version__}, numpy {np.__version__}")
    print(f"{'model':46s} {'workbench ms':>13s} {'torch ms':>9s} {'ratio':>6s} {'target':>7s}")
    for key, name, build, x, y, kind, target in cases:
        if key not in only:
            continue
        tm, wm = make_pair(build)
        tstep = stepper(torch, tm, torch.from_numpy(x), torch.from_numpy(y), kind)
        wstep = stepper(wb, wm, wb.tensor(x), wb.tensor(y), kind)
        w, t = time_pair([wstep, tstep], args.steps, args.rounds)
        print(f"{name:46s} {w * 1e3:13.2f} {t * 1e3:9.2f} {w / t:6.2f} {target:6.1f}x")
    if "wide" not in only:
        return
    tm, wm = make_pair(wide)
    wstep = stepper(wb, wm, wb.tensor(xw), wb.tensor(yw), "mse", "SGD")
    tstep = stepper(torch, tm, torch.from_numpy(xw), torch.from_numpy(yw), "mse", "SGD")
    w, lim, t = time_pair([wstep, numpy_wide_limit(), tstep], max(2, args.steps // 2), args.rounds)
    print(f"{'wide MLP 3x1024, batch 512 (vs NumPy matmuls)':46s} {w * 1e3:13.2f} {lim * 1e3:9.2f} {w / lim:6.2f} "
          f"{1.05:6.2f}x   (torch {t * 1e3:.2f} ms)")


if __name__ == "__main__":
    main()
