"""Norm-based composites: the p-norm distance of two tensors (dist) and the per-slice norm cap (renorm).

>>> import workbench as wb
>>> wb.dist(wb.tensor([0.0, 0.0]), wb.tensor([3.0, 4.0]))
tensor(5.)
"""
from .linalg import vector_norm
from ._util import _out, check_operands, wrap_dim


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast), p=0 counting the differing entries, p=inf the largest.

    >>> import workbench as wb
    >>> wb.dist(wb.tensor([1.0, 2.0]), wb.tensor([1.0, 5.0]), p=1)
    tensor(3.)
    """
    check_operands("dist", ("input", "other"), (input, other))
    return vector_norm(input - other, ord=p)


def renorm(input, p, dim, maxnorm, *, out=None):
    """Each slice along ``dim`` whose p-norm exceeds ``maxnorm`` scaled down to norm ``maxnorm``.

    >>> import workbench as wb
    >>> wb.renorm(wb.tensor([[3.0, 4.0], [0.3, 0.4]]), 2, 0, 1.0)
    tensor([[0.6000, 0.8000],
            [0.3000, 0.4000]])
    """
    if p <= 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported, got p={p}")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = wrap_dim(dim, input.ndim)
    others = tuple(i for i in range(input.ndim) if i != d)
    norms = vector_norm(input, ord=p, dim=others, keepdim=True) if others else input.abs()
    # PyTorch's factor: maxnorm / (norm + 1e-7) where the norm is too large, else 1
    factor = (maxnorm / (norms + 1e-7)).where(norms > maxnorm, norms.new_ones(()))
    return _out(input * factor, out, "same")


__all__ = ["dist", "renorm"]
METHODS = {"dist": dist, "renorm": renorm}
INPLACE = ("renorm",)
