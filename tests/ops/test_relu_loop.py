"""relu's one-pass forms: the forward loop (``fused.relu``) from ``elementwise._RELU_LOOP_MIN`` elements (hidden
layers as small as the digits MLP's 64x256, below ``fused.MIN_SIZE``) and NumPy's ``maximum(0, x)`` below it and
for non-contiguous inputs; the backward loop (``fused.relu_grad``) at any size, and NumPy's select for
non-contiguous gradients. They run where they should and give PyTorch's values and edges (signed zeros, NaN,
inf, subnormals; float32 and float64); gradients by gradcheck/gradgradcheck; complex and bool inputs raise
PyTorch's errors."""
import numpy as np
import pytest
import torch

import workbench as wb
from workbench._backend import fused
from workbench.ops import elementwise

SPECIAL = [-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, -1.0, 1.0, 1e-45, -1e-45, 5e-324, -5e-324]


def _case(n, dtype):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(dtype)
    g = rng.standard_normal(n).astype(dtype)
    x[:len(SPECIAL)] = SPECIAL
    x[20:25] = -1.0  # upstream non-finite or signed-zero gradients where relu is flat
    g[20:25] = [np.nan, np.inf, -np.inf, -0.0, -3.0]
    return x, g


def _run(lib, x, g):
    xt = lib.tensor(x, requires_grad=True)
    y = lib.relu(xt)
    y.backward(lib.tensor(g))
    return y.detach().numpy(), xt.grad.numpy()


@pytest.fixture
def calls(monkeypatch):
    if fused._numba() is None or not fused.ENABLED[0]:
        pytest.skip("numba is not installed or WORKBENCH_NUMBA=0")
    got = []
    for name in ("relu", "relu_grad"):
        loop = getattr(fused, name)
        monkeypatch.setattr(fused, name, lambda *a, _loop=loop, _name=name: got.append(_name) or _loop(*a))
    return got


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [elementwise._RELU_LOOP_MIN, 64 * 256 + 3])
def test_loops_run_from_the_cut_with_pytorch_edges(n, dtype, calls):
    x, g = _case(n, dtype)
    y, dx = _run(wb, x, g)
    assert calls == ["relu", "relu_grad"]
    yt, dxt = _run(torch, x, g)
    assert y.dtype == dtype and dx.dtype == dtype
    np.testing.assert_array_equal(np.signbit(y), np.signbit(yt))
    np.testing.assert_array_equal(y, yt)
    np.testing.assert_array_equal(dx, dxt)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 30, 128, elementwise._RELU_LOOP_MIN - 1])
def test_numpy_forward_below_the_cut_loop_backward(n, dtype, calls):
    x, g = _case(max(n, 30), dtype)
    x, g = x[:n].copy(), g[:n].copy()
    y, dx = _run(wb, x, g)
    assert calls == ["relu_grad"]
    yt, dxt = _run(torch, x, g)
    np.testing.assert_array_equal(np.signbit(y), np.signbit(yt))
    np.testing.assert_array_equal(y, yt)
    np.testing.assert_array_equal(np.signbit(dx), np.signbit(dxt))
    np.testing.assert_array_equal(dx, dxt)


def test_numpy_forms_for_views(calls):
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((64, 64)).astype(np.float32)
    xs[::3, ::5] = -0.0
    xs[1::7, ::3] = np.nan
    xs = xs.T  # a transposed view: not C-contiguous
    y, dx = _run(wb, xs, xs.T.copy().T)
    yt, dxt = _run(torch, xs, xs.T.copy().T)
    np.testing.assert_array_equal(np.signbit(y), np.signbit(yt))
    np.testing.assert_array_equal(y, yt)
    np.testing.assert_array_equal(np.signbit(dx), np.signbit(dxt))
    np.testing.assert_array_equal(dx, dxt)
    assert calls == []


@pytest.mark.parametrize("make", [lambda lib: lib.tensor([1 + 1j, -1 - 2j]),
                                  lambda lib: lib.tensor([1 + 1j, -1 - 2j], requires_grad=True),
                                  lambda lib: lib.tensor([True, False])])
@pytest.mark.parametrize("form", ["function", "method", "F", "inplace"])
def test_complex_and_bool_raise_pytorch_errors(make, form):
    def run(lib):
        x = make(lib)
        if form == "inplace":
            with lib.no_grad():
                return x.relu_()
        return {"function": lib.relu, "method": lambda t: t.relu(), "F": lib.nn.functional.relu}[form](x)
    with pytest.raises(Exception) as et:
        run(torch)
    with pytest.raises(et.type, match=str(et.value).split("\n")[0]):
        run(wb)


def test_relu_takes_no_out():
    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        wb.relu(wb.ones(2), out=wb.empty(2))


def test_gradchecks():
    x = np.random.default_rng(2).standard_normal((3, 5))
    x[np.abs(x) < 1e-3] = 0.5  # away from the kink for finite differences
    xw = wb.tensor(x, requires_grad=True)
    assert wb.autograd.gradcheck(wb.relu, (xw,))
    assert wb.autograd.gradgradcheck(wb.relu, (xw,))
