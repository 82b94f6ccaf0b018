"""What the live gradient monitor costs a training step.

    python benchmarks/monitor_overhead.py [--steps 3000] [--block 10] [--optim adam|sgd] [--device cpu|cuda]

The digits MLP training step of the benchmarks (64-256-256-10, batch 64, random data, cross-entropy;
Adam lr 1e-3 as in train_cpu.py, or ``--optim sgd``: SGD with momentum, a cheaper step, so a larger
ratio) timed with and without ``wb.viz.watch(model)`` attached (default settings: every step,
histograms on). Blocks of steps alternate between the two (ABBA, so drift and order hit both alike);
the figure is the fastest block of each kind, and the median over adjacent pairs of blocks of their
ratio is printed too, in process CPU time on the CPU (the monitor's flusher thread counts) and wall
time after a synchronize on a GPU. ``--steps`` is per kind. Target: the monitored step is at most 5%
slower (ratio <= 1.05).
"""
import argparse
import os
import statistics
import sys
import time

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import workbench as wb  # noqa: E402


class _Linear:
    def __init__(self, i, o):
        self.weight = (wb.randn(o, i) * (2.0 / i) ** 0.5).requires_grad_()
        self.bias = wb.zeros(o).requires_grad_()

    def __call__(self, x):
        return x @ self.weight.t() + self.bias


class _MLP:
    """Used only when workbench.nn is not available: the same layers, named like nn.Sequential's."""

    def __init__(self, dev):
        self.layers = [_Linear(64, 256), _Linear(256, 256), _Linear(256, 10)]
        for lin in self.layers:
            lin.weight = lin.weight.detach().to(dev).requires_grad_()
            lin.bias = lin.bias.detach().to(dev).requires_grad_()

    def named_parameters(self):
        for k, lin in zip((0, 2, 4), self.layers):
            yield f"{k}.weight", lin.weight
            yield f"{k}.bias", lin.bias

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def __call__(self, x):
        a, b, c = self.layers
        return c(wb.relu(b(wb.relu(a(x)))))


def build(dev, optim="adam"):
    try:
        nn = wb.nn
        model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).to(dev)
        loss_fn = nn.CrossEntropyLoss()
    except (AttributeError, ImportError):
        model = _MLP(dev)
        loss_fn = None
    try:
        if optim == "adam":
            opt = wb.optim.Adam(model.parameters(), lr=1e-3)
        else:
            opt = wb.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    except (AttributeError, ImportError):
        opt = None
    return model, loss_fn, opt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--optim", choices=("adam", "sgd"), default="adam")
    ap.add_argument("--block", type=int, default=10)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    wb.manual_seed(0)
    model, loss_fn, opt = build(args.device, args.optim)
    x = wb.randn(64, 64).to(args.device)
    target = wb.randint(0, 10, (64,)).to(args.device)
    onehot = wb.zeros(64, 10).to(args.device)
    onehot[wb.arange(64).to(args.device), target] = 1.0

    def step():
        if opt is not None:
            opt.zero_grad()
        else:
            for p in model.parameters():
                p.grad = None
        out = model(x)
        loss = loss_fn(out, target) if loss_fn is not None else ((out - onehot) ** 2).mean()
        loss.backward()
        if opt is not None:
            opt.step()
        else:
            with wb.no_grad():
                for p in model.parameters():
                    p -= 0.01 * p.grad

    # CPU time of the process (the monitor's flusher thread included) on a CPU run: on a shared
    # machine wall time mostly measures the neighbours; on a GPU, wall time after a synchronize
    clock = time.process_time if args.device == "cpu" else time.perf_counter

    def block():
        t = clock()
        for _ in range(args.block):
            step()
        if args.device != "cpu":
            wb.cuda.synchronize()
        return (clock() - t) / args.block

    for _ in range(20):
        step()  # warm up
    plain, watched = [], []
    mon = wb.viz.watch(model, display=False)  # attached once, as in a real run; paused for the plain blocks
    for _ in range(5):
        step()
    for k in range(args.steps // args.block):
        for on in ((False, True) if k % 2 == 0 else (True, False)):
            (mon.resume if on else mon.pause)()
            (watched if on else plain).append(block())
    mon.detach(display=False)
    a, b = min(plain), min(watched)  # the least disturbed block of each (the machine may be shared)
    pair = statistics.median(w / p for p, w in zip(plain, watched))
    print(f"MLP 64-256-256-10, batch 64, {args.optim}, {args.device}: {a * 1e3:.3f} ms/step plain, {b * 1e3:.3f} ms/step with "
          f"wb.viz.watch (every step, histograms) -> ratio {b / a:.3f} (target <= 1.05); median of paired blocks "
          f"{pair:.3f}")
    print(f"monitor history: {len(mon.history['step'])} steps x {len(mon.layers)} layers; histograms every "
          f"{mon.stats._hist_every} step(s), weight norms every {mon.stats._detail_gap} (auto)")


if __name__ == "__main__":
    main()
