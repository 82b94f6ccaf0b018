"""ldexp, nextafter and frexp against PyTorch: dtype rules (integers to the default float, promotion, 16-bit
floats), edge values (subnormals, overflow, inf, NaN, -0.), out=, in-place forms, errors and gradients."""
import numpy as np
import pytest

import workbench as wb

torch = pytest.importorskip("torch")

DTYPES = ["bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64"]
EDGE = [0.0, -0.0, 1.0, -3.0, 0.75, 8.0, 1e-40, 3e-45, 65504.0, 6e-8, float("inf"), -float("inf"), float("nan")]


def _t(m, vals, dtype, **kw):
    return m.tensor(vals, dtype=getattr(m, dtype), **kw)


def _res(r):
    if isinstance(r, tuple):
        return tuple(_res(x) for x in r)
    return str(r.dtype).split(".")[-1], str(r.float().tolist() if r.dtype.is_complex is False and
                                            str(r.dtype).endswith("bfloat16") else r.tolist())


def _call(f):
    try:
        return _res(f())
    except Exception as e:  # noqa: BLE001 - the exception type is what is compared
        return type(e).__name__


def _both(f):
    return _call(lambda: f(wb)), _call(lambda: f(torch))


@pytest.mark.parametrize("da", DTYPES)
def test_ldexp_dtypes_and_values_match_torch(da):
    # a float exponent's 2**other is NumPy's exp2 here, PyTorch's own pow there: a unit in the last place apart
    bad = []
    for db in DTYPES:
        for exps in ([2, 1, 0], [1.5, -0.5, 3.0]):
            if db == "bool" and exps[0] > 1 or db[0] in "bu" and isinstance(exps[0], float):
                continue
            if da == "complex64" and db in ("float16", "bfloat16"):
                continue  # PyTorch: "pow" not implemented for 'ComplexHalf', of its 2**other in a complex half
            got, want = [m.ldexp(_t(m, [1, 3, 0] if da[0] in "bu" else [1.0, 3.0, -2.0], da), _t(m, exps, db))
                         for m in (wb, torch)]
            if str(got.dtype)[10:] != str(want.dtype)[6:] or not np.allclose(
                    got.to(wb.complex128).numpy(), want.to(torch.complex128).numpy(), rtol=1e-2 if "16" in
                    str(want.dtype) else 1e-6):
                bad.append((da, db, exps, got, want))
    assert not bad


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_ldexp_integer_exponents_are_exact(dtype):
    # an integer exponent scales exactly, rounded once: 2**100 * 2**-200 is 2**-100 in float32 (no 2**-200
    # that underflows first), 1.5 * 2**-149 rounds to two units of the last place, overflow gives inf
    rng = np.random.default_rng(0)
    x = rng.standard_normal(300)
    e = rng.integers(-300, 300, 300)
    extra = [(2.0 ** 100, -200), (1.5, -149), (2.0 ** -10, 20), (1.0, 20), (1.0, 1025), (3.0, -1075), (-0.0, 5)]
    x = np.r_[x, [a for a, _ in extra], EDGE]
    e = np.r_[e, [b for _, b in extra], [3] * len(EDGE)]
    with np.errstate(all="ignore"):
        got = wb.ldexp(wb.tensor(x).to(getattr(wb, dtype)), wb.tensor(e))
    want = torch.ldexp(torch.tensor(x).to(getattr(torch, dtype)), torch.tensor(e))
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    assert str(got.dtype).split(".")[-1] == dtype


def test_ldexp_0dim_exponent_out_inplace_and_errors():
    f, i = [1.0, 2.0], [1, 2]
    cases = [
        lambda m: m.ldexp(_t(m, f, "float32"), m.tensor(3)),
        lambda m: m.ldexp(_t(m, f, "float32"), m.tensor(3.0, dtype=m.float64)),
        lambda m: _t(m, f, "float32").ldexp(_t(m, i, "int64")),
        lambda m: _t(m, f, "float16").ldexp_(_t(m, i, "int64")),
        lambda m: _t(m, i, "int64").ldexp_(_t(m, i, "int64")),
        lambda m: m.ldexp(_t(m, f, "float32"), _t(m, i, "int64"), out=m.empty(2)),
        lambda m: m.ldexp(_t(m, f, "float32"), 2),
        lambda m: m.ldexp(2, _t(m, f, "float32")),
    ]
    for k, c in enumerate(cases):
        got, want = _both(c)
        assert got == want, (k, got, want)


def test_ldexp_gradients_match_torch():
    # (integer exponents are positive here: PyTorch's backward takes 2**other in integers, 0 below 2**0)
    for db in ("float64", "float32", "int64"):
        r = {}
        for m in (wb, torch):
            x = m.tensor([1.5, -2.0, 0.25], dtype=m.float64, requires_grad=True)
            e = m.tensor([1, 2, 3] if db == "int64" else [1, -2, 3], dtype=getattr(m, db), requires_grad=db != "int64")
            y = m.ldexp(x, e)
            y.backward(m.tensor([1.0, 2.0, -1.0], dtype=m.float64))
            r[m] = (y.detach().numpy(), x.grad.numpy(), None if e.grad is None else e.grad.numpy(),
                    type(y.grad_fn).__name__)
        for a, b in zip(r[wb], r[torch]):
            if isinstance(a, str):
                assert a == b
            elif a is None or b is None:
                assert a is None and b is None
            else:
                np.testing.assert_allclose(a, b, rtol=1e-12)
    x = wb.tensor([1.5, -2.0, 0.25], dtype=wb.float64, requires_grad=True)
    e = wb.tensor([1.0, -2.0, 0.5], dtype=wb.float64, requires_grad=True)
    assert wb.autograd.gradcheck(wb.ldexp, (x, e))
    assert wb.autograd.gradgradcheck(wb.ldexp, (x, e))


def test_nextafter_matches_torch():
    a = EDGE + [1.0, 2.0, 0.0, -0.0]
    b = [1.0, 1.0, 2.0, -10.0, 0.75, 0.0, 0.0, -1.0, float("inf"), float("inf"), 0.0, 0.0, 1.0, 1.0, float("nan"),
         -1.0, 1.0]
    bad = []
    for da in ["float16", "bfloat16", "float32", "float64", "int64", "complex64"]:
        for db in ["float16", "float32", "float64", "int64"]:
            bi = [int(v) if np.isfinite(v) else 7 for v in b]
            got, want = _both(lambda m: m.nextafter(_t(m, a, da) if da[0] in "fbc" else _t(m, [1, 2], da),
                                                    (_t(m, b if db[0] == "f" else bi, db) if da[0] in "fbc" else
                                                     _t(m, [3, 0], db))))
            if got != want:
                bad.append((da, db, got, want))
    assert not bad
    for k, c in enumerate([
        lambda m: m.nextafter(_t(m, [1.0, 2.0], "float32"), m.tensor(3.0, dtype=m.float64)),
        lambda m: _t(m, [1.0, 2.0], "float32").nextafter_(_t(m, [3.0, 0.0], "float64")),
        lambda m: _t(m, [1.0, 2.0], "float64").nextafter(_t(m, [3.0, 0.0], "float32")),
        lambda m: m.nextafter(_t(m, [1.0, 2.0], "float32"), _t(m, [3.0, 0.0], "float32"), out=m.empty(2)),
        lambda m: m.nextafter(_t(m, [1.0, 2.0], "float32"), 3.0),
    ]):
        got, want = _both(c)
        assert got == want, (k, got, want)


def test_nextafter_gradient_is_g_for_input_and_zero_for_other():
    r = {}
    for m in (wb, torch):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = m.tensor([3.0, float("inf")], requires_grad=True)
        m.nextafter(x, y).backward(m.tensor([2.0, float("inf")]))
        r[m] = x.grad.tolist(), y.grad.tolist()
    assert r[wb] == r[torch]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_frexp_matches_torch(dtype):
    vals = EDGE + [1e-7, 5e-324, 1.7e308, -1e-40]
    with np.errstate(all="ignore"):
        got = wb.frexp(wb.tensor(vals, dtype=wb.float64).to(getattr(wb, dtype)))
    want = torch.frexp(torch.tensor(vals, dtype=torch.float64).to(getattr(torch, dtype)))
    assert type(got).__name__ == "frexp" and got._fields == ("mantissa", "exponent")
    assert _res(got) == _res(want)
    np.testing.assert_array_equal(np.signbit(got.mantissa.float().numpy()), np.signbit(want.mantissa.float().numpy()))


def test_frexp_out_errors_and_gradient():
    f = [1.0, 3.0]
    for k, c in enumerate([
        lambda m: m.frexp(_t(m, [1, 2], "int64")),
        lambda m: m.frexp(_t(m, [1j], "complex64")),
        lambda m: m.frexp(_t(m, f, "float32"), out=(m.empty(2), m.empty(2, dtype=m.int32))),
        lambda m: m.frexp(_t(m, f, "float32"), out=(m.empty(2), m.empty(2, dtype=m.int64))),
        lambda m: m.frexp(_t(m, f, "float32"), out=(m.empty(2, dtype=m.float64), m.empty(2, dtype=m.int32))),
        lambda m: m.tensor(3.0).frexp(),
    ]):
        got, want = _both(c)
        assert got == want, (k, got, want)
    r = {}
    for m in (wb, torch):
        x = m.tensor([3.0, 5.0, -0.1], dtype=m.float64, requires_grad=True)
        mant, ex = m.frexp(x)
        assert not ex.requires_grad and mant.requires_grad
        (mant * 3).sum().backward()
        r[m] = x.grad.tolist(), type(mant.grad_fn).__name__
    assert r[wb] == r[torch]
    x = wb.tensor([3.0, 5.0, -0.1], dtype=wb.float64, requires_grad=True)
    assert wb.autograd.gradcheck(lambda t: wb.frexp(t).mantissa, (x,))
    assert wb.autograd.gradgradcheck(lambda t: wb.frexp(t).mantissa, (x,))
