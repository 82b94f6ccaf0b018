"""Checkpointing mid-training and resuming exactly: a digits MLP with dropout, AdamW, a StepLR schedule and a
shuffling DataLoader with its own generator. After epoch 2 the script saves the usual checkpoint dict
(epoch, model/optimizer/scheduler state_dicts, RNG states, the loss) with torch.save, trains on, then builds
everything afresh, torch.load(weights_only=True)s the checkpoint, restores it and trains the same epochs
again. Checked: the resumed run ends with bit-identical weights, and the model learnt (held-out accuracy).
A whole pickled model (weights_only=False) round-trips too."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

digits = load_digits()
X = torch.tensor(digits.data, dtype=torch.float32) / 16.0
y = torch.tensor(digits.target)
perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(7))
train_ds, X_test, y_test = TensorDataset(X[perm[:1400]], y[perm[:1400]]), X[perm[1400:]], y[perm[1400:]]
EPOCHS, SAVE_AFTER, PATH = 5, 2, os.path.join("checkpoints", "mlp.pt")


def build():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, 10))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.7)
    generator = torch.Generator().manual_seed(123)
    loader = DataLoader(train_ds, batch_size=50, shuffle=True, generator=generator)
    return model, optimizer, scheduler, generator, loader


def train_epoch(model, optimizer, loader):
    model.train()
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
    return loss.item()


model, optimizer, scheduler, generator, loader = build()
for epoch in range(EPOCHS):
    loss = train_epoch(model, optimizer, loader)
    scheduler.step()
    if epoch + 1 == SAVE_AFTER:
        os.makedirs(os.path.dirname(PATH), exist_ok=True)
        torch.save({"epoch": epoch, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": optimizer.state_dict(), "scheduler_state_dict": scheduler.state_dict(),
                    "torch_rng_state": torch.get_rng_state(), "loader_rng_state": generator.get_state(),
                    "loss": loss}, PATH)
reference = {k: v.clone() for k, v in model.state_dict().items()}

model, optimizer, scheduler, generator, loader = build()
checkpoint = torch.load(PATH, weights_only=True)
model.load_state_dict(checkpoint["model_state_dict"])
optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
scheduler.load_state_dict(checkpoint["scheduler_state_dict"])
torch.set_rng_state(checkpoint["torch_rng_state"])
generator.set_state(checkpoint["loader_rng_state"])
assert optimizer.param_groups[0]["lr"] == 3e-3 * 0.7 and isinstance(checkpoint["loss"], float)
for epoch in range(checkpoint["epoch"] + 1, EPOCHS):
    train_epoch(model, optimizer, loader)
    scheduler.step()
for name, value in model.state_dict().items():
    assert torch.equal(value, reference[name]), f"{name} differs after resuming"

torch.save(model, "whole_model.pt")
again = torch.load("whole_model.pt", weights_only=False)
model.eval()
again.eval()
with torch.no_grad():
    accuracy = (model(X_test).argmax(1) == y_test).float().mean().item()
    assert torch.equal(again(X_test), model(X_test))
print(f"checkpoint: resumed from epoch {checkpoint['epoch']} bit-identically, held-out accuracy {accuracy:.3f}")
assert accuracy > 0.9, accuracy
