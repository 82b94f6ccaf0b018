"""Numerical integration of samples by the trapezoidal rule: trapezoid (and its old name trapz) and the
running integral cumulative_trapezoid. Composites, so differentiable in y and x.

>>> import workbench as wb
>>> wb.trapezoid(wb.tensor([1.0, 2.0, 3.0]))
tensor(4.)
"""
from .._core import Tensor
from .reduce import cumsum
from ._util import wrap_dim


def _areas(y, x, dx, dim, op):
    if x is not None and dx != 1:
        raise TypeError(f"{op}() got both x and dx: pass the sample points or their spacing, not both")
    d = wrap_dim(dim, y.ndim)
    n = y.shape[d]
    mid = (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)) / 2 if n else y
    if x is None:
        return mid * dx, d
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): x must be a Tensor of sample points, got {type(x).__name__} (use dx= for a spacing)")
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point, got {x.shape[0]} x values "
                               f"for {n} samples along dim {dim}")
        spacing = x[1:] - x[:-1]
        shape = [1] * y.ndim
        shape[d] = max(n - 1, 0)
        return mid * spacing.reshape(shape), d
    xd = wrap_dim(dim, x.ndim)
    return mid * (x.narrow(xd, 1, n - 1) - x.narrow(xd, 0, n - 1)), d


def trapezoid(y, x=None, *, dx=1, dim=-1):
    """The trapezoidal-rule integral of ``y`` along ``dim``, at points ``x`` (1-D or y's shape) or spacing
    ``dx`` (default 1).

    >>> import workbench as wb
    >>> wb.trapezoid(wb.tensor([1.0, 2.0, 3.0]), wb.tensor([0.0, 1.0, 3.0]))
    tensor(6.5000)
    """
    areas, d = _areas(y, x, dx, dim, "trapezoid")
    return areas.sum(d)


def trapz(y, x=None, *, dx=1, dim=-1):
    """trapezoid's older name.  >>> wb.trapz(wb.tensor([1.0, 2.0, 3.0]), dx=2.0)  ->  tensor(8.)"""
    areas, d = _areas(y, x, dx, dim, "trapz")
    return areas.sum(d)


def cumulative_trapezoid(y, x=None, *, dx=1, dim=-1):
    """The running trapezoidal integral of ``y`` along ``dim`` (one element shorter than y there).

    >>> import workbench as wb
    >>> wb.cumulative_trapezoid(wb.tensor([1.0, 2.0, 3.0]))
    tensor([1.5000, 4.0000])
    """
    areas, d = _areas(y, x, dx, dim, "cumulative_trapezoid")
    return cumsum(areas, d)


__all__ = ["trapezoid", "trapz", "cumulative_trapezoid"]
