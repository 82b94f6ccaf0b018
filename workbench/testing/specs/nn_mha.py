"""Spec of multi_head_attention_forward (workbench.nn.functional), ``F.multi_head_attention_forward``.

The NumPy reference projects query, key and value, appends bias_k/bias_v and a zero key/value
(add_zero_attn), splits E into heads, adds the masks (bool: True is -inf; a float mask as it is, and it is
differentiated; key_padding_mask per key), softmaxes, and projects the heads' outputs back; the weights are
averaged over heads or kept per head.
dropout_p is 0 (dropout has no NumPy reference).
"""
import math

import numpy as np

import workbench.nn.functional as F
from workbench.testing.op_specs import Sample, arr, spec

TENSORS = ("in_proj_weight", "in_proj_bias", "out_proj_weight", "out_proj_bias")


def _add(m):
    return np.where(m, -np.inf, 0.0) if m.dtype == bool else m


def np_mha(q, k, v, e, h, in_proj_weight=None, in_proj_bias=None, bias_k=None, bias_v=None, add_zero_attn=False,
           out_proj_weight=None, out_proj_bias=None, key_padding_mask=None, need_weights=True, attn_mask=None,
           average_attn_weights=True, q_proj_weight=None, k_proj_weight=None, v_proj_weight=None, **_):
    batched = q.ndim == 3
    if not batched:
        q, k, v = q[:, None], k[:, None], v[:, None]
        key_padding_mask = None if key_padding_mask is None else key_padding_mask[None]
    L, n, _ = q.shape
    d = e // h
    ws = np.split(in_proj_weight, 3) if q_proj_weight is None else (q_proj_weight, k_proj_weight, v_proj_weight)
    bs = np.split(in_proj_bias, 3) if in_proj_bias is not None else (0, 0, 0)
    Q, K, V = (x @ w.T + b for x, w, b in zip((q, k, v), ws, bs))
    bias = 0.0 if attn_mask is None else _add(attn_mask)
    kpm = None if key_padding_mask is None else _add(key_padding_mask).astype(q.dtype)
    extra = 0
    if bias_k is not None:
        K = np.concatenate([K, np.broadcast_to(bias_k.reshape(1, 1, e), (1, n, e))])
        V = np.concatenate([V, np.broadcast_to(bias_v.reshape(1, 1, e), (1, n, e))])
        extra += 1
    heads = lambda x: x.reshape(x.shape[0], n, h, d).transpose(1, 2, 0, 3)  # (N, H, S, D)
    Qh, Kh, Vh = heads(Q), heads(K), heads(V)
    if add_zero_attn:
        Kh = np.concatenate([Kh, np.zeros_like(Kh[:, :, :1])], 2)
        Vh = np.concatenate([Vh, np.zeros_like(Vh[:, :, :1])], 2)
        extra += 1
    s = Qh @ Kh.transpose(0, 1, 3, 2) / math.sqrt(d)
    if attn_mask is not None:
        bias = np.pad(bias, [(0, 0)] * (bias.ndim - 1) + [(0, extra)])
        s = s + (bias if bias.ndim == 2 else bias.reshape(n, h, L, -1))
    if kpm is not None:
        s = s + np.pad(kpm, ((0, 0), (0, extra)))[:, None, None, :]
    p = np.exp(s - s.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    out = (p @ Vh).transpose(2, 0, 1, 3).reshape(L, n, e) @ out_proj_weight.T
    out = out + (out_proj_bias if out_proj_bias is not None else 0)
    w = p.mean(1) if average_attn_weights else p
    if not batched:
        out, w = out[:, 0], w[0]
    return (out, w) if need_weights else out


def _mha(lib):
    def op(q, k, v, *tensors, names=TENSORS, num_heads=2, **kw):
        if lib == 0:
            f = F.multi_head_attention_forward
        else:
            import torch.nn.functional as TF

            f = TF.multi_head_attention_forward
        kw = {"bias_k": None, "bias_v": None, "add_zero_attn": False, "in_proj_bias": None, "in_proj_weight": None,
              "out_proj_bias": None,
              **dict(zip(names, tensors)), **kw}
        out, w = f(q, k, v, q.shape[-1], num_heads, kw.pop("in_proj_weight"), kw.pop("in_proj_bias"),
                   kw.pop("bias_k"), kw.pop("bias_v"), kw.pop("add_zero_attn"), 0.0, kw.pop("out_proj_weight"),
                   kw.pop("out_proj_bias"), **kw)
        return out if w is None else (out, w)

    return op


def _np(q, k, v, *tensors, names=TENSORS, num_heads=2, **kw):
    return np_mha(q, k, v, q.shape[-1], num_heads, **dict(zip(names, tensors)), **kw)


E = 4
QKV = [arr(3, 2, E), arr(5, 2, E, seed=1), arr(5, 2, E, seed=2)]
PROJ = [arr(3 * E, E, low=-1, high=1, seed=3), arr(3 * E, seed=4), arr(E, E, low=-1, high=1, seed=5),
        arr(E, seed=6)]
KPM = np.array([[False, False, True, False, False], [False, True, False, False, True]])
AM = np.triu(np.ones((3, 5), bool), 3)
SEP = ("q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "out_proj_weight", "out_proj_bias")
spec("F.multi_head_attention_forward", _mha(0), _np, [
    Sample(QKV + PROJ),
    Sample(QKV + PROJ, {"average_attn_weights": False}),
    Sample(QKV + PROJ, {"need_weights": False}),
    Sample(QKV + PROJ[:1] + PROJ[2:3], {"names": ("in_proj_weight", "out_proj_weight"), "num_heads": 1}),
    Sample(QKV + PROJ + [KPM], {"names": TENSORS + ("key_padding_mask",)}),
    Sample(QKV + PROJ + [AM, KPM], {"names": TENSORS + ("attn_mask", "key_padding_mask"), "need_weights": False}),
    Sample(QKV + PROJ + [arr(3, 5, seed=7)], {"names": TENSORS + ("attn_mask",)}),
    Sample(QKV + PROJ + [arr(4, 3, 5, seed=8)], {"names": TENSORS + ("attn_mask",), "average_attn_weights": False}),
    Sample(QKV + PROJ + [arr(E, seed=9), arr(E, seed=10), AM],
           {"names": TENSORS + ("bias_k", "bias_v", "attn_mask")}),
    Sample(QKV + PROJ + [KPM], {"names": TENSORS + ("key_padding_mask",), "add_zero_attn": True}),
    Sample(QKV + [arr(E, E, seed=11), arr(E, E, seed=12), arr(E, E, seed=13), PROJ[1], PROJ[2], PROJ[3]],
           {"names": SEP, "use_separate_proj_weight": True}),
    Sample([x[:, 0] for x in QKV] + PROJ + [KPM[1]], {"names": TENSORS + ("key_padding_mask",)}),
    # float key_padding_masks are added to the scores (and differentiated), alone, with a float attn_mask, both
    # padded for bias_k/bias_v and add_zero_attn, and on the need_weights=False path with a per-head attn_mask
    Sample(QKV + PROJ + [arr(2, 5, seed=14)], {"names": TENSORS + ("key_padding_mask",),
                                               "average_attn_weights": False}),
    Sample(QKV + PROJ + [arr(E, seed=9), arr(E, seed=10), arr(3, 5, seed=15), arr(2, 5, seed=16)],
           {"names": TENSORS + ("bias_k", "bias_v", "attn_mask", "key_padding_mask"), "add_zero_attn": True}),
    Sample(QKV + PROJ + [arr(4, 3, 5, seed=17), arr(2, 5, seed=18)],
           {"names": TENSORS + ("attn_mask", "key_padding_mask"), "need_weights": False}),
], torch_op=_mha(1), rtol=1e-7, atol=1e-9)
