"""Adam's and SGD-momentum's one-pass loops (``fused.adam_direction``, ``fused.momentum``) against the NumPy
form they replace, bit for bit, and against PyTorch: parameters above ``fused.MIN_SIZE`` (where the loops
serve), per parameter and as a whole group (``optimizer._Flat``), float32 and float64, with non-finite
gradient entries, every option that changes the arithmetic (amsgrad, lerp's two forms, dampening, Nesterov
from the first step, weight decay, maximize)."""
import numpy as np
import pytest
import torch

import workbench as wb
from workbench._backend import fused

pytestmark = pytest.mark.skipif(fused._numba() is None, reason="numba is not installed")

SHAPES = [(200, 180), (180,), (40, 900)]  # two above fused.MIN_SIZE (the loops), one below (NumPy either way)

CONFIGS = [
    ("Adam", {"lr": 0.01}, "adam_direction"),
    ("Adam", {"lr": 0.01, "betas": (0.3, 0.9), "amsgrad": True, "weight_decay": 0.1, "maximize": True},
     "adam_direction"),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.5, "amsgrad": True}, "adam_direction"),
    ("SGD", {"lr": 0.1, "momentum": 0.9}, "momentum"),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01, "maximize": True}, "momentum"),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}, "momentum"),
]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in c.items())}" for n, c, _ in CONFIGS]


def _grads(steps, dtype):
    rng = np.random.default_rng(0)
    out = []
    for i in range(steps):
        gs = [(rng.standard_normal(s) * 10.0 ** rng.integers(-6, 3, s)).astype(dtype) for s in SHAPES]
        if i == 2:  # non-finite entries: NaN and inf stay where they are, in both forms
            gs[0][0, :3] = [np.nan, np.inf, -np.inf]
        out.append(gs)
    return out


def _run(lib, name, cfg, grads, per_param):
    rng = np.random.default_rng(1)
    ps = [lib.nn.Parameter(lib.tensor(rng.standard_normal(s).astype(grads[0][0].dtype))) for s in SHAPES]
    opt = getattr(lib.optim, name)([{"params": [p]} for p in ps] if per_param else ps, **cfg)
    for g in grads:
        for p, gi in zip(ps, g):
            p.grad = lib.tensor(gi.copy())
        opt.step()
    key = "momentum_buffer" if name == "SGD" else "exp_avg_sq"
    return [p.detach().numpy().copy() for p in ps] + [opt.state[p][key].detach().numpy().copy() for p in ps]


@pytest.fixture
def calls(monkeypatch):
    """How often each loop ran."""
    n = {"adam_direction": 0, "momentum": 0}
    for name in n:
        loop = getattr(fused, name)

        def counted(*args, _loop=loop, _name=name):
            n[_name] += 1
            return _loop(*args)
        monkeypatch.setattr(fused, name, counted)
    return n


@pytest.mark.parametrize("per_param", [False, True], ids=["group", "per-param"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,cfg,loop", CONFIGS, ids=IDS)
def test_loop_is_the_numpy_form_bit_for_bit(name, cfg, loop, dtype, per_param, calls, monkeypatch):
    grads = _grads(4, dtype)
    with np.errstate(all="ignore"):
        got = _run(wb, name, cfg, grads, per_param)
        assert calls[loop] > 0, "the loop did not run"
        monkeypatch.setattr(fused, "ENABLED", [False])
        want = _run(wb, name, cfg, grads, per_param)
    assert np.isnan(got[0]).any()
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name,cfg,loop", CONFIGS, ids=IDS)
def test_loop_matches_pytorch(name, cfg, loop, calls):
    grads = _grads(4, np.float64)
    grads[2][0][0, :3] = 1.0  # finite: compared with a tolerance
    got = _run(wb, name, cfg, grads, False)
    assert calls[loop] > 0
    want = _run(torch, name, cfg, grads, False)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
