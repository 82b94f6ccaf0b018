"""Sampling functions and in-place samplers against PyTorch: result dtypes and shapes, the moments of large
samples (against the distribution's exact moments, as PyTorch's own tests do: the streams differ), the
error types for bad parameters, and out= of the factories."""

import numpy as np
import pytest
import torch

import workbench as wb

N = 20000


def _both(fn):
    return fn(wb), fn(torch)


def test_tensor_bernoulli_method_and_p():
    wb.manual_seed(0)
    probs = wb.full((N,), 0.3)
    for draw in (probs.bernoulli(), probs.bernoulli(0.8), wb.bernoulli(probs)):
        assert draw.dtype is wb.float32 and draw.shape == (N,)
        assert set(draw.unique().tolist()) <= {0.0, 1.0}
    assert abs(probs.bernoulli().mean().item() - 0.3) < 0.02
    assert abs(probs.bernoulli(0.8).mean().item() - 0.8) < 0.02
    g1, g2 = wb.Generator().manual_seed(3), wb.Generator().manual_seed(3)
    assert wb.equal(probs.bernoulli(generator=g1), probs.bernoulli(generator=g2))
    w, t = _both(lambda m: m.tensor([0.0, 1.0], dtype=m.float64).bernoulli())
    assert str(w.dtype).split(".")[-1] == str(t.dtype).split(".")[-1] == "float64"
    assert w.tolist() == t.tolist() == [0.0, 1.0]


@pytest.mark.parametrize("bad", [lambda m: m.tensor([1.5]).bernoulli(), lambda m: m.tensor([-0.1]).bernoulli(),
                                 lambda m: m.tensor([0.5]).bernoulli(2.0)])
def test_bernoulli_rejects_probabilities_outside_0_1(bad):
    with pytest.raises(RuntimeError):
        bad(torch)
    with pytest.raises(RuntimeError, match="bernoulli"):
        bad(wb)


def test_bernoulli_of_integers_raises_as_pytorch():
    with pytest.raises(NotImplementedError):
        torch.tensor([1, 0]).bernoulli()
    with pytest.raises(NotImplementedError, match="float"):
        wb.tensor([1, 0]).bernoulli()


def test_multinomial_method():
    wb.manual_seed(0)
    probs = wb.tensor([[0.0, 1.0, 3.0], [5.0, 0.0, 0.0]])
    draw = probs.multinomial(2000, replacement=True)
    assert draw.dtype is wb.int64 and draw.shape == (2, 2000)
    assert (draw[1] == 0).all() and not (draw[0] == 0).any()
    assert abs((draw[0] == 2).float().mean().item() - 0.75) < 0.03
    assert sorted(probs[0].multinomial(2).tolist()) == [1, 2]


def test_poisson_and_binomial():
    wb.manual_seed(0)
    rates = wb.full((N,), 3.5)
    w = wb.poisson(rates)
    t = torch.poisson(torch.full((N,), 3.5))
    assert w.dtype is wb.float32 and t.dtype is torch.float32
    assert abs(w.mean().item() - 3.5) < 0.05 and abs(w.var().item() - 3.5) < 0.15
    assert (w == w.round()).all()
    b = wb.binomial(wb.full((N,), 10.0), wb.full((N,), 0.25))
    assert b.dtype is wb.float32 and abs(b.mean().item() - 2.5) < 0.05 and b.max().item() <= 10
    with pytest.raises(RuntimeError):
        torch.poisson(torch.tensor([-1.0]))
    with pytest.raises(RuntimeError, match="rate"):
        wb.poisson(wb.tensor([-1.0]))
    with pytest.raises(ValueError):
        torch.binomial(torch.tensor([10]), torch.tensor([0.5]))
    with pytest.raises(ValueError, match="count"):
        wb.binomial(wb.tensor([10]), wb.tensor([0.5]))


def test_geometric_log_normal_cauchy_in_place():
    wb.manual_seed(0)
    x = wb.empty(N)
    assert x.geometric_(0.25) is x
    assert x.min().item() >= 1 and abs(x.mean().item() - 4.0) < 0.1      # mean 1/p
    x.log_normal_(0.5, 0.25)
    assert abs(x.log().mean().item() - 0.5) < 0.01 and abs(x.log().std().item() - 0.25) < 0.01
    x.cauchy_(2.0, 0.5)
    assert abs(x.median().item() - 2.0) < 0.03                                  # the median is the location
    q1, q3 = np.quantile(x.numpy(), [0.25, 0.75])
    assert abs((q3 - q1) / 2 - 0.5) < 0.03                                       # half the IQR is the scale
    w, t = _both(lambda m: m.empty(3, dtype=m.int64).geometric_(0.5))
    assert w.dtype is wb.int64 and t.dtype is torch.int64


@pytest.mark.parametrize("bad", [lambda m: m.empty(3).geometric_(0.0), lambda m: m.empty(3).log_normal_(1, 0),
                                 lambda m: m.empty(3).cauchy_(0, -1),
                                 lambda m: m.empty(3, dtype=m.int64).cauchy_(),
                                 lambda m: m.empty(3, dtype=m.int64).log_normal_()])
def test_sampler_errors_match_pytorch(bad):
    with pytest.raises(RuntimeError):
        bad(torch)
    with pytest.raises(RuntimeError):
        bad(wb)


@pytest.mark.parametrize("make", [lambda m, o: m.rand(3, out=o), lambda m, o: m.randn(3, out=o),
                                  lambda m, o: m.normal(0.0, 1.0, (3,), out=o),
                                  lambda m, o: m.bernoulli(m.full((3,), 0.5), out=o)])
def test_out_receives_the_samples(make):
    for m in (wb, torch):
        out = m.zeros(3, dtype=m.float64) - 7
        res = make(m, out)
        assert res is out and res.dtype is m.float64 and not (out == -7).any()


def test_out_of_randint_and_randperm():
    for m in (wb, torch):
        o = m.empty(5, dtype=m.int64)
        assert m.randperm(5, out=o) is o and sorted(o.tolist()) == list(range(5))
        assert m.randint(0, 3, (5,), out=o) is o and o.max().item() < 3
        o2 = m.empty(0, dtype=m.int64)
        assert m.multinomial(m.tensor([1.0, 1.0]), 4, True, out=o2) is o2 and o2.shape == (4,)
