"""Short-time Fourier transforms (stft, istft) and the window functions they use (hann, hamming,
blackman, bartlett, kaiser), with PyTorch's arguments and defaults.

stft frames the (reflect-padded) signal with ``unfold``, multiplies by the window and takes rfft/fft of
each frame; istft inverts each frame, overlap-adds them with ``fold`` and divides by the summed squared
window. Both are composites of differentiable ops, so gradients (and higher orders) come for free.
"""
import math
import warnings

from .._backend import dtypes as _dt
from ..creation import arange, full, ones, tensor
from .conv import fold
from .fft import fft, ifft, irfft, rfft
from .join import stack
from .pad import pad
from .special import i0

_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _window(name, fn, window_length, periodic, dtype, device, pin_memory, requires_grad):
    dt = _dt.get_default_dtype() if dtype is None else dtype
    if dt.name not in _FLOATS:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window length, got window_length={window_length}")
    if window_length == 0:
        out = tensor([], dtype=dt, device=device)
    elif window_length == 1:
        out = ones(1, dtype=dt, device=device)
    else:
        n = window_length + 1 if periodic else window_length
        k = arange(n, dtype=_dt.float64, device=device)
        out = fn(k, n - 1)[:window_length].to(dt)
    if pin_memory:
        out = out.pin_memory()
    return out.requires_grad_(True) if requires_grad else out


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    """The Hann window 0.5 - 0.5 cos(2 pi n / N) (periodic: N = window_length).

    >>> import workbench as wb
    >>> wb.hann_window(4)
    tensor([0.0000, 0.5000, 1.0000, 0.5000])
    """
    return _window("hann_window", lambda k, m: 0.5 - 0.5 * (2 * math.pi * k / m).cos(),
                   window_length, periodic, dtype, device, pin_memory, requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   pin_memory=False, requires_grad=False):
    """The generalized Hamming window alpha - beta cos(2 pi n / N).  >>> wb.hamming_window(3).shape  ->  workbench.Size([3])"""
    return _window("hamming_window", lambda k, m: alpha - beta * (2 * math.pi * k / m).cos(),
                   window_length, periodic, dtype, device, pin_memory, requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    """The Blackman window 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N).  >>> wb.blackman_window(3).shape  ->  workbench.Size([3])"""
    return _window("blackman_window",
                   lambda k, m: 0.42 - 0.5 * (2 * math.pi * k / m).cos() + 0.08 * (4 * math.pi * k / m).cos(),
                   window_length, periodic, dtype, device, pin_memory, requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    """The triangular window 1 - |2n / N - 1|.  >>> wb.bartlett_window(5, periodic=False)  ->  tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])"""
    return _window("bartlett_window", lambda k, m: 1 - (2 * k / m - 1).abs(),
                   window_length, periodic, dtype, device, pin_memory, requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  pin_memory=False, requires_grad=False):
    """The Kaiser window i0(beta sqrt(1 - (2n / N - 1)^2)) / i0(beta).  >>> wb.kaiser_window(4).shape  ->  workbench.Size([4])"""

    def kaiser(k, m):
        arg = (1 - (2 * k / m - 1) ** 2).clamp(min=0).sqrt()
        return i0(beta * arg) / i0(full((1,), beta, dtype=k.dtype, device=k.device))

    return _window("kaiser_window", kaiser,
                   window_length, periodic, dtype, device, pin_memory, requires_grad)


def _frame_window(window, win_length, n_fft, dtype, device, op):
    if window is None:
        warnings.warn(f"{op}: a window was not provided; a rectangular window will be applied (PyTorch warns the "
                      "same). Pass window=workbench.hann_window(n_fft), or window=workbench.ones(n_fft) to keep "
                      "the rectangle without this warning.", UserWarning, stacklevel=3)
        window = ones(win_length, dtype=dtype, device=device)
    if window.ndim != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"stft: expected a 1D window tensor of size equal to win_length={win_length}, but got "
                           f"window with size {list(window.shape)}")
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = pad(window, (left, n_fft - win_length - left))
    return window


def _check_lengths(op, n_fft, hop_length, win_length):
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if not 0 < n_fft:
        raise RuntimeError(f"{op}: expected 0 < n_fft, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"{op}: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{op}: expected 0 < win_length <= n_fft, but got win_length={win}")
    return hop, win


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """The short-time Fourier transform: (freq, frames) per signal, PyTorch's framing and defaults.

    >>> import workbench as wb
    >>> x = wb.sin(wb.arange(64.0))
    >>> wb.stft(x, 16, window=wb.hann_window(16), return_complex=True).shape
    workbench.Size([9, 17])
    """
    if return_complex is None:
        if not (input.is_complex() or (window is not None and window.is_complex())):
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                               "further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.ndim}D")
    hop, win = _check_lengths("stft", n_fft, hop_length, win_length)
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    if align_to_window and win < n_fft:  # frames of win_length samples, each centered in its n_fft frame
        left = (n_fft - win) // 2
        x = pad(x, (left, n_fft - win - left))
    if center:
        p = n_fft // 2
        x = pad(x.unsqueeze(1), (p, p), mode=pad_mode).squeeze(1)
    if x.shape[-1] < n_fft:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {x.shape[-1]}, but got n_fft={n_fft}")
    w = _frame_window(window, win, n_fft, x.real.dtype if x.is_complex() else x.dtype, x.device, "stft")
    frames = x.unfold(-1, n_fft, hop) * w  # (B, n_frames, n_fft)
    if onesided is None:
        onesided = not (x.is_complex() or w.is_complex())
    if onesided and (x.is_complex() or w.is_complex()):
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spec = (rfft if onesided else fft)(frames, dim=-1, norm=norm).transpose(-1, -2)
    if input.ndim == 1:
        spec = spec.squeeze(0)
    if return_complex:
        return spec
    warnings.warn("stft with return_complex=False is deprecated (as in PyTorch): pass return_complex=True and "
                  "split the result into .real and .imag", UserWarning, stacklevel=2)
    return stack([spec.real, spec.imag], -1)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """The inverse of stft by overlap-add (needs a window whose overlapped squares never vanish).

    >>> import workbench as wb
    >>> x = wb.sin(wb.arange(64.0))
    >>> w = wb.hann_window(16)
    >>> y = wb.istft(wb.stft(x, 16, window=w, return_complex=True), 16, window=w, length=64)
    >>> bool((y - x).abs().max() < 1e-5)
    True
    """
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    hop, win = _check_lengths("istft", n_fft, hop_length, win_length)
    spec = input if input.ndim == 3 else input.unsqueeze(0)
    n_frames = spec.shape[-1]
    if onesided is None:
        onesided = spec.shape[-2] != n_fft
    expected = n_fft // 2 + 1 if onesided else n_fft
    if spec.shape[-2] != expected:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft / 2 + 1 when onesided=True, but got {spec.shape[-2]}")
    real_dtype = _dt.float32 if spec.dtype is _dt.complex64 else _dt.float64
    w = _frame_window(window, win, n_fft, real_dtype, spec.device, "istft")
    norm = "ortho" if normalized else "backward"
    cols = spec.transpose(-1, -2)  # (B, n_frames, freq)
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = ifft(cols, dim=-1, norm=norm)
    else:  # a full spectrum is read as the Hermitian one its first half gives (PyTorch's choice)
        if w.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        frames = irfft(cols[..., :n_fft // 2 + 1], n=n_fft, dim=-1, norm=norm)
    frames = frames * w
    total = n_fft + hop * (n_frames - 1)
    y = fold(frames.transpose(-1, -2), output_size=(1, total), kernel_size=(1, n_fft), stride=(1, hop))
    y = y.reshape(spec.shape[0], total)
    env = fold((w * w).reshape(1, n_fft, 1).expand(1, n_fft, n_frames), output_size=(1, total),
               kernel_size=(1, n_fft), stride=(1, hop)).reshape(total)
    start = n_fft // 2 if center else 0
    end = total - n_fft // 2 if center else total
    if length is not None:
        end = start + length
    env = env[start:end]
    if bool((env.abs() < 1e-11).any()):
        raise RuntimeError("istft: window overlap add min: 0 (the window's overlapped squares vanish somewhere; "
                           "use a window and hop_length satisfying the NOLA condition)")
    y = y[:, start:end] / env
    if length is not None and y.shape[-1] < length:
        y = pad(y, (0, length - y.shape[-1]))
    return y.squeeze(0) if input.ndim == 2 else y


__all__ = ["stft", "istft", "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]
METHODS = {"stft": stft, "istft": istft}
