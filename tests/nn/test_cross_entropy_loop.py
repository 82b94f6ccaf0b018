"""cross_entropy with class indices on float32 logits: the compiled loop (``fused.cross_entropy``, any size)
and the NumPy form it replaces, against PyTorch: every reduction, weight, ignore_index, label smoothing,
(C,), (N, C) and (N, C, d) inputs, small and large, extreme logits, and the errors. Each test runs with the
loops on and off (off: the path of an install without Numba)."""
import numpy as np
import pytest
import torch

import workbench as wb
from workbench._backend import fused


def _run(lib, x, t, g=None, **kw):
    xt = lib.tensor(x, requires_grad=True)
    w = kw.pop("weight", None)
    y = lib.nn.functional.cross_entropy(xt, lib.tensor(t), weight=None if w is None else lib.tensor(w), **kw)
    y.backward(lib.tensor(g) if g is not None else None)
    return y.detach().numpy(), xt.grad.numpy()


@pytest.mark.parametrize("smoothing", [0.0, 0.15])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(64, 10), (300, 257), (7,), (4, 5, 3, 2)])
def test_matches_pytorch(shape, reduction, weighted, smoothing, loops):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    c = shape[1] if len(shape) > 1 else shape[0]
    tshape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
    t = rng.integers(0, c, tshape)
    if t.ndim:
        t.reshape(-1)[::5] = -100  # ignored
    w = rng.random(c).astype(np.float32) + 0.5 if weighted else None
    g = rng.standard_normal(tshape).astype(np.float32) if reduction == "none" else None
    kw = dict(weight=w, reduction=reduction, label_smoothing=smoothing)
    y, dx = _run(wb, x, t, g, **dict(kw))
    yt, dxt = _run(torch, x, t, g, **dict(kw))
    assert y.dtype == np.float32 and dx.dtype == np.float32 and y.shape == yt.shape
    np.testing.assert_allclose(y, yt, rtol=3e-6, atol=1e-6)
    # p - smoothing / C cancels: both libraries are ~3e-7 off the float64 gradient there
    np.testing.assert_allclose(dx, dxt, rtol=1e-5, atol=5e-7 * max(1.0, float(np.abs(dxt).max())))


def test_extreme_logits_and_every_target_ignored(loops):
    x = np.zeros((6, 40), np.float32)
    x[0, 3] = 80.0  # e**80 overflows float32 without the row max
    x[1] = -1e4
    x[2, :] = np.linspace(-50, 50, 40)
    x[3, 5] = 1e-40
    t = np.array([3, 0, 39, 5, 1, 2])
    for kw in ({}, {"label_smoothing": 0.3}, {"reduction": "sum"}):
        y, dx = _run(wb, x, t, **kw)
        yt, dxt = _run(torch, x, t, **kw)
        np.testing.assert_allclose(y, yt, rtol=3e-6, atol=1e-6)
        np.testing.assert_allclose(dx, dxt, rtol=1e-5, atol=1e-8)
    ign = np.full(6, -100)
    for red in ("mean", "sum"):  # mean of nothing: nan with zero gradients, as PyTorch
        y, dx = _run(wb, x, ign, reduction=red)
        yt, dxt = _run(torch, x, ign, reduction=red)
        np.testing.assert_array_equal(y, yt)
        np.testing.assert_array_equal(dx, dxt)


def test_out_of_range_target_raises(loops):
    x = wb.zeros(3, 4)
    for bad in (4, -1):
        with pytest.raises(IndexError, match=f"Target {bad} is out of bounds"):
            wb.nn.functional.cross_entropy(x, wb.tensor([0, bad, 1]))
    wb.nn.functional.cross_entropy(x, wb.tensor([0, -1, 1]), ignore_index=-1)  # -1 ignored: fine


def test_loops_and_numpy_form_agree():
    """Both forms compute the same formulas; they differ by float32 rounding (the loop's e**x is a
    polynomial within 2 ulp, its sums float64)."""
    if fused._numba() is None:
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((500, 130)) * 4).astype(np.float32)
    t = rng.integers(0, 130, 500)
    w = rng.random(130).astype(np.float32)
    out = []
    for on in (True, False):
        fused.ENABLED[0] = on
        try:
            out.append(_run(wb, x, t, weight=w, label_smoothing=0.05))
        finally:
            fused.ENABLED[0] = True
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-9)


def test_second_derivatives_through_the_loop_forward():
    """create_graph after the loop's forward: the Tensor-op backward, gradchecked in float64 elsewhere; here
    its float32 value against PyTorch's double backward."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((16, 9)).astype(np.float32)
    t = rng.integers(0, 9, 16)
    v = rng.standard_normal((16, 9)).astype(np.float32)
    res = []
    for lib in (wb, torch):
        xt = lib.tensor(x, requires_grad=True)
        (gx,) = lib.autograd.grad(lib.nn.functional.cross_entropy(xt, lib.tensor(t), label_smoothing=0.1), xt,
                                  create_graph=True)
        (hv,) = lib.autograd.grad((gx * lib.tensor(v)).sum(), xt)
        res.append((gx.detach().numpy(), hv.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
