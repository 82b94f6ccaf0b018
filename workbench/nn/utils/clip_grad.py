"""Gradient clipping, computed on the gradients' raw arrays (no graph recorded, one pass per tensor)."""
import math
import warnings

from ... import _backend
from ...creation import tensor
from ...tensor import Tensor


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _as_tensors(tensors):
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of ``tensors`` (as if concatenated into one vector).

    >>> import workbench as wb
    >>> wb.nn.utils.get_total_norm([wb.tensor([3.0]), wb.tensor([4.0])])
    tensor(5.)
    """
    tensors = [t for t in _as_tensors(tensors) if t is not None]
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    dev = tensors[0].device
    xp = _backend.xp_of(tensors[0]._data)
    norms = []
    for t in tensors:
        a = _backend.to_device(t._data, dev)
        if norm_type == math.inf:
            norms.append(xp.abs(a).max() if a.size else xp.zeros((), a.dtype))
        elif norm_type == -math.inf:
            norms.append(xp.abs(a).min() if a.size else xp.zeros((), a.dtype))
        elif norm_type == 2.0:
            flat = a.reshape(-1)
            norms.append(xp.sqrt(xp.dot(flat, flat)) if a.dtype.kind == "f" else xp.linalg.norm(flat))
        else:
            norms.append((xp.abs(a) ** norm_type).sum() ** (1.0 / norm_type))
    n = xp.stack([x.astype(tensors[0]._data.dtype) for x in norms])
    if norm_type == math.inf:
        total = n.max()
    elif norm_type == -math.inf:
        total = n.min()
    elif norm_type == 2.0:
        total = xp.sqrt(xp.dot(n, n))
    else:
        total = (n ** norm_type).sum() ** (1.0 / norm_type)
    total = xp.asarray(total, dtype=tensors[0]._data.dtype)
    if error_if_nonfinite and not bool(xp.isfinite(total)):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be "
            "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`")
    return Tensor._make(total)


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale gradients by max_norm / (total_norm + 1e-6) when that is below 1.

    >>> import workbench as wb
    >>> p = wb.nn.Parameter(wb.zeros(2)); p.grad = wb.tensor([3.0, 4.0])
    >>> wb.nn.utils.clip_grads_with_norm_([p], 1.0, wb.tensor(5.0)); p.grad
    tensor([0.6000, 0.8000])
    """
    grads = _grads(parameters)
    if not grads:
        return
    tn = total_norm._data if isinstance(total_norm, Tensor) else total_norm
    xp = _backend.xp_of(grads[0]._data)
    tn = xp.asarray(tn, dtype=grads[0]._data.dtype)
    coef = xp.asarray(max_norm, dtype=tn.dtype) / (tn + tn.dtype.type(1e-6))  # in the grads' dtype, as PyTorch
    if xp is _backend.numpy:
        if bool(coef >= 1):  # on the CPU reading the norm is free, and saves a pass (NaN norms scale by NaN)
            return
    else:  # on a GPU reading it back would synchronise every step: scale by min(coef, 1), as PyTorch does
        coef = xp.minimum(coef, 1)
    for g in grads:
        g._data *= _backend.to_device(coef, g.device).astype(g._data.dtype)
        g._vbox[0] += 1


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Rescale gradients in place so their total norm is at most ``max_norm``; returns the total norm.

    >>> import workbench as wb
    >>> p = wb.nn.Parameter(wb.zeros(2)); p.grad = wb.tensor([3.0, 4.0])
    >>> wb.nn.utils.clip_grad_norm_([p], 1.0), p.grad
    (tensor(5.), tensor([0.6000, 0.8000]))
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        parameters = list(parameters)
    grads = _grads(parameters)
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of clip_grad_norm_.  >>> p = wb.ones(4, requires_grad=True); p.sum().backward(); wb.nn.utils.clip_grad_norm([p], 1.0)  ->  tensor(2.)"""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element into [-clip_value, clip_value], in place.

    >>> import workbench as wb
    >>> p = wb.nn.Parameter(wb.zeros(2)); p.grad = wb.tensor([3.0, -4.0])
    >>> wb.nn.utils.clip_grad_value_([p], 1.0); p.grad
    tensor([ 1., -1.])
    """
    clip_value = float(clip_value)
    for g in _grads(parameters):
        xp = _backend.xp_of(g._data)
        xp.clip(g._data, -clip_value, clip_value, out=g._data)
        g._vbox[0] += 1
