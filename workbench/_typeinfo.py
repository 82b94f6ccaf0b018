"""``finfo`` and ``iinfo``: the numeric limits of a dtype, as PyTorch reports them.

>>> import workbench as wb
>>> wb.finfo(wb.float32).eps
1.1920928955078125e-07
>>> wb.iinfo(wb.int8).max
127
"""
import numpy as np

from ._backend import dtypes as _dt

# bfloat16 has no NumPy finfo without ml_dtypes (slow to import): its limits are fixed by the format
_BFLOAT16 = dict(bits=16, eps=0.0078125, max=3.3895313892515355e+38, min=-3.3895313892515355e+38,
                 tiny=1.1754943508222875e-38, smallest_normal=1.1754943508222875e-38, resolution=0.01)


class finfo:
    """Limits of a floating point (or complex: its real part's) dtype; the default dtype's when none given."""

    def __init__(self, type=None):
        dt = _dt.get_default_dtype() if type is None else _dt.to_dtype(type)
        if dt.category not in (_dt._FLOAT, _dt._COMPLEX):
            raise TypeError(f"torch.finfo() requires a floating point input type, got {dt}. "
                            "Use workbench.iinfo to handle integer types")
        real = dt.to_real()
        if real is _dt.bfloat16:
            info = _BFLOAT16
        else:
            f = np.finfo(real.np)
            info = dict(bits=int(f.bits), eps=float(f.eps), max=float(f.max), min=float(f.min),
                        tiny=float(f.tiny), smallest_normal=float(f.smallest_normal), resolution=10.0 ** -int(f.precision))
        self.__dict__.update(info)
        self.dtype = real.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer (or bool) dtype."""

    def __init__(self, type):
        dt = _dt.to_dtype(type)
        if dt.category not in (_dt._INT, _dt._BOOL):
            raise TypeError(f"torch.iinfo() requires an integer input type, got {dt}. "
                            "Use workbench.finfo to handle floating point types")
        i = np.iinfo(np.uint8 if dt.category == _dt._BOOL else dt.np)
        self.bits, self.max, self.min, self.dtype = int(i.bits), int(i.max), int(i.min), dt.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


__all__ = ["finfo", "iinfo"]
