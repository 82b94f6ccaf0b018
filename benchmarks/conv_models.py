"""Convolutional models as users write them, workbench eager against PyTorch eager, one thread.

    python benchmarks/conv_models.py [--rounds R] [--steps S] [--only resnet,mobilenet,unet,dcgan,einsum] [--layers]

The models of a new user's survey (#18) that ran slowest against PyTorch, each one training step (forward,
loss, backward, optimizer step) on the same weights and batch in both libraries, taking turns in every round
(process CPU time). Target: <= 1.3x each (the digits CNN's target).

* resnet     CIFAR ResNet: conv3x3 3->16 + BN + ReLU, two basic blocks at 16 channels, one at 32 with stride 2
             (1x1 projection shortcut), global average pool, linear 10; batch 32 of 3x32x32, SGD momentum
* mobilenet  depthwise-separable blocks (depthwise 3x3 + BN + ReLU6, pointwise 1x1 + BN + ReLU6), 32 -> 64
             (stride 2) -> 128 (stride 2) channels after a stride-2 stem; batch 32 of 3x32x32, Adam
* unet       a two-level U-Net on 1x64x64 (double convs 16/32/64, max-pool, ConvTranspose2d k2 s2, skip
             concatenation, 1x1 head, BCE with logits); batch 8, Adam
* dcgan      DCGAN generator: z 64 -> ConvTranspose2d 4x4 stride 1 -> three ConvTranspose2d k4 s2 p1
             (128 -> 64 -> 32 -> 1), BatchNorm + ReLU, tanh, MSE against a batch of images; batch 32, Adam
* einsum     multi-head attention written with torch.einsum (b h q d, b h k d -> b h q k), softmax and
             einsum back, a projection and a residual; batch 16, seq 64, 4 heads of 32, Adam

``--layers`` also times each model's conv layers alone (forward and forward + backward).
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import workbench as wb  # noqa: E402
from benchmarks.user_forms import pair_rounds, row  # noqa: E402

torch.set_num_threads(1)
TARGET = 1.3


# --- the models ----------------------------------------------------------------------------------
def resnet(nn):
    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.short = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                          if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            out = self.bn1(self.conv1(x)).relu()
            out = self.bn2(self.conv2(out))
            return (out + self.short(x)).relu()

    return nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                         Block(16, 16, 1), Block(16, 16, 1), Block(16, 32, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def mobilenet(nn):
    def separable(cin, cout, stride):
        return [nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False), nn.BatchNorm2d(cin), nn.ReLU6(),
                nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU6()]

    return nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6(),
                         *separable(32, 64, 1), *separable(64, 64, 2), *separable(64, 128, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))


def unet(nn):
    lib = torch if nn is torch.nn else wb

    def double(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), nn.Conv2d(cout, cout, 3, padding=1),
                             nn.ReLU())

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.d1, self.d2, self.mid = double(1, 16), double(16, 32), double(32, 64)
            self.pool = nn.MaxPool2d(2)
            self.up2, self.u2 = nn.ConvTranspose2d(64, 32, 2, 2), double(64, 32)
            self.up1, self.u1 = nn.ConvTranspose2d(32, 16, 2, 2), double(32, 16)
            self.head = nn.Conv2d(16, 1, 1)

        def forward(self, x):
            a = self.d1(x)
            b = self.d2(self.pool(a))
            m = self.mid(self.pool(b))
            u = self.u2(lib.cat([self.up2(m), b], 1))
            u = self.u1(lib.cat([self.up1(u), a], 1))
            return self.head(u)

    return UNet()


def dcgan(nn):
    return nn.Sequential(nn.Unflatten(1, (64, 1, 1)),
                         nn.ConvTranspose2d(64, 128, 4, 1, 0, bias=False), nn.BatchNorm2d(128), nn.ReLU(),
                         nn.ConvTranspose2d(128, 64, 4, 2, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                         nn.ConvTranspose2d(64, 32, 4, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.ConvTranspose2d(32, 1, 4, 2, 1, bias=False), nn.Tanh())


def einsum_attention(nn):
    lib = torch if nn is torch.nn else wb

    class Attention(nn.Module):
        def __init__(self, d=128, heads=4):
            super().__init__()
            self.heads = heads
            self.qkv, self.proj, self.norm = nn.Linear(d, 3 * d), nn.Linear(d, d), nn.LayerNorm(d)
            self.head = nn.Linear(d, 10)

        def forward(self, x):
            b, s, d = x.shape
            q, k, v = self.qkv(self.norm(x)).reshape(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
            att = lib.einsum("bhqd,bhkd->bhqk", q, k) * (d // self.heads) ** -0.5
            out = lib.einsum("bhqk,bhkd->bhqd", att.softmax(-1), v)
            x = x + self.proj(out.transpose(1, 2).reshape(b, s, d))
            return self.head(x.mean(1))

    return Attention()


MODELS = {  # name: (build, input shape, target kind, optimizer)
    "resnet": (resnet, (32, 3, 32, 32), "class", "SGD"),
    "mobilenet": (mobilenet, (32, 3, 32, 32), "class", "Adam"),
    "unet": (unet, (8, 1, 64, 64), "mask", "Adam"),
    "dcgan": (dcgan, (32, 64), "image", "Adam"),
    "einsum": (einsum_attention, (16, 64, 128), "class", "Adam"),
}


def data(name, rng):
    _build, shape, kind, _opt = MODELS[name]
    x = rng.standard_normal(shape).astype(np.float32)
    if kind == "class":
        y = rng.integers(0, 10, shape[0])
    elif kind == "mask":
        y = (rng.random((shape[0], 1) + shape[2:]) > 0.5).astype(np.float32)
    else:
        y = np.tanh(rng.standard_normal((shape[0], 1, 32, 32))).astype(np.float32)
    return x, y


def step_of(lib, name, model, x, y):
    _build, _shape, kind, optimizer = MODELS[name]
    F = lib.nn.functional
    opt = (lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9) if optimizer == "SGD"
           else lib.optim.Adam(model.parameters(), lr=1e-3))
    X, Y = lib.tensor(x), lib.tensor(y)

    def step():
        opt.zero_grad()
        out = model(X)
        if kind == "class":
            loss = F.cross_entropy(out, Y)
        elif kind == "mask":
            loss = F.binary_cross_entropy_with_logits(out, Y)
        else:
            loss = F.mse_loss(out, Y)
        loss.backward()
        opt.step()

    return step


def pair(name):
    build = MODELS[name][0]
    torch.manual_seed(0)
    tm = build(torch.nn)
    wm = build(wb.nn)
    wm.load_state_dict({k: wb.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    return tm, wm


def layer_rows(name, tm, wm, x, rounds):
    """Each conv layer of the model alone, on the input it sees in the model (forward; forward + backward)."""
    seen = []
    hooks = [m.register_forward_hook(lambda m, i, o, seen=seen: seen.append((m, i[0].detach().clone())))
             for m in tm.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.ConvTranspose2d))]
    with torch.no_grad():
        tm(torch.tensor(x))
    for h in hooks:
        h.remove()
    tmods = dict((id(m), n) for n, m in tm.named_modules())
    wmods = dict(wm.named_modules())
    for tmod, inp in seen:
        wmod = wmods[tmods[id(tmod)]]
        ti = inp.requires_grad_(True)
        wi = wb.tensor(inp.detach().numpy().copy(), requires_grad=True)
        label = (f"  {type(tmod).__name__}({tmod.in_channels},{tmod.out_channels},k{tmod.kernel_size[0]},"
                 f"s{tmod.stride[0]},g{tmod.groups}) on {tuple(inp.shape)}")
        with torch.no_grad(), wb.no_grad():
            ws, ts = pair_rounds(lambda: wmod(wi), lambda: tmod(ti), 20, rounds)
        row(label + " fwd", ws, ts, TARGET)
        ws, ts = pair_rounds(lambda: wmod(wi).sum().backward(), lambda: tmod(ti).sum().backward(), 10, rounds)
        row(label + " fwd+bwd", ws, ts, TARGET)


def _cpu():
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default=",".join(MODELS))
    ap.add_argument("--steps", type=int, default=5, help="steps a round")
    ap.add_argument("--layers", action="store_true")
    a = ap.parse_args()
    print(f"# conv_models.py {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {_cpu()}, numpy {np.__version__}, "
          f"torch {torch.__version__}, one thread, {a.rounds} rounds of {a.steps} steps")
    print(f"{'workload (ms a step)':52s} {'workbench':>9s} {'PyTorch':>9s}  ratio (range)")
    for name in a.only.split(","):
        rng = np.random.default_rng(0)
        x, y = data(name, rng)
        tm, wm = pair(name)
        ws, ts = pair_rounds(step_of(wb, name, wm, x, y), step_of(torch, name, tm, x, y), a.steps, a.rounds)
        row(name, ws, ts, TARGET)
        if a.layers and name != "einsum":
            layer_rows(name, tm, wm, x, a.rounds)


if __name__ == "__main__":
    main()
