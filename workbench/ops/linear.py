"""Linear and bilinear maps: ``y = x W^T + b`` as one primitive whose backward is two matmuls."""
from .._backend import blas
from .._backend import dtypes as _dt
from .._backend import fused as _fused
from .._backend import numpy as _numpy
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..autograd.graph import composite
from .._core import Tensor
from ._autocast import AUTOCAST as _AUTOCAST
from ._autocast import cast as _autocast_cast
from ._util import gemm


# --- linear ------------------------------------------------------------------------------------
class Linear(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, w, b):
        if x.shape[-1] != w.shape[-1]:
            sa = "x".join(map(str, (x.reshape(-1, x.shape[-1]).shape if x.ndim else ())))
            raise RuntimeError(f"linear: mat1 and mat2 shapes cannot be multiplied ({sa} and "
                               f"{w.shape[1]}x{w.shape[0]}); the input's last dim must equal weight.shape[1]")
        if x.dtype != w.dtype or (b is not None and b.dtype != x.dtype):
            raise RuntimeError(f"linear: expected input, weight and bias to have the same dtype, but got "
                               f"{x.dtype}, {w.dtype}" + (f" and {b.dtype}" if b is not None else "")
                               + ". Cast them with .to(dtype) first.")
        nig = ctx.needs_input_grad
        ctx.save_for_backward(x if nig[1] else None, w if nig[0] else None)
        ctx.x_shape = x.shape
        # one 2-D GEMM over all leading dims (a stacked matmul would loop over them)
        y = product(x.reshape(-1, x.shape[-1]) if x.ndim > 2 else x, w, b)
        return y.reshape(x.shape[:-1] + (w.shape[0],)) if x.ndim > 2 else y

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        nig = ctx.needs_input_grad
        if not STATE.enabled:  # first derivatives only (no create_graph): the same products on raw arrays
            return _linear_grads_raw(g._data, x, w, nig, ctx.x_shape)
        g2 = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])
        gx = gw = gb = None
        if nig[0]:
            gx = g2 @ w
            gx = gx if g.ndim == 2 else gx.reshape(ctx.x_shape)
        if nig[1]:
            gw = g2.T @ (x if x.ndim == 2 else x.reshape(-1, x.shape[-1]))
        if nig[2]:
            gb = g2.sum(0)
        return gx, gw, gb


def product(x, w, b):
    """x @ w.T + b on raw arrays, x 1-D or 2-D (b may be None): by rows where that pays, else one GEMM."""
    y = _product_by_rows(x, w, b) if x.ndim == 2 else None
    if y is None:
        y = gemm(x, w.T)
        if b is not None:
            y += b
    return y


def _product_by_rows(x, w, b):
    """float32 x @ w.T + b computed as (w @ x.T), moved back into rows with the bias added in one pass, where
    OpenBLAS runs that orientation faster (``blas.transposed_product_pays``: a small batch against a wide layer)
    and the loops serve; else None. The result is C-contiguous, as PyTorch's, and the product as written's bits."""
    (m, k), n = x.shape, w.shape[0]
    if not (x.dtype.char == "f" and blas.transposed_product_pays(m, n, k) and _fused.usable(x, w, min_size=1)
            and (b is None or b.shape == (n,) and _fused.usable(b, min_size=1))):
        return None
    yt = w @ x.T
    y = _numpy.empty((m, n), x.dtype)
    _fused.transpose_add(yt, yt[0] if b is None else b, b is not None, y)
    return y


def _linear_grads_raw(g, x, w, nig, x_shape):
    g2 = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])
    gx = Tensor._make(gemm(g2, w._data).reshape(x_shape)) if nig[0] else None
    gw = Tensor._make(gemm(g2.T, x._data.reshape(-1, x_shape[-1]))) if nig[1] else None
    gb = Tensor._make(_bias_grad(g2)) if nig[2] else None
    return gx, gw, gb


def _bias_grad(g2):
    # a 16-bit gradient summed over the batch in float32 and rounded once (PyTorch's; its own sum stalls)
    if _dt.is_half(g2.dtype):
        return g2.sum(0, dtype="float32").astype(g2.dtype)
    if g2.shape[1] >= 2 and _fused.usable(g2, min_size=1):  # the same sums as NumPy's, in one call
        out = _numpy.empty(g2.shape[1], g2.dtype)
        _fused.col_sums(g2, out)
        return out
    return g2.sum(0)


def linear(input, weight, bias=None):
    """y = input @ weight.T + bias.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.linear(wb.ones(2, 3), wb.ones(4, 3)).shape
    workbench.Size([2, 4])
    """
    if _AUTOCAST[0]:
        input, weight, bias = _autocast_cast("linear", input, weight, bias)
    if weight.ndim == 1:
        y = input @ weight
        return y + bias if bias is not None else y
    if input.ndim == 0:
        raise RuntimeError("linear: input must have at least 1 dimension, got a 0-d tensor")
    return Linear.apply(input, weight, bias)


@composite("bilinear")
def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = input1 @ weight[o] @ input2 + bias[o].

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.bilinear(wb.ones(2, 3), wb.ones(2, 4), wb.ones(5, 3, 4)).shape
    workbench.Size([2, 5])
    """
    if _AUTOCAST[0]:
        input1, input2, weight, bias = _autocast_cast("bilinear", input1, input2, weight, bias)
    if weight.ndim != 3 or input1.shape[-1] != weight.shape[1] or input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear: expected weight of shape (out, {input1.shape[-1]}, {input2.shape[-1]}), "
                           f"got {list(weight.shape)}")
    o, i, j = weight.shape
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, i)
    x2 = input2.reshape(-1, j)
    t = (x1 @ weight.permute(1, 0, 2).reshape(i, o * j)).reshape(-1, o, j)
    y = (t * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(tuple(lead) + (o,))


__all__ = ["bilinear"]
