"""bfloat16 end to end, against PyTorch's bfloat16: creation, arithmetic and casts, matmul (no float32
leaking out of NumPy's bfloat16 product), nn layers forward and backward, optimizer steps, float16 too."""
import numpy as np
import pytest
import torch

import workbench as wb

RNG = np.random.default_rng(0)


def _t(m, a, dt="bfloat16"):
    return m.tensor(a).to(getattr(m, dt))


def _close(w, t, tol=2e-2):
    assert str(w.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(w.float().detach().numpy(), t.float().detach().numpy(), rtol=tol, atol=tol)


def test_creation_and_arithmetic_and_casts():
    for m in (wb, torch):
        assert m.zeros(2, dtype=m.bfloat16).dtype is m.bfloat16
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    pairs = [
        lambda m: _t(m, a) + _t(m, b), lambda m: _t(m, a) * 2.5, lambda m: _t(m, a) / _t(m, b).abs().add(1),
        lambda m: _t(m, a).exp(), lambda m: _t(m, a).tanh(), lambda m: _t(m, a).sum(), lambda m: _t(m, a).mean(1),
        lambda m: _t(m, a) + _t(m, b).float(), lambda m: m.tensor([1.5, 2.25], dtype=m.bfloat16),
        lambda m: _t(m, a).max(dim=1)[0], lambda m: _t(m, a).softmax(-1), lambda m: m.arange(4, dtype=m.bfloat16),
        lambda m: m.full((2,), 3.14159, dtype=m.bfloat16), lambda m: _t(m, a).to(m.float16),
    ]
    for f in pairs:
        _close(f(wb), f(torch))
    x = wb.tensor([1.0, 2.0 ** -9 + 1.0], dtype=wb.bfloat16)  # 8 significant bits: 1 + 2**-9 rounds to 1
    assert x.tolist() == [1.0, 1.0] and wb.tensor(3.3, dtype=wb.bfloat16).item() == 3.296875


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
def test_matmul_family_keeps_the_dtype(dt):
    a, b = RNG.standard_normal((4, 6)), RNG.standard_normal((6, 3))
    cases = [lambda m: _t(m, a, dt) @ _t(m, b, dt), lambda m: m.bmm(_t(m, a, dt)[None], _t(m, b, dt)[None]),
             lambda m: m.nn.functional.linear(_t(m, a, dt), _t(m, b.T, dt)),
             lambda m: m.mm(_t(m, a, dt), _t(m, b, dt)).float() @ m.tensor(b.T).float()]
    for f in cases:
        _close(f(wb), f(torch))
    with pytest.raises(RuntimeError, match="same dtype"):
        _t(wb, a, dt) @ wb.tensor(b, dtype=wb.float32)


def test_layers_forward_backward_match_torch():
    torch.manual_seed(0)
    specs = [
        (lambda m: m.nn.Linear(6, 4), (5, 6)),
        (lambda m: m.nn.Conv2d(2, 3, 3, padding=1), (2, 2, 5, 5)),
        (lambda m: m.nn.LayerNorm(6), (4, 6)),
        (lambda m: m.nn.MultiheadAttention(6, 2, batch_first=True), (2, 3, 6)),
        (lambda m: m.nn.LSTM(6, 4, batch_first=True), (2, 3, 6)),
    ]
    for make, shape in specs:
        tl = make(torch)
        wl = make(wb)
        wl.load_state_dict({k: wb.tensor(v.detach().numpy()) for k, v in tl.state_dict().items()})
        tl, wl = tl.bfloat16(), wl.bfloat16()
        x = RNG.standard_normal(shape)
        tx, wx = _t(torch, x).requires_grad_(), _t(wb, x).requires_grad_()
        args_t, args_w = ((tx, tx, tx), (wx, wx, wx)) if isinstance(tl, torch.nn.MultiheadAttention) else ((tx,), (wx,))
        ty, wy = tl(*args_t), wl(*args_w)
        ty, wy = (ty[0], wy[0]) if isinstance(ty, tuple) else (ty, wy)
        _close(wy, ty, 5e-2)
        ty.float().pow(2).sum().backward()
        wy.float().pow(2).sum().backward()
        _close(wx.grad, tx.grad, 1e-1)
        for (name, tp), wp in zip(tl.named_parameters(), wl.parameters()):
            assert wp.grad.dtype is wb.bfloat16, name
            _close(wp.grad, tp.grad, 1.5e-1)


@pytest.mark.parametrize("opt", ["SGD", "Adam", "AdamW"])
def test_optimizer_steps_on_bfloat16_parameters(opt):
    w0 = RNG.standard_normal((4, 3))
    x = RNG.standard_normal((6, 4))
    kw = {"lr": 0.05, "momentum": 0.9} if opt == "SGD" else {"lr": 0.05}
    res = []
    for m in (wb, torch):
        w = m.nn.Parameter(_t(m, w0))
        o = getattr(m.optim, opt)([w], **kw)
        for _ in range(5):
            o.zero_grad()
            (_t(m, x) @ w).float().pow(2).mean().backward()
            o.step()
        assert w.dtype is m.bfloat16
        res.append(w)
    _close(res[0], res[1], 3e-2)
