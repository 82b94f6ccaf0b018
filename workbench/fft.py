"""``workbench.fft``: PyTorch's ``torch.fft`` namespace (transforms in ops/fft.py, with gradients).

>>> import workbench as wb
>>> wb.fft.irfft(wb.fft.rfft(wb.tensor([1.0, 2.0, 3.0, 4.0])), n=4)
tensor([1., 2., 3., 4.])
"""
from .ops.fft import (fft, fft2, fftfreq, fftn, fftshift, hfft, hfft2, hfftn, ifft, ifft2, ifftn, ifftshift, ihfft,
                      ihfft2, ihfftn, irfft, irfft2, irfftn, rfft, rfft2, rfftfreq, rfftn)

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "hfft2", "hfftn", "ifft", "ifft2", "ifftn",
           "ifftshift", "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn"]

# NumPy's spellings (axis=, keepdims=), as PyTorch's argument parser takes them: see ops/_numpy_names.py
from .ops._numpy_names import numpy_names as _numpy_names  # noqa: E402

globals().update({_n: _numpy_names(globals()[_n]) for _n in __all__})
