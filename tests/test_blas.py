"""_backend.blas.axpy: y += a * x in one pass through NumPy's own BLAS, and the optimizers that use it."""
import numpy as np
import pytest
import torch

import workbench as wb
from workbench._backend import blas

needs_blas = pytest.mark.skipif(not blas.one_pass(), reason="no BLAS axpy that rounds every entry once found in this "
                                "process (blas.fuses: OpenBLAS's Haswell kernels leave a tail unfused)")


@needs_blas
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_axpy_matches_numpy(dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 200)).astype(dtype)
    y = rng.standard_normal((300, 200)).astype(dtype)
    want = y + dtype(-0.37) * x
    assert blas.axpy(-0.37, x, y)
    np.testing.assert_allclose(y, want, rtol=1e-6 if dtype == np.float32 else 1e-14, atol=1e-6)


@pytest.mark.parametrize("n", [3 * blas.MIN_SIZE + 29, 2 * blas.MIN_SIZE + 1])
def test_axpy_runs_only_where_it_rounds_every_entry_once(n):
    """The optimizers' loops reproduce axpy's one rounding per entry; where the BLAS leaves some entries with two
    (a kernel's tail), axpy declines and everything takes the two-pass form. y = -(a x) rounded shows which."""
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    a = np.float32(0.731)
    y = -(x * a)
    once = (np.float64(a) * x.astype(np.float64) + y).astype(np.float32)  # exact: the product's rounding error
    assert (once != 0).mean() > 0.9
    ran = blas.axpy(a, x, y)
    assert ran == (blas.available() and blas.fuses())
    np.testing.assert_array_equal(y, once if ran else -(x * a))


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
