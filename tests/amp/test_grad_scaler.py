"""GradScaler's state machine against PyTorch's (CPU) GradScaler: scale/skip/backoff/growth trajectories,
unscale_ before clipping, state_dict round trips, the errors, the disabled scaler, and the fake GPU."""
import copy
import pickle

import numpy as np
import pytest
import torch

import workbench as wb

RNG = np.random.default_rng(0)
W0 = RNG.standard_normal((3, 4)).astype(np.float32)
X = RNG.standard_normal((5, 4)).astype(np.float32)
BAD = {2, 3, 7}  # iterations whose loss is inf (their steps must be skipped)


def _run(m, device="cpu", steps=12, clip=False, **kw):
    w = m.nn.Parameter(m.tensor(W0.copy(), device=device))
    opt = m.optim.SGD([w], lr=0.01, momentum=0.9)
    scaler = m.amp.GradScaler(device, growth_interval=3, **kw)
    x = m.tensor(X, device=device)
    trace = []
    for it in range(steps):
        opt.zero_grad()
        loss = (x @ w.t()).pow(2).mean()
        if it in BAD:
            loss = loss * float("inf")
        scaler.scale(loss).backward()
        if clip:
            scaler.unscale_(opt)
            m.nn.utils.clip_grad_norm_([w], 0.5)
        scaler.step(opt)
        scaler.update()
        trace.append((scaler.get_scale(), scaler._get_growth_tracker(), w.detach().cpu().numpy().copy()))
    return trace, scaler


@pytest.mark.parametrize("clip", [False, True])
def test_trajectory_matches_torch(clip):
    got, _ = _run(wb, clip=clip)
    want, _ = _run(torch, clip=clip)
    for (gs, gt, gw), (ws, wt, ww) in zip(got, want):
        assert gs == ws and gt == wt
        np.testing.assert_allclose(gw, ww, rtol=1e-5, atol=1e-6)
    scales = [s for s, _, _ in got]
    assert scales[2] == 2 ** 15 and scales[3] == 2 ** 14  # backed off twice; later grows every 3 clean steps
    assert max(scales) > scales[3]


def test_custom_factors_and_state_dict_round_trip():
    got, ws = _run(wb, init_scale=1024.0, growth_factor=4.0, backoff_factor=0.25)
    want, ts = _run(torch, init_scale=1024.0, growth_factor=4.0, backoff_factor=0.25)
    assert [g[0] for g in got] == [w[0] for w in want]
    assert ws.state_dict() == ts.state_dict()
    fresh = wb.amp.GradScaler("cpu")
    fresh.load_state_dict(ts.state_dict())
    assert fresh.state_dict() == ts.state_dict() and fresh.get_scale() == ts.get_scale()
    clone = pickle.loads(pickle.dumps(ws))
    assert clone.state_dict() == ws.state_dict()
    assert copy.deepcopy(ws).get_scale() == ws.get_scale()
    with pytest.raises(RuntimeError, match="source state dict is empty"):
        fresh.load_state_dict({})


def test_update_with_new_scale_and_setters():
    _, s = _run(wb, steps=2)
    s.update(new_scale=8.0)
    assert s.get_scale() == 8.0
    s.update(new_scale=wb.tensor(32.0))
    assert s.get_scale() == 32.0
    with pytest.raises(AssertionError, match="new_scale should be a float"):
        s.update(new_scale=wb.tensor([1.0, 2.0]))
    s.set_growth_factor(3.0)
    s.set_backoff_factor(0.1)
    s.set_growth_interval(7)
    assert (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()) == (3.0, 0.1, 7)


def test_stage_errors_match_torch():
    for m in (wb, torch):
        w = m.nn.Parameter(m.ones(2))
        opt = m.optim.SGD([w], lr=0.1)
        s = m.amp.GradScaler("cpu")
        with pytest.raises(AssertionError, match="_scale is None"):
            s.step(opt)
        s.scale((w * 2).sum()).backward()
        s.unscale_(opt)
        with pytest.raises(RuntimeError, match="already been called on this optimizer"):
            s.unscale_(opt)
        s.step(opt)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step"):
            s.unscale_(opt)
        with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
            s.step(opt)
        with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
            s.step(opt, closure=lambda: 0)
        s.update()
        with pytest.raises(AssertionError, match="No inf checks were recorded prior to update"):
            s.update()
        with pytest.raises(AssertionError, match="growth factor must be > 1.0"):
            m.amp.GradScaler("cpu", growth_factor=1.0)
        with pytest.raises(AssertionError, match="backoff factor must be < 1.0"):
            m.amp.GradScaler("cpu", backoff_factor=1.0)
        half = m.nn.Parameter(m.ones(2, dtype=m.float16))
        opt16 = m.optim.SGD([half], lr=0.1)
        s.scale(half.float().sum()).backward()
        with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
            s.unscale_(opt16)


def test_scale_nested_outputs_and_disabled():
    s = wb.amp.GradScaler("cpu", init_scale=4.0)
    a, (b, c) = s.scale([wb.ones(1), (wb.ones(2), wb.ones(3))])
    assert a.tolist() == [4.0] and c.tolist() == [4.0] * 3
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable"):
        s.scale([1.0])
    off = wb.amp.GradScaler("cpu", enabled=False)
    t = wb.ones(2)
    assert off.scale(t) is t and off.state_dict() == {} and off.get_scale() == 1.0
    w = wb.nn.Parameter(wb.ones(2))
    opt = wb.optim.SGD([w], lr=0.5)
    (w * float("inf")).sum().backward()
    off.step(opt)  # a disabled scaler steps regardless, as PyTorch's
    off.update()
    assert not np.isfinite(w.detach().numpy()).all()
    assert wb.GradScaler is wb.amp.GradScaler


def test_cuda_scaler_disables_itself_without_a_gpu():
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling"):
        s = wb.amp.GradScaler()
    assert not s.is_enabled()


def test_on_the_fake_gpu_with_float16_autocast(fake_cuda):
    got, scaler = _run(wb, device="cuda")
    want, _ = _run(torch)
    assert [g[0] for g in got] == [w[0] for w in want]
    assert scaler._scale.device.type == "cuda" and scaler._growth_tracker.dtype is wb.int32
    w = wb.nn.Parameter(wb.tensor(W0.copy(), device="cuda"))
    opt = wb.optim.Adam([w], lr=1e-3)
    s = wb.amp.GradScaler("cuda")
    for _ in range(3):
        opt.zero_grad()
        with wb.autocast("cuda"):
            out = wb.tensor(X, device="cuda") @ w.t()
            assert out.dtype is wb.float16
            loss = out.float().pow(2).mean()
        s.scale(loss).backward()
        assert w.grad.dtype is wb.float32
        s.step(opt)
        s.update()
    assert np.isfinite(w.detach().cpu().numpy()).all()
