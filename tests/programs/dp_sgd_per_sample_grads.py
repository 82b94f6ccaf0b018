"""Differentially-private SGD the torch.func way: per-sample gradients from vmap(grad(loss)) over a
functional_call of the model with its parameters as a dict, each sample's gradient clipped to norm C,
Gaussian noise added to the sum, and the step applied by hand. The per-sample gradients are checked
against a loop of ordinary backward() calls; the model is checked by held-out accuracy on the digits."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch.func import functional_call, grad, vmap

torch.manual_seed(0)
digits = load_digits()
X = torch.tensor(digits.data, dtype=torch.float32) / 16.0
y = torch.tensor(digits.target)
perm = torch.randperm(len(y))
train, test = perm[:1400], perm[1400:]
model = nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 10))
params = {k: v.detach() for k, v in model.named_parameters()}


def loss_one(p, x, target):
    logits = functional_call(model, p, (x.unsqueeze(0),))
    return F.cross_entropy(logits, target.unsqueeze(0))


per_sample_grad = vmap(grad(loss_one), in_dims=(None, 0, 0))

# the per-sample gradients agree with one backward() per sample
xb, yb = X[train[:8]], y[train[:8]]
batched = per_sample_grad(params, xb, yb)
for i in range(len(xb)):
    model.zero_grad()
    F.cross_entropy(model(xb[i:i + 1]), yb[i:i + 1]).backward()
    for name, p in model.named_parameters():
        assert torch.allclose(batched[name][i], p.grad, atol=1e-6), name

CLIP, SIGMA, LR, BATCH = 1.0, 0.5, 0.5, 64
for epoch in range(7):
    for idx in train[torch.randperm(len(train))].split(BATCH):
        g = per_sample_grad(params, X[idx], y[idx])
        norms = torch.sqrt(sum(v.flatten(1).pow(2).sum(1) for v in g.values()))
        scale = (CLIP / (norms + 1e-6)).clamp(max=1.0)
        for name in params:
            clipped = (g[name] * scale.view(-1, *([1] * (g[name].dim() - 1)))).sum(0)
            noisy = clipped + SIGMA * CLIP * torch.randn_like(clipped)
            params[name] = params[name] - LR * noisy / len(idx)

with torch.no_grad():
    logits = functional_call(model, params, (X[test],))
    accuracy = (logits.argmax(1) == y[test]).float().mean().item()
print(f"DP-SGD (clip {CLIP}, noise {SIGMA}): held-out accuracy {accuracy:.3f}, last batch mean grad norm "
      f"{norms.mean().item():.3f}")
assert accuracy > 0.85, accuracy
