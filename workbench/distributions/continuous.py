"""The continuous univariate families and Dirichlet: Normal, Uniform, Laplace, Exponential, Gamma, Chi2, Beta,
Dirichlet, StudentT, Cauchy, FisherSnedecor, GeneralizedPareto, VonMises, ContinuousBernoulli (PyTorch's formulas, so values agree to rounding)."""
import math
import numbers

import workbench as _wb
from workbench.ops.sampling import standard_gamma

from . import constraints
from .distribution import Distribution, ExponentialFamily
from .utils import _eps, _tiny, broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))


def _num(*xs):
    return all(isinstance(x, numbers.Number) for x in xs)


def _expand(self, cls, batch_shape, _instance, names, extra=None):
    new = self._get_checked_instance(cls, _instance)
    batch_shape = _wb.Size(batch_shape)
    for n in names:
        setattr(new, n, getattr(self, n).expand(batch_shape))
    if extra:
        extra(new, batch_shape)
    Distribution.__init__(new, batch_shape, validate_args=False)
    new._validate_args = self._validate_args
    return new


def _rand(shape, like):
    return _wb.rand(tuple(shape), dtype=like.dtype, device=like.device)


class Normal(ExponentialFamily):
    """The normal distribution N(loc, scale**2).

    >>> import workbench as wb
    >>> d = wb.distributions.Normal(0.0, 1.0)
    >>> d.log_prob(wb.tensor(0.0))
    tensor(-0.9189)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = () if _num(loc, scale) else self.loc.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand(self, Normal, batch_shape, _instance, ("loc", "scale"))

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with _wb.no_grad():
            return _wb.normal(self.loc.expand(shape), self.scale.expand(shape))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _wb.randn(tuple(shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - _LOG_SQRT_2PI

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + _wb.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * _wb.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + _wb.log(self.scale)

    @property
    def _natural_params(self):
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * _wb.log(-math.pi / y)


class Uniform(Distribution):
    """The uniform distribution on [low, high).

    >>> import workbench as wb
    >>> wb.distributions.Uniform(0.0, 4.0).entropy()
    tensor(1.3863)
    """

    has_rsample = True

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return float("nan") * self.high

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        batch_shape = () if _num(low, high) else self.low.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand(self, Uniform, batch_shape, _instance, ("low", "high"))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.low + _rand(shape, self.low) * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).to(self.low.dtype)
        ub = self.high.gt(value).to(self.low.dtype)
        return _wb.log(lb.mul(ub)) - _wb.log(self.high - self.low)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return _wb.log(self.high - self.low)


class Laplace(Distribution):
    """The Laplace distribution with location loc and scale b.  >>> wb.distributions.Laplace(0., 1.).variance  ->  tensor(2.)"""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2 ** 0.5) * self.scale

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = () if _num(loc, scale) else self.loc.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand(self, Laplace, batch_shape, _instance, ("loc", "scale"))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _eps(self.loc.dtype)
        u = _rand(shape, self.loc) * (2 - eps) + (eps - 1)  # uniform on [eps - 1, 1)
        return self.loc - self.scale * u.sign() * _wb.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -_wb.log(2 * self.scale) - _wb.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * _wb.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * _wb.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + _wb.log(2 * self.scale)


class Exponential(ExponentialFamily):
    """The exponential distribution with rate lambda.  >>> wb.distributions.Exponential(2.0).mean  ->  tensor(0.5000)"""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return _wb.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = () if isinstance(rate, numbers.Number) else self.rate.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand(self, Exponential, batch_shape, _instance, ("rate",))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        e = _wb.empty(tuple(shape), dtype=self.rate.dtype, device=self.rate.device).exponential_()
        return e / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - _wb.exp(-self.rate * value)

    def icdf(self, value):
        return -_wb.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - _wb.log(self.rate)

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -_wb.log(-x)


class Gamma(ExponentialFamily):
    """The gamma distribution with shape concentration and rate; rsample has exact implicit gradients.

    >>> import workbench as wb
    >>> wb.distributions.Gamma(2.0, 0.5).mean
    tensor(4.)
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        batch_shape = () if _num(concentration, rate) else self.concentration.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand(self, Gamma, batch_shape, _instance, ("concentration", "rate"))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        with _wb.no_grad():
            value.clamp_(min=_tiny(value.dtype))
        return value

    def log_prob(self, value):
        value = _wb.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (_wb.xlogy(self.concentration, self.rate) + _wb.xlogy(self.concentration - 1, value)
                - self.rate * value - _wb.lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - _wb.log(self.rate) + _wb.lgamma(self.concentration)
                + (1.0 - self.concentration) * _wb.digamma(self.concentration))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return _wb.special.gammainc(self.concentration, self.rate * value)

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return _wb.lgamma(x + 1) + (x + 1) * _wb.log(-y.reciprocal())


class Chi2(Gamma):
    """The chi-squared distribution with df degrees of freedom: Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        df, = broadcast_all(df) if not isinstance(df, _wb.Tensor) else (df,)
        super().__init__(0.5 * df, _wb.full_like(df, 0.5), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self):
        return self.concentration * 2


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution on the simplex; rsample normalizes gamma draws (exact implicit gradients).

    >>> import workbench as wb
    >>> wb.distributions.Dirichlet(wb.tensor([1.0, 3.0])).mean
    tensor([0.2500, 0.7500])
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = _wb.Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        gammas = standard_gamma(self.concentration.expand(shape))
        return gammas / gammas.sum(-1, keepdim=True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (_wb.xlogy(self.concentration - 1.0, value).sum(-1) + _wb.lgamma(self.concentration.sum(-1))
                - _wb.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        cm1 = (self.concentration - 1).clamp(min=0.0)
        mode = cm1 / cm1.sum(-1, True)
        mask = (self.concentration < 1).all(dim=-1, keepdim=True)
        onehot = _wb.nn.functional.one_hot(mode.argmax(dim=-1), cm1.shape[-1]).to(mode.dtype)
        return _wb.where(mask, onehot, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (_wb.lgamma(self.concentration).sum(-1) - _wb.lgamma(a0) - (k - a0) * _wb.digamma(a0)
                - ((self.concentration - 1.0) * _wb.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - _wb.lgamma(x.sum(-1))


class Beta(ExponentialFamily):
    """The beta distribution on [0, 1] (a two-component Dirichlet, as in PyTorch).

    >>> import workbench as wb
    >>> wb.distributions.Beta(2.0, 2.0).mean
    tensor(0.5000)
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if _num(concentration1, concentration0):
            c = _wb.tensor([float(concentration1), float(concentration0)])
        else:
            c1, c0 = broadcast_all(concentration1, concentration0)
            c = _wb.stack([c1, c0], -1)
        self._dirichlet = Dirichlet(c, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = _wb.Size(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = _wb.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return _wb.lgamma(x) + _wb.lgamma(y) - _wb.lgamma(x + y)


class StudentT(Distribution):
    """Student's t distribution with df degrees of freedom, location loc and scale.

    >>> import workbench as wb
    >>> wb.distributions.StudentT(3.0).variance
    tensor(3.)
    """

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        return _wb.where(self.df <= 1, float("nan"), self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        v = self.scale.pow(2) * df / (df - 2).where(df > 2, 1.0)
        v = _wb.where(df > 2, v, _wb.where(df > 1, float("inf"), float("nan")))
        return v

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        def extra(new, shape):
            new._chi2 = self._chi2.expand(shape)

        return _expand(self, StudentT, batch_shape, _instance, ("df", "loc", "scale"), extra)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = _wb.randn(tuple(shape), dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        y = x * _wb.rsqrt(z / self.df)
        return self.loc + self.scale * y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + _wb.lgamma(0.5 * self.df)
             - _wb.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * _wb.log1p(y ** 2.0 / self.df) - z

    def entropy(self):
        lbeta = _wb.lgamma(0.5 * self.df) + math.lgamma(0.5) - _wb.lgamma(0.5 * (self.df + 1))
        return (self.scale.log() + 0.5 * (self.df + 1) * (_wb.digamma(0.5 * (self.df + 1))
                                                          - _wb.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)


class Cauchy(Distribution):
    """The Cauchy distribution (no mean or variance).  >>> wb.distributions.Cauchy(0., 1.).cdf(wb.tensor(0.))  ->  tensor(0.5000)"""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = () if _num(loc, scale) else self.loc.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand(self, Cauchy, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return _wb.full(tuple(self._extended_shape()), float("nan"), dtype=self.loc.dtype, device=self.loc.device)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return _wb.full(tuple(self._extended_shape()), float("inf"), dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _wb.tan(math.pi * (_rand(shape, self.loc) - 0.5))
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return _wb.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return _wb.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


class FisherSnedecor(Distribution):
    """Fisher-Snedecor's F distribution: (Chi2(df1) / df1) / (Chi2(df2) / df2).  >>> wb.distributions.FisherSnedecor(4., 6.).mean  ->  tensor(1.5000)"""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        batch_shape = () if _num(df1, df2) else self.df1.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        def extra(new, shape):
            new._gamma1 = self._gamma1.expand(shape)
            new._gamma2 = self._gamma2.expand(shape)

        return _expand(self, FisherSnedecor, batch_shape, _instance, ("df1", "df2"), extra)

    @property
    def mean(self):
        df2 = _wb.where(self.df2 <= 2, float("nan"), self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return _wb.where(self.df1 <= 2, float("nan"), mode)

    @property
    def variance(self):
        df2 = _wb.where(self.df2 <= 4, float("nan"), self.df2)
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        x1 = self._gamma1.rsample(sample_shape).reshape(shape)
        x2 = self._gamma2.rsample(sample_shape).reshape(shape)
        tiny = _tiny(x2.dtype)
        return (x1 / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1, ct2 = self.df1 * 0.5, self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * _wb.log(value)
        t3 = (ct1 + ct2) * _wb.log1p(ct3 * value)
        return t1 + t2 - t3


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution (peaks over thresholds).  >>> wb.distributions.GeneralizedPareto(0., 1., 0.).mean  ->  tensor(1.)"""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        batch_shape = () if _num(loc, scale, concentration) else self.loc.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand(self, GeneralizedPareto, batch_shape, _instance, ("loc", "scale", "concentration"))

    def _safe(self):
        eq_zero = _wb.isclose(self.concentration, _wb.zeros_like(self.concentration))
        return eq_zero, _wb.where(eq_zero, 1.0, self.concentration)

    def rsample(self, sample_shape=()):
        return self.icdf(_rand(self._extended_shape(sample_shape), self.loc))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, safe = self._safe()
        y = 1 / safe + _wb.ones_like(z)
        where_nonzero = _wb.where(y == 0, y, y * _wb.log1p(safe * z))
        return -self.scale.log() - _wb.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, safe = self._safe()
        return _wb.where(eq_zero, -z, -_wb.log1p(safe * z) / safe)

    def log_cdf(self, value):
        return _wb.log1p(-_wb.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return _wb.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, safe = self._safe()
        logu = _wb.log1p(-value)
        return _wb.where(eq_zero, self.loc - self.scale * logu,
                         self.loc + self.scale / safe * _wb.expm1(-safe * logu))

    @property
    def mean(self):
        valid = self.concentration < 1
        safe = _wb.where(valid, self.concentration, 0.5)
        return _wb.where(valid, self.loc + self.scale / (1 - safe), float("nan"))

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe = _wb.where(valid, self.concentration, 0.25)
        return _wb.where(valid, self.scale ** 2 / ((1 - safe) ** 2 * (1 - 2 * safe)), float("nan"))

    def entropy(self):
        return (_wb.log(self.scale) + self.concentration + 1).broadcast_to(tuple(self._batch_shape))

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = _wb.where(self.concentration < 0, lower - self.scale / self.concentration, float("inf"))
        return constraints.interval(lower, upper)


def _log_i0(x):
    # log I0(x) = log(i0e(x)) + |x|, exact to rounding (PyTorch uses a float32-grade polynomial here)
    return _wb.special.i0e(x).log() + x.abs()


class VonMises(Distribution):
    """The von Mises distribution on the circle (mean direction loc, concentration kappa); samples by
    Best and Fisher's rejection scheme in float64.

    >>> import workbench as wb
    >>> wb.distributions.VonMises(0.0, 1.0).log_prob(wb.tensor(0.0))
    tensor(-1.0738)
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, (), validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand(self, VonMises, batch_shape, _instance, ("loc", "concentration"))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * _wb.cos(value - self.loc) - math.log(2 * math.pi)
                - _log_i0(self.concentration))

    def _proposal_r(self, kappa):
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        return _wb.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho ** 2) / (2 * rho))

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with _wb.no_grad():
            loc = self.loc.detach().double().expand(shape)
            kappa = self.concentration.detach().double().expand(shape)
            r = self._proposal_r(kappa)
            x = _wb.zeros(shape, dtype=_wb.float64, device=loc.device)
            done = _wb.zeros(shape, dtype=_wb.bool, device=loc.device)
            while not bool(done.all()):
                u1, u2, u3 = _wb.rand((3,) + shape, dtype=_wb.float64, device=loc.device).unbind()
                z = _wb.cos(math.pi * u1)
                f = (1 + r * z) / (r + z)
                c = kappa * (r - f)
                accept = ((c * (2 - c) - u2 > 0) | ((c / u2).log() + 1 - c >= 0)) & ~done
                x = _wb.where(accept, (u3 - 0.5).sign() * f.acos(), x)
                done = done | accept
            return ((x + math.pi + loc) % (2 * math.pi) - math.pi).to(self.loc.dtype)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return 1 - _wb.special.i1e(self.concentration) / _wb.special.i0e(self.concentration)


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli distribution on [0, 1] (Loaiza-Ganem and Cunningham 2019), with a Taylor
    expansion of its normalizer near probs = 0.5 (``lims``), as PyTorch.

    >>> import workbench as wb
    >>> wb.distributions.ContinuousBernoulli(probs=wb.tensor(0.2)).mean
    tensor(0.3880)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, numbers.Number)
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, numbers.Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        super().__init__(() if is_scalar else self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = _wb.Size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _outside_unstable_region(self):
        return _wb.le(self.probs, self._lims[0]) | _wb.gt(self.probs, self._lims[1])

    def _cut_probs(self):
        return _wb.where(self._outside_unstable_region(), self.probs, self._lims[0])

    def _cont_bern_log_norm(self):
        cut = self._cut_probs()
        below = _wb.where(cut <= 0.5, cut, 0.0)
        above = _wb.where(cut >= 0.5, cut, 1.0)
        log_norm = (_wb.log(_wb.abs(_wb.log1p(-cut) - _wb.log(cut)))
                    - _wb.where(cut <= 0.5, _wb.log1p(-2.0 * below), _wb.log(2.0 * above - 1.0)))
        x = (self.probs - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return _wb.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (_wb.log1p(-cut) - _wb.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x ** 2) * x
        return _wb.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return _wb.sqrt(self.variance)

    @property
    def variance(self):
        cut = self._cut_probs()
        vs = cut * (cut - 1.0) / (1.0 - 2.0 * cut) ** 2 + 1.0 / (_wb.log1p(-cut) - _wb.log(cut)) ** 2
        x = (self.probs - 0.5) ** 2
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return _wb.where(self._outside_unstable_region(), vs, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.shape

    def sample(self, sample_shape=()):
        u = _rand(self._extended_shape(sample_shape), self.probs)
        with _wb.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=()):
        return self.icdf(_rand(self._extended_shape(sample_shape), self.probs))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        bce = _wb.nn.functional.binary_cross_entropy_with_logits(logits, value, reduction="none")
        return -bce + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut ** value * (1.0 - cut) ** (1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = _wb.where(self._outside_unstable_region(), cdfs, value)
        return _wb.where(value <= 0.0, 0.0, _wb.where(value >= 1.0, 1.0, unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        inv = (_wb.log1p(-cut + value * (2.0 * cut - 1.0)) - _wb.log1p(-cut)) / (_wb.log(cut) - _wb.log1p(-cut))
        return _wb.where(self._outside_unstable_region(), inv, value)

    def entropy(self):
        log_probs0 = _wb.log1p(-self.probs)
        log_probs1 = _wb.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        out = _wb.le(x, self._lims[0] - 0.5) | _wb.gt(x, self._lims[1] - 0.5)
        cut = _wb.where(out, x, self._lims[0] - 0.5)
        log_norm = _wb.log(_wb.abs(_wb.expm1(cut))) - _wb.log(_wb.abs(cut))
        taylor = 0.5 * x + x ** 2 / 24.0 - x ** 4 / 2880.0
        return _wb.where(out, log_norm, taylor)
