"""workbench.utils.hooks.RemovableHandle: one handle class behind autograd, nn, optim hooks and tape listeners,
behaving as torch.utils.hooks.RemovableHandle."""
import collections
import copy
import pickle

import pytest
import torch

import workbench as wb
from workbench.utils.hooks import RemovableHandle, add_hook


@pytest.mark.parametrize("lib", [wb, torch], ids=["workbench", "torch"])
def test_handle_protocol_as_pytorch(lib):
    H = lib.utils.hooks.RemovableHandle
    hooks, extra1, extra2 = collections.OrderedDict(), collections.OrderedDict(), collections.OrderedDict()
    h = H(hooks, extra_dict=[extra1, extra2])
    h2 = H(hooks, extra_dict=extra1)
    assert h2.id == h.id + 1 and H.next_id == h2.id + 1  # ids count up across all handles
    hooks[h.id] = hooks[h2.id] = print
    extra1[h.id] = extra2[h.id] = extra1[h2.id] = True
    h.remove()
    assert list(hooks) == [h2.id] and list(extra1) == [h2.id] and not extra2
    h.remove()  # twice is harmless
    with h2 as same:
        assert same is h2
    assert not hooks and not extra1
    state = h2.__getstate__()
    assert state[:2] == (hooks, h2.id) and state[2] == (extra1,)


@pytest.mark.parametrize("lib", [wb, torch], ids=["workbench", "torch"])
def test_handle_outlives_its_dict_and_pickles(lib):
    H = lib.utils.hooks.RemovableHandle
    d = collections.OrderedDict()
    h = H(d)
    d[h.id] = len
    back = pickle.loads(pickle.dumps((d, h)))
    assert isinstance(back[1], H) and back[1].id == h.id
    back[1].remove()
    assert back[0] == {} and d == {h.id: len}
    del d
    h.remove()  # the dict is gone: nothing to do
    orphan = copy.copy(h)
    orphan.__setstate__((None, 10 ** 6))
    orphan.remove()
    assert H.next_id > 10 ** 6


def _call_order(lib, prepend_second):
    m = lib.nn.Identity()
    calls = []
    m.register_forward_pre_hook(lambda mod, a: calls.append("a"))
    m.register_forward_pre_hook(lambda mod, a: calls.append("b"), prepend=prepend_second)
    hk = m.register_forward_hook(lambda mod, a, kw, out: calls.append(("kw", sorted(kw))), with_kwargs=True)
    m(lib.ones(1))
    hk.remove()
    m(lib.ones(1))
    return calls, sorted(m.__dict__[k] == {} for k in ("_forward_hooks", "_forward_hooks_with_kwargs"))


@pytest.mark.parametrize("prepend", [False, True])
def test_module_hooks_order_prepend_and_removal_match_torch(prepend):
    assert _call_order(wb, prepend) == _call_order(torch, prepend)


def test_every_register_returns_the_one_handle_class():
    m = wb.nn.Linear(2, 1)
    opt = wb.optim.SGD(m.parameters(), lr=0.1)
    x = wb.ones(2, requires_grad=True)
    y = x * 2
    handles = [m.register_forward_pre_hook(lambda *a: None), m.register_forward_hook(lambda *a: None),
               m.register_full_backward_hook(lambda *a: None), m.register_full_backward_pre_hook(lambda *a: None),
               m.register_state_dict_post_hook(lambda *a: None),
               m.register_load_state_dict_post_hook(lambda *a: None),
               opt.register_step_pre_hook(lambda *a: None), opt.register_step_post_hook(lambda *a: None),
               opt.register_state_dict_pre_hook(lambda *a: None), opt.register_load_state_dict_post_hook(lambda *a: None),
               x.register_hook(lambda g: None), x.register_post_accumulate_grad_hook(lambda t: None),
               y.grad_fn.register_hook(lambda *a: None), y.grad_fn.register_prehook(lambda *a: None),
               wb.autograd.graph.add_listener(lambda *a: None)]
    assert all(type(h) is RemovableHandle for h in handles)
    assert wb.autograd.graph.RemovableHandle is RemovableHandle
    for h in handles:
        h.remove()
    assert not wb.autograd.graph.LISTENERS
    assert not any(m.__dict__[k] for k in m.__dict__ if k.endswith("hooks"))
    assert not any(v for k, v in vars(opt).items() if k.endswith("hooks"))


def test_forward_hook_flags_leave_with_the_hook():
    m = wb.nn.Identity()
    h = m.register_forward_hook(lambda mod, a, kw, out: None, with_kwargs=True, always_call=True)
    assert m._forward_hooks_with_kwargs == {h.id: True} and m._forward_hooks_always_called == {h.id: True}
    h.remove()
    assert not m._forward_hooks and not m._forward_hooks_with_kwargs and not m._forward_hooks_always_called


def test_optimizer_hook_prepend_order():
    w = wb.nn.Parameter(wb.ones(1))
    opt = wb.optim.SGD([w], lr=0.1)
    seen = []
    opt.register_state_dict_pre_hook(lambda o: seen.append(1))
    opt.register_state_dict_pre_hook(lambda o: seen.append(0), prepend=True)
    opt.state_dict()
    assert seen == [0, 1]


def test_add_hook_prepends():
    d = collections.OrderedDict()
    a, b = add_hook(d, "a"), add_hook(d, "b", prepend=True)
    assert list(d.values()) == ["b", "a"] and list(d) == [b.id, a.id]
