"""The one-primitive losses (huber_loss, smooth_l1_loss, mse_loss, binary_cross_entropy_with_logits; cross_entropy's and nll_loss's NumPy
paths) against PyTorch at a size above the BLAS-dot blocks, and gradchecked (with second derivatives)."""
import numpy as np
import pytest
import torch

import workbench as wb

CASES = {
    "huber": lambda F, x, t, r: F.huber_loss(x, t, reduction=r, delta=0.7),
    "huber_default": lambda F, x, t, r: F.huber_loss(x, t, reduction=r),
    "smooth_l1": lambda F, x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.6),
    "smooth_l1_default": lambda F, x, t, r: F.smooth_l1_loss(x, t, reduction=r),
    "mse": lambda F, x, t, r: F.mse_loss(x, t, reduction=r),
    "bce_with_logits": lambda F, x, t, r: F.binary_cross_entropy_with_logits(x, t.sigmoid(), reduction=r),
}


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_regression_losses_match_pytorch(name, reduction):
    rng = np.random.default_rng(0)
    x, t = (rng.standard_normal(50_001).astype(np.float32) * 2 for _ in range(2))
    xw, tw = wb.tensor(x, requires_grad=True), wb.tensor(t, requires_grad=True)
    xt, tt = torch.tensor(x, requires_grad=True), torch.tensor(t, requires_grad=True)
    lw, lt = CASES[name](wb.nn.functional, xw, tw, reduction), CASES[name](torch.nn.functional, xt, tt, reduction)
    lw.backward()
    lt.backward()
    assert lw.dtype == wb.float32
    np.testing.assert_allclose(lw.item(), lt.item(), rtol=2e-6)
    # sigmoid(x) - t cancels: a 1-ulp difference in sigmoid is an absolute one, relative to the largest gradient
    for gw, gt in ((xw.grad, xt.grad), (tw.grad, tt.grad)):
        np.testing.assert_allclose(gw.numpy(), gt.numpy(), rtol=1e-6, atol=1e-6 * float(gt.abs().max()))


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_regression_losses_gradcheck(name, reduction):
    rng = np.random.default_rng(1)
    x, t = (wb.tensor(rng.standard_normal(12) * 1.5, requires_grad=True) for _ in range(2))
    f = lambda a, b: CASES[name](wb.nn.functional, a, b, reduction)  # noqa: E731
    assert wb.autograd.gradcheck(f, (x, t))
    assert wb.autograd.gradgradcheck(f, (x, t))


@pytest.mark.parametrize("form", ["cross_entropy", "cross_entropy_smooth", "nll"])
def test_class_losses_match_pytorch(form):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((300, 257)).astype(np.float32) * 3
    t = rng.integers(0, 257, 300)
    t[::7] = -100
    calls = {"cross_entropy": lambda F, a, b: F.cross_entropy(a, b),
             "cross_entropy_smooth": lambda F, a, b: F.cross_entropy(a, b, label_smoothing=0.1),
             "nll": lambda F, a, b: F.nll_loss(F.log_softmax(a, 1), b)}
    xw, xt = wb.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    lw, lt = calls[form](wb.nn.functional, xw, wb.tensor(t)), calls[form](torch.nn.functional, xt, torch.tensor(t))
    lw.backward()
    lt.backward()
    np.testing.assert_allclose(lw.item(), lt.item(), rtol=2e-6)
    np.testing.assert_allclose(xw.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-8)
