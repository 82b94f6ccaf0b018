"""``workbench.backends.cuda``: PyTorch's CUDA switches (matmul precision, attention kernels).

``is_built()`` says whether CuPy, workbench's CUDA library, is installed. ``matmul.allow_tf32`` and the
reduced-precision switches are kept and checked as in PyTorch; CuPy chooses its own matmul precision, so
they change nothing in workbench's results. The scaled-dot-product-attention switches choose among
PyTorch's kernels; workbench has one attention path, which the switches leave alone.

>>> import workbench as wb
>>> wb.backends.cuda.matmul.allow_tf32 = True
>>> wb.backends.cuda.matmul.allow_tf32
True
>>> wb.backends.cuda.matmul.allow_tf32 = False
"""
import contextlib
import importlib.util


def is_built():
    """True when CuPy is installed (workbench's GPU path)."""
    return importlib.util.find_spec("cupy") is not None


class cuBLASModule:  # noqa: N801 - PyTorch's name
    """``matmul``: ``allow_tf32`` (False), ``allow_fp16_reduced_precision_reduction`` and
    ``allow_bf16_reduced_precision_reduction`` (True), ``fp32_precision`` ("none")."""

    _defaults = {"allow_tf32": False, "allow_fp16_reduced_precision_reduction": True,
                 "allow_bf16_reduced_precision_reduction": True, "allow_fp16_accumulation": False,
                 "fp32_precision": "none"}

    def __init__(self):
        object.__setattr__(self, "_values", dict(self._defaults))

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"Unknown attribute {name}") from None

    def __setattr__(self, name, value):
        if name not in self._defaults:
            raise AttributeError(f"Unknown attribute {name}")
        if name == "fp32_precision":
            if value not in ("none", "ieee", "tf32"):
                raise RuntimeError(f"fp32_precision must be one of 'none', 'ieee', 'tf32', got {value!r}")
        elif not isinstance(value, bool):
            raise RuntimeError(f"{name} expects a bool, but got {type(value).__name__}")
        self._values[name] = value


matmul = cuBLASModule()

_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def _switch(kind):
    def enabled():
        return _sdp[kind]

    def enable(flag):
        if not isinstance(flag, bool):
            raise RuntimeError(f"enable_{kind}_sdp expects a bool, but got {type(flag).__name__}")
        _sdp[kind] = flag

    enabled.__name__, enable.__name__ = f"{kind}_sdp_enabled", f"enable_{kind}_sdp"
    enabled.__doc__ = f"Whether PyTorch's {kind} attention kernel may be chosen (a switch workbench keeps)."
    enable.__doc__ = f"Allow or forbid PyTorch's {kind} attention kernel (a switch workbench keeps)."
    return enabled, enable


flash_sdp_enabled, enable_flash_sdp = _switch("flash")
mem_efficient_sdp_enabled, enable_mem_efficient_sdp = _switch("mem_efficient")
math_sdp_enabled, enable_math_sdp = _switch("math")
cudnn_sdp_enabled, enable_cudnn_sdp = _switch("cudnn")


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
    """Set the attention switches inside a ``with`` block and restore them after."""
    old = dict(_sdp)
    try:
        _sdp.update(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient, cudnn=enable_cudnn)
        yield
    finally:
        _sdp.update(old)


def preferred_linalg_library(backend=None):
    """The linear-algebra library CUDA calls use: CuPy's (cuSOLVER/cuBLAS), whatever is asked for."""
    return "cusolver"


def preferred_blas_library(backend=None):
    """The BLAS CUDA matmuls use: cuBLAS, through CuPy."""
    return "cublas"
