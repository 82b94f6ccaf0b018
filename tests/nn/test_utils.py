"""nn.utils: gradient clipping and parameter/vector conversion against PyTorch."""
import math

import numpy as np
import pytest
import torch

import workbench as wb

from _nn_compare import compare, host, to_torch, to_wb


def _params(lib, grads, device="cpu"):
    ps = []
    for g in grads:
        dev = {"device": device} if lib is wb else {}
        p = (torch.nn.Parameter if lib is torch else wb.nn.Parameter)(lib.tensor(np.zeros_like(g), **dev))
        p.grad = lib.tensor(g.copy(), **dev)
        ps.append(p)
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm, device):
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(5).astype(np.float32)]
    tp, wp = _params(torch, grads), _params(wb, grads, device)
    tn = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type=norm_type)
    wn = wb.nn.utils.clip_grad_norm_(wp, max_norm, norm_type=norm_type)
    assert wn.device.type == device
    np.testing.assert_allclose(host(wn), tn.numpy(), rtol=1e-6)
    for t, w in zip(tp, wp):
        assert w.grad.device.type == device
        np.testing.assert_allclose(host(w.grad), t.grad.numpy(), rtol=1e-6)


def test_clip_grad_norm_nonfinite_and_value():
    p = wb.nn.Parameter(wb.zeros(2))
    p.grad = wb.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        wb.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    p.grad = wb.tensor([3.0, -4.0])
    wb.nn.utils.clip_grad_value_(p, 2.5)
    assert p.grad.tolist() == [2.5, -2.5]
    q = wb.nn.Parameter(wb.zeros(1))
    assert float(wb.nn.utils.clip_grad_norm_([q], 1.0)) == 0.0  # no grads: norm 0


def test_parameters_to_vector_round_trip():
    m = wb.nn.Linear(3, 2)
    v = wb.nn.utils.parameters_to_vector(m.parameters())
    assert v.shape == (8,)
    np.testing.assert_array_equal(v.detach().numpy()[:6], m.weight.detach().numpy().ravel())
    new = wb.arange(8, dtype=wb.float32)
    wb.nn.utils.vector_to_parameters(new, m.parameters())
    np.testing.assert_array_equal(m.bias.detach().numpy(), [6.0, 7.0])
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        wb.nn.utils.vector_to_parameters([1, 2], m.parameters())


@pytest.mark.parametrize("dim", [0, 1, -1, None])
def test_weight_norm_matches_torch(dim, device):
    import warnings

    def make(nn):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            lib = torch if nn is torch.nn else wb
            return lib.nn.utils.weight_norm(nn.Conv1d(3, 4, 2), dim=dim)

    rng = np.random.default_rng(0)
    tm, wm = compare(make, [rng.standard_normal((2, 3, 5))], device=device)
    assert [n for n, _ in wm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        with pytest.warns(FutureWarning):
            wb.nn.utils.weight_norm(wm, dim=dim)
    wb.nn.utils.remove_weight_norm(wm)
    torch.nn.utils.remove_weight_norm(tm)
    assert wm.weight.device.type == device
    np.testing.assert_allclose(host(wm.weight), host(tm.weight), rtol=1e-12)
    with pytest.raises(ValueError, match="not found"):
        wb.nn.utils.remove_weight_norm(wm)


@pytest.mark.parametrize("make", [lambda nn: nn.Linear(5, 4), lambda nn: nn.Conv2d(2, 3, 3),
                                  lambda nn: nn.ConvTranspose1d(3, 2, 3)])
def test_spectral_norm_matches_torch(make, device):
    def build(nn):
        lib = torch if nn is torch.nn else wb
        return lib.nn.utils.spectral_norm(make(nn), n_power_iterations=2)

    rng = np.random.default_rng(0)
    m = make(torch.nn)
    shape = {torch.nn.Linear: (3, 5), torch.nn.Conv2d: (2, 2, 5, 5), torch.nn.ConvTranspose1d: (2, 3, 4)}[type(m)]
    x = rng.standard_normal(shape)
    tm, wm = compare(build, [x], device=device)  # a training forward: power iteration, w / sigma, its backward
    np.testing.assert_allclose(host(wm.weight_u), host(tm.weight_u), rtol=1e-10)
    tm.eval()
    wm.eval()
    np.testing.assert_allclose(host(wm(to_wb(x, device))), host(tm(to_torch(x, device))), rtol=1e-10)
    wb.nn.utils.remove_spectral_norm(wm)
    torch.nn.utils.remove_spectral_norm(tm)
    assert wm.weight.device.type == device
    np.testing.assert_allclose(host(wm.weight), host(tm.weight), rtol=1e-10)


@pytest.mark.parametrize("kind", ["weight_norm", "weight_norm_dim1", "spectral_norm", "spectral_norm_conv"])
def test_parametrizations_match_torch(kind, device):
    def build(nn):
        P = (torch if nn is torch.nn else wb).nn.utils.parametrizations
        if kind == "weight_norm":
            return P.weight_norm(nn.Linear(5, 4))
        if kind == "weight_norm_dim1":
            return P.weight_norm(nn.Conv1d(3, 4, 2), dim=1)
        if kind == "spectral_norm":
            return P.spectral_norm(nn.Linear(5, 4), n_power_iterations=2)
        return P.spectral_norm(nn.Conv2d(2, 3, 3))

    rng = np.random.default_rng(0)
    x = rng.standard_normal({"weight_norm": (3, 5), "weight_norm_dim1": (2, 3, 6), "spectral_norm": (3, 5),
                             "spectral_norm_conv": (2, 2, 5, 5)}[kind])
    tm, wm = compare(build, [x], device=device)
    assert type(wm).__name__ == type(tm).__name__
    tm.eval()
    wm.eval()
    np.testing.assert_allclose(host(wm(to_wb(x, device))), host(tm(to_torch(x, device))), rtol=1e-10)
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight")
    wb.nn.utils.parametrize.remove_parametrizations(wm, "weight")
    assert type(wm).__name__ == type(tm).__name__ and list(wm.state_dict()) == list(tm.state_dict())
    assert wm.weight.device.type == device
    np.testing.assert_allclose(host(wm.weight), host(tm.weight), rtol=1e-10)


def test_register_parametrization_custom_and_assignment():
    P = wb.nn.utils.parametrize

    class Symmetric(wb.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu()

    m = wb.nn.Linear(3, 3)
    P.register_parametrization(m, "weight", Symmetric())
    assert P.is_parametrized(m) and P.is_parametrized(m, "weight") and not P.is_parametrized(m, "bias")
    assert P.type_before_parametrizations(m) is wb.nn.Linear
    w = m.weight.detach().numpy()
    np.testing.assert_array_equal(w, w.T)
    sym = wb.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 5.0], [3.0, 5.0, 6.0]])
    m.weight = sym  # goes through right_inverse
    np.testing.assert_array_equal(m.weight.detach().numpy(), sym.numpy())
    m(wb.ones(1, 3)).sum().backward()
    assert m.parametrizations.weight.original.grad is not None
    with P.cached():
        assert m.weight is m.weight
    twin = __import__("copy").deepcopy(m)
    np.testing.assert_array_equal(twin.weight.detach().numpy(), sym.numpy())
    P.remove_parametrizations(m, "weight", leave_parametrized=True)
    assert type(m) is wb.nn.Linear and isinstance(m.weight, wb.nn.Parameter)
    np.testing.assert_array_equal(m.weight.detach().numpy(), sym.numpy())
    with pytest.raises(ValueError, match="does not have a parametrization"):
        P.remove_parametrizations(m, "weight")
