"""relu, leaky_relu and the piecewise-linear activations (hardtanh, relu6, threshold, hardshrink, softshrink, hardsigmoid,
clamp) give PyTorch's values bitwise on edge inputs, on the NumPy forms (below the loops' cut-offs, and on the
fake cupy) and the loops alike: an inf or NaN upstream gradient where the slope is 0 gives 0 (a select, not
g * mask, which would give NaN), a negative one gives 0. (not -0.), NaN and -0. inputs as PyTorch keeps them;
in float32 and float64, through backward and through a backward that builds a graph (create_graph)."""
import numpy as np
import pytest
import torch

import workbench as wb
from workbench.ops import elementwise

X = [-0.0, 0.0, np.nan, np.inf, -np.inf, -1.0, 1.0, -0.5, 0.5, 0.7, -0.7, 6.0, 7.0, -2.0, 1e-45, -1e-45]
G = [np.nan, np.inf, -np.inf, -0.0, -3.0, 0.0, 2.0]

FNS = {
    "relu": lambda F, x: F.relu(x),
    "leaky_relu": lambda F, x: F.leaky_relu(x, 0.1),
    "leaky_relu_0": lambda F, x: F.leaky_relu(x, 0.0),
    "leaky_relu_2": lambda F, x: F.leaky_relu(x, 2.0),
    "hardtanh": lambda F, x: F.hardtanh(x),
    "hardtanh_lo_hi": lambda F, x: F.hardtanh(x, -0.5, 0.7),
    "relu6": lambda F, x: F.relu6(x),
    "threshold": lambda F, x: F.threshold(x, 0.5, -2.0),
    "threshold_0": lambda F, x: F.threshold(x, 0.0, 0.0),
    "hardshrink": lambda F, x: F.hardshrink(x, 0.5),
    "softshrink": lambda F, x: F.softshrink(x, 0.5),
    "hardsigmoid": lambda F, x: F.hardsigmoid(x),
    "clamp": lambda F, x: x.clamp(-0.5, 0.7),
}
OTHERS = {"hardswish": lambda F, x: F.hardswish(x)}  # not piecewise-linear: its own test, below

# below relu's loop cut, between it and the piecewise loops' (fused.MIN_SIZE), and above both
SIZES = [len(X) * len(G), elementwise._RELU_LOOP_MIN + 5, (1 << 15) + 7]


def _case(n, dtype):
    rng = np.random.default_rng(n)
    x = (3 * rng.standard_normal(n)).astype(dtype)
    g = rng.standard_normal(n).astype(dtype)
    k = len(X)
    for j, gv in enumerate(G):  # every edge input against every edge gradient
        x[j * k:(j + 1) * k] = X
        g[j * k:(j + 1) * k] = gv
    return x, g


def _run(lib, name, x, g, device, create_graph=False):
    F = lib.nn.functional
    kw = {"device": device} if lib is wb else {}
    xt = lib.tensor(x, requires_grad=True, **kw)
    y = (FNS.get(name) or OTHERS[name])(F, xt)
    (dx,) = lib.autograd.grad(y, xt, lib.tensor(g, **kw), create_graph=create_graph)
    return y.detach().cpu().numpy(), dx.detach().cpu().numpy()


def _assert_bitwise(a, b):
    np.testing.assert_array_equal(a, b)  # NaN where NaN
    np.testing.assert_array_equal(np.signbit(a[~np.isnan(a)]), np.signbit(b[~np.isnan(b)]))  # NaN's sign is free


@pytest.mark.parametrize("name", sorted(FNS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", SIZES)
def test_edges_match_pytorch(name, n, dtype, device):
    x, g = _case(n, dtype)
    with np.errstate(all="ignore"):
        y, dx = _run(wb, name, x, g, device)
    yt, dxt = _run(torch, name, x, g, "cpu")
    assert y.dtype == dtype and dx.dtype == dtype
    _assert_bitwise(y, yt)
    _assert_bitwise(dx, dxt)


@pytest.mark.parametrize("name", sorted(FNS))
def test_edges_match_pytorch_when_backward_builds_a_graph(name, device):
    x, g = _case(SIZES[0], np.float64)
    with np.errstate(all="ignore"):
        _, dx = _run(wb, name, x, g, device, create_graph=True)
    _, dxt = _run(torch, name, x, g, "cpu", create_graph=True)
    _assert_bitwise(dx, dxt)


@pytest.mark.parametrize("name", sorted(FNS))
def test_gradchecks(name):
    x = np.random.default_rng(5).uniform(-3, 8, (4, 5))
    for kink in (-0.5, 0.0, 0.5, 0.7, -1.0, 1.0, 6.0, -3.0, 3.0):  # away from the kinks for finite differences
        x[np.abs(x - kink) < 1e-2] = 0.25
    xw = wb.tensor(x, requires_grad=True)
    f = lambda t: FNS[name](wb.nn.functional, t)  # noqa: E731
    assert wb.autograd.gradcheck(f, (xw,))
    assert wb.autograd.gradgradcheck(f, (xw,))


def test_hardswish_edges_match_pytorch(device):
    """hardswish's gradient is PyTorch's selects (its vector loop's): 0 up to -3 whatever g (an inf x too), g
    from 3 on (+inf: g, not inf * 0 = NaN), g * (x / 3 + 0.5) between, so NaN for a NaN x; on the NumPy form
    and the loop alike, and when backward builds a graph. PyTorch's NaN-x gradient depends on the dtype and
    on where the element falls (its scalar tail loop gives g): that is compared with NaN, not with PyTorch."""
    for n in SIZES:
        for dtype in (np.float32, np.float64):
            x, g = _case(n, dtype)
            with np.errstate(all="ignore"):
                y, dx = _run(wb, "hardswish", x, g, device)
                _, dx2 = _run(wb, "hardswish", x[:112], g[:112], device, create_graph=True)
            yt, dxt = _run(torch, "hardswish", x, g, "cpu")
            _assert_bitwise(y, yt)
            keep = ~np.isnan(x)
            _assert_bitwise(dx[keep], dxt[keep])
            _assert_bitwise(dx2[keep[:112]], dxt[:112][keep[:112]])
            assert np.isnan(dx[~keep]).all() and np.isnan(dx2[~keep[:112]]).all()
