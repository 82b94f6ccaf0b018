"""einsum, tensordot, kron, cross, and the decompositions behind ``workbench.linalg``.

Each decomposition is a primitive whose backward is PyTorch's formula written in Tensor ops (so it
differentiates again); the rest (pinv's uses, lstsq, matrix_power, norms of matrices...) are
compositions of those.
"""
import collections
import math
import warnings

from .. import _backend, creation
from .._broadcast import infer_size
from .._core import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from .elementwise import where
from .index import IndexPut
from .join import cat, stack
from ._autocast import AUTOCAST as _AUTOCAST
from ._autocast import cast as _autocast_cast
from ._util import _out, _outs, cast, norm_dims, result_dtype_n, wrap_dim, writes_out
from .linalg_core import matmul
from .pad import ConstantPad
from .views import broadcast_tensors

_np = _backend.numpy


class LinAlgError(RuntimeError):
    """Raised when a decomposition or solve fails (singular or non-positive-definite input)."""


def _named(name, fields):
    cls = collections.namedtuple(name, fields)
    cls.__module__ = "workbench.return_types"
    return cls


SlogdetResult = _named("slogdet", ["sign", "logabsdet"])
QRResult = _named("qr", ["Q", "R"])
SVDResult = _named("svd", ["U", "S", "Vh"])
EighResult = _named("eigh", ["eigenvalues", "eigenvectors"])
EigResult = _named("eig", ["eigenvalues", "eigenvectors"])
LstsqResult = _named("lstsq", ["solution", "residuals", "rank", "singular_values"])
TorchSVDResult = _named("svd", ["U", "S", "V"])


# --- einsum ------------------------------------------------------------------------------------------
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _sublist_to_str(sub):
    out = []
    for s in sub:
        if s is Ellipsis:
            out.append("...")
        else:
            if not 0 <= int(s) < 52:
                raise ValueError(f"einsum(): subscript in subscript list is not within the valid range [0, 52): {s}")
            out.append(_LETTERS[int(s)])
    return "".join(out)


def _parse_einsum(equation, shapes):
    """(input subscripts, output subscripts) with ellipses replaced by explicit letters."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(shapes):
        more = "more" if len(shapes) > len(subs) else "fewer"
        raise RuntimeError(f"einsum(): {more} operands were provided than specified in the equation "
                         f"({len(subs)} subscripts, {len(shapes)} operands)")
    for ch in eq:
        if ch not in _LETTERS and ch not in ",->.":
            raise RuntimeError(f"einsum(): invalid subscript given at index {eq.index(ch)} in the equation string, "
                             "subscripts must be in [a-zA-Z]")
    used = set(ch for ch in eq if ch in _LETTERS)
    pool = [ch for ch in _LETTERS if ch not in used]
    n_ell = 0
    for s, shp in zip(subs, shapes):
        if "..." in s:
            n_ell = max(n_ell, len(shp) - (len(s) - 3))
    ell = "".join(pool[:n_ell])
    out_subs = []
    for k, (s, shp) in enumerate(zip(subs, shapes)):
        if "..." in s:
            e = len(shp) - (len(s) - 3)
            if e < 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(s) - 3}) is more than "
                                   f"the number of dimensions ({len(shp)}) for operand {k}")
            s = s.replace("...", ell[n_ell - e:] if e else "")
        elif len(s) != len(shp):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(s)}) does not match the "
                               f"number of dimensions ({len(shp)}) for operand {k} and no ellipsis was given")
        out_subs.append(s)
    if arrow:
        out = rhs.replace("...", ell)
        for ch in out:
            if out.count(ch) > 1:
                raise RuntimeError(f"einsum(): output subscript {ch} appears more than once in the output")
            if not any(ch in s for s in out_subs):
                raise RuntimeError(f"einsum(): output subscript {ch} does not appear in the equation for any input "
                                 "operand")
    else:
        counts = collections.Counter("".join(out_subs))
        out = ell + "".join(sorted(ch for ch, c in counts.items() if c == 1 and ch not in ell))
    return out_subs, out


class Einsum(Function):
    _raw = True

    @staticmethod
    def forward(ctx, eq, *ops):
        xp = ctx.xp
        subs, out = eq
        sizes = {}
        for k, (s, x) in enumerate(zip(subs, ops)):
            for ch, n in zip(s, x.shape):
                m = sizes.get(ch, 1)
                if n != 1 and m != 1 and n != m:
                    raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes: subscript {ch} has "
                                       f"size {n} for operand {k} which does not broadcast with previously seen size "
                                       f"{m}")
                sizes[ch] = n if m == 1 else m  # size 1 broadcasts (to 0 too)
        rd = result_dtype_n(*ops) if len(ops) > 1 else ops[0].dtype
        full = []
        for s, x in zip(subs, ops):
            want = tuple(sizes[ch] for ch in s)
            x = cast(x, rd)
            full.append(x if x.shape == want else xp.broadcast_to(x, want))
        ctx.eq, ctx.sizes = eq, sizes
        ctx.save_for_backward(*ops)
        # the contraction-order search pays off for chains, and for big operands (it dispatches to BLAS)
        big = len(full) > 2 or max(x.size for x in full) > 4096
        if rd.itemsize == 2 and rd.kind in "fV":  # no 16-bit einsum in NumPy (nor bfloat16's): float32, one rounding
            full = [x.astype("float32") for x in full]
        r = xp.einsum(",".join(subs) + "->" + out, *full, optimize=big)
        return xp.asarray(r, dtype=rd)

    @staticmethod
    def backward(ctx, g):
        subs, out = ctx.eq
        ops = ctx.saved_tensors
        grads = [None]
        for k, s in enumerate(subs):
            if not ctx.needs_input_grad[k + 1]:
                grads.append(None)
                continue
            others = [(subs[j], ops[j]) for j in range(len(subs)) if j != k]
            uniq = "".join(dict.fromkeys(s))
            present = set(out).union(*[set(o) for o, _ in others])
            kept = "".join(ch for ch in uniq if ch in present)
            gk = Einsum.apply((tuple([out] + [o for o, _ in others]), kept), g, *[t for _, t in others])
            # letters only operand k had were summed: broadcast the gradient along them (and along the
            # letters it had at size 1 against the others'; the engine sums those back)
            for j, ch in enumerate(uniq):
                if ch not in present:
                    gk = gk.unsqueeze(j)
            gk = gk.expand(*[ctx.sizes[ch] for ch in uniq])
            if uniq != s:  # repeated letters (a diagonal): put the gradient back on it
                gk = _embed_repeated(gk, uniq, s, ops[k])
            grads.append(gk)
        return tuple(grads)


def _embed_repeated(gk, uniq, s, like):
    xp = _backend.xp_of(gk._data)
    key = []
    for ch in s:
        j = uniq.index(ch)
        sh = [1] * len(uniq)
        sh[j] = gk.shape[j]
        key.append(xp.arange(gk.shape[j]).reshape(sh))
    zero = Tensor._make(xp.zeros(tuple(like.shape), dtype=gk._data.dtype))
    return IndexPut.apply(zero, tuple(key), gk)


def einsum(*args):
    """Sum of products over the indices of an Einstein-summation equation (ellipsis, repeated indices
    and broadcasting included); the gradient of each operand is another einsum.

    >>> import workbench as wb
    >>> wb.einsum('ij,jk->ik', wb.ones(2, 3), wb.ones(3, 4)).shape
    workbench.Size([2, 4])
    >>> wb.einsum('ii', wb.eye(3))
    tensor(3.)
    """
    if _AUTOCAST[0]:
        args = (args[:1] + _autocast_cast("einsum", *args[1:]) if args and isinstance(args[0], str)
                else _autocast_cast("einsum", *args))
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand")
    if isinstance(args[0], str):
        equation, ops = args[0], list(args[1:])
        if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = list(ops[0])
    else:  # sublist format: op0, sub0, op1, sub1, ..., [out]
        ops, subs = list(args[0::2]), list(args[1::2])
        out = None
        if len(ops) > len(subs):
            out = ops.pop()
            if isinstance(out, Tensor):
                raise ValueError("einsum(): sublist format expects each operand to be followed by its subscripts")
        equation = ",".join(_sublist_to_str(s) for s in subs)
        if out is not None:
            equation += "->" + _sublist_to_str(out)
    for k, o in enumerate(ops):
        if not isinstance(o, Tensor):
            raise TypeError(f"einsum(): operand {k} must be a Tensor, not {type(o).__name__}")
    if not ops:
        raise ValueError("einsum(): must provide at least one operand")
    subs, out = _parse_einsum(equation, [tuple(o.shape) for o in ops])
    return Einsum.apply((tuple(subs), out), *ops)


def tensordot(a, b, dims=2, out=None):
    """Contract ``dims`` dims of a with those of b (the last ``dims`` of a with the first of b for an int).

    >>> import workbench as wb
    >>> wb.tensordot(wb.ones(2, 3, 4), wb.ones(3, 4, 5)).shape
    workbench.Size([2, 5])
    """
    if _AUTOCAST[0]:
        a, b = _autocast_cast("tensordot", a, b)

    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
    if len(da) != len(db):
        raise RuntimeError(f"both dimension lists should have same length (got {len(da)} and {len(db)})")
    da = [wrap_dim(d, a.ndim) for d in da]
    db = [wrap_dim(d, b.ndim) for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[x]} in dim {x} "
                               f"and second has size {b.shape[y]} in dim {y}")
    fa = [d for d in range(a.ndim) if d not in da]
    fb = [d for d in range(b.ndim) if d not in db]
    k = 1
    for d in da:
        k *= a.shape[d]
    am = a.permute(*(fa + da)).reshape(-1, k)
    bm = b.permute(*(db + fb)).reshape(k, -1)
    r = matmul(am, bm).reshape(tuple(a.shape[d] for d in fa) + tuple(b.shape[d] for d in fb))
    return _out(r, out, "same")


def kron(input, other, *, out=None):
    """Kronecker product.  >>> wb.kron(wb.eye(2), wb.ones(2, 2)).shape  ->  workbench.Size([4, 4])"""

    n = max(input.ndim, other.ndim)
    a = input.reshape((1,) * (n - input.ndim) + tuple(input.shape))
    b = other.reshape((1,) * (n - other.ndim) + tuple(other.shape))
    sa, sb = [], []
    for x, y in zip(a.shape, b.shape):
        sa += [x, 1]
        sb += [1, y]
    r = a.reshape(tuple(sa)) * b.reshape(tuple(sb))
    return _out(r.reshape(tuple(x * y for x, y in zip(a.shape, b.shape))), out)


def _cross(input, other, dim, op):

    if input.ndim != other.ndim:
        raise RuntimeError(f"{op}: inputs dimensions must match, got {input.ndim} and {other.ndim}")
    a, b = broadcast_tensors(input, other)
    d = wrap_dim(dim, a.ndim)
    if a.shape[d] != 3:
        raise RuntimeError(f"{op}: inputs dimension {dim} must have length 3. Got {input.shape[d]} and "
                           f"{other.shape[d]}")
    a0, a1, a2 = a.unbind(d)
    b0, b1, b2 = b.unbind(d)
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


def cross(input, other, dim=None, *, out=None):
    """Cross product of 3-vectors along ``dim`` (the first dim of size 3 when None).

    >>> import workbench as wb
    >>> wb.cross(wb.tensor([1., 0., 0.]), wb.tensor([0., 1., 0.]), dim=0)
    tensor([0., 0., 1.])
    """
    if _AUTOCAST[0]:
        input, other = _autocast_cast("cross", input, other)

    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated. Please either pass the dim "
                      "explicitly or simply use torch.linalg.cross. The default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        sizes = list(input.shape)
        if 3 not in sizes:
            raise RuntimeError(f"no dimension of size 3 in input (shape {sizes})")
        dim = sizes.index(3)
    return _out(_cross(input, other, dim, "cross"), out, "same")


def linalg_cross(input, other, *, dim=-1, out=None):
    """linalg.cross: cross product along ``dim`` (default -1), with broadcasting.

    >>> import workbench as wb
    >>> wb.linalg.cross(wb.tensor([1., 0., 0.]), wb.tensor([0., 1., 0.]))
    tensor([0., 0., 1.])
    """

    return _out(_cross(input, other, dim, "linalg.cross"), out, "same")


# --- helpers for the decompositions -------------------------------------------------------------------
def _mH(x):
    return x.mT.conj() if x.is_complex() else x.mT


def _check_matrix(A, op, square=True):
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    if not (A.is_floating_point() or A.is_complex()):
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {A.dtype}")
    if A.dtype.itemsize < 4:
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {A.dtype}; convert with .float() first")


def _lapack(op, fn, *args, msg=None):
    xp_err = _backend.numpy.linalg.LinAlgError
    try:
        return fn(*args)
    except xp_err as e:
        raise LinAlgError(f"{op}: {msg or e}") from None


def _linalg(xp, name):
    """xp.linalg.<name>, or NumPy's run on the host where this CuPy lacks it (eig, before CuPy 14)."""
    fn = getattr(xp.linalg, name, None)
    if fn is not None:
        return fn
    np = _backend.numpy

    def on_host(*args, **kwargs):
        res = getattr(np.linalg, name)(*[a.get() if hasattr(a, "get") else a for a in args], **kwargs)
        return tuple(xp.asarray(r) for r in res) if isinstance(res, tuple) else xp.asarray(res)

    return on_host


def _eye_like(A):
    xp = _backend.xp_of(A._data)
    n = A.shape[-1]
    return Tensor._make(xp.eye(n, dtype=A._data.dtype))


# --- inverse, determinant, solve ---------------------------------------------------------------------
class Inv(Function):
    _raw = True
    op_name = "linalg_inv"

    @staticmethod
    def forward(ctx, A):
        r = _lapack("linalg.inv", ctx.xp.linalg.inv, A, msg="The input matrix is singular, so the inversion could "
                    "not be completed; check A with linalg.matrix_rank or use linalg.pinv")
        ctx.save_for_backward(r)
        return r

    @staticmethod
    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        rh = _mH(r)
        return -(rh @ g @ rh)


def inv(A, *, out=None):
    """The inverse of a square matrix (or batch).  >>> wb.linalg.inv(wb.eye(2) * 2)  ->  tensor([[0.5000, 0.0000], [0.0000, 0.5000]])"""
    if _AUTOCAST[0]:
        A, = _autocast_cast("linalg", A)

    _check_matrix(A, "linalg.inv")
    return _out(Inv.apply(A), out, "same")


class Det(Function):
    _raw = True
    op_name = "linalg_det"

    @staticmethod
    def forward(ctx, A):
        d = ctx.xp.asarray(ctx.xp.linalg.det(A), dtype=A.dtype)
        ctx.save_for_backward(A, d)
        return d

    @staticmethod
    def backward(ctx, g):
        A, d = ctx.saved_tensors
        g = g.unsqueeze(-1).unsqueeze(-1)
        if bool((d._data != 0).all()):
            gd = g * (d.conj() if d.is_complex() else d).unsqueeze(-1).unsqueeze(-1)
            return gd * _mH(inv(A))
        # a singular matrix: d det / dA = adj(A)^H, with adj(A) = det(U) det(Vh) V diag(prod_{j!=i} s_j) U^H
        U, S, Vh = SVD.apply(A, False)
        n = S.shape[-1]
        eye = _eye_like(A).to(bool) if n else None
        others = S.unsqueeze(-2).expand(*S.shape[:-1], n, n).masked_fill(eye, 1.0).prod(-1)
        unit = Tensor._make(ctx.xp.linalg.det(U._data) * ctx.xp.linalg.det(Vh._data))
        adj = (_mH(Vh) * others.unsqueeze(-2)) @ _mH(U) * unit.unsqueeze(-1).unsqueeze(-1)
        return g * _mH(adj)


def det(A, *, out=None):
    """The determinant of a square matrix (or batch).  >>> wb.linalg.det(wb.eye(2) * 2)  ->  tensor(4.)"""

    _check_matrix(A, "linalg.det")
    return _out(Det.apply(A), out, "same")


class Slogdet(Function):
    _raw = True
    op_name = "linalg_slogdet"

    @staticmethod
    def forward(ctx, A):
        xp = ctx.xp
        sign, logabs = xp.linalg.slogdet(A)
        sign = xp.asarray(sign, dtype=A.dtype)
        logabs = xp.asarray(logabs, dtype=xp.zeros((), A.dtype).real.dtype)
        ctx.save_for_backward(A)
        ctx.mark_non_differentiable(sign)
        return sign, logabs

    @staticmethod
    def backward(ctx, gsign, glog):
        (A,) = ctx.saved_tensors
        return glog.unsqueeze(-1).unsqueeze(-1) * _mH(inv(A))


@writes_out(dtype="same")
def slogdet(A, *, out=None):
    """(sign, log|det|) of a square matrix: stable where det over- or underflows.

    >>> import workbench as wb
    >>> wb.linalg.slogdet(wb.eye(2) * 2).logabsdet
    tensor(1.3863)
    """
    _check_matrix(A, "linalg.slogdet")
    return SlogdetResult(*Slogdet.apply(A))


def logdet(input):
    """log(det(input)): NaN for a negative determinant.  >>> wb.logdet(wb.eye(2) * 2)  ->  tensor(1.3863)"""
    _check_matrix(input, "logdet")
    sign, la = Slogdet.apply(input)
    # NaN for a negative determinant (-inf for zero, which slogdet gives already)
    xp = _backend.xp_of(sign._data)
    return la + Tensor._make(xp.where(sign._data < 0, xp.nan, 0).astype(la._data.dtype))


class Solve(Function):
    _raw = True
    op_name = "linalg_solve"

    @staticmethod
    def forward(ctx, A, B):
        rd = result_dtype_n(A, B)
        A, B = cast(A, rd), cast(B, rd)
        X = _lapack("linalg.solve", ctx.xp.linalg.solve, A, B, msg="The solver failed because the input matrix is "
                    "singular; check A with linalg.matrix_rank or use linalg.lstsq")
        ctx.save_for_backward(A, X)
        return X

    @staticmethod
    def backward(ctx, g):
        A, X = ctx.saved_tensors
        gB = Solve.apply(_mH(A), g)
        gA = -(gB @ _mH(X)) if ctx.needs_input_grad[0] else None
        return gA, gB


def solve(A, B, *, left=True, out=None):
    """X with A @ X = B (X @ A = B when left=False); B may be a vector or a batch of them.

    >>> import workbench as wb
    >>> wb.linalg.solve(wb.eye(2) * 2, wb.tensor([2., 4.]))
    tensor([1., 2.])
    """
    if _AUTOCAST[0]:
        A, B = _autocast_cast("linalg", A, B)

    _check_matrix(A, "linalg.solve")
    if A.dtype != B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type {A.dtype} and "
                           f"B of type {B.dtype} instead; convert one with .to()")
    n = A.shape[-1]
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        if B.shape[-1] != n:
            raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                               f"({A.shape[-2]}x{n} and {B.shape[-1]}x1)")
        X = Solve.apply(A if left else A.mT, B.unsqueeze(-1)).squeeze(-1)
        return _out(X, out, "same")
    if B.ndim < 2:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 1 dimension.")
    k = B.shape[-2] if left else B.shape[-1]
    if k != n:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({A.shape[-2]}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    try:
        X = Solve.apply(A, B) if left else Solve.apply(A.mT, B.mT).mT
    except RuntimeError:
        _raise_batch_error(B, A)
        raise
    return _out(X, out, "same")


def _raise_batch_error(B, A):
    # PyTorch's broadcast error for batch dims that do not broadcast names B's before A's (or LU's; the
    # primitives, meeting both at once, would name A's first)
    infer_size([B.shape[:-2], A.shape[:-2]])


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """Solve with the triangle of A (upper or lower; the other is ignored).

    >>> import workbench as wb
    >>> wb.linalg.solve_triangular(wb.tensor([[2., 1.], [0., 1.]]), wb.tensor([[3.], [1.]]), upper=True)
    tensor([[1.],
            [1.]])
    """
    if _AUTOCAST[0]:
        A, B = _autocast_cast("linalg", A, B)

    _check_matrix(A, "linalg.solve_triangular")
    T = A.triu() if upper else A.tril()
    if unitriangular:
        T = T - T.diagonal(0, -2, -1).diag_embed() + _eye_like(A)
    if left:
        return _out(Solve.apply(T, B), out, "same")
    return _out(Solve.apply(T.mT, B.mT).mT, out, "same")


# --- factorizations ---------------------------------------------------------------------------------
class Cholesky(Function):
    _raw = True
    op_name = "linalg_cholesky"

    @staticmethod
    def forward(ctx, A):
        L = _lapack("linalg.cholesky", ctx.xp.linalg.cholesky, A, msg="The factorization could not be completed "
                    "because the input is not positive-definite")
        if ctx.xp is not _backend.numpy and bool(ctx.xp.isnan(L).any()):
            raise LinAlgError("linalg.cholesky: The factorization could not be completed because the input is not "
                              "positive-definite")
        ctx.save_for_backward(L)
        return L

    @staticmethod
    def backward(ctx, gL):
        (L,) = ctx.saved_tensors
        # gA = L^{-H} Phi(L^H gL) L^{-1}, Phi taking the lower triangle with its diagonal halved
        gA = (_mH(L) @ gL).tril()
        gA = 0.5 * (gA + _mH(gA.tril(-1)))
        gA = Solve.apply(_mH(L), gA)
        return _mH(Solve.apply(_mH(L), _mH(gA)))


def linalg_cholesky(A, *, upper=False, out=None):
    """L (lower triangular) with A = L @ L^H for a Hermitian positive-definite A (U = L^H if upper).

    >>> import workbench as wb
    >>> wb.linalg.cholesky(wb.eye(2) * 4)
    tensor([[2., 0.],
            [0., 2.]])
    """
    if _AUTOCAST[0]:
        A, = _autocast_cast("linalg", A)

    _check_matrix(A, "linalg.cholesky")
    L = Cholesky.apply(A)
    return _out(_mH(L) if upper else L, out, "same")


class QRSquare(Function):
    """QR of a tall or square matrix (m >= n); wide ones are composed from it in ``qr``."""

    _raw = True
    op_name = "linalg_qr"

    @staticmethod
    def forward(ctx, A, mode):
        Q, R = ctx.xp.linalg.qr(A, mode=mode)
        ctx.mode = mode
        ctx.save_for_backward(Q, R)
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        Q, R = ctx.saved_tensors
        m, n = Q.shape[-2], R.shape[-1]
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        # gA = [gQ + Q syminvadj(triu(gR R^H - Q^H gQ))] R^{-H}
        M = gR @ _mH(R) - _mH(Q) @ gQ
        T = M.triu()
        S = T + _mH(T) - T.diagonal(0, -2, -1).diag_embed()
        gA = Q @ S + gQ
        return _mH(Solve.apply(R, _mH(gA))), None


@writes_out(dtype="same")
def linalg_qr(A, mode="reduced", *, out=None):
    """A = Q @ R with Q orthonormal columns and R upper triangular; mode 'reduced', 'complete' or 'r'.

    >>> import workbench as wb
    >>> Q, R = wb.linalg.qr(wb.tensor([[3., 0.], [4., 5.]]))
    >>> (Q @ R).round()
    tensor([[3., 0.],
            [4., 5.]])
    """
    if _AUTOCAST[0]:
        A, = _autocast_cast("linalg", A)
    _check_matrix(A, "linalg.qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    m, n = A.shape[-2], A.shape[-1]
    if m >= n:
        Q, R = QRSquare.apply(A, "complete" if mode == "complete" else "reduced")
    else:  # wide: Q, U = qr(X) on the first m columns, R = [U, Q^H Y]
        X, Y = A[..., :m], A[..., m:]
        Q, U = QRSquare.apply(X, "reduced")
        R = cat([U, _mH(Q) @ Y], -1)
    if mode == "r":
        xp = _backend.xp_of(A._data)
        return QRResult(Tensor._make(xp.zeros((0,), dtype=A._data.dtype)), R)
    return QRResult(Q, R)


class SVD(Function):
    _raw = True
    op_name = "linalg_svd"

    @staticmethod
    def forward(ctx, A, full_matrices):
        xp = ctx.xp
        U, S, Vh = _lapack("linalg.svd", xp.linalg.svd, A, full_matrices)
        S = xp.asarray(S, dtype=xp.zeros((), A.dtype).real.dtype)
        ctx.full = full_matrices
        ctx.save_for_backward(U, S, Vh)
        return U, S, Vh

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_tensors
        k = S.shape[-1]
        if ctx.full:  # only the first k singular vectors take part in the gradient, as in PyTorch
            U, gU = U[..., :k], gU[..., :k]
            Vh, gVh = Vh[..., :k, :], gVh[..., :k, :]
        return _svd_backward(gU, gS, gVh, U, S, Vh), None


def _svd_backward(gU, gS, gVh, U, S, Vh):
    m, n = U.shape[-2], Vh.shape[-1]
    V, gV = _mH(Vh), _mH(gVh)
    skew = lambda X: X - _mH(X)  # noqa: E731
    UhgU = skew(_mH(U) @ gU)
    VhgV = skew(_mH(V) @ gV)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    E = E + _eye_like(E)
    gA = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E
    gA = gA + gS.diag_embed()
    if m > n:
        gA = U @ gA
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - U @ (_mH(U) @ gUSinv)
        return gA @ Vh
    if n > m:
        gA = gA @ Vh
        gVSinv = gV / S.unsqueeze(-2)
        gA = gA + _mH(gVSinv) - (_mH(gVSinv) @ V) @ Vh
        return U @ gA
    return U @ gA @ Vh


@writes_out(dtype="same")
def linalg_svd(A, full_matrices=True, *, driver=None, out=None):
    """A = U @ diag(S) @ Vh, singular values descending (a named tuple U, S, Vh).

    >>> import workbench as wb
    >>> wb.linalg.svd(wb.tensor([[3., 0.], [0., 4.]])).S
    tensor([4., 3.])
    """
    if _AUTOCAST[0]:
        A, = _autocast_cast("linalg", A)
    _check_matrix(A, "linalg.svd", square=False)
    return SVDResult(*SVD.apply(A, bool(full_matrices)))


def svdvals(A, *, driver=None, out=None):
    """The singular values, descending.  >>> wb.linalg.svdvals(wb.tensor([[3., 0.], [0., 4.]]))  ->  tensor([4., 3.])"""
    if _AUTOCAST[0]:
        A, = _autocast_cast("linalg", A)

    _check_matrix(A, "linalg.svdvals", square=False)
    return _out(SVD.apply(A, False)[1], out, "same")


class Eigh(Function):
    _raw = True
    op_name = "linalg_eigh"

    @staticmethod
    def forward(ctx, A, uplo):
        L, V = _lapack("linalg.eigh", ctx.xp.linalg.eigh, A, uplo)
        ctx.save_for_backward(L, V)
        return L, V

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        VhgV = _mH(V) @ gV
        VhgV = 0.5 * (VhgV - _mH(VhgV))
        E = L.unsqueeze(-2) - L.unsqueeze(-1)
        E = E + _eye_like(E)
        inner = VhgV / E + gL.diag_embed()
        return V @ inner @ _mH(V), None


def _uplo(UPLO, op):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"{op}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO


@writes_out(dtype="same")
def eigh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) and orthonormal eigenvectors of a Hermitian matrix (its UPLO triangle is read).

    >>> import workbench as wb
    >>> wb.linalg.eigh(wb.tensor([[2., 0.], [0., 1.]])).eigenvalues
    tensor([1., 2.])
    """
    if _AUTOCAST[0]:
        A, = _autocast_cast("linalg", A)
    _check_matrix(A, "linalg.eigh")
    return EighResult(*Eigh.apply(A, _uplo(UPLO, "linalg.eigh")))


def eigvalsh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) of a Hermitian matrix.  >>> wb.linalg.eigvalsh(wb.eye(2))  ->  tensor([1., 1.])"""
    if _AUTOCAST[0]:
        A, = _autocast_cast("linalg", A)

    _check_matrix(A, "linalg.eigvalsh")
    return _out(Eigh.apply(A, _uplo(UPLO, "linalg.eigvalsh"))[0], out, "same")


def _complex_np(npd):
    return {"float32": "complex64", "float64": "complex128"}.get(str(npd), str(npd))


class Eig(Function):
    _raw = True
    op_name = "linalg_eig"

    @staticmethod
    def forward(ctx, A):
        L, V = _lapack("linalg.eig", _linalg(ctx.xp, "eig"), A)
        cd = _complex_np(A.dtype)
        L, V = L.astype(cd), V.astype(cd)
        ctx.real_input = A.dtype.kind != "c"
        ctx.save_for_backward(L, V)
        return L, V

    @staticmethod
    def backward(ctx, gL, gV):
        # PyTorch's linalg_eig_backward: V is normalised column-wise, so gV is projected first
        L, V = ctx.saved_tensors
        Vh = _mH(V)
        VhgV = Vh @ gV
        VhgV = VhgV - Vh @ (V * VhgV.diagonal(0, -2, -1).real.unsqueeze(-2))
        E = (L.unsqueeze(-2) - L.unsqueeze(-1)).conj()
        eye = _eye_like(E)
        ret = VhgV / (E + eye) * (1 - eye) + gL.diag_embed()
        gA = Solve.apply(Vh, ret @ Vh)
        return gA.real if ctx.real_input else gA


@writes_out(dtype="same")
def eig(A, *, out=None):
    """Complex eigenvalues and eigenvectors (unit columns) of a general square matrix, with PyTorch's
    gradient (defined when the loss does not depend on the eigenvectors' phases).

    >>> import workbench as wb
    >>> wb.linalg.eig(wb.tensor([[2., 0.], [0., 1.]])).eigenvalues.real
    tensor([2., 1.])
    """
    if _AUTOCAST[0]:
        A, = _autocast_cast("linalg", A)
    _check_matrix(A, "linalg.eig")
    return EigResult(*Eig.apply(A))


@writes_out(dtype="same")
def eigvals(A, *, out=None):
    """Complex eigenvalues of a general square matrix.  >>> wb.linalg.eigvals(wb.eye(2)).real  ->  tensor([1., 1.])"""
    if _AUTOCAST[0]:
        A, = _autocast_cast("linalg", A)
    return eig(A).eigenvalues


# --- pseudo-inverse and least squares ---------------------------------------------------------------
class Pinv(Function):
    _raw = True
    op_name = "linalg_pinv"

    @staticmethod
    def forward(ctx, A, atol, rtol):
        xp = ctx.xp
        U, S, Vh = xp.linalg.svd(A, full_matrices=False)
        smax = S.max(axis=-1, keepdims=True) if S.shape[-1] else xp.zeros(S.shape[:-1] + (1,), S.dtype)
        tol = xp.maximum(atol, rtol * smax)
        Sinv = xp.where(S > tol, 1 / xp.where(S > tol, S, 1), 0).astype(S.dtype)
        P = xp.matmul(xp.conj(xp.swapaxes(Vh, -1, -2)) * Sinv[..., None, :], xp.conj(xp.swapaxes(U, -1, -2)))
        P = P.astype(A.dtype, copy=False)
        ctx.save_for_backward(A, P)
        return P

    @staticmethod
    def backward(ctx, g):
        A, P = ctx.saved_tensors
        m, n = A.shape[-2], A.shape[-1]
        Ph, gh = _mH(P), _mH(g)
        if m <= n:
            K = gh @ P
            KPh = K @ Ph
            gA = -_mH(P @ K) + KPh - (A @ P) @ KPh + (Ph @ P) @ (gh - K @ A)
        else:
            K = P @ gh
            PhK = Ph @ K
            gA = -_mH(K @ P) + (gh - A @ K) @ P @ Ph + PhK - PhK @ P @ A
        return gA, None, None


def _tols(A, atol, rtol, op):
    if isinstance(atol, Tensor) or isinstance(rtol, Tensor):
        raise TypeError(f"{op}: pass atol/rtol as Python floats")
    eps = _backend.numpy.finfo(A._data.dtype).eps
    a = 0.0 if atol is None else float(atol)
    r = (max(A.shape[-2], A.shape[-1]) * eps if not a else 0.0) if rtol is None else float(rtol)
    return a, r if not math.isnan(r) else 0.0


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The Moore-Penrose pseudo-inverse (singular values under max(atol, rtol * s_max) count as zero).

    >>> import workbench as wb
    >>> wb.linalg.pinv(wb.tensor([[2., 0.], [0., 0.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.0000]])
    """
    if _AUTOCAST[0]:
        A, = _autocast_cast("linalg", A)

    _check_matrix(A, "linalg.pinv", square=False)
    a, r = _tols(A, atol, rtol, "linalg.pinv")
    return _out(Pinv.apply(A, a, r), out)


def pinverse(input, rcond=1e-15):
    """pinv with singular values under rcond * s_max treated as zero.  >>> wb.pinverse(wb.eye(2) * 2)  ->  tensor([[0.5000, 0.0000], [0.0000, 0.5000]])"""
    if _AUTOCAST[0]:
        input, = _autocast_cast("linalg", input)
    return pinv(input, rtol=rcond)


@writes_out(dtype="same")
def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The number of singular values above max(atol, rtol * s_max).  >>> wb.linalg.matrix_rank(wb.eye(3))  ->  tensor(3)"""
    if _AUTOCAST[0]:
        A, = _autocast_cast("linalg", A)
    _check_matrix(A, "linalg.matrix_rank", square=False)
    a, r = _tols(A, atol, rtol, "linalg.matrix_rank")
    xp = _backend.xp_of(A._data)
    S = xp.linalg.svd(A._data, compute_uv=False)
    smax = S.max(axis=-1, keepdims=True) if S.shape[-1] else xp.zeros(S.shape[:-1] + (1,), S.dtype)
    return Tensor._make((S > xp.maximum(a, r * smax)).sum(axis=-1).astype("int64"))


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution of A @ X = B (named tuple: solution, residuals, rank, singular_values).

    >>> import workbench as wb
    >>> wb.linalg.lstsq(wb.tensor([[1.], [1.]]), wb.tensor([[1.], [3.]])).solution
    tensor([[2.0000]])
    """
    if _AUTOCAST[0]:
        A, B = _autocast_cast("linalg", A, B)
    _check_matrix(A, "linalg.lstsq", square=False)
    drivers = ("gels", "gelsy", "gelsd", "gelss")
    driver = driver or "gelsy"
    if driver not in drivers:
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of {drivers}")
    vector = B.ndim == A.ndim - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2) (got {A.shape[-2]} and "
                           f"{Bm.shape[-2]})")
    X = pinv(A, rtol=rcond) @ Bm
    xp = _backend.xp_of(A._data)
    m, n = A.shape[-2], A.shape[-1]
    rank = matrix_rank(A, rtol=rcond) if driver != "gels" else Tensor._make(xp.zeros((0,), "int64"))
    sv = svdvals(A.detach()) if driver in ("gelsd", "gelss") else Tensor._make(
        xp.zeros((0,), xp.zeros((), A._data.dtype).real.dtype))
    # squared residuals: only for tall, full-rank A, and not from the default driver gelsy (as PyTorch)
    full = driver != "gelsy" and m > n and bool((matrix_rank(A)._data == n).all())
    if full:
        res = ((A @ X - Bm).abs() ** 2).sum(-2)
    else:
        res = Tensor._make(xp.zeros((0,), dtype=xp.zeros((), A._data.dtype).real.dtype))
    if vector:
        X = X.squeeze(-1)
        if full:
            res = res.squeeze(-1)
    return LstsqResult(X, res, rank, sv)


# --- built from the above ---------------------------------------------------------------------------
def matrix_power(A, n, *, out=None):
    """A multiplied by itself n times (inverse powers for n < 0, the identity for n = 0).

    >>> import workbench as wb
    >>> wb.linalg.matrix_power(wb.tensor([[1., 1.], [0., 1.]]), 3)
    tensor([[1., 3.],
            [0., 1.]])
    """

    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, got shape {list(A.shape)}")
    n = int(n)
    if n == 0:
        return _out(_eye_like(A).expand(*A.shape).clone() + A * 0, out, "same")
    base = inv(A) if n < 0 else A
    n = abs(n)
    result = None
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return _out(result, out, "same")


def multi_dot(tensors, *, out=None):
    """The product of a chain of matrices (the first/last may be vectors).

    >>> import workbench as wb
    >>> wb.linalg.multi_dot([wb.ones(2), wb.ones(2, 3), wb.ones(3)])
    tensor(6.)
    """
    if _AUTOCAST[0]:
        tensors, = _autocast_cast("multi_dot", tensors)

    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    first_vec, last_vec = ts[0].ndim == 1, ts[-1].ndim == 1
    if first_vec:
        ts[0] = ts[0].unsqueeze(0)
    if last_vec:
        ts[-1] = ts[-1].unsqueeze(-1)
    for i, t in enumerate(ts):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    r = ts[0]
    for t in ts[1:]:
        if r.shape[-1] != t.shape[0]:
            raise RuntimeError(f"multi_dot(): tensors cannot be chained: shapes {list(r.shape)} and {list(t.shape)}")
        r = r @ t
    if first_vec:
        r = r.squeeze(0)
    if last_vec:
        r = r.squeeze(-1)
    return _out(r, out, "same")


class VectorNorm(Function):
    _raw = True
    op_name = "linalg_vector_norm"

    @staticmethod
    def forward(ctx, x, ord, dims, keepdim):
        xp = ctx.xp
        a = xp.abs(x)
        if ord == float("inf"):
            r = a.max(axis=dims, keepdims=keepdim) if a.size else xp.zeros(_reduced_shape(a.shape, dims, keepdim))
        elif ord == float("-inf"):
            r = a.min(axis=dims, keepdims=keepdim)
        elif ord == 0:
            r = (a != 0).sum(axis=dims, keepdims=keepdim).astype(a.dtype)
        elif ord == 1:
            r = a.sum(axis=dims, keepdims=keepdim)
        elif ord == 2:
            r = xp.sqrt((a * a).sum(axis=dims, keepdims=keepdim))
        else:
            r = (a ** ord).sum(axis=dims, keepdims=keepdim) ** (1.0 / ord)
        r = xp.asarray(r, dtype=a.dtype)
        ctx.ord, ctx.dims, ctx.keepdim, ctx.shape = ord, dims, keepdim, x.shape
        ctx.save_for_backward(x, r)
        return r

    @staticmethod
    def backward(ctx, g):
        x, r = ctx.saved_tensors
        p = ctx.ord
        shape = list(ctx.shape)
        for d in (ctx.dims if ctx.dims is not None else range(len(shape))):
            shape[d] = 1
        shape = tuple(shape)
        if p == 2 and not STATE.enabled and x._data.__class__ is _np.ndarray:  # the steps below, on the arrays
            rd, gd = r._data.reshape(shape), g._data.reshape(shape)
            zero = rd == 0
            return Tensor._make(_np.where(zero, rd * 0, gd / _np.where(zero, rd + 1, rd)) * x._data), None, None, None
        if not ctx.keepdim:
            g, r = g.reshape(shape), r.reshape(shape)
        if p == 0:  # a count: no gradient, as in PyTorch
            return None, None, None, None
        sgn = x.sign()
        if p == 1:
            return g * sgn, None, None, None
        if p in (float("inf"), float("-inf")):
            hit = (x.abs() == r).to(x.dtype)
            count = hit.sum(dim=ctx.dims, keepdim=True) if ctx.dims is not None else hit.sum().reshape(
                (1,) * x.ndim)
            return g * sgn * hit / count, None, None, None
        safe = where(r == 0, r + 1, r)
        if p == 2:
            return where(r == 0, r * 0, g / safe) * x, None, None, None
        scale = where(r == 0, r * 0, g / safe ** (p - 1))
        a = x.abs()
        if p < 1:  # |x|**(p - 1) is infinite at a zero element, whose gradient is 0 (PyTorch masks it)
            zero = a == 0
            return scale * sgn * where(zero, a, where(zero, a + 1, a) ** (p - 1)), None, None, None
        return scale * sgn * a ** (p - 1), None, None, None


def _reduced_shape(shape, dims, keepdim):
    dims = range(len(shape)) if dims is None else dims
    return tuple(1 if i in dims else s for i, s in enumerate(shape) if keepdim or i not in dims)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The ord-norm of x's elements, over ``dim`` (all by default): sum(|x|**ord)**(1/ord), max/min for +-inf.

    >>> import workbench as wb
    >>> wb.linalg.vector_norm(wb.tensor([3., 4.]))
    tensor(5.)
    """
    if _AUTOCAST[0] and dtype is None:
        x, = _autocast_cast("vector_norm", x)

    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{x.dtype}")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    if dtype is not None:
        x = x.to(dtype)
    dims = norm_dims(dim, x.ndim, "linalg.vector_norm")
    if x.ndim == 0:
        dims = None
    ord = float(ord)
    if ord < 0 and x.numel() == 0:
        raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because the "
                           "operation does not have an identity")
    return _out(VectorNorm.apply(x, ord, dims, bool(keepdim)), out, "same")


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """A matrix norm over the two dims ``dim``: 'fro', 'nuc', inf, -inf, 1, -1, 2, -2.

    >>> import workbench as wb
    >>> wb.linalg.matrix_norm(wb.tensor([[3., 0.], [0., 4.]]), 2)
    tensor(4.)
    """
    if _AUTOCAST[0] and dtype is None:
        A, = _autocast_cast("matrix_norm", A)

    if A.ndim < 2:
        raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions, got shape "
                           f"{list(A.shape)}")
    if dtype is not None:
        A = A.to(dtype)
    d0, d1 = (wrap_dim(d, A.ndim) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord == "fro":
        return _out(vector_norm(A, 2, (d0, d1), keepdim), out, "same")
    if ord in ("nuc", 2, -2):
        M = A.movedim((d0, d1), (-2, -1))
        S = svdvals(M)
        r = S.sum(-1) if ord == "nuc" else vector_norm(S, float("inf") if ord == 2 else float("-inf"), -1)
        if keepdim:
            r = r.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
        return _out(r, out, "same")
    if ord in (1, -1, float("inf"), float("-inf")):
        big = ord in (1, float("inf"))
        sum_dim, max_dim = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = A.abs().sum(dim=sum_dim, keepdim=True)
        r = vector_norm(s, float("inf") if big else float("-inf"), max_dim, keepdim=True)
        if not keepdim:
            r = r.squeeze((d0, d1))
        return _out(r, out, "same")
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported (use 'fro', 'nuc', inf, -inf, 1, -1, 2, -2)")


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """A vector norm (1-D input or int dim) or matrix norm (2-D input or a pair of dims); 2-norm of the
    flattened input when ord and dim are both None.

    >>> import workbench as wb
    >>> wb.linalg.norm(wb.tensor([[3., 0.], [0., 4.]]))
    tensor(5.)
    """
    if dim is not None and not isinstance(dim, int):
        dim = tuple(dim)
        if len(dim) == 1:
            dim = dim[0]
    if ord is None:
        if isinstance(dim, tuple) and len(dim) == 2:
            return matrix_norm(A, "fro", dim, keepdim, dtype=dtype, out=out)
        return vector_norm(A, 2, dim, keepdim, dtype=dtype, out=out)
    if dim is None:
        if A.ndim == 1:
            if isinstance(ord, str):
                raise RuntimeError(f"linalg.norm: ord {ord!r} is a matrix norm, but the input is 1-D")
            return vector_norm(A, ord, None, keepdim, dtype=dtype, out=out)
        if A.ndim == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype, out=out)
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{A.ndim}D.")
    if isinstance(dim, int):
        return vector_norm(A, ord, dim, keepdim, dtype=dtype, out=out)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dim)}")
    return matrix_norm(A, ord, dim, keepdim, dtype=dtype, out=out)


def cond(A, p=None, *, out=None):
    """The condition number of A in norm p (2-norm by default: s_max / s_min).

    >>> import workbench as wb
    >>> wb.linalg.cond(wb.tensor([[1., 0.], [0., 4.]]))
    tensor(4.)
    """
    if _AUTOCAST[0]:
        A, = _autocast_cast("linalg", A)

    _check_matrix(A, "linalg.cond", square=False)
    if p in (None, 2, -2):
        S = svdvals(A)
        r = S[..., 0] / S[..., -1] if p != -2 else S[..., -1] / S[..., 0]
        return _out(r, out, "same")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    return _out(matrix_norm(A, p) * matrix_norm(inv(A), p), out, "same")


class VecDot(Function):
    """sum(x * y, dim) of two real float32/float64 arrays of one shape and dtype as one primitive (y None: x
    with itself): einsum reads them once, without the product's temporary (cosine_embedding_loss's three row
    dots); the gradient is g y and g x (2 g x for a self-dot: one product, not two and their sum), Tensor
    products, so it differentiates again."""

    _raw = True
    op_name = "linalg_vecdot"

    @staticmethod
    def forward(ctx, x, y, dim):
        ctx.dim = dim
        ctx.save_for_backward(x, y)
        xp = ctx.xp
        xl = xp.moveaxis(x, dim, -1)
        return xp.asarray(xp.einsum("...i,...i->...", xl, xl if y is None else xp.moveaxis(y, dim, -1)))

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        nig = ctx.needs_input_grad
        g = g.unsqueeze(ctx.dim)
        if y is None:
            return (g * 2) * x, None, None
        return g * y if nig[0] else None, g * x if nig[1] else None, None


def vecdot(x, y, *, dim=-1, out=None):
    """Dot product of vectors along ``dim`` (x conjugated), broadcast.  >>> wb.linalg.vecdot(wb.ones(2, 3), wb.ones(3))  ->  tensor([3., 3.])"""
    if _AUTOCAST[0]:
        x, y = _autocast_cast("vecdot", x, y)
    dx, dy = x._data, y._data
    if dx.shape == dy.shape and dx.dtype == dy.dtype and dx.dtype.kind == "f" and dx.itemsize >= 4 and dx.ndim:
        return _out(VecDot.apply(x, None if y is x else y, wrap_dim(dim, dx.ndim)), out, "same")
    xx = x.conj() if x.is_complex() else x
    return _out((xx * y).sum(dim), out, "same")


def linalg_diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """linalg.diagonal: the diagonal over the last two dims by default (a view).

    >>> import workbench as wb
    >>> wb.linalg.diagonal(wb.eye(2).expand(3, 2, 2)).shape
    workbench.Size([3, 2])
    """
    return A.diagonal(offset, dim1, dim2)


# --- variants that report failure in an ``info`` tensor instead of raising ----------------------------
def _with_info(A, fn, info_of, check_errors):
    """(fn(A), info): info is 0 per matrix where fn succeeded; failed matrices give NaN results."""
    xp = _backend.xp_of(A._data)
    batch = tuple(A.shape[:-2])
    try:
        return fn(A), Tensor._make(xp.zeros(batch, dtype="int32"))
    except LinAlgError:
        if check_errors:
            raise
    mats = A.reshape(-1, *A.shape[-2:])
    outs, info = [], []
    for k in range(mats.shape[0]):
        m = mats[k]
        try:
            outs.append(fn(m))
            info.append(0)
        except LinAlgError:
            info.append(info_of(m._data))
            outs.append(None)
    like = next((o for o in outs if o is not None), None)
    nan_shape = tuple(like.shape) if like is not None else tuple(A.shape[-2:])
    outs = [o if o is not None else Tensor._make(xp.full(nan_shape, xp.nan, dtype=A._data.dtype)) for o in outs]
    out = stack(outs).reshape(batch + nan_shape)
    return out, Tensor._make(xp.asarray(info, dtype="int32").reshape(batch))


def _singular_info(m):
    # a positive info for a singular matrix, as LAPACK's getrf: one past the rank
    return int(_backend.numpy.linalg.matrix_rank(m.get() if hasattr(m, "get") else m)) + 1


def _not_pd_info(m):
    # the order of the first leading minor that is not positive-definite, as LAPACK's potrf
    h = m.get() if hasattr(m, "get") else m
    for k in range(1, h.shape[-1] + 1):
        try:
            _backend.numpy.linalg.cholesky(h[:k, :k])
        except _backend.numpy.linalg.LinAlgError:
            return k
    return h.shape[-1]


InvExResult = _named("inv_ex", ["inverse", "info"])
CholeskyExResult = _named("cholesky_ex", ["L", "info"])
SolveExResult = _named("solve_ex", ["result", "info"])


@writes_out(dtype="same")
def inv_ex(A, *, check_errors=False, out=None):
    """inv with an ``info`` tensor (non-zero for singular matrices, whose result is NaN) instead of an error.

    >>> import workbench as wb
    >>> wb.linalg.inv_ex(wb.zeros(2, 2)).info
    tensor(1, dtype=workbench.int32)
    """
    if _AUTOCAST[0]:
        A, = _autocast_cast("linalg", A)
    _check_matrix(A, "linalg.inv_ex")
    return InvExResult(*_with_info(A, Inv.apply, _singular_info, check_errors))


@writes_out(dtype="same")
def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """cholesky with an ``info`` tensor (the order of the failing minor, 0 on success) instead of an error.

    >>> import workbench as wb
    >>> wb.linalg.cholesky_ex(-wb.eye(2)).info
    tensor(1, dtype=workbench.int32)
    """
    if _AUTOCAST[0]:
        A, = _autocast_cast("linalg", A)
    _check_matrix(A, "linalg.cholesky_ex")
    L, info = _with_info(A, Cholesky.apply, _not_pd_info, check_errors)
    return CholeskyExResult(_mH(L) if upper else L, info)


@writes_out(dtype="same")
def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """solve with an ``info`` tensor (non-zero for singular A, whose result is NaN) instead of an error.

    >>> import workbench as wb
    >>> wb.linalg.solve_ex(wb.eye(2), wb.ones(2)).info
    tensor(0, dtype=workbench.int32)
    """
    if _AUTOCAST[0]:
        A, B = _autocast_cast("linalg", A, B)
    _check_matrix(A, "linalg.solve_ex")
    try:
        r = solve(A, B, left=left)
        xp = _backend.xp_of(A._data)
        return SolveExResult(r, Tensor._make(xp.zeros(tuple(A.shape[:-2]), dtype="int32")))
    except LinAlgError:
        if check_errors:
            raise
    X, info = inv_ex(A)
    return SolveExResult(_apply_inverse(X, B, A, left), info)


def _apply_inverse(Ainv, B, A, left):
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        return (Ainv @ B.unsqueeze(-1)).squeeze(-1) if left else (B.unsqueeze(-2) @ Ainv).squeeze(-2)
    return Ainv @ B if left else B @ Ainv


# --- more compositions ---------------------------------------------------------------------------
def tensorinv(A, ind=2, *, out=None):
    """The inverse of A seen as a linear map from its last dims to its first ``ind`` dims.

    >>> import workbench as wb
    >>> wb.linalg.tensorinv(wb.eye(4).reshape(4, 2, 2), ind=1).shape
    workbench.Size([2, 2, 4])
    """
    if _AUTOCAST[0]:
        A, = _autocast_cast("linalg", A)

    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    lo, hi = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    p = 1
    for s in lo:
        p *= s
    q = 1
    for s in hi:
        q *= s
    if p != q:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {q} != {p}")
    return _out(inv(A.reshape(p, q)).reshape(hi + lo), out, "same")


def tensorsolve(A, B, dims=None, *, out=None):
    """X with tensordot(A, X, X.ndim) = B (``dims`` of A moved last first).

    >>> import workbench as wb
    >>> wb.linalg.tensorsolve(wb.eye(4).reshape(2, 2, 4), wb.ones(2, 2)).shape
    workbench.Size([4])
    """
    if _AUTOCAST[0]:
        A, B = _autocast_cast("linalg", A, B)

    if dims is not None:
        dims = [wrap_dim(d, A.ndim) for d in dims]
        A = A.movedim(dims, list(range(A.ndim - len(dims), A.ndim)))
    rest = tuple(A.shape[B.ndim:])
    n = B.numel()
    m = 1
    for s in rest:
        m *= s
    if tuple(A.shape[:B.ndim]) != tuple(B.shape) or m != n:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {m} != {n} (A {list(A.shape)}, B "
                           f"{list(B.shape)})")
    return _out(solve(A.reshape(n, m), B.reshape(n)).reshape(rest), out, "same")


def _powers(x, N):
    cols = [x * 0 + 1]
    for _ in range(1, N):
        cols.append(cols[-1] * x)
    return stack(cols, -1)


def linalg_vander(x, *, N=None):
    """linalg.vander: columns x**0, x**1, ..., x**(N-1) (increasing), batched.

    >>> import workbench as wb
    >>> wb.linalg.vander(wb.tensor([2, 3]))
    tensor([[1, 2],
            [1, 3]])
    """
    if x.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    n = x.shape[-1] if N is None else int(N)
    if n < 1:
        raise RuntimeError(f"N must be greater than 1, but got {N}")
    return _powers(x, n)


def vander(x, N=None, increasing=False):
    """torch.vander: columns x**(N-1), ..., x**0 (decreasing unless increasing=True).

    >>> import workbench as wb
    >>> wb.vander(wb.tensor([2, 3]), 3)
    tensor([[4, 2, 1],
            [9, 3, 1]])
    """
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if n == 0:
        return creation.empty(x.shape[0], 0, dtype=x.dtype, device=x.device)
    v = _powers(x, n)
    return v if increasing else v.flip(-1)


def matrix_exp(A):
    """The matrix exponential e**A (scaling and squaring of a degree-18 Taylor series; differentiable).

    >>> import workbench as wb
    >>> wb.linalg.matrix_exp(wb.zeros(2, 2))
    tensor([[1., 0.],
            [0., 1.]])
    """
    _check_matrix(A, "linalg.matrix_exp")
    xp = _backend.xp_of(A._data)
    norm1 = float(xp.abs(A._data).sum(-2).max()) if A.numel() else 0.0
    s = max(0, int(math.ceil(math.log2(norm1))) + 1) if norm1 > 0.5 else 0
    X = A / (2.0 ** s) if s else A
    eye = _eye_like(A)
    # Horner: I + X (I + X/2 (I + X/3 (... (I + X/18))))
    R = eye + X / 18.0
    for k in range(17, 0, -1):
        R = eye + (X @ R) / float(k)
    for _ in range(s):
        R = R @ R
    return R


def cholesky_solve(B, L, upper=False, *, out=None):
    """X with A X = B for A = L L^H given its Cholesky factor L (U^H U when upper).

    >>> import workbench as wb
    >>> wb.cholesky_solve(wb.ones(2, 1), wb.eye(2) * 2)
    tensor([[0.2500],
            [0.2500]])
    """
    if _AUTOCAST[0]:
        B, L = _autocast_cast("linalg", B, L)

    Lo = _mH(L) if upper else L
    return _out(Solve.apply(_mH(Lo), Solve.apply(Lo, B)), out, "same")


def cholesky_inverse(L, upper=False, *, out=None):
    """The inverse of A = L L^H (U^H U when upper) from its Cholesky factor.

    >>> import workbench as wb
    >>> wb.cholesky_inverse(wb.eye(2) * 2)
    tensor([[0.2500, 0.0000],
            [0.0000, 0.2500]])
    """
    if _AUTOCAST[0]:
        L, = _autocast_cast("linalg", L)

    Lo = _mH(L) if upper else L
    return _out(inv(Lo @ _mH(Lo)), out, "same")


def chain_matmul(*matrices, out=None):
    """The product of 2-D matrices (deprecated in PyTorch: use linalg.multi_dot).  >>> wb.chain_matmul(wb.eye(2), wb.eye(2))  ->  tensor([[1., 0.], [0., 1.]])"""
    if _AUTOCAST[0]:
        matrices = _autocast_cast("chain_matmul", *matrices)
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead", UserWarning, stacklevel=2)
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(matrices, out=out)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between every row of x1 and every row of x2 (batched).

    >>> import workbench as wb
    >>> wb.cdist(wb.tensor([[0., 0.]]), wb.tensor([[3., 4.], [0., 1.]]))
    tensor([[5., 1.]])
    """
    if _AUTOCAST[0]:
        x1, x2 = _autocast_cast("cdist", x1, x2)
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D, X2 got: {x2.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    return vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1)


# --- LU with partial pivoting --------------------------------------------------------------------
def _lu_raw(xp, A):
    """Batched LU with partial pivoting of square or rectangular A (LAPACK getrf's choices).

    Returns the packed factors (unit L below the diagonal, U on and above), LAPACK's 1-based pivots and
    the row order ``perm`` with A[perm] = L @ U.
    """
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    batch = A.shape[:-2]
    B = xp.array(A.reshape((-1, m, n)), copy=True)
    nb = B.shape[0]
    perm = xp.broadcast_to(xp.arange(m), (nb, m)).copy()
    piv = xp.zeros((nb, k), dtype="int32")
    rows = xp.arange(nb)
    for j in range(k):
        p = j + xp.argmax(xp.abs(B[:, j:, j]), axis=1)
        piv[:, j] = p + 1
        top, other = B[rows, j].copy(), B[rows, p].copy()
        B[rows, j], B[rows, p] = other, top
        pt, po = perm[rows, j].copy(), perm[rows, p].copy()
        perm[rows, j], perm[rows, p] = po, pt
        pivot = B[:, j, j]
        safe = xp.where(pivot == 0, 1, pivot)
        B[:, j + 1:, j] = xp.where((pivot == 0)[:, None], B[:, j + 1:, j], B[:, j + 1:, j] / safe[:, None])
        B[:, j + 1:, j + 1:] -= B[:, j + 1:, j:j + 1] * B[:, j:j + 1, j + 1:]
    return B.reshape(batch + (m, n)), piv.reshape(batch + (k,)), perm.reshape(batch + (m,))


def _perm_matrix(xp, perm, dtype):
    """P with A = P @ (A[perm]): P[perm[i], i] = 1."""
    m = perm.shape[-1]
    eye = xp.eye(m, dtype=dtype)
    return xp.swapaxes(eye[perm], -1, -2)


class LUSquare(Function):
    """(P, L, U) of a square matrix; the gradient is PyTorch's for the square case."""

    _raw = True
    op_name = "linalg_lu"

    @staticmethod
    def forward(ctx, A):
        xp = ctx.xp
        LU, _, perm = _lu_raw(xp, A)
        n = A.shape[-1]
        L = xp.tril(LU, -1) + xp.eye(n, dtype=A.dtype)
        U = xp.triu(LU)
        P = _perm_matrix(xp, perm, A.dtype)
        ctx.save_for_backward(P, L, U)
        ctx.mark_non_differentiable(P)
        return P, L, U

    @staticmethod
    def backward(ctx, gP, gL, gU):
        P, L, U = ctx.saved_tensors
        # gA = P L^{-H} [tril(L^H gL, -1) + triu(gU U^H)] U^{-H}
        gR = (_mH(L) @ gL).tril(-1) + (gU @ _mH(U)).triu()
        X = Solve.apply(_mH(L), gR)
        return P @ _mH(Solve.apply(U, _mH(X)))


LUResult = _named("lu", ["P", "L", "U"])
LUFactorResult = _named("lu_factor", ["LU", "pivots"])


@writes_out(dtype="same")
def linalg_lu(A, *, pivot=True, out=None):
    """A = P @ L @ U with partial pivoting: P a permutation, L unit lower and U upper trapezoidal.

    >>> import workbench as wb
    >>> P, L, U = wb.linalg.lu(wb.tensor([[1., 2.], [3., 4.]]))
    >>> U
    tensor([[3.0000, 4.0000],
            [0.0000, 0.6667]])
    """
    _check_matrix(A, "linalg.lu", square=False)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    m, n = A.shape[-2], A.shape[-1]
    if m == n:
        return LUResult(*LUSquare.apply(A))
    xp = _backend.xp_of(A._data)
    if m < n:  # wide: the pivots come from the first m columns; U2 = L^{-1} P^T A2
        P, L, U1 = LUSquare.apply(A[..., :m])
        U2 = solve_triangular(L, _mH(P) @ A[..., m:], upper=False, unitriangular=True)
        return LUResult(P, L, cat([U1, U2], -1))
    # tall: pivot on the whole columns, then the square top block factors without further pivoting
    _, _, perm = _lu_raw(xp, A._data)
    P = Tensor._make(_perm_matrix(xp, perm, A._data.dtype))
    Ap = _mH(P) @ A
    _, L1, U = LUSquare.apply(Ap[..., :n, :])
    L2 = solve_triangular(U, Ap[..., n:, :], upper=True, left=False)
    return LUResult(P, cat([L1, L2], -2), U)


@writes_out(dtype="same")
def lu_factor(A, *, pivot=True, out=None):
    """The LU factors packed in one matrix (L's unit diagonal implied), and 1-based pivots (int32).

    >>> import workbench as wb
    >>> wb.linalg.lu_factor(wb.tensor([[1., 2.], [3., 4.]])).pivots
    tensor([2, 2], dtype=workbench.int32)
    """
    _check_matrix(A, "linalg.lu_factor", square=False)
    P, L, U = linalg_lu(A, pivot=pivot)
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    packed = ConstantPad.apply(L.tril(-1), (0, n - k), 0) + ConstantPad.apply(U, (0, 0, 0, m - k), 0)
    _, piv, _ = _lu_raw(_backend.xp_of(A._data), A._data)
    return LUFactorResult(packed, Tensor._make(piv))


LUFactorExResult = _named("lu_factor_ex", ["LU", "pivots", "info"])


def _lu_info(LU):
    # LAPACK getrf's info: the 1-based index of the first exactly-zero pivot, 0 if none
    xp = _backend.xp_of(LU._data)
    diag = xp.diagonal(LU._data, 0, -2, -1)
    zero = diag == 0
    return Tensor._make(xp.where(zero.any(-1), zero.argmax(-1) + 1, 0).astype("int32"))


@writes_out(dtype="same")
def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """lu_factor with an ``info`` tensor: the first zero pivot (1-based) of a singular matrix, else 0.

    >>> import workbench as wb
    >>> wb.linalg.lu_factor_ex(wb.zeros(2, 2)).info
    tensor(1, dtype=workbench.int32)
    """
    LU, piv = lu_factor(A, pivot=pivot)
    info = _lu_info(LU)
    if check_errors and bool((info._data != 0).any()):
        raise LinAlgError(f"linalg.lu_factor_ex: U[{int(info._data.max())},{int(info._data.max())}] is zero, "
                          "singular U.")
    return LUFactorExResult(LU, piv, info)


def _pivots_to_perm(xp, piv, m):
    """The row order perm (A[perm] = L U) from LAPACK's sequential row swaps."""
    batch = piv.shape[:-1]
    p = piv.reshape((-1, piv.shape[-1])).astype("int64") - 1
    nb = p.shape[0]
    perm = xp.broadcast_to(xp.arange(m), (nb, m)).copy()
    rows = xp.arange(nb)
    for j in range(p.shape[1]):
        a, b = perm[rows, j].copy(), perm[rows, p[:, j]].copy()
        perm[rows, j], perm[rows, p[:, j]] = b, a
    return perm.reshape(batch + (m,))


@writes_out(dtype="same")
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) from lu_factor's packed factors and pivots.

    >>> import workbench as wb
    >>> LU, piv = wb.linalg.lu_factor(wb.tensor([[1., 2.], [3., 4.]]))
    >>> wb.lu_unpack(LU, piv).P
    tensor([[0., 1.],
            [1., 0.]])
    """
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    xp = _backend.xp_of(LU_data._data)
    P = L = U = None
    if unpack_data:
        eye = Tensor._make(xp.eye(m, k, dtype=LU_data._data.dtype))
        L = LU_data[..., :, :k].tril(-1) + eye
        U = LU_data[..., :k, :].triu()
    if unpack_pivots:
        perm = _pivots_to_perm(xp, _backend.to_device(LU_pivots._data, LU_data.device), m)
        P = Tensor._make(_perm_matrix(xp, perm, LU_data._data.dtype))
    empty = Tensor._make(xp.zeros((0,), dtype=LU_data._data.dtype))
    return LUResult(P if P is not None else empty, L if L is not None else empty, U if U is not None else empty)


def linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B (X A = B when left=False; A^H in place of A with adjoint) from A's LU factors.

    >>> import workbench as wb
    >>> A = wb.tensor([[1., 2.], [3., 4.]])
    >>> wb.linalg.lu_solve(*wb.linalg.lu_factor(A), wb.tensor([[5.], [11.]]))
    tensor([[1.],
            [2.]])
    """
    if _AUTOCAST[0]:
        LU, B = _autocast_cast("linalg", LU, B)

    if LU.ndim < 2 or LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"linalg.lu_solve: Expected LU to be batches of square matrices, got shape "
                           f"{list(LU.shape)}")
    if not left:  # X A = B  <=>  A^H X^H = B^H
        return _out(_mH(linalg_lu_solve(LU, pivots, _mH(B), adjoint=not adjoint)), out, "same")
    P, L, U = lu_unpack(LU, pivots)
    try:
        if adjoint:  # A^H = U^H L^H P^T
            X = P @ solve_triangular(_mH(L), solve_triangular(_mH(U), B, upper=False), upper=True, unitriangular=True)
        else:
            X = solve_triangular(U, solve_triangular(L, _mH(P) @ B, upper=False, unitriangular=True), upper=True)
    except RuntimeError:
        _raise_batch_error(B, LU)
        raise
    return _out(X, out, "same")


# --- the legacy top-level spellings --------------------------------------------------------------
def inverse(input, *, out=None):
    """Same as linalg.inv.  >>> wb.inverse(wb.eye(2) * 2)  ->  tensor([[0.5000, 0.0000], [0.0000, 0.5000]])"""
    if _AUTOCAST[0]:
        input, = _autocast_cast("linalg", input)
    return inv(input, out=out)


@writes_out(dtype="same")
def svd(input, some=True, compute_uv=True, *, out=None):
    """torch.svd: (U, S, V) with V (not V^H); reduced when some=True.  >>> wb.svd(wb.eye(2)).S  ->  tensor([1., 1.])"""
    if _AUTOCAST[0]:
        input, = _autocast_cast("linalg", input)
    _check_matrix(input, "svd", square=False)
    U, S, Vh = SVD.apply(input, not some)
    if not compute_uv:
        xp = _backend.xp_of(input._data)
        return TorchSVDResult(Tensor._make(xp.zeros(tuple(U.shape), U._data.dtype)), S,
                              Tensor._make(xp.zeros(tuple(Vh.shape), Vh._data.dtype)))
    return TorchSVDResult(U, S, _mH(Vh))


@writes_out(dtype="same")
def qr(input, some=True, *, out=None):
    """torch.qr (deprecated in PyTorch): reduced QR when some=True, complete otherwise.  >>> wb.qr(wb.eye(2)).R  ->  tensor([[1., 0.], [0., 1.]])"""
    if _AUTOCAST[0]:
        input, = _autocast_cast("linalg", input)
    warnings.warn("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch "
                  "release. Use Q, R = workbench.linalg.qr(A, 'reduced' if some else 'complete')", UserWarning,
                  stacklevel=3)
    return linalg_qr(input, "reduced" if some else "complete")


def cholesky(input, upper=False, *, out=None):
    """torch.cholesky (deprecated in PyTorch in favour of linalg.cholesky).  >>> wb.cholesky(wb.eye(2))  ->  tensor([[1., 0.], [0., 1.]])"""
    if _AUTOCAST[0]:
        input, = _autocast_cast("cholesky", input)
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
                  "PyTorch release. L = workbench.cholesky(A) should be replaced with L = workbench.linalg.cholesky(A)",
                  UserWarning, stacklevel=2)
    return linalg_cholesky(input, upper=upper, out=out)


TriangularSolveResult = _named("triangular_solve", ["solution", "cloned_coefficient"])


@writes_out(dtype="same")
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """Solve A X = b with triangular A (deprecated in PyTorch: use linalg.solve_triangular).

    >>> import workbench as wb
    >>> wb.triangular_solve(wb.ones(2, 1), wb.eye(2) * 2).solution
    tensor([[0.5000],
            [0.5000]])
    """
    warnings.warn("torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangular and will be removed "
                  "in a future PyTorch release. workbench.linalg.solve_triangular has its arguments reversed and does "
                  "not return a copy of one of the inputs.", UserWarning, stacklevel=3)
    _check_matrix(A, "triangular_solve")
    T = A.triu() if upper else A.tril()
    if unitriangular:
        T = T - T.diagonal(0, -2, -1).diag_embed() + _eye_like(A)
    if transpose:
        T = T.mT
    return TriangularSolveResult(Solve.apply(T, b), A.clone())


def lu_solve(b, LU_data, LU_pivots, *, out=None):
    """torch.lu_solve (legacy argument order, b first): X with A X = b from A's LU factors.

    >>> import workbench as wb
    >>> wb.lu_solve(wb.ones(2, 1), *wb.linalg.lu_factor(wb.eye(2) * 2))
    tensor([[0.5000],
            [0.5000]])
    """
    if _AUTOCAST[0]:
        b, LU_data = _autocast_cast("linalg", b, LU_data)
    return linalg_lu_solve(LU_data, LU_pivots, b, out=out)


def lu(A, pivot=True, get_infos=False, out=None):
    """torch.lu (deprecated in PyTorch): (A_LU, pivots[, infos]) as linalg.lu_factor gives.

    >>> import workbench as wb
    >>> wb.lu(wb.tensor([[1., 2.], [3., 4.]]))[1]
    tensor([2, 2], dtype=workbench.int32)
    """
    warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be "
                  "removed in a future PyTorch release.", UserWarning, stacklevel=2)
    LU, piv = lu_factor(A, pivot=pivot)
    return _outs((LU, piv, _lu_info(LU)) if get_infos else (LU, piv), out, "same")


__all__ = ["einsum", "tensordot", "kron", "cross", "det", "logdet", "slogdet", "inverse", "pinverse",
           "matrix_power", "svd", "qr", "cholesky", "matrix_exp", "cholesky_solve", "cholesky_inverse", "chain_matmul",
           "cdist", "vander", "triangular_solve", "lu", "lu_unpack", "lu_solve"]
# svd, qr and cholesky here are PyTorch's legacy top-level spellings; workbench.linalg has the linalg_* ones
METHODS = {"det": det, "logdet": logdet, "slogdet": slogdet, "inverse": inverse, "pinverse": pinverse,
           "matrix_power": matrix_power, "svd": svd, "qr": qr, "cholesky": cholesky, "kron": kron, "cross": cross,
           "matrix_exp": matrix_exp, "cholesky_solve": cholesky_solve, "cholesky_inverse": cholesky_inverse,
           "triangular_solve": triangular_solve, "lu": lu, "lu_solve": lu_solve}
