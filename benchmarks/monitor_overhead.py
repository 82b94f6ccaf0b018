"""What the live gradient monitor costs a training step.

    python benchmarks/monitor_overhead.py [--steps 300] [--device cpu|cuda]

The MLP training step of the benchmarks (64-256-256-10, batch 64, random data, cross-entropy or MSE,
SGD with momentum) timed with and without ``wb.viz.watch(model)`` attached (default settings: every
step, histograms on). Blocks of steps alternate between the two so drift hits both alike; the figure
is the fastest block of each kind (medians printed too), in process CPU time on the CPU (the monitor's
flusher thread counts) and wall time after a synchronize on a GPU. Target: the monitored step is at most 5% slower (ratio <= 1.05).
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


def build(dev):
    try:
        nn = wb.nn
        model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).to(dev)
        loss_fn = nn.CrossEntropyLoss()
    except (AttributeError, ImportError):
        model = _MLP(dev)
        loss_fn = None
    try:
        opt = wb.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    except (AttributeError, ImportError):
        opt = None
    return model, loss_fn, opt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--block", type=int, default=25)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    wb.manual_seed(0)
    model, loss_fn, opt = build(args.device)
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
    for k in range(2 * (args.steps // args.block)):
        if k % 2 == 0:
            mon.pause()
            plain.append(block())
        else:
            mon.resume()
            watched.append(block())
    mon.detach(display=False)
    a, b = min(plain), min(watched)  # the least disturbed block of each (the machine may be shared)
    am, bm = statistics.median(plain), statistics.median(watched)
    print(f"MLP 64-256-256-10, batch 64, {args.device}: {a * 1e3:.3f} ms/step plain, {b * 1e3:.3f} ms/step with "
          f"wb.viz.watch (every step, histograms) -> ratio {b / a:.3f} (target <= 1.05); "
          f"medians {am * 1e3:.3f} / {bm * 1e3:.3f} ms -> {bm / am:.3f}")
    print(f"monitor history: {len(mon.history['step'])} steps x {len(mon.layers)} layers; histograms every "
          f"{mon._hist_every} step(s) (auto)")


if __name__ == "__main__":
    main()
