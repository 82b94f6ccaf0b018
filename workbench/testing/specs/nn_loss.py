"""Specs of the margin, embedding, likelihood and sequence losses and pdist (workbench.nn.functional), ``F.<op>``.

Each loss has a NumPy reference written out and runs every reduction ('none', 'mean', 'sum') and the
options users pass (margins, weights, p, eps, full, blank, zero_infinity...). ctc_loss's reference sums
the probability of every alignment (all C**T paths) that collapses to the target, which is CTC's definition.
Samples keep clear of the hinges' kinks so that finite differences hold.
"""
import functools
import itertools
import math

import numpy as np

import workbench.nn.functional as F
from workbench.testing.op_specs import Sample, arr, rng, spec
from workbench.testing.specs.nn import np_cross_entropy, np_log_softmax

REDUCTIONS = ("mean", "sum", "none")


def _tf():
    import torch.nn.functional as TF

    return TF


def _torch(name):
    return lambda *a, **k: getattr(_tf(), name)(*a, **k)


def _red(v, reduction="mean"):
    return {"none": v, "sum": v.sum(), "mean": v.mean()}[reduction]


def _each_reduction(args, nondiff=(), **kw):
    return [Sample(args, {**kw, "reduction": r}, nondiff=nondiff) for r in REDUCTIONS]


def _bind(fn):
    """fn with its trailing positional tensors passed by the keyword names in ``bind=``: optional tensor
    arguments (linear_bias=, weight=) as sample arrays."""
    @functools.wraps(fn)
    def call(*args, bind=(), **kw):
        k = len(args) - len(bind)
        return fn(*args[:k], **dict(zip(bind, args[k:])), **kw)

    return call


def _signs(n, seed):
    return np.where(rng(seed).uniform(size=n) < 0.5, -1.0, 1.0)


# --- NumPy references -------------------------------------------------------------------------------
def np_cosine_embedding(a, b, t, margin=0.0, reduction="mean"):
    eps = 1e-12
    cos = (a * b).sum(-1) / np.sqrt(((a * a).sum(-1) + eps) * ((b * b).sum(-1) + eps))
    v = np.where(t == 1, 1 - cos, 0) + np.where(t == -1, np.maximum(cos - margin, 0), 0)
    return _red(v, reduction)


def np_margin_ranking(a, b, t, margin=0.0, reduction="mean"):
    return _red(np.maximum(-t * (a - b) + margin, 0), reduction)


def np_hinge_embedding(x, t, margin=1.0, reduction="mean"):
    return _red(np.where(t != 1, np.maximum(margin - x, 0), 0) + np.where(t != -1, x, 0), reduction)


def np_soft_margin(x, t, reduction="mean"):
    return _red(np.log1p(np.exp(-t * x)), reduction)


def _np_logsigmoid(x):
    return -np.logaddexp(0, -x)


def np_multilabel_soft_margin(x, t, weight=None, reduction="mean"):
    v = -(t * _np_logsigmoid(x) + (1 - t) * _np_logsigmoid(-x))
    if weight is not None:
        v = v * weight
    return _red(v.sum(-1) / x.shape[-1], reduction)


def np_multi_margin(x, t, p=1, margin=1.0, weight=None, reduction="mean"):
    x2 = x.reshape(-1, x.shape[-1])
    n, c = x2.shape
    tt = np.asarray(t).reshape(-1)
    rows = np.arange(n)
    z = np.maximum(margin - x2[rows, tt][:, None] + x2, 0) ** p
    if weight is not None:
        z = z * weight[tt][:, None]
    z[rows, tt] = 0
    v = z.sum(1) / c
    return _red(v.reshape(np.shape(t)) if x.ndim == 1 else v, reduction)


def np_multilabel_margin(x, t, reduction="mean"):
    x2, t2 = np.atleast_2d(x), np.atleast_2d(t)
    c = x2.shape[1]
    v = np.zeros(len(x2), x.dtype)
    for i, (xi, ti) in enumerate(zip(x2, t2)):
        listed = list(itertools.takewhile(lambda j: j >= 0, ti))
        for j in listed:
            v[i] += sum(max(0.0, 1 - (xi[j] - xi[k])) for k in range(c) if k not in listed)
    v = v / c
    return _red(v[0] if x.ndim == 1 else v, reduction)


def np_gaussian_nll(x, t, var, full=False, eps=1e-6, reduction="mean"):
    var = np.asarray(var, x.dtype)
    if var.ndim and var.shape == x.shape[:-1]:
        var = var[..., None]
    var = np.maximum(var, eps)
    v = 0.5 * (np.log(var) + (x - t) ** 2 / var)
    if full:
        v = v + 0.5 * math.log(2 * math.pi)
    return _red(v, reduction)


def np_pairwise_distance(a, b, p=2.0, eps=1e-6):
    return (np.abs(a - b + eps) ** p).sum(-1) ** (1 / p)


def np_cosine_similarity(a, b, eps=1e-8):
    na = np.maximum(np.sqrt((a * a).sum(-1)), eps)
    nb = np.maximum(np.sqrt((b * b).sum(-1)), eps)
    return (a * b).sum(-1) / (na * nb)


# the distance functions a user passes to triplet_margin_with_distance_loss: (workbench, NumPy, PyTorch)
DISTANCES = {
    None: (None, np_pairwise_distance, None),
    "l1": (lambda a, b: F.pairwise_distance(a, b, p=1), lambda a, b: np_pairwise_distance(a, b, p=1),
           lambda a, b: _tf().pairwise_distance(a, b, p=1)),
    "cosine": (lambda a, b: 1 - F.cosine_similarity(a, b), lambda a, b: 1 - np_cosine_similarity(a, b),
               lambda a, b: 1 - _tf().cosine_similarity(a, b)),
}


def np_triplet_with_distance(a, p, n, distance=None, margin=1.0, swap=False, reduction="mean"):
    d = DISTANCES[distance][1]
    d_pos, d_neg = d(a, p), d(a, n)
    if swap:
        d_neg = np.minimum(d_neg, d(p, n))
    return _red(np.maximum(d_pos - d_neg + margin, 0), reduction)


def _triplet(lib):
    def op(a, p, n, distance=None, **k):
        return (F if lib == 0 else _tf()).triplet_margin_with_distance_loss(
            a, p, n, distance_function=DISTANCES[distance][2 * lib], **k)

    return op


def np_linear_cross_entropy(x, w, t, linear_bias=None, weight=None, reduction="mean", ignore_index=None,
                            label_smoothing=0.0):
    logits = x @ w.T + (0 if linear_bias is None else linear_bias)
    two_d = logits.ndim == 2
    out = np_cross_entropy(logits if two_d else logits[None], t if two_d else np.reshape(t, (1,)), weight,
                           -100 if ignore_index is None else ignore_index, label_smoothing, reduction)
    return out if two_d or reduction != "none" else out[0]


def _collapse(path, blank):
    return tuple(c for c, _ in itertools.groupby(path) if c != blank)


def np_ctc(x, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """-log of the summed probability of every path of C**T labels that collapses to the target (the op
    takes log_softmax(x) as its log-probabilities)."""
    lp = np_log_softmax(x.astype(np.float64), -1)
    batched = lp.ndim == 3
    lp = lp if batched else lp[:, None]
    n, c = lp.shape[1:]
    in_len = np.reshape(input_lengths, -1)
    tgt_len = np.reshape(target_lengths, -1)
    tg = np.asarray(targets)
    starts = np.concatenate([[0], np.cumsum(tgt_len)[:-1]])
    nll = np.zeros(n)
    for b in range(n):
        want = tuple(tg.reshape(n, -1)[b, :tgt_len[b]] if tg.ndim == 2 or not batched else
                     tg[starts[b]:starts[b] + tgt_len[b]])
        steps = np.arange(in_len[b])
        total = sum(math.exp(lp[steps, b, list(path)].sum())
                    for path in itertools.product(range(c), repeat=int(in_len[b])) if _collapse(path, blank) == want)
        nll[b] = -math.log(total) if total > 0 else math.inf
    if zero_infinity:
        nll = np.where(np.isinf(nll), 0.0, nll)
    if reduction == "mean":
        return (nll / np.maximum(tgt_len, 1)).mean().astype(x.dtype)
    out = _red(nll, reduction).astype(x.dtype)
    return out if batched or reduction != "none" else out[0]


def _ctc(lib):
    def op(x, targets, input_lengths, target_lengths, **k):
        return lib().ctc_loss(x.log_softmax(-1), targets, input_lengths, target_lengths, **k)

    return op


def np_pdist(x, p=2.0):
    i, j = np.triu_indices(len(x), 1)
    d = np.abs(x[i] - x[j])
    if p == 0:
        return (d != 0).sum(-1).astype(x.dtype)
    if p == math.inf:
        return d.max(-1, initial=0)
    return (d ** p).sum(-1) ** (1 / p)


# --- specs ------------------------------------------------------------------------------------------
A, B = arr(5, 4), arr(5, 4, seed=1)
T5 = np.array([1, -1, -1, 1, -1])
spec("F.cosine_embedding_loss", lambda a, b, t, **k: F.cosine_embedding_loss(a, b, t, **k), np_cosine_embedding,
     _each_reduction([A, B, T5]) + [Sample([A, B, T5], {"margin": 0.3}),
                                    Sample([arr(4, seed=2), arr(4, seed=3), np.array(-1)], {"margin": -0.4})],
     torch_op=_torch("cosine_embedding_loss"))
spec("F.margin_ranking_loss", lambda a, b, t, **k: F.margin_ranking_loss(a, b, t, **k), np_margin_ranking,
     _each_reduction([arr(6), arr(6, seed=1), _signs(6, 2)]) +
     [Sample([arr(2, 3), arr(2, 3, seed=1), _signs(6, 3).reshape(2, 3)], {"margin": 0.5})],
     torch_op=_torch("margin_ranking_loss"))
spec("F.hinge_embedding_loss", lambda x, t, **k: F.hinge_embedding_loss(x, t, **k), np_hinge_embedding,
     _each_reduction([arr(3, 4, low=-0.8, high=2.5), _signs(12, 4).reshape(3, 4)], nondiff=[1]) +
     [Sample([arr(6, low=0.1, high=2.5), np.array([1.0, -1.0, 0.0, -1.0, 1.0, 0.0])], {"margin": 2.0}, nondiff=[1])],
     torch_op=_torch("hinge_embedding_loss"))
spec("F.soft_margin_loss", lambda x, t, **k: F.soft_margin_loss(x, t, **k), np_soft_margin,
     _each_reduction([arr(3, 4, low=-3, high=3), _signs(12, 5).reshape(3, 4)], nondiff=[1]),
     torch_op=_torch("soft_margin_loss"))
spec("F.multilabel_soft_margin_loss", _bind(F.multilabel_soft_margin_loss), _bind(np_multilabel_soft_margin),
     _each_reduction([arr(3, 4), arr(3, 4, low=0, high=1, seed=1)]) +
     [Sample([arr(3, 4), arr(3, 4, low=0, high=1, seed=1), arr(4, low=0.2, high=2, seed=2)], {"bind": ("weight",)}),
      Sample([arr(4), (arr(4, seed=1) > 0).astype(np.float64)])],
     torch_op=_bind(_torch("multilabel_soft_margin_loss")))

X45 = arr(4, 5, seed=6)
T4 = np.array([2, 0, 4, 2])
spec("F.multi_margin_loss", _bind(F.multi_margin_loss), _bind(np_multi_margin),
     _each_reduction([X45, T4]) +
     [Sample([X45, T4], {"p": 2, "margin": 0.7}), Sample([X45, T4, arr(5, low=0.2, high=2, seed=7)],
                                                         {"bind": ("weight",), "p": 2}, nondiff=[2]),
      Sample([arr(5, seed=8), np.array(3)], {"margin": 0.4, "reduction": "none"})],
     torch_op=_bind(_torch("multi_margin_loss")))
TML = np.array([[3, 0, -1, 1, 2], [1, -1, 2, 2, 0], [4, 2, 1, 0, 3], [-1, 0, 1, 2, 3]])
spec("F.multilabel_margin_loss", lambda x, t, **k: F.multilabel_margin_loss(x, t, **k), np_multilabel_margin,
     _each_reduction([X45, TML]) + [Sample([arr(5, seed=9), np.array([2, 4, -1, 0, 0])])],
     torch_op=_torch("multilabel_margin_loss"))
V45 = arr(4, 5, low=0.2, high=1.5, seed=10)
spec("F.gaussian_nll_loss", lambda x, t, v, **k: F.gaussian_nll_loss(x, t, v, **k), np_gaussian_nll,
     _each_reduction([X45, arr(4, 5, seed=11), V45]) +
     [Sample([X45, arr(4, 5, seed=11), V45[:, 0]], {"full": True}),
      Sample([X45, arr(4, 5, seed=11), V45[:, :1]], {"reduction": "sum"}),
      Sample([X45, arr(4, 5, seed=11), 0.7], {"full": True, "reduction": "none"}),
      Sample([X45, arr(4, 5, seed=11), V45], {"eps": 0.6},
             values_only="var below eps is clamped without a gradient (PyTorch's no_grad clamp), which finite "
                         "differences contradict")],
     torch_op=_torch("gaussian_nll_loss"))
spec("F.triplet_margin_with_distance_loss", _triplet(0), np_triplet_with_distance,
     _each_reduction([arr(4, 3), arr(4, 3, seed=1), arr(4, 3, seed=2)]) +
     [Sample([arr(4, 3), arr(4, 3, seed=1), arr(4, 3, seed=2)], {"distance": "l1", "margin": 0.5, "swap": True}),
      Sample([arr(4, 3), arr(4, 3, seed=1), arr(4, 3, seed=2)], {"distance": "cosine", "margin": 0.8,
                                                                 "reduction": "none"})],
     torch_op=_triplet(1))
T5C = rng(12).integers(0, 4, 5)
T5C_IGN = T5C.copy()
T5C_IGN[3] = 1
spec("F.linear_cross_entropy", _bind(F.linear_cross_entropy), _bind(np_linear_cross_entropy),
     _each_reduction([arr(5, 3), arr(4, 3, seed=1), T5C]) +
     [Sample([arr(5, 3), arr(4, 3, seed=1), T5C, arr(4, seed=2), arr(4, low=0.2, high=2, seed=3)],
             {"bind": ("linear_bias", "weight"), "label_smoothing": 0.1}, nondiff=[4]),
      Sample([arr(5, 3), arr(4, 3, seed=1), T5C_IGN, arr(4, seed=2)],
             {"bind": ("linear_bias",), "ignore_index": 1, "reduction": "sum"}),
      Sample([arr(3), arr(4, 3, seed=1), np.array(2)], {"reduction": "none"})],
     torch_op=_bind(_torch("linear_cross_entropy")))

# (T, N, C) = (5, 2, 3) logits; the op takes their log_softmax, as a CTC model does
XC = arr(5, 2, 3, seed=13)
_LEN = [np.array([5, 4]), np.array([2, 2])]
spec("F.ctc_loss", _ctc(lambda: F), np_ctc,
     [Sample([XC, np.array([[1, 2], [1, 1]]), *_LEN], {"reduction": r}) for r in REDUCTIONS] +
     [Sample([XC, np.array([0, 1, 1]), np.array([5, 3]), np.array([2, 1])], {"blank": 2, "reduction": "sum"}),
      Sample([XC, np.array([[1, 1, 1], [2, 1, 2]]), np.array([4, 5]), np.array([3, 3])],
             {"zero_infinity": True, "reduction": "none"}),
      Sample([XC, np.array([[1, 1, 1], [2, 1, 2]]), np.array([4, 5]), np.array([3, 3])], {"zero_infinity": True}),
      Sample([XC, np.array([[1, 1, 1], [2, 1, 2]]), np.array([4, 5]), np.array([3, 3])], {"reduction": "none"},
             values_only="the first target cannot fit in 4 steps: an infinite loss, whose gradient is NaN"),
      Sample([XC[:, 0], np.array([2, 0]), np.array(5), np.array(2)], {"blank": 1}),
      Sample([XC, np.array([[2, 1], [1, 2]]), np.array([3, 5]), np.array([2, 0])])],  # an empty target: all blanks
     torch_op=_ctc(_tf), no_gradgrad="CTC's backward is not differentiable (PyTorch's neither)")

_P5 = arr(5, 3, seed=14)
spec("F.pdist", lambda x, **k: F.pdist(x, **k), np_pdist,
     [Sample([_P5]), Sample([_P5], {"p": 1.0}), Sample([_P5], {"p": 3.0}), Sample([_P5], {"p": 0.5}),
      Sample([_P5], {"p": math.inf}), Sample([_P5], {"p": 0.0}),
      Sample([arr(1, 3)], values_only="one row: no pairs, an empty output with nothing to differentiate")],
     torch_op=_torch("pdist"))
