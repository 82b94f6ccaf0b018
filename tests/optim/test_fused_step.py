"""Adam's and SGD-momentum's one-pass parameter updates (``fused.adam_step``, ``fused.sgd_step``, and
``sgd_steps``, a whole group's in one call) against the NumPy form they replace (ufunc passes and BLAS's axpy), bit for bit, and against PyTorch: parameters above
``fused.MIN_SIZE`` (where the loops serve), per parameter and as a whole group (``optimizer._Flat``, whose
small parameters then take the loop too), float32 and float64, with non-finite gradient entries, every option
that changes the arithmetic (amsgrad, lerp's two forms, dampening, Nesterov from the first step, decoupled
weight decay) and those that keep a group on the gathered NumPy path (maximize, L2 weight decay)."""
import numpy as np
import pytest
import torch

import workbench as wb
from workbench._backend import fused

pytestmark = pytest.mark.skipif(fused._numba() is None or not fused.ENABLED[0],
                                reason="numba is not installed or WORKBENCH_NUMBA=0")

# two above fused.MIN_SIZE (the loops; their sizes not multiples of a vector, so axpy's tail counts), one below
SHAPES = [(200, 183), (183,), (41, 900)]

# (optimizer, options, its loop, whether a whole group takes the loop)
CONFIGS = [
    ("Adam", {"lr": 0.01}, "adam_step", True),
    ("Adam", {"lr": 0.01, "betas": (0.3, 0.9), "amsgrad": True}, "adam_step", True),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1, "maximize": True}, "adam_step", False),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.5, "amsgrad": True}, "adam_step", True),
    ("SGD", {"lr": 0.1, "momentum": 0.9}, "sgd_step", True),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3}, "sgd_step", True),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01, "maximize": True}, "sgd_step",
     False),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}, "sgd_step", True),
]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in c.items())}" for n, c, _, _ in CONFIGS]


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
    """How often each loop ran (``sgd_steps``, a whole group's SGD loop in one call, counts as ``sgd_step``)."""
    n = {"adam_step": 0, "sgd_step": 0}
    for name, counter in (("adam_step", "adam_step"), ("sgd_step", "sgd_step"), ("sgd_steps", "sgd_step")):
        loop = getattr(fused, name)

        def counted(*args, _loop=loop, _name=counter):
            n[_name] += 1
            return _loop(*args)
        monkeypatch.setattr(fused, name, counted)
    return n


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,cfg,loop,group_loop", CONFIGS, ids=IDS)
def test_loop_is_the_numpy_form_bit_for_bit(name, cfg, loop, group_loop, dtype, calls, monkeypatch):
    grads = _grads(4, dtype)
    with np.errstate(all="ignore"):
        got = {}
        for per_param in (False, True):
            calls[loop] = 0
            got[per_param] = _run(wb, name, cfg, grads, per_param)
            assert calls[loop] > 0 if per_param or group_loop else calls[loop] == 0
        monkeypatch.setattr(fused, "ENABLED", [False])
        want = _run(wb, name, cfg, grads, True)
        assert got[False][0].dtype == dtype and np.isnan(got[False][0]).any()
        for per_param in (False, True):
            for a, b in zip(got[per_param], want):
                assert a.dtype == b.dtype
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name,cfg,loop,group_loop", CONFIGS, ids=IDS)
def test_loop_matches_pytorch(name, cfg, loop, group_loop, calls):
    grads = _grads(4, np.float64)
    grads[2][0][0, :3] = 1.0  # finite: compared with a tolerance
    got = _run(wb, name, cfg, grads, False)
    assert (calls[loop] > 0) == group_loop
    want = _run(torch, name, cfg, grads, False)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_sgd_group_loop_takes_one_call_and_falls_back_per_parameter(monkeypatch):
    """A group whose gradients are all C-contiguous takes ``sgd_steps`` (one call); a non-contiguous gradient
    sends it back to one ``sgd_step`` per parameter; both give the NumPy form's bits."""
    got = []
    for name in ("sgd_step", "sgd_steps"):
        loop = getattr(fused, name)
        monkeypatch.setattr(fused, name, lambda *a, _loop=loop, _name=name: got.append(_name) or _loop(*a))
    grads = _grads(3, np.float32)
    cfg = {"lr": 0.1, "momentum": 0.9, "nesterov": True}

    def run(transposed):
        rng = np.random.default_rng(1)
        ps = [wb.nn.Parameter(wb.tensor(rng.standard_normal(s).astype(np.float32))) for s in SHAPES]
        opt = wb.optim.SGD(ps, **cfg)
        for g in grads:
            for p, gi in zip(ps, g):
                # the 2-D parameters' gradients as F-ordered arrays (a transposed view's layout)
                p.grad = wb.tensor(np.asfortranarray(gi) if transposed and gi.ndim == 2 else gi.copy())
            opt.step()
        return [p.detach().numpy().copy() for p in ps]

    with np.errstate(all="ignore"):
        one_call = run(False)
        assert got == ["sgd_steps"] * 2  # the first step fills the buffers (NumPy), then one call a step
        got.clear()
        per_param = run(True)
        assert got == ["sgd_step"] * 2  # the 1-D one; the F-ordered gradients take the NumPy form
        monkeypatch.setattr(fused, "ENABLED", [False])
        want = run(False)
    for a, b, c in zip(one_call, per_param, want):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, c)
