"""Max pooling and convolution against PyTorch where the fast paths of ops/conv.py branch: ties (PyTorch's
first-maximum index), NaN windows (the last NaN), windows whose valid taps are all -inf next to padding,
short output rows (taps gathered into one block) and long ones (strided views), non-contiguous inputs."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import workbench as wb
import workbench.nn.functional as F

R = np.random.default_rng(0)


def _pool_both(x, nd, wx=None, **kw):
    fn = {1: "max_pool1d", 2: "max_pool2d", 3: "max_pool3d"}[nd]
    xt = torch.tensor(x, requires_grad=True)
    xw = wb.tensor(x, requires_grad=True) if wx is None else wx
    yt, it = getattr(TF, fn)(xt, return_indices=True, **kw)
    yw, iw = getattr(F, fn)(xw, return_indices=True, **kw)
    np.testing.assert_array_equal(yw.detach().numpy(), yt.detach().numpy())
    np.testing.assert_array_equal(iw.numpy(), it.numpy())
    g = R.standard_normal(tuple(yt.shape)).astype(x.dtype)
    yt.backward(torch.tensor(g))
    yw.backward(wb.tensor(g))
    leaf = xw if wx is None else wx
    # overlapping windows sum several gradients into one input: the order (and so the last bit) may differ
    np.testing.assert_allclose(leaf.grad.numpy(), xt.grad.numpy(), rtol=1e-6, atol=0)
    if wx is None:  # without return_indices (no int64 indices made): the same values and gradient
        xw2 = wb.tensor(x, requires_grad=True)
        yw2 = getattr(F, fn)(xw2, **kw)
        np.testing.assert_array_equal(yw2.detach().numpy(), yt.detach().numpy())
        yw2.backward(wb.tensor(g))
        np.testing.assert_allclose(xw2.grad.numpy(), xt.grad.numpy(), rtol=1e-6, atol=0)


def _ties(*shape, levels=3, dtype=np.float32):
    """Few distinct values (and ReLU's zeros), so windows often hold their maximum more than once."""
    return np.maximum(R.integers(-1, levels, shape), 0).astype(dtype)


CASES = [
    (2, (4, 3, 8, 8), {"kernel_size": 2}),  # the digits CNN's pool: non-overlapping, short rows
    (2, (2, 3, 7, 9), {"kernel_size": 2}),  # floor mode drops the last row and column
    (2, (2, 3, 8, 70), {"kernel_size": 2}),  # long output rows: taps as strided views
    (2, (2, 3, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    (2, (2, 3, 7, 70), {"kernel_size": 3, "stride": 2, "padding": 1}),
    (2, (2, 3, 7, 6), {"kernel_size": (2, 3), "stride": 1, "dilation": 2}),
    (2, (2, 3, 9, 8), {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2}),
    (1, (2, 3, 9), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    (1, (2, 3, 80), {"kernel_size": 2}),
    (3, (1, 2, 4, 5, 4), {"kernel_size": 2, "stride": (1, 2, 2)}),
]


@pytest.mark.parametrize("nd,shape,kw", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_matches_torch_with_ties(nd, shape, kw, dtype):
    _pool_both(_ties(*shape, dtype=dtype), nd, **kw)
    _pool_both(R.standard_normal(shape).astype(dtype), nd, **kw)


@pytest.mark.parametrize("nd,shape,kw", CASES)
def test_max_pool_nan_and_inf_windows_match_torch(nd, shape, kw):
    x = _ties(*shape, dtype=np.float64)
    flat = x.reshape(-1)
    flat[R.choice(flat.size, flat.size // 5, replace=False)] = np.nan
    flat[R.choice(flat.size, flat.size // 5, replace=False)] = -np.inf
    _pool_both(x, nd, **kw)


def test_max_pool_all_neg_inf_next_to_padding_picks_the_first_valid_tap():
    x = np.full((1, 2, 5, 6), -np.inf)
    x[0, 1, 2:, 3:] = 1.0
    _pool_both(x, 2, kernel_size=3, stride=2, padding=1)
    _pool_both(x, 2, kernel_size=3, stride=1, padding=1, dilation=2, ceil_mode=True)


def test_max_pool_non_contiguous_input():
    base = wb.tensor(_ties(4, 8, 3, 10), requires_grad=True)
    x = base.permute(0, 2, 1, 3)  # (4, 3, 8, 10), strided
    xt = torch.tensor(base.detach().numpy(), requires_grad=True)
    yw, iw = F.max_pool2d(x, 2, return_indices=True)
    yt, it = TF.max_pool2d(xt.permute(0, 2, 1, 3), 2, return_indices=True)
    np.testing.assert_array_equal(yw.detach().numpy(), yt.detach().numpy())
    np.testing.assert_array_equal(iw.numpy(), it.numpy())
    yw.sum().backward()
    yt.sum().backward()
    np.testing.assert_array_equal(base.grad.numpy(), xt.grad.numpy())


def test_max_pool_integer_input():
    x = R.integers(-5, 5, (2, 3, 6, 6))
    yw, iw = F.max_pool2d(wb.tensor(x), 2, return_indices=True)
    yt, it = TF.max_pool2d(torch.tensor(x).double(), 2, return_indices=True)
    np.testing.assert_array_equal(yw.numpy(), yt.numpy().astype(x.dtype))
    np.testing.assert_array_equal(iw.numpy(), it.numpy())


def test_max_pool_saves_the_winning_tap_not_int64_positions():
    # backward needs only which tap of its window won: one byte per output (a 2x2 pool of the digits CNN's
    # 64x32x8x8 keeps 32 KiB, not the 256 KiB of int64 input positions PyTorch saves)
    x = wb.tensor(R.standard_normal((4, 3, 8, 8)).astype(np.float32), requires_grad=True)
    y = F.max_pool2d(x, 2)
    (tid,) = y.grad_fn.saved_tensors
    assert tid.dtype == wb.uint8 and tuple(tid.shape) == tuple(y.shape)
    _, idx = F.max_pool2d(x, 2, return_indices=True)
    assert idx.dtype == wb.int64  # what the user asks for is still PyTorch's flat indices


def test_max_pool_second_derivative():
    x = wb.tensor(R.standard_normal((2, 3, 6, 6)), requires_grad=True)
    assert wb.autograd.gradgradcheck(lambda t: F.max_pool2d(t, 2), (x,))
    assert wb.autograd.gradgradcheck(lambda t: F.max_pool2d(t, 3, 2, 1), (x,))


def test_max_pool_fake_cuda(fake_cuda):
    x = _ties(2, 3, 8, 8)
    xw = wb.tensor(x, device="cuda", requires_grad=True)
    y, i = F.max_pool2d(xw, 2, return_indices=True)
    yt, it = TF.max_pool2d(torch.tensor(x), 2, return_indices=True)
    assert y.device.type == "cuda"
    np.testing.assert_array_equal(y.detach().cpu().numpy(), yt.numpy())
    np.testing.assert_array_equal(i.cpu().numpy(), it.numpy())


def _bias_size(fn, ws, kw):
    return ws[1] * kw.get("groups", 1) if "transpose" in fn else ws[0]


CONVS = [  # (conv, input shape, weight shape, kwargs): unit strides use the flat column layout
    ("conv2d", (3, 4, 8, 8), (6, 4, 3, 3), {"padding": 1}),  # the digits CNN's convolutions
    ("conv2d", (40, 16, 8, 8), (8, 16, 3, 3), {"padding": 1}),  # columns built in batch chunks
    ("conv2d", (2, 8, 32, 32), (4, 8, 3, 3), {"padding": 1}),  # images too big to chunk
    ("conv2d", (2, 3, 7, 5), (4, 3, 3, 3), {"padding": 4}),  # padding wider than the kernel reaches
    ("conv2d", (2, 3, 6, 7), (4, 3, 4, 2), {"padding": "same"}),  # asymmetric padding
    ("conv2d", (2, 3, 9, 8), (4, 3, 3, 2), {"padding": "same", "dilation": (2, 3)}),
    ("conv2d", (2, 4, 6, 6), (6, 2, 3, 3), {"padding": (0, 2), "groups": 2}),
    ("conv2d", (2, 3, 9, 8), (4, 3, 3, 3), {"padding": 1, "stride": 2}),  # strided: the general layout
    ("conv3d", (2, 2, 4, 5, 6), (3, 2, 3, 2, 3), {"padding": (1, 2, 1)}),
    ("conv_transpose2d", (2, 4, 5, 6), (4, 3, 3, 3), {"padding": 1}),
    ("conv_transpose2d", (2, 4, 5, 6), (4, 3, 3, 3), {"padding": 2, "dilation": 2}),
]
WINOGRAD = [  # 3x3, unit stride, >= 8 channels: Winograd's F(2x2, 3x3) (_backend/winograd.py)
    ("conv2d", (3, 8, 7, 5), (9, 8, 3, 3), {"padding": 1}),  # odd sizes: the last tiles half outside
    ("conv2d", (2, 8, 6, 9), (8, 8, 3, 3), {}),  # no padding
    ("conv2d", (2, 9, 5, 4), (8, 9, 3, 3), {"padding": 4}),  # the input gradient's padding is negative (a crop)
    ("conv2d", (2, 8, 5, 6), (8, 8, 3, 3), {"padding": (2, 0)}),
    ("conv2d", (70, 16, 8, 8), (32, 16, 3, 3), {"padding": 1}),  # several batch chunks
    ("conv_transpose2d", (2, 8, 5, 6), (8, 9, 3, 3), {"padding": 1}),  # the input gradient as an op
]
DEPTHWISE = [  # 2-D, one input channel per group: the stencil loops (_backend/depthwise.py)
    ("conv2d", (3, 4, 7, 6), (4, 1, 3, 3), {"padding": 1, "groups": 4}),  # MobileNet's, odd sizes
    ("conv2d", (2, 4, 9, 8), (4, 1, 3, 3), {"padding": 1, "stride": 2, "groups": 4}),  # its strided one
    ("conv2d", (2, 3, 7, 9), (6, 1, 3, 3), {"padding": (0, 2), "stride": (1, 2), "groups": 3}),  # multiplier 2
    ("conv2d", (2, 2, 11, 10), (2, 1, 5, 4), {"padding": (3, 1), "stride": 3, "dilation": (2, 3), "groups": 2}),
    ("conv2d", (1, 2, 4, 5), (2, 1, 2, 2), {"padding": 3, "dilation": 3, "groups": 2}),  # taps past the image
    ("conv2d", (2, 3, 6, 7), (3, 1, 4, 3), {"padding": "same", "groups": 3}),  # asymmetric padding
    ("conv_transpose2d", (2, 3, 5, 6), (3, 1, 3, 3), {"padding": 1, "stride": 2, "output_padding": 1,
                                                      "groups": 3}),  # the input gradient as an op
]
POINTWISE = [  # 1x1 kernels without padding: one matrix product per image
    ("conv2d", (3, 4, 5, 6), (6, 4, 1, 1), {}),
    ("conv2d", (2, 4, 7, 6), (6, 4, 1, 1), {"stride": 2}),  # the entries a strided kernel reads
    ("conv2d", (2, 6, 5, 5), (4, 3, 1, 1), {"stride": (1, 3), "groups": 2, "dilation": 2}),
    ("conv1d", (2, 5, 9), (3, 5, 1), {}),
    ("conv3d", (2, 3, 3, 4, 5), (2, 3, 1, 1, 1), {"stride": (2, 1, 2)}),
    ("conv_transpose2d", (2, 4, 3, 4), (4, 5, 1, 1), {"stride": 2, "output_padding": 1}),
]
CONVS += WINOGRAD + DEPTHWISE + POINTWISE


@pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")
@pytest.mark.parametrize("fn,xs,ws,kw", CONVS)
def test_conv_matches_torch(fn, xs, ws, kw):
    x, w, b = R.standard_normal(xs), R.standard_normal(ws), R.standard_normal(_bias_size(fn, ws, kw))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    wx, ww, wb_ = (wb.tensor(a, requires_grad=True) for a in (x, w, b))
    yt = getattr(TF, fn)(tx, tw, tb, **kw)
    yw = getattr(F, fn)(wx, ww, wb_, **kw)
    np.testing.assert_allclose(yw.detach().numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-10)
    g = R.standard_normal(tuple(yt.shape))
    yt.backward(torch.tensor(g))
    yw.backward(wb.tensor(g))
    for a, t in ((wx, tx), (ww, tw), (wb_, tb)):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")
@pytest.mark.parametrize("fn,xs,ws,kw", [c for c in CONVS if c[0] != "conv_transpose2d"])
def test_conv_weight_gradient_alone_matches_torch(fn, xs, ws, kw):
    """An input that needs no gradient (a first layer) takes the weight gradient from the image's columns."""
    x, w = R.standard_normal(xs), R.standard_normal(ws)
    tw, ww = torch.tensor(w, requires_grad=True), wb.tensor(w, requires_grad=True)
    yt, yw = getattr(TF, fn)(torch.tensor(x), tw, **kw), getattr(F, fn)(wb.tensor(x), ww, **kw)
    g = R.standard_normal(tuple(yt.shape))
    yt.backward(torch.tensor(g))
    yw.backward(wb.tensor(g))
    np.testing.assert_allclose(ww.grad.numpy(), tw.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_conv_float32_digits_shape_matches_torch():
    """The digits CNN's second convolution in float32: chunked columns, gathered input gradient."""
    x, w, b = (R.standard_normal(s).astype(np.float32) for s in ((64, 16, 8, 8), (32, 16, 3, 3), (32,)))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    wx, ww, wb_ = (wb.tensor(a, requires_grad=True) for a in (x, w, b))
    yt, yw = TF.conv2d(tx, tw, tb, padding=1), F.conv2d(wx, ww, wb_, padding=1)
    np.testing.assert_allclose(yw.detach().numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-4)
    g = R.standard_normal(tuple(yt.shape)).astype(np.float32)
    yt.backward(torch.tensor(g))
    yw.backward(wb.tensor(g))
    for a, t in ((wx, tx), (ww, tw), (wb_, tb)):
        assert a.grad.dtype == wb.float32
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=2e-3)


@pytest.mark.parametrize("fn,xs,ws,kw", [c for c in CONVS if c[0] == "conv2d" and np.prod(c[1]) < 1000][:4])
def test_conv_second_derivative(fn, xs, ws, kw):
    x = wb.tensor(R.standard_normal(xs), requires_grad=True)
    w = wb.tensor(R.standard_normal(ws), requires_grad=True)
    assert wb.autograd.gradgradcheck(lambda a, b: getattr(F, fn)(a, b, **kw), (x, w))


def test_conv_gradients_without_and_with_create_graph_agree():
    """First derivatives share the output gradient's columns and sum the bias from them; create_graph
    takes the general route. Both must give the same numbers."""
    x = wb.tensor(R.standard_normal((5, 3, 6, 7)), requires_grad=True)
    w = wb.tensor(R.standard_normal((4, 3, 3, 3)), requires_grad=True)
    b = wb.tensor(R.standard_normal(4), requires_grad=True)
    g = wb.tensor(R.standard_normal((5, 4, 6, 7)))
    plain = wb.autograd.grad(F.conv2d(x, w, b, padding=1), (x, w, b), g)
    graph = wb.autograd.grad(F.conv2d(x, w, b, padding=1), (x, w, b), g, create_graph=True)
    for a, c in zip(plain, graph):
        np.testing.assert_allclose(a.numpy(), c.detach().numpy(), rtol=1e-12, atol=1e-12)


def _winograd_calls(monkeypatch):
    from workbench._backend import winograd
    calls = []
    for name in ("conv", "input_grad", "weight_grad"):
        fn = getattr(winograd, name)
        monkeypatch.setattr(winograd, name, lambda *a, _fn=fn, _name=name: calls.append(_name) or _fn(*a))
    return calls


@pytest.mark.parametrize("fn,xs,ws,kw", WINOGRAD)
def test_winograd_takes_the_path_and_agrees_with_im2col(fn, xs, ws, kw, monkeypatch):
    """The Winograd path is taken where it applies, and with Numba switched off (im2col columns) the numbers
    agree to float64 rounding."""
    from workbench._backend import fused
    x, w, b = R.standard_normal(xs), R.standard_normal(ws), R.standard_normal(_bias_size(fn, ws, kw))
    g = None
    results = []
    calls = _winograd_calls(monkeypatch)
    monkeypatch.setattr(fused, "ENABLED", [True])
    for numba_on in (True, False):
        fused.ENABLED[0] = numba_on
        wx, ww, wb_ = (wb.tensor(a, requires_grad=True) for a in (x, w, b))
        y = getattr(F, fn)(wx, ww, wb_, **kw)
        g = R.standard_normal(tuple(y.shape)) if g is None else g
        y.backward(wb.tensor(g))
        results.append([y.detach().numpy(), wx.grad.numpy(), ww.grad.numpy(), wb_.grad.numpy()])
        if numba_on:
            assert set(calls) == {"conv", "input_grad", "weight_grad"}  # conv_transpose: dg is a Conv
            calls.clear()
    assert not calls
    for a, c in zip(*results):
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)


def test_winograd_float32_error_is_pytorchs_order():
    """F(2x2, 3x3) in float32 (the digits CNN's second convolution): the error against a float64 reference
    stays within twice PyTorch's own float32 error, for the output and all three gradients."""
    x, w, b = (R.standard_normal(s) for s in ((64, 16, 8, 8), (32, 16, 3, 3), (32,)))
    g = R.standard_normal((64, 32, 8, 8))
    out = {}
    for lib, dt in (("ref", torch.float64), ("torch", torch.float32), ("wb", np.float32)):
        if lib == "wb":
            ts = [wb.tensor(a.astype(dt), requires_grad=True) for a in (x, w, b)]
            y = F.conv2d(*ts, padding=1)
            y.backward(wb.tensor(g.astype(dt)))
            out[lib] = [y.detach().numpy()] + [t.grad.numpy() for t in ts]
        else:
            ts = [torch.tensor(a, dtype=dt, requires_grad=True) for a in (x, w, b)]
            y = TF.conv2d(*ts, padding=1)
            y.backward(torch.tensor(g, dtype=dt))
            out[lib] = [y.detach().numpy()] + [t.grad.numpy() for t in ts]
    for ref, t32, w32 in zip(out["ref"], out["torch"], out["wb"]):
        assert w32.dtype == np.float32
        torch_err = np.abs(t32 - ref).max()
        assert np.abs(w32 - ref).max() <= 2 * torch_err + 1e-6 * np.abs(ref).max()


def test_winograd_second_derivative():
    x = wb.tensor(R.standard_normal((1, 8, 3, 4)), requires_grad=True)
    w = wb.tensor(R.standard_normal((8, 8, 3, 3)), requires_grad=True)
    assert wb.autograd.gradgradcheck(lambda a, b: F.conv2d(a, b, padding=1), (x, w))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,kw,strided,taken", [
    ((1, 8, 5, 7), (8, 8, 3, 3), {"padding": 1}, False, True),  # batch 1, odd sizes
    ((2, 8, 6, 6), (9, 8, 3, 3), {"padding": 1}, True, True),  # non-contiguous input (a transposed view)
    ((2, 4, 6, 6), (8, 4, 3, 3), {"padding": 1}, False, False),  # fewer than 8 channels in: im2col
])
def test_winograd_against_torch(dtype, xs, ws, kw, strided, taken, monkeypatch):
    """Forward, input, weight and bias gradients against PyTorch in float32 and float64, on the Winograd path
    where it applies (and not where the channels are too few)."""
    calls = _winograd_calls(monkeypatch)
    x, w, b = (R.standard_normal(s).astype(dtype) for s in (xs, ws, ws[:1]))
    if strided:
        x = np.ascontiguousarray(x.swapaxes(2, 3)).swapaxes(2, 3)
        assert not x.flags.c_contiguous
    tol = 1e-4 if dtype == np.float32 else 1e-10
    ts = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    ty = TF.conv2d(*ts, **kw)
    g = R.standard_normal(tuple(ty.shape)).astype(dtype)
    ty.backward(torch.tensor(g))
    ws_ = [wb.tensor(a, requires_grad=True) for a in (x, w, b)]
    y = F.conv2d(*ws_, **kw)
    y.backward(wb.tensor(g))
    assert (set(calls) == {"conv", "input_grad", "weight_grad"}) == taken
    for a, t in zip([y.detach()] + [v.grad for v in ws_], [ty.detach()] + [v.grad for v in ts]):
        assert a.numpy().dtype == dtype
        np.testing.assert_allclose(a.numpy(), t.numpy(), rtol=tol, atol=tol)


def _direct_calls(monkeypatch):
    """Which direct path each convolution primitive took: patched _kind records its answers."""
    from workbench.ops import conv
    kinds = []
    kind = conv._kind
    monkeypatch.setattr(conv, "_kind", lambda *a: kinds.append(kind(*a)) or kinds[-1])
    return kinds


@pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")
@pytest.mark.parametrize("path,case", [("depthwise", c) for c in DEPTHWISE] + [("pointwise", c) for c in POINTWISE])
def test_direct_paths_are_taken_and_agree_with_im2col(path, case, monkeypatch):
    """Depthwise and 1x1 convolutions take their direct path in the forward and both gradients (float64:
    the numbers agree with im2col's to rounding), and with Numba off the depthwise one falls back to im2col."""
    from workbench._backend import fused
    fn, xs, ws, kw = case
    x, w, b = R.standard_normal(xs), R.standard_normal(ws), R.standard_normal(_bias_size(fn, ws, kw))
    kinds = _direct_calls(monkeypatch)
    monkeypatch.setattr(fused, "ENABLED", [True])
    results = []
    g = None
    for numba_on in (True, False):
        fused.ENABLED[0] = numba_on
        kinds.clear()
        ts = [wb.tensor(a, requires_grad=True) for a in (x, w, b)]
        y = getattr(F, fn)(*ts, **kw)
        g = R.standard_normal(tuple(y.shape)) if g is None else g
        y.backward(wb.tensor(g))
        results.append([y.detach().numpy()] + [t.grad.numpy() for t in ts])
        assert set(kinds) == ({path} if numba_on or path == "pointwise" else {None})
    for a, c in zip(*results):
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)


@pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")
@pytest.mark.parametrize("fn,xs,ws,kw", [c for c in DEPTHWISE + POINTWISE if np.prod(c[1]) < 400])
def test_direct_paths_gradcheck_and_second_derivative(fn, xs, ws, kw):
    x = wb.tensor(R.standard_normal(xs), requires_grad=True)
    w = wb.tensor(R.standard_normal(ws), requires_grad=True)
    f = lambda a, b: getattr(F, fn)(a, b, **kw)  # noqa: E731
    assert wb.autograd.gradcheck(f, (x, w))
    assert wb.autograd.gradgradcheck(f, (x, w))


@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("xs,ws,kw", [
    ((32, 32, 16, 16), (32, 1, 3, 3), {"padding": 1, "groups": 32}),  # MobileNet's depthwise layers
    ((8, 64, 16, 16), (64, 1, 3, 3), {"padding": 1, "stride": 2, "groups": 64}),
    ((8, 32, 16, 16), (64, 32, 1, 1), {}),  # and its pointwise ones
    ((8, 16, 32, 32), (32, 16, 1, 1), {"stride": 2}),  # a ResNet projection shortcut
])
def test_direct_paths_float32_against_torch(xs, ws, kw, strided):
    """Forward and all three gradients in float32 against PyTorch's, on contiguous and non-contiguous input."""
    x, w, b = (R.standard_normal(s).astype(np.float32) for s in (xs, ws, ws[:1]))
    if strided:
        x = np.ascontiguousarray(x.swapaxes(2, 3)).swapaxes(2, 3)
    ts = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    ty = TF.conv2d(*ts, **kw)
    g = R.standard_normal(tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.tensor(g))
    ws_ = [wb.tensor(a, requires_grad=True) for a in (x, w, b)]
    y = F.conv2d(*ws_, **kw)
    y.backward(wb.tensor(g))
    for a, t in zip([y.detach()] + [v.grad for v in ws_], [ty.detach()] + [v.grad for v in ts]):
        assert a.numpy().dtype == np.float32
        scale = max(1.0, np.abs(t.numpy()).max())
        np.testing.assert_allclose(a.numpy(), t.numpy(), rtol=1e-4, atol=1e-5 * scale)
