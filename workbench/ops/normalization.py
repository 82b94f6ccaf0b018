"""Normalization: batch_norm, layer_norm (fused, on the kernels), group_norm, instance_norm, rms_norm,
local_response_norm.

``Normalize`` is the one primitive for statistics over a set of axes (batch, instance and group norm);
layer_norm has its own primitive on ``_backend.kernels`` (CUDA on a GPU). Both backward passes use
the saved statistics when only first derivatives are wanted, and recompute them from the input in
Tensor ops under ``create_graph=True`` so higher derivatives are exact.
"""
import math

from .. import _backend
from .._backend import dtypes as _dt, fused as _fused, kernels as _k
from ..autograd.function import Function
from ..autograd.grad_mode import STATE, no_grad
from ..autograd.graph import composite
from .._core import Tensor
from ._autocast import AUTOCAST as _AUTOCAST
from ._util import check_no_requires_grad
from ._autocast import cast as _autocast_cast

numpy = _backend.numpy

_EPS = {"float16": 0.0009765625, "bfloat16": 0.0078125, "float32": 1.1920928955078125e-07,
        "float64": 2.220446049250313e-16}


def _affine_grads(g, xhat, w, red_axes, w_shape, rstd, axes):
    """(dx, dw, db) of y = xhat * w + b, xhat normalised over ``axes`` with 1/std ``rstd``; Tensor ops."""
    gw = g * w.reshape(w_shape) if w is not None else g
    dx = rstd * (gw - gw.mean(axes, keepdim=True) - xhat * (gw * xhat).mean(axes, keepdim=True))
    return dx, (g * xhat).sum(red_axes), g.sum(red_axes)


class Normalize(Function):
    """y = (x - mean) / sqrt(var + eps) * w + b, statistics over ``axes``; also returns (mean, biased var)."""

    _raw = True
    op_name = "native_norm"

    @staticmethod
    def forward(ctx, x, w, b, axes, w_shape, eps):
        xp = ctx.xp
        if x.dtype.kind != "f" and str(x.dtype) != "bfloat16":
            raise RuntimeError(f"normalization expects a floating-point input, got {x.dtype}")
        ctx.axes, ctx.w_shape, ctx.eps = axes, w_shape, eps
        ctx.red_axes = tuple(i for i in range(x.ndim) if i >= len(w_shape) or w_shape[i] == 1)
        ctx.rows = _row_shape(xp, x, w, b, axes)
        if ctx.rows is not None:  # statistics over the trailing dims of a contiguous array: rows, in place
            y, mean, var, rstd = _k.row_norm(x.reshape(ctx.rows), eps)
            ctx.save_for_backward(x, None, mean, rstd)
            ctx.b_shape = None
            lead = x.shape[:x.ndim - len(axes)]
            mean, var = mean.reshape(lead), var.reshape(lead)
            ctx.mark_non_differentiable(mean, var)
            return y.reshape(x.shape), mean, var
        ctx.channels = _channel_shape(xp, x, w, b, axes)
        if ctx.channels is not None:  # batch norm's statistics per channel, one Numba loop
            c = x.shape[1]
            y, st = xp.empty_like(x), xp.empty((3, c), x.dtype)
            _fused.channel_norm(x.reshape(ctx.channels), y.reshape(ctx.channels), st[0], st[1], st[2], eps)
            if w is not None:
                y *= w.reshape(w_shape)
            if b is not None:
                y += b.reshape(w_shape)
            ctx.save_for_backward(x, w, st[0].reshape(w_shape), st[2].reshape(w_shape))
            ctx.b_shape = b.shape if b is not None else None
            ctx.mark_non_differentiable(st[0], st[1])
            return y, st[0], st[1]
        # the 16-bit floats in float32, rounded once (PyTorch's; their own sums stall): x and w are saved as
        # they came, mean and rstd in float32
        xw, ww, bw = _widen(x, w, b)
        mean = xw.mean(axis=axes, keepdims=True)
        y = xw - mean  # centred, then normalized in place
        var = xp.square(y).mean(axis=axes, keepdims=True)
        rstd = 1.0 / xp.sqrt(var + eps)
        y *= rstd
        if ww is not None:
            y *= ww.reshape(w_shape)
        if bw is not None:
            y += bw.reshape(w_shape)
        ctx.save_for_backward(x, w, mean, rstd)
        ctx.b_shape, ctx.b_dtype = (b.shape, b.dtype) if b is not None else (None, None)
        mean, var = (xp.squeeze(a, axes).astype(x.dtype, copy=False) for a in (mean, var))
        ctx.mark_non_differentiable(mean, var)
        return y.astype(x.dtype, copy=False), mean, var

    @staticmethod
    def backward(ctx, g, _gm=None, _gv=None):
        x, w, mean, rstd = ctx.saved_tensors
        axes = ctx.axes
        nig = ctx.needs_input_grad
        if ctx.rows is not None:
            if not STATE.enabled:
                dx = _k.row_norm_backward(ctx.xp.ascontiguousarray(g._data).reshape(ctx.rows),
                                          x._data.reshape(ctx.rows), mean._data, rstd._data)
                return Tensor._make(dx.reshape(x.shape)), None, None, None, None, None
            lead = x.shape[:x.ndim - len(axes)]
            mean = mean.reshape(lead + (1,) * len(axes))
            rstd = rstd.reshape(lead + (1,) * len(axes))
        if not STATE.enabled and ctx.channels is not None and _fused.usable(g._data):
            c = x.shape[1]
            dx, dw, db = ctx.xp.empty_like(x._data), numpy.zeros(c), numpy.zeros(c)
            wd = w._data.reshape(-1) if w is not None else numpy.ones(c, x._data.dtype)
            _fused.channel_norm_grad(g._data.reshape(ctx.channels), x._data.reshape(ctx.channels), wd,
                                     mean._data.reshape(-1), rstd._data.reshape(-1), dx.reshape(ctx.channels), dw, db)
            return (Tensor._make(dx) if nig[0] else None,
                    Tensor._make(dw.astype(x._data.dtype).reshape(w.shape)) if nig[1] else None,
                    Tensor._make(db.astype(x._data.dtype).reshape(ctx.b_shape)) if nig[2] else None, None, None, None)
        if not STATE.enabled:
            return _normalize_grads(ctx, g._data, x._data, w._data if w is not None else None, mean._data,
                                    rstd._data, nig)
        # create_graph: Tensor ops, and the statistics are functions of x too
        mean = x.mean(axes, keepdim=True)
        d = x - mean
        rstd = ((d * d).mean(axes, keepdim=True) + ctx.eps) ** -0.5
        xhat = (x - mean) * rstd
        dx, dw, db = _affine_grads(g, xhat, w, ctx.red_axes, ctx.w_shape, rstd, axes)
        return (dx if nig[0] else None, dw.reshape(w.shape) if nig[1] else None,
                db.reshape(ctx.b_shape) if nig[2] else None, None, None, None)


def _row_shape(xp, x, w, b, axes):
    """(rows, cols) when Normalize can run on rows: no affine, statistics over the trailing dims of a
    C-contiguous NumPy float32/float64 array; else None."""
    if (w is None and b is None and xp is _backend.numpy and x.dtype.char in "fd" and x.flags.c_contiguous and x.size
            and tuple(axes) == tuple(range(x.ndim - len(axes), x.ndim))):
        cols = math.prod(x.shape[x.ndim - len(axes):])
        return (x.size // cols, cols)
    return None


def _channel_shape(xp, x, w, b, axes):
    """(N, C, M) when Normalize's statistics are batch norm's (every dim but 1) of a C-contiguous NumPy
    array the Numba loops serve; else None."""
    if (xp is _backend.numpy and x.ndim >= 2 and tuple(axes) == (0,) + tuple(range(2, x.ndim))
            and _fused.usable(x, *(t for t in (w, b) if t is not None))):
        return (x.shape[0], x.shape[1], x.size // max(1, x.shape[0] * x.shape[1]))
    return None


def _widen(*arrays):
    """The arrays in float32 when the first is a 16-bit float (None stays None), else as they are."""
    if not _dt.is_half(arrays[0].dtype):
        return arrays
    return tuple(a if a is None else a.astype(numpy.float32) for a in arrays)


def _normalize_grads(ctx, g, x, w, mean, rstd, nig):
    """Normalize's first derivatives on arrays: _affine_grads' formulas in place, three temporaries."""
    axes, red = ctx.axes, ctx.red_axes
    dtype, w_dtype = x.dtype, None if w is None else w.dtype
    half = _dt.is_half(dtype)
    if half:
        x, g, w = _widen(x, g, w)
    xhat = x - mean
    xhat *= rstd
    gx = gw = gb = None
    if nig[1] or nig[2]:
        if nig[2]:
            gb = g.sum(axis=red).reshape(ctx.b_shape)
            gb = Tensor._make(gb.astype(ctx.b_dtype) if half else gb)  # a float32 bias of a 16-bit input: float32
        if nig[1]:
            gw = (g * xhat).sum(axis=red).reshape(w.shape)
            gw = Tensor._make(gw.astype(w_dtype) if half else gw)
    if nig[0]:
        gx = g * w.reshape(ctx.w_shape) if w is not None else g.copy()
        c = (gx * xhat).mean(axis=axes, keepdims=True)
        a = gx.mean(axis=axes, keepdims=True)
        xhat *= c
        gx -= a
        gx -= xhat
        gx *= rstd
        gx = Tensor._make(gx.astype(dtype, copy=False))
    return gx, gw, gb, None, None, None


def _check_channels(op, x, t, what):
    if t is not None and t.numel() != x.shape[1]:
        raise RuntimeError(f"{op}: expected {what} to have {x.shape[1]} elements (the input's channel dim), "
                           f"got {list(t.shape)}")


def _check_param_dtypes(op, x, *params):
    """PyTorch's CPU rule for a norm's weight and bias: the input's dtype, or float32 (both) for a 16-bit input."""
    ps = [t for t in params if t is not None]
    if not ps or all(t.dtype is x.dtype for t in ps):
        return
    if ps[0].dtype is not x.dtype:  # mixed: PyTorch reads the first parameter given
        if any(t.dtype is not _dt.float32 for t in ps):
            raise RuntimeError(f"{op}: mixed dtype (CPU): expect parameter to have scalar type of Float (input "
                               f"{x.dtype}, parameters {', '.join(str(t.dtype) for t in ps)}); cast them with .float()")
        if not _dt.is_half(x._data.dtype):
            raise RuntimeError(f"{op}: mixed dtype (CPU): all inputs must share same datatype (input {x.dtype}, "
                               f"parameters float32); cast them with .to(input.dtype)")
        return
    bad = next(t for t in ps if t.dtype is not x.dtype)
    raise RuntimeError(f"{op}: expected scalar type {x.dtype} but found {bad.dtype} (weight and bias take the "
                       "input's dtype); cast it with .to(input.dtype)")


def _update_running(running, new, momentum):
    with no_grad():
        running.mul_(1 - momentum).add_(new.to(running.dtype) * momentum)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalise each channel (dim 1) over the batch and spatial dims; in training, update the running stats.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.batch_norm(wb.tensor([[1.0], [3.0]]), None, None, training=True)
    tensor([[-1.0000],
            [ 1.0000]])
    """
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected 2D or more input (N, C, ...), got {input.ndim}D input")
    c = input.shape[1]
    for t, what in ((running_mean, "running_mean"), (running_var, "running_var"), (weight, "weight"),
                    (bias, "bias")):
        _check_channels("batch_norm", input, t, what)
    check_no_requires_grad("native_batch_norm", running_mean=running_mean, running_var=running_var)
    w_shape = (1, c) + (1,) * (input.ndim - 2)
    if training:
        n = input.numel() // c
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{list(input.shape)}")
        axes = (0,) + tuple(range(2, input.ndim))
        y, mean, var = Normalize.apply(input, weight, bias, axes, w_shape, eps)
        if running_mean is not None:
            _update_running(running_mean, mean, momentum)
        if running_var is not None:
            _update_running(running_var, var * (n / (n - 1)), momentum)
        return y
    if running_mean is None or running_var is None:
        raise RuntimeError("batch_norm: running_mean and running_var must be given when training=False")
    return _bn_eval(input, running_mean, running_var, weight, bias, eps, w_shape)


@composite("batch_norm")
def _bn_eval(x, rm, rv, w, b, eps, w_shape):
    scale = (rv + eps) ** -0.5
    if w is not None:
        scale = scale * w
    shift = -rm * scale
    if b is not None:
        shift = shift + b
    return x * scale.reshape(w_shape) + shift.reshape(w_shape)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalise each (sample, channel) over its spatial dims.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.instance_norm(wb.tensor([[[1.0, 3.0]]]))
    tensor([[[-1.0000,  1.0000]]])
    """
    if input.ndim < 3:
        raise ValueError(f"instance_norm: expected 3D or more input (N, C, *spatial), got {input.ndim}D input")
    c = input.shape[1]
    for t, what in ((running_mean, "running_mean"), (running_var, "running_var"), (weight, "weight"),
                    (bias, "bias")):
        _check_channels("instance_norm", input, t, what)
    check_no_requires_grad("native_batch_norm", running_mean=running_mean, running_var=running_var)
    w_shape = (1, c) + (1,) * (input.ndim - 2)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("instance_norm: Expected running_mean and running_var to be defined when "
                               "use_input_stats is false")
        return _bn_eval(input, running_mean, running_var, weight, bias, eps, w_shape)
    axes = tuple(range(2, input.ndim))
    n = math.prod(input.shape[2:])
    if n <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {list(input.shape)}")
    y, mean, var = Normalize.apply(input, weight, bias, axes, w_shape, eps)
    if running_mean is not None:
        _update_running(running_mean, mean.mean(0), momentum)
    if running_var is not None:
        _update_running(running_var, (var * (n / (n - 1))).mean(0), momentum)
    return y


@composite("group_norm")
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise groups of channels of each sample.

    >>> import workbench as wb
    >>> wb.group_norm(wb.tensor([[1.0, 3.0]]), 1)
    tensor([[-1.0000,  1.0000]])
    """
    if _AUTOCAST[0]:
        input, weight, bias = _autocast_cast("group_norm", input, weight, bias)
    if input.ndim < 2:
        raise RuntimeError(f"group_norm: expected at least 2D input (N, C, ...), got {input.ndim}D")
    n, c = input.shape[:2]
    if c % num_groups:
        raise RuntimeError(f"group_norm: Expected number of channels in input to be divisible by num_groups, but "
                           f"got input of shape {list(input.shape)} and num_groups={num_groups}")
    if (n * c // num_groups) * math.prod(input.shape[2:]) == 1:  # PyTorch's _verify_batch_size
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{[n * c // num_groups, num_groups] + list(input.shape[2:])}")
    _check_channels("group_norm", input, weight, "weight")
    _check_channels("group_norm", input, bias, "bias")
    _check_param_dtypes("group_norm", input, weight, bias)
    if _dt.is_half(input._data.dtype) and (weight is not None or bias is not None):
        # 16-bit floats: the affine inside Normalize, with the statistics in float32 and rounded once, as
        # PyTorch's (rounding y, then y * w, then + b is off by hundreds of units where y * w cancels b)
        g = (1, num_groups, c // num_groups, 1)
        y, _, _ = Normalize.apply(input.reshape(n, num_groups, c // num_groups, -1),
                                  None if weight is None else weight.reshape(g), None if bias is None else bias.reshape(g),
                                  (2, 3), g, eps)
        return y.reshape(tuple(input.shape))
    x = input.reshape(n, num_groups, -1)
    y, _, _ = Normalize.apply(x, None, None, (2,), (1, 1, 1), eps)
    y = y.reshape(tuple(input.shape))
    w_shape = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(w_shape)
    if bias is not None:
        y = y + bias.reshape(w_shape)
    return y


class LayerNorm(Function):
    _raw = True
    op_name = "native_layer_norm"

    @staticmethod
    def forward(ctx, x, w, b, k, eps):
        xp = ctx.xp
        cols = math.prod(x.shape[x.ndim - k:])
        x2 = xp.ascontiguousarray(x).reshape(-1, cols)
        w1 = w.reshape(-1) if w is not None else None
        b1 = b.reshape(-1) if b is not None else None
        for t, what in ((w, "weight"), (b, "bias")):
            if t is not None and t.dtype != x.dtype:
                raise RuntimeError(f"layer_norm: expected {what} to have dtype {x.dtype} like the input, got "
                                   f"{t.dtype}. Cast it with .to(dtype) first.")
        y, mean, rstd = _k.layer_norm(xp, x2, w1, b1, eps)
        ctx.k, ctx.eps = k, eps
        ctx.save_for_backward(x, w, mean, rstd)
        ctx.b_shape = b.shape if b is not None else None
        return y.reshape(x.shape)

    @staticmethod
    def backward(ctx, g):
        x, w, mean, rstd = ctx.saved_tensors
        nig = ctx.needs_input_grad
        shape = x.shape
        cols = math.prod(shape[x.ndim - ctx.k:])
        if STATE.enabled:  # create_graph: Tensor ops, statistics recomputed from x
            x2 = x.reshape(-1, cols)
            mu = x2.mean(-1, keepdim=True)
            d = x2 - mu
            r = ((d * d).mean(-1, keepdim=True) + ctx.eps) ** -0.5
            dx, dw, db = _affine_grads(g.reshape(-1, cols), d * r, w.reshape(-1) if w is not None else None, (0,),
                                       (1, cols), r, (-1,))
            return (dx.reshape(shape) if nig[0] else None, dw.reshape(w.shape) if nig[1] else None,
                    db.reshape(ctx.b_shape) if nig[2] else None, None, None)
        xp = ctx.xp
        g2 = xp.ascontiguousarray(g._data).reshape(-1, cols)
        x2 = xp.ascontiguousarray(x._data).reshape(-1, cols)
        dx, dw, db = _k.layer_norm_backward(xp, g2, x2, mean._data, rstd._data,
                                            w._data.reshape(-1) if w is not None else None, nig[1], nig[2])
        return (Tensor._make(dx.reshape(shape)) if nig[0] else None,
                Tensor._make(dw.reshape(w.shape)) if nig[1] else None,
                Tensor._make(db.reshape(ctx.b_shape)) if nig[2] else None, None, None)


def _norm_shape(op, input, normalized_shape, *params):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    shape = tuple([int(s) for s in normalized_shape])
    k = len(shape)
    xs = input._data.shape  # raw tuples: this runs on every call of a LayerNorm
    if k == 0 or len(xs) < k or xs[len(xs) - k:] != shape:
        raise RuntimeError(f"{op}: Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size {list(input.shape)}")
    for p, what in params:
        if p is not None and p._data.shape != shape:
            raise RuntimeError(f"{op}: expected {what} of shape {list(shape)}, got {list(p.shape)}")
    return shape, k


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the last len(normalized_shape) dims, then scale and shift elementwise.

    >>> import workbench as wb
    >>> wb.layer_norm(wb.tensor([[1.0, 3.0]]), (2,))
    tensor([[-1.0000,  1.0000]])
    """
    if _AUTOCAST[0]:
        input, weight, bias = _autocast_cast("layer_norm", input, weight, bias)
    _, k = _norm_shape("layer_norm", input, normalized_shape, (weight, "weight"), (bias, "bias"))
    if _dt.is_half(input._data.dtype) and any(p is not None and p.dtype is _dt.float32 for p in (weight, bias)) and all(
            p is None or p.dtype in (input.dtype, _dt.float32) for p in (weight, bias)):
        # a 16-bit input with float32 parameters (autocast's, or a model half converted): PyTorch's mixed kernel,
        # computed in float32 and rounded once to the input's dtype
        return LayerNorm.apply(input.float(), None if weight is None else weight.float(),
                               None if bias is None else bias.float(), k, eps).to(input.dtype)
    return LayerNorm.apply(input, weight, bias, k, eps)


@composite("rms_norm")
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x**2) + eps) over the last dims, times weight; eps defaults to the eps of the dtype it is
    computed in (float32 for 16-bit inputs, which are computed in float32 and rounded once, as PyTorch's).

    >>> import workbench as wb
    >>> wb.rms_norm(wb.tensor([[3.0, 4.0]]), (2,), eps=0.0)
    tensor([[0.8485, 1.1314]])
    """
    _, k = _norm_shape("rms_norm", input, normalized_shape, (weight, "weight"))
    x = input.float() if _dt.is_half(input._data.dtype) else input
    if eps is None:
        eps = _EPS.get(str(x.dtype).replace("workbench.", ""), _EPS["float32"])
    axes = tuple(range(input.ndim - k, input.ndim))
    y = x * ((x * x).mean(axes, keepdim=True) + eps) ** -0.5
    y = y * weight if weight is not None else y
    return y.to(input.dtype) if y.dtype != input.dtype else y  # the input's dtype, as PyTorch's type_as


@composite("local_response_norm")
def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x**2 over `size` neighbouring channels) ** beta.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.local_response_norm(wb.ones(1, 3, 2), 2, alpha=0.0).shape
    workbench.Size([1, 3, 2])
    """
    if input.ndim < 3:
        raise ValueError(f"local_response_norm: Expected 3D or higher dimensionality input (got {input.ndim} "
                         "dimensions)")
    if input.numel() == 0:
        return input
    c = input.shape[1]
    xp = _backend.xp_of(input._data)
    # channel window [i - size//2, i + (size-1)//2], zero-padded, always divided by size (as PyTorch)
    idx = xp.arange(c)
    lo = idx[:, None] - size // 2
    hi = idx[:, None] + (size - 1) // 2
    m = ((idx[None, :] >= lo) & (idx[None, :] <= hi)).astype(input._data.dtype) / size
    sq = (input * input).transpose(1, -1)
    div = (sq @ Tensor._make(m.T)).transpose(1, -1)
    return input / (div * alpha + k) ** beta


__all__ = ["layer_norm", "group_norm", "rms_norm"]
METHODS = {}
