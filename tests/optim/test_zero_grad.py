"""Module.zero_grad and Optimizer.zero_grad are one function (nn.module.zero_grads) with PyTorch's semantics."""
import inspect

import pytest
import torch

import workbench as wb
from workbench.nn.module import zero_grads


def _after_zero_grad(lib, owner, set_to_none, create_graph):
    lin = lib.nn.Linear(2, 1)
    opt = lib.optim.SGD(lin.parameters(), lr=0.1)
    x = lib.ones(3, 2)
    lin(x).pow(2).sum().backward(create_graph=create_graph)
    lin.bias.grad = None  # a parameter without a gradient is left alone
    held = lin.weight.grad
    version = held._version
    (lin if owner == "module" else opt).zero_grad(set_to_none=set_to_none)
    g = lin.weight.grad
    return (g is None, lin.bias.grad is None, None if g is None else (g is held, g.tolist(), g.requires_grad,
            g.grad_fn is None, g._version > version), held.requires_grad if set_to_none else None)


@pytest.mark.parametrize("owner", ["module", "optimizer"])
@pytest.mark.parametrize("set_to_none", [True, False])
@pytest.mark.parametrize("create_graph", [False, True])
def test_zero_grad_matches_torch(owner, set_to_none, create_graph):
    assert _after_zero_grad(wb, owner, set_to_none, create_graph) == \
        _after_zero_grad(torch, owner, set_to_none, create_graph)


def test_module_and_optimizer_share_the_one_function():
    for fn in (wb.nn.Module.zero_grad, wb.optim.Optimizer.zero_grad):
        assert "zero_grads(" in inspect.getsource(fn)


def test_zero_grads_default_is_set_to_none():
    w = wb.nn.Parameter(wb.ones(2))
    w.sum().backward()
    zero_grads([w])
    assert w.grad is None
