"""Linear algebra beyond the generic spec suite: errors vs PyTorch, einsum corner cases, matmul
broadcasting, decomposition outputs and modes, higher-order gradients, devices."""
import numpy as np
import pytest

import workbench as wb

from _op_errors import assert_same_error

torch = pytest.importorskip("torch")


def _m(L, *shape):
    return L.arange(int(np.prod(shape)), dtype=L.float64).reshape(*shape)


ERRORS = {
    "mm_shapes": lambda L: L.mm(_m(L, 2, 3), _m(L, 2, 3)),
    "mm_3d": lambda L: L.mm(_m(L, 2, 2, 2), _m(L, 2, 2)),
    "bmm_batch": lambda L: L.bmm(_m(L, 2, 2, 3), _m(L, 3, 3, 2)),
    "mv_shapes": lambda L: L.mv(_m(L, 2, 3), _m(L, 2)),
    "dot_dtypes": lambda L: L.dot(_m(L, 3), _m(L, 3).float()),
    "dot_2d": lambda L: L.dot(_m(L, 3, 1), _m(L, 3)),
    "matmul_0d": lambda L: L.matmul(L.tensor(1.0), _m(L, 3)),
    "matmul_shapes": lambda L: _m(L, 2, 3) @ _m(L, 2, 3),
    "inner_shapes": lambda L: L.inner(_m(L, 2, 3), _m(L, 2)),
    "outer_2d": lambda L: L.outer(_m(L, 2, 2), _m(L, 2)),
    "trace_3d": lambda L: L.trace(_m(L, 2, 2, 2)),
    "tensordot_sizes": lambda L: L.tensordot(_m(L, 2, 3), _m(L, 2, 3), dims=([1], [0])),
    "cross_size": lambda L: L.linalg.cross(_m(L, 2, 2), _m(L, 2, 2)),
    "einsum_operand_count": lambda L: L.einsum("ij,jk", _m(L, 2, 2)),
    "einsum_ndim": lambda L: L.einsum("ijk", _m(L, 2, 2)),
    "einsum_sizes": lambda L: L.einsum("ij,ij->i", _m(L, 2, 3), _m(L, 2, 2)),
    "einsum_output_repeat": lambda L: L.einsum("ij->ii", _m(L, 2, 2)),
    "einsum_output_unknown": lambda L: L.einsum("ij->k", _m(L, 2, 2)),
    "inv_nonsquare": lambda L: L.linalg.inv(_m(L, 2, 3)),
    "inv_1d": lambda L: L.linalg.inv(_m(L, 3)),
    "inv_int": lambda L: L.linalg.inv(L.eye(2, dtype=L.int64)),
    "inv_singular": lambda L: L.linalg.inv(L.ones(2, 2)),
    "det_nonsquare": lambda L: L.linalg.det(_m(L, 2, 3)),
    "solve_shapes": lambda L: L.linalg.solve(L.eye(3, dtype=L.float64), _m(L, 2, 1)),
    "solve_singular": lambda L: L.linalg.solve(L.zeros(2, 2), L.ones(2)),
    "solve_dtypes": lambda L: L.linalg.solve(L.eye(2, dtype=L.float64), L.ones(2)),
    "cholesky_not_pd": lambda L: L.linalg.cholesky(-L.eye(2)),
    "qr_mode": lambda L: L.linalg.qr(_m(L, 2, 2), mode="full"),
    "eigh_uplo": lambda L: L.linalg.eigh(L.eye(2), UPLO="X"),
    "matrix_norm_1d": lambda L: L.linalg.matrix_norm(_m(L, 3)),
    "matrix_norm_ord": lambda L: L.linalg.matrix_norm(_m(L, 2, 2), 3),
    "vector_norm_int": lambda L: L.linalg.vector_norm(L.tensor([1, 2])),
    "norm_3d_with_ord": lambda L: L.linalg.norm(_m(L, 2, 2, 2), 2),
    "multi_dot_one": lambda L: L.linalg.multi_dot([_m(L, 2, 2)]),
    "matrix_power_nonsquare": lambda L: L.linalg.matrix_power(_m(L, 2, 3), 2),
    "lstsq_rows": lambda L: L.linalg.lstsq(_m(L, 3, 2), _m(L, 2, 1)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_pytorch(name):
    assert_same_error(ERRORS[name])


def test_linalg_error_is_a_runtime_error_subclass():
    with pytest.raises(wb.linalg.LinAlgError, match="singular"):
        wb.linalg.inv(wb.zeros(2, 2))
    assert issubclass(wb.linalg.LinAlgError, RuntimeError)


def _both(fn, *arrays, grad=True):
    res = []
    for L in (wb, torch):
        ts = [L.tensor(a, requires_grad=grad) for a in arrays]
        out = fn(L, *ts)
        if grad:
            out.backward(L.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape))))
        res.append((out.detach().numpy(), [t.grad.numpy() for t in ts] if grad else []))
    (o, g), (to, tg) = res
    np.testing.assert_allclose(o, to, rtol=1e-10, atol=1e-12)
    for a, b in zip(g, tg):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


rng = np.random.default_rng(0)


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((3,), (2, 3, 4)), ((2, 1, 4, 3), (3,)), ((2, 1, 2, 3), (4, 3, 2)),
                                   ((1, 3), (5, 3, 1))])
def test_matmul_broadcasting_and_1d_gradients(sa, sb):
    _both(lambda L, a, b: a @ b, rng.standard_normal(sa), rng.standard_normal(sb))


EINSUM = [
    ("bij,bjk", [(1, 2, 3), (4, 3, 2)]),  # size-1 letter broadcasts
    ("...ii->...i", [(2, 3, 3)]),
    ("i,i,i->", [(4,), (4,), (4,)]),
    ("iij,jk->ik", [(2, 2, 3), (3, 2)]),
    ("Ab,bC->AC", [(2, 3), (3, 2)]),
    ("a...,...b->...ab", [(2, 3), (3, 4)]),
    ("ij->", [(2, 3)]),
    ("i->i", [(3,)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum_matches_pytorch_with_gradients(eq, shapes):
    _both(lambda L, *xs: L.einsum(eq, *xs), *[rng.standard_normal(s) for s in shapes])


def test_einsum_list_operands_and_double_backward():
    a = wb.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    b = wb.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    ta, tb = torch.tensor(a.detach().numpy(), requires_grad=True), torch.tensor(b.detach().numpy(), requires_grad=True)
    y = (wb.einsum("ij,jk->ik", [a, b]) ** 2).sum()
    ty = (torch.einsum("ij,jk->ik", [ta, tb]) ** 2).sum()
    (ga,) = wb.autograd.grad(y, a, create_graph=True)
    (tga,) = torch.autograd.grad(ty, ta, create_graph=True)
    ga.sum().backward()
    tga.sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-10)


def test_addmm_beta_zero_ignores_nan_input():
    inp = wb.full((2, 2), float("nan"), requires_grad=True)
    out = wb.addmm(inp, wb.eye(2), wb.eye(2), beta=0)
    assert not np.isnan(out.detach().numpy()).any()
    out.sum().backward()
    assert inp.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_decomposition_modes_and_shapes_match_pytorch():
    a = rng.standard_normal((2, 4, 3))
    for mode in ("reduced", "complete", "r"):
        q, r = wb.linalg.qr(wb.tensor(a), mode=mode)
        tq, tr = torch.linalg.qr(torch.tensor(a), mode=mode)
        assert tuple(q.shape) == tuple(tq.shape) and tuple(r.shape) == tuple(tr.shape)
        np.testing.assert_allclose(np.abs(r.numpy()), np.abs(tr.numpy()), atol=1e-12)
    for full in (True, False):
        u, s, vh = wb.linalg.svd(wb.tensor(a), full_matrices=full)
        tu, ts, tvh = torch.linalg.svd(torch.tensor(a), full_matrices=full)
        assert (u.shape, vh.shape) == (tu.shape, tvh.shape)
        np.testing.assert_allclose(s.numpy(), ts.numpy(), rtol=1e-12)
    b = rng.standard_normal((2, 4, 2))
    for driver in (None, "gels", "gelsy", "gelsd", "gelss"):
        sol = wb.linalg.lstsq(wb.tensor(a), wb.tensor(b), driver=driver)
        tsol = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
        for o, t in zip(sol, tsol):
            assert o.shape == t.shape and o.dtype.name == str(t.dtype).split(".")[1]
            np.testing.assert_allclose(o.numpy(), t.numpy(), atol=1e-10)
    w = wb.linalg.eigvals(wb.tensor(a[0, :3]))
    tw = torch.linalg.eigvals(torch.tensor(a[0, :3]))
    assert w.dtype == wb.complex128
    np.testing.assert_allclose(np.sort_complex(w.numpy()), np.sort_complex(tw.numpy()), atol=1e-12)


def test_gradients_of_decompositions_match_pytorch():
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    _both(lambda L, x: L.linalg.det(x) * L.linalg.inv(x).sum() + L.linalg.slogdet(x).logabsdet, a)
    _both(lambda L, x: L.linalg.svdvals(x).sum() + L.linalg.matrix_norm(x, "nuc"), a)
    _both(lambda L, x: L.linalg.pinv(x[:, :2]).sum(), a)
    _both(lambda L, x, y: L.linalg.solve(x, y).sum(), np.stack([a, a.T]), rng.standard_normal((3,)))
    _both(lambda L, x: L.linalg.eigvalsh(x @ x.mT).prod(), a)
    _both(lambda L, x: L.linalg.cholesky(x @ x.mT).sum(), a)


def test_legacy_top_level_spellings():
    a = wb.tensor(rng.standard_normal((3, 2)))
    ta = torch.tensor(a.numpy())
    u, s, v = wb.svd(a)
    tu, ts, tv = torch.svd(ta)
    assert u.shape == tu.shape and v.shape == tv.shape
    np.testing.assert_allclose((u * s) @ v.mT, a.numpy(), atol=1e-12)
    with pytest.warns(UserWarning, match="deprecated"):
        assert tuple(wb.qr(a, some=False).Q.shape) == tuple(torch.qr(ta, some=False).Q.shape)
    np.testing.assert_allclose(wb.pinverse(a).numpy(), torch.pinverse(ta).numpy(), atol=1e-12)
    sq = wb.tensor(a.numpy()[:2])
    np.testing.assert_allclose(sq.det().numpy(), torch.tensor(sq.numpy()).det().numpy())
    np.testing.assert_allclose(sq.inverse().numpy(), torch.tensor(sq.numpy()).inverse().numpy())
    assert np.isnan(wb.logdet(-wb.eye(3, dtype=wb.float64)).item())
    assert wb.linalg.matrix_rank(wb.ones(3, 3), hermitian=True).item() == 1


def test_norms_match_pytorch_with_keepdim_and_dtype():
    x = rng.standard_normal((2, 3, 4))
    for kw in ({"ord": 1, "dim": (0, 2), "keepdim": True}, {"ord": "fro", "dim": (1, 2)}, {"dim": 1},
               {"ord": -1, "dim": (2, 1), "keepdim": True}, {"ord": float("inf"), "dim": 0}, {}):
        ours = wb.linalg.norm(wb.tensor(x), **kw)
        theirs = torch.linalg.norm(torch.tensor(x), **kw)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    r = wb.linalg.vector_norm(wb.tensor(x, dtype=wb.float32), dtype=wb.float64)
    assert r.dtype == wb.float64
    z = wb.zeros(3, requires_grad=True)
    wb.linalg.vector_norm(z).backward()
    assert z.grad.tolist() == [0.0, 0.0, 0.0]  # the subgradient at 0, as PyTorch


@pytest.mark.parametrize("ord", [0.5, 0.3])
def test_vector_norm_below_1_has_a_zero_gradient_at_a_zero_element(ord):
    # |x|**(ord - 1) is infinite there: PyTorch masks it to 0 (it was NaN; cdist p < 1 too). Found via pdist (#13)
    x = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0]])
    w, t = wb.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    wb.linalg.vector_norm(w, ord, dim=1).sum().backward()
    torch.linalg.vector_norm(t, ord, dim=1).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    y = np.array([[0.0, 1.0, 2.0], [1.0, 2.0, 3.0]])
    w = wb.tensor(y, requires_grad=True)
    t = torch.tensor(y, requires_grad=True)
    wb.cdist(w, w, ord).sum().backward()
    torch.cdist(t, t, ord).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), t.grad.numpy(), rtol=1e-10)


def test_linalg_on_fake_cuda(fake_cuda):
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    x = wb.tensor(a, device="cuda", requires_grad=True)
    y = (wb.linalg.inv(x).sum() + wb.linalg.det(x) + wb.linalg.svdvals(x).sum() + wb.einsum("ii", x)
         + wb.linalg.solve(x, wb.ones(3, dtype=wb.float64, device="cuda")).sum() + wb.linalg.norm(x)
         + wb.linalg.eigh(x + x.mT).eigenvalues.sum() + wb.linalg.qr(x).R.diagonal().abs().sum())
    y.backward()
    assert y.device.type == "cuda" and x.grad.device.type == "cuda"
    tx = torch.tensor(a, requires_grad=True)
    ty = (torch.linalg.inv(tx).sum() + torch.linalg.det(tx) + torch.linalg.svdvals(tx).sum() + torch.einsum("ii", tx)
          + torch.linalg.solve(tx, torch.ones(3, dtype=torch.float64)).sum() + torch.linalg.norm(tx)
          + torch.linalg.eigh(tx + tx.mT).eigenvalues.sum() + torch.linalg.qr(tx).R.diagonal().abs().sum())
    ty.backward()
    np.testing.assert_allclose(y.item(), ty.item(), rtol=1e-10)
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-9)


def test_det_gradient_of_singular_matrices_is_the_adjugate():
    # PyTorch 2.13 returns zeros here; the derivative of det at a rank n-1 matrix is adj(A)^T, which
    # finite differences confirm
    for a in ([[1.0, 2.0], [2.0, 4.0]], [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]):
        x = wb.tensor(a, dtype=wb.float64, requires_grad=True)
        assert wb.autograd.gradcheck(wb.linalg.det, (x,))
    x = wb.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=wb.float64, requires_grad=True)
    wb.linalg.det(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)


def test_lu_family_matches_pytorch():
    for shape in ((3, 3), (2, 4, 4), (3, 5), (5, 3), (2, 3, 2)):
        a = rng.standard_normal(shape)
        for ours, theirs in ((wb.linalg.lu(wb.tensor(a)), torch.linalg.lu(torch.tensor(a))),
                             (wb.linalg.lu_factor(wb.tensor(a)), torch.linalg.lu_factor(torch.tensor(a))),
                             (wb.lu_unpack(*wb.linalg.lu_factor(wb.tensor(a))),
                              torch.lu_unpack(*torch.linalg.lu_factor(torch.tensor(a))))):
            for o, t in zip(ours, theirs):
                assert o.dtype.name == str(t.dtype).split(".")[1]
                np.testing.assert_allclose(o.numpy(), t.numpy(), atol=1e-12)
    a, b = rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3, 2))
    for kw in ({}, {"adjoint": True}, {"left": False}, {"left": False, "adjoint": True}):
        bb = b if kw.get("left", True) else np.swapaxes(b, -1, -2)
        x = wb.linalg.lu_solve(*wb.linalg.lu_factor(wb.tensor(a)), wb.tensor(bb), **kw)
        y = torch.linalg.lu_solve(*torch.linalg.lu_factor(torch.tensor(a)), torch.tensor(bb), **kw)
        np.testing.assert_allclose(x.numpy(), y.numpy(), atol=1e-12)
    with pytest.warns(UserWarning, match="deprecated"):
        LU, piv, info = wb.lu(wb.tensor([[0.0, 0.0], [0.0, 1.0]]), get_infos=True)
    assert info.item() > 0
    A = np.stack([np.eye(3), np.array([[1.0, 2, 3], [2, 4, 6], [0, 0, 1]]), np.zeros((3, 3))])
    assert wb.linalg.lu_factor_ex(wb.tensor(A)).info.tolist() == torch.linalg.lu_factor_ex(torch.tensor(A)).info.tolist()
    np.testing.assert_allclose(wb.lu_solve(wb.tensor(b[0]), *wb.linalg.lu_factor(wb.tensor(a[0]))).numpy(),
                               np.linalg.solve(a[0], b[0]), atol=1e-12)


def _cplx(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 2, 3), (3, 4))])
def test_complex_matmul_gradients_are_conjugated_as_in_pytorch(sa, sb):
    a, b = _cplx(*sa), _cplx(*sb)
    grads = []
    for L in (wb, torch):
        x, y = L.tensor(a, requires_grad=True), L.tensor(b, requires_grad=True)
        out = x @ y
        out.backward(L.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)) * (1 - 2j)))
        grads.append((x.grad.numpy(), y.grad.numpy()))
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    assert wb.autograd.gradgradcheck(lambda x, y: x @ y, (wb.tensor(a, requires_grad=True),
                                                          wb.tensor(b, requires_grad=True)))


def _eig_loss(L):
    # phase-invariant (v_i * conj(v_0) does not change when a column is multiplied by e^{i phi}), so the
    # gradient is defined; eigenvalues too
    def f(A):
        w, V = L.linalg.eig(A)
        return V * V[..., :1, :].conj() + w.unsqueeze(-2)
    return f


@pytest.mark.parametrize("complex_input", [False, True])
def test_eig_is_twice_differentiable_like_pytorch(complex_input):
    a = _cplx(3, 3) if complex_input else rng.standard_normal((3, 3))
    assert wb.autograd.gradgradcheck(_eig_loss(wb), (wb.tensor(a, requires_grad=True),))
    assert torch.autograd.gradgradcheck(_eig_loss(torch), (torch.tensor(a, requires_grad=True),))
    second = []
    for L in (wb, torch):  # the gradient of a gradient, against PyTorch's numbers
        A = L.tensor(a, requires_grad=True)
        out = _eig_loss(L)(A)
        g, = L.autograd.grad(out, A, L.tensor(np.cos(np.arange(9.0)).reshape(3, 3) + 0j), create_graph=True)
        gg, = L.autograd.grad((g * g.conj()).real.sum(), A)
        second.append(gg.numpy())
    np.testing.assert_allclose(*second, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_vecdot_primitive_and_self_dot_match_torch_and_gradcheck(dim):
    # same-shape real operands take the one-pass VecDot primitive; vecdot(x, x) its self-dot form (2 g x)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((4, 5, 6)), rng.standard_normal((4, 5, 6))
    for x, y in ((a, b), (a, None), (a.transpose(2, 0, 1), b.transpose(2, 0, 1))):  # the last non-contiguous
        tw = [wb.tensor(v, requires_grad=True) for v in (x, y) if v is not None]
        tt = [torch.tensor(v, requires_grad=True) for v in (x, y) if v is not None]
        rw = wb.linalg.vecdot(tw[0], tw[-1], dim=dim)
        rt = torch.linalg.vecdot(tt[0], tt[-1], dim=dim)
        seed = rng.standard_normal(tuple(rt.shape))
        rw.backward(wb.tensor(seed))
        rt.backward(torch.tensor(seed))
        np.testing.assert_allclose(rw.detach().numpy(), rt.detach().numpy(), rtol=1e-12)
        for w, t in zip(tw, tt):
            np.testing.assert_allclose(w.grad.numpy(), t.grad.numpy(), rtol=1e-12)
        ins = tuple(wb.tensor(v, requires_grad=True) for v in (x, y) if v is not None)
        if y is None:
            def f(p):
                return wb.linalg.vecdot(p, p, dim=dim)
        else:
            def f(p, q):
                return wb.linalg.vecdot(p, q, dim=dim)
        assert wb.autograd.gradcheck(f, ins)
        assert wb.autograd.gradgradcheck(f, ins)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
@pytest.mark.parametrize("needs", [(True, True), (True, False), (False, True)])
def test_matrix_product_first_derivatives_on_arrays_match_pytorch(dtype, needs):
    # 2-D @ 2-D backward without create_graph runs the two products on raw arrays (Matmul.backward's fast
    # branch); with create_graph the Tensor form runs: both must give PyTorch's gradients
    rng = np.random.default_rng(0)
    a0 = rng.standard_normal((5, 3)) + (1j * rng.standard_normal((5, 3)) if dtype == "complex128" else 0)
    b0 = rng.standard_normal((3, 4)) + (1j * rng.standard_normal((3, 4)) if dtype == "complex128" else 0)
    g0 = rng.standard_normal((5, 4)).astype(dtype)
    grads = []
    for L in (wb, torch):
        for create_graph in ((False, True) if L is wb else (False,)):
            a = L.tensor(a0.astype(dtype), requires_grad=needs[0])
            b = L.tensor(b0.astype(dtype), requires_grad=needs[1])
            out = L.autograd.grad(a @ b, [t for t in (a, b) if t.requires_grad], L.tensor(g0),
                                  create_graph=create_graph)
            grads.append([o.detach().numpy() for o in out])
    fast, tensor_form, ref = grads
    for x, y, r in zip(fast, tensor_form, ref):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_allclose(x, r, rtol=1e-5 if dtype == "float32" else 1e-12)
