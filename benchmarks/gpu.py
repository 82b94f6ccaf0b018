"""GPU benchmark (make bench-gpu): training steps of the nn-issue models on "cuda" against PyTorch CUDA,
plus the achieved fraction of the card's matmul rate and memory bandwidth, all measured in one run.

    python benchmarks/gpu.py [--json PATH] [--smoke]

Prints one line per measurement, then a Markdown table for benchmarks/RESULTS.md with each target's
verdict (training steps within 1.5x of PyTorch CUDA, fused kernels at least 70 % of the bandwidth of a
device copy). A measurement that fails is reported and the rest still run; the exit status is non-zero
if any failed. Needs CuPy and a CUDA build of PyTorch.

``--smoke`` runs every measurement once, on tiny sizes, against the NumPy-backed fake cupy and PyTorch
on the CPU: CPU CI runs it (tests/kernels/test_gpu_benchmark.py), so the rare real GPU run does not
die of a typo. Its figures mean nothing.
"""
import argparse
import contextlib
import json
import os
import platform
import sys
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

STEP_TARGET = 1.5  # workbench step time / PyTorch CUDA step time
KERNEL_TARGET = 0.70  # bytes moved per second / a device copy's


def _timeit(fn, sync, warmup=3, reps=20, rounds=3):
    for _ in range(warmup):
        fn()
    sync()
    best = float("inf")
    for _ in range(rounds):
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

    return {"mlp": MLP, "cnn": CNN, "gpt": GPT}


def _batch(lib, kind, device):
    if kind == "mlp":
        return lib.randn(64, 64).to(device), lib.randint(0, 10, (64,)).to(device)
    if kind == "cnn":
        return lib.randn(64, 1, 8, 8).to(device), lib.randint(0, 10, (64,)).to(device)
    return lib.randint(0, 96, (16, 64)).to(device), lib.randint(0, 96, (16, 64)).to(device)


def train_step_time(lib, device, kind, sync, timeit):
    lib.manual_seed(0)
    nn, F = lib.nn, lib.nn.functional
    model = _models(nn, F)[kind]().to(device)
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    x, y = _batch(lib, kind, device)

    def step():
        opt.zero_grad(set_to_none=True)
        out = model(x)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()

    return timeit(step, sync)


def cudagraph_forward(wb, sync, timeit):
    """The digits MLP's forward (no_grad) compiled, replayed plainly and through its CUDA graph
    (mode="reduce-overhead"): both times, after checking the graph was captured and gives the replay's values."""
    wb.manual_seed(0)
    model = _models(wb.nn, wb.nn.functional)["mlp"]().to("cuda")
    x, _ = _batch(wb, "mlp", "cuda")
    plain, graphed = wb.compile(model), wb.compile(model, mode="reduce-overhead")
    with wb.no_grad():
        for _ in range(3):
            a, b = plain(x), graphed(x)
        g = wb.compiler.explain(graphed).programs[0].cuda_graph
        if g.reason is not None or g.captures != 1:
            raise RuntimeError(f"the forward was not captured: {g.describe()}")
        diff = float(abs(a - b).max())
        if diff > 1e-5:
            raise RuntimeError(f"the CUDA graph's output differs from the replay's by {diff}")
        return {"replay_ms": timeit(lambda: plain(x), sync) * 1e3, "graph_ms": timeit(lambda: graphed(x), sync) * 1e3,
                "launches": g.launches}


class Run:
    """Collects figures and failures; one failing measurement does not stop the others."""

    def __init__(self):
        self.results = {}
        self.failed = []

    @contextlib.contextmanager
    def measuring(self, name):
        try:
            yield
        except Exception:
            self.failed.append(name)
            self.results[name] = {"error": traceback.format_exc(limit=3)}
            print(f"{name}: FAILED\n{traceback.format_exc()}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes on the fake cupy and CPU PyTorch (CI)")
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError as e:
        sys.exit(f"bench-gpu needs PyTorch: {e}")
    if args.smoke:
        from workbench.testing import fake_cupy

        cp = fake_cupy.install()
        tdev = "cpu"

        def timeit(fn, sync, **kw):
            return _timeit(fn, sync, warmup=1, reps=1, rounds=1)
    else:
        try:
            import cupy as cp
        except ImportError as e:
            sys.exit(f"bench-gpu needs CuPy: {e}")
        if not torch.cuda.is_available():
            sys.exit("bench-gpu needs a CUDA GPU visible to PyTorch")
        tdev = "cuda"
        timeit = _timeit
    import workbench as wb
    from workbench._backend import kernels as K

    run = Run()
    res = run.results
    res["device"] = torch.cuda.get_device_name(0) if tdev == "cuda" else "fake cupy (smoke run)"
    res["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    res["versions"] = {"python": platform.python_version(), "torch": torch.__version__,
                       "cupy": getattr(cp, "__version__", "fake"), "numpy": np.__version__}
    print(f"{res['device']}, {res['date']}, {res['versions']}", flush=True)
    wsync = wb.cuda.synchronize
    tsync = torch.cuda.synchronize if tdev == "cuda" else (lambda: None)

    for kind in ("mlp", "cnn", "gpt"):
        with run.measuring(f"{kind}_step"):
            w = train_step_time(wb, "cuda", kind, wsync, timeit)
            t = train_step_time(torch, tdev, kind, tsync, timeit)
            res[f"{kind}_step"] = {"workbench_ms": w * 1e3, "torch_ms": t * 1e3, "ratio": w / t}
            print(f"{kind:4s} train step: workbench {w * 1e3:8.3f} ms  torch {t * 1e3:8.3f} ms  ratio {w / t:5.2f}x",
                  flush=True)

    with run.measuring("cudagraph_forward"):
        res["cudagraph_forward"] = cudagraph_forward(wb, wsync, timeit)
        print(f"mlp compiled forward: replay {res['cudagraph_forward']['replay_ms']:.3f} ms, CUDA graph "
              f"{res['cudagraph_forward']['graph_ms']:.3f} ms", flush=True)

    # matmul throughput: workbench (CuPy's cuBLAS) against PyTorch's rate, the card's practical peak
    n = 64 if args.smoke else 8192
    rng = np.random.default_rng(0)
    for name, tdt, wdt in (("fp32", torch.float32, wb.float32), ("bf16", torch.bfloat16, wb.bfloat16)):
        with run.measuring(f"matmul_{name}"):
            flops = 2 * n ** 3
            ta, tb = (torch.randn(n, n, device=tdev, dtype=tdt) for _ in range(2))
            r = res[f"matmul_{name}"] = {"torch_tflops": flops / timeit(lambda: ta @ tb, tsync, reps=10) / 1e12}
            try:
                a, b = (wb.randn(n, n, device="cuda", dtype=wdt) for _ in range(2))
                r["workbench_tflops"] = flops / timeit(lambda: a @ b, wsync, reps=10) / 1e12
                r["fraction_of_torch"] = r["workbench_tflops"] / r["torch_tflops"]
            except Exception as e:  # CuPy may have no bfloat16 arrays: say so, keep PyTorch's rate
                r["workbench"] = f"unsupported: {type(e).__name__}: {str(e)[:120]}"
            print(f"matmul {name}: {res[f'matmul_{name}']}", flush=True)

    # memory bandwidth: a device copy as the ceiling, then each fused kernel (bytes it must move / time)
    rows, cols = (64, 128) if args.smoke else (8192, 4096)
    dsync = cp.cuda.Device().synchronize
    with run.measuring("kernels"):
        x = cp.asarray(rng.standard_normal((rows, cols), dtype=np.float32))
        g = cp.asarray(rng.standard_normal((rows, cols), dtype=np.float32))
        nbytes = x.nbytes
        peak = 2 * nbytes / timeit(lambda: x.copy(), dsync)
        res["copy_GBps"] = peak / 1e9
        print(f"device copy        {peak / 1e9:8.1f} GB/s", flush=True)
        w = cp.ones(cols, cp.float32)
        b = cp.zeros(cols, cp.float32)
        t = cp.asarray(rng.integers(0, cols, rows))
        y = K.softmax(cp, x)
        _, mean, rstd = K.layer_norm(cp, x, w, b, 1e-5)
        _, lse = K.cross_entropy(cp, x, t)
        grow = cp.ones(rows, cp.float32)
        n_p, p_size = (4, 1 << 10) if args.smoke else (32, 1 << 20)
        ps, gs, m, v = ([cp.asarray(rng.standard_normal(p_size, dtype=np.float32)) for _ in range(n_p)]
                        for _ in range(4))
        v = [abs(a) for a in v]
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
            # read p, g, m, v and write p, m, v: seven passes over every parameter
            "adam_step": (lambda: K.adam_step(cp, ps, gs, m, v, None, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                                              weight_decay=0.01, step=1, decoupled=True), 7 * n_p * p_size * 4),
        }
    for name, (fn, moved) in (kernels.items() if "kernels" not in run.failed else ()):
        with run.measuring(name):
            bw = moved / timeit(fn, dsync)
            res[name] = {"GBps": bw / 1e9, "fraction_of_copy": bw / peak}
            print(f"{name:18s} {bw / 1e9:8.1f} GB/s  {100 * bw / peak:5.1f}% of copy bandwidth", flush=True)

    print()
    print(table(res))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)
    if run.failed:
        sys.exit(f"GPU benchmark: these measurements failed: {run.failed}")


def table(res):
    """The figures as the Markdown rows benchmarks/RESULTS.md keeps, with each target's verdict."""
    def verdict(ok):
        return "met" if ok else "missed"

    lines = [f"{res['device']}, {res['date']}, {res['versions']}", "",
             "| measurement | workbench | PyTorch / ceiling | ratio | target |", "|---|---:|---:|---:|---|"]
    for kind in ("mlp", "cnn", "gpt"):
        r = res.get(f"{kind}_step", {})
        if "ratio" in r:
            lines.append(f"| {kind} train step | {r['workbench_ms']:.3f} ms | {r['torch_ms']:.3f} ms | "
                         f"{r['ratio']:.2f} | ≤ {STEP_TARGET} — {verdict(r['ratio'] <= STEP_TARGET)} |")
    for name in ("fp32", "bf16"):
        r = res.get(f"matmul_{name}", {})
        if "fraction_of_torch" in r:
            lines.append(f"| matmul {name} 8192³ | {r['workbench_tflops']:.1f} TFLOP/s | {r['torch_tflops']:.1f} "
                         f"TFLOP/s | {r['fraction_of_torch']:.2f} | — |")
        elif "torch_tflops" in r:
            lines.append(f"| matmul {name} 8192³ | {r.get('workbench', '?')} | {r['torch_tflops']:.1f} TFLOP/s | | — |")
    if "copy_GBps" in res:
        lines.append(f"| device copy (the bandwidth ceiling) | | {res['copy_GBps']:.0f} GB/s | | |")
    r = res.get("cudagraph_forward", {})
    if "graph_ms" in r:
        lines.append(f"| mlp compiled forward, CUDA graph / replay | {r['graph_ms']:.3f} ms | {r['replay_ms']:.3f} ms | "
                     f"{r['graph_ms'] / r['replay_ms']:.2f} | < 1 (fewer launches) — "
                     f"{verdict(r['graph_ms'] < r['replay_ms'])} |")
    for name, r in res.items():
        if isinstance(r, dict) and "fraction_of_copy" in r:
            f = r["fraction_of_copy"]
            lines.append(f"| {name} | {r['GBps']:.0f} GB/s | | {f:.2f} | ≥ {KERNEL_TARGET} — "
                         f"{verdict(f >= KERNEL_TARGET)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
