"""kl_divergence and register_kl, transforms (forward/inverse/log-det against torch and autograd), argument
validation with PyTorch's ValueError messages, constraints, and reparameterized gradients: exact implicit
gradients of gamma draws against finite differences, pathwise gradients against PyTorch's expectations."""
import numpy as np
import pytest
import scipy.special as sp
import torch

import workbench as wb
from workbench.ops.sampling import standard_gamma_grad_array

D, TD = wb.distributions, torch.distributions
RNG = np.random.default_rng(1)
A, B = RNG.uniform(0.5, 3.0, 3), RNG.uniform(0.5, 3.0, 3)
X, Y = RNG.standard_normal(3), RNG.standard_normal(3)
P1, P2 = RNG.dirichlet(np.ones(4), 3), RNG.dirichlet(np.ones(4), 3)
L1 = np.tril(RNG.standard_normal((3, 3)), -1) + np.diag(A)
L2 = np.tril(RNG.standard_normal((3, 3)), -1) + np.diag(B)

KL_PAIRS = [
    ("Normal", lambda M, t: (M.Normal(t(X), t(A)), M.Normal(t(Y), t(B)))),
    ("Bernoulli", lambda M, t: (M.Bernoulli(probs=t(A / 4)), M.Bernoulli(probs=t(B / 4)))),
    ("Categorical", lambda M, t: (M.Categorical(probs=t(P1)), M.Categorical(probs=t(P2)))),
    ("OneHotCategorical", lambda M, t: (M.OneHotCategorical(probs=t(P1)), M.OneHotCategorical(probs=t(P2)))),
    ("Beta", lambda M, t: (M.Beta(t(A), t(B)), M.Beta(t(B), t(A)))),
    ("Gamma", lambda M, t: (M.Gamma(t(A), t(B)), M.Gamma(t(B), t(A)))),
    ("Dirichlet", lambda M, t: (M.Dirichlet(t(P1 * 4 + 1)), M.Dirichlet(t(P2 * 4 + 1)))),
    ("Exponential", lambda M, t: (M.Exponential(t(A)), M.Exponential(t(B)))),
    ("Laplace", lambda M, t: (M.Laplace(t(X), t(A)), M.Laplace(t(Y), t(B)))),
    ("Poisson", lambda M, t: (M.Poisson(t(A)), M.Poisson(t(B)))),
    ("Uniform", lambda M, t: (M.Uniform(t(X), t(X + A)), M.Uniform(t(X - 1), t(X + A + B)))),
    ("Geometric", lambda M, t: (M.Geometric(probs=t(A / 4)), M.Geometric(probs=t(B / 4)))),
    ("Binomial", lambda M, t: (M.Binomial(5, probs=t(A / 4)), M.Binomial(5, probs=t(B / 4)))),
    ("Cauchy", lambda M, t: (M.Cauchy(t(X), t(A)), M.Cauchy(t(Y), t(B)))),
    ("MultivariateNormal", lambda M, t: (M.MultivariateNormal(t(X), scale_tril=t(L1)),
                                         M.MultivariateNormal(t(Y), scale_tril=t(L2)))),
    ("Independent", lambda M, t: (M.Independent(M.Normal(t(X), t(A)), 1), M.Independent(M.Normal(t(Y), t(B)), 1))),
    ("LogNormal", lambda M, t: (M.LogNormal(t(X), t(A)), M.LogNormal(t(Y), t(B)))),
    ("Uniform-Normal", lambda M, t: (M.Uniform(t(X), t(X + A)), M.Normal(t(Y), t(B)))),
    ("Normal-Laplace", lambda M, t: (M.Normal(t(X), t(A)), M.Laplace(t(Y), t(B)))),
    ("Exponential-Gamma", lambda M, t: (M.Exponential(t(A)), M.Gamma(t(B), t(A)))),
]


@pytest.mark.parametrize("case", KL_PAIRS, ids=[c[0] for c in KL_PAIRS])
def test_kl_matches_torch_with_gradients(case):
    _, make = case
    tparams, wparams = [], []

    def tt(a):
        t = torch.tensor(a, requires_grad=True)
        tparams.append(t)
        return t

    def wt(a):
        t = wb.tensor(a, requires_grad=True)
        wparams.append(t)
        return t

    tk = TD.kl_divergence(*make(TD, tt))
    wk = D.kl_divergence(*make(D, wt))
    np.testing.assert_allclose(wk.detach().numpy(), tk.detach().numpy(), rtol=1e-9, atol=1e-12)
    tg = torch.autograd.grad(tk.sum(), tparams, allow_unused=True)
    wg = wb.autograd.grad(wk.sum(), wparams, allow_unused=True)
    for a, b in zip(wg, tg):
        if b is not None:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-8, atol=1e-10)


def test_kl_registry_dispatch_and_missing_pair():
    class MyNormal(D.Normal):
        pass

    assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)).item() == pytest.approx(0.5)  # inherited

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return wb.tensor(42.0)

    assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)).item() == 42.0
    assert D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(1.0, 1.0)).item() == pytest.approx(0.5)
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type Gamma and q type"
                                                  " Normal"):
        D.kl_divergence(D.Gamma(1.0, 1.0), D.Normal(0.0, 1.0))


TRANSFORMS = [
    ("Exp", lambda T: T.ExpTransform(), X),
    ("Sigmoid", lambda T: T.SigmoidTransform(), X),
    ("Tanh", lambda T: T.TanhTransform(), X),
    ("Affine", lambda T: T.AffineTransform(1.5, -2.0), X),
    ("Power", lambda T: T.PowerTransform(2.5), A),
    ("Softplus", lambda T: T.SoftplusTransform(), X),
    ("Compose", lambda T: T.ComposeTransform([T.TanhTransform(), T.AffineTransform(0.5, 3.0), T.ExpTransform()]), X),
    ("StickBreaking", lambda T: T.StickBreakingTransform(), X),
    ("Inverse", lambda T: T.ExpTransform().inv, A),
    ("CorrCholesky", lambda T: T.CorrCholeskyTransform(), np.concatenate([X, Y])),
    ("Cat", lambda T: T.CatTransform([T.ExpTransform(), T.AffineTransform(1.0, 3.0)], dim=0, lengths=[2, 1]), X),
    ("Stack", lambda T: T.StackTransform([T.ExpTransform(), T.TanhTransform(), T.SigmoidTransform()], dim=0), X),
]


@pytest.mark.parametrize("constraint", ["real", "positive", "nonnegative", "unit_interval", "simplex",
                                        "lower_cholesky", "greater_than", "less_than", "interval", "real_vector",
                                        "positive_definite", "corr_cholesky"])
def test_biject_to_and_transform_to_match_torch(constraint):
    def get(C):
        c = getattr(C, constraint)
        return c(1.5) if constraint in ("greater_than", "less_than") else c(-1.0, 2.0) if constraint == "interval" else c

    x = RNG.standard_normal((2, 3) if constraint == "corr_cholesky" else (3, 3))
    for reg in ("biject_to", "transform_to"):
        if reg == "biject_to" and constraint in ("lower_cholesky", "positive_definite"):  # transform_to only
            with pytest.raises(NotImplementedError):
                D.biject_to(getattr(D.constraints, constraint))
            continue
        tt = getattr(TD, reg)(get(TD.constraints))
        wt = getattr(D, reg)(get(D.constraints))
        ty, wy = tt(torch.tensor(x)), wt(wb.tensor(x))
        np.testing.assert_allclose(wy.numpy(), ty.numpy(), rtol=1e-10, err_msg=reg)
        assert bool(get(D.constraints).check(wy).all())
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        D.biject_to(D.constraints.boolean)


def test_straight_through_and_module_paths():
    p = wb.tensor([0.2, 0.5, 0.3], requires_grad=True)
    d = D.OneHotCategoricalStraightThrough(probs=p)
    s = d.rsample((4,))
    assert s.detach().sum(-1).tolist() == [1.0] * 4
    (g,) = wb.autograd.grad((s * wb.tensor([1.0, 2.0, 3.0])).sum(), p)
    assert np.isfinite(g.numpy()).all()
    from workbench.distributions.categorical import Categorical
    from workbench.distributions.normal import Normal

    assert Normal is D.Normal and Categorical is D.Categorical


@pytest.mark.parametrize("case", TRANSFORMS, ids=[c[0] for c in TRANSFORMS])
def test_transforms_match_torch(case):
    _, make, x = case
    tt, wt = make(TD.transforms), make(D.transforms)
    ty, wy = tt(torch.tensor(x)), wt(wb.tensor(x))
    np.testing.assert_allclose(wy.numpy(), ty.numpy(), rtol=1e-7)  # PowerTransform's exponent is float32
    np.testing.assert_allclose(wt.inv(wy).numpy(), x, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(wt.log_abs_det_jacobian(wb.tensor(x), wy).numpy(),
                               tt.log_abs_det_jacobian(torch.tensor(x), ty).numpy(), rtol=1e-7, atol=1e-12)
    assert wt.bijective == tt.bijective
    if not isinstance(tt, (TD.transforms.CatTransform, TD.transforms.StackTransform)):
        assert repr(wt.domain) == repr(tt.domain) and repr(wt.codomain) == repr(tt.codomain)
    assert bool(wt.codomain.check(wy).all())


def test_transformed_distribution_log_prob_matches_autograd_jacobian():
    base = D.Normal(wb.zeros(()), 1.0)
    d = D.TransformedDistribution(base, [D.transforms.TanhTransform(), D.transforms.AffineTransform(2.0, 3.0)])
    x = wb.tensor(0.3, dtype=wb.float64, requires_grad=True)
    y = 2.0 + 3.0 * x.tanh()
    (dy,) = wb.autograd.grad(y, x)
    want = D.Normal(0.0, 1.0).log_prob(x.detach()).item() - np.log(abs(dy.item()))
    assert d.log_prob(y.detach()).item() == pytest.approx(want, rel=1e-6)
    assert isinstance(D.Gumbel(0.0, 1.0), D.TransformedDistribution) and D.LogNormal(0.0, 1.0).has_rsample


def test_validation_messages_match_torch():
    messages = []
    for M in (TD, D):
        with pytest.raises(ValueError) as e:
            M.Normal(0.0, -1.0)
        messages.append(str(e.value))
        with pytest.raises(ValueError) as e:
            M.Beta(1.0, 2.0).log_prob((torch if M is TD else wb).tensor(1.5))
        messages.append(str(e.value))
        with pytest.raises(ValueError, match="Expected value argument .* to be within the support"):
            M.Gamma(1.0, 1.0).log_prob((torch if M is TD else wb).tensor(-1.0))
        with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both"):
            M.Bernoulli()
        with pytest.raises(ValueError, match="The right-most size of value must match event_shape"):
            M.Dirichlet((torch if M is TD else wb).ones(3)).log_prob((torch if M is TD else wb).ones(2) / 2)
        with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
            M.MultivariateNormal((torch if M is TD else wb).zeros(2))
        with pytest.raises(ValueError, match="Expected parameter low .* LessThan\\(upper_bound=0.0\\)"):
            M.Uniform(1.0, 0.0)
        with pytest.raises(ValueError, match="Expected reinterpreted_batch_ndims <= len"):
            M.Independent(M.Normal(0.0, 1.0), 1)
        assert M.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    assert messages[:2] == messages[2:]  # word for word, values included
    D.Distribution.set_default_validate_args(False)
    try:
        assert D.Normal(0.0, -1.0).scale.item() == -1.0
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


def test_constraints():
    c = D.constraints
    t = wb.tensor([-1.0, 0.0, 0.5, 1.0, 2.0])
    for name in ["real", "positive", "nonnegative", "unit_interval", "boolean", "nonnegative_integer"]:
        np.testing.assert_array_equal(getattr(c, name).check(t).numpy(),
                                      getattr(TD.constraints, name).check(torch.tensor(t.numpy())).numpy(), name)
    assert bool(c.simplex.check(wb.tensor([0.25, 0.75]))) and not bool(c.simplex.check(wb.tensor([0.5, 0.75])))
    assert bool(c.positive_definite.check(wb.eye(2))) and not bool(c.positive_definite.check(-wb.eye(2)))
    assert bool(c.lower_cholesky.check(wb.tensor(L1)))
    assert c.independent(c.real, 1).event_dim == 1 and c.is_dependent(c.dependent)
    assert bool(c.interval(0, 2).check(wb.tensor(1.0))) and repr(c.interval(0.0, 1.0)) == repr(
        TD.constraints.interval(0.0, 1.0))
    assert D.Categorical(probs=wb.ones(3)).support.check(wb.tensor([0, 2, 3])).tolist() == [True, True, False]


def test_implicit_gamma_gradient_is_exact():
    # dx/dalpha at a fixed quantile u = P(alpha, x), against finite differences of SciPy's inverse
    for a in (0.05, 0.7, 3.0, 40.0, 2000.0):
        x = np.maximum(np.random.default_rng(2).standard_gamma(a, 50), 1e-300)
        g = standard_gamma_grad_array(np, x, np.full_like(x, a))
        u = sp.gammainc(a, x)
        h = 1e-6 * a
        fd = (sp.gammaincinv(a + h, u) - sp.gammaincinv(a - h, u)) / (2 * h)
        ok = np.isfinite(fd) & (u > 1e-10) & (u < 1 - 1e-10)
        np.testing.assert_allclose(g[ok], fd[ok], rtol=1e-6)
        # PyTorch's approximation agrees to its own accuracy (~1e-3)
        tg = torch._standard_gamma_grad(torch.tensor(np.full_like(x, a)), torch.tensor(x)).numpy()
        np.testing.assert_allclose(g[ok], tg[ok], rtol=2e-3)


@pytest.mark.parametrize("name,make,fn,analytic", [
    ("Gamma mean", lambda a, b: D.Gamma(a, b), lambda s: s, lambda a, b: (1 / b, -a / b ** 2)),
    ("Beta mean", lambda a, b: D.Beta(a, b), lambda s: s, lambda a, b: (b / (a + b) ** 2, -a / (a + b) ** 2)),
    ("Normal second moment", lambda a, b: D.Normal(a, b), lambda s: s ** 2, lambda a, b: (2 * a, 2 * b)),
    ("Dirichlet first mean", lambda a, b: D.Dirichlet(wb.stack([a, b])), lambda s: s[..., 0],
     lambda a, b: (b / (a + b) ** 2, -a / (a + b) ** 2)),
    ("Laplace mean", lambda a, b: D.Laplace(a, b), lambda s: s, lambda a, b: (1.0, 0.0)),
])
def test_pathwise_gradients_match_analytic_expectations(name, make, fn, analytic):
    wb.manual_seed(3)
    a = wb.tensor(1.7, dtype=wb.float64, requires_grad=True)
    b = wb.tensor(2.3, dtype=wb.float64, requires_grad=True)
    d = make(a, b)
    assert d.has_rsample
    s = d.rsample((40000,))
    ga, gb = wb.autograd.grad(fn(s).mean(), [a, b])
    want_a, want_b = analytic(1.7, 2.3)
    assert ga.item() == pytest.approx(want_a, abs=0.03 * max(1, abs(want_a)))
    assert gb.item() == pytest.approx(want_b, abs=0.03 * max(1, abs(want_b)))


def test_rsample_gradients_flow_for_every_reparameterized_family():
    for make in [lambda p: D.Normal(p, p), lambda p: D.Gamma(p, p), lambda p: D.Beta(p, p),
                 lambda p: D.Dirichlet(wb.stack([p, p * 2])), lambda p: D.Exponential(p), lambda p: D.Laplace(p, p),
                 lambda p: D.Uniform(p - 1, p), lambda p: D.StudentT(p + 2, p, p), lambda p: D.Cauchy(p, p),
                 lambda p: D.LogNormal(p, p), lambda p: D.Chi2(p), lambda p: D.RelaxedBernoulli(wb.tensor(0.5), p / 3),
                 lambda p: D.RelaxedOneHotCategorical(wb.tensor(0.5), logits=wb.stack([p, -p])),
                 lambda p: D.MultivariateNormal(wb.stack([p, p]), scale_tril=wb.eye(2) * p),
                 lambda p: D.Independent(D.Normal(wb.stack([p, p]), p), 1), lambda p: D.HalfNormal(p)]:
        p = wb.tensor(1.3, requires_grad=True)
        d = make(p)
        assert d.has_rsample, type(d)
        (g,) = wb.autograd.grad(d.rsample((5,)).pow(2).sum(), p)
        assert np.isfinite(g.item()) and g.item() != 0, type(d)
    with pytest.raises(NotImplementedError):
        D.Bernoulli(0.5).rsample()


def test_on_the_fake_gpu(fake_cuda):
    loc = wb.zeros(3, device="cuda", requires_grad=True)
    d = D.Normal(loc, 1.0)
    s = d.rsample((4,))
    assert s.device.type == "cuda" and d.log_prob(s).device.type == "cuda"
    c = wb.ones(3, device="cuda", requires_grad=True)
    g = D.Gamma(c, 1.0).rsample()
    assert g.device.type == "cuda"
    g.sum().backward()
    assert c.grad.device.type == "cuda"
    assert D.Categorical(logits=wb.zeros(2, 4, device="cuda")).sample((3,)).device.type == "cuda"
    assert D.Poisson(wb.ones(2, device="cuda")).sample().device.type == "cuda"
