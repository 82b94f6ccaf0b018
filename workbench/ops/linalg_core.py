"""matmul and its relatives, the ops most models spend their time in."""
from ..autograd.function import Function
from ._util import cast, result_dtype


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
        return ctx.xp.matmul(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.nd
        # lift 1-D operands to matrices, as matmul itself does, then drop the added dims
        if na == 1:
            g = g.unsqueeze(-2)
            a = a.unsqueeze(0) if a is not None else None
        if nb == 1:
            g = g.unsqueeze(-1)
            b = b.unsqueeze(-1) if b is not None else None
        ga = gb = None
        if b is not None:
            ga = g @ b.transpose(-1, -2)
            if na == 1:
                ga = ga.squeeze(-2)
                if ga.ndim > 1:
                    ga = ga.sum_to_size(ga.shape[-1:])
        if a is not None:
            gb = a.transpose(-1, -2) @ g
            if nb == 1:
                gb = gb.squeeze(-1)
                if gb.ndim > 1:
                    gb = gb.sum_to_size(gb.shape[-1:])
        return ga, gb


def matmul(input, other, *, out=None):
    """Matrix product with NumPy's broadcasting of batch dims.

    >>> import workbench as wb
    >>> wb.matmul(wb.ones(2, 3), wb.ones(3)).shape
    workbench.Size([2])
    """
    from .elementwise import _out

    return _out(Matmul.apply(input, other), out)


def _rmatmul(self, other):
    return matmul(other, self)


__all__ = ["matmul"]
METHODS = {"matmul": matmul, "__matmul__": matmul, "__rmatmul__": _rmatmul}
