"""DDP communication hooks and join() on 2 ranks that meet through init_method="file://..." (started by hand:
``hooks_join.py RANK FILE``); prints 'RANK OK name' per check, against single-process training in float64."""
import sys

import numpy as np

import workbench as wb
import workbench.distributed as dist
from workbench.distributed.algorithms.ddp_comm_hooks import default_hooks
from workbench.nn.parallel import DistributedDataParallel as DDP
from workbench.testing import fake_cupy

r = int(sys.argv[1])
fake_cupy.install()
dist.init_process_group(None, init_method=f"file://{sys.argv[2]}", rank=r, world_size=2)  # CPU: gloo, CUDA: nccl
n = dist.get_world_size()
F = wb.nn.functional


def ok(name):
    sys.stdout.write(f"{r} OK {name}\n")
    sys.stdout.flush()


def close(a, b, name, tol=1e-12):
    a, b = a.detach().numpy(), b.detach().numpy()
    if not np.allclose(a, b, rtol=tol, atol=tol):
        raise AssertionError(f"{name}: max difference {np.abs(a - b).max()}")


def model(bn=False):
    wb.manual_seed(0)
    layers = [wb.nn.Linear(6, 16), wb.nn.Tanh()] + ([wb.nn.BatchNorm1d(16)] if bn else []) + [wb.nn.Linear(16, 3)]
    return wb.nn.Sequential(*layers).double()


wb.manual_seed(1)
X, Y = wb.randn(6, 8, 6, dtype=wb.float64), wb.randn(6, 8, 3, dtype=wb.float64)  # 6 batches of 8 rows
half = X.shape[1] // n


def batch(k, rank):
    return X[k, rank * half:(rank + 1) * half], Y[k, rank * half:(rank + 1) * half]


def reference(steps_of, divide_by_initial):
    # one process: step k averages the gradients of the ranks that still have a batch k
    ref = model()
    opt = wb.optim.SGD(ref.parameters(), lr=0.3, momentum=0.5)
    for k in range(max(steps_of)):
        active = [q for q in range(n) if k < steps_of[q]]
        opt.zero_grad()
        loss = sum(F.mse_loss(ref(batch(k, q)[0]), batch(k, q)[1]) for q in active)
        (loss / (n if divide_by_initial else len(active))).backward()
        opt.step()
    return ref


def train(ddp, steps, device="cpu", **join):
    opt = wb.optim.SGD(ddp.parameters(), lr=0.3, momentum=0.5)
    with ddp.join(**join):
        for k in range(steps):
            opt.zero_grad()
            xb, yb = batch(k, r)
            F.mse_loss(ddp(xb.to(device)), yb.to(device)).backward()
            opt.step()


# 1. allreduce_hook is DDP's own average; a custom hook sees PyTorch's GradBucket
ref = reference([4, 4], True)
m = model()
ddp = DDP(m, bucket_cap_mb=0.0005)
seen = []


def recording_hook(state, bucket):
    assert state == "my state"
    assert [tuple(g.shape) for g in bucket.gradients()] == [tuple(p.shape) for p in bucket.parameters()]
    seen.append((bucket.index(), bucket.is_last()))
    return default_hooks.allreduce_hook(None, bucket)


ddp.register_comm_hook("my state", recording_hook)
train(ddp, 4, enable=False)
for (name, a), b in zip(ref.named_parameters(), m.parameters()):
    close(a, b, f"allreduce_hook {name}")
nb = len(ddp.bucket_indices)
assert nb > 1 and seen[:nb] == [(i, i == nb - 1) for i in range(nb)] and len(seen) == 4 * nb, seen
try:
    ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    raise AssertionError("a second comm hook was accepted")
except RuntimeError as e:
    assert "can only be called once" in str(e)
ok("allreduce_hook")

# 2. fp16_compress_hook: the gradients travel as float16 and come back float64, close to the exact ones
m = model()
ddp = DDP(m)
ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
train(ddp, 4)
for (name, a), b in zip(ref.named_parameters(), m.parameters()):
    assert b.dtype == wb.float64
    close(a, b, f"fp16_compress_hook {name}", tol=3e-3)
grads = [None] * n
dist.all_gather_object(grads, m[0].weight.grad.numpy())
assert np.array_equal(grads[0], grads[1])
assert np.array_equal(grads[0], grads[0].astype(np.float16).astype(np.float64))  # float16 values
ok("fp16_compress_hook")

# 3. a hook that does not return a future, or registered too late, is refused
ddp = DDP(model())
ddp.register_comm_hook(None, lambda state, bucket: bucket.buffer())
try:
    F.mse_loss(ddp(batch(0, r)[0]), batch(0, r)[1]).backward()
    raise AssertionError("a hook returning a tensor was accepted")
except TypeError as e:
    assert "not a workbench.futures.Future" in str(e), e
dist.barrier()  # the failed step started no collective: the ranks are still in step
ddp = DDP(model())
F.mse_loss(ddp(batch(0, r)[0]), batch(0, r)[1]).backward()
for bad, err, msg in ((42, TypeError, "must be callable"), (default_hooks.allreduce_hook, RuntimeError, "before")):
    try:
        ddp.register_comm_hook(None, bad)
        raise AssertionError(f"register_comm_hook({bad!r}) was accepted")
    except err as e:
        assert msg in str(e), e
ok("hook_errors")

# 4. join(): rank 0 has 3 batches, rank 1 has 5; every rank ends with the model of rank 1, which equals
#    single-process training where steps 4 and 5 average rank 1's gradients with rank 0's zeros (or not)
steps_of = [3, 5]
for divide in (True, False):
    ref = reference(steps_of, divide)
    m = model()
    train(DDP(m, bucket_cap_mb=0.0005), steps_of[r], divide_by_initial_world_size=divide)
    for (name, a), b in zip(ref.named_parameters(), m.parameters()):
        close(a, b, f"join divide={divide} {name}")
    ok(f"join-divide{int(divide)}")

# 5. join() with a hook (the joined rank runs it on zeros) and buffers broadcast from a rank still training
m = model(bn=True)
ddp = DDP(m)
ddp.register_comm_hook(None, default_hooks.allreduce_hook)
train(ddp, steps_of[r])
states = [None] * n
dist.all_gather_object(states, {k: v.numpy() for k, v in m.state_dict().items()})
assert all(np.array_equal(states[0][k], states[1][k]) for k in states[0]), "the replicas differ after join()"
ok("join_hook_buffers")

# 6. on CUDA parameters (the fake cupy; NCCL carries CUDA tensors): join's census, a hook, the shadow steps
ref = reference(steps_of, True)
m = model().to("cuda")
ddp = DDP(m, bucket_cap_mb=0.0005)
ddp.register_comm_hook(None, default_hooks.allreduce_hook)
train(ddp, steps_of[r], device="cuda")
for (name, a), b in zip(ref.named_parameters(), m.parameters()):
    assert b.device.type == "cuda"
    close(a, b.cpu(), f"join on cuda {name}")
ok("join_cuda_nccl")

# 7. PyTorch's generic form, Join([ddp], **kwargs), is the same thing
from workbench.distributed.algorithms.join import Join  # noqa: E402

ref = reference(steps_of, False)
m = model()
ddp = DDP(m)
opt = wb.optim.SGD(ddp.parameters(), lr=0.3, momentum=0.5)
with Join([ddp], divide_by_initial_world_size=False):
    for k in range(steps_of[r]):
        opt.zero_grad()
        F.mse_loss(ddp(batch(k, r)[0]), batch(k, r)[1]).backward()
        opt.step()
for (name, a), b in zip(ref.named_parameters(), m.parameters()):
    close(a, b, f"Join([ddp]) {name}")
ok("Join_generic")

# 8. throw_on_early_termination: every rank raises as soon as one runs out
try:
    train(DDP(model()), [2, 4][r], throw_on_early_termination=True)
    raise AssertionError("join(throw_on_early_termination=True) did not raise")
except RuntimeError as e:
    assert "exhausted inputs" in str(e), e
dist.barrier()
ok("join_throw")
dist.destroy_process_group()
