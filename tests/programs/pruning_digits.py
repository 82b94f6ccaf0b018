"""Magnitude pruning as the PyTorch tutorial teaches it: train a small CNN on the digits, prune 50% of the
conv channels by L2 norm (ln_structured) and 80% of the remaining weights globally by |w|
(global_unstructured over every layer), fine-tune with the masks in place (the pruned entries stay zero
and get no gradient), then make the pruning permanent with prune.remove. Checked: the sparsity is what
was asked for, and held-out accuracy after fine-tuning is close to the dense model's."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.prune as prune
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
digits = load_digits()
X = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
y = torch.tensor(digits.target)
perm = torch.randperm(len(y))
loader = DataLoader(TensorDataset(X[perm[:1400]], y[perm[:1400]]), batch_size=64, shuffle=True)
X_test, y_test = X[perm[1400:]], y[perm[1400:]]

model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                      nn.Linear(16 * 16, 64), nn.ReLU(), nn.Linear(64, 10))


def train(epochs, lr):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(epochs):
        model.train()
        for xb, yb in loader:
            opt.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            opt.step()


def accuracy():
    model.eval()
    with torch.no_grad():
        return (model(X_test).argmax(1) == y_test).float().mean().item()


train(6, 3e-3)
dense = accuracy()
conv, fc1, fc2 = model[0], model[4], model[6]
prune.ln_structured(conv, name="weight", amount=0.5, n=2, dim=0)
to_prune = [(conv, "weight"), (fc1, "weight"), (fc2, "weight")]
prune.global_unstructured(to_prune, pruning_method=prune.L1Unstructured, amount=0.8)
assert prune.is_pruned(model) and "weight_orig" in dict(fc1.named_parameters())
pruned_now = accuracy()
train(4, 1e-3)
finetuned = accuracy()

total = sum(getattr(m, n).numel() for m, n in to_prune)
zeros = sum(int((getattr(m, n) == 0).sum()) for m, n in to_prune)
dead_channels = int((conv.weight.flatten(1).abs().sum(1) == 0).sum())
assert zeros >= 0.8 * total, (zeros, total)
assert dead_channels >= 8, dead_channels
for module, name in to_prune:
    prune.remove(module, name)
assert not prune.is_pruned(model) and sorted(model.state_dict())[:2] == ["0.bias", "0.weight"]
assert int(sum((getattr(m, n) == 0).sum() for m, n in to_prune)) == zeros   # the zeros stayed
print(f"pruning: dense {dense:.3f}, right after pruning {pruned_now:.3f}, fine-tuned {finetuned:.3f}; "
      f"{zeros / total:.1%} of weights zero, {dead_channels}/16 conv channels removed")
assert finetuned > dense - 0.03 and finetuned > 0.93, (dense, finetuned)
