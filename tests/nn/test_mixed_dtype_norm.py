"""layer_norm and rms_norm of a 16-bit input with float32 parameters (what autocast and a half-converted model
give): the input's dtype back, computed in float32 as PyTorch's mixed kernels, under autocast too."""
import numpy as np
import pytest

import workbench as wb

torch = pytest.importorskip("torch")

F = wb.nn.functional
PAIRS = [(wb.bfloat16, torch.bfloat16), (wb.float16, torch.float16)]


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((3, 8)).astype(np.float32), rng.standard_normal(8).astype(np.float32),
            rng.standard_normal(8).astype(np.float32), rng.standard_normal((3, 8)).astype(np.float32))


@pytest.mark.parametrize("dt,tdt", PAIRS)
def test_layer_norm_of_a_16_bit_input_with_float32_parameters_matches_pytorch(dt, tdt):
    x, w, b, g = _data()
    xt, wt, bt = torch.tensor(x).to(tdt).requires_grad_(), torch.tensor(w, requires_grad=True), \
        torch.tensor(b, requires_grad=True)
    xw, ww, bw = wb.tensor(x).to(dt).requires_grad_(), wb.tensor(w, requires_grad=True), wb.tensor(b, requires_grad=True)
    yt, yw = torch.nn.functional.layer_norm(xt, (8,), wt, bt), F.layer_norm(xw, (8,), ww, bw)
    assert yw.dtype == dt and yt.dtype == tdt
    assert np.array_equal(yw.float().detach().numpy(), yt.float().detach().numpy())
    yt.backward(torch.tensor(g).to(tdt))
    yw.backward(wb.tensor(g).to(dt))
    assert xw.grad.dtype == dt and ww.grad.dtype == wb.float32 and bw.grad.dtype == wb.float32
    assert np.array_equal(xw.grad.float().numpy(), xt.grad.float().numpy())
    # PyTorch's own mixed-dtype weight gradient differs from its float32 one by about an ulp of the input dtype
    np.testing.assert_allclose(ww.grad.numpy(), wt.grad.numpy(), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(bw.grad.numpy(), bt.grad.numpy(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dt,tdt", PAIRS)
def test_rms_norm_of_a_16_bit_input_is_computed_in_float32_and_keeps_the_input_dtype(dt, tdt):
    x, w, _, _ = _data(1)
    for weight_dt in (wb.float32, dt):
        yw = F.rms_norm(wb.tensor(x).to(dt), (8,), wb.tensor(w).to(weight_dt))
        yt = torch.nn.functional.rms_norm(torch.tensor(x).to(tdt), (8,), torch.tensor(w).to(
            torch.float32 if weight_dt is wb.float32 else tdt))
        assert yw.dtype == dt
        assert np.array_equal(yw.float().numpy(), yt.float().numpy())


def test_layer_norm_module_under_cpu_autocast():
    m = wb.nn.Sequential(wb.nn.Linear(4, 8), wb.nn.LayerNorm(8))
    with wb.autocast("cpu", dtype=wb.bfloat16):
        y = m(wb.randn(2, 4))
    assert y.dtype == wb.bfloat16
    y.float().sum().backward()
    assert m[1].weight.grad.dtype == wb.float32


def test_layer_norm_of_float64_with_float32_parameters_still_refuses():
    with pytest.raises(RuntimeError, match="dtype float64 like the input"):
        F.layer_norm(wb.randn(2, 8).double(), (8,), wb.ones(8))
