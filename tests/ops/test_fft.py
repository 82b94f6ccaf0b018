"""workbench.fft beyond the op specs: complex gradcheck, dtypes, argument errors as PyTorch raises them,
out=, the frequency helpers, and the fake GPU."""
import numpy as np
import pytest
import torch

import workbench as wb

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 8))
Z = X + 1j * RNG.standard_normal((3, 8))


@pytest.mark.parametrize("name", ["fft", "ifft", "fft2", "ifftn", "irfft", "hfft", "irfft2"])
def test_gradcheck_on_complex_inputs(name):
    z = wb.tensor(Z, requires_grad=True)
    assert wb.autograd.gradcheck(lambda t: getattr(wb.fft, name)(t, norm="ortho"), (z,))
    assert wb.autograd.gradgradcheck(lambda t: getattr(wb.fft, name)(t), (z,))


def test_round_trips_and_real_input_gradients():
    x = wb.tensor(X, requires_grad=True)
    y = wb.fft.irfft(wb.fft.rfft(x), n=8)
    np.testing.assert_allclose(y.detach().numpy(), X, atol=1e-12)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones_like(X), atol=1e-12)
    assert x.grad.dtype is wb.float64  # a real input gets a real gradient
    w = wb.tensor(X, requires_grad=True)
    wb.fft.fft(w).abs().sum().backward()
    t = torch.tensor(X, requires_grad=True)
    torch.fft.fft(t).abs().sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), t.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("data,name", [([1, 2, 3], "fft"), ([1.0, 2.0], "rfft"), ([1.0, 2.0], "irfft"),
                                       ([1.0, 2.0], "ihfft"), ([1.0, 2.0], "hfft")])
def test_dtypes_follow_torch(data, name):
    for dt in (None, "float64"):
        if dt and isinstance(data[0], int):
            continue
        got = getattr(wb.fft, name)(wb.tensor(data, dtype=getattr(wb, dt) if dt else None))
        want = getattr(torch.fft, name)(torch.tensor(data, dtype=getattr(torch, dt) if dt else None))
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]


def _torch_error(fn_t):
    try:
        fn_t()
    except Exception as e:  # noqa: BLE001 - the oracle's exception, whatever it is
        return type(e), str(e)
    raise AssertionError("torch did not raise")


@pytest.mark.parametrize("call", [
    lambda m, x: m.fft.fft(x, norm="bad"),
    lambda m, x: m.fft.fft(x, n=0),
    lambda m, x: m.fft.rfft(x + 0j),
    lambda m, x: m.fft.ihfft(x + 0j),
    lambda m, x: m.fft.fft(x.half()),
    lambda m, x: m.fft.fft(x.bfloat16()),
    lambda m, x: m.fft.fftn(x, dim=(0, 0)),
    lambda m, x: m.fft.irfft(x[:, :1]),
    lambda m, x: m.fft.fft(x, dim=3),
    lambda m, x: m.fft.fftn(x, s=(2, 2, 2)),
    lambda m, x: m.fft.fftn(x, s=(2,), dim=(0, 1)),
])
def test_errors_match_torch(call):
    etype, msg = _torch_error(lambda: call(torch, torch.tensor(X, dtype=torch.float32)))
    with pytest.raises(etype) as info:
        call(wb, wb.tensor(X, dtype=wb.float32))
    assert msg.split(":")[0].split("(")[0] in str(info.value)


def test_out_argument_and_no_grad_rule():
    out = wb.empty(0, dtype=wb.complex64)
    r = wb.fft.fft(wb.tensor([1.0, 2.0]), out=out)
    assert r is out and np.allclose(out.numpy(), [3, -1])
    with pytest.raises(RuntimeError, match="out="):
        wb.fft.fft(wb.tensor([1.0, 2.0], requires_grad=True), out=wb.empty(2, dtype=wb.complex64))


def test_frequencies_and_shifts():
    for n, d in ((4, 1.0), (5, 0.1), (1, 2.0)):
        np.testing.assert_allclose(wb.fft.fftfreq(n, d).numpy(), torch.fft.fftfreq(n, d).numpy(), rtol=1e-6)
        np.testing.assert_allclose(wb.fft.rfftfreq(n, d).numpy(), torch.fft.rfftfreq(n, d).numpy(), rtol=1e-6)
    f = wb.fft.fftfreq(6, dtype=wb.float64, requires_grad=True)
    assert f.dtype is wb.float64 and f.requires_grad
    a = wb.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(wb.fft.fftshift(a).numpy(), torch.fft.fftshift(torch.arange(12).reshape(3, 4)))
    np.testing.assert_array_equal(wb.fft.ifftshift(wb.fft.fftshift(a, dim=1), dim=1).numpy(), a.numpy())


def test_on_the_fake_gpu(fake_cuda):
    x = wb.tensor(X, requires_grad=True, device="cuda")
    y = wb.fft.irfftn(wb.fft.rfftn(x) * 2, s=(3, 8))
    assert y.device.type == "cuda"
    y.sum().backward()
    assert x.grad.device.type == "cuda"
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * np.ones_like(X), atol=1e-12)
    assert wb.fft.fftfreq(4, device="cuda").device.type == "cuda"
