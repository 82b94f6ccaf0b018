"""DDP on 2 ranks against single-process training on the concatenated batch (float64); prints 'RANK OK name'."""
import sys

import numpy as np

import workbench as wb
import workbench.distributed as dist
from workbench.nn.parallel import DistributedDataParallel as DDP
from workbench.utils.data import DataLoader, TensorDataset
from workbench.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()
F = wb.nn.functional


def ok(name):
    sys.stdout.write(f"{r} OK {name}\n")


def close(a, b, name, tol=1e-12):
    a = a.detach().numpy() if isinstance(a, wb.Tensor) else a
    b = b.detach().numpy() if isinstance(b, wb.Tensor) else b
    if not np.allclose(a, b, rtol=tol, atol=tol):
        raise AssertionError(f"{name}: max difference {np.abs(a - b).max()}")


def model():
    wb.manual_seed(0)
    return wb.nn.Sequential(wb.nn.Linear(6, 32), wb.nn.Tanh(), wb.nn.Linear(32, 16), wb.nn.Tanh(),
                            wb.nn.Linear(16, 3)).double()


wb.manual_seed(1)
X, Y = wb.randn(8, 6, dtype=wb.float64), wb.randn(8, 3, dtype=wb.float64)
xs, ys = X.chunk(n)[r], Y.chunk(n)[r]

# 1. N steps of DDP equal N steps on the whole batch in one process (rank 1 starts from other weights:
#    the broadcast from rank 0 must fix them), for one bucket and for one bucket per parameter
ref = model()
opt = wb.optim.SGD(ref.parameters(), lr=0.2, momentum=0.9)
for _ in range(4):
    opt.zero_grad()
    F.mse_loss(ref(X), Y).backward()
    opt.step()
for cap, as_view in ((25, False), (0.0005, False), (0.0005, True)):
    m = model()
    if r == 1:
        with wb.no_grad():
            for p in m.parameters():
                p.mul_(3.0)
    ddp = DDP(m, bucket_cap_mb=cap, gradient_as_bucket_view=as_view)
    opt = wb.optim.SGD(ddp.parameters(), lr=0.2, momentum=0.9)
    for _ in range(4):
        opt.zero_grad(set_to_none=not as_view)
        F.mse_loss(ddp(xs), ys).backward()
        opt.step()
    for (name, a), b in zip(ref.named_parameters(), m.parameters()):
        close(a, b, f"param {name} cap={cap} view={as_view}")
    nb = len(ddp.bucket_indices)
    assert sorted(i for b in ddp.bucket_indices for i in b) == list(range(6))
    assert (nb == 1) == (cap == 25), ddp.bucket_indices
    assert ddp.bucket_indices[0][0] == 5  # reverse registration order: the last layer's bias first
    assert ddp.launched_in_backward == nb, (ddp.launched_in_backward, nb)  # every bucket started inside backward
    if as_view:
        assert all(any(np.shares_memory(p.grad._data, b.buffer._data) for b in ddp.reducer.buckets)
                   for p in m.parameters())  # .grad is a view into its bucket: no copy back
    ok(f"equals_single_process-cap{cap}-view{int(as_view)}")

# 2. no_sync: the first micro-batch accumulates locally, the second all-reduces the sum of both
A, B = X, Y * 0.5
ref = model()
F.mse_loss(ref(A), Y).backward()
F.mse_loss(ref(X), B).backward()
m = model()
ddp = DDP(m, bucket_cap_mb=0.0005)
with ddp.no_sync():
    F.mse_loss(ddp(A.chunk(n)[r]), ys).backward()
local = [None] * n
dist.all_gather_object(local, m[0].weight.grad.numpy().copy())
assert not np.allclose(local[0], local[1]), "gradients under no_sync must stay local"
F.mse_loss(ddp(xs), B.chunk(n)[r]).backward()
for (name, a), b in zip(ref.named_parameters(), m.parameters()):
    close(a.grad, b.grad, f"no_sync grad {name}")
ok("no_sync")


# 3. unused parameters: one never used, one used on rank 0 only
class Branchy(wb.nn.Module):
    def __init__(self):
        super().__init__()
        wb.manual_seed(0)
        self.a = wb.nn.Linear(6, 3).double()
        self.rank0_only = wb.nn.Linear(6, 3).double()
        self.never = wb.nn.Linear(6, 3).double()

    def forward(self, x, use_branch):
        y = self.a(x)
        return y + self.rank0_only(x) if use_branch else y


m = Branchy()
ddp = DDP(m, find_unused_parameters=True)
for _ in range(2):
    m.zero_grad()
    F.mse_loss(ddp(xs, r == 0), ys).backward()
assert m.never.weight.grad is None and m.never.bias.grad is None
ref = Branchy()
F.mse_loss(ref(X[:4], True), Y[:4]).backward()
close(m.rank0_only.weight.grad, ref.rank0_only.weight.grad / n, "used on one rank: averaged over all")
ok("find_unused_parameters")

# 4. buffers follow rank 0 before each forward; state_dict keys carry the module. prefix
bn = wb.nn.Sequential(wb.nn.Linear(6, 4), wb.nn.BatchNorm1d(4)).double()
ddp = DDP(bn)
if r == 1:
    bn[1].running_mean.fill_(7.0)
bn.eval()
ddp(xs)
means = [None] * n
dist.all_gather_object(means, bn[1].running_mean.numpy().copy())
assert np.array_equal(means[0], means[1]) and not (means[0] == 7.0).any()
assert list(ddp.state_dict()) == ["module." + k for k in bn.state_dict()]
assert all(np.array_equal(ddp.module.state_dict()[k].numpy(), v.numpy()) for k, v in bn.state_dict().items())
ok("buffers_and_state_dict")

# 5. DataLoader + DistributedSampler: each epoch covers the data set exactly once, in a new order
ds = TensorDataset(wb.arange(20))
sampler = DistributedSampler(ds, shuffle=True, seed=3)
orders = []
for epoch in range(2):
    sampler.set_epoch(epoch)
    seen = [int(v) for (b,) in DataLoader(ds, batch_size=3, sampler=sampler) for v in b]
    everyone = [None] * n
    dist.all_gather_object(everyone, seen)
    assert sorted(everyone[0] + everyone[1]) == list(range(20)), everyone
    orders.append(everyone[0])
assert orders[0] != orders[1]
ok("sampler_epochs")
