"""batch_norm's per-channel Numba loops (``fused.channel_norm``, ``channel_norm_grad``) and the NumPy form
they replace, against PyTorch on inputs above ``fused.MIN_SIZE``: values, running statistics, gradients of
input, weight and bias, with and without the affine, tiny and denormal values in the batch."""
import numpy as np
import pytest
import torch

import workbench as wb
from workbench._backend import fused


@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("shape", [(64, 16, 8, 8), (256, 8, 20)])
def test_batch_norm_training_matches_pytorch(shape, affine, loops):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    x.reshape(-1)[:3] = [1e-45, -1e-40, 1e-38]
    x[:, 1] = 1e-30 * rng.standard_normal(x[:, 1].shape).astype(np.float32)  # a channel of tiny values
    c = shape[1]
    g = rng.standard_normal(shape).astype(np.float32)
    w0, b0 = (rng.standard_normal(c).astype(np.float32) for _ in range(2))
    out = []
    for lib in (wb, torch):
        xt = lib.tensor(x, requires_grad=True)
        w = lib.tensor(w0, requires_grad=True) if affine else None
        b = lib.tensor(b0, requires_grad=True) if affine else None
        rm, rv = lib.zeros(c), lib.ones(c)
        y = lib.nn.functional.batch_norm(xt, rm, rv, w, b, training=True)
        y.backward(lib.tensor(g))
        out.append([y.detach().numpy(), rm.numpy(), rv.numpy(), xt.grad.numpy()]
                   + ([w.grad.numpy(), b.grad.numpy()] if affine else []))
    for i, (a, b) in enumerate(zip(*out)):
        # weight/bias gradients are sums over 65 K products: PyTorch's float32 sums are ~1e-5 off the exact
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6 if i < 4 else 1e-4)


def test_float64_loop_equals_the_gradchecked_numpy_form():
    """In float64 the loops serve too; they agree with the NumPy form (which the op specs gradcheck)."""
    if fused._numba() is None:
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(1)
    x, g, w0, b0 = rng.standard_normal((32, 8, 16, 16)), rng.standard_normal((32, 8, 16, 16)), *rng.standard_normal((2, 8))
    res, was = [], fused.ENABLED[0]
    try:
        for on in (True, False):
            fused.ENABLED[0] = on
            xt, w, b = (wb.tensor(a, requires_grad=True) for a in (x, w0, b0))
            y = wb.nn.functional.batch_norm(xt, None, None, w, b, training=True)
            y.backward(wb.tensor(g))
            res.append([y.detach().numpy(), xt.grad.numpy(), w.grad.numpy(), b.grad.numpy()])
    finally:
        fused.ENABLED[0] = was
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11)
