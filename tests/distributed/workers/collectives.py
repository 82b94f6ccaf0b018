"""Every collective on 2 ranks against a NumPy oracle, in float32, float64 and int64, on CPU and fake CUDA.

Usage: collectives.py BACKEND DEVICE...   (prints 'RANK OK name' per check; any failure raises)
"""
import sys

import numpy as np

import workbench as wb
import workbench.distributed as dist
from workbench.testing import fake_cupy

backend, devices = sys.argv[1], sys.argv[2:]
fake_cupy.install()
dist.init_process_group(backend)
r, n = dist.get_rank(), dist.get_world_size()
DTYPES = {"float32": (wb.float32, np.float32), "float64": (wb.float64, np.float64), "int64": (wb.int64, np.int64)}


def data(rank, np_dt, shape=(2, 3), offset=0):
    # distinct per rank and per element, exact in every dtype
    return (np.arange(np.prod(shape)).reshape(shape) * (rank + 2) + rank + offset).astype(np_dt)


def check(name, got, want):
    g = got.cpu().numpy() if got.device.type != "cpu" else got.numpy()
    if g.dtype != want.dtype or g.shape != want.shape or not np.array_equal(g, want):
        raise AssertionError(f"{name}: got {g!r}, want {want!r}")
    sys.stdout.write(f"{r} OK {name}\n")  # one write: the ranks share the pipe


for dev in devices:
    for dname, (dt, npd) in DTYPES.items():
        tag = f"{dev}-{dname}"
        T = lambda a: wb.tensor(a, dtype=dt, device=dev)  # noqa: E731
        mine, all_ = data(r, npd), [data(k, npd) for k in range(n)]
        for op, fn in (("SUM", np.sum), ("PRODUCT", np.prod), ("MIN", np.min), ("MAX", np.max)):
            t = T(mine)
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
            check(f"all_reduce-{op}-{tag}", t, fn(np.stack(all_), axis=0).astype(npd))
        t = T(mine)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        s = np.stack(all_).sum(0)
        check(f"all_reduce-AVG-{tag}", t, (s / n).astype(npd) if npd != np.int64 else np.trunc(s / n).astype(npd))
        t = T(mine)
        work = dist.all_reduce(t, async_op=True)
        assert work.wait() is True and work.is_completed()
        check(f"all_reduce-async-{tag}", t, np.stack(all_).sum(0))
        t = T(mine)
        dist.broadcast(t, src=1)
        check(f"broadcast-{tag}", t, all_[1])
        t = T(mine)
        dist.reduce(t, dst=0, op=dist.ReduceOp.SUM)
        check(f"reduce-{tag}", t, np.stack(all_).sum(0) if r == 0 else mine)
        out = [T(np.zeros((2, 3))) for _ in range(n)]
        dist.all_gather(out, T(mine))
        for k in range(n):
            check(f"all_gather{k}-{tag}", out[k], all_[k])
        big = T(np.zeros((2 * n, 3)))
        dist.all_gather_into_tensor(big, T(mine))
        check(f"all_gather_into_tensor-{tag}", big, np.concatenate(all_))
        inputs = [T(data(r, npd, offset=10 * k)) for k in range(n)]
        o = T(np.zeros((2, 3)))
        dist.reduce_scatter(o, inputs)
        check(f"reduce_scatter-{tag}", o, sum(data(k, npd, offset=10 * r) for k in range(n)).astype(npd))
        whole = [np.concatenate([data(k, npd, offset=10 * j) for j in range(n)]) for k in range(n)]
        o = T(np.zeros((2, 3)))
        dist.reduce_scatter_tensor(o, T(whole[r]))
        check(f"reduce_scatter_tensor-{tag}", o, sum(whole)[2 * r:2 * r + 2].astype(npd))
        gl = [T(np.zeros((2, 3))) for _ in range(n)] if r == 1 else None
        dist.gather(T(mine), gl, dst=1)
        if r == 1:
            for k in range(n):
                check(f"gather{k}-{tag}", gl[k], all_[k])
        t = T(np.zeros((2, 3)))
        dist.scatter(t, [T(data(0, npd, offset=k)) for k in range(n)] if r == 0 else None, src=0)
        check(f"scatter-{tag}", t, data(0, npd, offset=r))
        # uneven all_to_all_single: rank k sends k+1 rows to rank 0 and 2 rows to rank 1
        ins = [r + 1, 2]
        src = T(np.arange(sum(ins) * 2).reshape(-1, 2) + 100 * r)
        outs = [k + 1 for k in range(n)] if r == 0 else [2] * n
        dst = T(np.zeros((sum(outs), 2)))
        dist.all_to_all_single(dst, src, output_split_sizes=outs, input_split_sizes=ins)
        pieces = []
        for k in range(n):
            sk = np.arange(((k + 1) + 2) * 2).reshape(-1, 2) + 100 * k
            pieces.append(sk[:k + 1] if r == 0 else sk[k + 1:])
        check(f"all_to_all_single-{tag}", dst, np.concatenate(pieces).astype(npd))
        # point to point: a ring
        t = T(np.zeros((2, 3)))
        reqs = [dist.isend(T(mine), dst=(r + 1) % n), dist.irecv(t, src=(r - 1) % n)]
        for q in reqs:
            q.wait()
        check(f"isend_irecv-{tag}", t, all_[(r - 1) % n])
        outs = [T(np.zeros((2, 3))) for _ in range(n)]
        dist.all_to_all(outs, [T(data(r, npd, offset=10 * k)) for k in range(n)])
        for k in range(n):
            check(f"all_to_all{k}-{tag}", outs[k], data(k, npd, offset=10 * r))
        t = T(np.zeros((2, 3)))
        ops = [dist.P2POp(dist.isend, T(mine), (r + 1) % n), dist.P2POp(dist.irecv, t, (r - 1) % n)]
        for q in dist.batch_isend_irecv(ops):
            q.wait()
        check(f"batch_isend_irecv-{tag}", t, all_[(r - 1) % n])
        if r == 0:
            dist.send(T(mine), dst=1)
        else:
            t = T(np.zeros((2, 3)))
            assert dist.recv(t, src=0 if backend == "nccl" else None) == 0  # any source (MPI): the sender
            check(f"send_recv-{tag}", t, all_[0])
dist.barrier()
dist.monitored_barrier(wait_all_ranks=True)
objs = [None] * n
dist.all_gather_object(objs, {"rank": r, "name": f"r{r}"})
assert objs == [{"rank": k, "name": f"r{k}"} for k in range(n)], objs
lst = [1, "two", (3,)] if r == 0 else [None, None, None]
dist.broadcast_object_list(lst, src=0)
assert lst == [1, "two", (3,)], lst
gl = [None] * n if r == 0 else None
dist.gather_object(("g", r), gl, dst=0)
assert r != 0 or gl == [("g", k) for k in range(n)], gl
so = [None]
dist.scatter_object_list(so, [f"s{k}" for k in range(n)] if r == 0 else None, src=0)
assert so == [f"s{r}"], so
if r == 0:
    dist.send_object_list([{"a": 1}, [2]], dst=1)
else:
    got = [None, None]
    assert dist.recv_object_list(got, src=0) == 0 and got == [{"a": 1}, [2]], got
sys.stdout.write(f"{r} OK objects\n")
g = dist.new_group([1])
if r == 1:
    t = wb.ones(2, device=devices[0])
    dist.all_reduce(t, group=g)
    assert dist.get_rank(g) == 0 and dist.get_world_size(g) == 1 and dist.get_process_group_ranks(g) == [1]
    check("new_group", t, np.ones(2, np.float32))
else:
    assert g == dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(g) == -1
if backend == "nccl":
    assert dist.process_group.resolve(None).nccl is not None  # the CUDA ops went through NCCL
    # DDP on CUDA parameters: the broadcast and the bucket all-reduces run on NCCL
    from workbench.nn.parallel import DistributedDataParallel as DDP

    wb.manual_seed(0)
    X, Y = wb.randn(4, 3, dtype=wb.float64), wb.randn(4, 2, dtype=wb.float64)
    ref = wb.nn.Linear(3, 2).double()
    net = wb.nn.Linear(3, 2).double().to("cuda")
    with wb.no_grad():
        net.weight.copy_(ref.weight.to("cuda") + r)  # rank 1 starts elsewhere: the broadcast fixes it
        net.bias.copy_(ref.bias.to("cuda"))
    ddp = DDP(net, bucket_cap_mb=0.00001)
    wb.nn.functional.mse_loss(ref(X), Y).backward()
    wb.nn.functional.mse_loss(ddp(X.chunk(n)[r].to("cuda")), Y.chunk(n)[r].to("cuda")).backward()
    assert len(ddp.bucket_indices) == 2 and net.weight.grad.device.type == "cuda"
    for a, b in ((ref.weight.grad, net.weight.grad), (ref.bias.grad, net.bias.grad)):
        assert np.allclose(a.numpy(), b.cpu().numpy(), rtol=1e-12, atol=1e-12), (a, b)
    sys.stdout.write(f"{r} OK ddp-nccl\n")
dist.destroy_process_group()
