"""Reductions beyond the generic spec suite: PyTorch's gradients at ties and zeros (first and second order),
indices and named tuples, NaN handling, dtypes, signatures, errors, and the fake-CUDA device."""
import numpy as np
import pytest

import workbench as wb

torch = pytest.importorskip("torch")

TIES = [[1.0, 3.0, 3.0, -2.0], [0.5, 0.5, -1.0, 0.5], [2.0, -4.0, -4.0, 1.0]]
ZEROS = [[1.5, 0.0, 2.0, -1.0], [0.0, 0.0, 3.0, 2.0], [1.2, -0.7, 2.0, 0.9], [0.0, 2.0, 0.5, -3.0]]


def _as_np(x):
    if isinstance(x, wb.Tensor):
        return np.asarray(x.detach().tolist(), dtype=float).reshape(tuple(x.shape))
    return x.detach().double().numpy(force=True)  # force: PyTorch answers some zero gradients with a ZeroTensor


def _same(w, t, rtol=1e-10, atol=1e-12):
    if isinstance(t, tuple):
        assert len(w) == len(t)
        for a, b in zip(w, t):
            _same(a, b, rtol, atol)
        return
    assert w.dtype.name == str(t.dtype).replace("torch.", ""), (w.dtype, t.dtype)
    rtol = max(rtol, {"float32": 1e-5, "float16": 2e-3}.get(w.dtype.name, 0))  # an ulp of libm difference
    assert tuple(w.shape) == tuple(t.shape), (w.shape, t.shape)
    np.testing.assert_allclose(_as_np(w), _as_np(t), rtol=rtol, atol=atol, equal_nan=True)


def _check(fn, values, pick=lambda r: r, double=False):
    """Values, gradients (and with double=True the gradient of a gradient) of fn against PyTorch."""
    w = wb.tensor(values, dtype=wb.float64, requires_grad=True)
    t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    rw, rt = fn(wb, w), fn(torch, t)
    _same(rw, rt)
    ow, ot = pick(rw), pick(rt)
    seed = np.linspace(0.5, 1.5, ot.numel()).reshape(tuple(ot.shape))
    (gw,) = wb.autograd.grad(ow, w, wb.tensor(seed), create_graph=double)
    (gt,) = torch.autograd.grad(ot, t, torch.tensor(seed), create_graph=double)
    _same(gw, gt)
    if double:
        (ggw,) = wb.autograd.grad((gw * gw).sum(), w)
        (ggt,) = torch.autograd.grad((gt * gt).sum(), t)
        _same(ggw, ggt)


@pytest.mark.parametrize("fn", [
    lambda m, x: x.amax(), lambda m, x: x.amin(1), lambda m, x: x.amax((0, 1), keepdim=True), lambda m, x: x.max(),
    lambda m, x: x.min(), lambda m, x: m.aminmax(x, dim=0)[1], lambda m, x: x.norm(float("inf")),
    lambda m, x: x.norm(float("-inf"), dim=1), lambda m, x: m.logsumexp(x, 1),
])
def test_tie_splitting_gradients(fn):
    _check(fn, TIES)


@pytest.mark.parametrize("fn", [
    lambda m, x: x.max(1), lambda m, x: x.min(0, keepdim=True), lambda m, x: m.max(x, -1),
    lambda m, x: x.cummax(1), lambda m, x: x.cummin(0), lambda m, x: x.median(1), lambda m, x: x.mode(1),
])
def test_index_returning_reductions_on_ties(fn):
    w, t = fn(wb, wb.tensor(TIES, dtype=wb.float64)), fn(torch, torch.tensor(TIES, dtype=torch.float64))
    _same(w.values, t.values)
    _same(w.indices, t.indices)
    _check(fn, TIES, pick=lambda r: r[0])


@pytest.mark.parametrize("fn", [
    lambda m, x: x.prod(), lambda m, x: x.prod(1), lambda m, x: x.prod(0, keepdim=True), lambda m, x: x.cumprod(1),
    lambda m, x: x.cumprod(0), lambda m, x: x[0].prod(),
])
def test_zeros_in_prod_and_cumprod_first_and_second_order(fn):
    _check(fn, ZEROS, double=True)
    _check(fn, [[1.5, 0.5, 2.0], [-1.0, 2.0, 0.25]], double=True)  # the zero-free fast path


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scans_refuse_a_bool_dtype_as_pytorch(op):
    for m in (wb, torch):
        for call in (lambda: getattr(m, op)(m.ones(3), 0, dtype=m.bool),
                     lambda: getattr(m, op)(m.tensor([True, False]), 0, dtype=m.bool),
                     lambda: getattr(m, op)(m.ones(3), 0, out=m.empty(0, dtype=m.bool))):
            with pytest.raises(NotImplementedError, match=f'"{op}_out_cpu" not implemented for \'Bool\''):
                call()
        # a bool input scans in int64, and a complex dtype is fine
        assert getattr(m, op)(m.tensor([True, True]), 0).tolist() == ([1, 2] if op == "cumsum" else [1, 1])
        assert getattr(m, op)(m.ones(2), 0, dtype=m.complex64).dtype == m.complex64


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_nansum_nanmean_skip_nan_in_every_float_dtype(dtype):
    x = [1.0, float("nan"), 3.0]
    for name in ("nansum", "nanmean"):
        got, want = (getattr(m, name)(m.tensor(x, dtype=getattr(m, dtype))) for m in (wb, torch))
        assert got.dtype.name == str(want.dtype).split(".")[1] and got.item() == want.item(), name


def test_nansum_nanmean_refuse_what_pytorch_refuses():
    for m in (wb, torch):
        for name in ("nansum", "nanmean"):
            with pytest.raises(RuntimeError, match="nansum on CPU does not support complex inputs"):
                getattr(m, name)(m.ones(2, dtype=m.complex64))
        for d in ("int64", "bool"):  # nanmean of integers: even with a floating dtype=
            with pytest.raises(RuntimeError, match="nanmean\\(\\): expected input to have floating point or complex "
                                                   "dtype but got " + ("Long" if d == "int64" else "Bool")):
                m.nanmean(m.ones(2, dtype=getattr(m, d)), dtype=m.float64)
        assert m.nansum(m.tensor([True, True])).item() == 2


def test_prod_cumprod_integer_and_bool_dtypes():
    for dt in ("int8", "int32", "uint8", "bool", "int64"):
        vals = [[1, 2, 0], [3, 1, 2]] if dt != "bool" else [[True, False, True], [True, True, True]]
        w, t = wb.tensor(vals, dtype=getattr(wb, dt)), torch.tensor(vals, dtype=getattr(torch, dt))
        for fn in (lambda x: x.prod(), lambda x: x.prod(1), lambda x: x.cumprod(1), lambda x: x.cumsum(0),
                   lambda x: x.sum(), lambda x: x.sum(1, dtype=wb.float64 if isinstance(x, wb.Tensor) else
                                                      torch.float64), lambda x: x.amax(0), lambda x: x.max(),
                   lambda x: x.count_nonzero(0), lambda x: x.all(1), lambda x: x.any()):
            _same(fn(w), fn(t))


@pytest.mark.parametrize("dt", ["float64", "float32", "int64", "uint8", "bool"])
def test_median_mode_argmax_across_dtypes(dt):
    rng = np.random.default_rng(3)
    vals = rng.integers(0, 4, size=(3, 7)).tolist()
    w, t = wb.tensor(vals, dtype=getattr(wb, dt)), torch.tensor(vals, dtype=getattr(torch, dt))
    if dt != "bool":
        _same(w.median(), t.median())
        _same(w.median(1).values, t.median(1).values)
    _same(w.mode(1).values, t.mode(1).values)
    _same(w.mode(1).indices, t.mode(1).indices)
    if dt != "bool":
        _same(w.argmax(), t.argmax())
        _same(w.argmin(1, keepdim=True), t.argmin(1, keepdim=True))
    _same(w.max(1).indices, t.max(1).indices)
    _same(w.cummax(1).indices, t.cummax(1).indices)
    _same(w.cummin(1).indices, t.cummin(1).indices)


def test_nan_handling():
    nan = float("nan")
    vals = [[1.0, nan, 3.0, 0.5], [2.0, 1.0, -1.0, 4.0], [nan, nan, nan, nan]]
    w, t = wb.tensor(vals, dtype=wb.float64), torch.tensor(vals, dtype=torch.float64)
    for fn in (lambda x: x.max(), lambda x: x.amin(1), lambda x: x.max(1), lambda x: x.argmax(1), lambda x: x.median(),
               lambda x: x.median(1), lambda x: x.nanmedian(), lambda x: x.nanmedian(1), lambda x: x.nansum(1),
               lambda x: x.nanmean(1), lambda x: x.cummax(1), lambda x: x.cummin(1), lambda x: x.sum(),
               lambda x: x.logsumexp(1), lambda x: x.argmin()):
        r, tr = fn(w), fn(t)
        if isinstance(tr, tuple):
            _same(r.values, tr.values)
            # where a whole row is NaN, nanmedian's index is PyTorch's nth_element's choice: not compared
            _same(r.indices[:2], tr.indices[:2])
        else:
            _same(r, tr)


@pytest.mark.parametrize("fn", [lambda m, x: x.max(), lambda m, x: x.min(), lambda m, x: x.median(),
                                lambda m, x: x.nanmedian(), lambda m, x: x.amax(), lambda m, x: x.median(0)[0]])
@pytest.mark.parametrize("vals", [[1.0, 2.0, 2.0, 3.0], [1.0, 2.0, 2.0, 3.0, float("nan")],
                                  [1.0, float("nan"), float("nan")], [5.0, 5.0, 5.0]])
def test_whole_tensor_values_share_gradient_among_equals(fn, vals):
    _check(fn, vals)


def test_nansum_nanmean_gradients():
    nan = float("nan")
    _check(lambda m, x: m.nansum(x, 1) + m.nanmean(x, 1), [[1.0, nan, 3.0], [2.0, 1.0, -1.0]])


@pytest.mark.parametrize("kw", [{}, {"dim": 1}, {"dim": (0, 2), "keepdim": True}, {"correction": 0},
                                {"dim": 2, "correction": 2}, {"unbiased": False, "dim": 0}])
def test_var_std_signatures(kw):
    vals = np.random.default_rng(0).normal(size=(3, 4, 5)).tolist()
    for name in ("var", "std"):
        _check(lambda m, x: getattr(x, name)(**kw), vals, double=True)
    w, t = wb.tensor(vals), torch.tensor(vals)
    _same(wb.var_mean(w, **kw), torch.var_mean(t, **kw), rtol=1e-6)
    _same(wb.std_mean(w, **kw), torch.std_mean(t, **kw), rtol=1e-6)


def test_var_legacy_positional_forms_and_degenerate_cases():
    vals = [[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]]
    w, t = wb.tensor(vals), torch.tensor(vals)
    _same(w.var(1, True, True), t.var(1, True, True))
    _same(w.std(False), t.std(False))
    _same(wb.var(w, 0, False), torch.var(t, 0, False))
    _check(lambda m, x: x.std(1), vals)  # a constant row: std 0, gradient 0 (not nan)
    with pytest.warns(UserWarning, match="degrees of freedom"):
        r = wb.tensor([1.0]).std()
    assert np.isnan(r.item())
    with pytest.raises(RuntimeError, match="floating point"):
        wb.tensor([1, 2]).var()


@pytest.mark.parametrize("kw", [{}, {"p": 1}, {"p": 3, "dim": 1}, {"p": "fro", "dim": (0, 1)}, {"p": 0.5},
                                {"p": float("inf"), "dim": 0, "keepdim": True}, {"p": -float("inf")}, {"p": 0},
                                {"p": 2, "dim": -1, "keepdim": True}])
def test_norm_against_torch(kw):
    vals = [[3.0, -4.0, 0.5], [1.0, 2.0, -2.0]]
    if kw.get("p") == 0:
        _same(wb.tensor(vals).norm(**kw), torch.tensor(vals).norm(**kw))
        return
    _check(lambda m, x: x.norm(**kw), vals, double=kw.get("p") not in (float("inf"), -float("inf")))


def test_norm_gradient_at_zero_and_dtype_and_errors():
    _check(lambda m, x: x.norm(), [[0.0, 0.0], [0.0, 0.0]])
    _check(lambda m, x: x.norm(dim=1), [[0.0, 0.0], [3.0, 4.0]])
    _same(wb.tensor([3.0, 4.0]).norm(dtype=wb.float64), torch.tensor([3.0, 4.0]).norm(dtype=torch.float64))
    with pytest.raises(RuntimeError, match="floating point"):
        wb.tensor([1, 2]).norm()


def test_nuclear_norm():
    linalg = pytest.importorskip("workbench.linalg")
    if not hasattr(linalg, "matrix_norm"):
        pytest.skip("workbench.linalg.matrix_norm is not there yet")
    _check(lambda m, x: x.norm(p="nuc"), [[3.0, 1.0, 0.5], [1.0, 2.0, -2.0]])


def test_logsumexp_infinities_and_large_values():
    inf = float("inf")
    vals = [[-inf, -inf, -inf], [1000.0, 1000.0, -inf], [inf, 1.0, 2.0], [-1e5, 0.0, 1e-3]]
    w, t = wb.tensor(vals, dtype=wb.float64), torch.tensor(vals, dtype=torch.float64)
    _same(w.logsumexp(1), t.logsumexp(1))
    _same(w.logsumexp((0, 1)), t.logsumexp((0, 1)))
    _check(lambda m, x: m.logsumexp(x, 1), [[1000.0, 1000.0, 999.0], [-1e5, 0.0, 1e-3]], double=True)
    _same(wb.logsumexp(wb.tensor([1, 2]), 0), torch.logsumexp(torch.tensor([1, 2]), 0))


def test_sum_mean_dtypes_and_empty_inputs():
    for dt in ("bool", "uint8", "int8", "int32", "int64", "float16", "float32", "float64"):
        w, t = wb.ones(2, 3, dtype=getattr(wb, dt)), torch.ones(2, 3, dtype=getattr(torch, dt))
        _same(w.sum(), t.sum())
        _same(w.sum(0, dtype=wb.float64), t.sum(0, dtype=torch.float64))
        _same(w.cumsum(1), t.cumsum(1))
        _same(w.mean(dtype=wb.float64), t.mean(dtype=torch.float64))
        if dt in ("float16", "float32", "float64"):
            _same(w.mean(1, keepdim=True), t.mean(1, keepdim=True))
        else:
            with pytest.raises(RuntimeError, match="mean"):
                w.mean()
    e, te = wb.zeros(0, 3), torch.zeros(0, 3)
    for fn in (lambda x: x.sum(), lambda x: x.prod(), lambda x: x.mean(), lambda x: x.sum(0), lambda x: x.amax(1),
               lambda x: x.all(), lambda x: x.any(0), lambda x: x.count_nonzero(), lambda x: x.median(),
               lambda x: x.logsumexp(0), lambda x: x.cumsum(0), lambda x: x.norm(), lambda x: x.cummax(0).values,
               lambda x: x.cummin(1).indices, lambda x: x.cumprod(0)):
        _same(fn(e), fn(te))


HALF_REDUCTIONS = [
    lambda x: x.sum(), lambda x: x.sum(0), lambda x: x.sum(1, keepdim=True), lambda x: x.mean(),
    lambda x: x.mean(0), lambda x: x.mean(1), lambda x: x.nansum(0), lambda x: x.nanmean(),
    lambda x: x.cumsum(0), lambda x: x.cumsum(1), lambda x: x.var(0), lambda x: x.std(1), lambda x: x.var(),
    lambda x: x.norm(), lambda x: x.norm(dim=0), lambda x: x.logsumexp(0), lambda x: x.logsumexp(1),
    lambda x: x[:40].cumprod(0), lambda x: (x * x).sum(0),
]


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
@pytest.mark.parametrize("fn", HALF_REDUCTIONS)
def test_half_precision_reductions_accumulate_in_float32(dt, fn):
    # PyTorch accumulates float16 and bfloat16 in float32 and rounds once: 4000 values of 0.6 sum to ~2400,
    # not the 256 (bfloat16) or 2048 (float16, along a strided axis) of accumulating in the 16-bit type
    rng = np.random.default_rng(0)
    for a in (np.full((4000, 3), 0.6, np.float32), (rng.standard_normal((2000, 5)) * 0.4 + 1).astype(np.float32)):
        w, t = wb.tensor(a).to(getattr(wb, dt)), torch.tensor(a).to(getattr(torch, dt))
        rw, rt = fn(w), fn(t)
        assert rw.dtype.name == dt
        np.testing.assert_allclose(rw.float().numpy(), rt.float().numpy(), rtol=2 ** -7 if dt == "bfloat16" else 1e-3)
    big = wb.full((4000,), 0.6, dtype=getattr(wb, dt))
    assert abs(big.sum().item() - 2400) < 20 and abs(big.mean().item() - 0.6) < 0.01


@pytest.mark.parametrize("expr,exc", [
    ("m.zeros(0).amax()", RuntimeError), ("m.zeros(0).max()", RuntimeError), ("m.zeros(2, 0).max(1)", IndexError),
    ("m.zeros(0).argmax()", IndexError), ("m.zeros(3).max(5)", IndexError), ("m.zeros(3).sum(2)", IndexError),
    ("m.zeros(3).sum((0, 0))", RuntimeError), ("m.tensor([1, 2]).mean()", RuntimeError),
    ("m.tensor([1, 2]).std()", RuntimeError), ("m.tensor([1j]).max()", RuntimeError),
    ("m.zeros(3).kthvalue(4)", (IndexError, RuntimeError)),
])
def test_errors_match_torch_types(expr, exc):
    for m in (torch, wb):
        with pytest.raises(exc):
            eval(expr, {"m": m})


def test_return_types():
    r = wb.tensor([[1.0, 5.0], [7.0, 2.0]]).max(1)
    values, indices = r
    assert isinstance(r, tuple) and r.values is values and r.indices is indices
    assert type(r) is wb.return_types.max and r._fields == ("values", "indices")
    assert repr(r).startswith("workbench.return_types.max(\nvalues=tensor([5., 7.]),\nindices=tensor([1, 0]))")
    import workbench.return_types as rt

    assert rt.mode is type(wb.mode(wb.tensor([1, 1])))
    assert isinstance(wb.sort(wb.tensor([2, 1])), rt.sort)  # other families' named tuples are found there too
    with pytest.raises(AttributeError):
        rt.no_such_op
    mm = wb.aminmax(wb.tensor([3, 0, 4]))
    assert (mm.min.item(), mm.max.item()) == (0, 4)
    assert wb.median(wb.tensor([[1.0, 2.0, 3.0]]), 1, keepdim=True).values.shape == (1, 1)


def test_max_min_with_tensor_other_and_out():
    a, b = wb.tensor([1.0, 5.0]), wb.tensor([3.0, 2.0])
    assert wb.max(a, b).tolist() == [3.0, 5.0] and a.min(b).tolist() == [1.0, 2.0]
    vals, idx = wb.empty(0), wb.empty(0, dtype=wb.int64)
    r = wb.max(wb.tensor([[1.0, 5.0], [7.0, 2.0]]), 1, out=(vals, idx))
    assert r.values is vals and vals.tolist() == [5.0, 7.0] and idx.tolist() == [1, 0]


def test_argmax_and_logical_reductions():
    vals = [[1, 9, 9], [4, 0, 4]]
    w, t = wb.tensor(vals), torch.tensor(vals)
    for fn in (lambda x: x.argmax(), lambda x: x.argmax(1), lambda x: x.argmin(0, keepdim=True),
               lambda x: x.argmax(keepdim=True), lambda x: x.all(), lambda x: x.any(1, keepdim=True),
               lambda x: x.all(dim=(0, 1)), lambda x: x.count_nonzero(), lambda x: x.count_nonzero((0, 1)),
               lambda x: x.count_nonzero(1), lambda x: x.to(torch.uint8 if isinstance(x, torch.Tensor) else
                                                            wb.uint8).all(0)):
        _same(fn(w), fn(t))
    s, ts = wb.tensor(5.0), torch.tensor(5.0)
    _same(s.max(0).values, ts.max(0).values)
    _same(s.argmax(0), ts.argmax(0))


def test_diff():
    vals = [[1.0, 4.0, 9.0, 16.0], [2.0, 3.0, 5.0, 7.0]]
    _check(lambda m, x: m.diff(x, n=2), vals)
    _check(lambda m, x: m.diff(x, dim=0, prepend=x[:1] * 2, append=x[1:]), vals)
    b, tb = wb.tensor([True, False, False, True]), torch.tensor([True, False, False, True])
    _same(wb.diff(b), torch.diff(tb))
    _same(wb.diff(wb.tensor([1, 5, 2]), n=5), torch.diff(torch.tensor([1, 5, 2]), n=5))


@pytest.mark.parametrize("name,args", [
    ("sum", (1,)), ("mean", ((0, 1),)), ("prod", (0,)), ("amax", (1,)), ("max", (1,)), ("median", (0,)),
    ("mode", (1,)), ("cumsum", (1,)), ("cumprod", (0,)), ("cummax", (1,)), ("var", (1,)), ("std", ()),
    ("norm", ()), ("logsumexp", (1,)), ("argmax", (1,)), ("all", ()), ("count_nonzero", ()), ("nansum", ()),
])
def test_fake_cuda_device_matches_cpu(name, args, fake_cuda):
    vals = np.random.default_rng(2).normal(size=(3, 4)).round(1)
    cpu = getattr(wb.tensor(vals), name)(*args)
    dev = getattr(wb.tensor(vals, device="cuda"), name)(*args)
    cpu, dev = (cpu, dev) if not isinstance(cpu, tuple) else (cpu[0], dev[0])
    assert dev.device.type == "cuda"
    np.testing.assert_allclose(dev.cpu().numpy(), cpu.numpy(), rtol=1e-6)
    x = wb.tensor(vals, device="cuda", requires_grad=True)
    if name not in ("argmax", "all", "count_nonzero"):
        out = getattr(x, name)(*args)
        (out[0] if isinstance(out, tuple) else out).sum().backward()
        assert x.grad.device.type == "cuda"


@pytest.mark.gpu
@pytest.mark.parametrize("fn", [
    lambda x: x.sum(1), lambda x: x.prod(0), lambda x: x.cumprod(1), lambda x: x.max(1).values, lambda x: x.amax(),
    lambda x: x.median(1).values, lambda x: x.mode(1).values, lambda x: x.cummax(1).values, lambda x: x.var(0),
    lambda x: x.norm(), lambda x: x.logsumexp(1), lambda x: wb.nanmean(x, 0),
])
def test_reductions_on_a_real_gpu_match_cpu(fn):
    vals = np.round(np.random.default_rng(4).normal(size=(5, 6)), 1)
    vals[1, 2] = 0.0
    xc = wb.tensor(vals, requires_grad=True)
    xg = wb.tensor(vals, device="cuda", requires_grad=True)
    yc, yg = fn(xc), fn(xg)
    np.testing.assert_allclose(yg.detach().cpu().numpy(), yc.detach().numpy(), rtol=1e-10, atol=1e-12)
    yc.sum().backward()
    yg.sum().backward()
    np.testing.assert_allclose(xg.grad.cpu().numpy(), xc.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("create_graph", [False, True])
def test_var_and_std_backward_with_no_degrees_of_freedom_are_not_finite_as_pytorch(create_graph):
    # one element (or correction >= n): PyTorch's gradient is nan or inf; it raised ZeroDivisionError here
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for vals, corr in (([5.0], 1), ([2.0, 2.0], 2), ([1.0, 2.0, 4.0], 3)):
            for fn in ("var", "std"):
                x, tx = wb.tensor(vals, requires_grad=True), torch.tensor(vals, requires_grad=True)
                getattr(x, fn)(correction=corr).backward(create_graph=create_graph)
                getattr(tx, fn)(correction=corr).backward()
                got, want = x.grad.detach().numpy(), tx.grad.numpy()
                assert not np.isfinite(got).any() and np.array_equal(np.isnan(got), np.isnan(want)), (vals, fn)


def test_reductions_of_a_0d_tensor_take_dim_0_and_minus_1_as_pytorch():
    # a 0-d tensor's one dim: sum(0), mean(-1, keepdim=True), amax(0), var(0)... reduce it to itself
    forms = ["x.sum(0)", "x.sum(-1, keepdim=True)", "x.mean(0)", "x.mean(-1, keepdim=True)", "x.amax(0)",
             "x.amin(-1)", "x.prod(0)", "x.logsumexp(0)", "x.var(0, correction=0)", "x.std(-1, correction=0)"]
    for form in forms:
        got = eval(form, {"x": wb.tensor(5.0, requires_grad=True)})
        want = eval(form, {"x": torch.tensor(5.0, requires_grad=True)})
        assert tuple(got.shape) == tuple(want.shape) and got.item() == want.item(), form
        got.backward()
