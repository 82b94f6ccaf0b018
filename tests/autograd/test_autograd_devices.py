"""The autograd core on the (fake) CUDA device: backward, grad, transforms, checkpoint, device errors."""
import numpy as np
import pytest

import workbench as wb
from workbench.utils.checkpoint import checkpoint

A = np.array([[0.5, -1.0], [2.0, 0.25]])


def test_backward_grad_and_transforms_on_cuda(device):
    x = wb.tensor(A, device=device, requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    assert x.grad.device == x.device
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.exp(A) * (1 + A))
    (g,) = wb.autograd.grad(y, x, create_graph=True)
    (gg,) = wb.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.cpu().numpy(), np.exp(A) * (2 + A))
    h = wb.func.grad(lambda t: (t * t).sum())(x.detach())
    assert h.device == x.device
    z = checkpoint(lambda t: (t * t).sum(), x, use_reentrant=False)
    x.grad = None
    z.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * A)


def test_mixed_devices_error_names_op(fake_cuda):
    a = wb.ones(2, device="cuda", requires_grad=True)
    b = wb.ones(2)
    with pytest.raises(RuntimeError, match="same device.*'mul'"):
        a * b
    c = a * wb.tensor(2.0)  # a 0-dim CPU tensor acts as a scalar, as in PyTorch
    c.sum().backward()
    assert a.grad.device.type == "cuda"
