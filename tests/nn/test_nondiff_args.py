"""Tensor arguments that an op might treat as constants, each given requires_grad=True, against PyTorch.

PyTorch either differentiates such an argument (the loss weight of binary_cross_entropy, the target of
mse_loss, a float attention mask) or refuses it at forward with a RuntimeError naming the op and argument
(nll_loss's class weight, batch_norm's running stats). Workbench must do the same: a silent detach gives a
gradient of None where PyTorch gives one, or trains a weight PyTorch says cannot be trained.
"""
import numpy as np
import pytest

import workbench as wb
import workbench.nn.functional as WF

torch = pytest.importorskip("torch")
TF = torch.nn.functional

R = np.random.default_rng(0)


def _a(*shape, low=-1.0, high=1.0):
    return R.uniform(low, high, shape)


X = _a(4, 3)
CLS = np.array([0, 2, 1, 2])
W3 = _a(3, low=0.5, high=1.5)
P = _a(4, 3, low=0.1, high=0.9)
T01 = (R.uniform(size=(4, 3)) > 0.5).astype(np.float64)
PM1 = np.array([1.0, -1.0, 1.0, -1.0])
IMG = _a(2, 3, 4, 4)
RM, RV = _a(3), _a(3, low=0.5, high=1.5)
Q = _a(2, 3, 4)
MASK = _a(3, 3)
GRID = _a(2, 3, 3, 2) * 0.9
THETA = _a(2, 2, 3)

# name: (function name in F, builder(F, T) -> (args, kwargs)); T(array, grad) makes a float64 tensor (or an
# int64 one for integer arrays) whose requires_grad is `grad`; the argument under test is the one with True.
CASES = {
    "nll_loss.weight": ("nll_loss", lambda T: ((T(X, 1), T(CLS), T(W3, 1)), {})),
    "nll_loss.weight.constant_input": ("nll_loss", lambda T: ((T(X), T(CLS), T(W3, 1)), {})),
    "cross_entropy.weight": ("cross_entropy", lambda T: ((T(X, 1), T(CLS), T(W3, 1)), {})),
    "cross_entropy.weight.smoothing": ("cross_entropy",
                                       lambda T: ((T(X, 1), T(CLS), T(W3, 1)), {"label_smoothing": 0.2})),
    "cross_entropy.weight.probs": ("cross_entropy", lambda T: ((T(X, 1), T(P), T(W3, 1)), {})),
    "cross_entropy.target.probs": ("cross_entropy", lambda T: ((T(X, 1), T(P, 1)), {})),
    "multi_margin_loss.weight": ("multi_margin_loss", lambda T: ((T(X, 1), T(CLS)), {"weight": T(W3, 1)})),
    "multilabel_soft_margin_loss.weight": ("multilabel_soft_margin_loss",
                                           lambda T: ((T(X, 1), T(T01), T(W3, 1)), {})),
    "multilabel_soft_margin_loss.target": ("multilabel_soft_margin_loss", lambda T: ((T(X, 1), T(T01, 1)), {})),
    "binary_cross_entropy.weight": ("binary_cross_entropy", lambda T: ((T(P, 1), T(T01), T(W3, 1)), {})),
    "binary_cross_entropy.target": ("binary_cross_entropy", lambda T: ((T(P, 1), T(T01, 1)), {})),
    "bce_with_logits.weight": ("binary_cross_entropy_with_logits",
                               lambda T: ((T(X, 1), T(T01), T(W3, 1)), {})),
    "bce_with_logits.pos_weight": ("binary_cross_entropy_with_logits",
                                   lambda T: ((T(X, 1), T(T01)), {"pos_weight": T(W3, 1)})),
    "bce_with_logits.target": ("binary_cross_entropy_with_logits", lambda T: ((T(X, 1), T(P, 1)), {})),
    "mse_loss.target": ("mse_loss", lambda T: ((T(X, 1), T(P, 1)), {})),
    "l1_loss.target": ("l1_loss", lambda T: ((T(X, 1), T(P, 1)), {})),
    "smooth_l1_loss.target": ("smooth_l1_loss", lambda T: ((T(X, 1), T(P, 1)), {})),
    "huber_loss.target": ("huber_loss", lambda T: ((T(X, 1), T(P, 1)), {})),
    "kl_div.target": ("kl_div", lambda T: ((T(X, 1), T(P, 1)), {"reduction": "batchmean"})),
    "kl_div.target.log": ("kl_div", lambda T: ((T(X, 1), T(X * 0.5, 1)), {"reduction": "sum", "log_target": True})),
    "poisson_nll_loss.target": ("poisson_nll_loss", lambda T: ((T(X, 1), T(P, 1)), {})),
    "poisson_nll_loss.target.full": ("poisson_nll_loss", lambda T: ((T(X, 1), T(P * 3, 1)), {"full": True})),
    "gaussian_nll_loss.target": ("gaussian_nll_loss", lambda T: ((T(X, 1), T(P, 1), T(P + 0.5)), {})),
    "gaussian_nll_loss.var": ("gaussian_nll_loss", lambda T: ((T(X, 1), T(P), T(P + 0.5, 1)), {})),
    "soft_margin_loss.target": ("soft_margin_loss", lambda T: ((T(X, 1), T(np.sign(X), 1)), {})),
    "hinge_embedding_loss.target": ("hinge_embedding_loss",
                                    lambda T: ((T(X, 1), T(np.sign(X), 1)), {"margin": 0.5})),
    "margin_ranking_loss.target": ("margin_ranking_loss",
                                   lambda T: ((T(X[:, 0], 1), T(X[:, 1], 1), T(PM1, 1)), {})),
    "cosine_embedding_loss.target": ("cosine_embedding_loss", lambda T: ((T(X, 1), T(P, 1), T(PM1, 1)), {})),
    "embedding.weight": ("embedding", lambda T: ((T(CLS), T(X, 1)), {})),
    "embedding_bag.per_sample_weights": ("embedding_bag", lambda T: (
        (T(CLS), T(X, 1), T(np.array([0, 2]))), {"mode": "sum", "per_sample_weights": T(W3[[0, 1, 2, 0]], 1)})),
    "prelu.weight": ("prelu", lambda T: ((T(IMG, 1), T(W3, 1)), {})),
    "batch_norm.running_mean": ("batch_norm", lambda T: ((T(IMG, 1), T(RM, 1), T(RV)), {"training": False})),
    "batch_norm.running_var": ("batch_norm", lambda T: ((T(IMG, 1), T(RM), T(RV, 1)), {"training": False})),
    "batch_norm.running_mean.train": ("batch_norm",
                                      lambda T: ((T(IMG, 1), T(RM, 1), T(RV)), {"training": True})),
    "batch_norm.running_var.constant_input": ("batch_norm", lambda T: ((T(IMG), T(RM), T(RV, 1)), {})),
    "instance_norm.running_mean": ("instance_norm", lambda T: ((T(IMG, 1), T(RM, 1), T(RV)), {})),
    "sdpa.attn_mask": ("scaled_dot_product_attention", lambda T: ((T(Q, 1), T(Q), T(Q)), {"attn_mask": T(MASK, 1)})),
    "grid_sample.grid": ("grid_sample", lambda T: (
        (T(IMG, 1), T(GRID, 1)), {"align_corners": False})),
    "affine_grid.theta": ("affine_grid", lambda T: ((T(THETA, 1), [2, 3, 4, 4]), {"align_corners": False})),
    "pad.value_tensor_input": ("pad", lambda T: ((T(IMG, 1), (1, 1)), {})),
    "ctc_loss.log_probs": ("ctc_loss", lambda T: (
        (T(np.log(np.full((5, 2, 3), 1 / 3)), 1), T(np.array([[1, 2], [1, 1]])), T(np.array([5, 5])),
         T(np.array([2, 2]))), {})),
}


def _run(lib, fn_name, builder):
    made = []

    def T(a, grad=0):
        a = np.asarray(a)
        t = lib.tensor(a, dtype=lib.int64 if a.dtype.kind == "i" else lib.float64, requires_grad=bool(grad))
        made.append(t)
        return t

    args, kwargs = builder(T)
    fn = getattr(lib.nn.functional, fn_name)
    try:
        out = fn(*args, **kwargs)
    except RuntimeError as e:
        return ("raise", str(e)), None
    out.sum().backward()
    return ("ok", float(out.sum())), [None if t.grad is None else t.grad.detach().numpy() for t in made]


@pytest.mark.parametrize("case", sorted(CASES))
def test_requires_grad_argument_matches_torch(case):
    fn_name, builder = CASES[case]
    (kt, kv), tg = _run(torch, fn_name, builder)
    (wk, wv), wg = _run(wb, fn_name, builder)
    if kt == "raise":
        assert (wk, wv) == ("raise", kv), f"{case}: torch raises {kv!r}"
        return
    assert wk == "ok", f"{case}: torch runs, workbench raised {wv!r}"
    np.testing.assert_allclose(wv, kv, rtol=1e-10, atol=1e-12)
    for i, (a, b) in enumerate(zip(tg, wg)):
        assert (a is None) == (b is None), f"{case}: tensor {i}: torch grad {a is not None}, workbench {b is not None}"
        if a is not None:
            np.testing.assert_allclose(b, a, rtol=1e-8, atol=1e-10, err_msg=f"{case}: tensor {i}")


@pytest.mark.parametrize("case", ["nll_loss.weight", "batch_norm.running_mean", "bce_with_logits.pos_weight"])
def test_refused_argument_is_accepted_without_grad_mode(case):
    """PyTorch's refusal is an autograd check: under no_grad the same call runs, and so must ours."""
    fn_name, builder = CASES[case]
    outs = []
    for lib in (torch, wb):
        with lib.no_grad():
            args, kwargs = builder(lambda a, grad=0, lib=lib: lib.tensor(
                np.asarray(a), dtype=lib.int64 if np.asarray(a).dtype.kind == "i" else lib.float64,
                requires_grad=bool(grad)))
            outs.append(getattr(lib.nn.functional, fn_name)(*args, **kwargs).numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-10)


# random draws from tensor parameters: PyTorch's sample requires grad and gives the parameters zero gradients
# (not None: an optimizer then steps them with zeros, and a caller's backward through the sample runs)
DRAWS = {
    "normal.mean_std": lambda lib, T: lib.normal(T(X, 1), T(P, 1)),
    "normal.std": lambda lib, T: lib.normal(0.5, T(P, 1)),
    "bernoulli": lambda lib, T: lib.bernoulli(T(P, 1)),
    "bernoulli.method": lambda lib, T: T(P, 1).bernoulli(),
    "poisson": lambda lib, T: lib.poisson(T(P * 3, 1)),
}


@pytest.mark.parametrize("lib", [torch, wb], ids=["torch", "workbench"])
@pytest.mark.parametrize("case", sorted(DRAWS))
def test_draw_gives_its_parameters_zero_gradients(case, lib):
    made = []

    def T(a, grad=0):
        made.append(lib.tensor(a, dtype=lib.float64, requires_grad=bool(grad)))
        return made[-1]

    y = DRAWS[case](lib, T)
    assert y.requires_grad
    (y * 2).sum().backward()
    for t in made:
        np.testing.assert_array_equal(t.grad.numpy(), np.zeros(tuple(t.shape)))
    with lib.no_grad():
        assert not DRAWS[case](lib, T).requires_grad
