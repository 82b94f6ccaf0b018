"""Hogwild! training: one model in shared memory (model.share_memory()), several processes running SGD
on it at once without locks (torch.multiprocessing), each on its own shard of the digits data."""
import torch
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train(rank, model, X, y, epochs):
    torch.manual_seed(100 + rank)
    opt = torch.optim.SGD(model.parameters(), lr=0.2)
    shard = torch.arange(rank, len(X), 2)
    for _ in range(epochs):
        for idx in shard[torch.randperm(len(shard))].split(32):
            opt.zero_grad()
            F.cross_entropy(model(X[idx]), y[idx]).backward()
            opt.step()


def accuracy(model, X, y):
    with torch.no_grad():
        return (model(X).argmax(1) == y).float().mean().item()


if __name__ == "__main__":
    mp.set_start_method("spawn")
    from sklearn.datasets import load_digits

    torch.manual_seed(0)
    d = load_digits()
    X = torch.tensor(d.data, dtype=torch.float32) / 16.0
    y = torch.tensor(d.target)
    model = MLP()
    model.share_memory()
    before = accuracy(model, X, y)
    procs = [mp.Process(target=train, args=(rank, model, X, y, 12)) for rank in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    after = accuracy(model, X, y)
    print(f"accuracy of the shared model: {before:.3f} -> {after:.3f}")
    assert after > 0.9, after
