"""stft/istft and the window functions against PyTorch: values, shapes, arguments, gradients, the errors."""
import warnings

import numpy as np
import pytest
import torch

import workbench as wb

X = np.random.default_rng(0).standard_normal((2, 100))


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
def test_windows_match_torch(name):
    for n in (0, 1, 2, 7, 16):
        for periodic in (True, False):
            a = getattr(wb, name)(n, periodic, dtype=wb.float64).numpy()
            b = getattr(torch, name)(n, periodic, dtype=torch.float64).numpy()
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert getattr(wb, name)(4).dtype is wb.float32 and getattr(wb, name)(4, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="expects floating point dtypes"):
        getattr(wb, name)(4, dtype=wb.int64)


CASES = [dict(n_fft=16), dict(n_fft=16, hop_length=5, win_length=12), dict(n_fft=15, center=False, normalized=True),
         dict(n_fft=16, onesided=False), dict(n_fft=16, pad_mode="constant")]


@pytest.mark.parametrize("kw", CASES)
def test_stft_istft_match_torch(kw):
    win = kw.get("win_length", kw["n_fft"])
    tw, ww = torch.hann_window(win, dtype=torch.float64), wb.hann_window(win, dtype=wb.float64)
    a = wb.stft(wb.tensor(X), window=ww, return_complex=True, **kw)
    b = torch.stft(torch.tensor(X), window=tw, return_complex=True, **kw)
    assert a.shape == tuple(b.shape)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-10)
    inv = {k: v for k, v in kw.items() if k != "pad_mode"}
    if not kw.get("center", True):  # a Hann window's first sample is 0: both refuse the inversion (NOLA)
        with pytest.raises(RuntimeError, match="window overlap add min"):
            torch.istft(b, window=tw, length=100, **inv)
        with pytest.raises(RuntimeError, match="window overlap add min"):
            wb.istft(a, window=ww, length=100, **inv)
        return
    np.testing.assert_allclose(wb.istft(a, window=ww, length=100, **inv).numpy(),
                               torch.istft(b, window=tw, length=100, **inv).numpy(), rtol=1e-8, atol=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a1 = wb.stft(wb.tensor(X[0]), window=ww, return_complex=False, **kw)
        b1 = torch.stft(torch.tensor(X[0]), window=tw, return_complex=False, **kw)
    np.testing.assert_allclose(a1.numpy(), b1.numpy(), rtol=1e-9, atol=1e-10)


def test_gradients_match_torch_and_round_trip():
    xt, xw = torch.tensor(X, requires_grad=True), wb.tensor(X, requires_grad=True)
    torch.stft(xt, 16, window=torch.hann_window(16, dtype=torch.float64), return_complex=True).abs().sum().backward()
    wb.stft(xw, 16, window=wb.hann_window(16, dtype=wb.float64), return_complex=True).abs().sum().backward()
    np.testing.assert_allclose(xw.grad.numpy(), xt.grad.numpy(), rtol=1e-8)
    x = wb.tensor(X[0], requires_grad=True)
    w = wb.hann_window(16, dtype=wb.float64)
    y = wb.istft(x.stft(16, window=w, return_complex=True), 16, window=w, length=100)
    np.testing.assert_allclose(y.detach().numpy(), X[0], atol=1e-12)
    assert wb.autograd.gradcheck(lambda t: wb.stft(t, 8, hop_length=3, window=wb.hann_window(8, dtype=wb.float64),
                                                   return_complex=True), (wb.tensor(X[0, :20], requires_grad=True),))


def test_errors_and_warnings_like_torch():
    with pytest.raises(RuntimeError, match="requires the return_complex parameter"):
        wb.stft(wb.tensor(X), 16)
    with pytest.warns(UserWarning, match="window was not provided"):
        wb.stft(wb.tensor(X), 16, return_complex=True)
    with pytest.raises(RuntimeError, match="expected 0 < win_length <= n_fft"):
        wb.stft(wb.tensor(X), 16, win_length=20, return_complex=True)
    with pytest.raises(RuntimeError, match="istft requires a complex-valued input"):
        wb.istft(wb.tensor(X), 16)
    with pytest.raises(RuntimeError, match="NOLA"):
        wb.istft(wb.stft(wb.tensor(X), 16, hop_length=16, window=wb.hann_window(16, dtype=wb.float64),
                         return_complex=True, center=False), 16, hop_length=16,
                 window=wb.hann_window(16, dtype=wb.float64), center=False)


def test_align_to_window_matches_torch():
    tw, ww = torch.hann_window(12, dtype=torch.float64), wb.hann_window(12, dtype=wb.float64)
    for align in (None, False, True):
        b = torch.stft(torch.tensor(X), 16, 4, 12, tw, center=False, return_complex=True, align_to_window=align)
        a = wb.stft(wb.tensor(X), 16, 4, 12, ww, center=False, return_complex=True, align_to_window=align)
        assert a.shape == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-10)
    with pytest.raises(RuntimeError, match="align_to_window should only be set when center = false"):
        wb.stft(wb.tensor(X), 16, window=ww.new_ones(16), return_complex=True, align_to_window=True)


def test_istft_of_a_full_spectrum_and_its_errors_like_torch():
    # found by the istft op spec (#13): a full (non-Hermitian) spectrum with return_complex=False is read as
    # the Hermitian one its first half gives; a onesided one with return_complex=True is refused
    rng = np.random.default_rng(1)
    s = rng.standard_normal((2, 16, 9)) + 1j * rng.standard_normal((2, 16, 9))
    tw, ww = torch.hann_window(16, dtype=torch.float64), wb.hann_window(16, dtype=wb.float64)
    for kw in (dict(onesided=False), dict(), dict(return_complex=True)):
        np.testing.assert_allclose(wb.istft(wb.tensor(s), 16, window=ww, **kw).numpy(),
                                   torch.istft(torch.tensor(s), 16, window=tw, **kw).numpy(), rtol=1e-9, atol=1e-12)
    half = wb.tensor(s[:, :9])
    with pytest.raises(RuntimeError, match="Cannot have onesided output"):
        wb.istft(half, 16, window=ww, return_complex=True)
    with pytest.raises(RuntimeError, match="Complex windows are incompatible with return_complex=False"):
        wb.istft(half, 16, window=ww.to(wb.complex128))
