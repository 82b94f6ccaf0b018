"""out= on the reductions, sorts and picks, against PyTorch: the result lands in out (returned; a tuple result
in out's tuple, named as before), in the dtype PyTorch computes it in, with PyTorch's errors for an out it
refuses, its resize warning, and its refusal of autograd. Which out dtypes each op takes: test_out_dtype.py."""
import re
import warnings

import numpy as np
import pytest

import workbench as wb

torch = pytest.importorskip("torch")

X = [[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]]

SINGLE = [  # (name, call, out dtype)
    ("sum", lambda m, x, o: m.sum(x, 1, out=o), "float64"),
    ("sum_all_dim_none", lambda m, x, o: m.sum(x, dim=None, out=o), "float32"),
    ("sum_into_ints", lambda m, x, o: m.sum(x + 0.6, 1, out=o), "int64"),
    ("sum_into_bool", lambda m, x, o: m.sum(x, 1, out=o), "bool"),
    ("prod", lambda m, x, o: m.prod(x + 0.6, 1, out=o), "int64"),
    ("nansum", lambda m, x, o: m.nansum(x, 0, True, out=o), "float32"),
    ("mean", lambda m, x, o: m.mean(x, 1, out=o), "float64"),
    ("mean_all", lambda m, x, o: m.mean(x, out=o), "float32"),
    ("nanmean", lambda m, x, o: m.nanmean(x, 1, out=o), "float64"),
    ("logsumexp", lambda m, x, o: m.logsumexp(x, 1, out=o), "float32"),
    ("argmax", lambda m, x, o: m.argmax(x, 1, out=o), "int64"),
    ("argmax_all", lambda m, x, o: m.argmax(x, out=o), "int64"),
    ("argmin_keepdim", lambda m, x, o: m.argmin(x, 0, True, out=o), "int64"),
    ("max_all", lambda m, x, o: m.max(x, out=o), "float64"),
    ("min_other", lambda m, x, o: m.min(x, x.flip(1), out=o), "float32"),
    ("amax", lambda m, x, o: m.amax(x, 0, out=o), "float32"),
    ("std", lambda m, x, o: m.std(x, 1, out=o), "float32"),
    ("var", lambda m, x, o: m.var(x, 0, correction=0, out=o), "float32"),
    ("cumsum", lambda m, x, o: m.cumsum(x, 1, out=o), "float64"),
    ("cumprod", lambda m, x, o: m.cumprod(x, 0, out=o), "float32"),
    ("msort", lambda m, x, o: m.msort(x, out=o), "float32"),
    ("argsort", lambda m, x, o: m.argsort(x, stable=True, descending=True, out=o), "int64"),
    ("diff", lambda m, x, o: m.diff(x, out=o), "float64"),
    ("all_into_uint8", lambda m, x, o: m.all(x, 1, out=o), "uint8"),
    ("any_of_uint8_into_bool", lambda m, x, o: m.any(x.to(m.uint8), out=o), "bool"),
    ("diff_prepend_bools", lambda m, x, o: m.diff(x > 1, prepend=x < 3, out=o), "int64"),
    ("norm_out_fourth", lambda m, x, o: m.norm(x, 2, 1, False, o), "float32"),
    ("norm_nuc", lambda m, x, o: m.norm(x, "nuc", out=o), "float32"),
    ("norm_dtype", lambda m, x, o: m.norm(x, 1, dtype=m.float64, out=o), "float64"),
]


@pytest.mark.parametrize("name,call,dtype", SINGLE, ids=[c[0] for c in SINGLE])
def test_single_result_goes_into_out(name, call, dtype):
    got = {}
    for m in (wb, torch):
        o = m.empty(0, dtype=getattr(m, dtype))
        assert call(m, m.tensor(X), o) is o
        got[m] = o.numpy()
    assert got[wb].dtype == got[torch].dtype and got[wb].shape == got[torch].shape
    np.testing.assert_allclose(got[wb], got[torch], rtol=1e-6)


TUPLES = [  # (name, call, dtypes of the outs)
    ("sort", lambda m, x, o: m.sort(x, 1, True, out=o), ("float32", "int64")),
    ("topk", lambda m, x, o: m.topk(x, 2, out=o), ("float32", "int64")),
    ("kthvalue", lambda m, x, o: m.kthvalue(x, 2, 1, out=o), ("float32", "int64")),
    ("aminmax", lambda m, x, o: m.aminmax(x, out=o), ("float32", "float32")),
    ("aminmax_dim", lambda m, x, o: m.aminmax(x, dim=0, keepdim=True, out=o), ("float32", "float32")),
    ("max_dim", lambda m, x, o: m.max(x, 1, out=o), ("float32", "int64")),
    ("min_dim", lambda m, x, o: m.min(x, 0, True, out=o), ("float32", "int64")),
    ("median", lambda m, x, o: m.median(x, 1, out=o), ("float32", "int64")),
    ("nanmedian", lambda m, x, o: m.nanmedian(x, 0, out=o), ("float32", "int64")),
    ("mode", lambda m, x, o: m.mode(x, 1, out=o), ("float32", "int64")),
    ("cummax", lambda m, x, o: m.cummax(x, 1, out=o), ("float32", "int64")),
    ("cummin", lambda m, x, o: m.cummin(x, 0, out=o), ("float32", "int64")),
]


@pytest.mark.parametrize("name,call,dtypes", TUPLES, ids=[c[0] for c in TUPLES])
def test_tuple_result_goes_into_out(name, call, dtypes):
    got, named = {}, {}
    for m in (wb, torch):
        outs = tuple(m.empty(0, dtype=getattr(m, d)) for d in dtypes)
        r = call(m, m.tensor(X), outs)
        assert all(a is b for a, b in zip(r, outs))
        got[m], named[m] = [o.numpy() for o in outs], r
    # the same fields, holding the same outs, in the same order
    assert [getattr(named[torch], f).numpy().tolist() for f in named[wb]._fields] == [a.tolist() for a in got[torch]]
    for a, b in zip(got[wb], got[torch]):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_sum_likes_compute_in_outs_dtype():
    # float32 input, float64 out: the sum and the mean are the float64 ones, as PyTorch's
    x = [1e8, 1.0, -1e8, 3.3333333]
    for name in ("sum", "mean", "nansum", "nanmean"):
        vals = []
        for m in (wb, torch):
            o = m.empty(0, dtype=m.float64)
            getattr(m, name)(m.tensor(x), 0, out=o)
            vals.append(o.item())
        assert vals[0] == vals[1], name


@pytest.mark.parametrize("name", ["std", "var"])
def test_std_var_compute_in_outs_dtype_over_some_dims(name):
    # PyTorch's CPU std/var: over some dims in a float64 out's dtype, over all of them in the input's float32
    x = np.random.default_rng(0).normal(0, 1e4, (4, 5)).astype(np.float32)
    x[0, 0] = 1e8
    for dim, rtol in ((1, 1e-12), (None, 1e-6)):
        vals = []
        for m in (wb, torch):
            o = m.empty(0, dtype=m.float64)
            getattr(m, name)(m.tensor(x), dim, out=o)
            vals.append(o.numpy())
        np.testing.assert_allclose(vals[0], vals[1], rtol=rtol)


REFUSED = [  # (name, call, out dtype, exception type, message)
    ("argmax_into_float", lambda m, o: m.argmax(m.tensor(X), 1, out=o), "float32", RuntimeError,
     "Expected out tensor to have dtype long int, but got float instead"),
    ("sum_dtype_not_outs", lambda m, o: m.sum(m.tensor(X), 1, dtype=m.float64, out=o), "float32", RuntimeError,
     "Expected out tensor to have dtype double, but got float instead"),
    ("cumsum_dtype_not_outs", lambda m, o: m.cumsum(m.tensor(X), 1, dtype=m.float64, out=o), "float32", RuntimeError,
     "Expected out tensor to have dtype double, but got float instead"),
    ("nansum_dtype_not_outs", lambda m, o: m.nansum(m.tensor(X), 1, dtype=m.float64, out=o), "int64", RuntimeError,
     "nansum: provided dtype must match dtype of result. Got Long and Double."),
    ("mean_into_ints", lambda m, o: m.mean(m.tensor(X), 1, out=o), "int64", RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
    ("mean_of_ints", lambda m, o: m.mean(m.tensor([1, 2]), out=o), "float32", RuntimeError,
     "mean(): could not infer output dtype"),
    ("nansum_of_floats_into_ints", lambda m, o: m.nansum(m.tensor(X), 1, out=o), "int64", NotImplementedError,
     "\"nansum_cpu\" not implemented for 'Long'"),
    ("nanmean_into_complex", lambda m, o: m.nanmean(m.tensor(X), 1, out=o), "complex64", NotImplementedError,
     "\"nansum_cpu\" not implemented for 'ComplexFloat'"),
    ("logsumexp_into_ints", lambda m, o: m.logsumexp(m.tensor(X), 1, out=o), "int64", RuntimeError,
     "logsumexp(): Expected floating point type for result tensor, but got: Long"),
    ("msort_into_double", lambda m, o: m.msort(m.tensor(X), out=o), "float64", RuntimeError,
     "Expected out tensor to have dtype float, but got double instead"),
    ("diff_into_ints", lambda m, o: m.diff(m.tensor(X), out=o), "int64", RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
    ("norm_into_double", lambda m, o: m.norm(m.tensor(X), out=o), "float64", RuntimeError,
     "Expected out tensor to have dtype float, but got double instead"),
    ("max_all_into_ints", lambda m, o: m.max(m.tensor(X), out=o), "int64", RuntimeError, "ast"),  # PyTorch: canCast
    ("median_without_dim", lambda m, o: m.median(m.tensor(X), out=o), "float32", TypeError,
     "median() missing 1 required positional arguments: \"dim\""),
]


@pytest.mark.parametrize("name,call,dtype,exc,msg", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_out_raises_as_pytorch_and_stays_empty(name, call, dtype, exc, msg):
    for m in (wb, torch):
        o = m.empty(0, dtype=getattr(m, dtype))
        with pytest.raises(exc, match=re.escape(msg)):
            call(m, o)
        if m is wb:  # PyTorch resizes some outs before it refuses them; a failed workbench op changes nothing
            assert tuple(o.shape) == (0,)


def test_a_bad_tuple_writes_neither():
    v, i = wb.full((2, 3), 7.0), wb.empty(0, dtype=wb.int32)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype long int, but got int instead"):
        wb.sort(wb.tensor(X), out=(v, i))
    assert (v == 7).all()
    with pytest.raises(TypeError, match="tuple of 2"):
        wb.aminmax(wb.tensor(X), out=v)


def test_a_wrong_shape_out_is_resized_with_pytorchs_warning():
    for m in (wb, torch):
        o, k = m.ones(5), m.ones(5, dtype=m.int64)
        with pytest.warns(UserWarning, match=r"resized since it had shape \[5\], which does not match the required "
                                              r"output shape \[2\]"):
            m.max(m.tensor(X), 1, out=(o, k))
        assert o.tolist() == [3.0, 5.0] and k.tolist() == [0, 1]
        o = m.empty(0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # an empty out is resized silently
            m.sum(m.tensor(X), 0, out=o)
        assert o.tolist() == [3.0, 6.0, 6.0]


@pytest.mark.parametrize("call", [
    lambda m, x: m.sum(x, 1, out=m.empty(0)),
    lambda m, x: m.mean(x, out=m.empty(0)),
    lambda m, x: m.logsumexp(x, 1, out=m.empty(0)),
    lambda m, x: m.sort(x, out=(m.empty(0), m.empty(0, dtype=m.int64))),
    lambda m, x: m.aminmax(x, out=(m.empty(0), m.empty(0))),
    lambda m, x: m.max(x, out=m.empty(0)),
], ids=["sum", "mean", "logsumexp", "sort", "aminmax", "max_all"])
def test_out_refuses_autograd_as_pytorch(call):
    for m in (wb, torch):
        x = m.tensor(X, requires_grad=True)
        with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation"):
            call(m, x)
        with m.no_grad():
            call(m, x)


def test_an_index_out_takes_an_input_that_requires_grad():
    # argmax's result needs no graph, so PyTorch writes it whatever the input
    for m in (wb, torch):
        o = m.empty(0, dtype=m.int64)
        m.argmax(m.tensor(X, requires_grad=True), 1, out=o)
        assert o.tolist() == [0, 1]


def test_the_norm_method_takes_dtype_fourth():
    # torch.norm(input, p, dim, keepdim, out, dtype), but Tensor.norm(p, dim, keepdim, dtype)
    for m in (wb, torch):
        r = m.tensor(X).norm(2, 1, False, m.float64)
        assert r.dtype == m.float64 and np.allclose(r.numpy(), [14 ** 0.5, 41 ** 0.5])
