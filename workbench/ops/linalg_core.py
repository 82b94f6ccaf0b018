"""matmul and its relatives, the ops most models spend their time in."""
from .._broadcast import sum_to
from .._core import Tensor
from ..autograd.function import Function, product_operator
from ..autograd.grad_mode import STATE
from .views import broadcast_shapes
from ._autocast import AUTOCAST as _AUTOCAST
from ._autocast import cast as _autocast_cast
from ._util import _out, cast, gemm, result_dtype
from .linear import _product_by_rows


class Matmul(Function):
    _raw = True

    @staticmethod
    def forward(ctx, a, b):
        if a.ndim == 0 or b.ndim == 0:
            raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and "
                               f"{b.ndim}D")
        rd = result_dtype(a, b)
        if a.dtype != b.dtype:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {a.dtype} != {b.dtype}")
        ka = a.shape[-1]
        kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
        if ka != kb:
            sa = "x".join(map(str, a.shape if a.ndim > 1 else (1,) + a.shape))
            sb = "x".join(map(str, b.shape))
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")
        a, b = cast(a, rd), cast(b, rd)
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None)
        ctx.nd = (a.ndim, b.ndim)
        return _mm(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.nd  # (two matrices of one dtype are Mm's)
        if not STATE.enabled:  # first derivatives: the steps below on the arrays, no op recorded for each
            return _matmul_grads_raw(g._data, None if a is None else a._data, None if b is None else b._data, na, nb)
        if na == 1 and nb == 1:  # a dot product: g is 0-d
            return (g * b.conj() if b is not None else None), (g * a.conj() if a is not None else None)
        # lift 1-D operands to matrices, as matmul itself does, then drop the added dims
        if na == 1:
            g = g.unsqueeze(-2)
            a = a.unsqueeze(0) if a is not None else None
        if nb == 1:
            g = g.unsqueeze(-1)
            b = b.unsqueeze(-1) if b is not None else None
        ga = gb = None
        if b is not None:
            ga = g @ b.mH  # conjugated: PyTorch's convention for complex gradients
            if na == 1:
                ga = ga.squeeze(-2)
                if ga.ndim > 1:
                    ga = ga.sum_to_size(ga.shape[-1:])
        if a is not None:
            gb = a.mH @ g
            if nb == 1:
                gb = gb.squeeze(-1)
                if gb.ndim > 1:
                    gb = gb.sum_to_size(gb.shape[-1:])
        return ga, gb


def _swap(m):
    """The conjugate transpose of the last two dims of an array, as ``Tensor.mH``."""
    t = m.swapaxes(-1, -2)
    return t.conj() if m.dtype.kind == "c" else t


def _matmul_grads_raw(gd, ad, bd, na, nb):
    # Matmul's backward on arrays (a vector operand lifted to a matrix, as matmul itself does), in the Tensor
    # form's steps, so the same bits; a broadcast batch dim is left for the engine to sum, as there
    if na == 1 and nb == 1:  # a dot product: g is 0-d
        return (None if bd is None else Tensor._make(gd * bd.conj()),
                None if ad is None else Tensor._make(gd * ad.conj()))
    if na == 1:
        gd = gd.reshape(gd.shape[:-1] + (1,) + gd.shape[-1:])
        ad = None if ad is None else ad.reshape((1,) + ad.shape)
    if nb == 1:
        gd = gd.reshape(gd.shape + (1,))
        bd = None if bd is None else bd.reshape(bd.shape + (1,))
    ga = gb = None
    if bd is not None:
        ga = _mm(gd, _swap(bd))
        if na == 1:
            ga = ga.reshape(ga.shape[:-2] + ga.shape[-1:])
            if ga.ndim > 1:
                ga = sum_to(ga, ga.shape[-1:])
        ga = Tensor._make(ga)
    if ad is not None:
        gb = _mm(_swap(ad), gd)
        if nb == 1:
            gb = gb.reshape(gb.shape[:-1])
            if gb.ndim > 1:
                gb = sum_to(gb, gb.shape[-1:])
        gb = Tensor._make(gb)
    return ga, gb


def _mm(a, b):
    """a @ b on arrays; ``x @ w.T`` (w C-contiguous: a weight used as written, or the backward's g @ b.T) in
    the orientation OpenBLAS runs faster where ``linear._product_by_rows`` says it pays, with the same bits."""
    if a.ndim == 2 and b.ndim == 2 and b.T.flags.c_contiguous and not b.flags.c_contiguous:
        y = _product_by_rows(a, b.T, None)
        if y is not None:
            return y
    return gemm(a, b)


def _adjoint(m):
    """The conjugate transpose of a matrix array, as ``Tensor.mH`` (a view where it is real)."""
    return m.T.conj() if m.dtype.kind == "c" else m.T


class Mm(Function):
    """The product of two matrices of one dtype whose inner dims agree (checked by the caller): matmul's
    common case, PyTorch's ``MmBackward0``. Its forward is ``_mm`` alone, so the ``@`` operator records it
    without a forward frame (``product_operator``), saving a for b's gradient and b for a's."""

    _raw = True
    op_name = "mm"
    _ufunc = staticmethod(_mm)  # the whole forward (after the caller's checks)
    _saves = ((0, 1), (1, 0))

    @staticmethod
    def forward(ctx, a, b):
        nig = ctx.needs_input_grad
        ctx.save_for_backward(a if nig[1] else None, b if nig[0] else None)
        return _mm(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        if not STATE.enabled:  # first derivatives: the two products on the arrays
            gd = g._data
            return (None if b is None else Tensor._make(_mm(gd, _adjoint(b._data))),
                    None if a is None else Tensor._make(_mm(_adjoint(a._data), gd)))
        # conjugated: PyTorch's convention for complex gradients
        return (None if b is None else g @ b.mH), (None if a is None else a.mH @ g)


def _product(a, b):
    """Mm for two matrices of one dtype whose inner dims agree, else Matmul (which checks and raises)."""
    da, db = a._data, b._data
    if da.ndim == 2 and db.ndim == 2 and da.dtype == db.dtype and da.shape[1] == db.shape[0]:
        return Mm.apply(a, b)
    return Matmul.apply(a, b)


def matmul(input, other, *, out=None):
    """Matrix product with NumPy's broadcasting of batch dims.

    >>> import workbench as wb
    >>> wb.matmul(wb.ones(2, 3), wb.ones(3)).shape
    workbench.Size([2])
    """
    if _AUTOCAST[0]:
        input, other = _autocast_cast("matmul", input, other)
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        return _out(_product(input, other), out, "same")
    return _out(Matmul.apply(input, other), out, "same")


def mm(input, mat2, *, out=None):
    """Matrix product of two 2-D tensors (no broadcasting).

    >>> import workbench as wb
    >>> wb.mm(wb.ones(2, 3), wb.ones(3, 4)).shape
    workbench.Size([2, 4])
    """
    if _AUTOCAST[0]:
        input, mat2 = _autocast_cast("mm", input, mat2)
    if input.ndim != 2:
        raise RuntimeError(f"self must be a matrix (mm got a {input.ndim}-D tensor of shape {list(input.shape)})")
    if mat2.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix (mm got a {mat2.ndim}-D tensor of shape {list(mat2.shape)})")
    return matmul(input, mat2, out=out)


def bmm(input, mat2, *, out=None):
    """Batched matrix product of (b, n, m) and (b, m, p) tensors.

    >>> import workbench as wb
    >>> wb.bmm(wb.ones(2, 3, 4), wb.ones(2, 4, 5)).shape
    workbench.Size([2, 3, 5])
    """
    if _AUTOCAST[0]:
        input, mat2 = _autocast_cast("bmm", input, mat2)
    if input.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor (got shape {list(input.shape)})")
    if mat2.ndim != 3:
        raise RuntimeError(f"batch2 must be a 3D tensor (got shape {list(mat2.shape)})")
    b, n, m = input.shape
    if tuple(mat2.shape[:2]) != (b, m):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {m}] but got: "
                           f"[{mat2.shape[0]}, {mat2.shape[1]}].")
    return matmul(input, mat2, out=out)


def mv(input, vec, *, out=None):
    """Matrix-vector product.  >>> wb.mv(wb.ones(2, 3), wb.ones(3))  ->  tensor([3., 3.])"""
    if _AUTOCAST[0]:
        input, vec = _autocast_cast("mv", input, vec)
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {vec.ndim}, {input.ndim}, {vec.ndim} "
                           f"(mv of shapes {list(input.shape)} and {list(vec.shape)})")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input.shape[0]}), mat ({input.shape[0]}x{input.shape[1]}), "
                           f"vec ({vec.shape[0]})")
    return _out(Matmul.apply(input, vec), out, "same")  # its own kernel: not lowered by CPU autocast, as PyTorch's mv


def dot(input, tensor, *, out=None):
    """Inner product of two 1-D tensors.  >>> wb.dot(wb.tensor([1., 2.]), wb.tensor([3., 4.]))  ->  tensor(11.)"""
    if _AUTOCAST[0]:
        input, tensor = _autocast_cast("dot", input, tensor)
    if input.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {tensor.ndim}D tensors")
    if input.dtype != tensor.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {input.dtype} and "
                           f"{tensor.dtype}")
    if input.shape[0] != tensor.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
                           f"[{tensor.shape[0]}] to have the same number of elements, but got {input.shape[0]} and "
                           f"{tensor.shape[0]} elements respectively")
    return _out(Matmul.apply(input, tensor), out, "same")  # its own kernel: not lowered by CPU autocast, as PyTorch's dot


def vdot(input, other, *, out=None):
    """dot with the first argument conjugated.  >>> wb.vdot(wb.tensor([1., 2.]), wb.tensor([3., 4.]))  ->  tensor(11.)"""
    if input.is_complex():
        input = input.conj()
    return dot(input, other, out=out)


def inner(input, other, *, out=None):
    """Sum-product over the last dims (a scalar operand multiplies).

    >>> import workbench as wb
    >>> wb.inner(wb.ones(2, 3), wb.ones(4, 3)).shape
    workbench.Size([2, 4])
    """

    if input.ndim == 0 or other.ndim == 0:
        return _out(input * other, out)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    k = input.shape[-1]
    r = matmul(input.reshape(-1, k), other.reshape(-1, k).transpose(0, 1))
    return _out(r.reshape(tuple(input.shape[:-1]) + tuple(other.shape[:-1])), out)


def outer(input, vec2, *, out=None):
    """Outer product of two 1-D tensors.  >>> wb.outer(wb.tensor([1, 2]), wb.tensor([1, 10]))  ->  tensor([[ 1, 10], [ 2, 20]])"""

    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"outer: expected 1-D tensors, got {input.ndim}-D and {vec2.ndim}-D")
    return _out(input.unsqueeze(1) * vec2, out)


ger = outer


def _add_scaled(input, prod, beta, alpha, op):
    # beta * input + alpha * prod; beta == 0 ignores input's values (NaN included), as PyTorch does
    try:
        broadcast_shapes(input.shape, prod.shape)
    except RuntimeError:
        raise RuntimeError(f"{op}: the input of shape {list(input.shape)} cannot be broadcast to the product's "
                           f"shape {list(prod.shape)}") from None
    r = prod if alpha == 1 else prod * alpha
    if beta == 0:
        return r + _Ignored.apply(input)
    return (input if beta == 1 else input * beta) + r


class _Ignored(Function):
    """Zeros shaped like x: x takes part (a zero gradient, PyTorch's beta=0 case) but its values, NaN
    included, never reach the result."""

    _raw = True
    op_name = "mul"

    @staticmethod
    def forward(ctx, x):
        return ctx.xp.zeros(x.shape, dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        return g * 0


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (mat1 @ mat2).  >>> wb.addmm(wb.zeros(2, 2), wb.eye(2), wb.eye(2))  ->  tensor([[1., 0.], [0., 1.]])"""
    if _AUTOCAST[0]:
        input, mat1, mat2 = _autocast_cast("addmm", input, mat1, mat2)

    return _out(_add_scaled(input, mm(mat1, mat2), beta, alpha, "addmm"), out)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (mat @ vec).  >>> wb.addmv(wb.zeros(2), wb.eye(2), wb.ones(2))  ->  tensor([1., 1.])"""
    if _AUTOCAST[0]:
        input, mat, vec = _autocast_cast("addmv", input, mat, vec)

    return _out(_add_scaled(input, mv(mat, vec), beta, alpha, "addmv"), out)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * outer(vec1, vec2).  >>> wb.addr(wb.zeros(2, 2), wb.ones(2), wb.ones(2))  ->  tensor([[1., 1.], [1., 1.]])"""
    if _AUTOCAST[0]:
        input, vec1, vec2 = _autocast_cast("addr", input, vec1, vec2)

    return _out(_add_scaled(input, outer(vec1, vec2), beta, alpha, "addr"), out)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * bmm(batch1, batch2).  >>> wb.baddbmm(wb.zeros(1, 2, 2), wb.ones(1, 2, 3), wb.ones(1, 3, 2))  ->  tensor([[[3., 3.], [3., 3.]]])"""
    if _AUTOCAST[0]:
        input, batch1, batch2 = _autocast_cast("baddbmm", input, batch1, batch2)

    return _out(_add_scaled(input, bmm(batch1, batch2), beta, alpha, "baddbmm"), out)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * sum_b(batch1[b] @ batch2[b]).  >>> wb.addbmm(wb.zeros(2, 2), wb.ones(3, 2, 4), wb.ones(3, 4, 2))  ->  tensor([[12., 12.], [12., 12.]])"""
    if _AUTOCAST[0]:
        input, batch1, batch2 = _autocast_cast("addbmm", input, batch1, batch2)

    return _out(_add_scaled(input, bmm(batch1, batch2).sum(0), beta, alpha, "addbmm"), out)


def trace(input):
    """Sum of the main diagonal of a matrix.  >>> wb.trace(wb.eye(3))  ->  tensor(3.)"""
    if _AUTOCAST[0]:
        input, = _autocast_cast("trace", input)
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return input.diagonal().sum()


def _rmatmul(self, other):
    return matmul(other, self)


__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm", "addmv", "addr", "baddbmm",
           "addbmm", "trace"]
METHODS = {**{n: globals()[n] for n in __all__}, "__matmul__": product_operator(Mm, matmul, _AUTOCAST),
           "__rmatmul__": _rmatmul}
INPLACE = ("addmm", "addmv", "addr", "baddbmm", "addbmm")
