"""``workbench.distributions``: PyTorch's ``torch.distributions``.

Families with sample/rsample/log_prob/entropy/cdf/icdf/mean/mode/variance, batch and event shapes,
``expand``, ``support`` and ``arg_constraints`` with validation (ValueError, PyTorch's messages), KL
divergences with ``register_kl``, transforms and TransformedDistribution. Reparameterized samples carry
gradients; Gamma, Chi2, Beta, Dirichlet and StudentT use exact implicit gradients of the gamma draw
(workbench/ops/sampling.py). Formulas follow PyTorch's, so values agree to rounding.

>>> import workbench as wb
>>> D = wb.distributions
>>> loc = wb.tensor(0.0, requires_grad=True)
>>> x = D.Normal(loc, 1.0).rsample((1000,))
>>> x.mean().backward(); round(loc.grad.item(), 6)
1.0
"""
import sys
import types

from . import constraint_registry, constraints, transforms
from .constraint_registry import biject_to, transform_to
from .continuous import (Beta, Cauchy, Chi2, ContinuousBernoulli, Dirichlet, Exponential, FisherSnedecor, Gamma,
                         GeneralizedPareto, Laplace, Normal, StudentT, Uniform, VonMises)
from .discrete import (Bernoulli, Binomial, Categorical, Geometric, Multinomial, NegativeBinomial, OneHotCategorical,
                       OneHotCategoricalStraightThrough, Poisson)
from .distribution import Distribution, ExponentialFamily
from .kl import kl_divergence, register_kl
from .mixture_same_family import MixtureSameFamily
from .multivariate_normal import LKJCholesky, LowRankMultivariateNormal, MultivariateNormal, Wishart
from .transformed_distribution import (ExpRelaxedCategorical, Gumbel, HalfCauchy, HalfNormal, Independent, InverseGamma,
                                       Kumaraswamy, LogisticNormal, LogitRelaxedBernoulli, LogNormal, Pareto, RelaxedBernoulli,
                                       RelaxedOneHotCategorical, TransformedDistribution, Weibull)
from .transforms import (AbsTransform, AffineTransform, CatTransform, ComposeTransform, CorrCholeskyTransform,
                         CumulativeDistributionTransform, PositiveDefiniteTransform, StackTransform,
                         ExpTransform, IndependentTransform, LowerCholeskyTransform, PowerTransform, ReshapeTransform, SigmoidTransform,
                         SoftmaxTransform, SoftplusTransform, StickBreakingTransform, TanhTransform, Transform,
                         identity_transform)

# PyTorch's one-module-per-family paths (from torch.distributions.normal import Normal)
_ALIASES = {"bernoulli": [Bernoulli], "beta": [Beta], "binomial": [Binomial], "categorical": [Categorical],
            "cauchy": [Cauchy], "chi2": [Chi2], "dirichlet": [Dirichlet], "exp_family": [ExponentialFamily],
            "exponential": [Exponential], "gamma": [Gamma], "geometric": [Geometric], "gumbel": [Gumbel],
            "half_normal": [HalfNormal], "independent": [Independent], "laplace": [Laplace],
            "log_normal": [LogNormal], "normal": [Normal], "one_hot_categorical": [OneHotCategorical, OneHotCategoricalStraightThrough],
            "poisson": [Poisson], "relaxed_bernoulli": [LogitRelaxedBernoulli, RelaxedBernoulli],
            "relaxed_categorical": [ExpRelaxedCategorical, RelaxedOneHotCategorical], "studentT": [StudentT],
            "uniform": [Uniform], "half_cauchy": [HalfCauchy], "pareto": [Pareto], "weibull": [Weibull],
            "inverse_gamma": [InverseGamma], "fishersnedecor": [FisherSnedecor],
            "generalized_pareto": [GeneralizedPareto], "von_mises": [VonMises],
            "continuous_bernoulli": [ContinuousBernoulli], "lowrank_multivariate_normal": [LowRankMultivariateNormal],
            "lkj_cholesky": [LKJCholesky], "wishart": [Wishart], "kumaraswamy": [Kumaraswamy], "logistic_normal": [LogisticNormal], "multinomial": [Multinomial], "negative_binomial": [NegativeBinomial]}


def _alias_modules():
    for name, classes in _ALIASES.items():
        mod = types.ModuleType(f"{__name__}.{name}", f"PyTorch's torch.distributions.{name} path.")
        for cls in classes:
            setattr(mod, cls.__name__, cls)
        mod.__all__ = [c.__name__ for c in classes]
        sys.modules[mod.__name__] = mod
        globals()[name] = mod


_alias_modules()

__all__ = ["Wishart", "LKJCholesky", "CatTransform", "CorrCholeskyTransform", "PositiveDefiniteTransform", "StackTransform",
           "ContinuousBernoulli", "LowRankMultivariateNormal", "VonMises", "FisherSnedecor", "GeneralizedPareto", "Kumaraswamy", "LogisticNormal", "AbsTransform", "AffineTransform",
           "Bernoulli", "HalfCauchy", "InverseGamma", "LowerCholeskyTransform",
           "Multinomial", "NegativeBinomial", "OneHotCategoricalStraightThrough", "Pareto", "Weibull", "biject_to",
           "constraint_registry", "transform_to", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2",
           "ComposeTransform", "CumulativeDistributionTransform", "Dirichlet", "Distribution",
           "ExpRelaxedCategorical", "ExpTransform", "Exponential", "ExponentialFamily", "Gamma", "Geometric",
           "Gumbel", "HalfNormal", "Independent", "IndependentTransform", "Laplace", "LogNormal",
           "LogitRelaxedBernoulli", "MixtureSameFamily", "MultivariateNormal", "Normal", "OneHotCategorical",
           "Poisson", "PowerTransform", "RelaxedBernoulli", "RelaxedOneHotCategorical", "ReshapeTransform",
           "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform", "StickBreakingTransform", "StudentT",
           "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "constraints", "identity_transform",
           "kl_divergence", "register_kl", "transforms"]
