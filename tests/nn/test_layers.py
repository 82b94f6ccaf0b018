"""Each layer's forward and backward against PyTorch's, weights copied across via state_dict."""
import numpy as np
import pytest
import torch

import workbench as wb

from _nn_compare import compare, host, to_torch, to_wb


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


LAYERS = {
    "Linear": (lambda nn: nn.Linear(5, 3), [rnd(4, 5)]),
    "Linear-nobias-3d": (lambda nn: nn.Linear(5, 3, bias=False), [rnd(2, 4, 5)]),
    "Bilinear": (lambda nn: nn.Bilinear(3, 4, 2), [rnd(5, 3), rnd(5, 4, seed=1)]),
    "Conv1d": (lambda nn: nn.Conv1d(3, 4, 3, stride=2, padding=1), [rnd(2, 3, 9)]),
    "Conv1d-same-dil": (lambda nn: nn.Conv1d(4, 4, 3, padding="same", dilation=2, groups=2), [rnd(2, 4, 8)]),
    "Conv1d-circular": (lambda nn: nn.Conv1d(2, 3, 3, padding=1, padding_mode="circular"), [rnd(2, 2, 7)]),
    "Conv2d": (lambda nn: nn.Conv2d(3, 4, 3, padding=1), [rnd(2, 3, 6, 6)]),
    "Conv2d-strided-groups": (lambda nn: nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), groups=2),
                              [rnd(2, 4, 7, 5)]),
    "Conv2d-reflect-nobias": (lambda nn: nn.Conv2d(2, 3, 3, padding=2, padding_mode="reflect", bias=False),
                              [rnd(1, 2, 5, 5)]),
    "Conv2d-valid-dilated": (lambda nn: nn.Conv2d(2, 3, 3, padding="valid", dilation=2), [rnd(2, 2, 8, 8)]),
    "Conv3d": (lambda nn: nn.Conv3d(2, 3, 3, padding=1, stride=2), [rnd(1, 2, 5, 5, 5)]),
    "ConvTranspose1d": (lambda nn: nn.ConvTranspose1d(3, 2, 3, stride=2, padding=1, output_padding=1), [rnd(2, 3, 5)]),
    "ConvTranspose2d": (lambda nn: nn.ConvTranspose2d(4, 2, 3, stride=2, groups=2), [rnd(2, 4, 4, 4)]),
    "ConvTranspose2d-dil": (lambda nn: nn.ConvTranspose2d(2, 3, (2, 3), stride=(1, 2), padding=1, dilation=2),
                            [rnd(1, 2, 4, 5)]),
    "MaxPool1d": (lambda nn: nn.MaxPool1d(3, stride=2, padding=1), [rnd(2, 3, 9)]),
    "MaxPool2d": (lambda nn: nn.MaxPool2d(2), [rnd(2, 3, 6, 6)]),
    "MaxPool2d-ceil-dil": (lambda nn: nn.MaxPool2d(3, stride=2, padding=1, dilation=1, ceil_mode=True),
                           [rnd(1, 2, 7, 7)]),
    "AvgPool1d": (lambda nn: nn.AvgPool1d(3, stride=2, padding=1, count_include_pad=False), [rnd(2, 3, 9)]),
    "AvgPool2d": (lambda nn: nn.AvgPool2d(2), [rnd(2, 3, 6, 6)]),
    "AvgPool2d-ceil": (lambda nn: nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True), [rnd(1, 2, 7, 7)]),
    "AdaptiveAvgPool1d": (lambda nn: nn.AdaptiveAvgPool1d(4), [rnd(2, 3, 10)]),
    "AdaptiveAvgPool2d": (lambda nn: nn.AdaptiveAvgPool2d((3, 2)), [rnd(2, 3, 7, 5)]),
    "AdaptiveMaxPool2d": (lambda nn: nn.AdaptiveMaxPool2d(2), [rnd(2, 3, 7, 5)]),
    "Upsample-nearest": (lambda nn: nn.Upsample(scale_factor=2, mode="nearest"), [rnd(1, 2, 3, 3)]),
    "Upsample-bilinear": (lambda nn: nn.Upsample(size=(5, 7), mode="bilinear", align_corners=False),
                          [rnd(1, 2, 3, 4)]),
    "LayerNorm": (lambda nn: nn.LayerNorm(6), [rnd(3, 4, 6)]),
    "LayerNorm-2d-nobias": (lambda nn: nn.LayerNorm([4, 6], eps=1e-3, bias=False), [rnd(3, 4, 6)]),
    "GroupNorm": (lambda nn: nn.GroupNorm(2, 6), [rnd(3, 6, 4, 4)]),
    "InstanceNorm2d": (lambda nn: nn.InstanceNorm2d(3), [rnd(2, 3, 5, 5)]),
    "InstanceNorm2d-affine": (lambda nn: nn.InstanceNorm2d(3, affine=True), [rnd(2, 3, 5, 5)]),
    "RMSNorm": (lambda nn: nn.RMSNorm([3, 4], eps=1e-6), [rnd(2, 3, 4)]),
    "Embedding": (lambda nn: nn.Embedding(10, 4, padding_idx=2), [np.array([[1, 2, 3], [2, 9, 1]])]),
    "Flatten": (lambda nn: nn.Flatten(), [rnd(2, 3, 4)]),
    "Unflatten": (lambda nn: nn.Unflatten(1, (2, 6)), [rnd(2, 12)]),
    "ZeroPad2d": (lambda nn: nn.ZeroPad2d((1, 2, 0, 1)), [rnd(1, 2, 3, 3)]),
    "ReflectionPad1d": (lambda nn: nn.ReflectionPad1d(2), [rnd(1, 2, 5)]),
    "PReLU": (lambda nn: nn.PReLU(3, init=0.1), [rnd(2, 3, 4)]),
    "MaxPool3d": (lambda nn: nn.MaxPool3d(2), [rnd(1, 2, 4, 4, 4)]),
    "AvgPool3d": (lambda nn: nn.AvgPool3d(2, stride=1), [rnd(1, 2, 3, 4, 4)]),
    "AdaptiveAvgPool3d": (lambda nn: nn.AdaptiveAvgPool3d((2, 1, 3)), [rnd(1, 2, 4, 4, 5)]),
    "AdaptiveMaxPool3d": (lambda nn: nn.AdaptiveMaxPool3d(2), [rnd(1, 2, 4, 4, 5)]),
    "LPPool1d": (lambda nn: nn.LPPool1d(2, 3, stride=2), [rnd(2, 3, 9)]),
    "LPPool2d": (lambda nn: nn.LPPool2d(3, 2), [np.abs(rnd(2, 3, 6, 6)) + 0.1]),
    "PixelShuffle": (lambda nn: nn.PixelShuffle(2), [rnd(1, 8, 3, 3)]),
    "PixelUnshuffle": (lambda nn: nn.PixelUnshuffle(2), [rnd(1, 2, 4, 6)]),
    "ChannelShuffle": (lambda nn: nn.ChannelShuffle(2), [rnd(1, 4, 2, 2)]),
    "Fold": (lambda nn: nn.Fold((4, 5), (2, 2)), [rnd(1, 12, 12)]),
    "Unfold": (lambda nn: nn.Unfold((2, 3), padding=1, stride=2), [rnd(2, 3, 5, 5)]),
    "CosineSimilarity": (lambda nn: nn.CosineSimilarity(dim=-1), [rnd(3, 4), rnd(3, 4, seed=1)]),
    "PairwiseDistance": (lambda nn: nn.PairwiseDistance(p=3.0, keepdim=True), [rnd(3, 4), rnd(3, 4, seed=1)]),
    "LocalResponseNorm": (lambda nn: nn.LocalResponseNorm(3), [rnd(2, 5, 3, 3)]),
    "InstanceNorm1d-stats": (lambda nn: nn.InstanceNorm1d(3, affine=True, track_running_stats=True),
                             [rnd(2, 3, 6)]),
    "BatchNorm3d": (lambda nn: nn.BatchNorm3d(2), [rnd(3, 2, 2, 2, 2)]),
    "ConvTranspose3d": (lambda nn: nn.ConvTranspose3d(2, 2, 2, stride=2), [rnd(1, 2, 2, 2, 2)]),
    "GroupNorm-nobias": (lambda nn: nn.GroupNorm(3, 6, bias=False), [rnd(2, 6, 3)]),
    "UpsamplingBilinear2d": (lambda nn: nn.UpsamplingBilinear2d(scale_factor=2), [rnd(1, 2, 3, 3)]),
    "ConstantPad3d": (lambda nn: nn.ConstantPad3d(1, 2.5), [rnd(1, 1, 2, 2, 2)]),
    "ReplicationPad2d": (lambda nn: nn.ReplicationPad2d((1, 0, 2, 1)), [rnd(1, 2, 3, 3)]),
    "CircularPad1d": (lambda nn: nn.CircularPad1d(2), [rnd(1, 2, 5)]),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_matches_torch(name, device):
    make, inputs = LAYERS[name]
    compare(make, inputs, device=device)


ACTIVATIONS = ["ReLU", "ReLU6", "Sigmoid", "Tanh", "SiLU", "Mish", "Hardswish", "Hardsigmoid", "ELU", "CELU", "SELU",
               "GELU", "Hardshrink", "LeakyReLU", "LogSigmoid", "Softplus", "Softshrink", "Softsign", "Tanhshrink",
               "Hardtanh", "GLU"]
ACT_ARGS = {"Threshold": (0.1, 20.0), "Softmax": {"dim": 1}, "Softmin": {"dim": 1}, "LogSoftmax": {"dim": -1},
            "Softmax2d": {}, "ELU-alpha": ("ELU", {"alpha": 0.5}), "GELU-tanh": ("GELU", {"approximate": "tanh"}),
            "Softplus-beta": ("Softplus", {"beta": 2.0, "threshold": 1.0}),
            "LeakyReLU-0.2": ("LeakyReLU", {"negative_slope": 0.2}), "Hardtanh-2": ("Hardtanh", {"min_val": -2.0,
                                                                                              "max_val": 0.5})}


def _act_cases():
    for n in ACTIVATIONS:
        yield n, n, ()
    for key, a in ACT_ARGS.items():
        if isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], str):
            yield key, a[0], a[1]
        else:
            yield key, key, a


@pytest.mark.parametrize("key,cls,args", list(_act_cases()), ids=[c[0] for c in _act_cases()])
def test_activation_matches_torch(key, cls, args, device):
    def make(nn):
        if isinstance(args, dict):
            return getattr(nn, cls)(**args)
        return getattr(nn, cls)(*args)

    x = rnd(2, 4, 3, 2) * 3
    compare(make, [x], device=device)
    assert repr(make(wb.nn)) == repr(make(torch.nn))


def _loss_inputs():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5))
    y = rng.standard_normal((4, 5))
    cls = np.array([1, 0, 4, 2])
    prob = 1 / (1 + np.exp(-x))
    bin_t = (rng.random((4, 5)) > 0.5).astype(np.float64)
    sign = np.where(rng.random(4) > 0.5, 1.0, -1.0)
    ml_t = np.array([[3, 0, -1, 1, 2], [1, 2, -1, 0, 0], [0, -1, 0, 0, 0], [4, 3, 2, -1, 0]])
    return {
        "L1Loss": ({}, [x, y]), "MSELoss": ({"reduction": "sum"}, [x, y]),
        "CrossEntropyLoss": ({"label_smoothing": 0.1}, [x, cls]),
        "CrossEntropyLoss-weight": ({"weight": np.arange(1.0, 6.0), "ignore_index": 0}, [x, cls]),
        "NLLLoss": ({"reduction": "none"}, [x, cls]),
        "BCELoss": ({}, [prob, bin_t]), "BCEWithLogitsLoss": ({"pos_weight": np.arange(1.0, 6.0)}, [x, bin_t]),
        "KLDivLoss": ({"reduction": "batchmean"}, [np.log(prob), prob[::-1].copy()]),
        "HuberLoss": ({"delta": 0.5}, [x, y]), "SmoothL1Loss": ({"beta": 0.5}, [x, y]),
        "SoftMarginLoss": ({}, [x, np.sign(y)]), "PoissonNLLLoss": ({}, [x, np.abs(y)]),
        "GaussianNLLLoss": ({}, [x, y, np.abs(y) + 0.1]),
        "HingeEmbeddingLoss": ({"margin": 0.5}, [x, np.sign(y)]),
        "MultiLabelSoftMarginLoss": ({}, [x, bin_t]),
        "MultiLabelMarginLoss": ({}, [x, ml_t]),
        "MultiMarginLoss": ({"p": 2, "margin": 0.5}, [x, cls]),
        "CosineEmbeddingLoss": ({"margin": 0.2}, [x, y, sign]),
        "MarginRankingLoss": ({"margin": 0.1}, [x[:, 0].copy(), y[:, 0].copy(), sign]),
        "TripletMarginLoss": ({"margin": 0.5, "swap": True}, [x, y, y[::-1].copy()]),
        "TripletMarginWithDistanceLoss": ({}, [x, y, y[::-1].copy()]),
    }


LOSSES = _loss_inputs()


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_module_matches_torch(name, device):
    kwargs, inputs = LOSSES[name]
    cls = name.split("-")[0]

    def make(nn):
        conv = (lambda v: torch.from_numpy(v)) if nn is torch.nn else wb.tensor
        return getattr(nn, cls)(**{k: conv(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()})

    grad_on = {"CosineEmbeddingLoss": [0, 1], "MarginRankingLoss": [0, 1], "TripletMarginLoss": [0, 1, 2],
               "TripletMarginWithDistanceLoss": [0, 1, 2], "GaussianNLLLoss": [0, 2]}.get(cls, [0])
    compare(make, inputs, grad_inputs=grad_on, device=device)


def test_ctc_loss_module(device):
    rng = np.random.default_rng(0)
    logp = torch.from_numpy(rng.standard_normal((6, 2, 4))).log_softmax(-1).numpy()
    targets = np.array([[1, 2, 1], [3, 1, 0]])

    def make(nn):
        return nn.CTCLoss(blank=0)

    compare(make, [logp, targets, np.array([6, 5]), np.array([3, 2])], grad_inputs=[0], device=device)


@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("cls,shape", [("BatchNorm1d", (8, 3)), ("BatchNorm1d", (4, 3, 5)),
                                       ("BatchNorm2d", (4, 3, 2, 2))])
def test_batchnorm_running_stats_and_eval(cls, shape, momentum, device):
    def make(nn):
        return getattr(nn, cls)(3, momentum=momentum)

    tm, wm = compare(make, [rnd(*shape)], device=device)
    for seed in (1, 2):  # more steps: running stats and num_batches_tracked keep matching
        x = rnd(*shape, seed=seed)
        tm(to_torch(x, device))
        wm(to_wb(x, device))
    assert int(wm.num_batches_tracked) == int(tm.num_batches_tracked) == 3
    assert wm.running_mean.device.type == device and wm.num_batches_tracked.device.type == device
    np.testing.assert_allclose(host(wm.running_mean), host(tm.running_mean), rtol=1e-10)
    np.testing.assert_allclose(host(wm.running_var), host(tm.running_var), rtol=1e-10)
    tm.eval()
    wm.eval()
    x = rnd(*shape, seed=5)
    np.testing.assert_allclose(host(wm(to_wb(x, device))), host(tm(to_torch(x, device))), rtol=1e-10)
    assert int(wm.num_batches_tracked) == 3


def test_batchnorm_no_running_stats_and_input_check(device):
    compare(lambda nn: nn.BatchNorm2d(3, track_running_stats=False, affine=False), [rnd(4, 3, 2, 2)], device=device)
    with pytest.raises(ValueError, match="expected 4D input"):
        wb.nn.BatchNorm2d(3)(wb.randn(2, 3))


def test_dropout_train_and_eval(device):
    wb.manual_seed(0)
    d = wb.nn.Dropout(0.3)
    x = wb.ones(2000, device=device)
    y = d(x)
    assert y.device.type == device
    y = host(y)
    kept = (y != 0).mean()
    assert abs(kept - 0.7) < 0.05
    np.testing.assert_allclose(y[y != 0], 1 / 0.7, rtol=1e-6)
    d.eval()
    np.testing.assert_array_equal(host(d(x)), host(x))
    d2 = wb.nn.Dropout2d(0.5)
    z = host(d2(wb.ones(8, 16, 3, 3, device=device)))
    per_channel = z.reshape(8, 16, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel != 0).all(-1))
    with pytest.raises(ValueError, match="between 0 and 1"):
        wb.nn.Dropout(1.5)


def test_embedding_from_pretrained_and_padding_grad():
    w = wb.tensor(rnd(5, 3))
    e = wb.nn.Embedding.from_pretrained(w)
    assert not e.weight.requires_grad
    np.testing.assert_array_equal(e(wb.tensor([4])).numpy(), w.numpy()[[4]])
    e2 = wb.nn.Embedding(5, 3, padding_idx=-1)
    assert e2.padding_idx == 4 and float(e2.weight[4].abs().sum()) == 0
    e2(wb.tensor([4, 4, 1])).sum().backward()
    assert float(e2.weight.grad[4].abs().sum()) == 0 and float(e2.weight.grad[1].abs().sum()) > 0


def test_conv_transpose_output_size_and_errors():
    def make(nn):
        return nn.ConvTranspose2d(2, 2, 3, stride=2)

    tm, wm = compare(make, [rnd(1, 2, 4, 4)])
    x = wb.randn(1, 2, 4, 4, dtype=wb.float64)
    assert wm(x, output_size=[10, 10]).shape == tm(torch.randn(1, 2, 4, 4).double(), output_size=[10, 10]).shape
    with pytest.raises(ValueError):
        wm(x, output_size=[20, 20])
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        wb.nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="not supported for strided"):
        wb.nn.Conv2d(3, 4, 3, stride=2, padding="same")


def test_max_unpool_and_embedding_bag(device):
    x = rnd(1, 2, 4, 4)
    tp, wp = torch.nn.MaxPool2d(2, return_indices=True), wb.nn.MaxPool2d(2, return_indices=True)
    to, ti = tp(to_torch(x, device))
    wo, wi = wp(to_wb(x, device))
    assert wi.device.type == device
    np.testing.assert_array_equal(host(wi), host(ti))
    np.testing.assert_allclose(host(wb.nn.MaxUnpool2d(2)(wo, wi)), host(torch.nn.MaxUnpool2d(2)(to, ti)))
    idx, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 4])
    for mode in ("sum", "mean", "max"):
        compare(lambda nn: nn.EmbeddingBag(10, 3, mode=mode), [idx], kwargs={"offsets": offsets}, device=device)
    assert repr(wb.nn.EmbeddingBag(10, 3, padding_idx=1)) == repr(torch.nn.EmbeddingBag(10, 3, padding_idx=1))


def test_fractional_max_pool_and_linear_cross_entropy(device):
    x = rnd(1, 2, 9, 9)
    samples = np.random.default_rng(0).random((1, 2, 2))
    for kw in ({"output_size": 4}, {"output_ratio": 0.5}):
        compare(lambda nn: nn.FractionalMaxPool2d(3, _random_samples=(to_torch(samples, device) if nn is torch.nn
                                                                       else to_wb(samples, device)), **kw), [x],
                device=device)
    with pytest.raises(ValueError, match="either an output size"):
        wb.nn.FractionalMaxPool2d(2)
    compare(lambda nn: nn.LinearCrossEntropyLoss(6, 4, bias=True, label_smoothing=0.1), [rnd(5, 6),
                                                                                       np.array([0, 3, 1, 2, 3])],
            grad_inputs=[0], device=device)
    assert repr(wb.nn.LinearCrossEntropyLoss(6, 4)) == repr(torch.nn.LinearCrossEntropyLoss(6, 4))


def test_adaptive_log_softmax_matches_torch(device):
    target = np.array([1, 20, 70, 99, 5, 55])

    def make(nn):
        return nn.AdaptiveLogSoftmaxWithLoss(16, 100, cutoffs=[10, 50], div_value=2.0, head_bias=True)

    tm, wm = compare(make, [rnd(6, 16), target], grad_inputs=[0], device=device)
    x = rnd(6, 16, seed=2)
    np.testing.assert_allclose(host(wm.log_prob(to_wb(x, device))), host(tm.log_prob(to_torch(x, device))),
                               rtol=1e-7)
    np.testing.assert_array_equal(host(wm.predict(to_wb(x, device))), host(tm.predict(to_torch(x, device))))
    with pytest.raises(RuntimeError, match="Target values should be in"):
        wm(to_wb(x, device), wb.tensor([0, 1, 2, 3, 4, 100], device=device))
    with pytest.raises(ValueError, match="cutoffs"):
        wb.nn.AdaptiveLogSoftmaxWithLoss(16, 100, cutoffs=[50, 10])


LAZY = {
    "LazyLinear": (lambda nn: nn.LazyLinear(4), (3, 7)),
    "LazyConv1d": (lambda nn: nn.LazyConv1d(4, 3, padding=1), (2, 3, 6)),
    "LazyConv2d": (lambda nn: nn.LazyConv2d(4, 3, groups=1, stride=2), (2, 3, 6, 6)),
    "LazyConvTranspose2d": (lambda nn: nn.LazyConvTranspose2d(4, 3, stride=2), (2, 3, 4, 4)),
    "LazyBatchNorm1d": (lambda nn: nn.LazyBatchNorm1d(), (4, 5)),
    "LazyBatchNorm2d": (lambda nn: nn.LazyBatchNorm2d(momentum=None), (2, 3, 4, 4)),
    "LazyInstanceNorm2d": (lambda nn: nn.LazyInstanceNorm2d(), (2, 3, 4, 4)),
}


@pytest.mark.parametrize("name", sorted(LAZY))
def test_lazy_modules_match_torch(name, device):
    make, shape = LAZY[name]
    x = rnd(*shape).astype(np.float32)
    torch.manual_seed(0)
    tm = make(torch.nn)
    wm = make(wb.nn)
    assert repr(wm) == repr(tm)
    assert isinstance(wm, wb.nn.LazyModuleMixin) and wb.nn.parameter.is_lazy(dict(wm.named_parameters())
                                                                          .get("weight", wm.weight))
    tout = tm(torch.from_numpy(x))  # the first forward infers the shapes
    fresh = make(wb.nn).to(device)  # materialised where the module was moved
    fresh(to_wb(x, device))
    assert type(fresh).__name__ == type(tm).__name__ and repr(fresh) == repr(tm)
    assert [(n, tuple(p.shape), p.device.type) for n, p in fresh.named_parameters()] == \
        [(n, tuple(p.shape), device) for n, p in tm.named_parameters()]
    # loading a state dict materialises the lazy entries with the loaded shapes
    wm.to(device)
    wm.load_state_dict({k: wb.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    wm.train(tm.training)
    if hasattr(tm, "running_mean") and tm.running_mean is not None:  # undo the first batch's update
        wm.load_state_dict({k: wb.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
        tout = tm(torch.from_numpy(x))
    wout = wm(to_wb(x, device))
    assert type(wm).__name__ == type(tm).__name__ and wout.device.type == device
    np.testing.assert_allclose(host(wout), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
