"""relu's one-pass loops (``fused.relu``, ``fused.relu_grad``) from ``elementwise._RELU_LOOP_MIN`` elements on
(hidden layers as small as the digits MLP's 64x256, below ``fused.MIN_SIZE``): they run where they should, give
PyTorch's values and edges (signed zeros, NaN, inf, subnormals; float32 and float64), and the NumPy form below
the cut and for non-contiguous inputs; gradients by gradcheck/gradgradcheck."""
import numpy as np
import pytest
import torch

import workbench as wb
from workbench._backend import fused
from workbench.ops import elementwise

pytestmark = pytest.mark.skipif(fused._numba() is None or not fused.ENABLED[0],
                                reason="numba is not installed or WORKBENCH_NUMBA=0")

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


def test_numpy_form_below_the_cut_and_for_views(calls):
    x, g = _case(elementwise._RELU_LOOP_MIN - 1, np.float32)
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((64, 64)).astype(np.float32).T  # a transposed view: not C-contiguous
    with np.errstate(all="ignore"):
        for a, b in ((x, g), (xs, xs.copy())):
            y, dx = _run(wb, a, b)
            yt, dxt = _run(torch, a, b)
            np.testing.assert_array_equal(np.signbit(y), np.signbit(yt))
            np.testing.assert_array_equal(y, yt)
            np.testing.assert_array_equal(np.signbit(dx), np.signbit(dxt))
            np.testing.assert_array_equal(dx, dxt)
    assert calls == []


def test_gradchecks():
    x = np.random.default_rng(2).standard_normal((3, 5))
    x[np.abs(x) < 1e-3] = 0.5  # away from the kink for finite differences
    xw = wb.tensor(x, requires_grad=True)
    assert wb.autograd.gradcheck(wb.relu, (xw,))
    assert wb.autograd.gradgradcheck(wb.relu, (xw,))
