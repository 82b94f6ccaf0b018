"""Every fused primitive against its composition from plain ops: values, gradients and second derivatives
agree, and the fused op passes gradcheck and gradgradcheck on its own."""
import math

import numpy as np
import pytest

import workbench as wb
import workbench.nn.functional as F

R = np.random.default_rng(0)


def _arr(*shape):
    return R.standard_normal(shape)


def _grads(fn, arrays, seed, vs):
    xs = [wb.tensor(a, requires_grad=True) for a in arrays]
    y = fn(*xs)
    g1 = wb.autograd.grad(y, xs, wb.tensor(seed), create_graph=True)
    total = sum((g * wb.tensor(v)).sum() for g, v in zip(g1, vs))
    g2 = wb.autograd.grad(total, xs, allow_unused=True) if total.requires_grad else [None] * len(xs)
    g2 = [np.zeros(a.shape) if g is None else g.numpy() for g, a in zip(g2, arrays)]
    return y.detach().numpy(), [g.detach().numpy() for g in g1], g2


def check(fused, composed, *arrays, tol=1e-10):
    shape = tuple(fused(*[wb.tensor(a) for a in arrays]).shape)
    seed = R.standard_normal(shape)
    vs = [R.standard_normal(a.shape) for a in arrays]
    yf, g1f, g2f = _grads(fused, arrays, seed, vs)
    yc, g1c, g2c = _grads(composed, arrays, seed, vs)
    np.testing.assert_allclose(yf, yc, rtol=tol, atol=tol)
    for a, b in zip(g1f, g1c):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-9)
    for a, b in zip(g2f, g2c):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-8)
    xs = tuple(wb.tensor(a, requires_grad=True) for a in arrays)
    assert wb.autograd.gradcheck(fused, xs)
    assert wb.autograd.gradgradcheck(fused, xs)


def _softmax(x, dim):
    e = x.exp()
    return e / e.sum(dim, keepdim=True)


def _log_softmax(x, dim):
    return x - x.exp().sum(dim, keepdim=True).log()


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax(dim):
    check(lambda x: F.softmax(x, dim), lambda x: _softmax(x, dim), _arr(3, 4, 2))


@pytest.mark.parametrize("dim", [0, -1])
def test_log_softmax(dim):
    check(lambda x: F.log_softmax(x, dim), lambda x: _log_softmax(x, dim), _arr(3, 4))


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy(smoothing, weighted):
    t = wb.tensor([0, 3, 1, 3, 2])
    w = wb.tensor(np.abs(_arr(4)) + 0.1) if weighted else None

    def composed(x):
        logp = _log_softmax(x, 1)
        ww = w if w is not None else wb.ones(4, dtype=wb.float64)
        nll = -(logp[wb.arange(5), t] * ww[t])
        smooth = -(logp * ww).sum(1)
        return ((1 - smoothing) * nll + smoothing / 4 * smooth).sum() / ww[t].sum()

    check(lambda x: F.cross_entropy(x, t, weight=w, label_smoothing=smoothing), composed, _arr(5, 4))


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_mse_loss(reduction):
    k = 1.0 / 15 if reduction == "mean" else 1.0
    check(lambda x, t: F.mse_loss(x, t, reduction=reduction), lambda x, t: ((x - t) ** 2).sum() * k,
          _arr(3, 5), _arr(3, 5))
    x = _arr(5000)  # longer than one of its 4096-long blocks
    assert wb.nn.functional.mse_loss(wb.tensor(x), wb.zeros(5000, dtype=wb.float64)).item() == pytest.approx(
        (x * x).mean(), rel=1e-14)


def test_mse_loss_float32_and_in_place_check():
    x = R.standard_normal((64, 300)).astype(np.float32)
    t = R.standard_normal((64, 300)).astype(np.float32)
    xw = wb.tensor(x, requires_grad=True)
    loss = F.mse_loss(xw, wb.tensor(t))
    assert loss.dtype == wb.float32 and loss.grad_fn.name() == "MseLossBackward0"
    np.testing.assert_allclose(loss.item(), ((x.astype(np.float64) - t) ** 2).mean(), rtol=2e-7)
    loss.backward()
    np.testing.assert_allclose(xw.grad.numpy(), 2 * (x - t) / x.size, rtol=1e-6)
    loss = F.mse_loss(xw, wb.tensor(t))
    with wb.no_grad():
        xw.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):  # as PyTorch, which saves both
        loss.backward()


def test_cross_entropy_ignore_index_and_nd():
    t = wb.tensor([[0, 2], [1, 2], [2, 0]])

    def composed(x):
        logp = _log_softmax(x, 1).permute(0, 2, 1).reshape(-1, 3)
        tf = t.reshape(-1)
        keep = (tf != 2).to(wb.float64)
        return -(logp[wb.arange(6), tf] * keep).sum() / keep.sum()

    check(lambda x: F.cross_entropy(x, t, ignore_index=2), composed, _arr(3, 3, 2))


def test_layer_norm():
    def composed(x, w, b):
        mu = x.mean(-1, keepdim=True)
        d = x - mu
        return d / ((d * d).mean(-1, keepdim=True) + 1e-5).sqrt() * w + b

    check(lambda x, w, b: F.layer_norm(x, (4,), w, b), composed, _arr(3, 4), _arr(4), _arr(4))


def test_layer_norm_two_dims_no_affine():
    def composed(x):
        mu = x.mean((1, 2), keepdim=True)
        d = x - mu
        return d / ((d * d).mean((1, 2), keepdim=True) + 1e-5).sqrt()

    check(lambda x: F.layer_norm(x, (2, 3)), composed, _arr(2, 2, 3))


def _conv_composed(x, w, b, stride, padding):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = F.pad(x, (padding, padding, padding, padding))
    oh = (h + 2 * padding - kh) // stride + 1
    ow = (wd + 2 * padding - kw) // stride + 1
    out = None
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
            term = patch.permute(0, 2, 3, 1) @ w[:, :, i, j].T
            out = term if out is None else out + term
    return out.permute(0, 3, 1, 2) + b.reshape(1, o, 1, 1)


@pytest.mark.parametrize("stride,padding", [(1, 1), (2, 0)])
def test_conv2d(stride, padding):
    check(lambda x, w, b: F.conv2d(x, w, b, stride=stride, padding=padding),
          lambda x, w, b: _conv_composed(x, w, b, stride, padding), _arr(2, 2, 5, 4), _arr(3, 2, 2, 3), _arr(3))


def test_conv_transpose2d_is_the_adjoint_of_conv2d():
    # <conv(x, w), y> == <x, conv_transpose(y, w)> for every x, y
    x, w, y = wb.tensor(_arr(2, 3, 6, 5)), wb.tensor(_arr(4, 3, 3, 2)), wb.tensor(_arr(2, 4, 3, 3))
    lhs = (F.conv2d(x, w, stride=2, padding=1) * y).sum()
    rhs = (x * F.conv_transpose2d(y, w, stride=2, padding=1, output_padding=1)).sum()
    assert abs(lhs.item() - rhs.item()) < 1e-9


def _dilate2(t):
    """Insert a zero between neighbouring pixels (stride 2)."""
    n, c, h, w = t.shape
    t = wb.stack([t, t * 0], dim=-1).reshape(n, c, h, 2 * w)[:, :, :, :2 * w - 1]
    return wb.stack([t, t * 0], dim=-2).reshape(n, c, 2 * h, 2 * w - 1)[:, :, :2 * h - 1]


def _conv_transpose_composed(y, w):
    # stride 2, padding 1, output_padding (1, 0): each kernel tap scatters a dilated, shifted copy
    n, _, h, wd = y.shape
    _, co, kh, kw = w.shape
    fh, fw = (h - 1) * 2 + kh + 1, (wd - 1) * 2 + kw
    out = None
    for i in range(kh):
        for j in range(kw):
            contrib = _dilate2((y.permute(0, 2, 3, 1) @ w[:, :, i, j]).permute(0, 3, 1, 2))
            term = F.pad(contrib, (j, fw - j - (2 * wd - 1), i, fh - i - (2 * h - 1)))
            out = term if out is None else out + term
    return out[:, :, 1:fh - 1, 1:fw - 1]


def test_conv_transpose2d():
    check(lambda y, w: F.conv_transpose2d(y, w, stride=2, padding=1, output_padding=(1, 0)),
          _conv_transpose_composed, _arr(1, 2, 2, 3), _arr(2, 1, 3, 2))


def test_gelu():
    check(F.gelu, lambda x: 0.5 * x * (1 + wb.erf(x / math.sqrt(2))), _arr(3, 4))


def test_gelu_tanh():
    c = math.sqrt(2 / math.pi)
    check(lambda x: F.gelu(x, approximate="tanh"), lambda x: 0.5 * x * (1 + (c * (x + 0.044715 * x ** 3)).tanh()),
          _arr(3, 4))


def _sdpa_composed(q, k, v, mask=None):
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s + mask
    return _softmax(s, -1) @ v


def test_attention():
    check(F.scaled_dot_product_attention, _sdpa_composed, _arr(2, 3, 4), _arr(2, 5, 4), _arr(2, 5, 3))


def test_attention_causal():
    mask = wb.tensor(np.where(np.tril(np.ones((4, 4), bool)), 0.0, -np.inf))
    check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
          lambda q, k, v: _sdpa_composed(q, k, v, mask), _arr(2, 4, 3), _arr(2, 4, 3), _arr(2, 4, 2))


def test_attention_float_mask_gets_a_gradient():
    check(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), _sdpa_composed,
          _arr(1, 3, 2), _arr(1, 4, 2), _arr(1, 4, 2), _arr(3, 4))


@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_layer_norm_numba_loop_and_numpy_form_match_pytorch(affine):
    """layer_norm's one-pass Numba loops (``_backend/fused.py``, where numba is installed) and its NumPy form
    both match PyTorch, forward and backward, with tiny and denormal values in a row."""
    torch = pytest.importorskip("torch")
    from workbench._backend import fused

    rng = np.random.default_rng(5)
    x = (rng.standard_normal((40, 1024)) * 3 + 1).astype(np.float32)
    x[0, :5] = [1e-40, -1e-45, 0.0, 1.2e-38, 3e4]
    g = rng.standard_normal(x.shape).astype(np.float32)
    w, b = rng.standard_normal(1024).astype(np.float32), rng.standard_normal(1024).astype(np.float32)

    def run(lib):
        xt, wt, bt = (lib.tensor(a, requires_grad=True) for a in (x, w, b))
        args = {"both": (wt, bt), "weight": (wt, None), "none": (None, None)}[affine]
        y = lib.nn.functional.layer_norm(xt, (1024,), *args)
        y.backward(lib.tensor(g))
        return [y.detach().numpy(), xt.grad.numpy()] + [t.grad.numpy() for t in args if t is not None]

    expected, was = run(torch), fused.ENABLED[0]
    try:
        for on in (True, False):
            fused.ENABLED[0] = on
            for a, e in zip(run(wb), expected):
                np.testing.assert_allclose(a, e, rtol=1e-5, atol=2e-5)
    finally:
        fused.ENABLED[0] = was


@pytest.mark.parametrize("op", ["group_norm", "instance_norm"])
def test_row_normalize_numba_loop_and_numpy_form_match_pytorch(op):
    """group_norm and instance_norm on inputs above fused.MIN_SIZE (the rows' Numba loop where numba is
    installed) and on the NumPy form, forward and backward, against PyTorch."""
    torch = pytest.importorskip("torch")
    from workbench._backend import fused

    x = (np.random.default_rng(6).standard_normal((8, 16, 32, 32)) * 3 + 1).astype(np.float32)
    x[0, 0, 0, :4] = [1e-40, -1e-45, 0.0, 1.2e-38]
    g = np.random.default_rng(7).standard_normal(x.shape).astype(np.float32)
    f = (lambda M, t: M.group_norm(t, 4)) if op == "group_norm" else (lambda M, t: M.instance_norm(t))

    def run(lib):
        t = lib.tensor(x, requires_grad=True)
        y = f(lib.nn.functional, t)
        y.backward(lib.tensor(g))
        return y.detach().numpy(), t.grad.numpy()

    expected, was = run(torch), fused.ENABLED[0]
    try:
        for on in (True, False):
            fused.ENABLED[0] = on
            for a, e in zip(run(wb), expected):
                np.testing.assert_allclose(a, e, rtol=1e-5, atol=2e-5)
        # float64: the loops (float64 sums) and the NumPy form agree to rounding
        x, g = x.astype(np.float64), g.astype(np.float64)
        on_off = []
        for on in (True, False):
            fused.ENABLED[0] = on
            on_off.append(run(wb))
        for a, e in zip(*on_off):
            np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12)
    finally:
        fused.ENABLED[0] = was


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_default_form_equals_the_general_primitive(dtype):
    # F.cross_entropy(x, t) takes a two-tensor primitive (_CrossEntropyMean); its bits, gradients, second
    # derivatives and errors are the general CrossEntropy's
    from workbench.ops.loss import CrossEntropy
    rng = np.random.default_rng(0)
    xa = (rng.standard_normal((6, 5)) * 3).astype(dtype)
    for targets in ([0, 4, 1, -100, 2, 3], [-100] * 6):
        t = wb.tensor(targets)
        x1, x2 = wb.tensor(xa, requires_grad=True), wb.tensor(xa, requires_grad=True)
        l1 = F.cross_entropy(x1 * 1, t)
        l2 = CrossEntropy.apply(x2 * 1, t, None, -100, 0.0, "mean")
        assert l1.grad_fn.name() == l2.grad_fn.name() == "CrossEntropyBackward0"
        assert l1.detach().numpy().tobytes() == l2.detach().numpy().tobytes()
        g1, = wb.autograd.grad(l1, x1, create_graph=True)
        g2, = wb.autograd.grad(l2, x2, create_graph=True)
        assert g1.detach().numpy().tobytes() == g2.detach().numpy().tobytes()
        if targets[0] != -100:
            h1, = wb.autograd.grad((g1 * g1).sum(), x1)
            h2, = wb.autograd.grad((g2 * g2).sum(), x2)
            assert h1.detach().numpy().tobytes() == h2.detach().numpy().tobytes()
        else:
            assert np.isnan(l1.item())
    with pytest.raises(IndexError, match="Target 5 is out of bounds for 5 classes"):
        F.cross_entropy(wb.tensor(xa), wb.tensor([0, 5, 1, 1, 1, 1]))
    assert wb.autograd.gradcheck(lambda x: F.cross_entropy(x, wb.tensor([0, 4, 1, -100, 2, 3])),
                                 (wb.tensor(xa.astype(np.float64), requires_grad=True),))
