"""A training script that logs to TensorBoard as PyTorch users do: SummaryWriter(log_dir) as a context
manager, per-step add_scalar for the loss, add_scalars for train/test accuracy, add_histogram of every
parameter and its gradient each epoch, add_graph of the model, add_hparams at the end. The event files are
then read back with TensorBoard's own EventAccumulator: the logged values must be the ones training saw.
Checked by held-out accuracy and the event-file contents."""
import glob
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.tensorboard import SummaryWriter

torch.manual_seed(0)
digits = load_digits()
X = torch.tensor(digits.data, dtype=torch.float32) / 16.0
y = torch.tensor(digits.target)
perm = torch.randperm(len(y))
train_ds, test_ds = TensorDataset(X[perm[:1400]], y[perm[:1400]]), TensorDataset(X[perm[1400:]], y[perm[1400:]])
loader = DataLoader(train_ds, batch_size=100, shuffle=True)
model = nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)


def accuracy(ds):
    with torch.no_grad():
        x, t = ds.tensors
        return (model(x).argmax(1) == t).float().mean().item()


logged_losses, step = [], 0
log_dir = os.path.join("runs", "digits_mlp")
with SummaryWriter(log_dir=log_dir) as writer:
    writer.add_graph(model, X[:4])
    for epoch in range(5):
        for xb, yb in loader:
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            writer.add_scalar("loss/train", loss.item(), step)
            logged_losses.append(loss.item())
            step += 1
        writer.add_scalars("accuracy", {"train": accuracy(train_ds), "test": accuracy(test_ds)}, epoch)
        for name, param in model.named_parameters():
            writer.add_histogram(f"weights/{name}", param, epoch)
            writer.add_histogram(f"grads/{name}", param.grad, epoch)
    final = accuracy(test_ds)
    writer.add_hparams({"lr": 0.5, "batch_size": 100}, {"hparam/test_accuracy": final})

event_files = glob.glob(os.path.join(log_dir, "events.out.tfevents.*"))
assert len(event_files) == 1, event_files
events = EventAccumulator(log_dir, size_guidance={"scalars": 0, "histograms": 0}).Reload()
scalars = events.Scalars("loss/train")
assert [s.step for s in scalars] == list(range(step))
assert np.allclose([s.value for s in scalars], logged_losses, rtol=1e-6)
assert len(events.Histograms("weights/0.weight")) == 5 and len(events.Histograms("grads/2.bias")) == 5
hist = events.Histograms("weights/0.weight")[-1].histogram_value
assert hist.num == 64 * 32 and np.isclose(hist.sum, model[0].weight.sum().item(), rtol=1e-4)
# add_scalars writes one sub-run per key, as in PyTorch
test_runs = EventAccumulator(os.path.join(log_dir, "accuracy_test")).Reload().Scalars("accuracy")
assert len(test_runs) == 5 and np.isclose(test_runs[-1].value, final)
print(f"tensorboard: {step} loss scalars, loss {logged_losses[0]:.3f} -> {logged_losses[-1]:.3f}, "
      f"held-out accuracy {final:.3f}, graph logged: {events.Graph() is not None}")
assert final > 0.9, final
