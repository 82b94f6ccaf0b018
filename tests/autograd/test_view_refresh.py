"""A view made before a recorded in-place op on its base (or on another view of the base) differentiates
through the new values, as PyTorch, which regenerates a view's grad_fn when its base's version moved: the
view's node is replaced by one replayed from the rewritten base (``Tensor._refresh_views``; the views are kept
weakly on their non-leaf base by ``function._register_view``). Before, such a view kept its old node and its
gradient was silently wrong."""
import gc

import numpy as np
import pytest
import torch

import workbench as wb

W = [[1.0, 2.0], [3.0, 4.0]]

CASES = {
    # name: (make views from y, the in-place op, what is used afterwards)
    "sibling slice": (lambda y: (y[0:2], y[1:3]), lambda a, b: a.mul_(2), lambda a, b: b * torch_or_wb().tensor([1.0, 10.0])),
    "base in place": (lambda y: (y[0:2], None), None, lambda a, b: a * torch_or_wb().tensor([1.0, 10.0])),
    "view of a view": (lambda y: (y[:4].view(2, 2)[1], y[:4].view(2, 2).t()), lambda c, d: c.mul_(5),
                       lambda c, d: d * torch_or_wb().tensor(W)),
    "the written view itself and its sibling": (lambda y: (y[0:2], y[0:3]), lambda a, b: a.add_(a),
                                                lambda a, b: a.sum() * 3 + (b * b).sum()),
    "two ops in a row": (lambda y: (y[0:2], y[1:4]), lambda a, b: (a.mul_(2), b.add_(1)),
                         lambda a, b: (a * b[:2]).sum() + b.sum()),
    "expand, store a row": (lambda y: (y[:3].expand(2, 3), None), "e[0] = 7.0",
                            lambda e, _: e * torch_or_wb().tensor([[1.0], [2.0]])),
    "expand, store an element": (lambda y: (y[:3].expand(2, 3), None), "e[0, 1] = 5.0",
                                 lambda e, _: e * torch_or_wb().tensor([[1.0], [2.0]])),
}
_LIB = [None]


def torch_or_wb():
    return _LIB[0]


def _run(lib, name):
    _LIB[0] = lib
    make, op, use = CASES[name]
    x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x * 1
    a, b = make(y)
    if op is None:
        y.mul_(3)
    elif isinstance(op, str):
        exec(op, {"e": a})
    else:
        op(a, b)
    out = use(a, b)
    out.sum().backward()
    return out.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("name", sorted(CASES))
def test_views_made_before_an_in_place_op_differentiate_the_new_values(name):
    (wo, wg), (to, tg) = _run(wb, name), _run(torch, name)
    np.testing.assert_array_equal(wo, to)
    np.testing.assert_array_equal(wg, tg)


def test_dead_views_are_dropped_and_leaves_keep_no_list():
    w = wb.ones(4, requires_grad=True)
    for _ in range(200):
        w.view(2, 2).sum()  # views of a leaf: nothing to refresh (in place on it needs no_grad)
    assert "_views" not in w.__dict__
    y = w * 1
    for _ in range(200):
        y.view(2, 2)
    gc.collect()
    assert len(y.__dict__["_views"]) <= 64
    keep = [y.view(4, 1) for _ in range(3)]
    y.mul_(2)
    assert all(k.grad_fn is not None and type(k.grad_fn).__name__ == "ViewBackward0" for k in keep)
    gc.collect()
    # the refresh's own replays are temporaries: they do not stay on the list (nor make it grow while it runs)
    assert len(y.__dict__["_views"]) == 3
    x = wb.ones(3, requires_grad=True)
    y = x * 1
    a, b = y[0:2], y[1:3]
    a.mul_(2)
    gc.collect()
    assert sum(r() is not None for r in y.__dict__["_views"]) == 2 and len(y.__dict__["_views"]) <= 3


def test_gradcheck_through_a_refreshed_view():
    x = wb.tensor(np.random.default_rng(0).standard_normal(5), requires_grad=True)

    def f(x):
        y = x * 1
        a, b = y[0:3], y[2:5]
        a.mul_(3.0)
        return (b * b).sum()

    assert wb.autograd.gradcheck(f, (x,))
    assert wb.autograd.gradgradcheck(f, (x,))
