"""scaled_dot_product_attention as one fused primitive.

Forward: scores = q @ k^T * scale (+ additive mask), p = softmax(scores) (the kernels' softmax),
optional dropout, out = p @ v. Backward is written in Tensor ops: it reuses the saved p for first
derivatives and recomputes p from q and k under ``create_graph=True``, so higher derivatives are exact.
"""
import math

from .. import _backend
from .._backend import kernels as _k
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from ..tensor import Tensor
from .activation import Softmax, SoftmaxBackward, _uniform


class Attention(Function):
    _raw = True
    op_name = "scaled_dot_product_attention"

    @staticmethod
    def forward(ctx, q, k, v, bias, scale, keep):
        xp = ctx.xp
        s = q @ xp.swapaxes(k, -1, -2)
        s *= scale
        if bias is not None:
            s = s + bias
        p = _k.softmax(xp, s)
        pd = p * keep if keep is not None else p
        ctx.scale = scale
        ctx.save_for_backward(q, k, v, bias, p, keep)
        return (pd @ v).astype(q.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        q, k, v, bias, p, keep = ctx.saved_tensors
        scale = ctx.scale
        if STATE.enabled:  # create_graph: p as a function of q, k (and a learnable mask)
            s = (q @ k.transpose(-1, -2)) * scale
            if bias is not None:
                s = s + bias
            p = Softmax.apply(s, s.ndim - 1, False)
        pd = p * keep if keep is not None else p
        nig = ctx.needs_input_grad
        dv = pd.transpose(-1, -2) @ g if nig[2] else None
        dq = dk = db = None
        if nig[0] or nig[1] or nig[3]:
            dp = g @ v.transpose(-1, -2)
            if keep is not None:
                dp = dp * keep
            ds = SoftmaxBackward.apply(p, dp, p.ndim - 1, False)
            db = ds if nig[3] else None
            ds = ds * scale
            dq = ds @ k if nig[0] else None
            dk = ds.transpose(-1, -2) @ q if nig[1] else None
        return dq, dk, dv, db, None, None


def _neg_inf_where_false(mask, dtype):
    xp = _backend.xp_of(mask)
    return xp.where(mask, 0.0, -math.inf).astype(dtype)


def _repeat_heads(t, r):
    if r == 1:
        return t
    shape = tuple(t.shape)
    return t.unsqueeze(-3).expand(shape[:-2] + (r,) + shape[-2:]).reshape(shape[:-3] + (shape[-3] * r,) + shape[-2:])


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value, with optional causal mask and dropout.

    attn_mask: bool (True = attend) or float (added to the scores), broadcast to (..., L, S).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> q = wb.ones(1, 2, 3, 4)
    >>> F.scaled_dot_product_attention(q, q, q, is_causal=True).shape
    workbench.Size([1, 2, 3, 4])
    """
    op = "scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
        if t.ndim < 2:
            raise RuntimeError(f"{op}: expected {name} to have at least 2 dims (..., L, E), got {list(t.shape)}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"{op}: shape mismatch: query {list(query.shape)}, key {list(key.shape)}, value "
                           f"{list(value.shape)}; expected query (..., L, E), key (..., S, E), value (..., S, Ev)")
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(f"{op}: Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype} instead.")
    if is_causal and attn_mask is not None:
        raise RuntimeError(f"{op}: _scaled_dot_product_attention: Explicit attn_mask should not be set when "
                           "is_causal=True")
    if enable_gqa and query.ndim >= 3:
        hq, hk = query.shape[-3], key.shape[-3]
        if hq % hk or value.shape[-3] != hk:
            raise RuntimeError(f"{op}: with enable_gqa the number of query heads ({hq}) must be a multiple of the "
                               f"key/value heads ({hk}, {value.shape[-3]})")
        key, value = _repeat_heads(key, hq // hk), _repeat_heads(value, hq // hk)
    L, S = query.shape[-2], key.shape[-2]
    dt = query._data.dtype
    xp = _backend.xp_of(query._data)
    bias = None
    if is_causal:
        bias = Tensor._make(_neg_inf_where_false(xp.tril(xp.ones((L, S), dtype=bool)), dt))
    elif attn_mask is not None:
        if attn_mask.dtype == _bool_dtype():
            bias = Tensor._make(_neg_inf_where_false(attn_mask._data, dt))
        else:
            bias = attn_mask if attn_mask._data.dtype == dt else attn_mask.to(query.dtype)
    sc = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    keep = None
    if dropout_p > 0.0:
        if dropout_p >= 1.0:
            keep = xp.zeros(tuple(query.shape[:-2]) + (L, S), dtype=dt)
        else:
            shape = tuple(_broadcast(query.shape[:-2], key.shape[:-2])) + (L, S)
            keep = ((_uniform(query, shape) >= dropout_p) / (1.0 - dropout_p)).astype(dt)
    return Attention.apply(query, key, value, bias, sc, keep)


def _bool_dtype():
    from .._backend.dtypes import bool_

    return bool_


def _broadcast(a, b):
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    return tuple(max(x, y) for x, y in zip(a, b))


__all__ = []
METHODS = {}
