"""The in-place pointwise kernels (workbench/_backend/pointwise.py) against PyTorch, forward and backward.

The op specs run small inputs; these run arrays above two blocks (the blockwise path) with the values
where the formulas switch branch: 0, the thresholds, +-inf, NaN, and float32 extremes.
"""
import numpy as np
import pytest
import torch

import workbench as wb
from workbench._backend import pointwise

N = 2 * pointwise.BLOCK + 1000
EDGES = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 3.0, -3.0, 6.0, 20.0, 21.0, -20.0, 88.0, -88.0, 100.0, -100.0,
         np.inf, -np.inf, np.nan, 3.4e38, -3.4e38, 1e-30, -1e-30]

CASES = {
    "relu": lambda F, x: F.relu(x),
    "hardtanh": lambda F, x: F.hardtanh(x),
    "relu6": lambda F, x: F.relu6(x),
    "hardtanh_asym": lambda F, x: F.hardtanh(x, -0.5, 2.0),
    "leaky_relu": lambda F, x: F.leaky_relu(x, 0.01),
    "leaky_relu_steep": lambda F, x: F.leaky_relu(x, 1.5),
    "elu": lambda F, x: F.elu(x),
    "elu_alpha": lambda F, x: F.elu(x, 0.3),
    "selu": lambda F, x: F.selu(x),
    "celu": lambda F, x: F.celu(x, 1.7),
    "threshold": lambda F, x: F.threshold(x, 0.5, -2.0),
    "threshold_zero": lambda F, x: F.threshold(x, 0.1, 0.0),
    "softshrink": lambda F, x: F.softshrink(x, 0.5),
    "hardshrink": lambda F, x: F.hardshrink(x, 0.5),
    "hardsigmoid": lambda F, x: F.hardsigmoid(x),
    "hardswish": lambda F, x: F.hardswish(x),
    "sigmoid": lambda F, x: F.sigmoid(x),
    "silu": lambda F, x: F.silu(x),
    "softplus": lambda F, x: F.softplus(x),
    "softplus_beta": lambda F, x: F.softplus(x, 2.0, 10.0),
    "mish": lambda F, x: F.mish(x),
    "logsigmoid": lambda F, x: F.logsigmoid(x),
}

# PyTorch's softshrink gives 0. in its dead zone |x| <= lambd in its vector lanes and -0. in the scalar tail
# of each chunk for negative x, so its sign there depends on an element's position and on the CPU's vector
# width: workbench gives 0. there everywhere (as hardshrink, and PyTorch's vector lanes, do)
DEAD_ZONE = {"softshrink": 0.5}


def _inputs(dtype):
    x = np.random.default_rng(0).standard_normal(N) * 4
    x[:len(EDGES)] = EDGES
    x[-len(EDGES):] = EDGES
    return x.astype(dtype), np.random.default_rng(1).standard_normal(N).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_and_backward_match_pytorch(name, dtype):
    x, g = _inputs(dtype)
    f = CASES[name]
    finite = np.isfinite(x)
    with np.errstate(all="ignore"):
        xw = wb.tensor(x, requires_grad=True)
        yw = f(wb.nn.functional, xw)
        yw.backward(wb.tensor(g))
    xt = torch.tensor(x, requires_grad=True)
    yt = f(torch.nn.functional, xt)
    yt.backward(torch.tensor(g))
    tol = dict(rtol=2e-6 if dtype == np.float32 else 1e-12, atol=1e-6 if dtype == np.float32 else 1e-12)
    assert yw.dtype == wb.float32 if dtype == np.float32 else yw.dtype == wb.float64
    np.testing.assert_allclose(yw.detach().numpy(), yt.detach().numpy(), equal_nan=True, **tol)
    # and the zeros' signs (a dropped negative prints as 0., not -0.)
    zero = yt.detach().numpy() == 0
    if name in DEAD_ZONE:
        dead = np.abs(x) <= DEAD_ZONE[name]
        assert not np.signbit(yw.detach().numpy()[dead]).any()
        zero &= ~dead
    np.testing.assert_array_equal(np.signbit(yw.detach().numpy()[zero]), np.signbit(yt.detach().numpy()[zero]))
    # at +-inf and NaN PyTorch's gradient formulas give NaN or 0 by accident of the formula; compare finite x
    np.testing.assert_allclose(xw.grad.numpy()[finite], xt.grad.numpy()[finite], equal_nan=True, **tol)


@pytest.mark.parametrize("name", ["hardtanh", "softshrink", "threshold", "hardsigmoid", "leaky_relu"])
def test_piecewise_gradient_with_create_graph(name):
    x0 = np.random.default_rng(2).standard_normal(64) * 2
    xw = wb.tensor(x0, requires_grad=True)
    (gw,) = wb.autograd.grad(CASES[name](wb.nn.functional, xw).sum(), xw, create_graph=True)
    xt = torch.tensor(x0, requires_grad=True)
    (gt,) = torch.autograd.grad(CASES[name](torch.nn.functional, xt).sum(), xt, create_graph=True)
    np.testing.assert_allclose(gw.detach().numpy(), gt.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["elu", "celu", "silu", "softplus", "mish", "logsigmoid", "sigmoid"])
def test_second_derivative_still_uses_the_differentiable_form(name):
    x0 = np.random.default_rng(2).standard_normal(64) * 2
    f = CASES[name]
    xw = wb.tensor(x0, requires_grad=True)
    (gw,) = wb.autograd.grad(f(wb.nn.functional, xw).sum(), xw, create_graph=True)
    (ggw,) = wb.autograd.grad((gw * gw).sum(), xw)
    xt = torch.tensor(x0, requires_grad=True)
    (gt,) = torch.autograd.grad(f(torch.nn.functional, xt).sum(), xt, create_graph=True)
    (ggt,) = torch.autograd.grad((gt * gt).sum(), xt, allow_unused=True)
    np.testing.assert_allclose(gw.detach().numpy(), gt.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ggw.numpy(), (ggt if ggt is not None else torch.zeros_like(xt)).numpy(), rtol=1e-9,
                               atol=1e-12)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_glu_primitive_matches_pytorch_and_gradchecks(dim):
    x = np.random.default_rng(3).standard_normal((6, 8, 4)).astype(np.float32) * 3
    x[0, 0, 0] = 100.0  # sigmoid's e**-b overflow side
    x[0, 0, 1] = -100.0
    xw, xt = wb.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    g = np.random.default_rng(4).standard_normal(tuple(torch.nn.functional.glu(xt, dim).shape)).astype(np.float32)
    yw, yt = wb.nn.functional.glu(xw, dim), torch.nn.functional.glu(xt, dim)
    yw.backward(wb.tensor(g))
    yt.backward(torch.tensor(g))
    np.testing.assert_allclose(yw.detach().numpy(), yt.detach().numpy(), rtol=2e-6, atol=1e-7)
    # g a s (1 - s): 1 - s cancels where s is near 1, a few ulps apart from PyTorch's order of products
    np.testing.assert_allclose(xw.grad.numpy(), xt.grad.numpy(), rtol=2e-5, atol=1e-7)
    x64 = wb.tensor(x[:4, :4, :2].astype(np.float64) / 3, requires_grad=True)
    assert wb.autograd.gradcheck(lambda t: wb.nn.functional.glu(t, dim), (x64,))
    assert wb.autograd.gradgradcheck(lambda t: wb.nn.functional.glu(t, dim), (x64,))


@pytest.mark.parametrize("name", sorted(CASES))
def test_zero_dim_inputs(name):
    for v in (-2.5, 0.25, 4.0):
        xw, xt = wb.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
        CASES[name](wb.nn.functional, xw).backward()
        CASES[name](torch.nn.functional, xt).backward()
        assert xw.grad.shape == ()
        np.testing.assert_allclose(xw.grad.item(), xt.grad.item(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["leaky_relu", "leaky_relu_steep", "hardswish", "hardsigmoid", "hardshrink",
                                  "threshold", "threshold_zero", "relu", "softshrink"])
def test_numba_loops_and_numpy_forms_agree_bitwise(name):
    """The one-pass Numba loops (``_backend/fused.py``, used where numba is installed) and the NumPy forms
    they replace give the same values, tiny and denormal inputs included."""
    from workbench._backend import fused

    x, g = _inputs(np.float32)
    x[100:110] = [1e-45, -1e-45, 1e-40, -1e-40, 1.2e-38, -1.2e-38, 2.9999998, -2.9999998, 0.50000006, -0.50000006]
    outs, was = [], fused.ENABLED[0]
    try:
        for on in (True, False):
            fused.ENABLED[0] = on
            with np.errstate(all="ignore"):
                xw = wb.tensor(x, requires_grad=True)
                CASES[name](wb.nn.functional, xw).backward(wb.tensor(g))
                outs.append((CASES[name](wb.nn.functional, wb.tensor(x)).numpy(), xw.grad.numpy()))
    finally:
        fused.ENABLED[0] = was
    (y1, g1), (y0, g0) = outs
    np.testing.assert_array_equal(y1, y0)
    finite = np.isfinite(x)  # at +-inf the NumPy form's gradient is NaN by accident of its formula
    np.testing.assert_array_equal(g1[finite], g0[finite])


@pytest.mark.parametrize("numba_on", [True, False])
def test_threshold_passes_nan_and_its_gradient_as_pytorch(numba_on):
    # PyTorch's threshold is x <= th ? value : x, so NaN stays NaN and its gradient passes (slope 1)
    from workbench._backend import fused

    x = np.tile(np.array([np.nan, -1.0, 0.1, 2.0, -np.inf, np.inf], np.float32), 2 * pointwise.BLOCK // 6 + 1)
    was = fused.ENABLED[0]
    try:
        fused.ENABLED[0] = numba_on
        xw = wb.tensor(x, requires_grad=True)
        wb.nn.functional.threshold(xw, 0.1, 5.0).sum().backward()
    finally:
        fused.ENABLED[0] = was
    xt = torch.tensor(x, requires_grad=True)
    yt = torch.nn.functional.threshold(xt, 0.1, 5.0)
    yt.sum().backward()
    np.testing.assert_array_equal(wb.nn.functional.threshold(wb.tensor(x), 0.1, 5.0).numpy(), yt.detach().numpy())
    np.testing.assert_array_equal(xw.grad.numpy(), xt.grad.numpy())


def test_relu_loop_keeps_pytorch_edges():
    # clamp_min(x, 0) keeps NaN and -0.0; threshold_backward(g, y, 0) passes g where y is NaN and gives 0, not
    # inf * 0, below 0 (the loops; the NumPy form, for small or non-float32/64 arrays, is max(x, 0) and g (y > 0))
    from workbench._backend import fused

    if not fused.usable(np.zeros(N, np.float32)):
        pytest.skip("needs numba")
    x = np.tile(np.array([np.nan, -0.0, -1.0, 0.0, 2.0, -np.inf, np.inf], np.float32), N // 7 + 1)
    g = np.tile(np.array([1.0, 2.0, np.inf, 3.0, 4.0, 5.0, 6.0], np.float32), N // 7 + 1)
    xw, xt = wb.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yw, yt = wb.relu(xw), torch.relu(xt)
    yw.backward(wb.tensor(g))
    yt.backward(torch.tensor(g))
    np.testing.assert_array_equal(np.signbit(yw.detach().numpy()), np.signbit(yt.detach().numpy()))
    np.testing.assert_array_equal(yw.detach().numpy(), yt.detach().numpy())
    np.testing.assert_array_equal(xw.grad.numpy(), xt.grad.numpy())


@pytest.mark.parametrize("name,kw", [("elu", {}), ("selu", {}), ("celu", {"alpha": 1.7}), ("elu", {"alpha": 0.3})])
def test_elu_family_loop_within_two_ulp_of_pytorch(name, kw):
    # the float32 loop's expm1 (a Taylor polynomial above -0.7, e**x - 1 below) on a dense range, the switch
    # point and the edges: as close to PyTorch's as NumPy's expm1 is
    x = np.concatenate([np.linspace(-20, 5, 1 << 18), [-0.7, -0.70000005, -0.69999995, -0.0, 0.0, -1e-30, -1e-45,
                                                       -np.inf, np.inf, np.nan]]).astype(np.float32)
    from workbench._backend import fused

    if not fused.usable32(x):
        pytest.skip("needs numba (the NumPy form keeps its own signed zeros)")
    yw = getattr(wb.nn.functional, name)(wb.tensor(x), **kw).numpy()
    yt = getattr(torch.nn.functional, name)(torch.tensor(x), **kw).numpy()
    np.testing.assert_array_equal(np.isnan(yw), np.isnan(yt))
    np.testing.assert_array_equal(np.signbit(yw), np.signbit(yt))
    ok = np.isfinite(yt)
    assert np.all(np.abs(yw[ok] - yt[ok]) <= 2 * np.spacing(np.abs(yt[ok]) + np.float32(1e-38)))


SIGNED_ZERO_CASES = {
    "elu": lambda F, x: F.elu(x),
    "selu": lambda F, x: F.selu(x),
    "celu": lambda F, x: F.celu(x, 1.7),
    "threshold_neg": lambda F, x: F.threshold(x, -0.1, 5.0),  # -0. is kept, and keeps its sign
    "threshold_neg_zero_value": lambda F, x: F.threshold(x, 0.1, -0.0),  # the value -0. replaces as -0.
    "threshold_zero_value": lambda F, x: F.threshold(x, 0.1, 0.0),
    "threshold_at_neg_zero": lambda F, x: F.threshold(x, -0.0, 2.0),
}


@pytest.mark.parametrize("loops", [True, False], ids=["loops", "numpy"])
@pytest.mark.parametrize("n", [7, N])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("name", sorted(SIGNED_ZERO_CASES))
def test_signed_zeros_match_pytorch(name, dtype, n, loops, monkeypatch):
    # -0. and 0. inputs (at the start and the end, where a loop's tail runs) in both forms of each kernel
    from workbench._backend import fused

    monkeypatch.setattr(fused, "ENABLED", [loops and fused.ENABLED[0]])
    x = np.resize(np.array([-0.0, 0.0, -0.05, 0.05, -0.3, 0.3, -2.0, np.nan], np.float64), n)
    x[-4:] = [-0.0, 0.0, -0.0, -0.05]
    f = SIGNED_ZERO_CASES[name]
    xt = torch.tensor(x, dtype=getattr(torch, dtype))
    yt = f(torch.nn.functional, xt).float().numpy()
    xw = wb.tensor(xt.float().numpy()).to(getattr(wb, dtype))
    yw = f(wb.nn.functional, xw).float().numpy()
    np.testing.assert_allclose(yw, yt, rtol=1e-2 if dtype == "bfloat16" else 1e-6, equal_nan=True)
    num = ~np.isnan(yt)  # (the sign of a NaN is not part of the contract)
    np.testing.assert_array_equal(np.signbit(yw[num]), np.signbit(yt[num]))
