"""_backend.blas.axpy: y += a * x in one pass through NumPy's own BLAS, and the optimizers that use it."""
import numpy as np
import pytest
import torch

import workbench as wb
from workbench._backend import blas

needs_blas = pytest.mark.skipif(not blas.available(), reason="no BLAS axpy found in this process")


@needs_blas
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_axpy_matches_numpy(dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 200)).astype(dtype)
    y = rng.standard_normal((300, 200)).astype(dtype)
    want = y + dtype(-0.37) * x
    assert blas.axpy(-0.37, x, y)
    np.testing.assert_allclose(y, want, rtol=1e-6 if dtype == np.float32 else 1e-14, atol=1e-6)


def test_axpy_declines_what_it_cannot_do():
    big = np.ones(1 << 15, np.float32)
    assert not blas.axpy(1.0, np.ones(8, np.float32), np.ones(8, np.float32))  # small: the ufuncs are as fast
    assert not blas.axpy(1.0, big.astype(np.float64), big.copy())  # mixed dtypes
    assert not blas.axpy(1.0, big.reshape(2, -1)[:, ::2], np.ones((2, 1 << 13), np.float32))  # not contiguous
    assert not blas.axpy(1.0, big[: 1 << 14], big[1 << 13: 3 << 13])  # overlapping
    assert not blas.axpy(1, np.ones(1 << 15, np.int64), np.ones(1 << 15, np.int64))  # integers
    y = big.copy()
    y.flags.writeable = False
    assert not blas.axpy(1.0, big, y)
    assert (big == 1).all()


@pytest.mark.parametrize("opt,kw", [("SGD", {"lr": 0.1}), ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
                                    ("Adam", {"lr": 1e-2}), ("AdamW", {"lr": 1e-2, "amsgrad": True})])
def test_optimizers_on_large_parameters_match_torch(opt, kw):
    # parameters above blas.MIN_SIZE take the one-pass update
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((256, 128)).astype(np.float32)
    tw = torch.nn.Parameter(torch.tensor(w0))
    ww = wb.nn.Parameter(wb.tensor(w0))
    topt, wopt = getattr(torch.optim, opt)([tw], **kw), getattr(wb.optim, opt)([ww], **kw)
    for i in range(4):
        g = rng.standard_normal(w0.shape).astype(np.float32)
        tw.grad, ww.grad = torch.tensor(g), wb.tensor(g)
        topt.step()
        wopt.step()
    np.testing.assert_allclose(ww.detach().numpy(), tw.detach().numpy(), rtol=1e-5, atol=1e-6)
