"""Specs of the neural-network functions (workbench.nn.functional), named ``F.<op>``.

NumPy references are written out for the hot ops (every fused primitive, convolution, pooling and
the common activations and losses); the others are checked against PyTorch (``torch_op``) and by
gradcheck/gradgradcheck only.
"""
import math

import numpy as np

import workbench as wb
import workbench.nn.functional as F
from workbench.testing.op_specs import Sample, arr, rng, spec

_erf = np.vectorize(math.erf, otypes=[float])


def _t():
    import torch.nn.functional as TF

    return TF


def _torch(name):
    return lambda *a, **k: getattr(_t(), name)(*a, **k)


def by_torch(name, op, samples, **kw):
    """The spec of an op whose reference is PyTorch alone (no NumPy one written out)."""
    return spec(name, op, None, samples, no_ref="PyTorch is the reference (torch_op: float64 values and gradients)",
                **kw)


# --- NumPy references -------------------------------------------------------------------------------
def np_softmax(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def np_log_softmax(x, dim):
    m = x.max(axis=dim, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=dim, keepdims=True))


def np_gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2))).astype(x.dtype)


def np_layer_norm(x, shape, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    return y * (w if w is not None else 1) + (b if b is not None else 0)


def np_batch_norm_train(x, w, b, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w.reshape(shape) + b.reshape(shape)


def np_group_norm(x, groups, w, b, eps=1e-5):
    n, c = x.shape[:2]
    xg = x.reshape(n, groups, -1)
    mu = xg.mean(-1, keepdims=True)
    var = ((xg - mu) ** 2).mean(-1, keepdims=True)
    y = ((xg - mu) / np.sqrt(var + eps)).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return y * w.reshape(shape) + b.reshape(shape)


def np_conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    s, p, d = (stride,) * 2 if isinstance(stride, int) else stride, (padding,) * 2 if isinstance(padding, int) \
        else padding, (dilation,) * 2 if isinstance(dilation, int) else dilation
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    n, c, h, wd = xp.shape
    o, cg, kh, kw = w.shape
    oh = (h - d[0] * (kh - 1) - 1) // s[0] + 1
    ow = (wd - d[1] * (kw - 1) - 1) // s[1] + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow), dtype=np.result_type(x, w))
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * d[0]:i * d[0] + s[0] * (oh - 1) + 1:s[0], j * d[1]:j * d[1] + s[1] * (ow - 1) + 1:s[1]]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def np_conv1d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    return np_conv2d(x[:, :, None], w[:, :, None], b, (1, stride), (0, padding), (1, dilation), groups)[:, :, 0]


def np_conv_transpose2d(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    n, ci, h, wd = x.shape
    _, og, kh, kw = w.shape
    s, p, op, d = stride, padding, output_padding, dilation
    oh = (h - 1) * s - 2 * p + d * (kh - 1) + op + 1
    ow = (wd - 1) * s - 2 * p + d * (kw - 1) + op + 1
    full = np.zeros((n, og * groups, oh + 2 * p + s, ow + 2 * p + s), dtype=np.result_type(x, w))
    cg = ci // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                contrib = np.einsum("nchw,co->nohw", x[:, g * cg:(g + 1) * cg], w[g * cg:(g + 1) * cg, :, i, j])
                full[:, g * og:(g + 1) * og, i * d:i * d + s * (h - 1) + 1:s, j * d:j * d + s * (wd - 1) + 1:s] += contrib
    out = full[:, :, p:p + oh, p:p + ow]
    return out + b.reshape(1, -1, 1, 1) if b is not None else out


def np_max_pool2d(x, kernel_size, stride=None, padding=0):
    k, s, p = kernel_size, stride or kernel_size, padding
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=-np.inf)
    oh = (xp.shape[2] - k) // s + 1
    ow = (xp.shape[3] - k) // s + 1
    out = np.full(x.shape[:2] + (oh, ow), -np.inf)
    for i in range(k):
        for j in range(k):
            out = np.maximum(out, xp[:, :, i:i + s * (oh - 1) + 1:s, j:j + s * (ow - 1) + 1:s])
    return out


def np_avg_pool2d(x, kernel_size, stride=None, padding=0):
    k, s, p = kernel_size, stride or kernel_size, padding
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    oh = (xp.shape[2] - k) // s + 1
    ow = (xp.shape[3] - k) // s + 1
    out = np.zeros(x.shape[:2] + (oh, ow))
    for i in range(k):
        for j in range(k):
            out += xp[:, :, i:i + s * (oh - 1) + 1:s, j:j + s * (ow - 1) + 1:s]
    return out / (k * k)


def np_cross_entropy(x, t, weight=None, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    logp = np_log_softmax(x, 1)
    n, c = x.shape
    w = weight if weight is not None else np.ones(c)
    valid = t != ignore_index
    ts = np.where(valid, t, 0)
    nll = -logp[np.arange(n), ts] * w[ts] * valid
    smooth = -(logp * w).sum(1) * valid
    loss = (1 - label_smoothing) * nll + label_smoothing / c * smooth
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / (w[ts] * valid).sum()


def np_sdpa(q, k, v, attn_mask=None, is_causal=False, scale=None):
    sc = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * sc
    if is_causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if attn_mask is not None:
        s = np.where(attn_mask, s, -np.inf) if attn_mask.dtype == bool else s + attn_mask
    return np_softmax(s, -1) @ v


def np_softplus(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


# --- specs ------------------------------------------------------------------------------------------
X = [Sample([arr(3, 5)]), Sample([arr(2, 3, 4, seed=1)])]

spec("F.softmax", lambda x, **k: F.softmax(x, **k), np_softmax,
     [Sample([arr(3, 5)], {"dim": 1}), Sample([arr(2, 3, 4, seed=1)], {"dim": 0}), Sample([arr(4)], {"dim": -1})],
     torch_op=_torch("softmax"))
spec("F.log_softmax", lambda x, **k: F.log_softmax(x, **k), np_log_softmax,
     [Sample([arr(3, 5)], {"dim": 1}), Sample([arr(2, 3, 4, seed=1)], {"dim": 1})], torch_op=_torch("log_softmax"))
spec("F.softmin", lambda x, **k: F.softmin(x, **k), lambda x, dim: np_softmax(-x, dim),
     [Sample([arr(3, 5)], {"dim": 0})], torch_op=_torch("softmin"))
spec("F.gelu", lambda x, **k: F.gelu(x, **k), np_gelu,
     [Sample([arr(3, 5, low=-4, high=4)]), Sample([arr(2, 3, 4, seed=1)], {"approximate": "tanh"})],
     torch_op=_torch("gelu"))
spec("F.relu", F.relu, lambda x: np.maximum(x, 0), X, torch_op=_torch("relu"))
spec("F.relu6", F.relu6, lambda x: np.clip(x, 0, 6), [Sample([arr(3, 5, low=-3, high=8)])], torch_op=_torch("relu6"))
spec("F.leaky_relu", lambda x, **k: F.leaky_relu(x, **k), lambda x, negative_slope=0.01: np.where(x > 0, x, x * negative_slope),
     [Sample([arr(3, 5)]), Sample([arr(3, 5)], {"negative_slope": 0.2})], torch_op=_torch("leaky_relu"))
spec("F.elu", lambda x, **k: F.elu(x, **k), lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(x)),
     [Sample([arr(3, 5)], {"alpha": 0.7})], torch_op=_torch("elu"))
spec("F.selu", F.selu, lambda x: 1.0507009873554804934193349852946 * np.where(x > 0, x, 1.6732632423543772848170429916717 * np.expm1(x)),
     X[:1], torch_op=_torch("selu"))
spec("F.celu", lambda x, **k: F.celu(x, **k), lambda x, alpha=1.0: np.maximum(x, 0) + np.minimum(0, alpha * np.expm1(x / alpha)),
     [Sample([arr(3, 5)], {"alpha": 1.5})], torch_op=_torch("celu"))
spec("F.silu", F.silu, lambda x: x * np_sigmoid(x), X, torch_op=_torch("silu"))
spec("F.mish", F.mish, lambda x: x * np.tanh(np_softplus(x)), X[:1], torch_op=_torch("mish"))
spec("F.softplus", lambda x, **k: F.softplus(x, **k), np_softplus,
     [Sample([arr(3, 5)]), Sample([arr(3, 5, low=-4, high=4)], {"beta": 2.0, "threshold": 3.0})],
     torch_op=_torch("softplus"))
spec("F.softsign", F.softsign, lambda x: x / (1 + np.abs(x)), X[:1], torch_op=_torch("softsign"))
spec("F.hardtanh", lambda x, **k: F.hardtanh(x, **k), lambda x, min_val=-1.0, max_val=1.0: np.clip(x, min_val, max_val),
     [Sample([arr(3, 5, low=-3, high=3)], {"min_val": -0.5, "max_val": 1.5})], torch_op=_torch("hardtanh"))
spec("F.hardswish", F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6, [Sample([arr(3, 5, low=-5, high=5)])],
     torch_op=_torch("hardswish"))
spec("F.hardsigmoid", F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6, [Sample([arr(3, 5, low=-5, high=5)])],
     torch_op=_torch("hardsigmoid"))
spec("F.logsigmoid", F.logsigmoid, lambda x: np.log(np_sigmoid(x)), X[:1], torch_op=_torch("logsigmoid"))
spec("F.tanhshrink", F.tanhshrink, lambda x: x - np.tanh(x), X[:1], torch_op=_torch("tanhshrink"))
spec("F.softshrink", lambda x, **k: F.softshrink(x, **k),
     lambda x, lambd=0.5: np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, 0)),
     [Sample([arr(3, 5)], {"lambd": 0.7})], torch_op=_torch("softshrink"))
spec("F.hardshrink", lambda x, **k: F.hardshrink(x, **k), lambda x, lambd=0.5: np.where(np.abs(x) > lambd, x, 0),
     [Sample([arr(3, 5)])], torch_op=_torch("hardshrink"))
spec("F.threshold", lambda x, **k: F.threshold(x, **k),
     lambda x, threshold, value: np.where(x > threshold, x, value),
     [Sample([arr(3, 5)], {"threshold": 0.3, "value": -1.0})], torch_op=_torch("threshold"))
spec("F.glu", lambda x, **k: F.glu(x, **k),
     lambda x, dim=-1: np.split(x, 2, axis=dim)[0] * np_sigmoid(np.split(x, 2, axis=dim)[1]),
     [Sample([arr(3, 4)]), Sample([arr(4, 3)], {"dim": 0})], torch_op=_torch("glu"))
spec("F.prelu", F.prelu, lambda x, w: np.where(x > 0, x, x * w.reshape(1, -1, 1)),
     [Sample([arr(2, 3, 4), arr(3, seed=1)])], torch_op=_torch("prelu"))
spec("F.normalize", lambda x, **k: F.normalize(x, **k),
     lambda x, p=2.0, dim=1: x / np.maximum(np.linalg.norm(x, ord=p, axis=dim, keepdims=True), 1e-12),
     [Sample([arr(3, 5)]), Sample([arr(3, 5)], {"p": 1.0, "dim": 0})], torch_op=_torch("normalize"))

spec("F.linear", F.linear, lambda x, w, b: x @ w.T + b,
     [Sample([arr(3, 4), arr(5, 4, seed=1), arr(5, seed=2)]), Sample([arr(2, 3, 4), arr(5, 4, seed=1), arr(5, seed=2)])],
     torch_op=_torch("linear"))
spec("F.bilinear", F.bilinear, lambda a, b, w, bias: np.einsum("ni,oij,nj->no", a, w, b) + bias,
     [Sample([arr(3, 2), arr(3, 4, seed=1), arr(5, 2, 4, seed=2), arr(5, seed=3)])], torch_op=_torch("bilinear"))
spec("F.conv2d", lambda x, w, b, **k: F.conv2d(x, w, b, **k), np_conv2d,
     [Sample([arr(2, 3, 6, 5), arr(4, 3, 3, 3, seed=1), arr(4, seed=2)], {"padding": 1}),
      Sample([arr(2, 4, 7, 6), arr(4, 2, 3, 2, seed=1), arr(4, seed=2)],
             {"stride": (2, 1), "dilation": (1, 2), "groups": 2}),
      Sample([arr(1, 2, 5, 5), arr(3, 2, 2, 2, seed=1), arr(3, seed=2)], {"stride": 2, "padding": 1})],
     torch_op=_torch("conv2d"))
spec("F.conv1d", lambda x, w, b, **k: F.conv1d(x, w, b, **k), np_conv1d,
     [Sample([arr(2, 4, 9), arr(6, 2, 3, seed=1), arr(6, seed=2)], {"stride": 2, "padding": 2, "dilation": 2, "groups": 2})],
     torch_op=_torch("conv1d"))
spec("F.conv_transpose2d", lambda x, w, b, **k: F.conv_transpose2d(x, w, b, **k), np_conv_transpose2d,
     [Sample([arr(2, 4, 3, 4), arr(4, 3, 3, 2, seed=1), arr(6, seed=2)],
             {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}),
      Sample([arr(1, 2, 4, 4), arr(2, 3, 2, 2, seed=1), arr(3, seed=2)], {"dilation": 2})],
     torch_op=_torch("conv_transpose2d"))
by_torch("F.conv3d", lambda x, w, **k: F.conv3d(x, w, **k),
     [Sample([arr(1, 2, 4, 4, 3), arr(3, 2, 2, 3, 2, seed=1)], {"padding": (1, 0, 1), "stride": (1, 2, 1)})],
     torch_op=_torch("conv3d"))
by_torch("F.conv_transpose1d", lambda x, w, **k: F.conv_transpose1d(x, w, **k),
     [Sample([arr(2, 4, 5), arr(4, 3, 3, seed=1)], {"stride": 3, "padding": 1, "output_padding": 2})],
     torch_op=_torch("conv_transpose1d"))
by_torch("F.unfold", lambda x, **k: F.unfold(x, **k),
     [Sample([arr(2, 3, 5, 4)], {"kernel_size": (2, 3), "padding": 1, "stride": (2, 1)})], torch_op=_torch("unfold"))
by_torch("F.fold", lambda x, **k: F.fold(x, **k),
     [Sample([arr(2, 12, 10)], {"output_size": (5, 6), "kernel_size": 2, "stride": (2, 1)})], torch_op=_torch("fold"))
spec("F.max_pool2d", lambda x, **k: F.max_pool2d(x, **k), np_max_pool2d,
     [Sample([arr(2, 3, 6, 6)], {"kernel_size": 2}), Sample([arr(2, 3, 7, 5, seed=1)], {"kernel_size": 3, "stride": 2, "padding": 1})],
     torch_op=_torch("max_pool2d"))
by_torch("F.max_pool1d", lambda x, **k: F.max_pool1d(x, **k),
     [Sample([arr(2, 3, 9)], {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True})],
     torch_op=_torch("max_pool1d"))
spec("F.avg_pool2d", lambda x, **k: F.avg_pool2d(x, **k), np_avg_pool2d,
     [Sample([arr(2, 3, 6, 6)], {"kernel_size": 2}), Sample([arr(2, 3, 7, 5, seed=1)], {"kernel_size": 3, "stride": 2, "padding": 1})],
     torch_op=_torch("avg_pool2d"))
by_torch("F.avg_pool1d", lambda x, **k: F.avg_pool1d(x, **k),
     [Sample([arr(2, 3, 9)], {"kernel_size": 4, "stride": 3, "padding": 2, "ceil_mode": True, "count_include_pad": False})],
     torch_op=_torch("avg_pool1d"))
by_torch("F.adaptive_avg_pool2d", lambda x, **k: F.adaptive_avg_pool2d(x, **k),
     [Sample([arr(2, 3, 7, 6)], {"output_size": (3, 4)})], torch_op=_torch("adaptive_avg_pool2d"))
by_torch("F.adaptive_max_pool2d", lambda x, **k: F.adaptive_max_pool2d(x, **k),
     [Sample([arr(2, 3, 7, 6)], {"output_size": (3, 4)})], torch_op=_torch("adaptive_max_pool2d"))
by_torch("F.interpolate", lambda x, **k: F.interpolate(x, **k),
     [Sample([arr(1, 2, 4, 3)], {"scale_factor": 2, "mode": "nearest"}),
      Sample([arr(1, 2, 4, 3)], {"size": (5, 7), "mode": "bilinear", "align_corners": False}),
      Sample([arr(1, 2, 4, 3)], {"size": (5, 7), "mode": "bilinear", "align_corners": True}),
      Sample([arr(1, 2, 4, 3)], {"size": (6, 5), "mode": "bicubic", "align_corners": False})],
     torch_op=_torch("interpolate"))
spec("F.pixel_shuffle", lambda x, **k: F.pixel_shuffle(x, **k),
     lambda x, upscale_factor: x.reshape(2, 2, 2, 2, 3, 2).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 4),
     [Sample([arr(2, 8, 3, 2)], {"upscale_factor": 2})], torch_op=_torch("pixel_shuffle"))

spec("F.layer_norm", lambda x, s, w, b: F.layer_norm(x, s, w, b), np_layer_norm,
     [Sample([arr(3, 5), (5,), arr(5, seed=1), arr(5, seed=2)]),
      Sample([arr(2, 3, 4, seed=3), (3, 4), arr(3, 4, seed=1), arr(3, 4, seed=2)])], torch_op=_torch("layer_norm"))
spec("F.batch_norm", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     np_batch_norm_train, [Sample([arr(4, 3, 2), arr(3, seed=1), arr(3, seed=2)])],
     torch_op=lambda x, w, b: _t().batch_norm(x, None, None, w, b, training=True))
spec("F.group_norm", lambda x, g, w, b: F.group_norm(x, g, w, b), np_group_norm,
     [Sample([arr(2, 4, 3), 2, arr(4, seed=1), arr(4, seed=2)])], torch_op=_torch("group_norm"))
by_torch("F.instance_norm", lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
     [Sample([arr(2, 3, 4), arr(3, seed=1), arr(3, seed=2)])],
     torch_op=lambda x, w, b: _t().instance_norm(x, weight=w, bias=b))
by_torch("F.rms_norm", lambda x, s, w: F.rms_norm(x, s, w), [Sample([arr(3, 4), (4,), arr(4, seed=1)])],
     torch_op=_torch("rms_norm"))

_T5 = rng(7).integers(0, 4, 5)
_T5_IGN = _T5.copy()
_T5_IGN[1] = 2
spec("F.cross_entropy", lambda x, t, **k: F.cross_entropy(x, t, **k), np_cross_entropy,
     [Sample([arr(5, 4), _T5]), Sample([arr(5, 4), _T5], {"reduction": "sum", "label_smoothing": 0.2}),
      Sample([arr(5, 4), _T5_IGN], {"ignore_index": 2, "reduction": "none"})],
     torch_op=_torch("cross_entropy"))
spec("F.nll_loss", lambda x, t, **k: F.nll_loss(x, t, **k),
     lambda x, t, reduction="mean": {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction](-x[np.arange(len(t)), t]),
     [Sample([arr(5, 4), _T5]), Sample([arr(5, 4), _T5], {"reduction": "none"})], torch_op=_torch("nll_loss"))
spec("F.mse_loss", lambda a, b, **k: F.mse_loss(a, b, **k), lambda a, b: ((a - b) ** 2).mean(),
     [Sample([arr(3, 4), arr(3, 4, seed=1)])], torch_op=_torch("mse_loss"))
spec("F.l1_loss", lambda a, b, **k: F.l1_loss(a, b, **k), lambda a, b: np.abs(a - b).mean(),
     [Sample([arr(3, 4), arr(3, 4, seed=1)])], torch_op=_torch("l1_loss"))
spec("F.smooth_l1_loss", lambda a, b, **k: F.smooth_l1_loss(a, b, **k),
     lambda a, b, beta=1.0: np.where(np.abs(a - b) < beta, 0.5 * (a - b) ** 2 / beta, np.abs(a - b) - 0.5 * beta).mean(),
     [Sample([arr(3, 4), arr(3, 4, seed=1)], {"beta": 0.7})], torch_op=_torch("smooth_l1_loss"))
by_torch("F.huber_loss", lambda a, b, **k: F.huber_loss(a, b, **k),
     [Sample([arr(3, 4), arr(3, 4, seed=1)], {"delta": 0.7})], torch_op=_torch("huber_loss"))
spec("F.binary_cross_entropy_with_logits", lambda x, t, **k: F.binary_cross_entropy_with_logits(x, t, **k),
     lambda x, t: (-(t * np.log(np_sigmoid(x)) + (1 - t) * np.log(1 - np_sigmoid(x)))).mean(),
     [Sample([arr(3, 4), arr(3, 4, low=0, high=1, seed=1)])], torch_op=_torch("binary_cross_entropy_with_logits"))
spec("F.binary_cross_entropy", lambda x, t: F.binary_cross_entropy(x, t),
     lambda x, t: (-(t * np.log(x) + (1 - t) * np.log(1 - x))).mean(),
     [Sample([arr(3, 4, low=0.05, high=0.95), arr(3, 4, low=0, high=1, seed=1)])],
     torch_op=_torch("binary_cross_entropy"))
by_torch("F.kl_div", lambda x, t, **k: F.kl_div(x, t, **k),
     [Sample([arr(3, 4), arr(3, 4, low=0.1, high=1, seed=1)], {"reduction": "batchmean"})], torch_op=_torch("kl_div"))
by_torch("F.cosine_similarity", F.cosine_similarity, [Sample([arr(3, 4), arr(3, 4, seed=1)])],
     torch_op=_torch("cosine_similarity"))
by_torch("F.pairwise_distance", F.pairwise_distance, [Sample([arr(3, 4), arr(3, 4, seed=1)])],
     torch_op=_torch("pairwise_distance"))
by_torch("F.triplet_margin_loss", F.triplet_margin_loss,
     [Sample([arr(3, 4), arr(3, 4, seed=1), arr(3, 4, seed=2)])], torch_op=_torch("triplet_margin_loss"))
spec("F.embedding", lambda i, w, **k: F.embedding(i, w, **k), lambda i, w, **k: w[i],
     [Sample([rng(3).integers(0, 5, (2, 3)), arr(5, 3)]),
      Sample([rng(3).integers(0, 5, (2, 3)), arr(5, 3)], {"padding_idx": 1},
             values_only="padding_idx's row gets no gradient by design, which finite differences contradict")],
     torch_op=_torch("embedding"))
spec("F.scaled_dot_product_attention", F.scaled_dot_product_attention, np_sdpa,
     [Sample([arr(2, 3, 4, 5), arr(2, 3, 6, 5, seed=1), arr(2, 3, 6, 4, seed=2)]),
      Sample([arr(2, 4, 5), arr(2, 4, 5, seed=1), arr(2, 4, 3, seed=2)], {"is_causal": True}),
      Sample([arr(2, 4, 5), arr(2, 6, 5, seed=1), arr(2, 6, 3, seed=2), arr(4, 6, seed=3)], {"scale": 0.3})],
     torch_op=_torch("scaled_dot_product_attention"))


# --- recurrent cells (PyTorch's torch.lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell) ------------------
def np_lstm_cell(x, h, c, w_ih, w_hh, b_ih=0.0, b_hh=0.0):
    i, f, g, o = np.split(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh, 4, -1)
    c2 = np_sigmoid(f) * c + np_sigmoid(i) * np.tanh(g)
    return np_sigmoid(o) * np.tanh(c2), c2


def np_gru_cell(x, h, w_ih, w_hh, b_ih=0.0, b_hh=0.0):
    ir, iz, i_n = np.split(x @ w_ih.T + b_ih, 3, -1)
    hr, hz, h_n = np.split(h @ w_hh.T + b_hh, 3, -1)
    r, z = np_sigmoid(ir + hr), np_sigmoid(iz + hz)
    n = np.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h


def _cell_samples(gates, bias=True):
    """(x, h, [c,] w_ih, w_hh, b_ih, b_hh): batch 3, input size 4, hidden size 5 (PyTorch's functional cells
    take a batch only); values in [-2, 2], so the gates' pre-activations reach well into the saturated ends."""
    states = [arr(3, 5, seed=1 + k) for k in range(2 if gates == 4 else 1)]
    ws = [arr(gates * 5, 4, seed=5), arr(gates * 5, 5, seed=6)]
    bs = [arr(gates * 5, seed=7), arr(gates * 5, seed=8)] if bias else []
    return [Sample([arr(3, 4), *states, *ws, *bs])]


def _tt():
    import torch
    return torch


for _k, _name in ((0, "h"), (1, "c")):
    spec(f"lstm_cell[{_name}]", lambda x, h, c, *w, _k=_k: wb.lstm_cell(x, (h, c), *w)[_k],
         lambda x, h, c, *w, _k=_k: np_lstm_cell(x, h, c, *w)[_k], _cell_samples(4) + _cell_samples(4, bias=False),
         torch_op=lambda x, h, c, *w, _k=_k: _tt().lstm_cell(x, (h, c), *w)[_k])
spec("gru_cell", lambda x, h, *w: wb.gru_cell(x, h, *w), np_gru_cell, _cell_samples(3) + _cell_samples(3, bias=False),
     torch_op=lambda x, h, *w: _tt().gru_cell(x, h, *w))
spec("rnn_tanh_cell", lambda x, h, *w: wb.rnn_tanh_cell(x, h, *w),
     lambda x, h, wi, wh, bi=0.0, bh=0.0: np.tanh(x @ wi.T + bi + h @ wh.T + bh), _cell_samples(1),
     torch_op=lambda x, h, *w: _tt().rnn_tanh_cell(x, h, *w))
spec("rnn_relu_cell", lambda x, h, *w: wb.rnn_relu_cell(x, h, *w),
     lambda x, h, wi, wh, bi=0.0, bh=0.0: np.maximum(x @ wi.T + bi + h @ wh.T + bh, 0), _cell_samples(1),
     torch_op=lambda x, h, *w: _tt().rnn_relu_cell(x, h, *w))
