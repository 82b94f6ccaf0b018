"""Random numbers: Generator, manual_seed, and the sampling functions (rand, randn, randint...).

Each Generator owns a NumPy PCG64 stream for the CPU and, per CUDA device, a CuPy stream seeded
from it, so samples are drawn where the tensor lives (no host-to-device copy).
"""
import json
import secrets

from . import _backend
from ._backend import dtypes as _dt
from ._core import Tensor
from .autograd.function import Function
from .autograd.grad_mode import STATE, no_grad
from .creation import _size_args
from .creation import _sizes_or_keyword
from ._array_step import array_step
from ._outargs import _out

np = _backend.numpy


class Generator:
    """A random-number stream; pass it as ``generator=`` for reproducible sampling.

    >>> import workbench as wb
    >>> g = wb.Generator().manual_seed(0)
    >>> wb.rand(2, generator=g).shape
    workbench.Size([2])
    """

    def __init__(self, device="cpu"):
        self.device = _backend.device(device) if not isinstance(device, _backend.device) else device
        self._seed = 67280421310721
        self._np = np.random.Generator(np.random.PCG64(self._seed))
        self._gpu = {}

    def manual_seed(self, seed):
        seed = int(seed)
        if seed < 0:
            seed = seed & 0xFFFF_FFFF_FFFF_FFFF
        self._seed = seed
        self._np = np.random.Generator(np.random.PCG64(seed))
        self._gpu = {}
        return self

    def seed(self):
        s = secrets.randbits(63)
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        st = json.dumps(self._np.bit_generator.state).encode()
        return Tensor._make(np.frombuffer(st, dtype=np.uint8).copy())

    def set_state(self, new_state):
        self._np.bit_generator.state = json.loads(bytes(new_state._data.astype(np.uint8)).decode())
        return self

    def _stream(self, dev):
        if dev.type == "cpu":
            return self._np
        rs = self._gpu.get(dev.index)
        if rs is None:
            cp = _backend.cupy()
            with cp.cuda.Device(dev.index):
                rs = self._gpu[dev.index] = cp.random.RandomState(int(self._np.integers(2 ** 63)))
        return rs


default_generator = Generator()


def manual_seed(seed):
    """Seed the default generator (and every CUDA device's).  >>> wb.manual_seed(0); a = wb.rand(2); wb.manual_seed(0); wb.equal(a, wb.rand(2))  ->  True"""
    default_generator.manual_seed(seed)
    return default_generator


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


def _setup(size, dtype, device, generator, default=None):
    shape = _size_args(size, "rand")
    dt = _dt.to_dtype(dtype) if dtype is not None else (default or _dt.get_default_dtype())
    dev = _backend.resolve_device(device) if device is not None else _backend.CPU
    return shape, dt, dev, generator or default_generator


def _done(arr, dt, requires_grad):
    t = Tensor._make(arr.astype(dt.np, copy=False))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _sampled(draw, g, dev, dt, requires_grad):
    """The tensor of ``draw(stream)`` (the generator's stream on ``dev``), drawn inside one array step, so that
    ``workbench.compile`` draws again on each replay from the generator's state then, as eager calls do."""
    def sample():
        if dev.type == "cpu":
            return draw(g._stream(dev)).astype(dt.np, copy=False)
        with _backend.on_device(dev):
            return draw(g._stream(dev)).astype(dt.np, copy=False)

    t = array_step(sample)
    if requires_grad:
        t.requires_grad_(True)
    return t


class _Draw(Function):
    """A sample drawn from tensor parameters. PyTorch's normal, bernoulli and poisson give the parameters a
    zero gradient (the draw is not reparameterised; a distribution's rsample is), so the sample requires grad
    when a parameter does and backward gives each parameter zeros, not None."""

    _raw = True
    op_name = "draw"

    @staticmethod
    def forward(ctx, sample, *params):
        ctx.params = [(p.shape, p.dtype) for p in params]
        return sample

    @staticmethod
    def backward(ctx, g):
        return (None,) + tuple(Tensor._make(ctx.xp.zeros(shape, dt)) for shape, dt in ctx.params)


def _drawn(t, *params):
    """The sample ``t`` as a node of its tensor parameters that require grad (see ``_Draw``)."""
    params = [p for p in params if isinstance(p, Tensor)]
    if STATE.enabled and any(p.requires_grad for p in params):
        return _Draw.apply(t._data, *params)
    return t


def _uniform(rs, dev, shape):
    with _backend.on_device(dev):
        return rs.random(shape) if dev.type == "cpu" else rs.random_sample(shape)


def rand(*sizes, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    """Uniform samples in [0, 1).  >>> wb.rand(2, 3).shape  ->  workbench.Size([2, 3])"""
    shape, dt, dev, g = _setup(_sizes_or_keyword(sizes, size, "rand"), dtype, device, generator)
    return _out(_sampled(lambda rs: _uniform(rs, dev, shape), g, dev, dt, requires_grad), out)


def randn(*sizes, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False):
    """Standard normal samples.  >>> wb.randn(4).shape  ->  workbench.Size([4])"""
    shape, dt, dev, g = _setup(_sizes_or_keyword(sizes, size, "randn"), dtype, device, generator)

    def draw(rs):
        arr = rs.standard_normal(shape)
        return (arr + 1j * rs.standard_normal(shape)) / np.sqrt(2) if dt.is_complex else arr
    return _out(_sampled(draw, g, dev, dt, requires_grad), out)


def randint(low=0, high=None, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
            requires_grad=False):
    """Integers in [low, high).  >>> wb.randint(0, 10, (3,)).dtype  ->  workbench.int64"""
    if size is None:
        if high is None or not isinstance(high, (tuple, list)):
            raise TypeError("randint() missing required argument 'size'")
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    shape, dt, dev, g = _setup((tuple(size),), dtype, device, generator, _dt.int64)
    return _out(_sampled(lambda rs: rs.integers(low, high, shape) if dev.type == "cpu" else rs.randint(low, high, shape),
                         g, dev, dt, requires_grad), out)


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    """A random permutation of 0..n-1.  >>> sorted(wb.randperm(4).tolist())  ->  [0, 1, 2, 3]"""
    shape, dt, dev, g = _setup((), dtype, device, generator, _dt.int64)
    return _out(_sampled(lambda rs: rs.permutation(n), g, dev, dt, requires_grad), out)


def rand_like(input, *, dtype=None, device=None, requires_grad=False, generator=None):
    return rand(*input.shape, dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad, generator=generator)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, generator=None):
    return randn(*input.shape, dtype=dtype or input.dtype, device=device or input.device,
                 requires_grad=requires_grad, generator=generator)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False):
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, device=None,
           requires_grad=False):
    """Normal samples with the given mean and std (numbers or tensors, broadcast).

    >>> import workbench as wb
    >>> wb.normal(wb.zeros(3), 1.0).shape
    workbench.Size([3])
    """
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        like = mean if isinstance(mean, Tensor) else std
        m = mean._data if isinstance(mean, Tensor) else mean
        s = std._data if isinstance(std, Tensor) else std
        g = generator or default_generator
        rs = g._stream(like.device)
        shape = np.broadcast_shapes(getattr(m, "shape", ()), getattr(s, "shape", ()))
        if (np.asarray(s.get() if hasattr(s, "get") else s) < 0).any():
            raise RuntimeError("normal expects all elements of std >= 0.0")
        with _backend.on_device(like.device):
            arr = m + s * rs.standard_normal(shape)
        return _out(_drawn(_done(arr, like.dtype, requires_grad), mean, std), out)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    t = randn(*(size or ()), generator=generator, dtype=dtype, device=device)
    t._data = t._data * std + mean
    t._data = t._data.astype((_dt.to_dtype(dtype) if dtype else _dt.get_default_dtype()).np, copy=False)
    if requires_grad:
        t.requires_grad_(True)
    return _out(t, out)


def bernoulli(input, p=None, *, generator=None, out=None):
    """0/1 samples with probabilities ``input`` (or a fixed p), in input's floating dtype.

    >>> import workbench as wb
    >>> wb.bernoulli(wb.tensor([0.0, 1.0, 1.0]))
    tensor([0., 1., 1.])
    """
    if not input.dtype.is_floating_point and p is None:
        raise NotImplementedError(f"bernoulli: the probabilities must be a floating tensor, got {input.dtype}; "
                                  "convert them first, e.g. probs.float()")
    probs = input._data if p is None else (p._data if isinstance(p, Tensor) else p)
    xp = _backend.xp_of(input._data)
    if not bool(((xp.asarray(probs) >= 0) & (xp.asarray(probs) <= 1)).all()):
        raise RuntimeError("bernoulli: expected every probability p to satisfy 0 <= p <= 1; clamp them first "
                           "(probs.clamp(0, 1)) or pass probabilities, not logits (torch.sigmoid(logits))")
    u = _uniform(_stream_for(input, generator), input.device, tuple(input.shape))
    return _out(_drawn(Tensor._make((u < probs).astype(input._data.dtype)), input, p), out)


def _bernoulli_method(self, p=None, *, generator=None):
    """A 0/1 sample with probability self (or p) per element.  >>> wb.full((2,), 1.0).bernoulli()  ->  tensor([1., 1.])"""
    return bernoulli(self, p, generator=generator)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Sample category indices from (unnormalised) probabilities per row.

    >>> import workbench as wb
    >>> wb.multinomial(wb.tensor([0., 1., 0.]), 2, replacement=True)
    tensor([1, 1])
    """
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    probs = input.detach().cpu()._data.astype(np.float64)
    if (probs < 0).any() or not np.isfinite(probs).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    rows = probs.reshape(-1, probs.shape[-1])
    if not replacement and num_samples > rows.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    g = generator or default_generator
    out_rows = []
    for r in rows:
        tot = r.sum()
        if tot <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if replacement:
            out_rows.append(g._np.choice(len(r), size=num_samples, p=r / tot))
        else:
            if (r > 0).sum() < num_samples:
                raise RuntimeError("invalid multinomial distribution (with replacement=False, not enough "
                                   "non-negative category to sample)")
            out_rows.append(g._np.choice(len(r), size=num_samples, replace=False, p=r / tot))
    res = np.stack(out_rows).astype(np.int64)
    if input.ndim == 1:
        res = res[0]
    return _out(Tensor._make(res).to(input.device), out)


def _multinomial_method(self, num_samples, replacement=False, *, generator=None):
    """Category indices sampled from self's rows.  >>> wb.tensor([0., 1.]).multinomial(1)  ->  tensor([1])"""
    return multinomial(self, num_samples, replacement, generator=generator)


def poisson(input, generator=None):
    """Samples of Poisson(rate) per element of ``input`` (the rates), in input's dtype.

    >>> import workbench as wb
    >>> wb.poisson(wb.tensor([0.0, 0.0]))
    tensor([0., 0.])
    """
    xp = _backend.xp_of(input._data)
    if not bool((input._data >= 0).all()):
        raise RuntimeError("poisson: invalid Poisson rate, expected every rate to be non-negative")
    rs = _stream_for(input, generator)
    with _backend.on_device(input.device):
        arr = rs.poisson(xp.asarray(input._data, dtype=xp.float64))
    return _drawn(Tensor._make(arr.astype(input._data.dtype)), input)


def binomial(count, prob, generator=None):
    """Samples of Binomial(count, prob) per element (float tensors of the same shape).

    >>> import workbench as wb
    >>> wb.binomial(wb.tensor([5.0, 5.0]), wb.tensor([0.0, 1.0]))
    tensor([0., 5.])
    """
    for name, t in (("count", count), ("prob", prob)):
        if not t.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: {t.dtype}; "
                             f"convert it first, e.g. {name}.float()")
    rs = _stream_for(count, generator)
    with _backend.on_device(count.device):
        arr = rs.binomial(count._data.astype("int64"), prob._data.astype("float64"))
    return Tensor._make(arr.astype(count._data.dtype))


# --- in-place sampling methods (nn.init and users' init code call these) ----------------------------
def _fill_from(self, arr, opname):
    with no_grad():
        self._check_inplace(opname)
        self._data[...] = arr.astype(self._data.dtype, copy=False)
        self._bump(opname)
    return self


def _stream_for(self, generator):
    return (generator or default_generator)._stream(self.device)


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with samples of N(mean, std**2), in place.  >>> wb.empty(3).normal_(0, 0.02).shape  ->  workbench.Size([3])"""
    with _backend.on_device(self.device):
        arr = _stream_for(self, generator).standard_normal(tuple(self.shape)) * std + mean
    return _fill_from(self, arr, "normal_")


def uniform_(self, a=0.0, b=1.0, *, generator=None):
    """Fill with samples of U[a, b), in place.  >>> wb.empty(3).uniform_(-1, 1).shape  ->  workbench.Size([3])"""
    rs = _stream_for(self, generator)
    u = _uniform(rs, self.device, tuple(self.shape))
    return _fill_from(self, u * (b - a) + a, "uniform_")


def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 0/1 samples with probability p (a number or a tensor), in place."""
    rs = _stream_for(self, generator)
    probs = p._data if isinstance(p, Tensor) else p
    u = _uniform(rs, self.device, tuple(self.shape))
    return _fill_from(self, u < probs, "bernoulli_")


def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with samples of Exp(lambd), in place."""
    rs = _stream_for(self, generator)
    with _backend.on_device(self.device):
        arr = rs.standard_exponential(tuple(self.shape)) / lambd
    return _fill_from(self, arr, "exponential_")


def _floating_only(self, opname, what):
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"{opname}: {what} is a continuous distribution; the tensor must be floating point, "
                           f"got {self.dtype} (make it with dtype=torch.float32)")


def geometric_(self, p, *, generator=None):
    """Fill with the number of Bernoulli(p) trials up to the first success (1, 2, ...), in place.

    >>> import workbench as wb
    >>> wb.empty(3).geometric_(1.0)
    tensor([1., 1., 1.])
    """
    if not 0 < p <= 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1], but got p={p}")
    rs = _stream_for(self, generator)
    with _backend.on_device(self.device):
        arr = rs.geometric(p, tuple(self.shape))
    return _fill_from(self, arr, "geometric_")


def log_normal_(self, mean=1, std=2, *, generator=None):
    """Fill with exp(N(mean, std**2)) samples (mean and std of the underlying normal), in place.

    >>> import workbench as wb
    >>> bool((wb.empty(4).log_normal_(0.0, 0.5) > 0).all())
    True
    """
    _floating_only(self, "log_normal_", "the log-normal")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    rs = _stream_for(self, generator)
    with _backend.on_device(self.device):
        arr = rs.lognormal(mean, std, tuple(self.shape))
    return _fill_from(self, arr, "log_normal_")


def cauchy_(self, median=0, sigma=1, *, generator=None):
    """Fill with Cauchy(median, sigma) samples, in place.  >>> wb.empty(3).cauchy_(0.0, 1.0).shape  ->  workbench.Size([3])"""
    _floating_only(self, "cauchy_", "the Cauchy")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    rs = _stream_for(self, generator)
    with _backend.on_device(self.device):
        arr = median + sigma * rs.standard_cauchy(tuple(self.shape))
    return _fill_from(self, arr, "cauchy_")


def random_(self, from_=0, to=None, *, generator=None):
    """Fill with integers uniform in [from_, to) (to defaults to the dtype's range), in place."""
    if to is None:
        from_, to = 0, (2 ** 24 if self.dtype.is_floating_point else int(_backend.numpy.iinfo(self._data.dtype).max))
    rs = _stream_for(self, generator)
    with _backend.on_device(self.device):
        arr = rs.integers(from_, to, tuple(self.shape)) if self.device.type == "cpu" else rs.randint(
            from_, to, tuple(self.shape))
    return _fill_from(self, arr, "random_")


# attached to Tensor by the registry in workbench/tensor.py
METHODS = {fn.__name__: fn for fn in (normal_, uniform_, bernoulli_, exponential_, random_, geometric_, log_normal_,
                                      cauchy_)}
METHODS.update(bernoulli=_bernoulli_method, multinomial=_multinomial_method)
