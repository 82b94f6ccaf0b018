"""``workbench.backends``: the backend switches PyTorch programs set (``cudnn.benchmark``,
``cuda.matmul.allow_tf32``, ``mps.is_available()``...). Each submodule's docstring says what the switches
mean here: workbench runs on NumPy and CuPy, so the libraries they name (cuDNN, oneDNN, Metal) report
not available, while the switches keep their values and check them as PyTorch does.

>>> import workbench as wb
>>> wb.backends.cudnn.deterministic = True; wb.backends.cudnn.deterministic
True
>>> wb.backends.cudnn.deterministic = False
"""
from . import cpu, cuda, cudnn, cusparselt, kleidiai, mha, miopen, mkl, mkldnn, mps, nnpack, openmp, opt_einsum, quantized

__all__ = ["cpu", "cuda", "cudnn", "cusparselt", "kleidiai", "mha", "miopen", "mkl", "mkldnn", "mps", "nnpack", "openmp",
           "opt_einsum", "quantized"]
