"""Helpers shared by the distributions (PyTorch's torch.distributions.utils)."""
import functools
import math
import numbers

import workbench as _wb

# machine epsilon and smallest normal per float dtype (clamp_probs keeps probabilities off 0 and 1 by eps)
_EPS = {"float16": (0.0009765625, 6.103515625e-05), "bfloat16": (0.0078125, 1.1754943508222875e-38),
        "float32": (1.1920928955078125e-07, 1.1754943508222875e-38),
        "float64": (2.220446049250313e-16, 2.2250738585072014e-308)}
euler_constant = 0.57721566490153286060


def _eps(dtype):
    return _EPS[dtype.name if hasattr(dtype, "name") else str(dtype)][0]


def _tiny(dtype):
    return _EPS[dtype.name if hasattr(dtype, "name") else str(dtype)][1]


def broadcast_all(*values):
    """Tensors (numbers become tensors of the default dtype) broadcast to one shape.

    >>> import workbench as wb
    >>> from workbench.distributions.utils import broadcast_all
    >>> [v.shape for v in broadcast_all(wb.zeros(3), 1.0)]
    [workbench.Size([3]), workbench.Size([3])]
    """
    if not all(isinstance(v, (_wb.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, torch.Tensor or objects "
                         "implementing __torch_function__.")
    if not all(isinstance(v, _wb.Tensor) for v in values):
        like = next((v for v in values if isinstance(v, _wb.Tensor)), None)
        opts = {"dtype": like.dtype, "device": like.device} if like is not None else {
            "dtype": _wb.get_default_dtype()}
        values = [v if isinstance(v, _wb.Tensor) else _wb.tensor(v, **opts) for v in values]
    return _wb.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return _wb.randn(tuple(shape), dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """value summed over its ``dim`` rightmost dims."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.ndim - dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Probabilities from logits: sigmoid for a binary variable, softmax over the last dim otherwise."""
    if is_binary:
        return _wb.sigmoid(logits)
    return _wb.nn.functional.softmax(logits, dim=-1)


def clamp_probs(probs):
    """probs clamped to [eps, 1 - eps] of their dtype."""
    eps = _eps(probs.dtype)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Logits from probabilities (log-odds for a binary variable, log for categorical ones)."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return _wb.log(ps_clamped) - _wb.log1p(-ps_clamped)
    return _wb.log(ps_clamped)


class lazy_property:  # noqa: N801 - PyTorch's name
    """A property computed once on first access and then stored on the instance."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with _wb.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):  # noqa: N801
    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (offset ``diag``) of the last two dims, row by row, as a vector."""
    n = mat.shape[-1]
    if not (-n <= diag < n):
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = [], []
    for i in range(n):
        for j in range(n):
            if j - i <= diag:
                rows.append(i)
                cols.append(j)
    return mat[..., _wb.tensor(rows), _wb.tensor(cols)]


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of tril_matrix_to_vec."""
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = _eps(vec.dtype)
    if not (abs(round(n) - n) < eps):
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as the "
                         "lower triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    rows, cols = [], []
    for i in range(n):
        for j in range(n):
            if j - i <= diag:
                rows.append(i)
                cols.append(j)
    mat[..., _wb.tensor(rows), _wb.tensor(cols)] = vec
    return mat


_LOG_2PI = math.log(2 * math.pi)
