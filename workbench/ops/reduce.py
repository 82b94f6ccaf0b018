"""Reductions over ``dim`` (int or tuple) with ``keepdim``."""
from ..autograd.function import Function
from ..tensor import Tensor
from ._util import norm_dims, to_float


def _expand_back(g, in_shape, dims, keepdim):
    # undo a reduction's shape change so the gradient broadcasts over the reduced dims
    if dims is None:
        return g.reshape((1,) * len(in_shape)).expand(in_shape) if in_shape else g
    if not keepdim:
        shape = list(in_shape)
        for d in dims:
            shape[d] = 1
        g = g.reshape(tuple(shape))
    return g.expand(in_shape)


def _sum_dtype(x, dtype):
    if dtype is not None:
        return dtype.np
    return x.dtype if x.dtype.kind in "fc" or x.dtype.kind == "V" or str(x.dtype) == "bfloat16" else __import__(
        "numpy").dtype("int64")


class Sum(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        ctx.in_shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        dt = _sum_dtype(x, dtype)
        return ctx.xp.asarray(x.sum(axis=dims, keepdims=keepdim, dtype=dt))

    @staticmethod
    def backward(ctx, g):
        return _expand_back(g, ctx.in_shape, ctx.dims, ctx.keepdim), None, None, None


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over all elements or over ``dim``.

    >>> import workbench as wb
    >>> wb.tensor([[1, 2], [3, 4]]).sum(0)
    tensor([4, 6])
    """
    if isinstance(input, Tensor) is False:
        raise TypeError(f"sum(): argument 'input' must be Tensor, not {type(input).__name__}")
    from .._backend.dtypes import to_dtype

    return Sum.apply(input, norm_dims(dim, input._data.ndim, "sum"), keepdim, to_dtype(dtype) if dtype else None)


class Mean(Function):
    _raw = True

    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        if dtype is not None:
            x = x.astype(dtype.np)
        elif x.dtype.kind not in "fcV" and str(x.dtype) != "bfloat16":
            raise RuntimeError(
                f"mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                f"dtype. Got: {str(x.dtype).capitalize()}")
        ctx.in_shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        n = x.size if dims is None else 1
        if dims is not None:
            for d in dims:
                n *= x.shape[d]
        ctx.n = n
        return ctx.xp.asarray(x.mean(axis=dims, keepdims=keepdim))

    @staticmethod
    def backward(ctx, g):
        return _expand_back(g / ctx.n, ctx.in_shape, ctx.dims, ctx.keepdim), None, None, None


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over all elements or over ``dim``.  >>> wb.tensor([1., 2., 3.]).mean()  ->  tensor(2.)"""
    from .._backend.dtypes import to_dtype

    return Mean.apply(input, norm_dims(dim, input._data.ndim, "mean"), keepdim, to_dtype(dtype) if dtype else None)





__all__ = ["sum", "mean"]
METHODS = {"sum": sum, "mean": mean}
