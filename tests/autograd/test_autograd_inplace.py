"""In-place semantics: version counters shared by views, saved-tensor checks, leaves, views, setitem."""
import numpy as np
import pytest
import torch

import workbench as wb

A = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]])


def close(a, b):
    np.testing.assert_allclose(np.asarray(a.detach()._data), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def both(fn):
    x, tx = wb.tensor(A, requires_grad=True), torch.tensor(A, requires_grad=True)
    fn(wb, x).sum().backward()
    fn(torch, tx).sum().backward()
    close(x.grad, tx.grad)


def test_versions_shared_by_views():
    x = wb.zeros(2, 3)
    v = x[0]
    r = x.reshape(6)
    x.add_(1)
    assert x._version == v._version == r._version == 1
    v.mul_(2)
    assert x._version == 2 and r._version == 2
    d = x.detach()
    d.zero_()
    assert x._version == 3


def test_modifying_a_saved_tensor_names_op_scope_and_line():
    x = wb.tensor(A, requires_grad=True)
    with wb.autograd.graph.scope("encoder.0"):
        h = x * 2
        y = h.exp()  # exp saves its output
    y.add_(1)  # modified here
    line = test_modifying_a_saved_tensor_names_op_scope_and_line.__code__.co_firstlineno + 5
    with pytest.raises(RuntimeError) as e:
        y.sum().backward()
    msg = str(e.value)
    assert "modified by an inplace operation" in msg
    assert "ExpBackward0" in msg and "encoder.0" in msg
    assert "add_" in msg and f"test_autograd_inplace.py:{line}" in msg
    assert "version 1; expected version 0" in msg


def test_leaf_refuses_inplace_except_under_no_grad():
    x = wb.tensor(A, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x[0] = 1.0
    with wb.no_grad():
        x.add_(1)
        x[0, 0] = 5.0
    assert x._version == 2 and float(x[0, 0]) == 5.0


def test_inplace_on_nonleaf_gradients():
    both(lambda m, x: (x * 2).mul_(x).add_(1).exp_())


def test_inplace_on_view_of_nonleaf():
    def f(m, x):
        h = x * 1
        h[0].mul_(3)
        h[:, 1].add_(h[1, 2] * 2)
        return h * h

    both(f)


def test_setitem_with_tensor_value_and_index_put():
    def f(m, x):
        h = x.sin()
        h[0, 1] = x[1, 0] * 4
        h[1] = x[0] * x[1]
        return h * 2

    both(f)

    def g(m, x):
        h = x * 1
        idx = (m.tensor([0, 1, 1]), m.tensor([2, 0, 2]))
        return h.index_put_(idx, x[0] * 10, accumulate=True)

    both(g)


def test_view_of_leaf_inplace_then_backward():
    def f(m, x):
        base = x.clone()
        v = base.view(6)
        v.mul_(2)
        return base * x

    both(f)
