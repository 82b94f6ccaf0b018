"""The long-tail functions real scripts call (gcd/lcm, heaviside, angle, complex/polar, isin,
unravel_index, fill_diagonal_, dist, renorm, trapezoid/trapz/cumulative_trapezoid) against PyTorch:
values and dtypes, gradients where PyTorch has them (float64 gradcheck and PyTorch's own gradients), the
in-place forms, and the errors."""
import numpy as np
import pytest
import torch

import workbench as wb

RNG = np.random.default_rng(0)
M = RNG.standard_normal((4, 5))
V = RNG.standard_normal(5)
X = np.array([0.0, 0.5, 1.5, 2.0, 4.0])
I1, I2 = np.array([12, 18, 0, -4, 7]), np.array([8, 27, 0, 6, 0])


def _t(m, a):
    return m.tensor(a)


CASES = [
    ("gcd", lambda m: m.gcd(_t(m, I1), _t(m, I2))),
    ("lcm", lambda m: m.lcm(_t(m, I1), _t(m, I2))),
    ("gcd int32 int64", lambda m: m.gcd(_t(m, I1).int(), _t(m, I2))),
    ("gcd_", lambda m: _t(m, I1).gcd_(_t(m, I2))),
    ("heaviside", lambda m: m.heaviside(m.tensor([-1.0, 0.0, 0.0, 3.0]), m.tensor([0.5, 0.25, 0.25, 0.5]))),
    ("angle real", lambda m: m.angle(m.tensor([-1.0, float("nan"), 0.0, 2.0]))),
    ("angle int", lambda m: m.angle(m.tensor([-1, 2]))),
    ("angle complex", lambda m: m.tensor([1 + 1j, -1 - 2j]).angle()),
    ("complex", lambda m: m.complex(_t(m, V), _t(m, V[::-1].copy()))),
    ("polar", lambda m: m.polar(_t(m, np.abs(V)), _t(m, V))),
    ("isin", lambda m: m.isin(_t(m, I1), _t(m, I2))),
    ("isin invert scalar", lambda m: m.isin(_t(m, I1), 7, invert=True)),
    ("isin scalar elements", lambda m: m.isin(18, _t(m, I1))),
    ("unravel", lambda m: m.stack(m.unravel_index(m.tensor([0, 5, 7, 11, 23]), (2, 3, 4)))),
    ("unravel 0-d", lambda m: m.stack(m.unravel_index(m.tensor(3), m.Size([2, 2])))),
    ("fill_diagonal_", lambda m: m.zeros(3, 5).fill_diagonal_(2.0)),
    ("fill_diagonal_ wrap", lambda m: m.zeros(7, 3).fill_diagonal_(1.0, wrap=True)),
    ("fill_diagonal_ no wrap", lambda m: m.zeros(7, 3).fill_diagonal_(1.0)),
    ("fill_diagonal_ cube", lambda m: m.zeros(3, 3, 3).fill_diagonal_(4.0)),
    ("dist", lambda m: m.dist(_t(m, M), _t(m, V))),
    ("dist p=1 method", lambda m: _t(m, M).dist(_t(m, M * 2), 1)),
    ("dist inf", lambda m: m.dist(_t(m, M), _t(m, V), float("inf"))),
    ("dist 0", lambda m: m.dist(_t(m, M), _t(m, np.round(M)), 0)),
    ("renorm rows", lambda m: m.renorm(_t(m, M), 2, 0, 1.5)),
    ("renorm cols p1", lambda m: _t(m, M).renorm(1, 1, 2.0)),
    ("renorm_", lambda m: _t(m, M).renorm_(3, -1, 1.0)),
    ("trapezoid", lambda m: m.trapezoid(_t(m, M))),
    ("trapezoid x", lambda m: m.trapezoid(_t(m, M), _t(m, X))),
    ("trapezoid dx dim0", lambda m: m.trapezoid(_t(m, M), dx=0.5, dim=0)),
    ("trapezoid x full", lambda m: m.trapezoid(_t(m, M), _t(m, np.tile(X, (4, 1))), dim=1)),
    ("trapz", lambda m: m.trapz(_t(m, M), _t(m, X))),
    ("cumulative", lambda m: m.cumulative_trapezoid(_t(m, M), _t(m, X))),
    ("cumulative dx", lambda m: m.cumulative_trapezoid(_t(m, M), dx=2.0, dim=0)),
]


@pytest.mark.parametrize("name,call", CASES, ids=[c[0] for c in CASES])
def test_matches_pytorch(name, call):
    w, t = call(wb), call(torch)
    assert str(w.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (w.dtype, t.dtype)
    tol = 1e-6 if "32" in str(t.dtype) or "64" not in str(t.dtype) else 1e-12
    np.testing.assert_allclose(w.numpy(), t.numpy(), rtol=tol, atol=tol, equal_nan=True)


GRADS = [
    ("complex", lambda m, a, b: m.complex(a, b).abs().sum()),
    ("polar", lambda m, a, b: m.polar(a.abs() + 0.1, b).real.sum()),
    ("angle complex", lambda m, a, b: m.complex(a, b).angle().sum()),
    ("dist", lambda m, a, b: m.dist(a, b, 3)),
    ("renorm", lambda m, a, b: (m.renorm(a.reshape(1, -1).expand(3, -1) * m.tensor([[0.1], [1.0], [5.0]],
                                                                                     dtype=m.float64), 2, 0, 1.0)
                                * b).sum()),
    ("trapezoid", lambda m, a, b: m.trapezoid(a * a, b.cumsum(0))),
    ("cumulative", lambda m, a, b: m.cumulative_trapezoid(a, b.cumsum(0)).pow(2).sum()),
]


@pytest.mark.parametrize("name,fn", GRADS, ids=[g[0] for g in GRADS])
def test_gradients(name, fn):
    a, b = RNG.standard_normal(5), np.abs(RNG.standard_normal(5)) + 0.2
    wa, wb_ = wb.tensor(a, requires_grad=True), wb.tensor(b, requires_grad=True)
    assert wb.autograd.gradcheck(lambda x, y: fn(wb, x, y), (wa, wb_))
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    fn(wb, wa, wb_).backward()
    fn(torch, ta, tb).backward()
    np.testing.assert_allclose(wa.grad.numpy(), ta.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(wb_.grad.numpy(), tb.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_fill_diagonal_in_a_graph_keeps_gradients_off_the_diagonal():
    for m in (wb, torch):
        x = m.ones(3, 3, requires_grad=True)
        y = (x * 2).fill_diagonal_(0.0)
        y.sum().backward()
        assert x.grad.tolist() == [[0.0, 2.0, 2.0], [2.0, 0.0, 2.0], [2.0, 2.0, 0.0]]


ERRORS = [
    (lambda m: m.gcd(m.tensor([1.0]), m.tensor([2.0])), NotImplementedError),
    (lambda m: m.heaviside(m.tensor([1.0]), m.tensor([2.0], dtype=m.float64)), RuntimeError),
    (lambda m: m.complex(m.tensor([1.0]), m.tensor([2.0], dtype=m.float64)), RuntimeError),
    (lambda m: m.complex(m.tensor([1]), m.tensor([2])), RuntimeError),
    (lambda m: m.unravel_index(m.tensor([1.0]), (2, 4)), TypeError),
    (lambda m: m.zeros(2, 3, 4).fill_diagonal_(1.0), RuntimeError),
    (lambda m: m.zeros(3).fill_diagonal_(1.0), RuntimeError),
    (lambda m: m.renorm(m.ones(2, 2), -1, 0, 1.0), RuntimeError),
    (lambda m: m.trapezoid(m.ones(3), m.ones(4)), RuntimeError),
    (lambda m: m.trapezoid(m.ones(3), m.ones(3), dx=2.0), TypeError),
    (lambda m: m.ones(1, 2, requires_grad=True).fill_diagonal_(0.0), RuntimeError),
]


@pytest.mark.parametrize("bad,exc", ERRORS)
def test_errors_match_pytorch(bad, exc):
    with pytest.raises(exc):
        bad(torch)
    with pytest.raises(exc):
        bad(wb)


def test_isin_out():
    for m in (wb, torch):
        o = m.empty(0, dtype=m.bool)
        assert m.isin(m.tensor([1, 2]), m.tensor([2]), out=o) is o and o.tolist() == [False, True]


KEYWORD_FORMS = [
    ("rand(size=)", lambda m: m.rand(size=(2, 3)).shape),
    ("randn(size=)", lambda m: m.randn(size=[4]).shape),
    ("arange(end=)", lambda m: m.arange(end=5).tolist()),
    ("arange pin_memory", lambda m: m.arange(3, pin_memory=False).tolist()),
    ("eye pin_memory", lambda m: m.eye(2, pin_memory=False).tolist()),
    ("flip(dims=)", lambda m: m.tensor([[1, 2], [3, 4]]).flip(dims=(0,)).tolist()),
    ("torch.flip(dims=)", lambda m: m.flip(m.tensor([[1, 2], [3, 4]]), dims=[1]).tolist()),
    ("permute(dims=)", lambda m: m.permute(m.zeros(2, 3, 4), dims=(2, 0, 1)).shape),
    ("reshape(shape=)", lambda m: m.reshape(m.arange(6), shape=(2, 3)).shape),
    ("view(size=)", lambda m: m.arange(6).view(size=(3, 2)).shape),
    ("view(dtype=)", lambda m: m.ones(2).view(dtype=m.int32).tolist()),
    ("new_zeros(size=)", lambda m: m.ones(1).new_zeros(size=(2,)).tolist()),
    ("asarray copy", lambda m: m.asarray(m.ones(2), copy=True).tolist()),
]


@pytest.mark.parametrize("name,call", KEYWORD_FORMS, ids=[k[0] for k in KEYWORD_FORMS])
def test_keyword_forms_pytorch_accepts(name, call):
    assert tuple(call(wb)) == tuple(call(torch))


def test_asarray_sharing_copying_and_requires_grad():
    for m in (wb, torch):
        a = np.ones(3, dtype=np.float32)
        shared, copied = m.asarray(a), m.asarray(a, copy=True)
        a[0] = 5
        assert shared[0].item() == 5 and copied[0].item() == 1
        x = m.ones(2)
        assert m.asarray(x) is x and m.asarray(x, copy=True) is not x
        assert m.asarray([1.0, 2.0], requires_grad=True).requires_grad
        with pytest.raises(ValueError):
            m.asarray(a, dtype=m.float64, copy=False)
        with pytest.raises(TypeError):
            m.arange()
    with pytest.raises(TypeError, match="both"):
        wb.rand(2, size=(3,))


def test_typename_scalar_tensor_is_inference_and_inplace_forms():
    for obj in (lambda m: m.ones(1, dtype=m.float64), lambda m: 3, lambda m: m.nn.Linear(2, 2), lambda m: m.nn.Linear,
                lambda m: len, lambda m: m.ones(1, dtype=m.bool)):
        assert wb.typename(obj(wb)).replace("workbench", "torch") == torch.typename(obj(torch))
    for args, kw in (((3,), {}), ((True,), {}), ((2,), {"dtype": "int64"}), ((1.5,), {"dtype": "float64"})):
        w = wb.scalar_tensor(*args, **{k: getattr(wb, v) for k, v in kw.items()})
        t = torch.scalar_tensor(*args, **{k: getattr(torch, v) for k, v in kw.items()})
        assert w.shape == t.shape == () and w.item() == t.item() and str(w.dtype)[-7:] == str(t.dtype)[-7:]
    with wb.inference_mode():
        assert wb.is_inference(wb.ones(1))
    assert not wb.is_inference(wb.ones(1))
    a = wb.tensor([4, 9])
    assert wb.gcd_(a, wb.tensor([6, 6])) is a and a.tolist() == [2, 3]
    assert wb.lcm_(a, wb.tensor([4, 4])).tolist() == [4, 12]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "complex64", "complex128", "bool", "int8", "uint8", "int16",
                                   "int32", "int64", "float32", "float64"])
def test_legacy_type_names_and_conversions(dtype):
    w, t = wb.ones(1, dtype=getattr(wb, dtype)), torch.ones(1, dtype=getattr(torch, dtype))
    assert w.type().replace("workbench", "torch") == t.type()
    for target in ("DoubleTensor", "IntTensor", "BoolTensor"):
        assert str(w.type(getattr(wb, target)).dtype)[-5:] == str(t.type(getattr(torch, target)).dtype)[-5:]
        assert str(w.type("torch." + target).dtype)[-5:] == str(t.type("torch." + target).dtype)[-5:]
    with pytest.raises(ValueError):
        t.type("foo")
    with pytest.raises(ValueError, match="invalid type"):
        w.type("foo")
