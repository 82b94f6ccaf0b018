"""Learning-rate schedules against PyTorch's: the lr (and momentum) sequence, state dicts, chaining."""
import math
import warnings

import numpy as np
import pytest
import torch

import workbench as wb

EPOCHS = 25


def _pair(opt_name="SGD", groups=2, **okw):
    okw = okw or {"lr": 0.1, "momentum": 0.9}
    tp = [torch.nn.Parameter(torch.ones(1)) for _ in range(groups)]
    wp = [wb.nn.Parameter(wb.ones(1)) for _ in range(groups)]
    topt = getattr(torch.optim, opt_name)([{"params": [p], "lr": okw["lr"] * (i + 1)} for i, p in enumerate(tp)],
                                          **okw)
    wopt = getattr(wb.optim, opt_name)([{"params": [p], "lr": okw["lr"] * (i + 1)} for i, p in enumerate(wp)],
                                       **okw)
    return topt, wopt


SCHEDULES = {
    "LambdaLR": lambda m, o: m.LambdaLR(o, lambda e: 0.95 ** e),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lambda e: 0.9),
    "StepLR": lambda m, o: m.StepLR(o, step_size=4, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[3, 7, 7, 12], gamma=0.3),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.25, total_iters=4),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=6),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.93),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=10, power=2.0),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01),
    "CosineAnnealingWarmRestarts1": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=4),
    "OneCycleLR": lambda m, o: m.OneCycleLR(o, max_lr=1.0, total_steps=EPOCHS + 1),
    "OneCycleLR3": lambda m, o: m.OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=EPOCHS + 1, three_phase=True,
                                            anneal_strategy="linear"),
    "CyclicLR": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, step_size_down=5),
    "CyclicLR2": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, mode="triangular2"),
    "CyclicLRexp": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2, mode="exp_range",
                                          gamma=0.9),
    "SequentialLR": lambda m, o: m.SequentialLR(o, [m.LinearLR(o, start_factor=0.1, total_iters=3),
                                                    m.ExponentialLR(o, gamma=0.9),
                                                    m.StepLR(o, step_size=2)], milestones=[4, 10]),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler([m.ConstantLR(o, factor=0.5, total_iters=3),
                                                         m.ExponentialLR(o, gamma=0.9)]),
}


def _momenta(opt):
    return [g.get("momentum", g.get("betas", (None,))[0]) for g in opt.param_groups]


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_matches_torch(name):
    topt, wopt = _pair()
    ts = SCHEDULES[name](torch.optim.lr_scheduler, topt)
    ws = SCHEDULES[name](wb.optim.lr_scheduler, wopt)
    np.testing.assert_allclose(ws.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
    for _ in range(EPOCHS):
        topt.step()
        wopt.step()
        ts.step()
        ws.step()
        np.testing.assert_allclose(ws.get_last_lr(), ts.get_last_lr(), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose([g["lr"] for g in wopt.param_groups], [g["lr"] for g in topt.param_groups],
                                   rtol=1e-12)
        assert _momenta(wopt) == pytest.approx(_momenta(topt), rel=1e-12)


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "CosineAnnealingLR", "OneCycleLR", "SequentialLR",
                                  "CosineAnnealingWarmRestarts", "CyclicLR", "LambdaLR"])
def test_state_dict_round_trip(name):
    _, opt = _pair()
    s = SCHEDULES[name](wb.optim.lr_scheduler, opt)
    for _ in range(5):
        opt.step()
        s.step()
    sd = s.state_dict()
    osd = opt.state_dict()
    expected = []
    for _ in range(6):
        opt.step()
        s.step()
        expected.append(s.get_last_lr())
    _, opt2 = _pair()
    s2 = SCHEDULES[name](wb.optim.lr_scheduler, opt2)
    opt2.load_state_dict(osd)
    s2.load_state_dict(sd)
    got = []
    for _ in range(6):
        opt2.step()
        s2.step()
        got.append(s2.get_last_lr())
    assert got == expected


def test_reduce_lr_on_plateau_matches_torch():
    topt, wopt = _pair()
    kw = {"mode": "max", "factor": 0.5, "patience": 2, "threshold": 0.01, "cooldown": 1, "min_lr": [0.01, 0.02]}
    ts = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kw)
    ws = wb.optim.lr_scheduler.ReduceLROnPlateau(wopt, **kw)
    metrics = [1.0, 1.1, 1.1, 1.1, 1.1, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 0.5, 0.5, 0.5, 0.5, 0.5]
    for m in metrics:
        ts.step(m)
        ws.step(wb.tensor(m))
        assert ws.get_last_lr() == pytest.approx(ts.get_last_lr())
        assert ws.num_bad_epochs == ts.num_bad_epochs
    _, wopt2 = _pair()
    ws2 = wb.optim.lr_scheduler.ReduceLROnPlateau(wopt2, **kw)
    ws2.load_state_dict(ws.state_dict())
    assert ws2.best == ws.best and ws2.cooldown_counter == ws.cooldown_counter


def test_closed_form_epoch_and_warnings():
    topt, wopt = _pair()
    ts = torch.optim.lr_scheduler.StepLR(topt, step_size=3, gamma=0.5)
    ws = wb.optim.lr_scheduler.StepLR(wopt, step_size=3, gamma=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts.step(7)
    wopt.step()
    with pytest.warns(UserWarning, match="epoch parameter"):
        ws.step(7)
    assert ws.get_last_lr() == pytest.approx(ts.get_last_lr())
    _, opt = _pair()
    s = wb.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        s.step()


def test_errors():
    _, opt = _pair()
    with pytest.raises(TypeError, match="is not an Optimizer"):
        wb.optim.lr_scheduler.StepLR(object(), 1)
    with pytest.raises(ValueError, match="total_steps OR"):
        wb.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(KeyError, match="initial_lr"):
        wb.optim.lr_scheduler.StepLR(opt, 1, last_epoch=3)
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        wb.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=1.5)
    s = wb.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=2)
    opt.step()
    s.step()
    s.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        s.step()
    assert math.isfinite(opt.param_groups[0]["lr"])


def test_every_scheduler_state_dict_survives_workbench_save(tmp_path):
    for name in sorted(SCHEDULES):
        _, opt = _pair()
        s = SCHEDULES[name](wb.optim.lr_scheduler, opt)
        opt.step()
        s.step()
        f = tmp_path / f"{name}.wb"
        wb.save({"sched": s.state_dict(), "opt": opt.state_dict()}, f)
        ck = wb.load(f)
        _, opt2 = _pair()
        s2 = SCHEDULES[name](wb.optim.lr_scheduler, opt2)
        opt2.load_state_dict(ck["opt"])
        s2.load_state_dict(ck["sched"])
        for _ in range(3):
            opt.step()
            s.step()
            opt2.step()
            s2.step()
        assert s2.get_last_lr() == s.get_last_lr(), name
