"""nn.utils: gradient clipping and parameter/vector conversion against PyTorch."""
import math

import numpy as np
import pytest
import torch

import workbench as wb


def _params(lib, grads):
    ps = []
    for g in grads:
        p = (torch.nn.Parameter if lib is torch else wb.nn.Parameter)(lib.tensor(np.zeros_like(g)))
        p.grad = lib.tensor(g.copy())
        ps.append(p)
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(5).astype(np.float32)]
    tp, wp = _params(torch, grads), _params(wb, grads)
    tn = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type=norm_type)
    wn = wb.nn.utils.clip_grad_norm_(wp, max_norm, norm_type=norm_type)
    np.testing.assert_allclose(wn.numpy(), tn.numpy(), rtol=1e-6)
    for t, w in zip(tp, wp):
        np.testing.assert_allclose(w.grad.numpy(), t.grad.numpy(), rtol=1e-6)


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
def test_weight_norm_matches_torch(dim):
    import warnings

    from _nn_compare import compare

    def make(nn):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            lib = torch if nn is torch.nn else wb
            return lib.nn.utils.weight_norm(nn.Conv1d(3, 4, 2), dim=dim)

    rng = np.random.default_rng(0)
    tm, wm = compare(make, [rng.standard_normal((2, 3, 5))])
    assert [n for n, _ in wm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        with pytest.warns(FutureWarning):
            wb.nn.utils.weight_norm(wm, dim=dim)
    wb.nn.utils.remove_weight_norm(wm)
    torch.nn.utils.remove_weight_norm(tm)
    np.testing.assert_allclose(wm.weight.detach().numpy(), tm.weight.detach().numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="not found"):
        wb.nn.utils.remove_weight_norm(wm)


@pytest.mark.parametrize("make", [lambda nn: nn.Linear(5, 4), lambda nn: nn.Conv2d(2, 3, 3),
                                  lambda nn: nn.ConvTranspose1d(3, 2, 3)])
def test_spectral_norm_matches_torch(make):
    from _nn_compare import compare

    def build(nn):
        lib = torch if nn is torch.nn else wb
        return lib.nn.utils.spectral_norm(make(nn), n_power_iterations=2)

    rng = np.random.default_rng(0)
    m = make(torch.nn)
    shape = {torch.nn.Linear: (3, 5), torch.nn.Conv2d: (2, 2, 5, 5), torch.nn.ConvTranspose1d: (2, 3, 4)}[type(m)]
    x = rng.standard_normal(shape)
    tm, wm = compare(build, [x])  # a training forward: power iteration, then w / sigma, and its backward
    np.testing.assert_allclose(wm.weight_u.numpy(), tm.weight_u.numpy(), rtol=1e-10)
    tm.eval()
    wm.eval()
    np.testing.assert_allclose(wm(wb.tensor(x)).detach().numpy(), tm(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-10)
    wb.nn.utils.remove_spectral_norm(wm)
    torch.nn.utils.remove_spectral_norm(tm)
    np.testing.assert_allclose(wm.weight.detach().numpy(), tm.weight.detach().numpy(), rtol=1e-10)
