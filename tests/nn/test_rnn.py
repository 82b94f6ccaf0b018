"""RNN/LSTM/GRU and their cells against PyTorch, including packed sequences."""
import numpy as np
import pytest
import torch

import workbench as wb
from workbench.nn.utils import rnn as wrnn

from _nn_compare import compare, copy_state, host, to_torch, to_wb, torch_device


def rnd(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


CONFIGS = [
    {},
    {"num_layers": 2},
    {"bidirectional": True},
    {"num_layers": 2, "bidirectional": True, "batch_first": True},
    {"bias": False},
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()) or "default")
@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_recurrent_layer_matches_torch(cls, cfg, device):
    x = rnd(2, 5, 3) if cfg.get("batch_first") else rnd(5, 2, 3)
    compare(lambda nn: getattr(nn, cls)(3, 4, **cfg), [x], rtol=1e-7, atol=1e-9, device=device)


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_initial_state_and_unbatched(cls, device):
    D, L = 2, 2
    h0 = rnd(D * L, 3, 4, seed=1)
    hx = (h0, rnd(D * L, 3, 4, seed=2)) if cls == "LSTM" else h0

    def make(nn):
        return getattr(nn, cls)(2, 4, num_layers=L, bidirectional=True)

    tm, wm = compare(make, [rnd(6, 3, 2), hx] if cls != "LSTM" else [rnd(6, 3, 2)], eval_only=cls == "LSTM",
                     device=device)
    if cls == "LSTM":
        to = tm(to_torch(rnd(6, 3, 2), device), tuple(to_torch(h, device) for h in hx))
        wo = wm(to_wb(rnd(6, 3, 2), device), tuple(to_wb(h, device) for h in hx))
        np.testing.assert_allclose(host(wo[0]), host(to[0]), rtol=1e-7)
        np.testing.assert_allclose(host(wo[1][1]), host(to[1][1]), rtol=1e-7)
    compare(lambda nn: getattr(nn, cls)(2, 4), [rnd(6, 2)], device=device)  # unbatched


def test_rnn_relu_and_proj_lstm(device):
    compare(lambda nn: nn.RNN(3, 4, nonlinearity="relu", num_layers=2), [rnd(5, 2, 3)], device=device)
    compare(lambda nn: nn.LSTM(3, 5, proj_size=2, num_layers=2, bidirectional=True), [rnd(5, 2, 3)], device=device)


def test_dropout_between_layers_only_in_training(device):
    wb.manual_seed(0)
    m = wb.nn.LSTM(3, 8, num_layers=2, dropout=0.5).to(device)
    x = wb.randn(4, 2, 3, device=device)
    a, _ = m(x)
    b, _ = m(x)
    assert not np.allclose(host(a), host(b))
    m.eval()
    a, _ = m(x)
    b, _ = m(x)
    np.testing.assert_array_equal(host(a), host(b))
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        wb.nn.GRU(3, 4, dropout=0.2)


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_sequence_input_matches_torch(cls, enforce_sorted, device):
    lengths = [5, 3, 2] if enforce_sorted else [3, 5, 2]
    x = rnd(5, 3, 2)
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(2, 4, num_layers=2, bidirectional=True).double()
    wm = getattr(wb.nn, cls)(2, 4, num_layers=2, bidirectional=True).double()
    copy_state(tm, wm)
    tm.to(torch_device(device))
    wm.to(device)
    tx = to_torch(x, device).requires_grad_()
    wx = to_wb(x, device).requires_grad_()
    tp = torch.nn.utils.rnn.pack_padded_sequence(tx, lengths, enforce_sorted=enforce_sorted)
    wp = wrnn.pack_padded_sequence(wx, lengths, enforce_sorted=enforce_sorted)
    assert wp.data.device.type == device
    np.testing.assert_array_equal(host(wp.batch_sizes), host(tp.batch_sizes))
    np.testing.assert_allclose(host(wp.data), host(tp.data))
    tout, th = tm(tp)
    wout, wh = wm(wp)
    tpad, tl = torch.nn.utils.rnn.pad_packed_sequence(tout, total_length=6)
    wpad, wl = wrnn.pad_packed_sequence(wout, total_length=6)
    assert wpad.device.type == device
    np.testing.assert_array_equal(host(wl), host(tl))
    np.testing.assert_allclose(host(wpad), host(tpad), rtol=1e-7, atol=1e-10)
    th = th if cls != "LSTM" else th[0]
    wh = wh if cls != "LSTM" else wh[0]
    np.testing.assert_allclose(host(wh), host(th), rtol=1e-7, atol=1e-10)
    (tpad.sum() + (th * th).sum()).backward()
    (wpad.sum() + (wh * wh).sum()).backward()
    assert wx.grad.device.type == device
    np.testing.assert_allclose(host(wx.grad), host(tx.grad), rtol=1e-7, atol=1e-10)
    for name, p in wm.named_parameters():
        np.testing.assert_allclose(host(p.grad), host(dict(tm.named_parameters())[name].grad), rtol=1e-7,
                                   atol=1e-10, err_msg=name)


@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_torch(cls, device):
    compare(lambda nn: getattr(nn, cls)(3, 4), [rnd(2, 3)], device=device)
    h = rnd(2, 4, seed=4)
    hx = (h, rnd(2, 4, seed=5)) if cls == "LSTMCell" else h
    tm, wm = compare(lambda nn: getattr(nn, cls)(3, 4), [rnd(2, 3)], eval_only=True, device=device)
    to = tm(to_torch(rnd(2, 3), device), tuple(to_torch(a, device) for a in hx) if cls == "LSTMCell"
            else to_torch(hx, device))
    wo = wm(to_wb(rnd(2, 3), device), tuple(to_wb(a, device) for a in hx) if cls == "LSTMCell"
            else to_wb(hx, device))
    to = to[0] if cls == "LSTMCell" else to
    wo = wo[0] if cls == "LSTMCell" else wo
    np.testing.assert_allclose(host(wo), host(to), rtol=1e-7)
    compare(lambda nn: getattr(nn, cls)(3, 4, bias=False), [rnd(3)], device=device)  # unbatched, no bias


def test_shape_errors():
    m = wb.nn.LSTM(3, 4)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 5"):
        m(wb.randn(2, 1, 5))
    with pytest.raises(RuntimeError, match="Expected hidden size"):
        m(wb.randn(2, 1, 3), (wb.zeros(1, 2, 4), wb.zeros(1, 2, 4)))
    with pytest.raises(ValueError, match="proj_size has to be smaller"):
        wb.nn.LSTM(3, 4, proj_size=4)


def test_pad_and_pack_utilities_match_torch():
    seqs = [rnd(4, 2), rnd(2, 2, seed=1), rnd(3, 2, seed=2)]
    for bf in (False, True):
        for side in ("right", "left"):
            np.testing.assert_array_equal(
                wrnn.pad_sequence([wb.tensor(s) for s in seqs], batch_first=bf, padding_value=-1.0,
                                  padding_side=side).numpy(),
                torch.nn.utils.rnn.pad_sequence([torch.from_numpy(s) for s in seqs], batch_first=bf,
                                                padding_value=-1.0, padding_side=side).numpy())
    tp = torch.nn.utils.rnn.pack_sequence([torch.from_numpy(s) for s in seqs], enforce_sorted=False)
    wp = wrnn.pack_sequence([wb.tensor(s) for s in seqs], enforce_sorted=False)
    np.testing.assert_array_equal(wp.data.numpy(), tp.data.numpy())
    np.testing.assert_array_equal(wp.sorted_indices.numpy(), tp.sorted_indices.numpy())
    np.testing.assert_array_equal(wp.unsorted_indices.numpy(), tp.unsorted_indices.numpy())
    back = wrnn.unpack_sequence(wp)
    for a, s in zip(back, seqs):
        np.testing.assert_array_equal(a.numpy(), s)
    padded, lens = wrnn.pad_packed_sequence(wp, batch_first=True)
    assert lens.tolist() == [4, 2, 3] and padded.shape == (3, 4, 2)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        wrnn.pack_padded_sequence(wb.zeros(4, 2, 1), [2, 4])
    with pytest.raises(ValueError, match="total_length"):
        wrnn.pad_packed_sequence(wp, total_length=2)
