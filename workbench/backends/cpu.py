"""``workbench.backends.cpu``: the vector instructions NumPy's kernels use on this CPU.

>>> import workbench as wb
>>> wb.backends.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512", "NEON", "SVE256")
True
"""
from .. import _backend

_np = _backend.numpy
_features = (getattr(_np, "_core", None) or _np.core)._multiarray_umath.__cpu_features__  # NumPy 2, or 1


def get_cpu_capability():
    """PyTorch's names: "AVX512", "AVX2", "NEON", "SVE256" or "DEFAULT", from NumPy's CPU feature table."""
    for name, capability in (("AVX512F", "AVX512"), ("AVX2", "AVX2"), ("SVE", "SVE256"), ("ASIMD", "NEON")):
        if _features.get(name):
            return capability
    return "DEFAULT"

