"""out= on the functions that compute their result whole (creation, fft frequencies, the linalg
decompositions): the result lands in the given tensors, which are returned (a named tuple stays named),
with the values PyTorch writes; a bad tuple changes none of its tensors."""
import numpy as np
import pytest
import torch

import workbench as wb

A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])

SINGLE = [
    ("full", lambda m, o: m.full((2, 3), 1.5, out=o)),
    ("arange", lambda m, o: m.arange(1, 7, 2, out=o)),
    ("linspace", lambda m, o: m.linspace(0, 1, 5, out=o)),
    ("logspace", lambda m, o: m.logspace(0, 2, 3, out=o)),
    ("eye", lambda m, o: m.eye(3, out=o)),
    ("fftfreq", lambda m, o: m.fft.fftfreq(6, out=o)),
    ("rfftfreq", lambda m, o: m.fft.rfftfreq(6, 0.5, out=o)),
    ("matrix_rank", lambda m, o: m.linalg.matrix_rank(m.tensor(A), out=o)),
]


@pytest.mark.parametrize("name,call", SINGLE, ids=[c[0] for c in SINGLE])
def test_single_result_goes_into_out(name, call):
    results = []
    for m in (wb, torch):
        o = m.empty(0, dtype=m.int64 if name == "matrix_rank" else m.float64)
        r = call(m, o)
        assert r is o
        results.append(o.numpy())
    assert results[0].dtype == results[1].dtype
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


TUPLES = [
    ("linalg.qr", lambda m: m.linalg.qr, 2, "Q"),
    ("linalg.eigh", lambda m: m.linalg.eigh, 2, "eigenvalues"),
    ("linalg.svd", lambda m: m.linalg.svd, 3, "S"),
    ("linalg.slogdet", lambda m: m.linalg.slogdet, 2, "logabsdet"),
    ("linalg.cholesky_ex", lambda m: m.linalg.cholesky_ex, 2, "L"),
    ("linalg.lu_factor", lambda m: m.linalg.lu_factor, 2, "LU"),
    ("svd", lambda m: m.svd, 3, "S"),
]


@pytest.mark.parametrize("name,fn,n,field", TUPLES, ids=[c[0] for c in TUPLES])
def test_tuple_result_goes_into_out(name, fn, n, field):
    got = {}
    for m in (wb, torch):
        ref = fn(m)(m.tensor(A))
        outs = tuple(m.empty(0, dtype=r.dtype) for r in ref)
        r = fn(m)(m.tensor(A), out=outs)
        assert all(a is b for a, b in zip(r, outs)) and any(getattr(r, field) is o for o in outs)
        got[m] = getattr(r, field).numpy()
    np.testing.assert_allclose(got[wb], got[torch], rtol=1e-10, atol=1e-12)


def test_a_bad_out_tuple_writes_nothing():
    Q = wb.full((3, 3), 7.0, dtype=wb.float64)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double, but got long int"):
        wb.linalg.qr(wb.tensor(A), out=(Q, wb.empty(2, dtype=wb.int64)))
    assert (Q == 7).all()
    with pytest.raises(TypeError, match="tuple of 2"):
        wb.linalg.qr(wb.tensor(A), out=Q)


def test_a_wrong_shape_out_is_resized_with_pytorchs_warning():
    for m in (wb, torch):
        o = m.ones(4, 3)
        with pytest.warns(UserWarning, match=r"resized since it had shape \[4, 3\], which does not match the required "
                                              r"output shape \[2, 3\]"):
            r = m.exp(m.zeros(2, 3), out=o)
        assert r is o and tuple(o.shape) == (2, 3) and (o == 1).all()


def test_out_refuses_autograd_as_pytorch():
    for m in (wb, torch):
        with pytest.raises(RuntimeError):
            m.linalg.eigh(m.tensor(A, requires_grad=True), out=(m.empty(0, dtype=m.float64), m.empty(0, dtype=m.float64)))
