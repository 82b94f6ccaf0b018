"""The workloads of issue 18 written as users write them, workbench eager against PyTorch eager, one thread.

    python benchmarks/user_forms.py [--rounds R] [--only chain,tiny,raw,inplace,mlp,cnn,gpt,rnn,wide,memory]

Each program is one function body run by both libraries (``lib`` is ``torch`` or ``workbench``), on the
same weights and batches; the two take turns in every round (process CPU time). Figures: median step
time per library over the rounds, and the median and range of the per-round ratios.

* chain   10-op chain (mul, add, tanh, mul, sub, sin, mul, add, exp, sum) fwd+bwd on 4x4    <= 1.0x
* tiny    MLP 64-16-10 (modules), batch 8, MSE, SGD                                          <= 1.0x
* raw     the tiny and the digits MLP as lecture notebooks write them: raw leaf tensors, x @ w + b,
          .relu(), cross-entropy, p -= lr * p.grad under no_grad                          <= 1.0x / 0.8x
* inplace in-place forms on 1M float32 elements with nothing recording: x += g, x.mul_(0.9),
          p.add_(g, alpha=-0.01), and a loop of element stores x[i] = v                   <= 1.5x each
* mlp     digits MLP 64-256-256-10 (modules), batch 64, cross-entropy, Adam                  <= 0.8x
          (also reported: modules with SGD momentum 0.9, and functional -- F.linear and F.relu on raw
          parameter tensors -- with Adam and with SGD momentum)
* cnn     digits CNN conv3x3 16, conv3x3 32, max-pool 2, linear 10 on 8x8, batch 64, Adam     <= 1.3x
* gpt     one GPT block (d 128, 4 heads, seq 64, batch 16, Adam), in three forms:           <= 1.5x each
          modules (TransformerEncoderLayer, exact GELU), modules with tanh GELU, functional (raw
          parameter tensors: F.embedding, F.layer_norm, an additive causal mask, softmax,
          F.gelu(approximate="tanh"), F.cross_entropy) and mixed (nn.Linear/nn.LayerNorm modules with
          functional attention and GELU)
* rnn     a character model (embedding 65 -> 32, recurrent 128, linear head; batch 16 x 32 steps, CE, Adam)
          in four forms: nn.LSTM, nn.GRU, an LSTMCell / GRUCell called in a Python loop, and the LSTM a
          lecture writes by hand (x @ W + h @ U + b, gates.chunk(4, 1), sigmoid and tanh)   <= 1.5x each
* wide    MLP 3 x 1024, batch 512, SGD: achieved GFLOP/s over NumPy's GEMM rate on the same shapes >= 0.9
* memory  peak resident memory of one GPT / digits-CNN training step above the memory held before it
          (fresh process per library and form)                                               <= PyTorch

Memory method: in a child process with both libraries imported, the model and batch are built and one
warm-up step runs; then, per measured step, ``gc.collect()``, glibc's ``malloc_trim(0)`` (so memory the
allocator kept from the previous step must be faulted in again, as on a first step), Linux's peak-RSS
reset (``5`` into ``/proc/self/clear_refs``), VmRSS read as the baseline, the step, and VmHWM read: the
step's peak is VmHWM - baseline. Median of 5 steps. It counts everything resident: arrays, the tape,
saved tensors, optimizer temporaries, allocator slack.
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import ctypes  # noqa: E402
import gc  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import workbench as wb  # noqa: E402
from benchmarks.train_cpu import WIDE, cnn, make_pair, mlp, numpy_wide_limit, wide  # noqa: E402

torch.set_num_threads(1)
VOCAB, CTX, D, HEADS = 65, 64, 128, 4


# --- the programs ----------------------------------------------------------------------------------
def chain_program(lib, rng):
    x, w = (lib.tensor(rng.standard_normal((4, 4)).astype(np.float32) * 0.5, requires_grad=True) for _ in range(2))
    b = lib.tensor(rng.standard_normal((4, 4)).astype(np.float32) * 0.5)

    def step():
        x.grad = w.grad = None
        y = ((((x * w + b).tanh() * x - w).sin() * b + x).exp()).sum()
        y.backward()

    return step


def module_step(lib, model, x, y, loss, optimizer="Adam", lr=1e-3, **opt_kw):
    opt = getattr(lib.optim, optimizer)(model.parameters(), lr=lr, **opt_kw)
    F = lib.nn.functional

    def step():
        opt.zero_grad()
        out = model(x)
        l = F.mse_loss(out, y) if loss == "mse" else F.cross_entropy(out.reshape(-1, out.shape[-1]), y)
        l.backward()
        opt.step()

    return step


def mlp_functional_step(lib, model, x, y, optimizer="Adam", lr=1e-3, **opt_kw):
    """The digits MLP as a user writes it without modules: F.linear and F.relu on raw leaf tensors (copies
    of ``model``'s weights)."""
    F = lib.nn.functional
    w1, b1, w2, b2, w3, b3 = (lib.tensor(p.detach().numpy().copy(), requires_grad=True) for p in model.parameters())
    opt = getattr(lib.optim, optimizer)([w1, b1, w2, b2, w3, b3], lr=lr, **opt_kw)

    def step():
        opt.zero_grad()
        h = F.relu(F.linear(F.relu(F.linear(x, w1, b1)), w2, b2))
        F.cross_entropy(F.linear(h, w3, b3), y).backward()
        opt.step()

    return step


def raw_tensor_step(lib, model, x, y, lr=0.01):
    """The MLP as a lecture notebook writes it: raw leaf tensors (copies of ``model``'s weights, transposed to
    (in, out)), ``x @ w + b``, ``.relu()``, cross-entropy, and the update by hand under ``no_grad``."""
    ps = [lib.tensor((p.detach().numpy().T if p.ndim == 2 else p.detach().numpy()).copy(), requires_grad=True)
          for p in model.parameters()]
    F = lib.nn.functional

    def step():
        h = x
        for i in range(0, len(ps) - 2, 2):
            h = (h @ ps[i] + ps[i + 1]).relu()
        loss = F.cross_entropy(h @ ps[-2] + ps[-1], y)
        for p in ps:
            p.grad = None
        loss.backward()
        with lib.no_grad():
            for p in ps:
                p -= lr * p.grad

    return step


def _inplace_form(body):
    """An in-place form on 1M float32 elements (no grad), as a user's loop or hand-written update writes it."""
    def make(lib):
        rng = np.random.default_rng(0)
        x, g = (lib.tensor(rng.standard_normal(1 << 20).astype(np.float32)) for _ in range(2))
        return lambda: body(lib, x, g)
    return make


def _stores(lib, x, g):
    for i in range(0, 1 << 20, 1 << 12):  # 256 stores of one element
        x[i] = 0.5


INPLACE_FORMS = [
    ("in place, 1M float32: x += g", _inplace_form(lambda lib, x, g: x.__iadd__(g)), 20),
    ("in place, 1M float32: x.mul_(0.9)", _inplace_form(lambda lib, x, g: x.mul_(0.9)), 20),
    ("in place, 1M float32: p.add_(g, alpha=-0.01)", _inplace_form(lambda lib, x, g: x.add_(g, alpha=-0.01)), 20),
    ("in place, 1M float32: 256 x[i] = v stores", _inplace_form(_stores), 20),
]


def gpt_modules(nn, approximate):
    lib = torch if nn is torch.nn else wb

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(VOCAB, D)
            self.pos = nn.Embedding(CTX, D)
            act = "gelu" if approximate == "none" else (lambda t: lib.nn.functional.gelu(t, approximate="tanh"))
            self.block = nn.TransformerEncoderLayer(D, HEADS, 4 * D, dropout=0.0, activation=act, batch_first=True,
                                                    norm_first=True)
            self.norm = nn.LayerNorm(D)
            self.head = nn.Linear(D, VOCAB)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(CTX), persistent=False)

        def forward(self, idx):
            h = self.tok(idx) + self.pos(lib.arange(idx.shape[1]))
            h = self.block(h, src_mask=self.mask, is_causal=True)
            return self.head(self.norm(h))

    return GPT()


def gpt_functional_params(rng):
    """The weights of the functional block, as NumPy arrays (shared by both libraries)."""
    def w(*shape, scale=0.02):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    return {"tok": w(VOCAB, D), "pos": w(CTX, D), "ln1_w": np.ones(D, np.float32), "ln1_b": np.zeros(D, np.float32),
            "qkv": w(3 * D, D), "qkv_b": np.zeros(3 * D, np.float32), "proj": w(D, D), "proj_b": np.zeros(D, np.float32),
            "ln2_w": np.ones(D, np.float32), "ln2_b": np.zeros(D, np.float32), "fc": w(4 * D, D),
            "fc_b": np.zeros(4 * D, np.float32), "fc2": w(D, 4 * D), "fc2_b": np.zeros(D, np.float32),
            "lnf_w": np.ones(D, np.float32), "lnf_b": np.zeros(D, np.float32), "head": w(VOCAB, D),
            "head_b": np.zeros(VOCAB, np.float32)}


def attention(lib, h, qkv, bias, proj, proj_b, mask):
    F = lib.nn.functional
    B, T, _ = h.shape
    q, k, v = F.linear(h, qkv, bias).split(D, dim=-1)
    q, k, v = (t.reshape(B, T, HEADS, D // HEADS).transpose(1, 2) for t in (q, k, v))
    att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(D // HEADS) + mask, dim=-1)
    return F.linear((att @ v).transpose(1, 2).reshape(B, T, D), proj, proj_b)


def gpt_functional_step(lib, arrays, idx, tgt):
    F = lib.nn.functional
    p = {k: lib.tensor(v.copy(), requires_grad=True) for k, v in arrays.items()}
    opt = lib.optim.Adam(list(p.values()), lr=1e-3)
    mask = lib.triu(lib.full((CTX, CTX), float("-inf")), diagonal=1)

    def step():
        opt.zero_grad()
        x = F.embedding(idx, p["tok"]) + F.embedding(lib.arange(CTX), p["pos"])
        x = x + attention(lib, F.layer_norm(x, (D,), p["ln1_w"], p["ln1_b"]), p["qkv"], p["qkv_b"], p["proj"],
                          p["proj_b"], mask)
        hid = F.gelu(F.linear(F.layer_norm(x, (D,), p["ln2_w"], p["ln2_b"]), p["fc"], p["fc_b"]), approximate="tanh")
        x = x + F.linear(hid, p["fc2"], p["fc2_b"])
        logits = F.linear(F.layer_norm(x, (D,), p["lnf_w"], p["lnf_b"]), p["head"], p["head_b"])
        F.cross_entropy(logits.reshape(-1, VOCAB), tgt).backward()
        opt.step()

    return step


def gpt_mixed(nn):
    lib = torch if nn is torch.nn else wb
    F = lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(VOCAB, D), nn.Embedding(CTX, D)
            self.ln1, self.ln2, self.lnf = nn.LayerNorm(D), nn.LayerNorm(D), nn.LayerNorm(D)
            self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
            self.fc, self.fc2, self.head = nn.Linear(D, 4 * D), nn.Linear(4 * D, D), nn.Linear(D, VOCAB)
            self.register_buffer("mask", lib.triu(lib.full((CTX, CTX), float("-inf")), diagonal=1), persistent=False)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(lib.arange(idx.shape[1]))
            x = x + attention(lib, self.ln1(x), self.qkv.weight, self.qkv.bias, self.proj.weight, self.proj.bias,
                              self.mask)
            x = x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
            return self.head(self.lnf(x))

    return Block()


# --- recurrent forms: a character model ---------------------------------------------------------------------
RNN_V, RNN_E, RNN_H, RNN_T, RNN_B = 65, 32, 128, 32, 16


def char_model(nn, kind):
    """Embedding, a recurrent layer (``lstm``, ``gru``) or a cell called in a loop (``lstmcell``, ``grucell``),
    and a linear head over every step."""
    lib = torch if nn is torch.nn else wb

    class Char(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(RNN_V, RNN_E)
            if kind in ("lstm", "gru"):
                self.rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(RNN_E, RNN_H, batch_first=True)
            else:
                self.cell = (nn.LSTMCell if kind == "lstmcell" else nn.GRUCell)(RNN_E, RNN_H)
            self.head = nn.Linear(RNN_H, RNN_V)

        def forward(self, x):
            e = self.emb(x)
            if kind in ("lstm", "gru"):
                return self.head(self.rnn(e)[0])
            h = lib.zeros(x.shape[0], RNN_H)
            c, outs = h, []
            for t in range(x.shape[1]):
                if kind == "lstmcell":
                    h, c = self.cell(e[:, t], (h, c))
                else:
                    h = self.cell(e[:, t], h)
                outs.append(h)
            return self.head(lib.stack(outs, 1))

    return Char()


def hand_lstm_step(lib, arrays, x, y):
    """The LSTM a lecture writes: raw parameters, x @ W + h @ U + b, the gates by chunk, Adam."""
    F = lib.nn.functional
    emb, W, U, b, Wo, bo = (lib.tensor(a.copy(), requires_grad=True) for a in arrays)
    opt = lib.optim.Adam([emb, W, U, b, Wo, bo], lr=1e-3)

    def step():
        opt.zero_grad()
        e = F.embedding(x, emb)
        h = c = lib.zeros(x.shape[0], RNN_H)
        outs = []
        for t in range(x.shape[1]):
            i, f, g, o = (e[:, t] @ W + h @ U + b).chunk(4, 1)
            c = f.sigmoid() * c + i.sigmoid() * g.tanh()
            h = o.sigmoid() * c.tanh()
            outs.append(h)
        F.cross_entropy((lib.stack(outs, 1) @ Wo + bo).reshape(-1, RNN_V), y).backward()
        opt.step()

    return step


# --- timing --------------------------------------------------------------------------------------
def pair_rounds(w, t, steps, rounds):
    for f in (w, t):
        for _ in range(2):
            f()
    ws, ts = [], []
    for _ in range(rounds):
        for f, acc in ((w, ws), (t, ts)):
            t0 = time.process_time()
            for _ in range(steps):
                f()
            acc.append((time.process_time() - t0) / steps)
    return ws, ts


def row(name, ws, ts, target, unit=1e3, fmt="{:9.3f}"):
    ratios = [a / b for a, b in zip(ws, ts)]
    med = statistics.median(ratios)
    ok = "met" if med <= target else "MISSED"
    print(f"{name:52s} {fmt.format(statistics.median(ws) * unit)} {fmt.format(statistics.median(ts) * unit)} "
          f"{med:6.2f} ({min(ratios):.2f}-{max(ratios):.2f})  <= {target}  {ok}", flush=True)


def _status_kib(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def peak_memory_child(lib_name, form):
    """Run in a subprocess: the median peak resident memory (MiB) of a training step above the memory held
    before it (the method in the module docstring)."""
    lib = torch if lib_name == "torch" else wb
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    if form == "cnn":
        xs, ys = rng.standard_normal((64, 1, 8, 8)).astype(np.float32), rng.integers(0, 10, 64)
        step = module_step(lib, cnn(lib.nn), lib.tensor(xs), lib.tensor(ys), "ce")
    else:
        idx = lib.tensor(rng.integers(0, VOCAB, (16, CTX)))
        tgt = lib.tensor(rng.integers(0, VOCAB, 16 * CTX))
        if form == "functional":
            step = gpt_functional_step(lib, gpt_functional_params(rng), idx, tgt)
        else:
            step = module_step(lib, gpt_modules(lib.nn, "none"), idx, tgt, "seq")
    step()
    libc = ctypes.CDLL("libc.so.6")
    peaks = []
    for _ in range(5):
        gc.collect()
        libc.malloc_trim(0)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        base = _status_kib("VmRSS")
        step()
        peaks.append((_status_kib("VmHWM") - base) / 1024)
    print(statistics.median(peaks))


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--memory-child":
        return peak_memory_child(sys.argv[2], sys.argv[3])
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", default="chain,tiny,raw,inplace,mlp,cnn,gpt,rnn,wide,memory")
    args = ap.parse_args()
    only = set(args.only.split(","))
    R = args.rounds
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}, 1 thread, process CPU time, {R} rounds; "
          f"torch {torch.__version__}, numpy {np.__version__}")
    print(f"{'workload':52s} {'wb ms':>9s} {'torch ms':>9s} {'ratio':>6s} (range)   target")
    rng = np.random.default_rng(0)
    if "chain" in only:
        ws, ts = pair_rounds(chain_program(wb, np.random.default_rng(0)), chain_program(torch, np.random.default_rng(0)),
                             2000, R)
        row("10-op chain fwd+bwd, 4x4 (per chain)", ws, ts, 1.0, 1e6, "{:7.2f}us")
    xs, ys = rng.standard_normal((64, 64)).astype(np.float32), rng.integers(0, 10, 64)
    if "tiny" in only:
        def tiny(nn):
            return nn.Sequential(nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 10))
        tm, wm = make_pair(tiny)
        x8, y8 = rng.standard_normal((8, 64)).astype(np.float32), rng.standard_normal((8, 10)).astype(np.float32)
        ws, ts = pair_rounds(module_step(wb, wm, wb.tensor(x8), wb.tensor(y8), "mse", "SGD", 0.01),
                             module_step(torch, tm, torch.from_numpy(x8), torch.from_numpy(y8), "mse", "SGD", 0.01),
                             500, R)
        row("tiny MLP 64-16-10, b8, MSE, SGD", ws, ts, 1.0)
    if "raw" in only:
        def tiny(nn):
            return nn.Sequential(nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 10))
        for label, build, b, steps, target in (("tiny MLP 64-16-10, b8", tiny, 8, 500, 1.0),
                                               ("digits MLP 64-256-256-10, b64", mlp, 64, 100, 0.8)):
            tm, wm = make_pair(build)
            xr, yr = xs[:b], ys[:b]
            ws, ts = pair_rounds(raw_tensor_step(wb, wm, wb.tensor(xr), wb.tensor(yr)),
                                 raw_tensor_step(torch, tm, torch.from_numpy(xr), torch.from_numpy(yr)), steps, R)
            row(f"{label}, raw tensors, CE, SGD by hand", ws, ts, target)
    if "inplace" in only:
        for label, prog, steps in INPLACE_FORMS:
            ws, ts = pair_rounds(prog(wb), prog(torch), steps, R)
            row(label, ws, ts, 1.5, 1e6, "{:7.1f}us")
    if "mlp" in only:
        tm, wm = make_pair(mlp)
        ws, ts = pair_rounds(module_step(wb, wm, wb.tensor(xs), wb.tensor(ys), "ce"),
                             module_step(torch, tm, torch.from_numpy(xs), torch.from_numpy(ys), "ce"), 100, R)
        row("digits MLP 64-256-256-10, b64, CE, Adam", ws, ts, 0.8)
        sgd = {"optimizer": "SGD", "lr": 0.01, "momentum": 0.9}
        tm, wm = make_pair(mlp)
        ws, ts = pair_rounds(module_step(wb, wm, wb.tensor(xs), wb.tensor(ys), "ce", **sgd),
                             module_step(torch, tm, torch.from_numpy(xs), torch.from_numpy(ys), "ce", **sgd), 100, R)
        row("digits MLP, modules, SGD momentum", ws, ts, 0.8)
        for label, kw in (("Adam", {}), ("SGD momentum", sgd)):
            tm, wm = make_pair(mlp)
            ws, ts = pair_rounds(mlp_functional_step(wb, wm, wb.tensor(xs), wb.tensor(ys), **kw),
                                 mlp_functional_step(torch, tm, torch.from_numpy(xs), torch.from_numpy(ys), **kw),
                                 100, R)
            row(f"digits MLP, functional, {label}", ws, ts, 0.8)
    if "cnn" in only:
        xi = rng.standard_normal((64, 1, 8, 8)).astype(np.float32)
        tm, wm = make_pair(cnn)
        ws, ts = pair_rounds(module_step(wb, wm, wb.tensor(xi), wb.tensor(ys), "ce"),
                             module_step(torch, tm, torch.from_numpy(xi), torch.from_numpy(ys), "ce"), 20, R)
        row("digits CNN conv16-conv32-pool-fc, b64, CE, Adam", ws, ts, 1.3)
    idx = rng.integers(0, VOCAB, (16, CTX))
    tgt = rng.integers(0, VOCAB, 16 * CTX)
    wi, wt, ti, tt = wb.tensor(idx), wb.tensor(tgt), torch.from_numpy(idx), torch.from_numpy(tgt)
    if "gpt" in only:
        for label, approx in (("exact GELU", "none"), ("tanh GELU", "tanh")):
            tm, wm = make_pair(lambda nn: gpt_modules(nn, approx))
            ws, ts = pair_rounds(module_step(wb, wm, wi, wt, "seq"), module_step(torch, tm, ti, tt, "seq"), 2, R)
            row(f"GPT block, modules, {label}", ws, ts, 1.5)
        arrays = gpt_functional_params(np.random.default_rng(1))
        ws, ts = pair_rounds(gpt_functional_step(wb, arrays, wi, wt), gpt_functional_step(torch, arrays, ti, tt), 2, R)
        row("GPT block, functional, tanh GELU, additive mask", ws, ts, 1.5)
        tm, wm = make_pair(gpt_mixed)
        ws, ts = pair_rounds(module_step(wb, wm, wi, wt, "seq"), module_step(torch, tm, ti, tt, "seq"), 2, R)
        row("GPT block, mixed (modules + functional attention)", ws, ts, 1.5)
    if "rnn" in only:
        cx = rng.integers(0, RNN_V, (RNN_B, RNN_T))
        cy = rng.integers(0, RNN_V, RNN_B * RNN_T)
        wx, wy, tx, ty = wb.tensor(cx), wb.tensor(cy), torch.from_numpy(cx), torch.from_numpy(cy)
        for kind, label in (("lstm", "nn.LSTM"), ("gru", "nn.GRU"), ("lstmcell", "nn.LSTMCell in a loop"),
                            ("grucell", "nn.GRUCell in a loop")):
            tm, wm = make_pair(lambda nn: char_model(nn, kind))
            ws, ts = pair_rounds(module_step(wb, wm, wx, wy, "seq"), module_step(torch, tm, tx, ty, "seq"), 5, R)
            row(f"char model b16x32, {label}, CE, Adam", ws, ts, 1.5)
        r = np.random.default_rng(2)
        arrays = [(r.standard_normal(s) * 0.1).astype(np.float32) for s in
                  ((RNN_V, RNN_E), (RNN_E, 4 * RNN_H), (RNN_H, 4 * RNN_H), (4 * RNN_H,), (RNN_H, RNN_V), (RNN_V,))]
        ws, ts = pair_rounds(hand_lstm_step(wb, arrays, wx, wy), hand_lstm_step(torch, arrays, tx, ty), 5, R)
        row("char model, LSTM by hand (chunk), CE, Adam", ws, ts, 1.5)
    if "wide" in only:
        xw = rng.standard_normal((512, WIDE)).astype(np.float32)
        yw = rng.standard_normal((512, WIDE)).astype(np.float32)
        tm, wm = make_pair(wide)
        ws, ls = pair_rounds(module_step(wb, wm, wb.tensor(xw), wb.tensor(yw), "mse", "SGD"), numpy_wide_limit(), 2, R)
        eff = [b / a for a, b in zip(ws, ls)]
        print(f"{'wide MLP 3x1024, b512: GFLOP/s / NumPy GEMM GFLOP/s':52s} {statistics.median(ws) * 1e3:9.3f} "
              f"{statistics.median(ls) * 1e3:9.3f} {statistics.median(eff):6.2f} ({min(eff):.2f}-{max(eff):.2f})"
              f"  >= 0.9  {'met' if statistics.median(eff) >= 0.9 else 'MISSED'}", flush=True)
    if "memory" in only:
        for form in ("modules", "functional", "cnn"):
            mib = {lib: float(subprocess.run([sys.executable, __file__, "--memory-child", lib, form], check=True,
                                             capture_output=True, text=True).stdout.split()[-1])
                   for lib in ("workbench", "torch")}
            name = "digits CNN step" if form == "cnn" else f"GPT step ({form})"
            print(f"{'peak RSS of a ' + name + ' above before, MiB':52s} {mib['workbench']:9.1f} {mib['torch']:9.1f} "
                  f"{'':6s}  <= torch  {'met' if mib['workbench'] <= mib['torch'] else 'MISSED'}", flush=True)


if __name__ == "__main__":
    main()
