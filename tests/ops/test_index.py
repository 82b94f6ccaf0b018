"""Indexing ops beyond the generic spec suite: errors vs PyTorch, gradients of repeated indices,
assignment, named tuples, in-place forms, devices."""
import numpy as np
import pytest

import workbench as wb

from _op_errors import assert_same_error

torch = pytest.importorskip("torch")


def _x(L, *shape):
    return L.arange(int(np.prod(shape)), dtype=L.float32).reshape(*shape)


ERRORS = {
    "getitem_float_index": lambda L: _x(L, 3)[L.tensor([1.5])],
    "getitem_out_of_range": lambda L: _x(L, 3)[L.tensor([3])],
    "getitem_mask_shape": lambda L: _x(L, 3)[L.tensor([True, False])],
    "gather_float_index": lambda L: _x(L, 2, 2).gather(1, L.tensor([[0.0]])),
    "gather_out_of_bounds": lambda L: _x(L, 2, 2).gather(1, L.tensor([[2]])),
    "gather_ndim": lambda L: _x(L, 2, 2).gather(1, L.tensor([0])),
    "scatter_dtype": lambda L: _x(L, 3).scatter(0, L.tensor([0]), L.tensor([1.0], dtype=L.float64)),
    "scatter_reduce_name": lambda L: _x(L, 3).scatter_reduce(0, L.tensor([0]), _x(L, 1), "median"),
    "index_select_range": lambda L: _x(L, 3).index_select(0, L.tensor([3])),
    "index_select_2d_index": lambda L: _x(L, 3).index_select(0, L.tensor([[0]])),
    "index_select_float_index": lambda L: _x(L, 3).index_select(0, L.tensor([0.0])),
    "masked_fill_mask_dtype": lambda L: _x(L, 3).masked_fill(L.tensor([1, 0, 1]), 0.0),
    "masked_fill_value_dim": lambda L: _x(L, 3).masked_fill(L.tensor([True, False, True]), L.tensor([1.0, 2.0])),
    "masked_select_mask_dtype": lambda L: _x(L, 3).masked_select(L.tensor([1, 0, 1])),
    "take_out_of_range": lambda L: _x(L, 2, 2).take(L.tensor([4])),
    "topk_k": lambda L: _x(L, 3).topk(4),
    "kthvalue_k": lambda L: _x(L, 3).kthvalue(4),
    "bincount_negative": lambda L: L.bincount(L.tensor([-1, 2])),
    "bincount_2d": lambda L: L.bincount(L.tensor([[1, 2]])),
    "searchsorted_dims": lambda L: L.searchsorted(_x(L, 2, 3), _x(L, 3, 1)),
    "put_sizes": lambda L: _x(L, 3).put(L.tensor([0, 1]), _x(L, 1)),
    "index_add_shape": lambda L: _x(L, 3, 2).index_add(0, L.tensor([0]), _x(L, 1, 3)),
    "setitem_shape": lambda L: _x(L, 3, 2).__setitem__(0, _x(L, 3)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_pytorch(name):
    assert_same_error(ERRORS[name])


def _grad_pair(fn, *arrays):
    out = []
    for L in (wb, torch):
        ts = [L.tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray) else a for a in arrays]
        y = fn(L, *ts)
        y.backward(L.tensor(np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape))))
        out.append([t.grad.numpy() for t in ts if getattr(t, "requires_grad", False)])
    return out


GRADS = {
    "repeated_advanced_index": (lambda L, x: x[[0, 0, 2, 0]] * 2, np.arange(6.0).reshape(3, 2)),
    "two_index_arrays": (lambda L, x: x[L.tensor([[0, 1], [1, 1]]), L.tensor([2, 2])], np.arange(12.0).reshape(3, 4)),
    "mask_and_slice": (lambda L, x: x[x > 2][1:], np.arange(6.0)),
    "none_ellipsis_int": (lambda L, x: x[None, ..., 1], np.arange(6.0).reshape(3, 2)),
    "gather_repeats": (lambda L, x: x.gather(0, L.tensor([[0, 0], [0, 1], [0, 0]])), np.arange(4.0).reshape(2, 2)),
    "index_select_repeats": (lambda L, x: x.index_select(0, L.tensor([1, 1, 0])), np.arange(4.0).reshape(2, 2)),
    "take_repeats": (lambda L, x: x.take(L.tensor([3, 3, 0])), np.arange(4.0).reshape(2, 2)),
    "setitem_value_grad": (lambda L, x, v: _set(x, v), np.arange(6.0).reshape(3, 2), np.array([10.0, 20.0])),
    "index_put_accumulate": (lambda L, x, v: x.index_put((L.tensor([0, 0]),), v, accumulate=True),
                             np.arange(4.0).reshape(2, 2), np.ones((2, 2))),
    "sort_values": (lambda L, x: x.sort(descending=True).values, np.array([3.0, 1.0, 2.0, 5.0])),
    "topk_values": (lambda L, x: x.topk(2, dim=0).values, np.array([[3.0, 1.0], [2.0, 5.0], [0.0, 4.0]])),
    "kthvalue_values": (lambda L, x: x.kthvalue(2, dim=1).values, np.array([[3.0, 1.0, 2.0], [2.0, 5.0, 9.0]])),
    "scatter_reduce_amax_ties": (lambda L, x, s: x.scatter_reduce(0, L.tensor([0, 0, 1]), s, "amax"),
                                 np.array([2.0, 1.0]), np.array([2.0, 2.0, 0.5])),
    "masked_scatter": (lambda L, x, s: x.masked_scatter(L.tensor([[True, False], [True, True]]), s),
                       np.zeros((2, 2)), np.arange(4.0)),
}


def _set(x, v):
    y = x * 1
    y[1:, 0] = v
    return y


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_pytorch(name):
    fn, *arrays = GRADS[name]
    ours, theirs = _grad_pair(fn, *arrays)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-12)


def test_named_tuples_and_inplace_forms():
    r = wb.sort(wb.tensor([3, 1, 2]))
    values, indices = r
    assert r.values is values and r.indices.tolist() == [1, 2, 0] and indices.dtype == wb.int64
    t = wb.topk(wb.tensor([1.0, 3.0, 2.0]), 1)
    assert t.indices.tolist() == [1] and type(t).__name__ == "topk"
    x = wb.zeros(2, 3)
    assert x.scatter_(1, wb.tensor([[2], [0]]), 1.0) is x
    x.index_fill_(1, wb.tensor([1]), 5.0).masked_fill_(x == 0, -1.0)
    x.index_add_(0, wb.tensor([0]), wb.ones(1, 3))
    x.put_(wb.tensor([5]), wb.tensor([7.0]))
    tx = torch.zeros(2, 3)
    tx.scatter_(1, torch.tensor([[2], [0]]), 1.0)
    tx.index_fill_(1, torch.tensor([1]), 5.0).masked_fill_(tx == 0, -1.0)
    tx.index_add_(0, torch.tensor([0]), torch.ones(1, 3))
    tx.put_(torch.tensor([5]), torch.tensor([7.0]))
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
    assert x._version == 5


def test_sort_stable_descending_and_nan_like_pytorch():
    v = np.array([1.0, np.nan, 3.0, 1.0, 3.0, np.nan, -2.0])
    for desc in (False, True):
        ours = wb.tensor(v).sort(descending=desc, stable=True)
        theirs = torch.tensor(v).sort(descending=desc, stable=True)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        assert ours.indices.tolist() == theirs.indices.tolist()


def test_unique_variants_match_pytorch():
    v = torch.tensor([[2, 1], [2, 1], [0, 5]])
    w = wb.tensor(v.numpy())
    for kw in ({}, {"return_counts": True}, {"return_inverse": True, "dim": 0}, {"dim": 1, "return_counts": True}):
        ours, theirs = wb.unique(w, **kw), torch.unique(v, **kw)
        ours = ours if isinstance(ours, tuple) else (ours,)
        theirs = theirs if isinstance(theirs, tuple) else (theirs,)
        for o, t in zip(ours, theirs):
            np.testing.assert_array_equal(o.numpy(), t.numpy())
    ours = wb.unique_consecutive(w, dim=0, return_counts=True)
    theirs = torch.unique_consecutive(v, dim=0, return_counts=True)
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o.numpy(), t.numpy())


def test_searchsorted_forms():
    b = wb.tensor([1.0, 2.0, 4.0])
    assert wb.searchsorted(b, 2.0).item() == 1 and wb.searchsorted(b, 2.0, right=True).item() == 2
    assert wb.searchsorted(b, wb.tensor([5.0]), out_int32=True).dtype == wb.int32
    unsorted = wb.tensor([4.0, 1.0, 2.0])
    assert wb.searchsorted(unsorted, wb.tensor([3.0]), sorter=unsorted.argsort()).tolist() == [2]
    assert wb.bucketize(wb.tensor([2.0, 3.0]), b).tolist() == torch.bucketize(torch.tensor([2.0, 3.0]),
                                                                              torch.tensor([1.0, 2.0, 4.0])).tolist()


def test_nonzero_and_counting_dtypes():
    assert wb.nonzero(wb.tensor(3.0)).shape == torch.nonzero(torch.tensor(3.0)).shape
    assert wb.argwhere(wb.tensor([[0, 1]])).tolist() == [[0, 1]]
    assert wb.bincount(wb.tensor([1, 1]), wb.tensor([0.5, 0.5])).dtype == wb.float32
    assert wb.bincount(wb.tensor([1]), wb.tensor([2], dtype=wb.int32)).dtype == wb.float64
    assert wb.histc(wb.tensor([1.0, 1.0, 1.0]), bins=3).tolist() == torch.histc(torch.tensor([1.0] * 3), 3).tolist()


def test_indexing_ops_on_fake_cuda(fake_cuda):
    x = wb.arange(6.0, device="cuda").view(2, 3).requires_grad_()
    cpu_idx = wb.tensor([2, 0])
    y = x[:, cpu_idx] + x.gather(1, wb.tensor([[1, 1], [0, 2]], device="cuda")) + x.index_select(1, cpu_idx)
    y = y + x.masked_fill(x > 2, 0.0)[:, :2] + x.sort(1, descending=True).values[:, :2]
    y.sum().backward()
    assert y.device.type == "cuda" and x.grad.device.type == "cuda"
    tx = torch.arange(6.0).view(2, 3).requires_grad_()
    ti = torch.tensor([2, 0])
    ty = tx[:, ti] + tx.gather(1, torch.tensor([[1, 1], [0, 2]])) + tx.index_select(1, ti)
    ty = ty + tx.masked_fill(tx > 2, 0.0)[:, :2] + tx.sort(1, descending=True).values[:, :2]
    ty.sum().backward()
    np.testing.assert_array_equal(y.detach().cpu().numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(x.grad.cpu().numpy(), tx.grad.numpy())
    z = wb.zeros(4, device="cuda")
    z.index_add_(0, wb.tensor([1, 1, 3], device="cuda"), wb.ones(3, device="cuda"))
    assert z.cpu().tolist() == [0.0, 2.0, 0.0, 1.0]
    u = wb.unique(wb.tensor([3, 1, 3], device="cuda"), return_counts=True)
    assert u[0].device.type == "cuda" and u[1].cpu().tolist() == [1, 2]


def test_int32_indices_are_accepted_like_pytorch():
    i32 = wb.tensor([[1, 0]], dtype=wb.int32)
    x = wb.tensor([[1.0, 2.0]])
    assert x.gather(1, i32).tolist() == [[2.0, 1.0]]
    assert wb.zeros(1, 2).scatter(1, i32, x).tolist() == [[2.0, 1.0]]
    assert x.index_select(1, wb.tensor([1], dtype=wb.int32)).tolist() == [[2.0]]


KEYS = [
    lambda L: 1, lambda L: -1, lambda L: slice(None, None, 2), lambda L: (Ellipsis, 1), lambda L: (None, 1, None),
    lambda L: (slice(1, None), [0, 2, 2]), lambda L: ([1, 0], [3, 3]), lambda L: (L.tensor([[0], [2]]), L.tensor([1, 3])),
    lambda L: (slice(None), L.tensor([True, False, True, True])), lambda L: L.tensor([True, False, True]),
    lambda L: ([0, 2], slice(None), None), lambda L: (1, [0, 3]), lambda L: ([0], Ellipsis, [1]),
    lambda L: (L.tensor(1), slice(2)), lambda L: (slice(None), L.tensor([-1, 0])), lambda L: [[0, 1], [1, 2]],
]


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
@pytest.mark.parametrize("k", range(len(KEYS)))
def test_getitem_and_setitem_forms_match_pytorch(k):
    base = np.arange(12.0).reshape(3, 4)
    res = []
    for L in (wb, torch):
        key = KEYS[k](L)
        a = L.tensor(base, requires_grad=True)
        y = a[key]
        y.backward(L.ones_like(y) * 2)
        x = L.tensor(base) * 1
        x[key] = -1.0
        x2 = L.tensor(base) * 1
        x2[key] = L.arange(y.numel(), dtype=L.float64).reshape(tuple(y.shape)) if y.numel() else 0.0
        res.append((y.detach().numpy(), a.grad.numpy(), x.numpy(), x2.numpy()))
    for o, t in zip(*res):
        np.testing.assert_array_equal(o, t)


def test_nonzero_static_and_index_put_function_match_pytorch():
    for a in ([0, 3, 4], [[0, 1], [1, 0]], []):
        for size in (0, 1, 3):
            ours = wb.nonzero_static(wb.tensor(a), size=size, fill_value=-7)
            theirs = torch.nonzero_static(torch.tensor(a), size=size, fill_value=-7)
            assert ours.tolist() == theirs.tolist() and tuple(ours.shape) == tuple(theirs.shape)
    x, tx = wb.zeros(3), torch.zeros(3)
    wb.index_put_(x, (wb.tensor([1, 1]),), wb.tensor(2.0), accumulate=True)
    torch.index_put_(tx, (torch.tensor([1, 1]),), torch.tensor(2.0), accumulate=True)
    assert x.tolist() == tx.tolist() and x._version == tx._version


SCATTER_PROD_ZEROS = [  # (self, src) with index [0, 0, 1, 2, 2]: zeros in self, one or two zeros per slot in src
    ([2.0, 3.0, 4.0], [1.5, 2.0, 3.0, 0.5, 2.5]),
    ([0.0, 2.0, 3.0], [0.0, 5.0, 4.0, 2.0, 0.0]),
    ([2.0, 0.0, 3.0], [1.5, 5.0, 0.0, 0.0, 0.0]),
]


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("x,s", SCATTER_PROD_ZEROS)
def test_scatter_reduce_prod_second_derivatives_match_pytorch(x, s, include_self):
    two_zeros = s[3:] == [0.0, 0.0] or s[:2] == [0.0, 0.0]
    got = []
    for L in (wb, torch):
        xt, st = L.tensor(x, dtype=L.float64, requires_grad=True), L.tensor(s, dtype=L.float64, requires_grad=True)
        out = xt.scatter_reduce(0, L.tensor([0, 0, 1, 2, 2]), st, "prod", include_self=include_self)
        gx, gs = L.autograd.grad(out, (xt, st), L.tensor([1.0, -2.0, 0.5], dtype=L.float64, requires_grad=True),
                                  create_graph=True)
        first = [gx.detach().numpy(), gs.detach().numpy()]
        second = L.autograd.grad((gx * gx).sum(), (xt, st), allow_unused=True)
        if two_zeros:
            with pytest.raises(RuntimeError) as e:
                L.autograd.grad((gs * gs).sum(), (xt, st))
            second = [str(e.value)]
        else:
            second += L.autograd.grad((gs * gs).sum(), (xt, st), allow_unused=True)
        got.append(first + [t if isinstance(t, str) else (0 if t is None else t.numpy()) for t in second])
    for ours, theirs in zip(*got):
        if isinstance(theirs, str):
            assert ours == theirs  # "scatter_reduce(): Double backward is unsupported for src when >1 zeros..."
        else:
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def _out_cases(t):
    f = t.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    return {  # name: (call, the out dtype PyTorch writes)
        "masked_select": (lambda o: t.masked_select(f, f > 1, out=o), "float32"),
        "take_along_dim": (lambda o: t.take_along_dim(f, f.long().clamp(max=2), 1, out=o), "float32"),
        "take_along_dim_flat": (lambda o: t.take_along_dim(f, t.tensor([0, 5]), out=o), "float32"),
        "nonzero": (lambda o: t.nonzero(f, out=o), "int64"),
        "searchsorted": (lambda o: t.searchsorted(t.tensor([1.0, 2, 3]), f, out=o), "int64"),
        "searchsorted_int32": (lambda o: t.searchsorted(t.tensor([1.0, 2, 3]), f, out_int32=True, out=o), "int32"),
        "bucketize": (lambda o: t.bucketize(f, t.tensor([1.0, 2, 3]), right=True, out=o), "int64"),
        "index_add": (lambda o: t.index_add(f, 0, t.tensor([1]), f[:1], alpha=2, out=o), "float32"),
        "index_copy": (lambda o: t.index_copy(f, 0, t.tensor([1]), f[:1], out=o), "float32"),
        "index_reduce": (lambda o: t.index_reduce(f, 0, t.tensor([1]), f[:1], "prod", out=o), "float32"),
        "scatter": (lambda o: t.scatter(f, 1, t.tensor([[0], [1]]), 9.0, out=o), "float32"),
        "scatter_add_reduce": (lambda o: t.scatter(f, 1, t.tensor([[0], [1]]), f, reduce="add", out=o), "float32"),
    }


@pytest.mark.parametrize("name", list(_out_cases(wb)))
def test_out_as_pytorch(name):
    # the result lands in out (returned), and an out of another dtype is refused, as PyTorch, and left as it was
    (ours, dtype), (theirs, _) = _out_cases(wb)[name], _out_cases(torch)[name]
    o, t = wb.empty(0, dtype=getattr(wb, dtype)), torch.empty(0, dtype=getattr(torch, dtype))
    assert ours(o) is o and theirs(t) is t
    assert o.dtype.name == dtype and o.tolist() == t.tolist()
    other = "float64" if dtype != "float64" else "int64"
    with pytest.raises(RuntimeError):
        theirs(torch.empty(0, dtype=getattr(torch, other)))
    o = wb.empty(0, dtype=getattr(wb, other))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        ours(o)
    assert tuple(o.shape) == (0,)


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
@pytest.mark.parametrize("k", range(len(KEYS)))
def test_a_store_nothing_records_matches_the_store_through_index_put(k):
    # with no grad, x[key] = v writes the array itself; the profiler and the compiler's trace take the
    # IndexPut path instead (setitem._wb_general): both must give the same values, dtype and version
    from workbench.ops.index import _setitem_recorded
    base = np.arange(12.0).reshape(3, 4)
    n = wb.tensor(base)[KEYS[k](wb)].numel()
    for value in (-1.5, 7, True, wb.arange(n, dtype=wb.float64).reshape(wb.tensor(base)[KEYS[k](wb)].shape),
                  wb.tensor(2.5, dtype=wb.float16)):
        for dtype in (wb.float32, wb.int64):
            x, y = wb.tensor(base, dtype=dtype), wb.tensor(base, dtype=dtype)
            x[KEYS[k](wb)] = value
            _setitem_recorded(y, KEYS[k](wb), value)
            assert x.dtype == y.dtype and x._version == y._version == 1
            np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_a_store_nothing_records_writes_only_its_elements():
    import tracemalloc
    x = wb.zeros(1_000_000)
    v = x[10:20]
    tracemalloc.start()
    try:
        x[3] = 1.0
        x[10:20] = wb.ones(10)
        x[wb.tensor([5, 7])] = wb.tensor([2.0, 3.0])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100_000, peak  # the IndexPut path copied the whole 4 MB tensor for each store
    assert x._version == 3 and v._version == 3  # a view shares its base's version counter
    assert x[:8].tolist() == [0.0, 0.0, 0.0, 1.0, 0.0, 2.0, 0.0, 3.0] and v.tolist() == [1.0] * 10
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[5\] cannot be broadcast to "
                                           r"indexing result of shape \[4\]"):
        wb.zeros(3, 4)[0] = wb.ones(5)
    with wb.inference_mode():
        t = wb.zeros(3)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        t[0] = 1.0
    b = wb.ones(3)
    x = b.expand(2, 3)  # a read-only broadcast view: the general path writes through, as PyTorch
    x[0, 0] = 5.0
    assert b.tolist() == [5.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x[:, 0] = 5.0  # two indices, one element (tests/ops/test_expand_writes.py has the rest)
    w = wb.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w[0] = 2.0
    with wb.no_grad():
        w[0] = 2.0
    assert w.tolist() == [2.0, 1.0, 1.0] and w.requires_grad and w.grad_fn is None


def test_a_store_shows_in_the_profiler_and_replays_compiled():
    x = wb.zeros(4)
    with wb.profiler.profile() as prof:
        x[1] = 2.0
    assert "index_put" in {e.key for e in prof.key_averages()}

    def fill(buf, v):
        buf[1:3] = v * 2
        return buf.sum()

    compiled = wb.compile(fill)
    for i in range(3):
        a, b = wb.zeros(4), wb.zeros(4)
        v = wb.tensor([float(i), 1.0])
        assert compiled(a, v).item() == fill(b, v).item()
        assert a.tolist() == b.tolist()
    report = wb.compiler.explain(compiled)
    assert report.traces == 1 and report.replays == 2 and report.eager_calls == 0 and not report.reasons
