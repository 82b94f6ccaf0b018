"""``workbench.backends.quantized``: PyTorch's quantized-kernel engine switch. Workbench has no quantized
tensors; ``engine`` keeps the value a program sets, checked against ``supported_engines``.

>>> import workbench as wb
>>> wb.backends.quantized.engine in wb.backends.quantized.supported_engines
True
"""
from ._flags import install

supported_engines = ["none"]


def _engine(v):
    if v not in supported_engines:
        raise RuntimeError(f"quantized engine {v!r} is not supported: workbench has no quantized kernels "
                           f"(supported: {supported_engines})")
    return v


install(__name__, {"engine": ("none", _engine)})
