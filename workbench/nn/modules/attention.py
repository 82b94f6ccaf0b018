"""MultiheadAttention, with PyTorch's parameters, masks and options.

need_weights=True computes softmax(q k^T / sqrt(d) + mask) explicitly so the weights can be returned;
need_weights=False goes through the fused F.scaled_dot_product_attention.
"""
from ... import _backend, creation, ops
from ..._array_step import array_step
from ...tensor import Tensor
from .. import init
from .. import functional as F
from ..module import Module
from ..parameter import Parameter
from .linear import Linear


def _ops():
    return ops


class NonDynamicallyQuantizableLinear(Linear):
    """The Linear used as MultiheadAttention.out_proj (named as in PyTorch, so reprs match).

    >>> import workbench as wb
    >>> wb.nn.MultiheadAttention(8, 2).out_proj
    NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)
    """


def _float_mask(mask, dtype, what):
    """A bool mask (True = masked out) becomes an additive float mask of -inf/0; float masks pass."""
    if mask is None:
        return None
    if mask.dtype.is_floating_point:
        return mask
    if mask.dtype.name != "bool":
        raise AssertionError(f"only bool and floating types of {what} are supported")
    xp = _backend.xp_of(mask._data)
    return array_step(lambda m: xp.where(m, xp.asarray(-xp.inf, dtype=dtype.np), xp.asarray(0, dtype=dtype.np)), mask)


def _pad_last(t, value=0.0):
    if t is None:
        return None
    ops = _ops()
    pad = creation.full(tuple(t.shape[:-1]) + (1,), value, dtype=t.dtype, device=t.device)
    return ops.cat([t, pad], -1)


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads: out = concat(head_i) W_o, head_i = softmax(q_i k_i^T / sqrt(d)) v_i.

    Inputs are (L, N, E) or, with batch_first=True, (N, L, E); unbatched (L, E) works too. Returns
    ``(attn_output, attn_weights)``; the weights are averaged over heads unless
    average_attn_weights=False, and None when need_weights=False.

    >>> import workbench as wb
    >>> mha = wb.nn.MultiheadAttention(16, 4, batch_first=True)
    >>> x = wb.randn(2, 5, 16)
    >>> out, w = mha(x, x, x)
    >>> out.shape, w.shape
    (workbench.Size([2, 5, 16]), workbench.Size([2, 5, 5]))
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(creation.empty((embed_dim, embed_dim), **fk))
            self.k_proj_weight = Parameter(creation.empty((embed_dim, self.kdim), **fk))
            self.v_proj_weight = Parameter(creation.empty((embed_dim, self.vdim), **fk))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(creation.empty((3 * embed_dim, embed_dim), **fk))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(creation.empty(3 * embed_dim, **fk))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **fk)
        if add_bias_kv:
            self.bias_k = Parameter(creation.empty((1, 1, embed_dim), **fk))
            self.bias_v = Parameter(creation.empty((1, 1, embed_dim), **fk))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def _project(self, query, key, value):
        E = self.embed_dim
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else (b[:E], b[E:2 * E], b[2 * E:])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            if query is key and key is value:
                qkv = F.linear(query, w, b)
                return qkv[..., :E], qkv[..., E:2 * E], qkv[..., 2 * E:]
            return F.linear(query, w[:E], bq), F.linear(key, w[E:2 * E], bk), F.linear(value, w[2 * E:], bv)
        return (F.linear(query, self.q_proj_weight, bq), F.linear(key, self.k_proj_weight, bk),
                F.linear(value, self.v_proj_weight, bv))

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        ops = _ops()
        if query.dim() not in (2, 3):
            raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D "
                                 "query tensor")
        batched = query.dim() == 3
        # work batch-major, (N, L, E), keeping q is k is v (self-attention projects once): heads are then
        # a reshape and a transpose away, and batch_first input needs no copy at all
        query, key, value = _batch_major(query, key, value, batched, self.batch_first)
        if not batched and key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
        N, L, E = query.shape
        if E != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but got {E}")
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                               "method `generate_square_subsequent_mask` to create this mask.")
        H, hd = self.num_heads, self.head_dim
        dt = query.dtype
        q, k, v = self._project(query, key, value)
        S = k.shape[1]
        attn_mask = _float_mask(attn_mask, dt, "attn_mask")
        key_padding_mask = _float_mask(key_padding_mask, dt, "key_padding_mask")
        if attn_mask is not None:
            if attn_mask.dim() == 2:
                if tuple(attn_mask.shape) != (L, S):
                    raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                       f"{(L, S)}.")
            elif attn_mask.dim() == 3:
                if tuple(attn_mask.shape) != (N * H, L, S):
                    raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                       f"{(N * H, L, S)}.")
            else:
                raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
        if self.bias_k is not None:
            k = ops.cat([k, self.bias_k.expand(N, 1, E)], 1)
            v = ops.cat([v, self.bias_v.expand(N, 1, E)], 1)
            attn_mask = _pad_last(attn_mask)
            key_padding_mask = _pad_last(key_padding_mask)
            S += 1
        q = q.reshape((N, L, H, hd)).transpose(1, 2)
        k = k.reshape((N, S, H, hd)).transpose(1, 2)
        v = v.reshape((N, S, H, hd)).transpose(1, 2)
        if self.add_zero_attn:
            z = creation.zeros((N, H, 1, hd), dtype=dt, device=q.device)
            k = ops.cat([k, z], 2)
            v = ops.cat([v, z], 2)
            attn_mask = _pad_last(attn_mask)
            key_padding_mask = _pad_last(key_padding_mask)
            S += 1
        if attn_mask is not None:  # (L, S) or (N*H, L, S) -> broadcastable against (N, H, L, S)
            attn_mask = attn_mask.reshape((N, H, L, S)) if attn_mask.dim() == 3 else attn_mask.reshape((1, 1, L, S))
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (N, S):
                raise AssertionError(f"expecting key_padding_mask shape of {(N, S)}, but got "
                                     f"{tuple(key_padding_mask.shape)}")
            kpm = key_padding_mask.reshape((N, 1, 1, S))
            attn_mask = kpm if attn_mask is None else attn_mask + kpm
        p = self.dropout if self.training else 0.0
        w = None
        if need_weights:
            scores = (q * (1.0 / hd) ** 0.5).matmul(k.transpose(-2, -1))
            if attn_mask is not None:
                scores = scores + attn_mask
            w = F.softmax(scores, dim=-1)
            out = (F.dropout(w, p=p) if p > 0.0 else w).matmul(v)
            if average_attn_weights:
                w = w.mean(1)
            if not batched:
                w = w.squeeze(0)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask, p)
        out = self.out_proj(out.transpose(1, 2).reshape((N, L, E)))
        if not batched:
            return out.squeeze(0), w
        return (out if self.batch_first else out.transpose(0, 1)), w


def _batch_major(query, key, value, batched, batch_first):
    if not batched:
        return query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
    if batch_first:
        return query, key, value
    if key is value:
        if query is key:
            query = key = value = query.transpose(0, 1)
            return query, key, value
        query, key = query.transpose(0, 1), key.transpose(0, 1)
        return query, key, key
    return query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
