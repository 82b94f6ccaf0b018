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


HUBERS = {"huber": lambda F, x, t, r, k: F.huber_loss(x, t, reduction=r, delta=k),
          "smooth_l1": lambda F, x, t, r, k: F.smooth_l1_loss(x, t, reduction=r, beta=k)}


def _with_loops(on, fn):
    from workbench._backend import fused

    was = fused.ENABLED[0]
    fused.ENABLED[0] = on
    try:
        return fn()
    finally:
        fused.ENABLED[0] = was


@pytest.mark.parametrize("loops", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("k", [1e-3, 0.6, 1.0, 50.0])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name", sorted(HUBERS))
def test_huber_loop_and_numpy_form_match_pytorch(name, reduction, k, dtype, loops):
    """huber_loss / smooth_l1_loss above fused.MIN_SIZE, through the Numba loops (huber_sum, huber_grad) and
    with them switched off, forward and both gradients against PyTorch; deltas from all-outside to all-inside,
    differences exactly at +-delta, a NaN and an inf in the input."""
    rng = np.random.default_rng(3)
    x, t = (rng.standard_normal(40_000).astype(dtype) * 2 for _ in range(2))
    x[:4] = t[:4] + np.array([k, -k, 0.0, 2 * k], dtype)
    g = rng.standard_normal(x.shape).astype(dtype) if reduction == "none" else None

    def run(lib, x, t):
        xl, tl = lib.tensor(x, requires_grad=True), lib.tensor(t, requires_grad=True)
        y = HUBERS[name](lib.nn.functional, xl, tl, reduction, k)
        y.backward(None if g is None else lib.tensor(g))
        return y.detach().numpy(), xl.grad.numpy(), tl.grad.numpy()

    tol = dict(rtol=2e-6, atol=1e-7) if dtype == "float32" else dict(rtol=1e-12, atol=1e-15)
    for case in ("finite", "nan", "inf"):
        xc = x.copy()
        if case != "finite":
            xc[7] = np.nan if case == "nan" else np.inf
        got, want = _with_loops(loops, lambda: run(wb, xc, t)), run(torch, xc, t)
        assert got[0].dtype == want[0].dtype
        for a, e in zip(got, want):
            np.testing.assert_allclose(a, e, **tol)


@pytest.mark.parametrize("loops", [True, False])
@pytest.mark.parametrize("name", sorted(HUBERS))
def test_huber_non_contiguous_and_create_graph_match_pytorch(name, loops):
    """A transposed input and a strided target (not what the loops take: the NumPy form), and create_graph
    through the one-primitive loss at loop size: the gradient and its gradient against PyTorch."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((300, 200)) * 2
    t = rng.standard_normal((200, 600)) * 2

    def run(lib):
        xl, tl = lib.tensor(x, requires_grad=True), lib.tensor(t, requires_grad=True)
        y = HUBERS[name](lib.nn.functional, xl.T, tl[:, ::2], "mean", 0.8)
        gx, = lib.autograd.grad(y, xl, create_graph=True)
        (gx * gx).sum().backward()
        return y.detach().numpy(), gx.detach().numpy(), xl.grad.numpy(), tl.grad.numpy()

    for a, e in zip(_with_loops(loops, lambda: run(wb)), run(torch)):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-18)


@pytest.mark.parametrize("dtype,reduction", [("float16", "sum"), ("float16", "none"), ("bfloat16", "none")])
@pytest.mark.parametrize("name", sorted(HUBERS))
def test_huber_half_precision_matches_pytorch(name, dtype, reduction):
    """float16 / bfloat16 inputs (the composite path), the value and gradient in the input's dtype (summed,
    not averaged: a mean's gradient would be float16 denormals; bfloat16 unreduced only, as its sum is a
    reduction's question)."""
    rng = np.random.default_rng(5)
    x, t = (rng.standard_normal(4_000).astype(np.float32) for _ in range(2))
    g = rng.standard_normal(x.shape).astype(np.float32) if reduction == "none" else None

    def run(lib):
        xl = lib.tensor(x).to(getattr(lib, dtype)).requires_grad_()
        y = HUBERS[name](lib.nn.functional, xl, lib.tensor(t).to(getattr(lib, dtype)), reduction, 0.7)
        y.backward(None if g is None else lib.tensor(g).to(getattr(lib, dtype)))
        return y.detach(), xl.grad

    (yw, gw), (yt, gt) = run(wb), run(torch)
    assert str(yw.dtype)[-8:] == str(yt.dtype)[-8:] and str(gw.dtype)[-8:] == str(gt.dtype)[-8:]
    tol = 1e-2 if dtype == "bfloat16" else 2e-3
    for a, e in ((yw, yt), (gw, gt)):
        np.testing.assert_allclose(a.float().numpy(), e.float().numpy(), rtol=tol, atol=tol * float(e.float().abs().max()))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape,tshape", [((6, 5), (6,)), ((5,), ()), ((2, 5, 3), (2, 3))])
def test_nll_loss_is_one_node_as_pytorch(shape, tshape, reduction, weighted):
    """nll_loss is one primitive (PyTorch's NllLossBackward0 on (N, C) logits, for 'none' too); values, gradients (an ignored
    row included) and second derivatives as PyTorch's and finite differences."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape)
    c = shape[1] if len(shape) > 1 else shape[0]
    t = rng.integers(0, c, tshape)
    if t.ndim:
        t.flat[0] = -100
    w = rng.random(c) + 0.5 if weighted else None
    g = rng.standard_normal(tshape) if reduction == "none" else 1.0
    outs = []
    for lib in (wb, torch):
        xl = lib.tensor(x, requires_grad=True)
        loss = lib.nn.functional.nll_loss(xl, lib.tensor(t), None if w is None else lib.tensor(w), reduction=reduction)
        loss.backward(lib.tensor(g) if reduction == "none" else None)
        outs.append((loss.detach().numpy(), xl.grad.numpy(), type(loss.grad_fn).__name__))
    (lw, gw, nw), (lt, gt, nt) = outs
    np.testing.assert_allclose(lw, lt, rtol=1e-12)
    np.testing.assert_allclose(gw, gt, rtol=1e-12)
    if len(shape) == 2:  # (PyTorch's K-dim loss is NllLoss2DBackward0 under views; workbench's the rows' loss)
        assert nw == nt == "NllLossBackward0"
    f = lambda a: wb.nn.functional.nll_loss(a, wb.tensor(t), None if w is None else wb.tensor(w),  # noqa: E731
                                            reduction=reduction)
    assert wb.autograd.gradcheck(f, (wb.tensor(x, requires_grad=True),))
    assert wb.autograd.gradgradcheck(f, (wb.tensor(x, requires_grad=True),))


def test_nll_loss_every_target_ignored_and_out_of_range():
    """Every target ignored: nan, with gradients of 0 (not -0. or nan), as PyTorch; a class index out of range
    is an IndexError naming it."""
    grads = []
    for lib in (wb, torch):
        x = lib.tensor([[0.0, -1.0], [-2.0, float("-inf")]], requires_grad=True)
        loss = lib.nn.functional.nll_loss(x, lib.tensor([-100, -100]))
        loss.backward()
        assert np.isnan(loss.item())
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(np.signbit(grads[0]), np.signbit(grads[1]))
    np.testing.assert_array_equal(grads[0], grads[1])
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        wb.nn.functional.nll_loss(wb.zeros(2, 3), wb.tensor([0, 5]))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_gelu_of_16_bit_and_0d_inputs_as_pytorch(approximate, dtype):
    # 16-bit floats computed in float32 and rounded once (in float16 the tanh form's x**3 overflowed: a nan
    # slope at 1000); a 0-d input (which crashed the blocked float64 form)
    vals = [1.0, 1000.0, -3.0, 0.5, 40.0, -0.0]
    for shape in ((6,), ()):
        outs = []
        for lib in (wb, torch):
            x = lib.tensor(vals if shape else vals[0], dtype=getattr(lib, dtype), requires_grad=True)
            y = lib.nn.functional.gelu(x, approximate=approximate)
            y.sum().backward()
            outs.append((y.detach().numpy(), x.grad.numpy()))
        for a, b in zip(*outs):  # float16: the same bits; float64: within a few ulp (another erf and tanh)
            np.testing.assert_allclose(a, b, rtol=0 if dtype == "float16" else 1e-13, atol=0)
