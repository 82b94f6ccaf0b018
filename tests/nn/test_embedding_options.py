"""F.embedding_bag's (and F.embedding's) max_norm and scale_grad_by_freq against PyTorch 2.13 CPU.

max_norm rescales, in place and without gradient, the rows of weight that the input references and whose
norm_type-norm exceeds max_norm: the output, the rescaled weight and weight.grad must all be PyTorch's.

scale_grad_by_freq divides each row's gradient by how often its index occurs in the input. PyTorch 2.13's
CPU embedding_bag divides by the wrong count where counts differ (pytorch/pytorch#190063: it reads the
counts at the unique-group number instead of the index); its F.embedding, its CUDA kernel and its docs
divide by the index's own count, and so does workbench. The reference there is PyTorch's F.embedding with
scale_grad_by_freq, reduced bag by bag with PyTorch ops; where every index occurs equally often (where the
bug does not bite) it is PyTorch's embedding_bag itself.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import workbench as wb
import workbench.nn.functional as F

W = np.random.default_rng(0).uniform(-2, 2, (6, 3))
I2 = np.array([[0, 2, 2], [5, 1, 1], [3, 3, 0]])  # index 5 once, the others twice
I1 = np.array([0, 2, 2, 5, 1, 4, 3, 5, 2])
OFF = np.array([0, 3, 3, 5])  # bags [0, 3), [3, 3) (empty), [3, 5), [5, 9)
INPUTS = {"2d": (I2, None), "offsets": (I1, OFF)}


def _run(lib, device, idx, offsets, psw, grad_seed=1, **kw):
    """(output, weight after the call, weight.grad) of embedding_bag in workbench (on device) or PyTorch."""
    if lib == "torch":
        w = torch.tensor(W, requires_grad=True)
        extra = {"offsets": None if offsets is None else torch.tensor(offsets),
                 "per_sample_weights": None if psw is None else torch.tensor(psw)}
        out = TF.embedding_bag(torch.tensor(idx), w, **extra, **kw)
    else:
        w = wb.tensor(W, device=device, requires_grad=True)
        extra = {"offsets": None if offsets is None else wb.tensor(offsets, device=device),
                 "per_sample_weights": None if psw is None else wb.tensor(psw, device=device)}
        out = F.embedding_bag(wb.tensor(idx, device=device), w, **extra, **kw)
    g = np.random.default_rng(grad_seed).standard_normal(tuple(out.shape))
    out.backward(torch.tensor(g) if lib == "torch" else wb.tensor(g, device=device))
    return [t.detach().cpu().numpy() for t in (out, w, w.grad)]


def _bags_by_embedding(idx, offsets, psw, mode, padding_idx=None, **kw):
    """PyTorch's F.embedding (whose scale_grad_by_freq divides by the right count), then each bag's sum or mean
    over its entries other than padding_idx (an empty bag is zeros): (output, weight after, weight.grad)."""
    w = torch.tensor(W, requires_grad=True)
    flat = idx.reshape(-1)
    emb = TF.embedding(torch.tensor(flat), w, padding_idx=padding_idx, **kw)
    if psw is not None:
        emb = emb * torch.tensor(psw.reshape(-1, 1))
    if offsets is None:
        bags = [range(b * idx.shape[1], (b + 1) * idx.shape[1]) for b in range(idx.shape[0])]
    else:
        bags = [range(s, e) for s, e in zip(offsets, list(offsets[1:]) + [len(flat)])]
    rows = []
    for members in bags:
        live = [j for j in members if padding_idx is None or flat[j] != padding_idx]
        rows.append(getattr(emb[live], mode)(0) if live else torch.zeros(W.shape[1], dtype=w.dtype))
    out = torch.stack(rows)
    out.backward(torch.tensor(np.random.default_rng(1).standard_normal(tuple(out.shape))))
    return [t.detach().numpy() for t in (out, w, w.grad)]


def _assert_same(got, want, what):
    for name, g, w in zip(("output", "weight after the call", "weight.grad"), got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=f"{what}: {name}")


@pytest.mark.parametrize("inputs", sorted(INPUTS))
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("norm_type", [2, 1, 3.5, float("inf")])
def test_max_norm_matches_torch(inputs, mode, norm_type, device):
    idx, offsets = INPUTS[inputs]
    for kw in ({}, {"padding_idx": 2}):
        what = f"embedding_bag({inputs}, mode={mode}, max_norm=1, norm_type={norm_type}, {kw}) on {device}"
        want = _run("torch", None, idx, offsets, None, mode=mode, max_norm=1.0, norm_type=norm_type, **kw)
        assert not np.allclose(want[1], W), "max_norm=1 should rescale some rows of this weight"
        _assert_same(_run("wb", device, idx, offsets, None, mode=mode, max_norm=1.0, norm_type=norm_type, **kw),
                     want, what)
    psw = np.random.default_rng(2).uniform(0.2, 1.5, idx.shape)
    if mode == "sum":
        _assert_same(_run("wb", device, idx, offsets, psw, mode=mode, max_norm=0.8, norm_type=norm_type),
                     _run("torch", None, idx, offsets, psw, mode=mode, max_norm=0.8, norm_type=norm_type),
                     f"embedding_bag({inputs}, per_sample_weights, max_norm=0.8, norm_type={norm_type}) on {device}")


@pytest.mark.parametrize("norm_type", [2, 1, 3.5, float("inf"), float("-inf"), 0])
def test_embedding_max_norm_matches_torch(norm_type, device):
    idx = np.array([[0, 2, 2, 5], [1, 4, 3, 5]])
    res = []
    for T, f, dev in ((torch, TF, "cpu"), (wb, F, device)):
        w = T.tensor(W, requires_grad=True) if T is torch else wb.tensor(W, device=dev, requires_grad=True)
        out = f.embedding(T.tensor(idx) if T is torch else wb.tensor(idx, device=dev), w, max_norm=1.0,
                          norm_type=norm_type)
        g = np.random.default_rng(1).standard_normal(tuple(out.shape))
        out.backward(torch.tensor(g) if T is torch else wb.tensor(g, device=dev))
        res.append([t.detach().cpu().numpy() for t in (out, w, w.grad)])
    _assert_same(res[1], res[0], f"embedding(max_norm=1, norm_type={norm_type}) on {device}")


@pytest.mark.parametrize("inputs", sorted(INPUTS))
@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_scale_grad_by_freq_divides_by_each_index_count(inputs, mode, device):
    idx, offsets = INPUTS[inputs]
    psw = np.random.default_rng(2).uniform(0.2, 1.5, idx.shape) if mode == "sum" else None
    for kw in ({}, {"padding_idx": 2}, {"max_norm": 1.0}):
        for p in (None, psw):
            what = f"embedding_bag({inputs}, mode={mode}, scale_grad_by_freq, {kw}, psw={p is not None}) on {device}"
            got = _run("wb", device, idx, offsets, p, mode=mode, scale_grad_by_freq=True, **kw)
            _assert_same(got, _bags_by_embedding(idx, offsets, p, mode, scale_grad_by_freq=True, **kw), what)
    # the gradient really is scaled: index 2 occurs n times (2 or 3), so its row gets 1/n of the unscaled one
    plain = _run("wb", device, idx, offsets, None, mode=mode)
    scaled = _run("wb", device, idx, offsets, None, mode=mode, scale_grad_by_freq=True)
    np.testing.assert_allclose(scaled[2][2], plain[2][2] / (idx == 2).sum(), rtol=1e-12)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_scale_grad_by_freq_matches_torch_bag_where_counts_agree(mode, device):
    idx = np.array([[0, 2, 4], [4, 2, 0]])  # every index twice: PyTorch 2.13's embedding_bag is right here
    _assert_same(_run("wb", device, idx, None, None, mode=mode, scale_grad_by_freq=True),
                 _run("torch", None, idx, None, None, mode=mode, scale_grad_by_freq=True),
                 f"embedding_bag(mode={mode}, scale_grad_by_freq) on {device}")


def test_scale_grad_by_freq_refused_in_max_mode():
    for lib, f in ((torch, TF), (wb, F)):
        with pytest.raises(ValueError, match="max mode does not support scaling the gradient by the frequency"):
            f.embedding_bag(lib.tensor(I2), lib.tensor(W), mode="max", scale_grad_by_freq=True)
