"""A pytorch/examples-style DDP training script, written for PyTorch: only the import line differs.

    python -m workbench.distributed.run --nproc-per-node 2 examples/ddp_train.py --epochs 2
    python examples/ddp_train.py --spawn 2 --epochs 2          # torch.multiprocessing.spawn, as the DDP tutorial

Trains a small classifier on synthetic data with DistributedSampler + DistributedDataParallel, saves a
checkpoint from rank 0, and prints the final loss and a parameter checksum (equal on every rank).
"""
import argparse
import os

import workbench as torch  # `import torch` runs the same script on PyTorch
import workbench.distributed as dist
import workbench.multiprocessing as mp
import workbench.nn as nn
import workbench.nn.functional as F
from workbench.nn.parallel import DistributedDataParallel as DDP
from workbench.utils.data import DataLoader, TensorDataset
from workbench.utils.data.distributed import DistributedSampler


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 64)
        self.fc2 = nn.Linear(64, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def dataset():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 20, generator=g)
    y = (x[:, :4].argmax(dim=1))
    return TensorDataset(x, y)


def train(rank, world_size, args):
    if args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
    else:
        dist.init_process_group(backend="gloo")
        rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(Net())
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    data = dataset()
    sampler = DistributedSampler(data, num_replicas=world_size, rank=rank, shuffle=True)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        total = torch.tensor([loss.item()])
        dist.all_reduce(total, op=dist.ReduceOp.SUM)
        if rank == 0:
            print(f"epoch {epoch} loss {total.item() / world_size:.4f}", flush=True)
    checksum = sum(float(p.detach().sum()) for p in model.parameters())
    print(f"rank {rank} checksum {checksum:.6f}", flush=True)
    if rank == 0 and args.save:
        torch.save(model.module.state_dict(), args.save)
    dist.barrier()
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--save", default="")
    p.add_argument("--spawn", type=int, default=0, help="start this many ranks with multiprocessing.spawn")
    p.add_argument("--port", type=int, default=29511)
    args = p.parse_args()
    if args.spawn:
        mp.spawn(train, args=(args.spawn, args), nprocs=args.spawn, join=True)
    else:
        train(None, None, args)


if __name__ == "__main__":
    main()
