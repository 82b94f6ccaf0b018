"""workbench.multiprocessing: shared-memory tensors across processes, Hogwild training, nothing left behind."""
import copy
import gc
import os
import pickle
import time

import pytest

import workbench as wb
import workbench.multiprocessing as mp
from workbench.multiprocessing.reductions import reduce_tensor_shared


def _open_fds():
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def no_leaks():
    """No new /dev/shm entries, no descriptors and no child processes remain after the test."""
    from multiprocessing import resource_tracker
    from multiprocessing.reduction import ForkingPickler

    resource_tracker.ensure_running()  # the stdlib's helper process, started once by 'spawn'
    ForkingPickler.loads(ForkingPickler.dumps(wb.zeros(1)))  # and the descriptor-passing listener, once
    gc.collect()
    shm, fds = set(os.listdir("/dev/shm")), _open_fds()
    children = set(mp.active_children())
    yield
    deadline = time.monotonic() + 10
    while (_open_fds() > fds or set(os.listdir("/dev/shm")) - shm) and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.05)
    assert set(os.listdir("/dev/shm")) - shm == set()
    assert _open_fds() <= fds
    assert set(mp.active_children()) <= children  # our processes are gone


def test_drop_in_for_the_stdlib_module():
    for name in ("Process", "Queue", "SimpleQueue", "Pool", "Pipe", "Manager", "Event", "Lock", "Value", "Array",
                 "get_context", "set_start_method", "get_start_method", "cpu_count", "current_process"):
        assert hasattr(mp, name), name
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}  # PyTorch's on Linux
    mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError, match="not supported"):
        mp.set_sharing_strategy("file_name")


def test_share_memory_in_place(no_leaks):
    t = wb.arange(12.0).reshape(3, 4)
    assert not t.is_shared()
    r = t.share_memory_()
    assert r is t and t.is_shared()
    assert t.tolist() == wb.arange(12.0).reshape(3, 4).tolist()
    t.add_(1)
    view = t[1:, ::2]
    assert view.is_shared() and view.tolist() == [[5.0, 7.0], [9.0, 11.0]]
    strided = wb.arange(10.0)[2:9:3]
    strided.share_memory_()
    assert strided.is_shared() and strided.tolist() == [2.0, 5.0, 8.0]
    empty = wb.zeros(0, 3).share_memory_()
    assert empty.is_shared() and empty.shape == (0, 3)
    del t, view, strided, empty


def test_ordinary_pickle_and_deepcopy_copy_values():
    t = wb.tensor([1.0, 2.0], requires_grad=True)
    for c in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert c.tolist() == [1.0, 2.0] and c.requires_grad and not c.is_shared()
        with wb.no_grad():
            c.add_(1)
        assert t.tolist() == [1.0, 2.0]


def test_handle_is_small_and_maps_the_same_memory(no_leaks):
    from multiprocessing.reduction import ForkingPickler

    big = wb.zeros(1024, 1024)  # 4 MiB
    payload = ForkingPickler.dumps(big)
    assert len(payload) < 1024 and big.is_shared()
    assert ForkingPickler.loads(payload).data_ptr() == big.data_ptr()  # one mapping per shared file
    q = mp.Queue()
    q.put(big)
    got = q.get(timeout=30)
    got[3, 4] = 7.0
    assert big[3, 4].item() == 7.0  # same memory, not a copy
    view = big[10:12, 5]
    q.put(view)
    got_view = q.get(timeout=30)
    assert got_view.shape == (2,) and got_view.stride() == (1024,)
    q.close()
    q.join_thread()
    del big, got, view, got_view, payload


def test_refuses_non_leaf_requiring_grad_and_cuda(fake_cuda):
    x = wb.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="non-leaf tensor which requires_grad"):
        reduce_tensor_shared(x * 2)
    with pytest.raises(RuntimeError, match="cuda"):
        reduce_tensor_shared(wb.ones(2, device="cuda"))
    assert wb.ones(2, device="cuda").share_memory_().is_shared()  # a no-op, as in PyTorch


def _child_increments(q, done):
    t = q.get(timeout=60)
    t += 1
    done.put(t.requires_grad)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_queue_to_child_process_shares_memory(method, no_leaks):
    ctx = mp.get_context(method)
    t = wb.zeros(5)
    q, done = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_child_increments, args=(q, done))
    p.start()
    q.put(t)
    assert done.get(timeout=60) is False
    p.join(timeout=60)
    assert p.exitcode == 0 and t.tolist() == [1.0] * 5
    for queue in (q, done):
        queue.close()
        queue.join_thread()


# --- Hogwild: several processes train one shared model -------------------------------------------------
TRUE_W = [[1.5], [-2.0], [0.5]]


def _data(seed, n=64):
    g = wb.Generator().manual_seed(seed)
    x = wb.randn(n, 3, generator=g)
    return x, x @ wb.tensor(TRUE_W)


def _nn():
    try:
        from workbench import nn, optim

        nn.Linear, optim.SGD  # noqa: B018 - both must exist
        return nn, optim
    except Exception:  # nn/optim not ready: train raw tensors
        return None, None


def _hogwild_worker(model, rank, steps):
    nn, optim = _nn()
    x, y = _data(rank)
    if nn is not None:  # PyTorch's Hogwild example: each process steps its own optimizer on the shared model
        opt = optim.SGD(model.parameters(), lr=0.05)
        for _ in range(steps):
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
        return
    (w,) = model
    for _ in range(steps):
        w.grad = None
        ((x @ w.t() - y) ** 2).mean().backward()
        with wb.no_grad():
            w -= 0.05 * w.grad


def _loss(w):
    x, y = _data(99)
    with wb.no_grad():
        return ((x @ w.t() - y) ** 2).mean().item()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_hogwild_training_updates_the_shared_model(method, no_leaks):
    nn, _ = _nn()
    if nn is not None:
        model = nn.Linear(3, 1, bias=False)
        with wb.no_grad():
            model.weight.zero_()
        model.share_memory()
        w = model.weight
    else:
        w = wb.zeros(1, 3, requires_grad=True)
        w.share_memory_()
        model = [w]
    assert w.is_shared()
    before = _loss(w)
    ctx = mp.get_context(method)
    procs = [ctx.Process(target=_hogwild_worker, args=(model, rank, 60)) for rank in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    after = _loss(w)
    assert w.detach().abs().sum().item() > 0  # the parent's tensor changed: the children wrote into it
    assert after < before * 0.01, (before, after)
    assert [round(v, 1) for v in w.detach().reshape(-1).tolist()] == [1.5, -2.0, 0.5]
    del procs, model, w


def _double(t):
    return t * 2


def test_pool_map_returns_tensors(no_leaks):
    with mp.get_context("fork").Pool(2) as pool:
        out = pool.map(_double, [wb.ones(3) * i for i in range(4)])
    assert [o.tolist() for o in out] == [[2.0 * i] * 3 for i in range(4)]
    del out, pool


def _fill(i, t, fail_at):
    if i == fail_at:
        raise ValueError(f"rank {i} refuses")
    t[i] = i + 1.0


def _die(i):
    import os
    import signal

    if i == 1:
        os.kill(os.getpid(), signal.SIGKILL)


def test_start_processes_runs_ranks_and_reports_failures(no_leaks):
    t = wb.zeros(3).share_memory_()
    mp.start_processes(_fill, args=(t, -1), nprocs=3, start_method="fork")
    assert t.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(mp.ProcessRaisedException, match="rank 2 refuses") as e:
        mp.start_processes(_fill, args=(t, 2), nprocs=3, start_method="fork")
    assert e.value.error_index == 2
    with pytest.raises(mp.ProcessExitedException, match="process 1 terminated with signal SIGKILL"):
        mp.start_processes(_die, nprocs=2, start_method="fork")


def _count_up(i, t, n):
    for _ in range(n):
        t[i] = t[i].item() + 1.0


def test_setitem_on_a_shared_tensor_stores_only_its_elements(no_leaks):
    # two processes count up their own element of one shared tensor: an in-place write that stored the whole
    # array back would now and then put back the other's element as it was a moment before, losing counts
    t = wb.zeros(2).share_memory_()
    mp.start_processes(_count_up, args=(t, 5000), nprocs=2, start_method="fork")
    assert t.tolist() == [5000.0, 5000.0]


def test_spawn(no_leaks):
    t = wb.zeros(3).share_memory_()
    mp.spawn(_fill, args=(t, -1), nprocs=2)
    assert t.tolist() == [1.0, 2.0, 0.0]


# --- strategy 'file_system': storage in named /dev/shm files, handles by name ---------------------------
@pytest.fixture
def file_system():
    mp.set_sharing_strategy("file_system")
    yield
    mp.set_sharing_strategy("file_descriptor")


def _ours():
    return {f for f in os.listdir("/dev/shm") if f.startswith(f"workbench_{os.getpid()}_")}


def test_file_system_storage_is_a_named_file_removed_by_its_last_holder(no_leaks, file_system):
    from multiprocessing.reduction import ForkingPickler

    assert mp.get_sharing_strategy() == "file_system"
    t = wb.arange(6.0).reshape(2, 3).share_memory_()
    (name,) = _ours()
    assert t.is_shared() and t.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    payload = bytes(ForkingPickler.dumps(t[:, 1]))
    assert name.encode() in payload and len(payload) < 1024
    del t
    gc.collect()
    assert _ours() == {name}  # the handle in flight holds the file
    got = ForkingPickler.loads(payload)
    assert got.tolist() == [1.0, 4.0] and got.is_shared()
    assert _ours() == {name}  # now held by got's mapping
    del got
    gc.collect()
    assert _ours() == set()
    with pytest.raises(RuntimeError, match="gone"):
        ForkingPickler.loads(payload)


def test_file_system_storage_shared_before_a_switch_keeps_its_kind(no_leaks):
    from multiprocessing.reduction import ForkingPickler

    t = wb.zeros(3).share_memory_()  # anonymous memory, by descriptor
    mp.set_sharing_strategy("file_system")
    try:
        u = ForkingPickler.loads(ForkingPickler.dumps(t))
        assert _ours() == set() and u.data_ptr() == t.data_ptr()
        v = wb.ones(2)
        w = ForkingPickler.loads(ForkingPickler.dumps(v))  # new storage: a named file
        assert len(_ours()) == 1 and w.data_ptr() == v.data_ptr()
    finally:
        mp.set_sharing_strategy("file_descriptor")
    del t, u, v, w
    gc.collect()
    assert _ours() == set()


def _child_keeps_many(q, done, n):
    fds = _open_fds()
    kept = [q.get(timeout=60) for _ in range(n)]
    for k in kept:
        k += 1
    done.put((_open_fds() - fds, mp.get_sharing_strategy()))
    done.get(timeout=60)  # hold them until the parent has looked


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_file_system_child_shares_memory_and_holds_no_descriptors(method, no_leaks, file_system):
    ctx = mp.get_context(method)
    ts = [wb.zeros(4) for _ in range(20)]
    q, done = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_child_keeps_many, args=(q, done, len(ts)))
    p.start()
    for t in ts:
        q.put(t)
    new_fds, child_strategy = done.get(timeout=60)
    assert new_fds <= 2  # 20 tensors received, no descriptor kept for them
    assert child_strategy == ("file_system" if method == "fork" else "file_descriptor")  # per process
    assert all(t.tolist() == [1.0] * 4 for t in ts)  # the child's writes are ours
    assert len(_ours()) == len(ts)
    done.put(None)
    p.join(timeout=60)
    assert p.exitcode == 0
    del ts, t
    gc.collect()
    assert _ours() == set()
    for queue in (q, done):
        queue.close()
        queue.join_thread()
