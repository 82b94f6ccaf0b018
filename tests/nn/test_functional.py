"""workbench.nn.functional against torch.nn.functional: values and gradients in float64, the same calls on
the fake-cupy CUDA device, PyTorch's errors, stateful behaviour (running stats, dropout) and the namespace."""
import warnings

import numpy as np
import pytest

import workbench as wb
import workbench.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

_R = np.random.default_rng(0)


def r(*s):
    return _R.standard_normal(s)


def u(lo, hi, *s):
    return _R.uniform(lo, hi, s)


def ints(hi, *s):
    return _R.integers(0, hi, s)


W4 = np.abs(r(4)) + 0.1
T5 = ints(4, 5)
T5_IGN = T5.copy()
T5_IGN[1] = 2
SIGNS = np.sign(r(3)) + (np.sign(r(3)) == 0)

# (id, function name, positional args, kwargs, positions without gradient)
CASES = [
    ("relu", "relu", [r(3, 4)], {}, ()),
    ("relu6", "relu6", [u(-2, 8, 3, 4)], {}, ()),
    ("leaky_relu", "leaky_relu", [r(3, 4)], {"negative_slope": 0.2}, ()),
    ("elu", "elu", [r(3, 4)], {"alpha": 0.7}, ()),
    ("selu", "selu", [r(3, 4)], {}, ()),
    ("celu", "celu", [r(3, 4)], {"alpha": 0.7}, ()),
    ("gelu", "gelu", [r(3, 4)], {}, ()),
    ("gelu-tanh", "gelu", [r(3, 4)], {"approximate": "tanh"}, ()),
    ("silu", "silu", [r(3, 4)], {}, ()),
    ("mish", "mish", [r(3, 4)], {}, ()),
    ("softplus", "softplus", [r(3, 4) * 3], {"beta": 2.0, "threshold": 1.5}, ()),
    ("softsign", "softsign", [r(3, 4)], {}, ()),
    ("hardtanh", "hardtanh", [r(3, 4) * 2], {"min_val": -0.5, "max_val": 1.2}, ()),
    ("hardswish", "hardswish", [r(3, 4) * 3], {}, ()),
    ("hardsigmoid", "hardsigmoid", [r(3, 4) * 3], {}, ()),
    ("logsigmoid", "logsigmoid", [r(3, 4)], {}, ()),
    ("tanhshrink", "tanhshrink", [r(3, 4)], {}, ()),
    ("softshrink", "softshrink", [r(3, 4)], {"lambd": 0.3}, ()),
    ("hardshrink", "hardshrink", [r(3, 4)], {"lambd": 0.3}, ()),
    ("threshold", "threshold", [r(3, 4)], {"threshold": 0.1, "value": -2.0}, ()),
    ("glu", "glu", [r(4, 3)], {"dim": 0}, ()),
    ("prelu", "prelu", [r(3, 4, 2), r(4)], {}, ()),
    ("rrelu-eval", "rrelu", [r(3, 4)], {}, ()),
    ("sigmoid", "sigmoid", [r(3, 4)], {}, ()),
    ("tanh", "tanh", [r(3, 4)], {}, ()),
    ("softmax", "softmax", [r(3, 4, 5)], {"dim": 1}, ()),
    ("log_softmax", "log_softmax", [r(3, 4, 5)], {"dim": 0}, ()),
    ("softmin", "softmin", [r(3, 4)], {"dim": -1}, ()),
    ("normalize", "normalize", [r(3, 4)], {"p": 1.5, "dim": 0}, ()),
    ("linear", "linear", [r(2, 3, 4), r(5, 4), r(5)], {}, ()),
    ("bilinear", "bilinear", [r(3, 2), r(3, 4), r(5, 2, 4), r(5)], {}, ()),
    ("conv1d", "conv1d", [r(2, 4, 9), r(6, 2, 3), r(6)], {"stride": 2, "padding": 2, "dilation": 2, "groups": 2}, ()),
    ("conv1d-unbatched", "conv1d", [r(4, 9), r(6, 4, 3)], {"padding": "same"}, ()),
    ("conv2d", "conv2d", [r(2, 3, 7, 6), r(4, 3, 3, 2), r(4)], {"stride": (2, 1), "padding": 1, "dilation": (1, 2)}, ()),
    ("conv2d-same", "conv2d", [r(2, 4, 7, 6), r(6, 2, 3, 3), r(6)], {"groups": 2, "padding": "same"}, ()),
    ("conv3d", "conv3d", [r(2, 2, 5, 4, 4), r(3, 2, 2, 3, 2), r(3)], {"padding": (1, 0, 1)}, ()),
    ("conv_transpose1d", "conv_transpose1d", [r(2, 4, 5), r(4, 3, 3), r(3)],
     {"stride": 3, "padding": 1, "output_padding": 2}, ()),
    ("conv_transpose2d", "conv_transpose2d", [r(2, 4, 4, 3), r(4, 3, 3, 2), r(6)],
     {"stride": 2, "padding": (1, 0), "groups": 2, "dilation": 2}, ()),
    ("conv_transpose3d", "conv_transpose3d", [r(1, 2, 3, 2, 3), r(2, 2, 2, 2, 2)], {"stride": 2}, ()),
    ("conv_tbc", "conv_tbc", [r(5, 2, 3), r(3, 3, 4), r(4)], {"pad": 1}, ()),
    ("unfold", "unfold", [r(2, 3, 6, 5)], {"kernel_size": (2, 3), "padding": 1, "stride": (2, 1)}, ()),
    ("fold", "fold", [r(2, 12, 10)], {"output_size": (5, 6), "kernel_size": 2, "stride": (2, 1)}, ()),
    ("max_pool1d", "max_pool1d", [r(2, 3, 9)], {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}, ()),
    ("max_pool2d", "max_pool2d", [r(2, 3, 7, 6)], {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}, ()),
    ("max_pool2d-dil", "max_pool2d", [r(2, 3, 7, 6)], {"kernel_size": (2, 3), "stride": 1, "dilation": 2}, ()),
    ("max_pool3d", "max_pool3d", [r(1, 2, 4, 5, 4)], {"kernel_size": 2, "stride": (1, 2, 2)}, ()),
    ("avg_pool1d", "avg_pool1d", [r(2, 3, 9)],
     {"kernel_size": 4, "stride": 3, "padding": 2, "ceil_mode": True, "count_include_pad": False}, ()),
    ("avg_pool2d", "avg_pool2d", [r(2, 3, 7, 6)], {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}, ()),
    ("avg_pool2d-div", "avg_pool2d", [r(2, 3, 7, 6)], {"kernel_size": 2, "divisor_override": 3}, ()),
    ("avg_pool3d", "avg_pool3d", [r(1, 2, 4, 5, 4)], {"kernel_size": 2, "padding": 1}, ()),
    ("lp_pool2d", "lp_pool2d", [np.abs(r(2, 3, 6, 6)) + 0.1], {"norm_type": 2, "kernel_size": 2}, ()),
    ("adaptive_avg_pool1d", "adaptive_avg_pool1d", [r(2, 3, 7)], {"output_size": 3}, ()),
    ("adaptive_avg_pool2d", "adaptive_avg_pool2d", [r(2, 3, 7, 6)], {"output_size": (3, None)}, ()),
    ("adaptive_max_pool1d", "adaptive_max_pool1d", [r(2, 3, 7)], {"output_size": 3}, ()),
    ("adaptive_max_pool2d", "adaptive_max_pool2d", [r(2, 3, 7, 6)], {"output_size": (3, 4)}, ()),
    ("interp-nearest", "interpolate", [r(2, 3, 5, 4)], {"size": (7, 3)}, ()),
    ("interp-nearest-exact", "interpolate", [r(2, 3, 5, 4)], {"scale_factor": 1.7, "mode": "nearest-exact"}, ()),
    ("interp-linear", "interpolate", [r(2, 3, 5)], {"scale_factor": 2.5, "mode": "linear"}, ()),
    ("interp-bilinear", "interpolate", [r(2, 3, 5, 4)], {"size": (7, 3), "mode": "bilinear", "align_corners": True}, ()),
    ("interp-bilinear-sf", "interpolate", [r(2, 3, 5, 4)], {"scale_factor": 1.7, "mode": "bilinear"}, ()),
    ("interp-bicubic", "interpolate", [r(2, 3, 5, 4)], {"size": (8, 6), "mode": "bicubic"}, ()),
    ("interp-trilinear", "interpolate", [r(1, 2, 3, 4, 2)], {"scale_factor": 2, "mode": "trilinear"}, ()),
    ("interp-bilinear-aa", "interpolate", [r(2, 3, 13, 8)], {"size": (5, 9), "mode": "bilinear", "antialias": True}, ()),
    ("interp-bicubic-aa", "interpolate", [r(2, 3, 13, 8)],
     {"scale_factor": 0.4, "mode": "bicubic", "antialias": True, "align_corners": True}, ()),
    ("interp-area", "interpolate", [r(2, 3, 7, 6)], {"size": (3, 4), "mode": "area"}, ()),
    ("pixel_shuffle", "pixel_shuffle", [r(2, 8, 3, 2)], {"upscale_factor": 2}, ()),
    ("pixel_unshuffle", "pixel_unshuffle", [r(2, 2, 4, 6)], {"downscale_factor": 2}, ()),
    ("channel_shuffle", "channel_shuffle", [r(2, 6, 2)], {"groups": 3}, ()),
    ("grid_sample", "grid_sample", [r(2, 3, 4, 5), r(2, 3, 2, 2) * 0.8], {"align_corners": False}, ()),
    ("grid_sample-border", "grid_sample", [r(2, 3, 4, 5), r(2, 3, 2, 2) * 1.5],
     {"padding_mode": "border", "align_corners": True}, ()),
    ("grid_sample-3d", "grid_sample", [r(2, 3, 4, 5, 3), r(2, 3, 2, 2, 3) * 0.9],
     {"padding_mode": "reflection", "align_corners": True}, ()),
    ("grid_sample-bicubic", "grid_sample", [r(2, 3, 4, 5), r(2, 3, 2, 2) * 0.9],
     {"mode": "bicubic", "padding_mode": "reflection", "align_corners": False}, ()),
    ("affine_grid", "affine_grid", [r(2, 2, 3)], {"size": (2, 3, 4, 5), "align_corners": False}, ()),
    ("layer_norm", "layer_norm", [r(3, 4, 5), (4, 5), r(4, 5), r(4, 5)], {}, ()),
    ("group_norm", "group_norm", [r(2, 4, 3), 2, r(4), r(4)], {}, ()),
    ("instance_norm", "instance_norm", [r(2, 3, 4, 2)], {"weight": r(3), "bias": r(3)}, ()),
    ("batch_norm", "batch_norm", [r(4, 3, 2), None, None, r(3), r(3), True], {}, ()),
    ("batch_norm-eval", "batch_norm", [r(4, 3, 2), r(3), np.abs(r(3)) + 0.5, r(3), r(3), False], {}, (1, 2)),
    ("rms_norm", "rms_norm", [r(3, 4), (4,), r(4)], {"eps": 1e-3}, ()),
    ("local_response_norm", "local_response_norm", [r(2, 5, 3)], {"size": 3, "alpha": 0.3, "k": 2.0}, ()),
    ("embedding", "embedding", [ints(5, 2, 3), r(5, 3)], {"padding_idx": 2, "scale_grad_by_freq": True}, ()),
    ("embedding_bag", "embedding_bag", [np.array([1, 2, 4, 5, 2, 0, 1]), r(6, 3), np.array([0, 2, 2, 5])],
     {"mode": "max"}, ()),
    ("one_hot", "one_hot", [np.array([0, 2, 1])], {"num_classes": 4}, ()),
    ("pairwise_distance", "pairwise_distance", [r(3, 4), r(3, 4)], {"p": 1.5, "keepdim": True}, ()),
    ("cosine_similarity", "cosine_similarity", [r(3, 4), r(1, 4)], {"dim": -1}, ()),
    ("pdist", "pdist", [r(4, 3)], {}, ()),
    ("sdpa", "scaled_dot_product_attention", [r(2, 3, 4, 5), r(2, 3, 6, 5), r(2, 3, 6, 7)], {}, ()),
    ("sdpa-causal", "scaled_dot_product_attention", [r(2, 4, 5), r(2, 4, 5), r(2, 4, 3)], {"is_causal": True}, ()),
    ("sdpa-gqa", "scaled_dot_product_attention", [r(1, 4, 3, 5), r(1, 2, 3, 5), r(1, 2, 3, 5)],
     {"enable_gqa": True, "scale": 0.3}, ()),
    ("cross_entropy", "cross_entropy", [r(5, 4), T5], {"weight": W4, "label_smoothing": 0.2}, ()),
    ("cross_entropy-ignore", "cross_entropy", [r(5, 4), T5_IGN], {"ignore_index": 2, "reduction": "sum"}, ()),
    ("cross_entropy-nd", "cross_entropy", [r(2, 4, 3, 2), ints(4, 2, 3, 2)], {"reduction": "none"}, ()),
    ("cross_entropy-probs", "cross_entropy", [r(5, 4), np.abs(r(5, 4))], {"weight": W4, "label_smoothing": 0.1}, (1,)),
    ("nll_loss", "nll_loss", [r(5, 4), T5_IGN], {"weight": W4, "ignore_index": 2}, ()),
    ("binary_cross_entropy", "binary_cross_entropy", [u(0.05, 0.95, 3, 4), u(0, 1, 3, 4)], {"weight": W4}, ()),
    ("bce_with_logits", "binary_cross_entropy_with_logits", [r(3, 4), u(0, 1, 3, 4)],
     {"pos_weight": W4, "reduction": "sum"}, ()),
    ("mse_loss", "mse_loss", [r(3, 4), r(3, 4)], {"reduction": "none"}, ()),
    ("l1_loss", "l1_loss", [r(3, 4), r(3, 4)], {}, ()),
    ("smooth_l1_loss", "smooth_l1_loss", [r(3, 4), r(3, 4)], {"beta": 0.7}, ()),
    ("huber_loss", "huber_loss", [r(3, 4), r(3, 4)], {"delta": 0.7}, ()),
    ("kl_div", "kl_div", [r(3, 4), u(0, 1, 3, 4)], {"reduction": "batchmean"}, ()),
    ("kl_div-log", "kl_div", [r(3, 4), r(3, 4)], {"reduction": "sum", "log_target": True}, ()),
    ("poisson_nll_loss", "poisson_nll_loss", [r(3, 4), u(0, 3, 3, 4)], {"full": True}, ()),
    ("gaussian_nll_loss", "gaussian_nll_loss", [r(3, 4), r(3, 4), u(0.1, 2, 3, 4)], {"full": True}, ()),
    ("cosine_embedding_loss", "cosine_embedding_loss", [r(3, 4), r(3, 4), SIGNS], {"margin": 0.2}, (2,)),
    ("margin_ranking_loss", "margin_ranking_loss", [r(3), r(3), SIGNS], {"margin": 0.2}, (2,)),
    ("triplet_margin_loss", "triplet_margin_loss", [r(3, 4), r(3, 4), r(3, 4)], {"swap": True}, ()),
    ("hinge_embedding_loss", "hinge_embedding_loss", [r(3, 4), np.sign(r(3, 4))], {}, (1,)),
    ("soft_margin_loss", "soft_margin_loss", [r(3, 4), np.sign(r(3, 4))], {}, (1,)),
    ("multilabel_soft_margin_loss", "multilabel_soft_margin_loss", [r(3, 4), _R.integers(0, 2, (3, 4)) * 1.0],
     {"weight": W4}, (1,)),
    ("multilabel_margin_loss", "multilabel_margin_loss", [r(3, 4), np.array([[3, 0, -1, 1], [1, 2, 3, 0], [2, -1, 0, 0]])],
     {}, ()),
    ("multi_margin_loss", "multi_margin_loss", [r(3, 4), ints(4, 3)], {"p": 2, "margin": 0.7, "weight": W4}, ()),
]


def _convert(lib, a, grad):
    if isinstance(a, np.ndarray):
        t = wb.tensor(a) if lib is wb else torch.tensor(a)
        if grad and a.dtype.kind == "f":
            t.requires_grad_(True)
        return t
    return a


def _call(lib, name, args, kwargs, nograd, device="cpu"):
    ns = F if lib is wb else TF
    xs = [_convert(lib, a, i not in nograd) for i, a in enumerate(args)]
    if lib is wb and device != "cpu":
        xs = [x.detach().to(device).requires_grad_(x.requires_grad) if isinstance(x, wb.Tensor) else x for x in xs]
    kw = {k: _convert(lib, v, False) for k, v in kwargs.items()}
    if lib is wb and device != "cpu":
        kw = {k: v.to(device) if isinstance(v, wb.Tensor) else v for k, v in kw.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xs, getattr(ns, name)(*xs, **kw)


def _np(t):
    return t.detach().cpu().numpy() if isinstance(t, wb.Tensor) else t.detach().numpy()


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(case, device):
    _, name, args, kwargs, nograd = case
    xs, y = _call(wb, name, args, kwargs, nograd, device=device)
    ts, yt = _call(torch, name, args, kwargs, nograd)
    assert y.device.type == device
    np.testing.assert_allclose(_np(y), _np(yt), rtol=1e-10, atol=1e-12)
    if not yt.requires_grad:
        return
    seed = np.random.default_rng(1).standard_normal(tuple(yt.shape))
    y.backward(wb.tensor(seed, device=device))
    yt.backward(torch.tensor(seed))
    for x, t in zip(xs, ts):
        if isinstance(x, wb.Tensor) and x.requires_grad:
            assert x.grad.device.type == device
            np.testing.assert_allclose(_np(x.grad), _np(t.grad), rtol=1e-8, atol=1e-10)


def test_max_pool_indices_and_unpool():
    x = r(2, 3, 6, 6)
    y, i = F.max_pool2d(wb.tensor(x), 3, 2, 1, return_indices=True)
    yt, it = TF.max_pool2d(torch.tensor(x), 3, 2, 1, return_indices=True)
    np.testing.assert_array_equal(i.numpy(), it.numpy())
    np.testing.assert_allclose(F.max_unpool2d(y, i, 3, 2, 1, output_size=(6, 6)).numpy(),
                               TF.max_unpool2d(yt, it, 3, 2, 1, output_size=(6, 6)).numpy())
    y, i = F.adaptive_max_pool2d(wb.tensor(x), (4, 3), return_indices=True)
    np.testing.assert_array_equal(i.numpy(), TF.adaptive_max_pool2d(torch.tensor(x), (4, 3), True)[1].numpy())


def test_max_unpool_gradient_has_its_input_shape():
    # unpool's backward returned the gradient flat-shaped wrong (a bug the op-spec suite found, #13)
    x = r(2, 3, 6)
    y, i = F.max_pool1d(wb.tensor(x), 2, return_indices=True)
    y = y.detach().requires_grad_()
    yt = torch.tensor(y.detach().numpy(), requires_grad=True)
    seed = r(2, 3, 6)
    F.max_unpool1d(y, i, 2).backward(wb.tensor(seed))
    TF.max_unpool1d(yt, torch.tensor(i.numpy()), 2).backward(torch.tensor(seed))
    np.testing.assert_array_equal(y.grad.numpy(), yt.grad.numpy())


@pytest.mark.parametrize("nd,shape,kw", [(2, (2, 3, 9, 7), {"kernel_size": (2, 3), "output_size": (4, 3)}),
                                         (2, (3, 8, 8), {"kernel_size": 3, "output_ratio": (0.6, 0.6)}),
                                         (3, (1, 2, 7, 6, 9), {"kernel_size": 2, "output_size": (3, 4, 5)})])
def test_fractional_max_pool_matches_torch_for_the_same_samples(nd, shape, kw):
    x = r(*shape)
    samples = _R.random((shape[0] if len(shape) == nd + 2 else 1, shape[-nd - 1], nd))
    fn = "fractional_max_pool2d" if nd == 2 else "fractional_max_pool3d"
    xw, xt = wb.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, i = getattr(F, fn)(xw, return_indices=True, _random_samples=wb.tensor(samples), **kw)
    yt, it = getattr(TF, fn)(xt, return_indices=True, _random_samples=torch.tensor(samples), **kw)
    np.testing.assert_array_equal(i.numpy(), it.numpy())
    np.testing.assert_allclose(_np(y), _np(yt))
    y.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(_np(xw.grad), _np(xt.grad))


def test_ctc_loss():
    t_, n, c = 6, 3, 4
    lp = np.log(np.abs(r(t_, n, c)) + 0.1)
    lp -= np.log(np.exp(lp).sum(-1, keepdims=True))
    targets, il, tl = ints(3, n, 3) + 1, [6, 5, 4], [3, 2, 1]
    for reduction in ("mean", "none"):
        x, xt = wb.tensor(lp, requires_grad=True), torch.tensor(lp, requires_grad=True)
        y = F.ctc_loss(x, wb.tensor(targets), il, tl, reduction=reduction)
        yt = TF.ctc_loss(xt, torch.tensor(targets), il, tl, reduction=reduction)
        np.testing.assert_allclose(_np(y), _np(yt), rtol=1e-10)
        y.sum().backward()
        yt.sum().backward()
        np.testing.assert_allclose(_np(x.grad), _np(xt.grad), rtol=1e-8, atol=1e-10)


@pytest.mark.filterwarnings("ignore:Support for mismatched")  # PyTorch's, for a bool padding mask + float mask
def test_multi_head_attention_forward():
    e, h, length, s, n = 8, 2, 3, 4, 2
    a = [r(length, n, e), r(s, n, e), r(s, n, e), e, h, r(3 * e, e), r(3 * e), r(1, 1, e), r(1, 1, e), True, 0.0,
         r(e, e), r(e)]
    kpm = np.zeros((n, s), bool)
    kpm[0, 1] = True
    am = r(length, s)
    outs = []
    for lib, conv in ((F, wb.tensor), (TF, torch.tensor)):
        args = [conv(v) if isinstance(v, np.ndarray) else v for v in a]
        outs.append(lib.multi_head_attention_forward(*args, training=False, key_padding_mask=conv(kpm),
                                                     attn_mask=conv(am), average_attn_weights=False))
    for got, want in zip(*outs):
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-10, atol=1e-12)


def test_batch_norm_updates_running_stats_like_torch():
    x = r(6, 3, 4)
    rm, rv = wb.zeros(3, dtype=wb.float64), wb.ones(3, dtype=wb.float64)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    F.batch_norm(wb.tensor(x), rm, rv, training=True, momentum=0.3)
    TF.batch_norm(torch.tensor(x), trm, trv, training=True, momentum=0.3)
    np.testing.assert_allclose(rm.numpy(), trm.numpy())
    np.testing.assert_allclose(rv.numpy(), trv.numpy())
    F.instance_norm(wb.tensor(x), rm, rv, momentum=0.3)
    TF.instance_norm(torch.tensor(x), trm, trv, momentum=0.3)
    np.testing.assert_allclose(rm.numpy(), trm.numpy())
    np.testing.assert_allclose(rv.numpy(), trv.numpy())


def test_dropout_statistics_and_modes():
    wb.manual_seed(0)
    x = wb.ones(200, 100)
    y = F.dropout(x, 0.3)
    frac = (y == 0).to(wb.float32).mean().item()
    assert abs(frac - 0.3) < 0.02
    assert abs(y.sum().item() / x.numel() - 1.0) < 0.03
    assert F.dropout(x, 0.3, training=False) is x
    y2 = F.dropout2d(wb.ones(8, 50, 3, 3), 0.5)
    per_channel = y2.reshape(8, 50, 9)
    assert bool(((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all())
    z = F.alpha_dropout(wb.randn(400, 100), 0.2, training=True)
    assert abs(z.mean().item()) < 0.05 and abs(z.std().item() - 1) < 0.05
    with pytest.raises(ValueError):
        F.dropout(x, 1.5)
    a = wb.ones(5, requires_grad=True)
    F.dropout(a, 0.5).sum().backward()
    assert set(np.unique(a.grad.numpy())) <= {0.0, 2.0}


def test_inplace_activations():
    x = wb.tensor([-1.0, 2.0])
    assert F.relu(x, inplace=True) is x and x.tolist() == [0.0, 2.0]
    y = wb.tensor([-1.0, 2.0])
    F.leaky_relu_(y, 0.5)
    assert y.tolist() == [-0.5, 2.0]


@pytest.mark.parametrize("call,exc", [
    (lambda: F.conv2d(wb.ones(1, 3, 5, 5), wb.ones(2, 2, 3, 3)), RuntimeError),
    (lambda: F.conv2d(wb.ones(1, 1, 2, 2), wb.ones(1, 1, 3, 3)), RuntimeError),
    (lambda: F.conv2d(wb.ones(1, 1, 5, 5), wb.ones(1, 1, 3, 3), padding="full"), ValueError),
    (lambda: F.conv2d(wb.ones(1, 1, 5, 5), wb.ones(1, 1, 3, 3), stride=2, padding="same"), RuntimeError),
    (lambda: F.conv2d(wb.ones(1, 1, 5, 5), wb.ones(1, 1, 3, 3, dtype=wb.float64)), RuntimeError),
    (lambda: F.linear(wb.ones(2, 3), wb.ones(4, 5)), RuntimeError),
    (lambda: F.cross_entropy(wb.ones(2, 3), wb.tensor([0, 3])), IndexError),
    (lambda: F.cross_entropy(wb.ones(2, 3), wb.tensor([0, 1]), reduction="avg"), ValueError),
    (lambda: F.layer_norm(wb.ones(2, 3), (4,)), RuntimeError),
    (lambda: F.max_pool2d(wb.ones(1, 1, 4, 4), 2, padding=2), RuntimeError),
    (lambda: F.embedding(wb.tensor([5]), wb.ones(3, 2)), IndexError),
    (lambda: F.binary_cross_entropy(wb.tensor([1.5]), wb.tensor([1.0])), RuntimeError),
    (lambda: F.softmax(wb.ones(2, 3), dim=2), IndexError),
    (lambda: F.group_norm(wb.ones(2, 3, 4), 2), RuntimeError),
    (lambda: F.interpolate(wb.ones(1, 1, 4), scale_factor=2, mode="bilinear"), NotImplementedError),
    (lambda: F.scaled_dot_product_attention(wb.ones(2, 3), wb.ones(2, 4), wb.ones(2, 3)), RuntimeError),
])
def test_errors_have_pytorch_types(call, exc):
    with pytest.raises(exc):
        call()


def test_error_messages_name_op_and_shapes():
    with pytest.raises(RuntimeError, match=r"conv2d.*\[1, 3, 5, 5\].*1 channels, but got 3"):
        F.conv2d(wb.ones(1, 3, 5, 5), wb.ones(2, 1, 3, 3))
    with pytest.raises(RuntimeError, match=r"normalized_shape=\[4\].*\[2, 3\]"):
        F.layer_norm(wb.ones(2, 3), (4,))


def test_double_backward_through_conv_and_losses():
    x = wb.tensor(r(2, 2, 5, 5), requires_grad=True)
    w = wb.tensor(r(3, 2, 3, 3), requires_grad=True)
    t = wb.tensor(ints(3, 2))
    assert wb.autograd.gradgradcheck(lambda x, w: F.cross_entropy(F.conv2d(x, w, padding=1).mean((2, 3)), t),
                                     (x, w))
    assert wb.autograd.gradgradcheck(lambda x: F.max_pool2d(F.gelu(x), 2), (x,))


def test_composites_form_one_group_on_the_tape():
    x = wb.randn(3, 4, requires_grad=True)
    y = F.bilinear(x, x, wb.randn(2, 4, 4))
    assert y.grad_fn.group is not None and y.grad_fn.group.startswith("bilinear#")
    z = F.mse_loss(x, wb.zeros(3, 4))
    assert z.grad_fn.group.startswith("mse_loss#")
    assert z.grad_fn.group != F.mse_loss(x, wb.zeros(3, 4)).grad_fn.group


def test_namespace_covers_torch_functional():
    skip = {"grouped_mm", "scaled_grouped_mm", "scaled_mm"}  # low-precision GPU GEMMs, outside the scope
    names = [n for n in dir(TF) if not n.startswith("_") and callable(getattr(TF, n))
             and getattr(getattr(TF, n), "__module__", "") in ("torch.nn.functional", "torch._C._nn", None,
                                                              "torch", "torch.functional")]
    missing = [n for n in names if n not in skip and not hasattr(F, n) and n.islower()
               and n not in ("handle_torch_function", "has_torch_function", "has_torch_function_unary",
                             "has_torch_function_variadic", "boolean_dispatch", "assert_int_or_pair", "grad")]
    assert not missing, missing


def test_top_level_names_match_torch_signatures():
    x = wb.tensor(r(3, 4))
    np.testing.assert_allclose(wb.softmax(x, 0, wb.float64).numpy(), torch.softmax(torch.tensor(x.numpy()), 0).numpy())
    np.testing.assert_allclose(wb.conv1d(wb.ones(1, 1, 4), wb.ones(1, 1, 2)).numpy(), [[[2.0, 2.0, 2.0]]])
    assert wb.dropout(x, 0.5, False) is x


@pytest.mark.parametrize("p", [2.0, 3.0, 1.5, 0.5, 1.0, float("inf"), 0.0])
@pytest.mark.parametrize("last", [[0.0, -1.0, 2.5], [0.0, -1.0, 2.0]])
def test_pdist_gradient_at_zero_distance_is_pytorchs(p, last):
    # rows 0 and 1 coincide and rows 0 and 2 share a coordinate: |d|**p and the norm have infinite slopes
    # there, PyTorch's gradient is 0 (it was NaN; p=0 had no gradient at all). Found by the pdist op spec (#13).
    # With the last row [0, -1, 2], rows 0 and 3 differ by (1, 3, -3): for p=inf PyTorch's pdist gives each
    # tied coordinate the whole gradient
    x = np.array([[1.0, 2.0, -1.0], [1.0, 2.0, -1.0], [0.5, 2.0, 1.0], last])
    seed = np.arange(1.0, 7.0)
    w, t = wb.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yw, yt = F.pdist(w, p), TF.pdist(t, p)
    np.testing.assert_allclose(yw.detach().numpy(), yt.detach().numpy(), rtol=1e-12)
    yw.backward(wb.tensor(seed))
    yt.backward(torch.tensor(seed))
    np.testing.assert_allclose(w.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)



@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_nearest_gives_the_grid_a_zero_gradient_as_torch(padding_mode):
    """nearest sampling is piecewise constant in the grid: PyTorch's grid.grad is zeros (not None), and the
    input's gradient counts each sampled pixel once per hit (a bug the op-spec suite found, #13)."""
    rng = np.random.default_rng(3)
    x, g = rng.random((2, 3, 4, 5)), rng.random((2, 3, 3, 2)) * 2.4 - 1.2
    grads = []
    for lib in (wb, torch):
        xi, gi = lib.tensor(x, requires_grad=True), lib.tensor(g, requires_grad=True)
        out = lib.nn.functional.grid_sample(xi, gi, mode="nearest", padding_mode=padding_mode, align_corners=False)
        (out * lib.tensor(np.arange(out.numel()).reshape(out.shape) / 7.0)).sum().backward()
        grads.append((out.detach().numpy(), xi.grad.numpy(), gi.grad))
    (ow, xw, gw), (ot, xt, gt) = grads
    np.testing.assert_allclose(ow, ot, rtol=1e-12)
    np.testing.assert_allclose(xw, xt, rtol=1e-12)
    assert gw is not None and gw.shape == tuple(gt.shape)
    np.testing.assert_array_equal(gw.numpy(), gt.numpy())
