"""The Numba recipe of docs/extensions.md: a jitted CPU kernel (and its backward) registered as a custom op."""
import math

import numpy as np
import pytest

import workbench as wb
from workbench.library import custom_op, opcheck

numba = pytest.importorskip("numba")


@numba.njit
def _swish_fwd(x, y):  # x, y: flat arrays of one dtype; Numba compiles one version per dtype
    for i in range(x.size):
        y[i] = x[i] / (1.0 + math.exp(-x[i]))


@numba.njit
def _swish_bwd(x, g, dx):
    for i in range(x.size):
        s = 1.0 / (1.0 + math.exp(-x[i]))
        dx[i] = g[i] * (s + x[i] * s * (1.0 - s))


@custom_op("wbnumba::swish", mutates_args=(), device_types="cpu")
def swish(x: wb.Tensor) -> wb.Tensor:
    xa = x.contiguous().numpy().reshape(-1)
    y = np.empty_like(xa)
    _swish_fwd(xa, y)
    return wb.from_numpy(y).reshape(x.shape)


@custom_op("wbnumba::swish_backward", mutates_args=(), device_types="cpu")
def swish_backward(x: wb.Tensor, g: wb.Tensor) -> wb.Tensor:
    xa, ga = x.contiguous().numpy().reshape(-1), g.contiguous().numpy().reshape(-1)
    dx = np.empty_like(xa)
    _swish_bwd(xa, ga, dx)
    return wb.from_numpy(dx).reshape(x.shape)


swish.register_fake(lambda x: wb.empty_like(x))
swish.register_autograd(lambda ctx, g: swish_backward(ctx.saved_tensors[0], g),
                        setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))


def test_numba_op_end_to_end():
    x = wb.randn(2, 5, dtype=wb.float64, requires_grad=True)
    y = swish(x)
    xn = x.detach().numpy()
    np.testing.assert_allclose(y.detach().numpy(), xn / (1 + np.exp(-xn)), rtol=1e-12)
    assert y.grad_fn.op == "wbnumba::swish"
    assert wb.autograd.gradcheck(swish, (x,))
    assert set(opcheck(swish, (x,)).values()) == {"SUCCESS"}
    x32 = wb.randn(3, 4, requires_grad=True)
    swish(x32).sum().backward()
    xr = x32.detach().requires_grad_()
    wb.nn.functional.silu(xr).sum().backward()
    assert x32.grad.dtype == wb.float32
    np.testing.assert_allclose(x32.grad.numpy(), xr.grad.numpy(), rtol=1e-5, atol=1e-7)
