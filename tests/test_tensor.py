"""The tensor of the foundation issue: creation, storage and views, interop, repr, protocol methods."""
import numpy as np
import pytest
import torch

import workbench as wb


def _tname(d):
    return str(d).replace("torch.", "")


# --- creation ------------------------------------------------------------------------------------
@pytest.mark.parametrize("data", [1, 1.5, True, 2j, [1, 2], [1.0, 2], [[True, False]], [1, 2.5, True], [],
                                  [[1, 2], [3, 4]], np.float32(2.0), np.arange(3, dtype=np.int16)])
def test_tensor_infers_dtype_like_torch(data):
    assert wb.tensor(data).dtype.name == _tname(torch.tensor(data).dtype)
    np.testing.assert_array_equal(wb.tensor(data).numpy(), torch.tensor(data).numpy())


# NumPy scalars keep their dtype inside lists, and a list promotes its items' dtypes (promote_types, so a
# Python int next to an int32 gives int64): PyTorch's infer_scalar_type
_NP_SCALAR_DATA = [
    [np.float64(1.5)], [np.complex128(1 + 2j)], [np.int32(3)], [np.float16(1.5)], [np.uint8(2)],
    [np.complex64(1)], [np.bool_(True), True], np.float64(1.5), np.int32(3), np.complex128(2j),
    [1.0, np.float64(2)], [np.float64(2), 1.0], [[1.0], [np.float64(2)]], [[1], [np.float64(2)]],
    [[1, 2], [3, np.float16(2)]], (np.float64(1),), [1, np.int32(2)], [np.int32(2), 1.0], [True, np.int32(2)],
    [np.int8(1), np.uint8(2)], [np.float32(1), np.float64(2)], [np.float16(1), np.float64(2)],
    [1j, np.float64(2)], [np.complex64(1), np.float64(2)], [np.float32(1), 1j], [np.int32(1), 1j],
    [np.int32(1), np.array(1.5)], [np.array([1.5], np.float32), np.array([1.0])], [np.int32(1), 2**40],
]


@pytest.mark.parametrize("make", ["tensor", "as_tensor"])
@pytest.mark.parametrize("data", _NP_SCALAR_DATA, ids=repr)
def test_numpy_scalars_keep_their_dtype_like_torch(make, data):
    got, want = getattr(wb, make)(data), getattr(torch, make)(data)
    assert got.dtype.name == _tname(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_numpy_scalar_inference_under_float64_default_and_with_tensors():
    wb.set_default_dtype(wb.float64)
    torch.set_default_dtype(torch.float64)
    try:
        for data in ([np.float32(1), 1.0], [np.float32(1), 1j], [np.float16(1), 2.0]):
            assert wb.tensor(data).dtype.name == _tname(torch.tensor(data).dtype)
    finally:
        wb.set_default_dtype(wb.float32)
        torch.set_default_dtype(torch.float32)
    # a 0-dim tensor in a list counts with its dtype, not as a weak scalar
    for dt in ("int32", "float64", "float16"):
        for tail in (1, 2.0, True):
            w = wb.tensor([wb.tensor(1, dtype=getattr(wb, dt)), tail])
            t = torch.tensor([torch.tensor(1, dtype=getattr(torch, dt)), tail])
            assert w.dtype.name == _tname(t.dtype), (dt, tail)


@pytest.mark.parametrize("args", [(np.float64(3),), (np.float32(3),), (np.int32(3),), (0, np.int16(3)),
                                  (0, np.float32(3), 1), (np.bool_(True),), (True,), (np.complex64(3),),
                                  (3 + 0j,), (np.uint8(4), 10, np.int64(2))], ids=repr)
def test_arange_dtype_from_numpy_scalars_like_torch(args):
    got, want = wb.arange(*args), torch.arange(*args)
    assert got.dtype.name == _tname(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_arange_rejects_an_imaginary_bound():
    with pytest.raises(RuntimeError, match="imaginary"):
        wb.arange(np.complex128(3 + 1j))
    with pytest.raises(RuntimeError):
        torch.arange(np.complex128(3 + 1j))


@pytest.mark.parametrize("value", [np.float64(1.5), np.float32(1.5), np.float16(2), np.int32(2), np.uint8(1),
                                   np.bool_(True), True, np.complex128(1 + 2j), 1j, 2, 2.5], ids=repr)
def test_full_dtype_from_numpy_scalars_like_torch(value):
    got, want = wb.full((2,), value), torch.full((2,), value)
    assert got.dtype.name == _tname(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_text_in_a_list_raises_torchs_error():
    # first elements first: a string there is one dimension too many (ValueError), elsewhere a bad dtype
    for data, exc, msg in ((["a"], ValueError, "too many dimensions 'str'"),
                           ([np.str_("a")], ValueError, "too many dimensions 'str'"),
                           ([1.0, "a"], TypeError, "invalid data type 'str'")):
        with pytest.raises(exc, match=msg):
            wb.tensor(data)
        with pytest.raises(exc, match=msg):
            torch.tensor(data)


def test_tensor_copies_and_from_numpy_shares():
    a = np.zeros(3, dtype=np.float32)
    t = wb.tensor(a)
    f = wb.from_numpy(a)
    a[0] = 5
    assert t[0].item() == 0 and f[0].item() == 5
    f[1] = 7
    assert a[1] == 7
    assert wb.as_tensor(a).data_ptr() == f.data_ptr()
    assert wb.as_tensor(a, dtype=wb.float64).data_ptr() != f.data_ptr()


def test_from_numpy_rejects_unsupported():
    with pytest.raises(TypeError, match="can't convert"):
        wb.from_numpy(np.array(["a"]))
    with pytest.raises(TypeError):
        wb.from_numpy([1, 2])


def test_ragged_data_is_a_clear_error():
    with pytest.raises(ValueError):
        wb.tensor([[1, 2], [3]])


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
def test_shape_factories(fn):
    for args in [(2, 3), ((2, 3),), ([2, 3],), (wb.Size([2, 3]),)]:
        t = getattr(wb, fn)(*args)
        assert t.shape == (2, 3) and t.dtype == wb.float32
    t = getattr(wb, fn)(4, dtype=wb.int32, requires_grad=False)
    assert t.dtype == wb.int32
    assert getattr(wb, fn)(2, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="negative dimension"):
        getattr(wb, fn)(-1)
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        getattr(wb, fn)(2, dtype=wb.int64, requires_grad=True)


def test_like_factories_and_full():
    x = wb.ones(2, 3, dtype=wb.float64)
    for fn in ("zeros_like", "ones_like", "empty_like", "rand_like", "randn_like"):
        y = getattr(wb, fn)(x)
        assert y.shape == x.shape and y.dtype == wb.float64
    assert wb.full((2,), 7).dtype == wb.int64
    assert wb.full((2,), 7.0).dtype == wb.float32
    assert wb.full((2,), True).dtype == wb.bool
    assert wb.full_like(x, 3).dtype == wb.float64


@pytest.mark.parametrize("args", [(5,), (1, 4), (0, 1, 0.25), (1.0, 2.0, 0.3), (10, 0, -3), (0, 0.9, 0.1)])
def test_arange_matches_torch(args):
    a, t = wb.arange(*args), torch.arange(*args)
    assert a.dtype.name == _tname(t.dtype)
    np.testing.assert_allclose(a.numpy(), t.numpy(), rtol=1e-6)


NO_KERNEL = [  # factories PyTorch has no kernel for in a dtype: its NotImplementedError, with dtype= or out=
    ("arange", lambda m, d: m.arange(5, dtype=d), "bool"),
    ("arange", lambda m, d: m.arange(0, 1, 0.25, dtype=d), "complex64"),
    ("arange", lambda m, d: m.arange(2, out=m.empty(0, dtype=d)), "complex128"),
    ("linspace", lambda m, d: m.linspace(0, 1, 5, dtype=d), "bool"),
    ("linspace", lambda m, d: m.linspace(0, 1, 5, out=m.empty(0, dtype=d)), "bool"),
    ("logspace", lambda m, d: m.logspace(0, 1, 5, dtype=d), "bool"),
]


@pytest.mark.parametrize("op,call,dtype", NO_KERNEL, ids=[f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(NO_KERNEL)])
def test_factories_refuse_the_dtypes_pytorch_has_no_kernel_for(op, call, dtype):
    scalar = {"bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}[dtype]
    for m in (wb, torch):
        with pytest.raises(NotImplementedError, match=f'"{op}_cpu" not implemented for \'{scalar}\''):
            call(m, getattr(m, dtype))


@pytest.mark.parametrize("call", [
    lambda m: m.linspace(0, 1, 5, dtype=m.complex64), lambda m: m.logspace(0, 1, 5, dtype=m.complex128),
    lambda m: m.linspace(0, 1, 5, dtype=m.int8), lambda m: m.logspace(0, 1, 5, dtype=m.uint8),
    lambda m: m.linspace(0, 1, 5, dtype=m.float16),
    lambda m: m.linspace(0, 1 + 1j, 3), lambda m: m.logspace(0, 1 + 1j, 3), lambda m: m.linspace(m.tensor(1j), 2, 4),
    lambda m: m.linspace(0, 2j, 3, out=m.empty(0, dtype=m.complex128)),
], ids=["linspace-c64", "logspace-c128", "linspace-i8", "logspace-u8", "linspace-f16", "linspace-complex-end",
        "logspace-complex-end", "linspace-complex-tensor", "linspace-complex-out"])
def test_linspace_and_logspace_dtypes_and_complex_ends_as_pytorch(call):
    got, want = call(wb), call(torch)
    assert got.dtype.name == _tname(want.dtype)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-3)


def test_complex_ends_refuse_a_real_dtype_as_pytorch():
    for m in (wb, torch):
        for op in ("linspace", "logspace"):
            with pytest.raises(RuntimeError, match=f"{op}\\(\\): inferred dtype .* can't be safely cast to passed "
                                                   "dtype Double"):
                getattr(m, op)(0, 1j, 3, dtype=m.float64)


def test_linspace_logspace_eye():
    np.testing.assert_allclose(wb.linspace(-1, 1, 5).numpy(), torch.linspace(-1, 1, 5).numpy())
    np.testing.assert_allclose(wb.logspace(0, 3, 4).numpy(), torch.logspace(0, 3, 4).numpy(), rtol=1e-6)
    np.testing.assert_array_equal(wb.eye(2, 3).numpy(), torch.eye(2, 3).numpy())


def test_random_is_seeded_and_generators_are_independent():
    wb.manual_seed(3)
    a = wb.rand(4)
    wb.manual_seed(3)
    b = wb.rand(4)
    assert wb.equal(a, b) if hasattr(wb, "equal") else (a.numpy() == b.numpy()).all()
    g1, g2 = wb.Generator().manual_seed(1), wb.Generator().manual_seed(1)
    np.testing.assert_array_equal(wb.randn(3, generator=g1).numpy(), wb.randn(3, generator=g2).numpy())
    st = g1.get_state()
    x = wb.rand(2, generator=g1)
    g1.set_state(st)
    np.testing.assert_array_equal(wb.rand(2, generator=g1).numpy(), x.numpy())


def test_random_distributions():
    wb.manual_seed(0)
    u = wb.rand(10000)
    assert 0 <= u.numpy().min() and u.numpy().max() < 1 and abs(u.numpy().mean() - 0.5) < 0.02
    n = wb.randn(10000, dtype=wb.float64)
    assert n.dtype == wb.float64 and abs(n.numpy().std() - 1) < 0.05
    r = wb.randint(3, 7, (1000,))
    assert r.dtype == wb.int64 and set(r.tolist()) == {3, 4, 5, 6}
    assert sorted(wb.randperm(6).tolist()) == list(range(6))
    m = wb.normal(wb.full((5000,), 2.0), 0.5)
    assert abs(m.numpy().mean() - 2) < 0.05
    b = wb.bernoulli(wb.full((1000,), 0.3))
    assert 0.2 < b.numpy().mean() < 0.4
    s = wb.multinomial(wb.tensor([0.0, 1.0, 3.0]), 1000, replacement=True)
    assert 0 not in s.tolist() and 0.65 < (s == 2).numpy().mean() < 0.85
    s2 = wb.multinomial(wb.tensor([[1.0, 1.0, 1.0]]), 3)
    assert sorted(s2[0].tolist()) == [0, 1, 2]
    with pytest.raises(RuntimeError, match="cannot sample"):
        wb.multinomial(wb.tensor([1.0, 1.0]), 3)


# --- storage and views ------------------------------------------------------------------------------
def test_strides_offsets_and_views_share_memory():
    x = wb.arange(12.0).reshape(3, 4)
    tx = torch.arange(12.0).reshape(3, 4)
    for f in [lambda t: t, lambda t: t.t(), lambda t: t[1:, ::2], lambda t: t.transpose(0, 1)[2],
              lambda t: t.unsqueeze(1), lambda t: t.expand(2, 3, 4), lambda t: t.permute(1, 0)]:
        a, b = f(x), f(tx)
        assert a.stride() == b.stride()
        assert a.storage_offset() == b.storage_offset()
        assert a.is_contiguous() == b.is_contiguous()
    v = x[1]
    v[0] = 100
    assert x[1, 0].item() == 100
    assert v._version == x._version == 1
    c = x.t().contiguous()
    assert c.is_contiguous() and c.data_ptr() != x.data_ptr()
    assert x.contiguous() is x
    k = x.clone()
    k[0, 0] = -1
    assert x[0, 0].item() == 0


def test_view_errors_like_torch():
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        wb.zeros(3, 4).t().view(12)
    with pytest.raises(RuntimeError, match="invalid for input of size"):
        wb.zeros(3, 4).reshape(5, -1)


@pytest.mark.parametrize("overwrite", ["copy_", "fill_"])
def test_overwritten_values_get_a_zero_gradient_as_in_torch(overwrite):
    grads = []
    for lib in (wb, torch):
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        y = lib.tensor(5.0, dtype=lib.float64, requires_grad=True)
        z = x.clone()
        getattr(z, overwrite)(y)
        (z * z).sum().backward()
        grads.append((x.grad.numpy().copy(), y.grad.numpy().copy()))
    (wx, wy), (tx, ty) = grads
    np.testing.assert_array_equal(wx, tx)  # zeros, not None
    np.testing.assert_array_equal(wy, ty)


def test_copy_broadcasts_casts_and_bumps_version():
    x = wb.zeros(2, 3)
    x.copy_(wb.tensor([1, 2, 3]))
    np.testing.assert_array_equal(x.numpy(), [[1, 2, 3], [1, 2, 3]])
    assert x._version == 1
    with pytest.raises(RuntimeError):
        x.copy_(wb.zeros(4))


# --- interop ------------------------------------------------------------------------------------
def test_numpy_refuses_grad_and_item_checks_size():
    x = wb.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="detach\\(\\).numpy\\(\\)"):
        x.numpy()
    assert x.detach().numpy().tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="2 elements cannot be converted to Scalar"):
        x.item()
    assert wb.tensor([[3]]).item() == 3
    assert np.asarray(wb.tensor([1, 2])).tolist() == [1, 2]


def test_dlpack_round_trips_with_numpy_and_torch():
    x = wb.arange(6.0).reshape(2, 3)
    n = np.from_dlpack(x)
    n[0, 0] = 42
    assert x[0, 0].item() == 42
    t = torch.from_dlpack(x)
    assert t.shape == (2, 3) and t[0, 0].item() == 42
    back = wb.from_dlpack(torch.arange(4.0))
    assert back.tolist() == [0, 1, 2, 3]
    back2 = wb.from_dlpack(np.arange(3))
    assert back2.dtype == wb.int64


def test_conversions():
    x = wb.tensor([1.5, -2.5])
    assert x.double().dtype == wb.float64 and x.half().dtype == wb.float16
    assert x.long().tolist() == [1, -2] and x.int().dtype == wb.int32
    assert x.bool().tolist() == [True, True]
    assert x.to(wb.float64).dtype == wb.float64
    assert x.to("cpu") is x
    assert x.to(x) is x
    assert x.bfloat16().float().tolist() == [1.5, -2.5]
    assert x.type() == "workbench.FloatTensor"


# --- protocol methods ---------------------------------------------------------------------------
def test_len_iter_bool_hash():
    x = wb.tensor([[1, 2], [3, 4]])
    assert len(x) == 2
    rows = list(x)
    assert rows[1].tolist() == [3, 4]
    assert bool(wb.tensor([1])) and not bool(wb.tensor(0.0))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(x)
    with pytest.raises(TypeError, match="0-d"):
        len(wb.tensor(1))
    assert len({x, x, wb.tensor([1])}) == 2


REPRS = [
    lambda m: m.tensor([1.0, 2.0]), lambda m: m.tensor([1.5, 2.25]), lambda m: m.tensor(3.0),
    lambda m: m.tensor([1, 2, 3]), lambda m: m.tensor([True, False]), lambda m: m.tensor([[1.0, 2.0], [3.0, 4.0]]),
    lambda m: m.tensor([1e-5, 1.0]), lambda m: m.tensor([1, 2], dtype=m.int32),
    lambda m: m.tensor([1.0], dtype=m.float64), lambda m: m.tensor([float("nan"), float("inf"), 1.0]),
    lambda m: m.zeros(0), lambda m: m.zeros(2, 0), lambda m: m.arange(2000.0),
    lambda m: m.tensor([1.0, 2.0], requires_grad=True), lambda m: m.tensor([1.0], requires_grad=True) * 2,
    lambda m: m.tensor([-1.5, 100.25]), lambda m: m.tensor([[-1, 10], [100, 2]]),
    lambda m: m.tensor([-0.0, 1.0]), lambda m: m.tensor([-0.0, 0.0]), lambda m: m.tensor([-0.0, 1.5, float("nan")]),
    # complex: the real and imaginary parts are formatted apart, each as a float tensor
    lambda m: m.tensor([1 + 2j]), lambda m: m.tensor(4 + 0j), lambda m: m.tensor([1 - 2j, 3.5 + 1j]),
    lambda m: m.tensor([[1 + 1j, 2 - 2j], [3 + 0.5j, -4j]]), lambda m: m.tensor([1e-5 + 1j, 100 + 2j]),
    lambda m: m.tensor([float("nan") + 1j, 1 + 1j], dtype=m.complex128), lambda m: m.tensor([0j]),
]


@pytest.mark.parametrize("make", REPRS)
def test_repr_matches_torch(make):
    assert repr(make(wb)) == repr(make(torch)).replace("torch.", "workbench.")
