"""GPU benchmark (make bench-gpu): training steps of the nn-issue models on "cuda" against PyTorch CUDA,
plus the achieved fraction of the card's matmul rate and memory bandwidth, all measured in one run.

Prints one line per measurement and a final table; with --json PATH also writes the figures.
Needs CuPy and a CUDA build of PyTorch on the machine; exits with a message when either is missing.
"""
import argparse
import json
import sys
import time


def _timeit(fn, sync, warmup=3, reps=20):
    for _ in range(warmup):
        fn()
    sync()
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t) / reps)
    return best


def _models(nn, F):
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))

        def forward(self, x):
            return self.net(x)

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(1, 16, 3, padding=1)
            self.c2 = nn.Conv2d(16, 32, 3, padding=1)
            self.fc = nn.Linear(32 * 4 * 4, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.c2(F.relu(self.c1(x)))), 2)
            return self.fc(x.flatten(1))

    class GPT(nn.Module):
        def __init__(self, vocab=96, d=128, heads=4, seq=64):
            super().__init__()
            self.tok = nn.Embedding(vocab, d)
            self.pos = nn.Embedding(seq, d)
            self.block = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True, norm_first=True,
                                                    activation="gelu")
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab)
            self.seq = seq

        def forward(self, idx):
            t = idx.shape[1]
            h = self.tok(idx) + self.pos.weight[:t]
            causal = h.new_ones(t, t).tril() == 0  # True above the diagonal: masked out
            h = self.block(h, src_mask=causal, is_causal=True)
            return self.head(self.ln(h))

    return MLP, CNN, GPT


def train_step_time(lib, device, model_cls, make_batch, loss_fn, sync):
    lib.manual_seed(0)
    model = model_cls().to(device)
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    x, y = make_batch(lib, device)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return _timeit(step, sync)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    try:
        import cupy as cp
        import torch
    except ImportError as e:
        sys.exit(f"bench-gpu needs CuPy and PyTorch: {e}")
    if not torch.cuda.is_available():
        sys.exit("bench-gpu needs a CUDA GPU visible to PyTorch")
    import workbench as wb

    results = {"device": torch.cuda.get_device_name(0), "date": time.strftime("%Y-%m-%d")}
    wsync = wb.cuda.synchronize
    tsync = torch.cuda.synchronize

    def batches(kind):
        def mk(lib, dev):
            if kind == "mlp":
                return lib.randn(64, 64).to(dev), lib.randint(0, 10, (64,)).to(dev)
            if kind == "cnn":
                return lib.randn(64, 1, 8, 8).to(dev), lib.randint(0, 10, (64,)).to(dev)
            return lib.randint(0, 96, (16, 64)).to(dev), lib.randint(0, 96, (16, 64)).to(dev)

        return mk

    for kind, idx in (("mlp", 0), ("cnn", 1), ("gpt", 2)):
        ws, ts = [], []
        for lib, sync, store in ((wb, wsync, ws), (torch, tsync, ts)):
            nn, F = lib.nn, lib.nn.functional
            cls = _models(nn, F)[idx]
            loss = (lambda o, y, F=F: F.cross_entropy(o.reshape(-1, o.shape[-1]), y.reshape(-1)))
            store.append(train_step_time(lib, "cuda", cls, batches(kind), loss, sync))
        results[f"{kind}_step_ms"] = {"workbench": ws[0] * 1e3, "torch": ts[0] * 1e3, "ratio": ws[0] / ts[0]}
        print(f"{kind:4s} train step: workbench {ws[0]*1e3:8.3f} ms  torch {ts[0]*1e3:8.3f} ms  ratio {ws[0]/ts[0]:5.2f}x",
              flush=True)

    # matmul throughput: workbench (CuPy cuBLAS) vs the card, fp32 and bf16 via torch's rate as the card's practical peak
    n = 8192
    for name, tdt in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        ta, tb = torch.randn(n, n, device="cuda", dtype=tdt), torch.randn(n, n, device="cuda", dtype=tdt)
        t_torch = _timeit(lambda: ta @ tb, tsync, reps=10)
        flops = 2 * n ** 3
        entry = {"torch_tflops": flops / t_torch / 1e12}
        if name == "fp32":
            a, b = wb.randn(n, n, device="cuda"), wb.randn(n, n, device="cuda")
            t_wb = _timeit(lambda: a @ b, wsync, reps=10)
            entry["workbench_tflops"] = flops / t_wb / 1e12
            entry["fraction_of_torch"] = t_torch / t_wb
        results[f"matmul_{name}"] = entry
        print(f"matmul {name}: {entry}", flush=True)

    # memory bandwidth: a device copy, and the fused kernels (bytes moved / time)
    from workbench._backend import kernels as K

    x = cp.random.standard_normal((8192, 4096), dtype=cp.float32)
    g = cp.random.standard_normal((8192, 4096), dtype=cp.float32)
    nbytes = x.nbytes
    t_copy = _timeit(lambda: x.copy(), cp.cuda.Device().synchronize)
    peak = 2 * nbytes / t_copy
    results["copy_GBps"] = peak / 1e9
    w = cp.ones(4096, cp.float32)
    b = cp.zeros(4096, cp.float32)
    t = cp.asarray(cp.random.randint(0, 4096, 8192), dtype=cp.int64)
    y = K.softmax(cp, x)
    _, mean, rstd = K.layer_norm(cp, x, w, b, 1e-5)
    _, lse = K.cross_entropy(cp, x, t)
    grow = cp.ones(8192, cp.float32)
    kernels = {
        "softmax_fwd": (lambda: K.softmax(cp, x), 2 * nbytes),
        "softmax_bwd": (lambda: K.softmax_backward(cp, y, g), 3 * nbytes),
        "log_softmax_fwd": (lambda: K.softmax(cp, x, True), 2 * nbytes),
        "cross_entropy_fwd": (lambda: K.cross_entropy(cp, x, t), nbytes),
        "cross_entropy_bwd": (lambda: K.cross_entropy_backward(cp, x, t, lse, grow), 2 * nbytes),
        "layer_norm_fwd": (lambda: K.layer_norm(cp, x, w, b, 1e-5), 2 * nbytes),
        "layer_norm_bwd": (lambda: K.layer_norm_backward(cp, g, x, mean, rstd, w), 5 * nbytes),
        "gelu_fwd": (lambda: K.gelu(cp, x), 2 * nbytes),
        "gelu_bwd": (lambda: K.gelu_backward(cp, g, x), 3 * nbytes),
    }
    for name, (fn, moved) in kernels.items():
        dt = _timeit(fn, cp.cuda.Device().synchronize)
        results[name] = {"GBps": moved / dt / 1e9, "fraction_of_copy": moved / dt / peak}
        print(f"{name:18s} {moved / dt / 1e9:8.1f} GB/s  {100 * moved / dt / peak:5.1f}% of copy bandwidth", flush=True)
    ps = [cp.random.standard_normal(1 << 20, dtype=cp.float32) for _ in range(32)]
    gs = [cp.random.standard_normal(1 << 20, dtype=cp.float32) for _ in range(32)]
    st = [[cp.zeros(1 << 20, cp.float32) for _ in ps] for _ in range(3)]
    dt = _timeit(lambda: K.adam_step(cp, ps, gs, *st, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01,
                                     step=1, decoupled=True), cp.cuda.Device().synchronize)
    moved = 7 * 32 * (1 << 20) * 4
    results["adam_step"] = {"GBps": moved / dt / 1e9, "fraction_of_copy": moved / dt / peak}
    print(f"{'adam_step':18s} {moved / dt / 1e9:8.1f} GB/s  {100 * moved / dt / peak:5.1f}% of copy bandwidth")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
