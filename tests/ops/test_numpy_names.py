"""NumPy's keyword spellings (axis=, keepdims=, x=, x2=) where PyTorch's argument parser takes them."""
import numpy as np
import pytest

import workbench as wb
import workbench.nn.functional as F

torch = pytest.importorskip("torch")

A = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7.0


@pytest.mark.parametrize("call", [
    lambda m, x: x.sum(1, keepdims=True),
    lambda m, x: m.sum(x, axis=0),
    lambda m, x: x.mean(axis=(0, 2), keepdims=True),
    lambda m, x: m.max(x, axis=1).values,
    lambda m, x: x.argmax(axis=-1, keepdims=True),
    lambda m, x: x.std(axis=0),
    lambda m, x: x.softmax(axis=1),
    lambda m, x: m.cat([x, x], axis=2),
    lambda m, x: x.cumsum(axis=1),
    lambda m, x: m.linalg.norm(x, axis=2, keepdims=True),
    lambda m, x: m.logsumexp(x, axis=1),
    lambda m, x: m.sum(x=x, axis=1),
    lambda m, x: m.nn.functional.cosine_similarity(x, x + 1, axis=1),
], ids=lambda f: f.__code__.co_firstlineno)
def test_numpy_spellings_match_pytorch(call):
    ours = call(wb, wb.tensor(A))
    theirs = call(torch, torch.tensor(A))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_both_spellings_is_an_error_naming_the_op():
    with pytest.raises(TypeError, match="sum"):
        wb.ones(2).sum(dim=0, axis=0)


def test_gradients_flow_through_the_aliases():
    x = wb.tensor(A, requires_grad=True)
    x.sum(axis=1, keepdims=True).pow(2).sum().backward()
    t = torch.tensor(A, requires_grad=True)
    t.sum(axis=1, keepdims=True).pow(2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())


def test_ops_without_dim_stay_unwrapped():
    assert wb.Tensor.add is wb.add or not hasattr(wb.Tensor.add, "__wb_aliases__")
    assert not hasattr(F.relu, "__wb_aliases__")  # a Python function in torch too: no axis= there
