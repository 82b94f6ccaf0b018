"""DataLoader with worker processes: results, ordering, seeding, errors, dead workers, shared memory."""
import gc
import multiprocessing
import os
import random
import signal
import time
import warnings

import numpy as np
import pytest

import workbench as wb
from workbench.utils import data as wud

def _open_fds():
    return len(os.listdir("/proc/self/fd"))


def _shm_entries():
    return sorted(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else []


@pytest.fixture
def no_leaks():
    """Nothing left behind: no /dev/shm entries, no descriptors (the shared-memory files), no children."""
    from multiprocessing import resource_tracker

    from multiprocessing.reduction import ForkingPickler

    resource_tracker.ensure_running()  # the stdlib's own helper (spawn starts it once): not ours to count
    ForkingPickler.loads(ForkingPickler.dumps(wb.zeros(1)))  # and its descriptor-passing listener, once
    gc.collect()
    shm, fds = _shm_entries(), _open_fds()
    children = set(multiprocessing.active_children())
    yield
    # queues' feeder threads let go of their semaphores (named ones in /dev/shm under 'spawn') a moment later
    deadline = time.monotonic() + 10
    while (_open_fds() > fds or set(_shm_entries()) - set(shm)) and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.05)
    assert set(_shm_entries()) - set(shm) == set()
    assert _open_fds() <= fds
    assert set(multiprocessing.active_children()) <= children  # our processes are gone


class Squares(wud.Dataset):
    def __init__(self, n=20, fail_at=None, kill_at=None, sig=signal.SIGKILL, sleep=0.0):
        self.n, self.fail_at, self.kill_at, self.sig, self.sleep = n, fail_at, kill_at, sig, sleep

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise KeyError(f"no sample {i} here")
        if i == self.kill_at:
            import faulthandler

            faulthandler.disable()  # pytest's crash dump would only clutter the output
            os.kill(os.getpid(), self.sig)
        if self.sleep:
            time.sleep(self.sleep)
        return {"x": wb.full((3,), float(i)), "i": i}


def _flat(loader):
    return [b["i"].tolist() for b in loader]


def test_workers_give_the_same_batches_in_order(no_leaks, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    ds = Squares(23)
    ref = _flat(wud.DataLoader(ds, batch_size=4))
    for nw in (1, 3):
        loader = wud.DataLoader(ds, batch_size=4, num_workers=nw, prefetch_factor=1)
        assert len(loader) == 6
        batches = list(loader)
        assert [b["i"].tolist() for b in batches] == ref
        assert batches[2]["x"].shape == (4, 3) and batches[2]["x"][1].tolist() == [9.0] * 3
        assert batches[0]["x"].is_shared()  # it came back through shared memory


def test_shuffle_order_does_not_depend_on_num_workers(no_leaks):
    def run(nw):
        g = wb.Generator().manual_seed(11)
        return _flat(wud.DataLoader(Squares(17), batch_size=3, shuffle=True, generator=g, num_workers=nw))

    assert run(0) == run(2)


def test_more_workers_than_cpus_warns_as_pytorch(no_leaks, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    with pytest.warns(UserWarning, match="will create 2 worker processes in total. Our suggested max number of "
                                         "worker in current system is 1"):
        assert _flat(wud.DataLoader(Squares(4), batch_size=2, num_workers=2)) == [[0, 1], [2, 3]]


def test_in_order_false_delivers_everything(no_leaks):
    class Slow(wud.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            if i == 0:
                time.sleep(0.5)
            return i

    got = [b.tolist() for b in wud.DataLoader(Slow(), batch_size=2, num_workers=2, in_order=False)]
    assert sorted(x for b in got for x in b) == list(range(8))


class Seeds(wud.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = wud.get_worker_info()
        return {"wid": info.id, "seed": info.seed, "n": info.num_workers, "wb": wb.rand(1).item(),
                "np": float(np.random.rand()), "py": random.random()}


def test_worker_seeding(no_leaks):
    def run():
        wb.manual_seed(123)
        return list(wud.DataLoader(Seeds(), batch_size=None, num_workers=2))

    a, b = run(), run()
    assert [s["wid"] for s in a] == [0, 1, 0, 1] and all(s["n"] == 2 for s in a)
    assert a[1]["seed"] == a[0]["seed"] + 1
    for key in ("wb", "np", "py"):
        assert a[0][key] != a[1][key]  # each worker has its own stream
        assert [s[key] for s in a] == [s[key] for s in b]  # and manual_seed makes them reproducible
    wb.manual_seed(124)
    assert list(wud.DataLoader(Seeds(), batch_size=None, num_workers=2))[0]["wb"] != a[0]["wb"]


def test_worker_init_fn_runs_in_each_worker(no_leaks):
    class Tagged(wud.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return self.tag

    def init(worker_id):
        wud.get_worker_info().dataset.tag = 100 + worker_id

    assert [b.tolist() for b in wud.DataLoader(Tagged(), batch_size=2, num_workers=2, worker_init_fn=init)] == \
        [[100, 100], [101, 101]]


class Stream(wud.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __iter__(self):
        info = wud.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


def test_iterable_dataset_split_with_get_worker_info(no_leaks):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # more workers than this machine's cores, maybe
        batches = [b.tolist() for b in wud.DataLoader(Stream(11), batch_size=2, num_workers=3)]
    assert sorted(x for b in batches for x in b) == list(range(11))
    assert batches[:3] == [[0, 3], [1, 4], [2, 5]]  # round robin over the workers
    unbatched = [int(x) for x in wud.DataLoader(Stream(5), batch_size=None, num_workers=2)]
    assert sorted(unbatched) == list(range(5))


def test_worker_exception_reraised_with_traceback(no_leaks):
    loader = wud.DataLoader(Squares(10, fail_at=5), batch_size=2, num_workers=2)
    with pytest.raises(KeyError) as e:
        list(loader)
    msg = str(e.value)
    assert "Caught KeyError in DataLoader worker process 0" in msg
    assert "no sample 5 here" in msg and "__getitem__" in msg and "Original Traceback" in msg


def test_worker_init_fn_error_is_reported(no_leaks):
    def init(worker_id):
        raise ValueError("init failed in worker %d" % worker_id)

    with pytest.raises(ValueError, match="init failed in worker"):
        list(wud.DataLoader(Squares(4), num_workers=1, worker_init_fn=init))


def test_unpicklable_batch_is_reported_not_hung(no_leaks):
    with pytest.raises(Exception, match="DataLoader worker process 0"):
        list(wud.DataLoader([0, 1], batch_size=None, num_workers=1, collate_fn=lambda x: (lambda: x)))


@pytest.mark.parametrize("sig,name", [(signal.SIGKILL, "Killed"), (signal.SIGSEGV, "Segmentation fault")])
def test_dead_worker_raises_instead_of_hanging(sig, name, no_leaks):
    loader = wud.DataLoader(Squares(40, kill_at=9, sig=sig), batch_size=2, num_workers=2)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=rf"DataLoader worker \(pid \d+\) is killed by signal: {name}"):
        for _ in loader:
            pass
    assert time.monotonic() - t0 < 30


def test_timeout(no_leaks):
    loader = wud.DataLoader(Squares(4, sleep=1.5), batch_size=None, num_workers=1, timeout=0.3)
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.3 seconds"):
        next(iter(loader))


def test_early_break_and_garbage_collection_release_everything(no_leaks):
    loader = wud.DataLoader(Squares(200), batch_size=2, num_workers=2)
    for i, batch in enumerate(loader):
        if i == 3:
            break
    it = iter(loader)
    next(it)
    pids = [w.pid for w in it._workers]
    del it, batch
    gc.collect()
    assert pids and not any(os.path.exists(f"/proc/{pid}") for pid in pids)


class Pids(wud.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return os.getpid()


def test_persistent_workers_survive_epochs(no_leaks):
    loader = wud.DataLoader(Pids(), batch_size=2, num_workers=2, persistent_workers=True)
    e1 = {x for b in loader for x in b.tolist()}
    e2 = {x for b in loader for x in b.tolist()}
    assert e1 == e2 and len(e1) == 2 and os.getpid() not in e1
    assert [b.tolist() for b in wud.DataLoader(Stream(4), batch_size=2, num_workers=2, persistent_workers=True)] \
        == [[0, 2], [1, 3]]
    fresh = wud.DataLoader(Pids(), batch_size=2, num_workers=2)
    assert {x for b in fresh for x in b.tolist()} != {x for b in fresh for x in b.tolist()}
    del loader
    gc.collect()


def test_big_batch_travels_as_a_handle_not_pickled(no_leaks, tmp_path):
    log = tmp_path / "sizes"

    class Big(wud.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return wb.full((256, 1024), float(i))  # 1 MiB per sample, 2 MiB per batch

    def spy(worker_id):
        # in the worker: record the size of every message the result queue pickles
        from multiprocessing.reduction import ForkingPickler

        dumps = ForkingPickler.dumps.__func__

        def recording(cls, obj, protocol=None):
            out = dumps(cls, obj, protocol)
            with open(log, "a") as f:
                f.write(f"{len(out)}\n")
            return out

        ForkingPickler.dumps = classmethod(recording)

    batches = list(wud.DataLoader(Big(), batch_size=2, num_workers=1, worker_init_fn=spy))
    assert batches[1].shape == (2, 256, 1024) and batches[1][1, 5, 7].item() == 3.0
    sent = [int(x) for x in log.read_text().split()]
    assert len(sent) == 2 and max(sent) < 4096, sent


def test_spawn_context(no_leaks):
    ds = wud.TensorDataset(wb.arange(6.0), wb.arange(6))
    loader = wud.DataLoader(ds, batch_size=4, num_workers=1, multiprocessing_context="spawn")
    assert [y.tolist() for _, y in loader] == [[0, 1, 2, 3], [4, 5]]




def test_kept_batches_hold_no_descriptors_and_can_be_sent_on(no_leaks):
    fds = _open_fds()
    batches = list(wud.DataLoader(Squares(600), batch_size=2, num_workers=2))
    assert len(batches) == 300 and _open_fds() < fds + 50  # 300 batches of shared memory, no descriptor each
    assert batches[-1]["i"].tolist() == [598, 599] and batches[-1]["x"].is_shared()
    import workbench.multiprocessing as mp

    q = mp.Queue()
    q.put(batches[7]["x"])  # a received batch can go on to another consumer (it is moved to a new segment)
    again = q.get(timeout=30)
    assert again.tolist() == [[14.0] * 3, [15.0] * 3]
    again[0, 0] = -1.0
    assert batches[7]["x"][0, 0].item() == -1.0
    q.close()
    q.join_thread()
    del batches, again
