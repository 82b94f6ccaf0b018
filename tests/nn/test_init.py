"""nn.init distributions, and every layer initialised from the same distributions as PyTorch's."""
import math

import numpy as np
import pytest
import torch

import workbench as wb
from workbench.nn import init


@pytest.fixture(autouse=True)
def _seeded():
    """Statistical checks on fixed streams, so they cannot flake."""
    wb.manual_seed(0)
    torch.manual_seed(0)


def _stats(a):
    a = np.asarray(a, dtype=np.float64).ravel()
    return a.min(), a.max(), a.mean(), a.std()


def test_uniform_normal_constant():
    t = init.uniform_(wb.empty(20000), -2, 3)
    lo, hi, mean, _ = _stats(t.numpy())
    assert -2 <= lo < -1.99 and 2.99 < hi <= 3 and abs(mean - 0.5) < 0.05
    t = init.normal_(wb.empty(20000), 1.0, 2.0)
    _, _, mean, std = _stats(t.numpy())
    assert abs(mean - 1) < 0.06 and abs(std - 2) < 0.05
    assert init.constant_(wb.empty(3), 0.25).tolist() == [0.25] * 3
    assert init.ones_(wb.empty(2)).tolist() == [1, 1] and init.zeros_(wb.empty(2)).tolist() == [0, 0]
    np.testing.assert_array_equal(init.eye_(wb.empty(2, 3)).numpy(), np.eye(2, 3))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        init.eye_(wb.empty(3))


def test_trunc_normal_and_orthogonal_and_dirac():
    t = init.trunc_normal_(wb.empty(20000), mean=0.0, std=1.0, a=-1.0, b=2.0)
    lo, hi, _, _ = _stats(t.numpy())
    assert lo >= -1.0 and hi <= 2.0
    ref = torch.nn.init.trunc_normal_(torch.empty(20000), mean=0.0, std=1.0, a=-1.0, b=2.0).numpy()
    assert abs(t.numpy().mean() - ref.mean()) < 0.03 and abs(t.numpy().std() - ref.std()) < 0.03
    q = init.orthogonal_(wb.empty(4, 6), gain=2.0).numpy()
    np.testing.assert_allclose(q @ q.T, 4 * np.eye(4), atol=1e-5)
    q = init.orthogonal_(wb.empty(6, 2, 2)).numpy().reshape(6, 4)
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-5)
    w = init.dirac_(wb.empty(4, 2, 3, 3), groups=2)
    np.testing.assert_array_equal(w.numpy(), torch.nn.init.dirac_(torch.empty(4, 2, 3, 3), groups=2).numpy())


@pytest.mark.parametrize("fn,kw", [("xavier_uniform_", {"gain": 2.0}), ("xavier_normal_", {}),
                                   ("kaiming_uniform_", {"a": math.sqrt(5)}),
                                   ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "relu"})])
def test_fan_based_inits_match_torch_statistics(fn, kw):
    shape = (64, 32, 3, 3)
    ours = getattr(init, fn)(wb.empty(*shape), **kw).numpy()
    ref = getattr(torch.nn.init, fn)(torch.empty(*shape), **kw).numpy()
    assert abs(ours.std() / ref.std() - 1) < 0.03
    if "uniform" in fn:
        assert abs(np.abs(ours).max() / np.abs(ref).max() - 1) < 0.01


def test_calculate_gain_and_fan_errors():
    for nl, p in [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
                  ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)]:
        assert init.calculate_gain(nl, p) == torch.nn.init.calculate_gain(nl, p)
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(wb.empty(3))
    with pytest.raises(ValueError, match="Mode fan_sideways not supported"):
        init.kaiming_uniform_(wb.empty(3, 3), mode="fan_sideways")


def test_init_bumps_version_and_records_nothing():
    p = wb.nn.Parameter(wb.empty(3, 3))
    v = p._version
    init.kaiming_uniform_(p)
    assert p._version == v + 1 and p.grad_fn is None and p.requires_grad


def test_generator_makes_init_reproducible():
    g1, g2 = wb.Generator().manual_seed(3), wb.Generator().manual_seed(3)
    a = init.normal_(wb.empty(5), generator=g1)
    b = init.normal_(wb.empty(5), generator=g2)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


LAYERS = {
    "Linear": lambda nn: nn.Linear(300, 200),
    "Bilinear": lambda nn: nn.Bilinear(30, 20, 40),
    "Conv2d": lambda nn: nn.Conv2d(16, 32, 3),
    "Conv1d-groups": lambda nn: nn.Conv1d(16, 32, 5, groups=4),
    "ConvTranspose2d": lambda nn: nn.ConvTranspose2d(16, 32, 3),
    "BatchNorm2d": lambda nn: nn.BatchNorm2d(50),
    "LayerNorm": lambda nn: nn.LayerNorm(50),
    "GroupNorm": lambda nn: nn.GroupNorm(5, 50),
    "RMSNorm": lambda nn: nn.RMSNorm(50),
    "Embedding": lambda nn: nn.Embedding(300, 40),
    "PReLU": lambda nn: nn.PReLU(10),
    "LSTM": lambda nn: nn.LSTM(30, 60, num_layers=2, bidirectional=True),
    "GRUCell": lambda nn: nn.GRUCell(30, 60),
    "MultiheadAttention": lambda nn: nn.MultiheadAttention(64, 4),
    "MultiheadAttention-kv": lambda nn: nn.MultiheadAttention(64, 4, kdim=32, vdim=16, add_bias_kv=True),
    "Transformer": lambda nn: nn.Transformer(64, 4, 1, 1, 128),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_initialisation_matches_torch(name):
    ours = dict(LAYERS[name](wb.nn).named_parameters())
    ref = dict(LAYERS[name](torch.nn).named_parameters())
    assert list(ours) == list(ref)
    for k, p in ref.items():
        a, b = ours[k].detach().numpy().astype(np.float64), p.detach().numpy().astype(np.float64)
        assert a.shape == b.shape and ours[k].dtype == wb.float32, k
        if b.std() == 0:
            np.testing.assert_array_equal(a, b, err_msg=k)
            continue
        n = a.size
        assert abs(a.std() / b.std() - 1) < 0.05 + 2 / np.sqrt(n), k  # sampling noise shrinks with size
        if n >= 1000:
            assert abs(np.abs(a).max() / np.abs(b).max() - 1) < 0.35, k
        assert abs(a.mean() - b.mean()) < 5 * b.std() * np.sqrt(2 / n) + 1e-3, k
