"""Specs of the linear-algebra ops: products, einsum, and workbench.linalg (well-conditioned samples)."""
import numpy as np

import workbench as wb
from workbench.testing.op_specs import Sample, arr, spec


def _torch():
    import torch

    return torch


def same(name, fn, ref, samples, **kw):
    spec(name, fn, ref, samples, torch_op=fn, **kw)


def well(n, seed=0, batch=()):
    """A well-conditioned n x n matrix: the identity plus small noise."""
    return np.eye(n) * 2 + arr(*batch, n, n, seed=seed, low=-0.4, high=0.4)


# --- products ------------------------------------------------------------------------------------------
same("matmul_batched", lambda a, b: a @ b, np.matmul, [Sample([arr(2, 1, 3, 4), arr(3, 4, 2, seed=1)])])
same("mm", lambda a, b: a.mm(b), np.matmul, [Sample([arr(3, 4), arr(4, 2, seed=1)])])
same("bmm", lambda a, b: a.bmm(b), np.matmul, [Sample([arr(2, 3, 4), arr(2, 4, 2, seed=1)])])
same("mv", lambda a, b: a.mv(b), np.matmul, [Sample([arr(3, 4), arr(4, seed=1)])])
same("dot", lambda a, b: a.dot(b), np.dot, [Sample([arr(4), arr(4, seed=1)])])
same("vdot", lambda a, b: a.vdot(b), np.vdot, [Sample([arr(4), arr(4, seed=1)])])
same("inner", lambda a, b: a.inner(b), np.inner, [Sample([arr(2, 3), arr(4, 3, seed=1)])])
same("outer", lambda a, b: a.outer(b), np.outer, [Sample([arr(3), arr(4, seed=1)])])
same("addmm", lambda c, a, b: c.addmm(a, b, beta=0.5, alpha=2.0), lambda c, a, b: 0.5 * c + 2 * a @ b,
     [Sample([arr(3), arr(2, 4, seed=1), arr(4, 3, seed=2)])])
same("addmv", lambda c, a, b: c.addmv(a, b, alpha=-1.0), lambda c, a, b: c - a @ b,
     [Sample([arr(2), arr(2, 4, seed=1), arr(4, seed=2)])])
same("addr", lambda c, a, b: c.addr(a, b, beta=2.0), lambda c, a, b: 2 * c + np.outer(a, b),
     [Sample([arr(2, 3), arr(2, seed=1), arr(3, seed=2)])])
same("baddbmm", lambda c, a, b: c.baddbmm(a, b, beta=0.0), lambda c, a, b: a @ b,
     [Sample([arr(2, 2, 3), arr(2, 2, 4, seed=1), arr(2, 4, 3, seed=2)])])
same("addbmm", lambda c, a, b: c.addbmm(a, b), lambda c, a, b: c + (a @ b).sum(0),
     [Sample([arr(2, 3), arr(2, 2, 4, seed=1), arr(2, 4, 3, seed=2)])])
same("trace", lambda a: a.trace(), np.trace, [Sample([arr(3, 4)])])
same("kron", lambda a, b: a.kron(b), np.kron, [Sample([arr(2, 3), arr(2, 2, seed=1)]), Sample([arr(2), arr(2, 3, seed=1)])])
spec("tensordot", lambda a, b: wb.tensordot(a, b, ([1, 0], [0, 2])), lambda a, b: np.tensordot(a, b, ([1, 0], [0, 2])),
     [Sample([arr(2, 3, 4), arr(3, 5, 2, seed=1)])], torch_op=lambda a, b: _torch().tensordot(a, b, ([1, 0], [0, 2])))
spec("tensordot_int", lambda a, b: wb.tensordot(a, b, 1), lambda a, b: np.tensordot(a, b, 1),
     [Sample([arr(2, 3), arr(3, 2, seed=1)])], torch_op=lambda a, b: _torch().tensordot(a, b, 1))
spec("cross", lambda a, b: wb.cross(a, b, dim=1), lambda a, b: np.cross(a, b, axis=1),
     [Sample([arr(2, 3), arr(1, 3, seed=1)])], torch_op=lambda a, b: _torch().cross(a, b, dim=1))
spec("linalg_cross", lambda a, b: wb.linalg.cross(a, b), lambda a, b: np.cross(a, b),
     [Sample([arr(2, 3), arr(2, 3, seed=1)])], torch_op=lambda a, b: _torch().linalg.cross(a, b))

# --- einsum -----------------------------------------------------------------------------------------
EINSUMS = {
    "einsum_matmul": ("ij,jk->ik", [arr(2, 3), arr(3, 4, seed=1)]),
    "einsum_trace": ("ii", [arr(3, 3)]),
    "einsum_diag": ("ii->i", [arr(3, 3)]),
    "einsum_repeat_mixed": ("iji->j", [arr(2, 3, 2)]),
    "einsum_ellipsis": ("...ij,...jk->...ik", [arr(2, 2, 3), arr(3, 2, seed=1)]),
    "einsum_implicit": ("ba,ca", [arr(2, 3), arr(4, 3, seed=1)]),
    "einsum_sum_only": ("ij,j->", [arr(2, 3), arr(3, seed=1)]),
    "einsum_free_index": ("ij,k->ik", [arr(2, 3), arr(4, seed=1)]),
    "einsum_three": ("ab,bc,cd->ad", [arr(2, 3), arr(3, 2, seed=1), arr(2, 4, seed=2)]),
    "einsum_broadcast": ("bij,bjk->bik", [arr(1, 2, 3), arr(3, 3, 2, seed=1)]),
    "einsum_batch_outer": ("bi,bj->bij", [arr(2, 3), arr(2, 2, seed=1)]),
}
for _name, (_eq, _ops) in EINSUMS.items():
    spec(_name, lambda *xs, eq=_eq: wb.einsum(eq, *xs),
         lambda *xs, eq=_eq: np.einsum(eq, *[np.broadcast_to(x, (3,) + x.shape[1:]) if eq.startswith("bij") else x
                                             for x in xs]),
         [Sample(_ops)], torch_op=lambda *xs, eq=_eq: _torch().einsum(eq, *xs))
spec("einsum_sublist", lambda a, b: wb.einsum(a, [0, 1], b, [1, 2], [0, 2]), lambda a, b: a @ b,
     [Sample([arr(2, 3), arr(3, 2, seed=1)])], torch_op=lambda a, b: _torch().einsum(a, [0, 1], b, [1, 2], [0, 2]))

# --- workbench.linalg -------------------------------------------------------------------------------
L = wb.linalg
spec("linalg_inv", L.inv, np.linalg.inv, [Sample([well(3)]), Sample([well(2, batch=(2,))])],
     torch_op=lambda a: _torch().linalg.inv(a))
spec("linalg_det", L.det, np.linalg.det, [Sample([well(3)]), Sample([well(2, batch=(2,))])],
     torch_op=lambda a: _torch().linalg.det(a))
spec("linalg_slogdet", lambda a: tuple(L.slogdet(a)), lambda a: tuple(np.linalg.slogdet(a)),
     [Sample([-well(3)])], torch_op=lambda a: tuple(_torch().linalg.slogdet(a)), output_index=1)
spec("logdet", wb.logdet, lambda a: np.log(np.linalg.det(a)), [Sample([well(3)])], torch_op=lambda a: _torch().logdet(a))
spec("linalg_solve", L.solve, np.linalg.solve, [Sample([well(3), arr(3, 2, seed=1)]),
                                                Sample([well(3, batch=(2,)), arr(2, 3, 1, seed=1)])],
     torch_op=lambda a, b: _torch().linalg.solve(a, b))
spec("linalg_solve_vector", L.solve, lambda a, b: np.linalg.solve(a, b[..., None])[..., 0],
     [Sample([well(3, batch=(2,)), arr(2, 3, seed=1)])], torch_op=lambda a, b: _torch().linalg.solve(a, b))
spec("linalg_solve_right", lambda a, b: L.solve(a, b, left=False), lambda a, b: b @ np.linalg.inv(a),
     [Sample([well(3), arr(2, 3, seed=1)])], torch_op=lambda a, b: _torch().linalg.solve(a, b, left=False))
spec("linalg_solve_triangular", lambda a, b: L.solve_triangular(a, b, upper=True),
     lambda a, b: np.linalg.solve(np.triu(a), b), [Sample([well(3), arr(3, 2, seed=1)])],
     torch_op=lambda a, b: _torch().linalg.solve_triangular(a, b, upper=True))


def _spd(a):
    return a @ a.mT + 3 * _eye(a)


def _eye(a):
    return (wb if isinstance(a, wb.Tensor) else _torch()).eye(a.shape[-1], dtype=a.dtype, device=a.device)


def _np_spd(a):
    return a @ np.swapaxes(a, -1, -2) + 3 * np.eye(a.shape[-1])


spec("linalg_cholesky", lambda a: L.cholesky(_spd(a)), lambda a: np.linalg.cholesky(_np_spd(a)),
     [Sample([arr(3, 3)]), Sample([arr(2, 2, 2, seed=1)])], torch_op=lambda a: _torch().linalg.cholesky(_spd(a)))
spec("linalg_cholesky_upper", lambda a: L.cholesky(_spd(a), upper=True),
     lambda a: np.swapaxes(np.linalg.cholesky(_np_spd(a)), -1, -2), [Sample([arr(3, 3)])],
     torch_op=lambda a: _torch().linalg.cholesky(_spd(a), upper=True))
for _shape in ((4, 3), (3, 3), (2, 4), (2, 3, 2)):
    spec(f"linalg_qr_{'x'.join(map(str, _shape))}", lambda a: tuple(L.qr(a)), lambda a: tuple(np.linalg.qr(a)),
         [Sample([arr(*_shape)])], torch_op=lambda a: tuple(_torch().linalg.qr(a)))


def _svd_parts(svd):
    # singular values and sign-invariant functions of the vectors (U and V are unique up to signs)
    def f(a):
        U, S, Vh = svd(a)
        return S, U @ Vh, U * U
    return f


def _np_svd(a):
    U, S, Vh = np.linalg.svd(a, full_matrices=False)
    return S, U @ Vh, U * U


for _shape in ((3, 3), (4, 2), (2, 4)):
    spec(f"linalg_svd_{'x'.join(map(str, _shape))}", _svd_parts(lambda a: L.svd(a, full_matrices=False)), _np_svd,
         [Sample([arr(*_shape)])], torch_op=_svd_parts(lambda a: _torch().linalg.svd(a, full_matrices=False)))
spec("linalg_svd_full", lambda a: (lambda r: (r.S, r.U[..., :2] @ r.Vh))(L.svd(a)),
     lambda a: (lambda r: (r[1], r[0][..., :2] @ r[2]))(np.linalg.svd(a)), [Sample([arr(3, 2)])],
     torch_op=lambda a: (lambda r: (r.S, r.U[..., :2] @ r.Vh))(_torch().linalg.svd(a)))
spec("linalg_svdvals", L.svdvals, lambda a: np.linalg.svd(a, compute_uv=False), [Sample([arr(2, 3, 4)])],
     torch_op=lambda a: _torch().linalg.svdvals(a))
spec("torch_svd", lambda a: (lambda r: (r.S, r.U @ r.V.mT))(wb.svd(a)),
     lambda a: (lambda r: (r[1], r[0] @ r[2]))(np.linalg.svd(a, full_matrices=False)), [Sample([arr(3, 2)])],
     torch_op=lambda a: (lambda r: (r.S, r.U @ r.V.mT))(_torch().svd(a)))


def _eigh_parts(eigh):
    def f(a):
        w, V = eigh(a + a.mT)
        return w, V * V, V @ (V * w.unsqueeze(-2)).mT
    return f


def _np_eigh(a):
    w, V = np.linalg.eigh(a + np.swapaxes(a, -1, -2))
    return w, V * V, V @ np.swapaxes(V * w[..., None, :], -1, -2)


spec("linalg_eigh", _eigh_parts(lambda a: L.eigh(a)), _np_eigh, [Sample([arr(3, 3)]), Sample([arr(2, 3, 3, seed=1)])],
     torch_op=_eigh_parts(lambda a: _torch().linalg.eigh(a)))
spec("linalg_eigvalsh", lambda a: L.eigvalsh(a + a.mT), lambda a: np.linalg.eigvalsh(a + a.T), [Sample([arr(3, 3)])],
     torch_op=lambda a: _torch().linalg.eigvalsh(a + a.mT))
spec("linalg_eigvals", L.eigvals, np.linalg.eigvals,
     [Sample([np.array([[2.0, 1.0], [0.0, 3.0]])])], torch_op=lambda a: _torch().linalg.eigvals(a),
     no_grad="complex eigenvalues of a real matrix: linalg_eig checks the gradient through real functions of them")


def _eig_parts(eig):
    # real, phase-invariant functions of the (complex) eigenpairs
    def f(a):
        w, V = eig(a)
        return w.real, w.imag, V.abs() ** 2
    return f


def _np_eig(a):
    w, V = np.linalg.eig(a)
    return w.real, w.imag, np.abs(V) ** 2


spec("linalg_eig", _eig_parts(lambda a: L.eig(a)), _np_eig, [Sample([arr(3, 3)]), Sample([arr(2, 3, 3, seed=3)])],
     torch_op=_eig_parts(lambda a: _torch().linalg.eig(a)),
     no_gradgrad="gap: workbench's eig backward (through complex eigenvectors) is not twice differentiable; "
                 "PyTorch's is")
for _shape in ((3, 3), (4, 2), (2, 4)):
    spec(f"linalg_pinv_{'x'.join(map(str, _shape))}", L.pinv, np.linalg.pinv, [Sample([arr(*_shape)])],
         torch_op=lambda a: _torch().linalg.pinv(a))
spec("linalg_lstsq", lambda a, b: L.lstsq(a, b).solution, lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0],
     [Sample([arr(4, 2), arr(4, 3, seed=1)])], torch_op=lambda a, b: _torch().linalg.lstsq(a, b).solution)
spec("linalg_matrix_rank", lambda a: L.matrix_rank(a), np.linalg.matrix_rank,
     [Sample([np.array([[1.0, 2.0], [2.0, 4.0], [0.0, 1.0]])]), Sample([np.ones((2, 3))])],
     torch_op=lambda a: _torch().linalg.matrix_rank(a), no_grad="integer output: there is no gradient")
for _n in (3, -2, 0):
    spec(f"linalg_matrix_power_{_n}", lambda a, n=_n: L.matrix_power(a, n),
         lambda a, n=_n: np.linalg.matrix_power(a, n), [Sample([well(2, batch=(2,))])],
         torch_op=lambda a, n=_n: _torch().linalg.matrix_power(a, n))
spec("linalg_multi_dot", lambda a, b, c: L.multi_dot([a, b, c]), lambda a, b, c: np.linalg.multi_dot([a, b, c]),
     [Sample([arr(3), arr(3, 2, seed=1), arr(2, 4, seed=2)])], torch_op=lambda a, b, c: _torch().linalg.multi_dot([a, b, c]))
for _p in (None, 2, -2, "fro", "nuc", 1, -1, float("inf"), float("-inf")):
    # PyTorch 2.13's own backward of cond for the norms through inv fails (it modifies a saved tensor)
    spec(f"linalg_cond_{_p}", lambda a, p=_p: L.cond(a, p), lambda a, p=_p: np.linalg.cond(a, p),
         [Sample([well(3)])], torch_op=(lambda a, p=_p: _torch().linalg.cond(a, p)) if _p in (None, 2, -2) else None,
         no_torch="" if _p in (None, 2, -2) else "PyTorch 2.13's backward of cond for this p fails (an in-place write "
                                                "into a tensor its own graph saved); gradcheck checks workbench's")
for _ord in (2, 1, 3, 0.5, float("inf"), float("-inf"), 0):
    spec(f"linalg_vector_norm_{_ord}", lambda x, o=_ord: L.vector_norm(x, o, dim=(0, 2)),
         lambda x, o=_ord: (np.abs(x) ** o).sum((0, 2)) ** (1 / o) if o not in (0, float("inf"), float("-inf")) else (
             (x != 0).sum((0, 2)).astype(x.dtype) if o == 0 else (np.abs(x).max((0, 2)) if o > 0 else np.abs(x).min((0, 2)))),
         [Sample([arr(2, 3, 2)])],
         torch_op=(lambda x, o=_ord: _torch().linalg.vector_norm(x, o, dim=(0, 2))) if _ord else None,
         no_torch="" if _ord else "ord 0 is a count: PyTorch leaves .grad None where workbench gives zeros "
                                  "(tests/ops/test_linalg.py compares the values)",
         no_gradgrad="" if _ord else "ord 0 counts the nonzeros: its gradient is zero, with nothing to differentiate")
spec("linalg_vector_norm_keepdim", lambda x: L.vector_norm(x, keepdim=True),
     lambda x: np.sqrt((x * x).sum(keepdims=True)), [Sample([arr(2, 3)])],
     torch_op=lambda x: _torch().linalg.vector_norm(x, keepdim=True))
for _ord in ("fro", "nuc", 1, -1, 2, -2, float("inf"), float("-inf")):
    spec(f"linalg_matrix_norm_{_ord}", lambda x, o=_ord: L.matrix_norm(x, o),
         lambda x, o=_ord: np.linalg.norm(x, o, axis=(-2, -1)), [Sample([arr(2, 3, 4)])],
         torch_op=lambda x, o=_ord: _torch().linalg.matrix_norm(x, o))
spec("linalg_norm", lambda x: L.norm(x), lambda x: np.linalg.norm(x.ravel()), [Sample([arr(2, 3, 2)])],
     torch_op=lambda x: _torch().linalg.norm(x))
spec("linalg_norm_dims", lambda x: L.norm(x, 1, dim=(2, 0), keepdim=True),
     lambda x: np.linalg.norm(x, 1, axis=(2, 0), keepdims=True), [Sample([arr(2, 3, 2)])],
     torch_op=lambda x: _torch().linalg.norm(x, 1, dim=(2, 0), keepdim=True))
spec("linalg_vecdot", lambda a, b: L.vecdot(a, b), lambda a, b: (a * b).sum(-1), [Sample([arr(2, 3), arr(3, seed=1)])],
     torch_op=lambda a, b: _torch().linalg.vecdot(a, b))
spec("linalg_matrix_exp", L.matrix_exp, lambda a: _np_expm(a), [Sample([arr(3, 3)]), Sample([arr(2, 2, 2, seed=1) * 3])],
     torch_op=lambda a: _torch().linalg.matrix_exp(a))


def _np_expm(a):
    # eigendecomposition reference (the samples are diagonalizable)
    w, V = np.linalg.eig(a)
    return np.real(V @ (np.exp(w)[..., None] * np.linalg.inv(V)))


spec("linalg_inv_ex", lambda a: tuple(L.inv_ex(a)), lambda a: (np.linalg.inv(a), np.zeros(a.shape[:-2], np.int32)),
     [Sample([well(3, batch=(2,))])], torch_op=lambda a: tuple(_torch().linalg.inv_ex(a)), output_index=0)
spec("linalg_cholesky_ex", lambda a: tuple(L.cholesky_ex(_spd(a))),
     lambda a: (np.linalg.cholesky(_np_spd(a)), np.zeros((), np.int32)), [Sample([arr(3, 3)])],
     torch_op=lambda a: tuple(_torch().linalg.cholesky_ex(_spd(a))), output_index=0)
spec("linalg_solve_ex", lambda a, b: tuple(L.solve_ex(a, b)), lambda a, b: (np.linalg.solve(a, b), np.zeros((), np.int32)),
     [Sample([well(3), arr(3, 2, seed=1)])], torch_op=lambda a, b: tuple(_torch().linalg.solve_ex(a, b)), output_index=0)
spec("cholesky_solve", lambda b, a: wb.cholesky_solve(b, L.cholesky(_spd(a))),
     lambda b, a: np.linalg.solve(_np_spd(a), b), [Sample([arr(3, 2), arr(3, 3, seed=1)])],
     torch_op=lambda b, a: _torch().cholesky_solve(b, _torch().linalg.cholesky(_spd(a))))
spec("cholesky_inverse_upper", lambda a: wb.cholesky_inverse(L.cholesky(_spd(a), upper=True), upper=True),
     lambda a: np.linalg.inv(_np_spd(a)), [Sample([arr(3, 3)])],
     torch_op=lambda a: _torch().cholesky_inverse(_torch().linalg.cholesky(_spd(a), upper=True), upper=True))
spec("linalg_tensorinv", lambda a: L.tensorinv(a.reshape(4, 2, 2), ind=1),
     lambda a: np.linalg.tensorinv(a.reshape(4, 2, 2), ind=1), [Sample([well(4)])],
     torch_op=lambda a: _torch().linalg.tensorinv(a.reshape(4, 2, 2), ind=1))
spec("linalg_tensorsolve", lambda a, b: L.tensorsolve(a.reshape(2, 2, 4), b),
     lambda a, b: np.linalg.tensorsolve(a.reshape(2, 2, 4), b), [Sample([well(4), arr(2, 2, seed=1)])],
     torch_op=lambda a, b: _torch().linalg.tensorsolve(a.reshape(2, 2, 4), b))
spec("linalg_vander", lambda x: L.vander(x, N=4), lambda x: np.vander(x, 4, increasing=True), [Sample([arr(3)])],
     torch_op=lambda x: _torch().linalg.vander(x, N=4))
# (PyTorch 2.13's own backward of torch.vander fails: it modifies a tensor it saved)
spec("vander", lambda x: wb.vander(x), lambda x: np.vander(x), [Sample([arr(3)])],
     no_torch="PyTorch 2.13's vander output has no grad_fn (not differentiable there); gradcheck checks workbench's")
for _p in (2.0, 1.0, 3.0):
    spec(f"cdist_{_p}", lambda a, b, p=_p: wb.cdist(a, b, p),
         lambda a, b, p=_p: (np.abs(a[..., :, None, :] - b[..., None, :, :]) ** p).sum(-1) ** (1 / p),
         [Sample([arr(2, 3, 2), arr(2, 4, 2, seed=1)])], torch_op=lambda a, b, p=_p: _torch().cdist(a, b, p))
spec("triangular_solve", lambda b, a: wb.triangular_solve(b, a, upper=False, transpose=True).solution,
     lambda b, a: np.linalg.solve(np.tril(a).T, b), [Sample([arr(3, 2), well(3, seed=1)])],
     torch_op=lambda b, a: _torch().triangular_solve(b, a, upper=False, transpose=True).solution)
def _np_lu(a):
    """(L, U) of A = P L U by Doolittle with partial pivoting (LAPACK's choices), one matrix at a time."""
    if a.ndim > 2:
        outs = [_np_lu(m) for m in a]
        return tuple(np.stack(x) for x in zip(*outs))
    m, n = a.shape
    k = min(m, n)
    u = a.astype(np.float64).copy()
    perm = np.arange(m)
    for j in range(k):
        p = j + np.argmax(np.abs(u[j:, j]))
        u[[j, p]], perm[[j, p]] = u[[p, j]], perm[[p, j]]
        if u[j, j] != 0:
            u[j + 1:, j] /= u[j, j]
        u[j + 1:, j + 1:] -= np.outer(u[j + 1:, j], u[j, j + 1:])
    low = np.tril(u, -1)[:, :k] + np.eye(m, k)
    return low.astype(a.dtype), np.triu(u)[:k].astype(a.dtype)


def _np_lu_packed(a):
    low, up = _np_lu(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    packed = np.zeros(a.shape, a.dtype)
    packed[..., :, :k] += np.tril(low, -1)
    packed[..., :k, :] += up
    return packed


for _shape in ((3, 3), (2, 3, 3), (3, 5), (5, 3)):
    # P is piecewise constant: the spec differentiates L and U
    spec(f"linalg_lu_{'x'.join(map(str, _shape))}", lambda a: tuple(L.lu(a))[1:], _np_lu,
         [Sample([arr(*_shape, seed=4)])], torch_op=lambda a: tuple(_torch().linalg.lu(a))[1:])
spec("linalg_lu_factor", lambda a: L.lu_factor(a).LU, _np_lu_packed, [Sample([arr(3, 4, seed=5)])],
     torch_op=lambda a: _torch().linalg.lu_factor(a).LU)
spec("linalg_lu_solve", lambda a, b: L.lu_solve(*L.lu_factor(a), b, adjoint=True),
     lambda a, b: np.linalg.solve(a.T, b), [Sample([well(3), arr(3, 2, seed=1)])],
     torch_op=lambda a, b: _torch().linalg.lu_solve(*_torch().linalg.lu_factor(a), b, adjoint=True))
