"""nn.utils.prune against PyTorch's: the same masks for the deterministic methods (L1, Ln structured,
global L1, custom masks, iterative pruning through PruningContainer) on the same weights, the module's
layout (weight_orig parameter, weight_mask buffer, state_dict keys, the forward pre-hook), gradients
reaching only the kept entries, remove(), is_pruned, and the errors (a failed prune leaves the module
as it was)."""
import numpy as np
import pytest
import torch
import torch.nn.utils.prune as tprune

import workbench as wb
from workbench.nn.utils import prune as wprune

RNG = np.random.default_rng(0)
W = RNG.standard_normal((4, 6)).astype(np.float32)
CW = RNG.standard_normal((5, 2, 3, 3)).astype(np.float32)


def _pair(weight=W):
    mods = []
    for m in (wb, torch):
        lin = m.nn.Linear(weight.shape[1], weight.shape[0]) if weight.ndim == 2 else m.nn.Conv2d(2, 5, 3)
        with m.no_grad():
            lin.weight.copy_(m.tensor(weight))
        mods.append(lin)
    return mods


STEPS = [
    ("l1 fraction", [lambda p, mod: p.l1_unstructured(mod, "weight", amount=0.3)], W),
    ("l1 count", [lambda p, mod: p.l1_unstructured(mod, "weight", amount=7)], W),
    ("ln rows", [lambda p, mod: p.ln_structured(mod, "weight", amount=0.5, n=2, dim=0)], W),
    ("ln conv channels l1", [lambda p, mod: p.ln_structured(mod, "weight", amount=2, n=1, dim=0)], CW),
    ("ln last dim inf", [lambda p, mod: p.ln_structured(mod, "weight", amount=0.34, n=float("inf"), dim=-1)], W),
    ("iterative l1 then l1", [lambda p, mod: p.l1_unstructured(mod, "weight", amount=0.25),
                              lambda p, mod: p.l1_unstructured(mod, "weight", amount=0.5)], W),
    ("iterative l1 then ln", [lambda p, mod: p.l1_unstructured(mod, "weight", amount=5),
                              lambda p, mod: p.ln_structured(mod, "weight", amount=1, n=2, dim=0)], W),
    ("iterative ln then ln", [lambda p, mod: p.ln_structured(mod, "weight", amount=1, n=2, dim=1),
                              lambda p, mod: p.ln_structured(mod, "weight", amount=2, n=2, dim=1)], W),
    ("custom then l1", [lambda p, mod: p.custom_from_mask(mod, "weight", mod.weight.new_tensor((W > 0.5).astype(np.float32))),
                        lambda p, mod: p.l1_unstructured(mod, "weight", amount=0.5)], W),
]


@pytest.mark.parametrize("name,steps,weight", STEPS, ids=[s[0] for s in STEPS])
def test_masks_match_pytorch(name, steps, weight):
    wm, tm = _pair(weight)
    for step in steps:
        step(wprune, wm)
        step(tprune, tm)
    np.testing.assert_array_equal(wm.weight_mask.numpy(), tm.weight_mask.numpy())
    np.testing.assert_allclose(wm.weight.detach().numpy(), tm.weight.detach().numpy())
    assert list(wm.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in wm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    hooks = [h for h in wm._forward_pre_hooks.values()]
    assert len(hooks) == 1 and type(hooks[0]).__name__ == type(next(iter(tm._forward_pre_hooks.values()))).__name__


def test_global_unstructured_matches_pytorch():
    nets = [m.nn.Sequential(m.nn.Linear(6, 4), m.nn.ReLU(), m.nn.Linear(4, 3)) for m in (wb, torch)]
    second = RNG.standard_normal((3, 4)).astype(np.float32) * 3
    for m, net in zip((wb, torch), nets):
        with m.no_grad():
            net[0].weight.copy_(m.tensor(W))
            net[2].weight.copy_(m.tensor(second))
    wprune.l1_unstructured(nets[0][0], "weight", amount=3)
    tprune.l1_unstructured(nets[1][0], "weight", amount=3)
    for p, net in ((wprune, nets[0]), (tprune, nets[1])):
        p.global_unstructured([(net[0], "weight"), (net[2], "weight")], pruning_method=p.L1Unstructured, amount=0.4)
    for i in (0, 2):
        np.testing.assert_array_equal(nets[0][i].weight_mask.numpy(), nets[1][i].weight_mask.numpy())


def test_forward_uses_the_mask_and_gradients_skip_pruned_entries():
    lin = wb.nn.Linear(6, 4)
    wprune.l1_unstructured(lin, "weight", amount=0.5)
    with wb.no_grad():
        lin.weight_orig.add_(1.0)  # the hook recomputes weight before the next forward
    x = wb.randn(3, 6)
    out = lin(x)
    expected = x @ (lin.weight_orig * lin.weight_mask).t() + lin.bias
    assert wb.allclose(out, expected)
    out.sum().backward()
    assert (lin.weight_orig.grad[lin.weight_mask == 0] == 0).all()
    assert (lin.weight_orig.grad[lin.weight_mask == 1] != 0).all()


def test_remove_and_is_pruned():
    net = wb.nn.Sequential(wb.nn.Linear(6, 4), wb.nn.Linear(4, 2))
    assert not wprune.is_pruned(net)
    wprune.random_unstructured(net[0], "weight", amount=0.5)
    wprune.random_structured(net[1], "weight", amount=1, dim=1)
    assert wprune.is_pruned(net)
    assert int((net[0].weight_mask == 0).sum()) == 12 and int((net[1].weight_mask.sum(0) == 0).sum()) == 1
    pruned = net[0].weight.detach().clone()
    wprune.remove(net[0], "weight")
    assert isinstance(net[0].weight, wb.nn.Parameter) and wb.equal(net[0].weight, pruned)
    assert "weight_mask" not in dict(net[0].named_buffers()) and not net[0]._forward_pre_hooks
    wprune.remove(net[1], "weight")
    assert not wprune.is_pruned(net)
    assert sorted(net.state_dict()) == ["0.bias", "0.weight", "1.bias", "1.weight"]


def test_pruned_module_state_dict_round_trips():
    a, b = wb.nn.Linear(6, 4), wb.nn.Linear(6, 4)
    wprune.l1_unstructured(a, "weight", amount=0.5)
    wprune.identity(b, "weight")
    b.load_state_dict(a.state_dict())
    b(wb.ones(1, 6))
    assert wb.equal(a.weight, b.weight)


@pytest.mark.parametrize("bad,exc", [
    (lambda p, mod: p.l1_unstructured(mod, "weight", amount=1.5), ValueError),
    (lambda p, mod: p.l1_unstructured(mod, "weight", amount=-1), ValueError),
    (lambda p, mod: p.l1_unstructured(mod, "weight", amount="a lot"), TypeError),
    (lambda p, mod: p.remove(mod, "weight"), ValueError),
    (lambda p, mod: p.l1_unstructured(mod, "nope", 0.5), AttributeError),
    (lambda p, mod: p.global_unstructured([(mod, "weight")], p.LnStructured, amount=0.2, n=2, dim=0), TypeError),
])
def test_errors_match_pytorch(bad, exc):
    wm, tm = _pair()
    with pytest.raises(exc):
        bad(tprune, tm)
    with pytest.raises(exc):
        bad(wprune, wm)


def test_a_failed_prune_changes_nothing():
    lin = wb.nn.Linear(6, 4)
    with pytest.raises(ValueError, match="smaller than the number of parameters"):
        wprune.l1_unstructured(lin, "weight", amount=100)
    with pytest.raises(IndexError):
        wprune.ln_structured(lin, "weight", amount=1, n=2, dim=5)
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"] and not lin._forward_pre_hooks
    assert not list(lin.named_buffers())
