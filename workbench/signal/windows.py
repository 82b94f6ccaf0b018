"""``workbench.signal.windows``: PyTorch's torch.signal.windows (SciPy's conventions: symmetric by
default, ``sym=False`` for the periodic window used with FFTs).

A periodic window of length M is the symmetric window of length M + 1 without its last sample.

>>> import workbench as wb
>>> wb.signal.windows.hann(5)
tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
"""
import math

import workbench as _wb

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _window(name, M, sym, dtype, device, requires_grad, fn):
    """fn(n, N) on n = 0..N-1 (float64) for the symmetric window of length N; cast, truncated if periodic."""
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    dt = _wb.get_default_dtype() if dtype is None else dtype
    if dt not in (_wb.float32, _wb.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dt}")
    if M == 0:
        out = _wb.empty(0, dtype=dt, device=device)
    elif M == 1:
        out = _wb.ones(1, dtype=dt, device=device)
    else:
        n = M if sym else M + 1
        out = fn(_wb.arange(n, dtype=_wb.float64, device=device), n)[:M].to(dt)
    return out.requires_grad_(True) if requires_grad else out


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """sum_k (-1)^k a[k] cos(2 pi k n / (N - 1)).  >>> wb.signal.windows.general_cosine(3, a=[0.5, 0.5])  ->  tensor([0., 1., 0.])"""
    coefs = list(a)

    def fn(n, N):
        total = _wb.zeros_like(n)
        for k, c in enumerate(coefs):
            total = total + (-1) ** k * c * (2 * math.pi * k * n / (N - 1)).cos()
        return total

    return _window("general_cosine", M, sym, dtype, device, requires_grad, fn)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """alpha - (1 - alpha) cos(2 pi n / (N - 1)).  >>> wb.signal.windows.general_hamming(3).shape  ->  workbench.Size([3])"""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, device=device, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window (general_hamming with alpha = 0.5)."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, device=device, requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hamming window (general_hamming with alpha = 0.54)."""
    return general_hamming(M, alpha=0.54, sym=sym, dtype=dtype, device=device, requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window (general_cosine with 0.42, 0.5, 0.08)."""
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, device=device, requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """Nuttall's minimum 4-term Blackman-Harris window."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, device=device,
                          requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The triangular window 1 - |2n / (N - 1) - 1|."""
    return _window("bartlett", M, sym, dtype, device, requires_grad, lambda n, N: 1 - (2 * n / (N - 1) - 1).abs())


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The sine window sin(pi (n + 0.5) / N)."""
    return _window("cosine", M, sym, dtype, device, requires_grad, lambda n, N: (math.pi * (n + 0.5) / N).sin())


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """exp(-|n - center| / tau); center defaults to the middle (and must be None when sym=True)."""
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")

    def fn(n, N):
        c = (N - 1) / 2 if center is None else center
        return (-(n - c).abs() / tau).exp()

    return _window("exponential", M, sym, dtype, device, requires_grad, fn)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """exp(-((n - (N - 1) / 2) / std)^2 / 2)."""
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    return _window("gaussian", M, sym, dtype, device, requires_grad,
                   lambda n, N: (-(((n - (N - 1) / 2) / std) ** 2) / 2).exp())


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """i0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / i0(beta)."""
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")

    def fn(n, N):
        arg = (1 - (2 * n / (N - 1) - 1) ** 2).clamp(min=0).sqrt()
        return _wb.i0(beta * arg) / _wb.i0(_wb.full((1,), float(beta), dtype=n.dtype, device=n.device))

    return _window("kaiser", M, sym, dtype, device, requires_grad, fn)
