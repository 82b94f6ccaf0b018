"""The whole-group update of Adam/AdamW/SGD-momentum (``optimizer._Flat``) against the per-parameter loop.

A group of one parameter always takes the per-parameter loop, so the reference puts every parameter in
a group of its own; the flat path must give the same weights and state bit for bit, keep PyTorch's
state layout, and stay correct when parameters, their arrays or their state change under it.
"""
import numpy as np
import pytest
import torch

import workbench as wb

SHAPES = [(130, 128), (128,), (7, 3), (3,)]  # the first is above blas.MIN_SIZE: its update goes through axpy

CONFIGS = [
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1, "maximize": True}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.5}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01, "maximize": True}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in c.items())}" for n, c in CONFIGS]


def _grads(steps, seed=0):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(steps)]


def _params(seed=1):
    rng = np.random.default_rng(seed)
    return [wb.nn.Parameter(wb.tensor(rng.standard_normal(s).astype(np.float32))) for s in SHAPES]


def _run(name, cfg, grads, per_param, edit=None):
    ps = _params()
    opt = getattr(wb.optim, name)([{"params": [p]} for p in ps] if per_param else ps, **cfg)
    for i, g in enumerate(grads):
        for p, gi in zip(ps, g):
            p.grad = None if gi is None else wb.tensor(gi.copy())
        if edit is not None:
            edit(i, ps, opt)
        opt.step()
    return ps, opt


def _assert_same(a, b):
    (pa, oa), (pb, ob) = a, b
    for x, y in zip(pa, pb):
        np.testing.assert_array_equal(x.detach().numpy(), y.detach().numpy())
    for x, y in zip(pa, pb):
        sa, sb = oa.state[x], ob.state[y]
        assert sa.keys() == sb.keys()
        for k in sa:
            assert tuple(sa[k].shape) == tuple(sb[k].shape), k
            np.testing.assert_array_equal(sa[k].numpy(), sb[k].numpy())


@pytest.mark.parametrize("name,cfg", CONFIGS, ids=IDS)
def test_flat_step_is_the_per_parameter_step_bit_for_bit(name, cfg):
    grads = _grads(5)
    flat = _run(name, cfg, grads, per_param=False)
    assert flat[1].__dict__["_flat_cache"], "the flat path did not run"
    _assert_same(flat, _run(name, cfg, grads, per_param=True))


@pytest.mark.parametrize("name,cfg", CONFIGS[::2], ids=IDS[::2])
def test_flat_step_follows_changes_to_params_grads_and_state(name, cfg):
    grads = _grads(8)
    grads[0][2] = None  # no gradient on the first step: that parameter's state starts a step later
    grads[4][1] = None  # a parameter skipped mid-run (zero_grad(set_to_none) and no use)

    def edit(i, ps, opt):
        if i == 3:  # p.data = ... : a new array under the same parameter
            ps[0].data = ps[0].data * 0.5
        if i == 6:  # a state dict round trip replaces every state tensor
            opt.load_state_dict(opt.state_dict())

    _assert_same(_run(name, cfg, grads, False, edit), _run(name, cfg, grads, True, edit))


def test_flat_step_matches_torch_and_keeps_views_of_params_live():
    grads = _grads(4)
    ps = _params()
    live = ps[0].detach().numpy()  # a view of the parameter's memory, as torch's .numpy() shares it
    opt = wb.optim.Adam(ps, lr=0.01)
    tps = [torch.nn.Parameter(torch.from_numpy(p.detach().numpy().copy())) for p in ps]
    topt = torch.optim.Adam(tps, lr=0.01)
    for g in grads:
        for p, tp, gi in zip(ps, tps, g):
            p.grad, tp.grad = wb.tensor(gi.copy()), torch.from_numpy(gi.copy())
        opt.step()
        topt.step()
    np.testing.assert_array_equal(live, ps[0].detach().numpy())
    for p, tp in zip(ps, tps):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=2e-6, atol=2e-6)
    sd = opt.state_dict()["state"]
    assert sorted(sd) == [0, 1, 2, 3] and sorted(sd[0]) == ["exp_avg", "exp_avg_sq", "step"]
    assert float(sd[3]["step"]) == 4.0 and tuple(sd[0]["exp_avg"].shape) == SHAPES[0]


def test_parameter_added_later_and_mixed_dtypes_take_the_per_parameter_loop():
    grads = _grads(3)
    ps = _params()
    opt = wb.optim.SGD(ps[:2], lr=0.1, momentum=0.9)
    extra = wb.nn.Parameter(wb.ones(3, dtype=wb.float64))
    opt.add_param_group({"params": [ps[2], ps[3], extra]})
    ref_ps = _params()
    ref = wb.optim.SGD([{"params": [p]} for p in ref_ps[:2]], lr=0.1, momentum=0.9)
    ref_extra = wb.nn.Parameter(wb.ones(3, dtype=wb.float64))
    for p in (ref_ps[2], ref_ps[3], ref_extra):
        ref.add_param_group({"params": [p]})
    for g in grads:
        for a, b, gi in zip(ps, ref_ps, g):
            a.grad, b.grad = wb.tensor(gi.copy()), wb.tensor(gi.copy())
        extra.grad = ref_extra.grad = wb.ones(3, dtype=wb.float64)
        opt.step()
        ref.step()
    for a, b in zip(ps + [extra], ref_ps + [ref_extra]):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert id(opt.param_groups[1]) not in opt.__dict__["_flat_cache"]  # float32 with float64: per parameter
