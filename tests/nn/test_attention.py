"""MultiheadAttention and the Transformer layers against PyTorch (dropout 0 for determinism)."""
import numpy as np
import pytest
import torch

import workbench as wb

from _nn_compare import compare


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


MHA_CASES = {
    "self": ({"embed_dim": 8, "num_heads": 2}, "self", {}),
    "batch_first": ({"embed_dim": 8, "num_heads": 4, "batch_first": True}, "self", {}),
    "cross-kdim-vdim": ({"embed_dim": 8, "num_heads": 2, "kdim": 6, "vdim": 5}, "cross", {}),
    "no-bias": ({"embed_dim": 8, "num_heads": 2, "bias": False}, "cross_same", {}),
    "bias_kv-zero_attn": ({"embed_dim": 8, "num_heads": 2, "add_bias_kv": True, "add_zero_attn": True}, "self", {}),
    "per-head-weights": ({"embed_dim": 8, "num_heads": 2}, "self", {"average_attn_weights": False}),
    "no-weights": ({"embed_dim": 8, "num_heads": 2}, "self", {"need_weights": False}),
}


def _mha_inputs(kind, cfg):
    bf = cfg.get("batch_first", False)
    L, S, N, E = 4, 5, 3, cfg["embed_dim"]
    shape = (lambda n, d: (N, n, d)) if bf else (lambda n, d: (n, N, d))
    q = rnd(*shape(L, E))
    if kind == "self":
        return [q, q, q]
    if kind == "cross_same":
        k = rnd(*shape(S, E), seed=1)
        return [q, k, k]
    return [q, rnd(*shape(S, cfg.get("kdim", E)), seed=1), rnd(*shape(S, cfg.get("vdim", E)), seed=2)]


@pytest.mark.parametrize("name", sorted(MHA_CASES))
def test_mha_matches_torch(name, device):
    cfg, kind, kw = MHA_CASES[name]
    inputs = _mha_inputs(kind, cfg)
    compare(lambda nn: nn.MultiheadAttention(**cfg), inputs, kwargs=kw, grad_inputs=kind != "self", device=device)


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_masks_match_torch(need_weights, device):
    L, N, E = 4, 2, 8
    x = rnd(L, N, E)
    causal = np.triu(np.ones((L, L), dtype=bool), 1)
    kpm = np.array([[False, False, False, True], [False, True, False, False]])
    float_mask, float_kpm = rnd(N * 2, L, L, seed=3), rnd(N, L, seed=4)
    for kw in ({"attn_mask": causal}, {"key_padding_mask": kpm}, {"attn_mask": causal, "key_padding_mask": kpm},
               {"attn_mask": float_mask}, {"attn_mask": causal, "is_causal": True}, {"key_padding_mask": float_kpm},
               {"attn_mask": float_mask, "key_padding_mask": float_kpm}):
        compare(lambda nn: nn.MultiheadAttention(E, 2), [x, x, x], kwargs={**kw, "need_weights": need_weights},
                grad_inputs=False, device=device)


def test_mha_unbatched_and_errors(device):
    compare(lambda nn: nn.MultiheadAttention(8, 2), [rnd(4, 8), rnd(5, 8, seed=1), rnd(5, 8, seed=2)], device=device)
    with pytest.raises(AssertionError, match="divisible by num_heads"):
        wb.nn.MultiheadAttention(10, 3)
    m = wb.nn.MultiheadAttention(8, 2)
    x = wb.randn(4, 2, 8)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        m(x, x, x, is_causal=True)
    with pytest.raises(RuntimeError, match="2D attn_mask"):
        m(x, x, x, attn_mask=wb.zeros(3, 3))
    for kw in ({"attn_mask": wb.zeros(4, 4, dtype=wb.int64)}, {"key_padding_mask": wb.zeros(2, 4, dtype=wb.int64)}):
        with pytest.raises(AssertionError, match=f"only bool and floating types of {next(iter(kw))}"):
            m(x, x, x, **kw)


@pytest.mark.parametrize("cfg", [{}, {"norm_first": True}, {"activation": "gelu", "batch_first": True},
                                 {"bias": False}])
def test_encoder_layer_matches_torch(cfg, device):
    x = rnd(2, 5, 8) if cfg.get("batch_first") else rnd(5, 2, 8)
    mask = np.triu(np.full((5, 5), -np.inf), 1)
    compare(lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **cfg), [x], kwargs={"src_mask": mask},
            device=device)


@pytest.mark.parametrize("cfg", [{}, {"norm_first": True, "batch_first": True}])
def test_decoder_layer_matches_torch(cfg, device):
    bf = cfg.get("batch_first")
    tgt = rnd(2, 4, 8) if bf else rnd(4, 2, 8)
    mem = rnd(2, 6, 8, seed=1) if bf else rnd(6, 2, 8, seed=1)
    kw = {"tgt_mask": np.triu(np.full((4, 4), -np.inf), 1),
          "memory_key_padding_mask": np.array([[False] * 5 + [True], [False] * 6])}
    compare(lambda nn: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, **cfg), [tgt, mem], kwargs=kw, device=device)


def test_encoder_decoder_stacks_and_transformer(device):
    def enc(nn):
        return nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2, norm=nn.LayerNorm(8),
                                     enable_nested_tensor=False)

    compare(enc, [rnd(5, 2, 8)], kwargs={"src_key_padding_mask": np.array([[False] * 4 + [True], [False] * 5])},
            device=device)

    def dec(nn):
        return nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 2)

    compare(dec, [rnd(4, 2, 8), rnd(5, 2, 8, seed=1)], device=device)

    def full(nn):
        return nn.Transformer(8, 2, 1, 1, 16, dropout=0.0)

    compare(full, [rnd(5, 2, 8), rnd(4, 2, 8, seed=1)],
            kwargs={"tgt_mask": wb.nn.Transformer.generate_square_subsequent_mask(4).numpy().astype(np.float64)},
            device=device)
    np.testing.assert_array_equal(wb.nn.Transformer.generate_square_subsequent_mask(3).numpy(),
                                  torch.nn.Transformer.generate_square_subsequent_mask(3).numpy())


def test_encoder_layers_are_independent_copies():
    layer = wb.nn.TransformerEncoderLayer(8, 2, 16)
    enc = wb.nn.TransformerEncoder(layer, 3)
    ws = [m.linear1.weight for m in enc.layers]
    assert len({id(w) for w in ws}) == 3
    np.testing.assert_array_equal(ws[0].detach().numpy(), ws[1].detach().numpy())
    assert [n for n, _ in enc.named_modules()][:4] == ["", "layers", "layers.0", "layers.0.self_attn"]
