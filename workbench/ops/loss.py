"""Losses, embeddings and distances.

cross_entropy with class indices is a fused primitive (log_softmax + nll in one pass, on
``_backend.kernels``) whose backward is a primitive too, with a Tensor-op backward of its own, so
second derivatives work; nll_loss is one primitive too (a gather forward, a scatter backward). Every other
loss is a short composite of differentiable ops, reduced with PyTorch's rules ('mean' | 'sum' | 'none',
weighted means divided by the summed weights).
"""
import contextlib
import functools
import math
import warnings

from .. import _backend, creation
from .._core import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import STATE, no_grad
from ..autograd.graph import composite
from .._backend import fused as _fused, kernels as _k, pointwise as _pw
from ._autocast import AUTOCAST as _AUTOCAST
from ._autocast import cast as _autocast_cast
from .activation import Softmax, SoftmaxBackward, _Logsigmoid, log_softmax
from ._util import array_step, check_no_requires_grad
from .elementwise import minimum, relu, where
from .index import PutRows, TakeRows
from .linalg import vecdot, vector_norm
from .linear import linear

_REDUCTIONS = ("mean", "sum", "none")
_INT64 = _backend.numpy.dtype("int64")


def _legacy_reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use reduction='mean'|'sum'|'none' "
                  "instead.", UserWarning, stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "none" if not reduce else ("mean" if size_average else "sum")


def _check_reduction(reduction, extra=()):
    if reduction not in _REDUCTIONS + tuple(extra):
        raise ValueError(f"{reduction} is not a valid value for reduction; use one of "
                         f"{', '.join(repr(r) for r in _REDUCTIONS + tuple(extra))}")


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _xp(t):
    return _backend.xp_of(t._data)


def _check_same_size(op, input, target):
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.", UserWarning, stacklevel=3)


# --- cross-entropy (fused) --------------------------------------------------------------------------
class CrossEntropy(Function):
    """Cross-entropy of (R, C) logits against class indices (weight, ignore_index, label smoothing), reduced
    in the same primitive: per-row losses for 'none', their sum, or their sum / the summed weights of the
    non-ignored targets for 'mean'. The targets come as they were given (any shape, integer): flattening,
    the int64 cast and the range check happen here, so a compiled replay repeats them. On float32 NumPy
    logits (any size) it is one compiled loop (``fused.cross_entropy``) that also returns the two sums."""

    _raw = True
    op_name = "cross_entropy"

    @staticmethod
    def forward(ctx, x, target, weight, ignore_index, smoothing, reduction):
        xp, c = ctx.xp, x.shape[1]
        t = target if target.ndim == 1 and target.dtype == _INT64 else target.reshape(-1).astype(_INT64, copy=False)
        if _fused.usable32(x, *(() if weight is None else (weight,)), min_size=1) and t.flags.c_contiguous:
            loss, lse, total, denom, bad = _fused.cross_entropy(x, t, weight, ignore_index, smoothing)
            if bad >= 0:
                raise IndexError(f"cross_entropy: Target {int(t[bad])} is out of bounds for {c} classes")
        else:
            _check_target_range("cross_entropy", t, c, ignore_index)
            loss, lse = _k.cross_entropy(xp, x, t, weight, ignore_index, smoothing)
            total, denom = loss.sum(), None
        ctx.args = (t, weight, ignore_index, smoothing)
        ctx.reduction, ctx.rows = reduction, x.shape[0]
        ctx.save_for_backward(x, lse)
        if reduction == "none":
            return loss
        if reduction == "mean":
            if denom:  # the loop's float64 sums
                ctx.inv, total = x.dtype.type(1.0 / denom), total / denom
            else:  # the divisor stays on the device (no host sync); every target ignored: nan, as PyTorch
                if denom is None:
                    denom = _weighted_mean_denominator(t, weight, ignore_index, xp, "float64")
                with _errstate(xp):
                    denom = xp.asarray(denom, dtype="float64")
                    ctx.inv, total = (1.0 / denom).astype(x.dtype), total / denom
        return xp.asarray(total, dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        x, lse = ctx.saved_tensors
        if not STATE.enabled:  # first derivatives: one kernel call on the raw arrays, no further nodes
            xp, gd = ctx.xp, g._data
            if ctx.reduction == "mean":
                gd = gd * ctx.inv
            if ctx.reduction == "none":
                grow = gd
            elif lse._data.ndim == 2:  # one value for all rows
                grow = xp.asarray(gd, dtype=x._data.dtype).reshape(1)
            else:
                grow = xp.empty(ctx.rows, dtype=x._data.dtype)
                grow[...] = gd
            return (Tensor._make(_k.cross_entropy_backward(xp, x._data, ctx.args[0], lse._data, grow, *ctx.args[1:])),
                    None, None, None, None, None)
        if ctx.reduction != "none":
            g = (g * Tensor._make(ctx.inv) if ctx.reduction == "mean" else g).expand(ctx.rows)
        return CrossEntropyBackward.apply(x, g, lse, *ctx.args), None, None, None, None, None


class _CrossEntropyMean(CrossEntropy):
    """``cross_entropy(x, t)`` in its default form, which every classifier's step calls: CrossEntropy with no
    weight, ignore_index -100, no smoothing and the mean, as a primitive of two tensors (its apply takes the
    two-operand fast path; six arguments took the general one: 2 us of a 7 us call)."""

    @staticmethod
    def forward(ctx, x, target):
        return CrossEntropy.forward(ctx, x, target, None, -100, 0.0, "mean")

    @staticmethod
    def backward(ctx, g):
        return CrossEntropy.backward(ctx, g)[:2]


class CrossEntropyBackward(Function):
    """dx = grow[:, None] * (p * coef - const) with p = softmax(x); differentiable in x and grow. ``lse`` is
    the forward's (``kernels.cross_entropy``)."""

    _raw = True
    op_name = "cross_entropy_backward"

    @staticmethod
    def forward(ctx, x, grow, lse, target, weight, ignore_index, smoothing):
        ctx.args = (target, weight, ignore_index, smoothing)
        ctx.save_for_backward(x, grow)
        return _k.cross_entropy_backward(ctx.xp, x, target, lse, grow, weight, ignore_index, smoothing)

    @staticmethod
    def backward(ctx, gg):
        x, grow = ctx.saved_tensors
        target, weight, ignore_index, ls = ctx.args
        xp = ctx.xp
        c = x.shape[-1]
        valid = target != ignore_index
        t = xp.where(valid, target, 0)
        onehot = (xp.arange(c) == t[:, None]).astype(x._data.dtype)
        v = valid.astype(x._data.dtype)
        if weight is None:
            coef = v
            const = v[:, None] * ((1.0 - ls) * onehot + ls / c)
        else:
            wt = weight[t]
            coef = v * ((1.0 - ls) * wt + ls / c * weight.sum())
            const = v[:, None] * ((1.0 - ls) * wt[:, None] * onehot + ls / c * weight)
        p = Softmax.apply(x, 1, False)
        coef_t, const_t = Tensor._make(coef.astype(x._data.dtype)), Tensor._make(const.astype(x._data.dtype))
        nig = ctx.needs_input_grad
        dx = SoftmaxBackward.apply(p, gg * (grow * coef_t).unsqueeze(1), 1, False) if nig[0] else None
        dgrow = (gg * (p * coef_t.unsqueeze(1) - const_t)).sum(1) if nig[1] else None
        return dx, dgrow, None, None, None, None, None


def _rows(input, op):
    """(R, C) view of logits (N, C), (C,) or (N, C, d1, ...), in the order of the flattened target."""
    if input.ndim == 0:
        raise ValueError(f"{op}: expected input of shape (C), (N, C) or (N, C, d1, ...), got a 0-d tensor")
    if input.ndim == 1:
        return input.unsqueeze(0)
    if input.ndim == 2:
        return input
    c = input.shape[1]
    return input.permute(0, *range(2, input.ndim), 1).reshape(-1, c)


def _check_class_targets(op, input, target):
    """Raises unless target holds class indices of the shape input's logits need."""
    shape = input._data.shape  # raw tuples: this runs on every loss call
    want = shape[:1] + shape[2:] if len(shape) > 1 else ()
    if target._data.shape != want:  # PyTorch's words, and its ValueError for the batch size
        ts = target._data.shape
        if len(shape) == 1:
            if target.numel() == 1:  # PyTorch takes a target of shape [1] here too; workbench a 0-d one only
                raise RuntimeError(f"{op}: a 1-D input takes a 0-d target (class index), got shape {list(ts)}")
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {target.numel()}")
        if not ts or ts[0] != shape[0]:
            raise ValueError(f"Expected input batch_size ({shape[0]}) to match target batch_size ({ts[0] if ts else 0}).")
        raise RuntimeError(f"Expected target size {list(want)}, got {list(ts)}")
    if target.dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected target of dtype int64 (class indices), got {target.dtype}; for class "
                           "probabilities pass a floating target of the input's shape")


def _check_target_range(op, t, c, ignore_index):
    """IndexError at the first target outside [0, c) that is not ignore_index (NumPy arrays only: on CUDA that
    would be a device sync, and PyTorch asserts on the device)."""
    if t.size and type(t) is _backend.ndarray:
        bad = ((t < 0) | (t >= c)) & (t != ignore_index)
        if bool(bad.any()):
            raise IndexError(f"{op}: Target {int(t[bad][0])} is out of bounds for {c} classes")


def _weighted_mean_denominator(t, weight, ignore_index, xp, dtype):
    valid = t != ignore_index
    if weight is None:
        return valid.sum().astype(dtype)
    return (weight[xp.where(valid, t, 0)] * valid).sum().astype(dtype)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """Cross-entropy of logits against class indices or class probabilities.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.cross_entropy(wb.tensor([[0.0, 0.0]]), wb.tensor([1]))
    tensor(0.6931)
    """
    if (input.__class__ is Tensor and target.__class__ is Tensor and weight is None and ignore_index == -100
            and reduction == "mean" and size_average is None and reduce is None and not label_smoothing
            and not _AUTOCAST[0] and not target._rg):  # the common call: logits (N, C), class indices (N,)
        x, t = input._data, target._data
        if x.ndim == 2 and t.ndim == 1 and t.dtype == _INT64 and x.shape[0] == t.shape[0] and x.shape[0]:
            return _CrossEntropyMean.apply(input, target)
    if _AUTOCAST[0]:
        input, = _autocast_cast("cross_entropy", input)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if target._data.shape == input._data.shape and target.dtype.is_floating_point:
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing)
    if weight is not None:  # class indices: PyTorch's nll_loss underneath
        check_no_requires_grad("nll_loss_forward", weight=weight)
    _check_class_targets("cross_entropy", input, target)
    x2 = _rows(input, "cross_entropy")
    dt = x2._data.dtype
    if weight is not None and tuple(weight.shape) != (x2.shape[1],):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {x2.shape[1]} classes "
                           f"or no classes but got weight tensor of shape: {list(weight.shape)}")
    w = array_step(lambda a: a.astype(dt), weight) if weight is not None else None
    loss = CrossEntropy.apply(x2, target.detach() if target._rg else target, w, ignore_index, label_smoothing,
                              reduction)
    return loss.reshape(target._data.shape) if reduction == "none" and loss._data.shape != target._data.shape else loss


@composite("cross_entropy")
def _cross_entropy_probs(input, target, weight, reduction, ls):
    c = input.shape[1] if input.ndim > 1 else input.shape[0]
    logp = log_softmax(input, 1 if input.ndim > 1 else 0)
    if ls:
        target = target * (1 - ls) + ls / c
    if weight is not None:
        shape = (c,) + (1,) * (input.ndim - 2) if input.ndim > 1 else (c,)
        logp = logp * weight.reshape(shape)
    loss = -(logp * target).sum(1 if input.ndim > 1 else 0)
    if reduction == "mean":
        n = input.numel() // c if c else 0
        return loss.sum() / n
    return _reduce(loss, reduction)


class NllLoss(Function):
    """-weight[t] x[i, t] of (R, C) log-probabilities at the class indices t (ignore_index: 0), reduced in the
    same primitive: the per-row losses for 'none', their sum, or their sum over the summed weights of the
    non-ignored targets for 'mean' (every target ignored: nan, as PyTorch). The targets come as they were
    given: flattening, the int64 cast and the range check happen here, so a compiled replay repeats them.
    The gradient is a scatter of -weight[t] (over the summed weights for 'mean') times g into zeros; it does
    not depend on x, so the node saves no tensor."""

    _raw = True
    op_name = "nll_loss"

    @staticmethod
    def forward(ctx, x, target, weight, ignore_index, reduction):
        xp = ctx.xp
        rows, c = x.shape
        dt = x.dtype
        t = target if target.ndim == 1 and target.dtype == _INT64 else target.reshape(-1).astype(_INT64, copy=False)
        if xp is _backend.numpy and t.size:  # the targets' range first: in [0, c) with no ignore_index among them,
            lo, hi = _backend.numpy.minimum.reduce(t), _backend.numpy.maximum.reduce(t)  # (the usual batch) the
            if not (lo >= 0 and hi < c):  # checks and masks below are not needed
                _check_target_range("nll_loss", t, c, ignore_index)
            some_ignored = lo <= ignore_index <= hi
        else:
            _check_target_range("nll_loss", t, c, ignore_index)
            some_ignored = xp is not _backend.numpy  # (no host sync on a device)
        valid = (t != ignore_index) if some_ignored else None
        safe = xp.where(valid, t, 0) if some_ignored else t
        at = (xp.arange(rows), safe)
        if weight is None:
            w = valid.astype(dt) if some_ignored else None
        else:
            w = weight.astype(dt, copy=False)[safe]
            if some_ignored:
                w *= valid
        picked = x[at]
        loss = -picked if w is None else -(picked * w)
        if some_ignored:  # an ignored row is 0, whatever its x (PyTorch's; not -(x * 0), nan at x = -inf)
            loss = xp.where(valid, loss, dt.type(0))
        ctx.at, ctx.shape, ctx.reduction = at, x.shape, reduction
        if reduction == "none":
            ctx.coef = -w if w is not None else None
            return loss
        total = loss.sum()
        if reduction == "sum":
            ctx.coef = -w if w is not None else None
            return xp.asarray(total, dtype=dt)
        if w is None and rows:  # every row counts once
            denom = dt.type(rows)
            ctx.coef = -(1 / denom)
            return xp.asarray(total / denom, dtype=dt)
        denom = (w.sum() if w is not None else dt.type(rows)).astype(dt)
        with _errstate(xp):  # every target ignored: 0 / 0, nan (the gradient stays 0)
            out = xp.asarray(total / denom, dtype=dt)
            if w is None:
                ctx.coef = -(1 / denom)
            else:
                ctx.coef = xp.where(w != 0, -w / denom, dt.type(0))
        return out

    @staticmethod
    def backward(ctx, g):
        xp = ctx.xp
        coef = ctx.coef
        dt = g._data.dtype
        if not STATE.enabled:  # the scatter on the raw arrays
            gd = g._data
            dx = xp.zeros(ctx.shape, dt)
            dx[ctx.at] = (-gd if coef is None else coef * gd) if ctx.reduction == "none" else (
                -gd if coef is None else (coef * gd).astype(dt, copy=False))
            return Tensor._make(dx), None, None, None, None
        m = xp.zeros(ctx.shape, dt)  # create_graph: g times a constant (x has no second derivative here)
        m[ctx.at] = -1 if coef is None else coef
        m = Tensor._make(m)
        return (g.unsqueeze(1) if ctx.reduction == "none" else g) * m, None, None, None, None


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood of log-probabilities at the target classes.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.nll_loss(wb.tensor([[-1.0, -2.0]]), wb.tensor([1]))
    tensor(2.)
    """
    if _AUTOCAST[0]:
        input, = _autocast_cast("nll_loss", input)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    check_no_requires_grad("nll_loss_forward", weight=weight)
    _check_class_targets("nll_loss", input, target)
    x2 = _rows(input, "nll_loss")
    if weight is not None and tuple(weight.shape) != (x2.shape[1],):
        raise RuntimeError(f"nll_loss: weight tensor should be defined either for all {x2.shape[1]} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")
    loss = NllLoss.apply(x2, target.detach() if target._rg else target, weight, ignore_index, reduction)
    return loss.reshape(target._data.shape) if reduction == "none" and loss._data.shape != target._data.shape else loss


# --- binary cross-entropy ---------------------------------------------------------------------------
@composite("binary_cross_entropy")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)) for probabilities x (logs clamped at -100, as PyTorch).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.binary_cross_entropy(wb.tensor([0.5]), wb.tensor([1.0]))
    tensor(0.6931)
    """
    if _AUTOCAST[0]:
        input, target = _autocast_cast("binary_cross_entropy", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    check_no_requires_grad("binary_cross_entropy", weight=weight)
    d = input._data
    if d.size and type(d) is _backend.ndarray and bool(((d < 0) | (d > 1)).any()):  # CPU only, as above
        raise RuntimeError("binary_cross_entropy: all elements of input should be between 0 and 1")
    loss = -(target * input.log().clamp(min=-100) + (1 - target) * (1 - input).log().clamp(min=-100))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@composite("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """Sigmoid + binary cross-entropy in one stable expression; pos_weight weighs the positive term.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.binary_cross_entropy_with_logits(wb.tensor([0.0]), wb.tensor([1.0]))
    tensor(0.6931)
    """
    if _AUTOCAST[0]:
        input, target = _autocast_cast("binary_cross_entropy_with_logits", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    check_no_requires_grad("binary_cross_entropy_with_logits", weight=weight, pos_weight=pos_weight)
    if pos_weight is None and _fused_reduction(input, target, reduction, weight):
        return BceWithLogits.apply(input, target, reduction == "mean")
    pos = _Logsigmoid.apply(input)
    neg = _Logsigmoid.apply(-input)
    if pos_weight is not None:
        loss = -(pos_weight * target * pos + (1 - target) * neg)
    else:
        loss = -(target * pos + (1 - target) * neg)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


# --- regression losses ------------------------------------------------------------------------------
def _pointwise_loss(name, fn):
    @composite(name)
    def loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
        if _AUTOCAST[0]:
            input, target = _autocast_cast(name, input, target)
        reduction = _legacy_reduction(size_average, reduce, reduction)
        _check_reduction(reduction)
        _check_same_size(name, input, target)
        v = fn(input - target)
        if weight is not None:
            v = v * weight
        return _reduce(v, reduction)

    return loss


def _block_dot(a, b, block=4096):
    """sum(a * b) of two flat arrays as BLAS dot products of 4096-long blocks, then a pairwise sum of those:
    about the speed of one dot, and the accuracy of a pairwise sum (one dot over 512 K float32s is off by
    ~3e-7)."""
    m = a.size // block
    tail = a[m * block:] @ b[m * block:]
    return (a[:m * block].reshape(m, 1, block) @ b[:m * block].reshape(m, block, 1)).sum() + tail


class MseLoss(Function):
    """sum((x - t)**2), times 1/n for 'mean', in one primitive: a subtraction and a dot product forward, one
    scaled copy of the saved difference backward (PyTorch's (x - t) * (norm * g)); the composite made
    five passes over the arrays."""

    _raw = True
    op_name = "mse_loss"

    @staticmethod
    def forward(ctx, x, t, mean):
        d = ctx.xp.subtract(x, t)
        flat = d.reshape(-1)
        total = _block_dot(flat, flat)
        ctx.norm = 2.0 / d.size if mean else 2.0
        ctx.save_for_backward(x, t, d)
        return ctx.xp.asarray(total / d.size if mean else total, dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        x, t, d = ctx.saved_tensors
        nig = ctx.needs_input_grad
        if STATE.enabled:  # create_graph: differentiable in x, t and g
            gx = (x - t) * (g * ctx.norm)
        else:
            gx = Tensor._make(d._data * (g._data * g._data.dtype.type(ctx.norm)))
        return gx if nig[0] else None, -gx if nig[1] else None, None


_mse_composite = _pointwise_loss("mse_loss", lambda d: d * d)


class HuberLoss(Function):
    """huber_loss in one primitive: with a = |x - t| and c = min(a, delta), the loss scale * (0.5 d^2 inside
    delta, delta (a - delta / 2) outside) is scale * c (a - c / 2); the gradient is scale * clip(x - t,
    -delta, delta). smooth_l1_loss is the same with delta = beta and scale = 1 / beta. Summed or averaged,
    where the loops serve (``fused.huber_sum``, ``huber_grad``) each direction is one pass over x and t (the
    sum in float64), nothing saved but the inputs; else the NumPy form: the saved difference and two BLAS
    dots (c.a - c.c / 2). Unreduced, the NumPy form elementwise. The composite made ~15 passes, two selects,
    and an inf difference a NaN gradient (0 times inf in the select not taken)."""

    _raw = True
    op_name = "huber_loss"

    @staticmethod
    def forward(ctx, x, t, delta, scale, reduction):
        xp = ctx.xp
        ctx.delta, ctx.coef = delta, scale / x.size if reduction == "mean" else scale
        ctx.loop = reduction != "none" and _fused.usable(x, t)
        if ctx.loop:
            ctx.save_for_backward(x, t)
            total = _fused.huber_sum(x.reshape(-1), t.reshape(-1), float(delta)) * scale
            return xp.asarray(total / x.size if reduction == "mean" else total, dtype=x.dtype)
        d = xp.subtract(x, t)
        ctx.save_for_backward(x, t, d)
        a = xp.abs(d)
        c = xp.minimum(a, delta)
        if reduction == "none":
            c *= 0.5
            a -= c
            a *= c
            a += a  # c a - c c / 2 = (c / 2)(a - c / 2) 2, each step exact or one rounding as PyTorch's
            if scale != 1:
                a *= scale
            return a
        a, c = a.reshape(-1), c.reshape(-1)
        total = (_block_dot(c, a) - 0.5 * _block_dot(c, c)) * scale
        return xp.asarray(total / x.size if reduction == "mean" else total, dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        x, t, *d = ctx.saved_tensors
        nig = ctx.needs_input_grad
        if STATE.enabled:  # create_graph: differentiable in x, t and g
            gx = (x - t).clamp(-ctx.delta, ctx.delta) * (g * ctx.coef)
        else:
            dt = x._data.dtype.type
            gc = g._data * dt(ctx.coef)
            if ctx.loop:
                gd = ctx.xp.empty_like(x._data)
                _fused.huber_grad(x._data.reshape(-1), t._data.reshape(-1), gd.reshape(-1), dt(ctx.delta), dt(gc))
            else:
                gd = ctx.xp.clip(d[0]._data, -ctx.delta, ctx.delta)
                gd *= gc
            gx = Tensor._make(gd)
        return gx if nig[0] else None, -gx if nig[1] else None, None, None, None


class BceWithLogits(Function):
    """binary_cross_entropy_with_logits summed or averaged in one primitive: the loss of logit x against
    target t is max(x, 0) - x t + log1p(exp(-|x|)), so the total is two sums and a BLAS dot; the gradient
    is (sigmoid(x) - t) times g (/ n), in place. The composite took two log-sigmoids and six Tensor ops."""

    _raw = True
    op_name = "binary_cross_entropy_with_logits"

    @staticmethod
    def forward(ctx, x, t, mean):
        xp = ctx.xp
        xf, tf = xp.ascontiguousarray(x).reshape(-1), xp.ascontiguousarray(t).reshape(-1)
        if _fused.usable32(xf):  # one pass (NumPy's log1p is a scalar libm call without AVX-512)
            e = xp.empty_like(xf)
            _fused.softplus_tail(xf, e)
        else:
            e = xp.abs(xf)
            xp.negative(e, out=e)
            xp.exp(e, out=e)
            xp.log1p(e, out=e)
        total = e.sum(dtype=x.dtype) + xp.maximum(xf, 0, out=e).sum(dtype=x.dtype) - _block_dot(xf, tf)
        ctx.coef = 1.0 / x.size if mean else 1.0
        ctx.save_for_backward(x, t)
        return xp.asarray(total / x.size if mean else total, dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors
        nig = ctx.needs_input_grad
        if STATE.enabled:  # create_graph: differentiable in x, t and g
            gc = g * ctx.coef
            return (x.sigmoid() - t) * gc if nig[0] else None, -x * gc if nig[1] else None, None
        xp, gd = ctx.xp, g._data * g._data.dtype.type(ctx.coef)
        gx = gt = None
        if nig[0]:
            s = _pw.run(xp, _pw.sigmoid, (x._data,))
            s -= t._data
            s *= gd
            gx = Tensor._make(s)
        if nig[1]:  # d/dt of -x t
            gt = Tensor._make(xp.multiply(x._data, -gd))
        return gx, gt, None


class SmoothL1Loss(HuberLoss):
    """smooth_l1_loss: HuberLoss's primitive with delta = beta, scale = 1 / beta, under its own node name."""

    op_name = "smooth_l1_loss"


def _fused_reduction(input, target, reduction, weight=None, reductions=("mean", "sum")):
    """Whether a regression loss can run as one primitive (a reduction it takes, the same shape and float
    dtype, no weight)."""
    return (weight is None and reduction in reductions and isinstance(input, Tensor)
            and isinstance(target, Tensor) and input.shape == target.shape
            and input._data.dtype == target._data.dtype and input._data.dtype.char in "fd" and input.numel() > 0)


@composite("mse_loss")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.mse_loss(wb.tensor([1.0, 3.0]), wb.tensor([0.0, 0.0]))
    tensor(5.)
    """
    if _AUTOCAST[0]:
        input, target = _autocast_cast("mse_loss", input, target)
    if size_average is None and reduce is None and _fused_reduction(input, target, reduction, weight):
        return MseLoss.apply(input, target, reduction == "mean")
    return _mse_composite(input, target, size_average, reduce, reduction, weight)
l1_loss = _pointwise_loss("l1_loss", lambda d: d.abs())
l1_loss.__doc__ = """Mean absolute error.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.l1_loss(wb.tensor([1.0, -3.0]), wb.tensor([0.0, 0.0]))
    tensor(2.)
    """


def _huberish(d, delta, scale):  # a select, not a 0/1 mask times both branches (0 * inf made an inf loss NaN)
    a = d.abs()
    return where(a < delta, 0.5 * d * d * scale, (a - 0.5 * delta) * (delta * scale))


@composite("smooth_l1_loss")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d**2 / beta where |d| < beta, |d| - beta / 2 elsewhere.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.smooth_l1_loss(wb.tensor([0.5, 3.0]), wb.tensor([0.0, 0.0]))
    tensor(1.3125)
    """
    if _AUTOCAST[0]:
        input, target = _autocast_cast("smooth_l1_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _check_same_size("smooth_l1_loss", input, target)
    if beta > 0 and _fused_reduction(input, target, reduction, reductions=_REDUCTIONS):
        return SmoothL1Loss.apply(input, target, beta, 1.0 / beta, reduction)
    d = input - target
    v = d.abs() if beta == 0 else _huberish(d, beta, 1.0 / beta)
    return _reduce(v, reduction)


@composite("huber_loss")
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d**2 where |d| < delta, delta (|d| - delta / 2) elsewhere.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.huber_loss(wb.tensor([0.5, 3.0]), wb.tensor([0.0, 0.0]))
    tensor(1.3125)
    """
    if _AUTOCAST[0]:
        input, target = _autocast_cast("huber_loss", input, target)
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError(f"huber_loss does not support non-positive values for delta, got {delta}")
    _check_same_size("huber_loss", input, target)
    if _fused_reduction(input, target, reduction, weight, _REDUCTIONS):
        return HuberLoss.apply(input, target, delta, 1.0, reduction)
    v = _huberish(input - target, delta, 1.0)
    if weight is not None:
        v = v * weight
    return _reduce(v, reduction)


def _xlogy_self(t):
    """t * log(t), 0 where t == 0 (with a finite gradient there)."""
    pos = t > 0
    return where(pos, t, 0.0 * t) * where(pos, t, 1.0 + 0.0 * t).log()


@composite("kl_div")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target || exp(input)) pointwise: target * (log target - input); 'batchmean' divides by the batch size.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.kl_div(wb.tensor([0.0]), wb.tensor([1.0]), reduction="sum")
    tensor(0.)
    """
    if _AUTOCAST[0]:
        input, target = _autocast_cast("kl_div", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction, ("batchmean",))
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=3)
    if log_target:
        v = target.exp() * (target - input)
    else:
        v = _xlogy_self(target) - target * input
    if reduction == "batchmean":
        return v.sum() / input.shape[0] if input.ndim else v.sum()
    return _reduce(v, reduction)


@composite("poisson_nll_loss")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """Poisson negative log-likelihood: exp(x) - t x (log_input) or x - t log(x + eps).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.poisson_nll_loss(wb.tensor([0.0]), wb.tensor([1.0]))
    tensor(1.)
    """
    if _AUTOCAST[0]:
        input, target = _autocast_cast("poisson_nll_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    v = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe = target + (target <= 1).to(target.dtype)
        stirling = target * safe.log() - target + 0.5 * (2 * math.pi * safe).log()
        v = v + stirling * (target > 1).to(target.dtype)
    return _reduce(v, reduction)


@composite("gaussian_nll_loss")
def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log var + (input - target)**2 / var), var clamped below at eps (not differentiated).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.gaussian_nll_loss(wb.tensor([0.0]), wb.tensor([0.0]), wb.tensor([1.0]))
    tensor(0.)
    """
    if _AUTOCAST[0]:
        input, target, var = _autocast_cast("gaussian_nll_loss", input, target, var)
    _check_reduction(reduction)
    if not isinstance(var, Tensor):
        var = Tensor._make(_xp(input).full(tuple(input.shape), float(var), dtype=input._data.dtype))
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    vd = var._data
    if vd.size and bool((vd < 0).any()):
        raise ValueError("var has negative entry/entries")
    # clamp the value, not the gradient, as PyTorch does (clamp_ under no_grad)
    var = var + Tensor._make(_xp(var).maximum(vd, eps) - vd)
    v = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        v = v + 0.5 * math.log(2 * math.pi)
    return _reduce(v, reduction)


# --- distances and embeddings -----------------------------------------------------------------------
def _pnorm(d, p, dim, keepdim=False):
    if p == 2:
        return (d * d).sum(dim, keepdim=keepdim).sqrt()
    if p == 1:
        return d.abs().sum(dim, keepdim=keepdim)
    if p == math.inf:
        return d.abs().amax(dim, keepdim=keepdim)
    if p == 0:
        return (d != 0).to(d.dtype).sum(dim, keepdim=keepdim)
    return (d.abs() ** p).sum(dim, keepdim=keepdim) ** (1.0 / p)


@composite("pairwise_distance")
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.pairwise_distance(wb.tensor([[0.0, 0.0]]), wb.tensor([[3.0, 4.0]]), eps=0.0)
    tensor([5.])
    """
    nd = max(x1.ndim, x2.ndim)
    return _pnorm(x1 - x2 + eps, p, nd - 1 if nd else 0, keepdim)


@composite("cosine_similarity")
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """x1 . x2 / (||x1|| ||x2||) along dim (each norm clamped at eps).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.cosine_similarity(wb.tensor([[1.0, 0.0]]), wb.tensor([[1.0, 1.0]]))
    tensor([0.7071])
    """
    if _AUTOCAST[0]:
        x1, x2 = _autocast_cast("cosine_similarity", x1, x2)
    n1 = (x1 * x1).sum(dim, keepdim=True).sqrt()
    n2 = (x2 * x2).sum(dim, keepdim=True).sqrt()
    # clamp the values only (PyTorch clamps under no_grad)
    n1 = n1 + Tensor._make(_xp(n1).maximum(n1._data, eps) - n1._data)
    n2 = n2 + Tensor._make(_xp(n2).maximum(n2._data, eps) - n2._data)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


@composite("pdist")
def pdist(input, p=2):
    """Distances between all pairs of rows i < j of an (N, M) input, as a flat (N(N-1)/2,) tensor.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.pdist(wb.tensor([[0.0, 0.0], [3.0, 4.0]]))
    tensor([5.])
    """
    if _AUTOCAST[0]:
        input, = _autocast_cast("pdist", input)
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    xp = _xp(input)
    n = input.shape[0]
    i, j = xp.triu_indices(n, 1)
    d = TakeRows.apply(input, i) - TakeRows.apply(input, j)
    if p == 0:  # the count of nonzeros, with PyTorch's zero gradient (d - d is 0 where d is)
        return where(d != 0, 1.0, d - d).sum(1)
    if p == math.inf:  # PyTorch's pdist gives each coordinate tied at the max the whole gradient
        a = d.abs()
        top = Tensor._make(a._data.max(1))
        return top + where(a == top.unsqueeze(1), a - a.detach(), 0.0).sum(1)
    return vector_norm(d, p, 1)  # 0 at a zero distance, as PyTorch's gradient


def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding with a trailing class dim.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.one_hot(wb.tensor([0, 2]), 3)
    tensor([[1, 0, 0],
            [0, 0, 1]])
    """
    if tensor.dtype.is_floating_point or tensor.dtype.is_complex:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    d = tensor._data
    if num_classes == -1:  # (the number of classes read from the values: a compiled call runs eagerly)
        if d.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return Tensor._make(_one_hot(d, int(d.max()) + 1))
    return array_step(functools.partial(_one_hot, num_classes=num_classes), tensor)


def _one_hot(d, num_classes):
    """The one-hot int64 array of class indices ``d`` (checked here, so a compiled replay checks them too)."""
    if d.size and (bool((d < 0).any()) or bool((d >= num_classes).any())):
        raise RuntimeError("one_hot: Class values must be non-negative and smaller than num_classes "
                           f"({num_classes})")
    return (d[..., None] == _backend.xp_of(d).arange(num_classes)).astype("int64")


def _check_rows(idx, n):
    # NumPy would wrap -1 round to the last row; CPU only (on the GPU the check would synchronise)
    if idx.size and type(idx) is _backend.ndarray and (
            _backend.numpy.minimum.reduce(idx, axis=None) < 0 or _backend.numpy.maximum.reduce(idx, axis=None) >= n):
        raise IndexError(f"embedding: index out of range in self (indices must be in [0, {n}), got "
                         f"[{int(idx.min())}, {int(idx.max())}])")


class Embedding(Function):
    _raw = True
    op_name = "embedding"

    @staticmethod
    def forward(ctx, w, idx, scale):
        ctx.nrows = w.shape[0]
        _check_rows(idx, w.shape[0])  # here too, not only in embedding(): a compiled replay runs this forward
        ctx.save_for_backward(idx, scale)
        return w[idx]

    @staticmethod
    def backward(ctx, g):
        idx, scale = ctx.saved_tensors
        if scale is not None:
            g = g * scale
        return PutRows.apply(g, idx, ctx.nrows), None, None


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """Rows of weight at the integer indices in input; padding_idx's row gets no gradient.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.embedding(wb.tensor([1, 0]), wb.tensor([[0.0, 1.0], [2.0, 3.0]]))
    tensor([[2., 3.],
            [0., 1.]])
    """
    idx, wd = input._data, weight._data  # raw shapes and kinds: this runs on every call of an Embedding
    if idx.dtype.kind in "fcVb":  # (bool too: PyTorch refuses it here, NumPy would take it as a mask)
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.dtype} instead (while checking arguments for embedding)")
    if wd.ndim != 2:
        raise RuntimeError(f"embedding: 'weight' must be 2-D, got {list(weight.shape)}")
    n = wd.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= n
    if not (idx.__class__ is _backend.ndarray and wd.__class__ is _backend.ndarray) and input.device != weight.device:
        idx = _backend.to_device(idx, weight.device)
    xp = _xp(weight)
    if max_norm is not None:
        _check_rows(idx, n)  # before the renorm writes into weight
        _embedding_renorm(weight, idx, max_norm, norm_type)
    scale = None
    if padding_idx is not None or scale_grad_by_freq:
        wdt, dev = weight._data.dtype, weight.device

        def grad_scale(i):  # one array step (workbench.compile replays it)
            if input.device != dev:
                i = _backend.to_device(i, dev)
            s = xp.ones(i.shape, wdt)
            if scale_grad_by_freq:
                s = s / xp.bincount(i.reshape(-1), minlength=n)[i]
            if padding_idx is not None:
                s = s * (i != padding_idx)
            return s[..., None].astype(wdt)
        scale = array_step(grad_scale, input)
    # the indices as the tensor they came in (its array else): a compiled call then binds them where the call
    # read them, an argument or a tensor from outside (a global batch), not as a raw array it cannot place
    return Embedding.apply(weight, input if idx is input._data else idx, scale)


def _embedding_renorm(weight, idx, max_norm, norm_type):
    # rows referenced by idx whose norm exceeds max_norm are rescaled in place (no gradient), as PyTorch
    xp = _xp(weight)
    rows = xp.unique(idx.reshape(-1))
    w = weight._data
    sel = w[rows]
    with no_grad():
        norms = vector_norm(Tensor._make(sel), norm_type, dim=1)._data  # any p, inf, -inf and 0 as torch.norm
        scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(w.dtype)
        w[rows] = sel * scale[:, None]
        weight._vbox[0] += 1


# --- margin and embedding losses --------------------------------------------------------------------
@composite("cosine_embedding_loss")
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for target -1.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.cosine_embedding_loss(wb.tensor([[1.0, 0.0]]), wb.tensor([[1.0, 0.0]]), wb.tensor([1]))
    tensor(0.)
    """
    if _AUTOCAST[0]:
        input1, input2 = _autocast_cast("cosine_embedding_loss", input1, input2)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    dim = input1.ndim - 1
    eps = 1e-12
    prod = vecdot(input1, input2, dim=dim)  # one pass each (no product temporaries)
    m1 = vecdot(input1, input1, dim=dim) + eps
    m2 = vecdot(input2, input2, dim=dim) + eps
    cos = prod / (m1 * m2).sqrt()
    pos = (target == 1).to(cos.dtype)
    neg = (target == -1).to(cos.dtype)
    v = pos * (1 - cos) + neg * (cos - margin).clamp(min=0)
    return _reduce(v, reduction)


@composite("margin_ranking_loss")
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.margin_ranking_loss(wb.tensor([1.0]), wb.tensor([2.0]), wb.tensor([1.0]))
    tensor(1.)
    """
    if _AUTOCAST[0]:
        input1, input2, target = _autocast_cast("margin_ranking_loss", input1, input2, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not (input1.ndim == input2.ndim == target.ndim):
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


@composite("triplet_margin_loss")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d the pairwise p-norm distance.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.triplet_margin_loss(wb.zeros(1, 2), wb.zeros(1, 2), wb.ones(1, 2) * 3).item()
    0.0
    """
    if _AUTOCAST[0]:
        anchor, positive, negative = _autocast_cast("triplet_margin_loss", anchor, positive, negative)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not (anchor.ndim == positive.ndim == negative.ndim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp(min=0), reduction)


@composite("triplet_margin_with_distance_loss")
def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """triplet_margin_loss with any distance function (pairwise_distance by default).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.triplet_margin_with_distance_loss(wb.zeros(1, 2), wb.zeros(1, 2), wb.ones(1, 2) * 3).item()
    0.0
    """
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater than 0, got {margin} "
                         "instead")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = minimum(d_neg, dist(positive, negative))
    return _reduce((d_pos - d_neg + margin).clamp(min=0), reduction)


@composite("hinge_embedding_loss")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """input where target is 1, max(0, margin - input) where target is -1.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.hinge_embedding_loss(wb.tensor([0.3, 0.3]), wb.tensor([1.0, -1.0]))
    tensor(0.5000)
    """
    if _AUTOCAST[0]:
        input, target = _autocast_cast("hinge_embedding_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    not_pos = (target != 1).to(input.dtype)
    not_neg = (target != -1).to(input.dtype)
    v = not_pos * (margin - input).clamp(min=0) + not_neg * input
    return _reduce(v, reduction)


@composite("soft_margin_loss")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.soft_margin_loss(wb.tensor([0.0]), wb.tensor([1.0]))
    tensor(0.6931)
    """
    if _AUTOCAST[0]:
        input, target = _autocast_cast("soft_margin_loss", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    check_no_requires_grad("soft_margin_loss", target=target)
    return _reduce(-_Logsigmoid.apply(input * target), reduction)


@composite("multilabel_soft_margin_loss")
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Binary cross-entropy with logits per class, averaged over the classes of each sample.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.multilabel_soft_margin_loss(wb.tensor([[0.0, 0.0]]), wb.tensor([[1.0, 0.0]]))
    tensor(0.6931)
    """
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    v = -(target * _Logsigmoid.apply(input) + (1 - target) * _Logsigmoid.apply(-input))
    if weight is not None:
        v = v * weight
    c = input.shape[-1]
    v = v.sum(input.ndim - 1) / c
    return _reduce(v, reduction)


@composite("multi_margin_loss")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Multi-class hinge: sum over i != y of max(0, margin - x[y] + x[i])**p / C.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.multi_margin_loss(wb.tensor([[0.1, 0.8]]), wb.tensor([1]))
    tensor(0.1500)
    """
    if _AUTOCAST[0]:
        input, = _autocast_cast("multi_margin_loss", input)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    check_no_requires_grad("multi_margin_loss", weight=weight)
    x = input if input.ndim == 2 else input.reshape(1, -1)
    n, c = x.shape
    if target.numel() != n or target.ndim > 1:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{n}], but got {list(target.shape)}. Input has "
                           f"shape {list(input.shape)}.")
    if weight is not None and (weight.ndim != 1 or weight.numel() != c):
        raise RuntimeError(f"inconsistent weight size, expected {c} but got {list(weight.shape)}")
    xp = _xp(input)
    t = target._data.reshape(-1)
    picked = TakeRows.apply(x.reshape(-1), xp.arange(n) * c + t, True).unsqueeze(1)
    z = (margin - picked + x).clamp(min=0)
    if p == 2:
        z = z * z
    mask = (xp.arange(c) != t[:, None]).astype(input._data.dtype)
    if weight is not None:
        mask = mask * weight._data[t][:, None]
    v = (z * Tensor._make(mask)).sum(1) / c
    if input.ndim != 2:
        v = v.reshape(tuple(target.shape))
    return _reduce(v, reduction)



def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target) for (N, in) or (in,) inputs.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.linear_cross_entropy(wb.zeros(1, 3), wb.ones(2, 3), wb.tensor([0]))
    tensor(0.6931)
    """
    if input.ndim not in (1, 2):
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim != 2:
        raise RuntimeError(f"linear_cross_entropy: expected a 2-D linear_weight (classes, in_features), got "
                           f"{list(linear_weight.shape)}")
    if input.shape[-1] != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions (in_features), got "
                           f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    logits = linear(input, linear_weight, linear_bias)
    return cross_entropy(logits, target, weight, ignore_index=-100 if ignore_index is None else ignore_index,
                         reduction=reduction, label_smoothing=label_smoothing)


@composite("multilabel_margin_loss")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge: sum over target classes j and non-targets i of max(0, 1 - (x[j] - x[i])) / C.

    target holds class indices per sample, ended by the first -1.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.multilabel_margin_loss(wb.tensor([[0.1, 0.2, 0.4, 0.8]]), wb.tensor([[3, 0, -1, 1]]))
    tensor(0.8500)
    """
    if _AUTOCAST[0]:
        input, = _autocast_cast("multilabel_margin_loss", input)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    t = target._data.reshape(x.shape)
    xp = _xp(input)
    n, c = x.shape
    # count each listed target up to the first -1
    live = xp.cumprod(t >= 0, axis=1).astype(bool)
    counts = xp.zeros((n, c), dtype=input._data.dtype)
    for j in range(c):
        counts += (xp.arange(c) == t[:, j:j + 1]) * live[:, j:j + 1]
    is_target = (counts > 0).astype(input._data.dtype)
    mask = Tensor._make(counts[:, :, None] * (1 - is_target[:, None, :]))
    v = (relu(1 - x.unsqueeze(2) + x.unsqueeze(1)) * mask).sum((1, 2)) / c
    if input.ndim != 2:
        v = v.reshape(())
    return _reduce(v, reduction)


@composite("embedding_bag")
def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxes of bags of embeddings: rows of a 2-D input, or 1-D input split at offsets.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> F.embedding_bag(wb.tensor([[0, 1]]), wb.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tensor([[2., 3.]])
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
    if scale_grad_by_freq and mode == "max":
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                  "on GitHub.")
    xp = _xp(weight)
    idx = input._data
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             "fixed length sequences.")
        b, m = idx.shape
        bag_of = xp.repeat(xp.arange(b), m)
        flat = idx.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        off = offsets._data.astype("int64")
        if off.size and int(off[0]) != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                               f"position 0. However, got {int(off[0])}")
        if include_last_offset:
            off = off[:-1]
        b = off.shape[0]
        flat = idx
        bag_of = xp.searchsorted(off, xp.arange(idx.shape[0]), side="right") - 1
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if per_sample_weights is not None and tuple(per_sample_weights.shape) != tuple(input.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it must "
                         f"have the same shape as the input ({input.shape})")
    emb = embedding(Tensor._make(flat), weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)
    keep = xp.ones(flat.shape, dtype=weight._data.dtype)
    if padding_idx is not None:
        keep = keep * (flat != padding_idx % weight.shape[0])
    if per_sample_weights is not None:
        emb = emb * per_sample_weights.reshape(-1, 1)
    if mode == "max":
        return _bag_max(xp, emb, bag_of, keep, b)
    member = (bag_of[None, :] == xp.arange(b)[:, None]) * keep[None, :]
    if mode == "mean":
        cnt = member.sum(axis=1, keepdims=True)
        member = member / xp.maximum(cnt, 1)
    return Tensor._make(member.astype(weight._data.dtype)) @ emb


def _bag_max(xp, emb, bag_of, keep, b):
    d = emb.shape[1]
    rows = xp.zeros((b, d), dtype="int64")
    present = xp.zeros((b, 1), dtype=emb._data.dtype)
    e = emb._data
    for k in range(b):  # bags differ in size; one argmax per bag
        members = xp.nonzero((bag_of == k) & (keep > 0))[0]
        if members.size:
            rows[k] = members[e[members].argmax(axis=0)] * d + xp.arange(d)
            present[k] = 1
    return TakeRows.apply(emb.reshape(-1), rows) * Tensor._make(present)


# --- CTC ----------------------------------------------------------------------------------------------
def _lse(xp, *arrs):
    m = arrs[0]
    for a in arrs[1:]:
        m = xp.maximum(m, a)
    safe = xp.where(xp.isfinite(m), m, 0.0)
    tot = sum(xp.exp(a - safe) for a in arrs)
    with _errstate(xp):
        return xp.where(xp.isfinite(m), safe + xp.log(tot), m)


def _errstate(xp):
    return xp.errstate(divide="ignore", invalid="ignore") if hasattr(xp, "errstate") else contextlib.nullcontext()


class CTCLoss(Function):
    """Per-sample CTC negative log-likelihoods of (T, N, C) log-probabilities (alpha recursion in log space)."""

    _raw = True
    op_name = "ctc_loss"

    @staticmethod
    def forward(ctx, lp, ext, in_len, ext_len, blank, zero_infinity):
        xp = ctx.xp
        t_max, n, _ = lp.shape
        length = ext.shape[1]
        lpe = xp.take_along_axis(lp, xp.broadcast_to(ext[None], (t_max, n, length)), axis=2)  # (T, N, L)
        s = xp.arange(length)
        # skipping a blank is allowed where the label differs from the one two steps back
        skip = xp.zeros((n, length), dtype=bool)
        skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
        valid = s[None, :] < ext_len[:, None]
        ninf = -math.inf
        alpha = xp.full((t_max, n, length), ninf, dtype=lp.dtype)
        alpha[0, :, 0] = lpe[0, :, 0]
        alpha[0, :, 1] = xp.where(ext_len > 1, lpe[0, :, 1], ninf)
        for t in range(1, t_max):
            prev = alpha[t - 1]
            a1 = xp.concatenate([xp.full((n, 1), ninf, lp.dtype), prev[:, :-1]], axis=1)
            a2 = xp.concatenate([xp.full((n, 2), ninf, lp.dtype), prev[:, :-2]], axis=1)
            a2 = xp.where(skip, a2, ninf)
            alpha[t] = xp.where(valid, _lse(xp, prev, a1, a2) + lpe[t], ninf)
        last = alpha[in_len - 1, xp.arange(n)]  # (N, L)
        e = ext_len
        end1 = xp.take_along_axis(last, (e - 1)[:, None], axis=1)[:, 0]
        end2 = xp.where(e > 1, xp.take_along_axis(last, xp.maximum(e - 2, 0)[:, None], axis=1)[:, 0], ninf)
        nll = -_lse(xp, end1, end2)
        ctx.save_for_backward(lp)
        ctx.raw = (ext, in_len, ext_len, skip, valid, alpha, lpe, nll, zero_infinity)
        if zero_infinity:
            nll = xp.where(xp.isfinite(nll), nll, 0.0)
        return nll.astype(lp.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (lp,) = ctx.saved_tensors
        return CTCLossBackward.apply(lp, g, ctx.raw), None, None, None, None, None


class CTCLossBackward(Function):
    """PyTorch's CTC gradient: exp(lp) - sum over label positions of alpha*beta / (p * exp(lp))."""

    _raw = True
    op_name = "ctc_loss_backward"

    @staticmethod
    def forward(ctx, lp, g, raw):
        xp = ctx.xp
        ext, in_len, ext_len, skip, valid, alpha, lpe, nll, zero_infinity = raw
        t_max, n, c = lp.shape
        length = ext.shape[1]
        ninf = -math.inf
        beta = xp.full((t_max, n, length), ninf, dtype=lp.dtype)
        rows = xp.arange(n)
        init = xp.full((n, length), ninf, dtype=lp.dtype)
        skip_next = xp.zeros((n, length), dtype=bool)
        skip_next[:, :-2] = skip[:, 2:]
        for t in range(t_max - 1, -1, -1):
            at_end = in_len - 1 == t
            start = init.copy()
            start[rows, ext_len - 1] = lpe[t, rows, ext_len - 1]
            start[rows, xp.maximum(ext_len - 2, 0)] = xp.where(ext_len > 1, lpe[t, rows, xp.maximum(ext_len - 2, 0)],
                                                              start[rows, xp.maximum(ext_len - 2, 0)])
            if t + 1 < t_max:
                nxt = beta[t + 1]
                b1 = xp.concatenate([nxt[:, 1:], xp.full((n, 1), ninf, lp.dtype)], axis=1)
                b2 = xp.concatenate([nxt[:, 2:], xp.full((n, 2), ninf, lp.dtype)], axis=1)
                b2 = xp.where(skip_next, b2, ninf)
                rec = xp.where(valid, _lse(xp, nxt, b1, b2) + lpe[t], ninf)
            else:
                rec = init
            beta[t] = xp.where(at_end[:, None], start, xp.where((t < in_len - 1)[:, None], rec, ninf))
        with _errstate(xp):
            w = xp.exp(alpha + beta - lpe + nll[None, :, None])
        w = xp.where(xp.isfinite(w), w, 0.0)
        pos = (xp.arange(t_max)[:, None, None] * n + rows[None, :, None]) * c + ext[None]
        occ = xp.bincount(pos.reshape(-1), weights=w.reshape(-1), minlength=t_max * n * c).reshape(t_max, n, c)
        live = (xp.arange(t_max)[:, None] < in_len[None, :])[..., None]
        grad = xp.where(live, xp.exp(lp) - occ, 0.0) * g[None, :, None]
        if zero_infinity:
            grad = xp.where(xp.isfinite(nll)[None, :, None], grad, 0.0)
        return grad.astype(lp.dtype, copy=False)

    @staticmethod
    def backward(ctx, gg):
        raise RuntimeError("derivative for ctc_loss_backward is not implemented (PyTorch does not differentiate "
                           "CTC twice either); call backward without create_graph=True through ctc_loss")


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist Temporal Classification loss of (T, N, C) log-probabilities against label sequences.

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> lp = wb.zeros(2, 1, 2).log_softmax(2)
    >>> round(F.ctc_loss(lp, wb.tensor([[1]]), [2], [1]).item(), 4)
    0.2877
    """
    if _AUTOCAST[0]:
        log_probs, = _autocast_cast("ctc_loss", log_probs)
    _check_reduction(reduction)
    batched = log_probs.ndim == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    t_max, n, c = lp.shape
    xp = _xp(lp)

    def as_array(v):
        d = v._data if isinstance(v, Tensor) else xp.asarray(v)
        return xp.asarray(d).reshape(-1).astype("int64")

    in_len, tgt_len = as_array(input_lengths), as_array(target_lengths)
    if in_len.shape[0] != n or tgt_len.shape[0] != n:
        raise RuntimeError(f"ctc_loss: expected input_lengths and target_lengths of length {n} (the batch), got "
                           f"{in_len.shape[0]} and {tgt_len.shape[0]}")
    if bool((in_len > t_max).any()) or bool((in_len < 1).any()):
        raise RuntimeError(f"ctc_loss: Expected input_lengths to have values in [1, {t_max}]")
    tg = targets._data.astype("int64") if isinstance(targets, Tensor) else xp.asarray(targets).astype("int64")
    s_max = int(tgt_len.max()) if n else 0
    want = n if tg.ndim == 2 else int(tgt_len.sum()) if tg.ndim == 1 else None  # 1-D: the concatenated targets
    if want is not None and tg.shape[0] != want:
        raise RuntimeError(f"Expected tensor to have size {want} at dimension 0, but got size {tg.shape[0]} for "
                           "argument #2 'targets' (while checking arguments for ctc_loss_cpu)")
    padded = tg.ndim == 2 or (not batched and tg.ndim == 1 and n == 1 and tg.shape[0] >= s_max)

    def ctc_targets(tg, in_len, tgt_len):
        # the blank-extended label rows, the lengths, the mean's divisors: one array step (workbench.compile
        # replays it, and checks the rows' width, which follows from the target lengths, where it is read)
        tg, in_len, tgt_len = tg.astype("int64"), in_len.reshape(-1).astype("int64"), tgt_len.reshape(-1).astype("int64")
        s_max = int(tgt_len.max()) if n else 0
        lab = xp.zeros((n, s_max), dtype="int64")
        if padded:
            lab[:, :] = (tg.reshape(n, -1) if tg.ndim == 2 else tg[None])[:, :s_max]
        else:  # concatenated 1-D targets
            starts = xp.concatenate([xp.zeros(1, "int64"), xp.cumsum(tgt_len)[:-1]])
            for k in range(n):
                lab[k, :int(tgt_len[k])] = tg[int(starts[k]):int(starts[k]) + int(tgt_len[k])]
        lab = xp.where(xp.arange(s_max)[None, :] < tgt_len[:, None], lab, blank)
        ext = xp.full((n, 2 * s_max + 1), blank, dtype="int64")
        ext[:, 1::2] = lab
        return ext, in_len, 2 * tgt_len + 1, xp.maximum(tgt_len, 1).astype(lp._data.dtype)
    ctc_targets.value_shaped = True

    def as_tensor(v):
        return v if isinstance(v, Tensor) else creation.tensor(xp.asarray(v))
    ext, in_len_t, ext_len, divisor = array_step(ctc_targets, as_tensor(targets), as_tensor(input_lengths),
                                                 as_tensor(target_lengths))
    nll = CTCLoss.apply(lp, ext._data, in_len_t._data, ext_len._data, blank, zero_infinity)
    if reduction == "mean":
        return (nll / divisor).mean()
    if reduction == "sum":
        return nll.sum()
    return nll if batched else nll.squeeze(0)

__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]
METHODS = {}
