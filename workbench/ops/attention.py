"""scaled_dot_product_attention as one fused primitive.

Forward: scores = q @ k^T * scale (+ additive mask), p = softmax(scores) (the kernels' softmax),
optional dropout, out = p @ v. Backward is written in Tensor ops: it reuses the saved p for first
derivatives and recomputes p from q and k under ``create_graph=True``, so higher derivatives are exact.
"""
import math

from .. import _backend
from .._backend import kernels as _k
from .._backend.dtypes import bool_, float32
from .._broadcast import infer_size
from ..autograd.function import Function
from ..autograd.grad_mode import STATE
from .activation import Softmax, SoftmaxBackward, dropout, softmax
from .join import cat
from .linear import linear
from .pad import pad
from .._core import Tensor
from ._autocast import AUTOCAST as _AUTOCAST
from ._autocast import cast as _autocast_cast
from ._util import array_step, gemm, _uniform_array


class Attention(Function):
    _raw = True
    op_name = "scaled_dot_product_attention"

    @staticmethod
    def forward(ctx, q, k, v, bias, scale, keep):
        xp = ctx.xp
        s = gemm(q, xp.swapaxes(k, -1, -2))
        s *= scale
        if bias is not None:
            s += bias  # in place, as PyTorch's: a mask may not grow the scores
        p = _k.softmax(xp, s)
        pd = p * keep if keep is not None else p
        ctx.scale = scale
        ctx.save_for_backward(q, k, v, bias, p, keep)
        return gemm(pd, v).astype(q.dtype, copy=False)

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
    if _AUTOCAST[0]:
        query, key, value, attn_mask = _autocast_cast("scaled_dot_product_attention", query, key, value, attn_mask)
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
        bias = array_step(lambda: _neg_inf_where_false(xp.tril(xp.ones((L, S), dtype=bool)), dt))
    elif attn_mask is not None:
        if attn_mask.dtype == _bool_dtype():
            bias = array_step(lambda m: _neg_inf_where_false(m, dt), attn_mask)
        else:
            bias = attn_mask if attn_mask._data.dtype == dt else attn_mask.to(query.dtype)
    sc = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    keep = None
    if dropout_p > 0.0:
        if dropout_p >= 1.0:
            keep = array_step(lambda: xp.zeros(tuple(query.shape[:-2]) + (L, S), dtype=dt))
        else:  # drawn inside one primitive, so a compiled replay draws again
            shape = infer_size([query.shape[:-2], key.shape[:-2]]) + (L, S)
            keep = array_step(lambda q: ((_uniform_array(q, shape) >= dropout_p) / (1.0 - dropout_p)).astype(dt),
                              query)
    try:
        return Attention.apply(query, key, value, bias, sc, keep)
    except RuntimeError:
        _raise_shape_error(query, key, value, bias)
        raise


def _raise_shape_error(query, key, value, bias):
    """PyTorch's broadcast error for operands that do not fit, in its order (the fused primitive meets them
    all at once): query's batch dims against key's (q @ k^T), those against value's (p @ v), the scores'
    shape against the mask's, which is added to the scores in place and so may not grow them."""
    batch = infer_size([query.shape[:-2], key.shape[:-2]])
    infer_size([batch, value.shape[:-2]])
    if bias is not None:
        scores = batch + (query.shape[-2], key.shape[-2])
        grown = infer_size([scores, bias.shape])
        if grown != scores:
            raise RuntimeError(f"output with shape {list(scores)} doesn't match the broadcast shape {list(grown)}")


def _bool_dtype():
    return bool_



def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """Multi-head attention on (L, N, E) (or unbatched (L, E)) inputs, as nn.MultiheadAttention computes it.

    Returns (output, attention weights averaged over heads, or per head, or None).

    >>> import workbench as wb
    >>> import workbench.nn.functional as F
    >>> x = wb.ones(3, 1, 4)
    >>> out, w = F.multi_head_attention_forward(x, x, x, 4, 2, wb.ones(12, 4), None, None, None, False, 0.0,
    ...                                         wb.ones(4, 4), None)
    >>> out.shape, w.shape
    (workbench.Size([3, 1, 4]), workbench.Size([1, 3, 3]))
    """

    batched = query.ndim == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        bq = bk = bv = None
        if in_proj_bias is not None:
            bq, bk, bv = in_proj_bias[:embed_dim], in_proj_bias[embed_dim:2 * embed_dim], in_proj_bias[2 * embed_dim:]
        q, k, v = linear(query, q_proj_weight, bq), linear(key, k_proj_weight, bk), linear(value, v_proj_weight, bv)
    else:
        w = in_proj_weight
        b = in_proj_bias
        e = embed_dim
        q = linear(query, w[:e], b[:e] if b is not None else None)
        k = linear(key, w[e:2 * e], b[e:2 * e] if b is not None else None)
        v = linear(value, w[2 * e:], b[2 * e:] if b is not None else None)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if attn_mask is not None and attn_mask.ndim == 2:
        attn_mask = attn_mask.unsqueeze(0)
    if bias_k is not None and bias_v is not None:
        k = cat([k, bias_k.reshape(1, 1, embed_dim).expand(1, bsz, embed_dim)])
        v = cat([v, bias_v.reshape(1, 1, embed_dim).expand(1, bsz, embed_dim)])
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    # (L, N, E) -> (N * H, L, Dh)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = (static_k if static_k is not None else k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1))
    v = (static_v if static_v is not None else v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1))
    if add_zero_attn:
        k = cat([k, k[:, :1] * 0], 1)
        v = cat([v, v[:, :1] * 0], 1)
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.shape[1]
    mask = _merge_masks(attn_mask, key_padding_mask, bsz, num_heads, tgt_len, src_len, q)
    if not training:
        dropout_p = 0.0
    scores = (q * (1.0 / math.sqrt(head_dim))) @ k.transpose(1, 2)
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, -1)
    if dropout_p > 0.0:
        weights_d = dropout(weights, dropout_p)
    else:
        weights_d = weights
    out = (weights_d @ v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    attn = None
    if need_weights:
        attn = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            attn = attn.mean(1)
        if not batched:
            attn = attn.squeeze(0)
    if not batched:
        out = out.squeeze(1)
    return out, attn


def _pad_last(mask):
    if mask is None:
        return None
    if mask.dtype == _bool_dtype():
        return pad(mask.to(_f32()), (0, 1)).to(_bool_dtype())
    return pad(mask, (0, 1))


def _f32():
    return float32


def _merge_masks(attn_mask, key_padding_mask, bsz, num_heads, tgt_len, src_len, q):
    """Both masks as one additive float mask of shape (N * H, L, S) (or broadcastable), or None. A bool mask
    becomes -inf where True (no gradient); a float mask is added as it is, and differentiated, as in PyTorch."""
    xp = _backend.xp_of(q._data)
    dt = q._data.dtype
    out = None
    for name, m in (("attn_mask", attn_mask), ("key_padding_mask", key_padding_mask)):
        if m is not None and m.dtype != _bool_dtype() and not m.is_floating_point():
            raise AssertionError(f"only bool and floating types of {name} are supported, got {m.dtype}")
    if attn_mask is not None:
        if attn_mask.dtype == _bool_dtype():
            out = array_step(lambda m: xp.where(m, -math.inf, 0.0).astype(dt), attn_mask)
        else:
            out = attn_mask.to(q.dtype)
    if key_padding_mask is not None:
        if key_padding_mask.dtype == _bool_dtype():
            kpm = array_step(lambda m: xp.where(m, -math.inf, 0.0).astype(dt), key_padding_mask)
        else:
            kpm = key_padding_mask.to(q.dtype)
        # one row of S per batch entry, the same for each of its heads: (N, S) -> (N * H, 1, S)
        kpm = kpm.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len).reshape(bsz * num_heads, 1, src_len)
        out = kpm if out is None else out + kpm
    return out

__all__ = []
METHODS = {}
