"""quantile/nanquantile and cov/corrcoef against PyTorch: every interpolation, dim/keepdim, q as a number
and as a tensor, NaN handling, weights, gradients (float64 gradcheck and against PyTorch's), and the errors."""
import numpy as np
import pytest
import torch

import workbench as wb

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 7))
XN = X.copy()
AW = RNG.random(7)
XN[0, 2] = XN[2, [1, 4]] = np.nan
XN[1, :] = np.nan


def _close(w, t):
    np.testing.assert_allclose(w.detach().numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-12, equal_nan=True)
    assert tuple(w.shape) == tuple(t.shape)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (None, True), (1, False), (0, True), (-1, True)])
@pytest.mark.parametrize("q", [0.3, [0.0, 0.25, 0.5, 0.9, 1.0]])
def test_quantile_matches_pytorch(interpolation, dim, keepdim, q):
    for fn, data in (("quantile", X), ("nanquantile", XN), ("quantile", XN)):
        got = []
        for m in (wb, torch):
            qq = m.tensor(q, dtype=m.float64) if isinstance(q, list) else q
            got.append(getattr(m, fn)(m.tensor(data), qq, dim, keepdim, interpolation=interpolation))
        _close(*got)


def test_quantile_method_gradient_and_out():
    x = wb.tensor(X, requires_grad=True)
    assert wb.autograd.gradcheck(lambda t: t.quantile(wb.tensor([0.2, 0.7], dtype=wb.float64), dim=1), (x,))
    t = torch.tensor(X, requires_grad=True)
    wb.quantile(x, 0.4).backward()
    torch.quantile(t, 0.4).backward()
    _close(x.grad, t.grad)
    o = wb.empty(0, dtype=wb.float64)
    assert wb.nanquantile(wb.tensor(XN), 0.5, out=o) is o
    assert wb.tensor(X).nanquantile(0.5, dim=0).shape == (7,)


@pytest.mark.parametrize("bad", [lambda m: m.quantile(m.arange(3), 0.5), lambda m: m.quantile(m.arange(3.0), 1.5),
                                 lambda m: m.quantile(m.arange(3.0), m.tensor([0.5], dtype=m.float64)),
                                 lambda m: m.quantile(m.arange(3.0), 0.5, interpolation="cubic"),
                                 lambda m: m.quantile(m.empty(0), 0.5),
                                 lambda m: m.quantile(m.arange(3.0), m.tensor([[0.5]]))])
def test_quantile_errors(bad):
    with pytest.raises(RuntimeError):
        bad(torch)
    with pytest.raises(RuntimeError, match="quantile"):
        bad(wb)


COV_CASES = [
    ("plain", lambda m: m.cov(m.tensor(X))),
    ("1-D", lambda m: m.cov(m.tensor(X[0]))),
    ("integers", lambda m: m.cov(m.tensor([[0, 1, 2], [2, 1, 5]]))),
    ("correction 0", lambda m: m.cov(m.tensor(X), correction=0)),
    ("fweights", lambda m: m.cov(m.tensor(X), fweights=m.tensor([1, 2, 1, 3, 1, 1, 2]))),
    ("aweights", lambda m: m.cov(m.tensor(X), aweights=m.tensor(AW))),
    ("both", lambda m: m.cov(m.tensor(X), fweights=m.tensor([1, 2, 1, 3, 1, 1, 2]),
                             aweights=m.tensor(np.linspace(0.1, 1, 7)))),
    ("corrcoef", lambda m: m.corrcoef(m.tensor(X))),
    ("corrcoef 1-D", lambda m: m.corrcoef(m.tensor(X[1]))),
    ("method", lambda m: m.tensor(X).cov(correction=2)),
]


@pytest.mark.parametrize("name,call", COV_CASES, ids=[c[0] for c in COV_CASES])
def test_cov_matches_pytorch(name, call):
    w, t = call(wb), call(torch)
    assert str(w.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(w.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


def test_cov_gradient():
    x = wb.tensor(X, requires_grad=True)
    assert wb.autograd.gradcheck(lambda t: wb.corrcoef(t), (x,))
    assert wb.autograd.gradcheck(lambda t: wb.cov(t, aweights=wb.tensor(np.linspace(0.1, 1, 7))), (x,))


@pytest.mark.parametrize("bad", [lambda m: m.cov(m.ones(2, 2, 2)),
                                 lambda m: m.cov(m.ones(2, 3), fweights=m.tensor([1.0, 2, 3])),
                                 lambda m: m.cov(m.ones(2, 3), fweights=m.tensor([1, -2, 3])),
                                 lambda m: m.cov(m.ones(2, 3), aweights=m.tensor([1.0, 2])),
                                 lambda m: m.cov(m.ones(2, 3), aweights=m.tensor([1.0, -2, 1]))])
def test_cov_errors(bad):
    with pytest.raises(RuntimeError):
        bad(torch)
    with pytest.raises(RuntimeError, match="cov"):
        bad(wb)


def test_cov_without_degrees_of_freedom_warns():
    for m in (wb, torch):
        with pytest.warns(UserWarning, match="degrees of freedom"):
            r = m.cov(m.tensor([[1.0, 2.0]]), correction=2)
        assert r.shape == () and np.isinf(r.item())
