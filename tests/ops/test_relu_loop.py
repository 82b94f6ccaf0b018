"""relu's one-pass loops (``fused.relu``, ``fused.relu_grad``) against the NumPy form they replace, bit for bit
(signed zeros, NaN, inf, subnormals; float32 and float64; sizes below and above where the loops start;
non-contiguous inputs), against PyTorch on finite values, and its gradients by gradcheck/gradgradcheck."""
import numpy as np
import pytest
import torch

import workbench as wb
from workbench._backend import fused
from workbench.ops import elementwise

pytestmark = pytest.mark.skipif(fused._numba() is None, reason="numba is not installed")

SPECIAL = [-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, -1.0, 1.0, 1e-45, -1e-45, 5e-324, -5e-324]


def _case(n, dtype):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(dtype)
    g = rng.standard_normal(n).astype(dtype)
    x[:len(SPECIAL)] = SPECIAL
    x[20:25] = -1.0  # upstream non-finite or signed-zero gradients where relu is flat
    g[20:25] = [np.nan, np.inf, -np.inf, -0.0, -3.0]
    return x, g


def _run(x, g):
    xt = wb.tensor(x, requires_grad=True)
    y = wb.relu(xt)
    y.backward(wb.tensor(g))
    return y.detach().numpy(), xt.grad.numpy()


def _bits(a):
    return a.view(np.uint8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [100, elementwise._RELU_LOOP_MIN, 64 * 256 + 3])
def test_loop_is_the_numpy_form_bit_for_bit(n, dtype, monkeypatch):
    x, g = _case(n, dtype)
    calls = []
    for name in ("relu", "relu_grad"):
        loop = getattr(fused, name)
        monkeypatch.setattr(fused, name, lambda *a, _loop=loop, _name=name: calls.append(_name) or _loop(*a))
    with np.errstate(all="ignore"):
        y, dx = _run(x, g)
        want_y = np.maximum(x, 0)
        want_dx = g * (want_y > 0)
    assert calls == (["relu", "relu_grad"] if n >= elementwise._RELU_LOOP_MIN else [])
    assert y.dtype == dtype and dx.dtype == dtype
    np.testing.assert_array_equal(_bits(y), _bits(want_y))
    np.testing.assert_array_equal(_bits(dx), _bits(want_dx))


def test_non_contiguous_and_2d_inputs():
    x, g = _case(4096, np.float32)
    x2, g2 = x.reshape(64, 64).T, g.reshape(64, 64).T  # transposed views: the NumPy form
    with np.errstate(all="ignore"):
        y, dx = _run(x2, g2)
        np.testing.assert_array_equal(_bits(np.ascontiguousarray(y)), _bits(np.ascontiguousarray(np.maximum(x2, 0))))
        want_dx = g2 * (np.maximum(x2, 0) > 0)
    np.testing.assert_array_equal(_bits(np.ascontiguousarray(dx)), _bits(np.ascontiguousarray(want_dx)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_pytorch(dtype):
    rng = np.random.default_rng(1)
    x, g = rng.standard_normal((64, 256)).astype(dtype), rng.standard_normal((64, 256)).astype(dtype)
    x[0, :4] = [0.0, -0.0, 1e-45, -1e-45]
    y, dx = _run(x, g)
    xt = torch.tensor(x, requires_grad=True)
    torch.relu(xt).backward(torch.tensor(g))
    np.testing.assert_array_equal(y, torch.relu(torch.tensor(x)).numpy())
    np.testing.assert_array_equal(dx, xt.grad.numpy())


def test_gradchecks():
    x = np.random.default_rng(2).standard_normal((3, 5))
    x[np.abs(x) < 1e-3] = 0.5  # away from the kink for finite differences
    xw = wb.tensor(x, requires_grad=True)
    assert wb.autograd.gradcheck(wb.relu, (xw,))
    assert wb.autograd.gradgradcheck(wb.relu, (xw,))
