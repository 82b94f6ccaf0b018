"""utils.data in the main process: datasets, samplers, collation and the DataLoader's contract, vs PyTorch."""
import collections
import inspect
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import workbench as wb
from workbench.utils import data as wud


def _raises_like(fn_wb, fn_torch):
    """Both raise the same exception type with the same message."""
    with pytest.raises(Exception) as et:
        fn_torch()
    with pytest.raises(et.type) as ew:
        fn_wb()
    assert str(ew.value).startswith(str(et.value).split(":")[0])
    return ew.value


def _plain(x):
    """Nested containers of tensors -> comparable Python values (type name, dtype, values)."""
    if isinstance(x, (wb.Tensor, torch.Tensor)):
        return ("tensor", str(x.dtype).split(".")[-1], x.tolist())
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__,) + tuple(_plain(v) for v in x)
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [_plain(v) for v in x])
    return x


# --- datasets ------------------------------------------------------------------------------------------
def test_tensor_dataset():
    ds = wud.TensorDataset(wb.arange(4.0), wb.arange(4) * 10)
    assert len(ds) == 4
    x, y = ds[2]
    assert x.item() == 2.0 and y.item() == 20
    with pytest.raises(AssertionError, match="Size mismatch"):
        wud.TensorDataset(wb.zeros(2), wb.zeros(3))


def test_concat_chain_subset_stack():
    ds = wud.ConcatDataset([range(3), range(10, 12)])
    ref = tud.ConcatDataset([range(3), range(10, 12)])
    assert len(ds) == 5 and [ds[i] for i in range(-5, 5)] == [ref[i] for i in range(-5, 5)]
    assert ds.cumulative_sizes == ref.cumulative_sizes
    with pytest.raises(IndexError):
        ds[5]
    with pytest.raises(ValueError, match="absolute value"):
        ds[-6]
    with pytest.raises(AssertionError, match="empty"):
        wud.ConcatDataset([])
    assert list(wud.ChainDataset([range(2), range(5, 7)])) == [0, 1, 5, 6]
    s = wud.Subset("abcdef", [5, 1, 3])
    assert len(s) == 3 and [s[i] for i in range(3)] == ["f", "b", "d"] and s.__getitems__([0, 2]) == ["f", "d"]
    assert wud.StackDataset(a=range(3), b="xyz")[2] == {"a": 2, "b": "z"}
    assert wud.StackDataset(range(3), "xyz")[0] == (0, "x")
    with pytest.raises(ValueError):
        wud.StackDataset(range(3), "xy")

    class A(wud.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return i

    assert len(A() + A()) == 4
    with pytest.raises(NotImplementedError):
        wud.Dataset()[0]


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.33, 0.33, 0.34], [0.5, 0.5]])
def test_random_split_lengths_match_torch(lengths):
    n = 7 if lengths == [0.5, 0.5] else 10
    ours = wud.random_split(range(n), lengths, generator=wb.Generator().manual_seed(1))
    theirs = tud.random_split(range(n), lengths, generator=torch.Generator().manual_seed(1))
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert sorted(x for s in ours for x in s) == list(range(n))
    again = wud.random_split(range(n), lengths, generator=wb.Generator().manual_seed(1))
    assert [list(s) for s in ours] == [list(s) for s in again]


def test_random_split_errors():
    _raises_like(lambda: wud.random_split(range(10), [3, 3]), lambda: tud.random_split(range(10), [3, 3]))
    with pytest.raises(ValueError, match="between 0 and 1"):
        wud.random_split(range(10), [1.5, -0.5])


# --- samplers ------------------------------------------------------------------------------------------
def test_samplers():
    assert list(wud.SequentialSampler("abc")) == [0, 1, 2]
    g = wb.Generator().manual_seed(0)
    perm = list(wud.RandomSampler(range(6), generator=g))
    assert sorted(perm) == list(range(6))
    many = list(wud.RandomSampler(range(3), num_samples=7, generator=g))
    assert len(many) == 7 and sorted(many[:6]) == [0, 0, 1, 1, 2, 2]
    rep = wud.RandomSampler(range(3), replacement=True, num_samples=40, generator=g)
    assert len(rep) == 40 and len(list(rep)) == 40 and set(rep) <= {0, 1, 2}
    wb.manual_seed(3)
    a = list(wud.RandomSampler(range(20)))
    wb.manual_seed(3)
    assert a == list(wud.RandomSampler(range(20)))  # unseeded samplers follow manual_seed
    assert sorted(wud.SubsetRandomSampler([9, 4, 7], generator=g)) == [4, 7, 9]
    assert list(wud.WeightedRandomSampler([0.0, 0.0, 1.0], 5)) == [2] * 5
    w = list(wud.WeightedRandomSampler(wb.tensor([1.0, 1.0, 1.0]), 3, replacement=False, generator=g))
    assert sorted(w) == [0, 1, 2]
    bs = wud.BatchSampler(wud.SequentialSampler(range(10)), 3, drop_last=False)
    assert list(bs) == list(tud.BatchSampler(range(10), 3, False)) and len(bs) == 4
    assert len(wud.BatchSampler(range(10), 3, drop_last=True)) == 3


def test_sampler_errors_match_torch():
    _raises_like(lambda: wud.RandomSampler(range(3), num_samples=0),
                 lambda: tud.RandomSampler(range(3), num_samples=0))
    _raises_like(lambda: wud.BatchSampler(range(3), 0, False), lambda: tud.BatchSampler(range(3), 0, False))
    _raises_like(lambda: wud.WeightedRandomSampler([1, 2], 0), lambda: tud.WeightedRandomSampler([1, 2], 0))
    _raises_like(lambda: wud.WeightedRandomSampler([[1, 2]], 2), lambda: tud.WeightedRandomSampler([[1, 2]], 2))


# --- collation -----------------------------------------------------------------------------------------
P = collections.namedtuple("P", "a b")


@pytest.mark.parametrize("batch", [
    [1, 2, 3],
    [1.5, 2.5],
    [True, False],
    ["a", "b"],
    [np.float64(1.0), np.float64(2.0)],
    [np.array([1, 2]), np.array([3, 4])],
    [np.array([[1.0]], dtype=np.float32), np.array([[2.0]], dtype=np.float32)],
    [{"x": (1, [2, 3]), "s": "u"}, {"x": (4, [5, 6]), "s": "v"}],
    [P(1, np.float64(2.0)), P(3, np.float64(4.0))],
    [(1, 2.0), (3, 4.0)],
    [[1, "a"], [2, "b"]],
    [collections.OrderedDict(k=1), collections.OrderedDict(k=2)],
])
def test_default_collate_matches_torch(batch):
    ours, theirs = wud.default_collate(batch), tud.default_collate(batch)
    assert _plain(ours) == _plain(theirs)
    assert type(ours).__name__ == type(theirs).__name__


def test_default_collate_tensors_and_errors():
    out = wud.default_collate([wb.tensor([1.0, 2.0]), wb.tensor([3.0, 4.0])])
    assert out.tolist() == [[1.0, 2.0], [3.0, 4.0]] and out.dtype == wb.float32
    assert wud.default_collate([wb.tensor(1), wb.tensor(2)]).tolist() == [1, 2]
    a = wb.ones(2, requires_grad=True)
    batch = wud.default_collate([a, a * 2])  # stacked on the tape, as torch.stack would
    batch.sum().backward()
    assert batch.requires_grad and a.grad.tolist() == [3.0, 3.0]
    e = _raises_like(lambda: wud.default_collate([wb.zeros(2), wb.zeros(3)]),
                     lambda: tud.default_collate([torch.zeros(2), torch.zeros(3)]))
    assert isinstance(e, RuntimeError)
    _raises_like(lambda: wud.default_collate([object()]), lambda: tud.default_collate([object()]))
    _raises_like(lambda: wud.default_collate([np.array(["a"])]), lambda: tud.default_collate([np.array(["a"])]))
    _raises_like(lambda: wud.default_collate([[1, 2], [1]]), lambda: tud.default_collate([[1, 2], [1]]))


@pytest.mark.parametrize("data", [[np.array([1, 2]), 3, "s", (np.float32(1),)], np.array([1.0]), {"k": np.ones(2)},
                                  P(np.array(0), 1), 5, np.array(["x"])])
def test_default_convert_matches_torch(data):
    ours, theirs = wud.default_convert(data), tud.default_convert(data)
    if isinstance(theirs, np.ndarray):
        assert isinstance(ours, np.ndarray)
    else:
        assert _plain(ours) == _plain(theirs)


# --- the DataLoader's contract -----------------------------------------------------------------------
def test_signature_matches_torch():
    ours = inspect.signature(wud.DataLoader.__init__)
    theirs = inspect.signature(tud.DataLoader.__init__)
    assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in theirs.parameters.values()]
    for name in ("RandomSampler", "WeightedRandomSampler", "BatchSampler", "SubsetRandomSampler"):
        o, t = inspect.signature(getattr(wud, name).__init__), inspect.signature(getattr(tud, name).__init__)
        assert list(o.parameters) == list(t.parameters)


@pytest.mark.parametrize("kwargs", [
    dict(shuffle=True, sampler=[0, 1, 2]),
    dict(batch_size=2, batch_sampler=[[0, 1], [2]]),
    dict(prefetch_factor=2),
    dict(num_workers=-1),
    dict(persistent_workers=True),
    dict(timeout=-1),
    dict(batch_size=None, drop_last=True),
    dict(multiprocessing_context="spawn"),
    dict(num_workers=1, multiprocessing_context="nope"),
])
def test_argument_errors_match_torch(kwargs):
    e = _raises_like(lambda: wud.DataLoader(range(3), **kwargs), lambda: tud.DataLoader(range(3), **kwargs))
    assert isinstance(e, ValueError)


def test_iterable_dataset_argument_errors():
    class S(wud.IterableDataset):
        def __iter__(self):
            return iter(range(3))

    with pytest.raises(ValueError, match="shuffle"):
        wud.DataLoader(S(), shuffle=True)
    with pytest.raises(ValueError, match="sampler"):
        wud.DataLoader(S(), sampler=[0])
    with pytest.raises(TypeError):
        len(wud.DataLoader(S()))
    assert [b.tolist() for b in wud.DataLoader(S(), batch_size=2)] == [[0, 1], [2]]
    assert [b.tolist() for b in wud.DataLoader(S(), batch_size=2, drop_last=True)] == [[0, 1]]


def test_len_and_batches():
    ds = wud.TensorDataset(wb.arange(10.0), wb.arange(10))
    for bs, drop in [(3, False), (3, True), (5, False), (1, False)]:
        ours = wud.DataLoader(ds, batch_size=bs, drop_last=drop)
        theirs = tud.DataLoader(tud.TensorDataset(torch.arange(10.0), torch.arange(10)), batch_size=bs,
                                drop_last=drop)
        assert len(ours) == len(theirs) == len(list(ours))
        assert [_plain(b) for b in ours] == [_plain(b) for b in theirs]
    assert list(wud.DataLoader(range(5), batch_size=None)) == list(range(5))
    assert len(wud.DataLoader(range(10), batch_sampler=wud.BatchSampler(range(10), 4, False))) == 3
    with pytest.raises(ValueError, match="should not be set"):
        wud.DataLoader(ds).batch_size = 4


def test_shuffle_with_generator_is_reproducible():
    ds = list(range(20))
    a = [b.tolist() for b in wud.DataLoader(ds, batch_size=4, shuffle=True, generator=wb.Generator().manual_seed(5))]
    b = [b.tolist() for b in wud.DataLoader(ds, batch_size=4, shuffle=True, generator=wb.Generator().manual_seed(5))]
    assert a == b and sorted(x for batch in a for x in batch) == ds and a != [ds[i:i + 4] for i in range(0, 20, 4)]


def test_worker_info_is_none_in_main_process():
    assert wud.get_worker_info() is None
    info = wud.WorkerInfo(id=1, num_workers=2, seed=3, dataset=None)
    with pytest.raises(RuntimeError):
        info.id = 5


def test_pin_memory_without_accelerator_warns_and_is_a_no_op(monkeypatch):
    from workbench import cuda

    monkeypatch.setattr(cuda, "is_available", lambda: False)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        batch = next(iter(wud.DataLoader(wud.TensorDataset(wb.arange(4.0)), batch_size=2, pin_memory=True)))
    assert any("no accelerator is found" in str(x.message) for x in w)
    assert not batch[0].is_pinned()


def test_pin_memory_with_cuda_marks_batches(fake_cuda):
    loader = wud.DataLoader([{"x": np.ones(2), "s": "a"}] * 3, batch_size=2, pin_memory=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        batches = list(loader)
    assert batches[0]["x"].is_pinned() and batches[0]["s"] == ["a", "a"]
    assert batches[0]["x"].device.type == "cpu"


@pytest.mark.parametrize("num_workers", [0, 2])
def test_loader_batches_reach_the_device(device, num_workers):
    """Host batches (pinned where there is an accelerator) move to the device; device datasets collate there."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((10, 3)).astype(np.float32), rng.integers(0, 4, 10)
    pin = device != "cpu"
    loader = wud.DataLoader(wud.TensorDataset(wb.tensor(x), wb.tensor(y)), batch_size=4, pin_memory=pin,
                            num_workers=num_workers)
    xs, ys = [], []
    for xb, yb in loader:
        assert xb.device.type == "cpu" and xb.is_pinned() == pin and yb.is_pinned() == pin
        xd, yd = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
        assert xd.device.type == yd.device.type == device and xd.dtype == wb.float32 and yd.dtype == wb.int64
        xs.append(xd.cpu().numpy())
        ys.append(yd.cpu().numpy())
    np.testing.assert_array_equal(np.concatenate(xs), x)
    np.testing.assert_array_equal(np.concatenate(ys), y)
    if num_workers:
        return  # device tensors don't cross into worker processes (nor do CUDA tensors in PyTorch's)
    dev = wud.DataLoader(wud.TensorDataset(wb.tensor(x, device=device)), batch_size=4, shuffle=True,
                         generator=wb.Generator().manual_seed(0), pin_memory=pin)
    batches = [b for (b,) in dev]
    assert all(b.device.type == device and not b.is_pinned() for b in batches)
    np.testing.assert_array_equal(np.sort(np.concatenate([b.cpu().numpy() for b in batches]), axis=0),
                                  np.sort(x, axis=0))


def test_tensor_pin_memory(fake_cuda):
    x = wb.arange(4.0)
    p = x.pin_memory()
    assert p.is_pinned() and not x.is_pinned() and p.pin_memory() is p
    assert p.tolist() == x.tolist() and p.data_ptr() != x.data_ptr()  # a copy, as PyTorch
    w = wb.ones(2, requires_grad=True)
    pw = w.pin_memory()
    (pw * 3).sum().backward()  # the copy stays on the tape
    assert pw.is_pinned() and w.grad.tolist() == [3.0, 3.0]
    assert wb.tensor([1.0, 2.0], pin_memory=True).is_pinned()
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        x.cuda().pin_memory()
    with pytest.raises(RuntimeError, match="needs a CPU tensor"):
        wb.tensor([1.0], device="cuda", pin_memory=True)


def test_pin_memory_needs_cuda(monkeypatch):
    from workbench import _backend

    monkeypatch.setattr(_backend, "_cupy", None)
    monkeypatch.setattr(_backend, "_cupy_error", "CUDA is not available: no GPU here")
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        wb.arange(2.0).pin_memory()
