"""linear's float32 product in the transposed orientation (``ops.linear._product_by_rows``: ``w @ x.T`` moved
back into rows by ``fused.transpose_add``, with the bias added in the same pass) where
``blas.transposed_product_pays`` says OpenBLAS runs it faster: it is taken exactly there (not in float64, where
OpenBLAS's edge kernels round differently), gives the bits of the product as written (``x @ w.T``, then
``+= b``), keeps signed zeros and non-finite values, returns a C-contiguous result as PyTorch's does, and
matches PyTorch's values and gradients (with and without a bias, 2-D and batched input). Also the bias gradient's
one-call column sums (``fused.col_sums``): NumPy's ``g.sum(0)`` bit for bit where taken (C rows of >= 2
columns), NumPy's own sum elsewhere."""
import numpy as np
import pytest
import torch

import workbench as wb
import workbench.nn.functional as F
from workbench._backend import blas, fused
from workbench.ops import linear as linear_mod

pytestmark = pytest.mark.skipif(fused._numba() is None or not fused.ENABLED[0]
                                or blas.core() not in blas.TRANSPOSED_PRODUCT_CORES,
                                reason="numba is not installed, WORKBENCH_NUMBA=0, or OpenBLAS's kernels here were "
                                       "not measured (the product stays as written)")

# (rows, in, out): the digits MLP's two hidden layers, a thin batch against a wide layer, odd sizes, in > 384
# (OpenBLAS splits such sums into blocks), and shapes the rule leaves as written
TAKEN = [(64, 256, 256), (64, 64, 256), (8, 64, 512), (33, 130, 257), (16, 520, 300), (128, 256, 512),
         (64, 256, 128)]
LEFT = [(64, 32, 256), (4, 64, 256), (8, 8, 128), (256, 256, 512), (64, 256, 64), (1, 1, 256)]


@pytest.fixture
def calls(monkeypatch):
    got = []
    loop = fused.transpose_add
    monkeypatch.setattr(fused, "transpose_add", lambda *a: got.append(1) or loop(*a))
    return got


def _operands(m, k, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)).astype(dtype)
    w = (rng.standard_normal((n, k)) / np.sqrt(k)).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    return x, w, b


def test_the_rule_takes_thin_batches_against_wide_layers():
    assert all(blas.transposed_product_pays(m, n, k) for m, k, n in TAKEN)
    assert not any(blas.transposed_product_pays(m, n, k) for m, k, n in LEFT)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("m,k,n", TAKEN)
def test_transposed_product_is_the_product_as_written_bit_for_bit(m, k, n, bias, dtype, calls):
    x, w, b = _operands(m, k, n, dtype)
    x[0, :3] = [np.nan, np.inf, -np.inf]
    w[1, :] = -0.0  # with x[:, 0] >= 0 a row of -0.0 products sums to -0.0 unless a bias is added
    x[:, 0] = np.abs(x[:, 0])
    want = x @ w.T
    if bias:
        want += b
    y = F.linear(wb.tensor(x), wb.tensor(w), wb.tensor(b) if bias else None)
    assert calls == ([1] if dtype == np.float32 else [])
    got = y.numpy()
    assert got.dtype == dtype and y.is_contiguous() and y.stride() == (n, 1)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("m,k,n", LEFT)
def test_other_shapes_and_layouts_keep_the_product_as_written(m, k, n, calls):
    x, w, b = _operands(m, k, n, np.float32)
    F.linear(wb.tensor(x), wb.tensor(w), wb.tensor(b))
    x, w, b = _operands(*TAKEN[0], np.float32)
    F.linear(wb.tensor(np.asfortranarray(x)), wb.tensor(w), wb.tensor(b))  # an F-ordered input
    F.linear(wb.tensor(x), wb.tensor(w), wb.tensor(b).expand(2, -1)[0])  # a bias that is a view
    F.linear(wb.tensor(x), wb.tensor(w).T.contiguous().T, wb.tensor(b))  # an F-ordered weight
    assert calls == [1]  # the bias view is still a C-contiguous (n,) array; the F-ordered operands are not


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("m,k,n", TAKEN[:2])
def test_values_and_gradients_match_pytorch(m, k, n, dtype, tol, calls):
    x, w, b = _operands(m, k, n, dtype)
    x = np.stack([x, x[::-1]])  # batched: the leading dims fold into the rows (2m rows still taken)
    g = np.random.default_rng(1).standard_normal((2, m, n)).astype(dtype)
    out = {}
    for lib in (wb, torch):
        xt, wt, bt = (lib.tensor(a.copy(), requires_grad=True) for a in (x, w, b))
        y = F.linear(xt, wt, bt) if lib is wb else torch.nn.functional.linear(xt, wt, bt)
        y.backward(lib.tensor(g))
        out[lib] = [t.detach().numpy() for t in (y, xt.grad, wt.grad, bt.grad)]
    assert calls == ([1] if dtype == np.float32 and blas.transposed_product_pays(2 * m, n, k) else [])
    for a, e in zip(out[wb], out[torch]):
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol)


def test_without_the_loops_the_product_is_as_written(monkeypatch, calls):
    monkeypatch.setattr(fused, "ENABLED", [False])
    x, w, b = _operands(*TAKEN[0], np.float32)
    assert linear_mod._product_by_rows(x, w, b) is None
    want = x @ w.T
    want += b
    np.testing.assert_array_equal(F.linear(wb.tensor(x), wb.tensor(w), wb.tensor(b)).numpy(), want)
    assert calls == []


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(64, 256), (64, 10), (1000, 17), (5000, 2), (1, 3), (3, 2, 300)])
def test_bias_gradient_is_numpys_column_sum_bit_for_bit(shape, dtype, monkeypatch):
    got = []
    loop = fused.col_sums
    monkeypatch.setattr(fused, "col_sums", lambda *a: got.append(1) or loop(*a))
    rng = np.random.default_rng(2)
    n = shape[-1]
    g = (rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 8, shape)).astype(dtype)
    g[..., 0] = -0.0  # a column of -0.0 sums to 0.0 (from NumPy's 0.0 start), as before
    x = wb.tensor(rng.standard_normal(shape[:-1] + (4,)).astype(dtype))
    w = wb.tensor(rng.standard_normal((n, 4)).astype(dtype))
    b = wb.tensor(np.zeros(n, dtype), requires_grad=True)
    F.linear(x, w, b).backward(wb.tensor(g))
    assert got == [1]
    want = g.reshape(-1, n).sum(0)
    np.testing.assert_array_equal(b.grad.numpy(), want)
    np.testing.assert_array_equal(np.signbit(b.grad.numpy()), np.signbit(want))


def test_bias_gradient_keeps_numpys_sum_for_one_column_and_views(monkeypatch):
    got = []
    loop = fused.col_sums
    monkeypatch.setattr(fused, "col_sums", lambda *a: got.append(1) or loop(*a))
    rng = np.random.default_rng(3)
    for g in (rng.standard_normal((5000, 1)).astype(np.float32),  # one column: NumPy's pairwise sum
              rng.standard_normal((300, 8)).astype(np.float32).T.copy().T):  # F-ordered
        n = g.shape[1]
        b = wb.tensor(np.zeros(n, np.float32), requires_grad=True)
        F.linear(wb.tensor(np.ones((g.shape[0], 2), np.float32)), wb.tensor(np.ones((n, 2), np.float32)),
                 b).backward(wb.tensor(g))
        np.testing.assert_array_equal(b.grad.numpy(), g.sum(0))
    assert got == []


@pytest.mark.parametrize("m,k,n", TAKEN + LEFT)
def test_matmul_with_a_transposed_weight_gives_the_product_as_written(m, k, n, calls):
    # x @ w.T (and the backward's g @ b.T of a 2-D matmul) takes the same orientation as linear, with its bits
    x, w, _ = _operands(m, k, n, np.float32)
    a, b = wb.tensor(x, requires_grad=True), wb.tensor(w, requires_grad=True)
    y = a @ b.T
    assert len(calls) == int((m, k, n) in TAKEN)
    np.testing.assert_array_equal(y.detach().numpy(), x @ w.T)
    g = np.random.default_rng(1).standard_normal((m, n)).astype(np.float32)
    wt = w.T.copy()
    c = wb.tensor(wt, requires_grad=True)  # (k, n): the backward's ga = g @ c.T
    (a @ c).backward(wb.tensor(g))
    np.testing.assert_array_equal(a.grad.numpy(), g @ wt.T)
    np.testing.assert_array_equal(c.grad.numpy(), x.T @ g)
    t = torch.tensor(x, requires_grad=True)
    (t @ torch.tensor(w.T.copy())).backward(torch.tensor(g))
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-4)
