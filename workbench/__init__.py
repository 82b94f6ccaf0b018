"""workbench: PyTorch's API on NumPy (CPU) and CuPy (CUDA), with a tape you can see.

>>> import workbench as wb
>>> x = wb.tensor([1.0, 2.0], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad
tensor([2., 4.])
"""
import importlib
import math as _math
import warnings as _warnings

from . import _accel

_accel.install()  # before any other submodule: the compiled core, where it is built (workbench/_accel.py)
from . import _backend

# PyTorch computes log(0) = -inf or 0/0 = nan silently; NumPy warns. Silence only the warnings that
# NumPy raises from inside workbench's own code, leaving the user's NumPy settings alone.
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"workbench(\.|$)")
from ._backend import dtypes as _dtypes
from ._backend.device import device
from ._backend.dtypes import (bfloat16, complex64, complex128, dtype, float16, float32, float64,
                              get_default_dtype, int8, int16, int32, int64, promote_types, set_default_dtype, uint8)
from ._backend.dtypes import bool_ as bool  # noqa: A001 - PyTorch's name
from ._format import set_printoptions
from .ops._util import result_dtype as _result_dtype
from .autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                                 no_grad, set_grad_enabled)
from .tensor import Size, Tensor
from . import ops as _ops  # binds Tensor's operators and methods
from .creation import (arange, as_tensor, asarray, empty, empty_like, eye, from_dlpack, from_numpy, full, full_like,
                       linspace, logspace, ones, ones_like, tensor, zeros, zeros_like)
from .random import (Generator, bernoulli, binomial, default_generator, get_rng_state, initial_seed, manual_seed,
                     multinomial, normal, poisson, rand, rand_like, randint, randint_like, randn, randn_like, randperm, seed,
                     set_rng_state)
from .ops import *  # noqa: F401,F403 - every op family's public functions
from . import autograd, cuda, cpu
from .amp.autocast_mode import (autocast, autocast_decrement_nesting, autocast_increment_nesting,
                                clear_autocast_cache, get_autocast_cpu_dtype, get_autocast_dtype,
                                get_autocast_gpu_dtype, is_autocast_cache_enabled, is_autocast_cpu_enabled,
                                is_autocast_enabled, set_autocast_cache_enabled, set_autocast_cpu_dtype,
                                set_autocast_cpu_enabled, set_autocast_dtype, set_autocast_enabled,
                                set_autocast_gpu_dtype)
from .amp.grad_scaler import GradScaler
# the long tail real programs use (issue 14): legacy constructors, layouts, limits, process switches
from .creation import (BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor,
                       IntTensor, LongTensor, ShortTensor)
from ._layouts import (channels_last, channels_last_3d, contiguous_format, layout, legacy_contiguous_format,
                       memory_format, preserve_format, strided)
from ._typeinfo import finfo, iinfo
from ._switches import *  # noqa: F401,F403 - determinism, matmul precision, threads, warn_always
from ._switches import tune_gc as _tune_gc

_tune_gc()  # the tape's objects would set the cyclic collector off several times a step (_switches.tune_gc)
from .autograd.anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled
from .autograd.anomaly import set_detect_anomaly as set_anomaly_enabled

half, float, double = float16, float32, float64
short, int, long = int16, int32, int64
cfloat, cdouble = complex64, complex128
pi, e, inf, nan, newaxis = _math.pi, _math.e, _math.inf, _math.nan, None
__version__ = "0.1.0"


def result_type(tensor1, tensor2):
    """The dtype of ``tensor1 op tensor2`` under PyTorch's promotion.  >>> wb.result_type(wb.tensor([1]), 1.0)"""
    a = tensor1._data if isinstance(tensor1, Tensor) else tensor1
    b = tensor2._data if isinstance(tensor2, Tensor) else tensor2
    return _dtypes.from_numpy_dtype(_result_dtype(a, b))


def can_cast(from_, to):
    """Whether PyTorch's casting rules allow from_ -> to in in-place ops (no category downgrade)."""
    return from_.category <= to.category


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(input):
    return input.is_floating_point()


def is_complex(input):
    return input.is_complex()


def numel(input):
    return input.numel()


def typename(obj, /):
    """The type of ``obj`` as a string: a tensor's legacy type name (``x.type()``), else module.qualname
    (builtins bare).  >>> wb.typename(wb.nn.Linear(1, 1))  ->  'workbench.nn.modules.linear.Linear'"""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = obj if isinstance(obj, type) or callable(obj) and hasattr(obj, "__qualname__") else type(obj)
    module, qualname = getattr(cls, "__module__", "") or "", getattr(cls, "__qualname__", type(cls).__name__)
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None):
    """A 0-d tensor holding the number ``s``, in the default float dtype unless ``dtype`` says otherwise.

    >>> import workbench as wb
    >>> wb.scalar_tensor(3), wb.scalar_tensor(2, dtype=wb.int64)
    (tensor(3.), tensor(2))
    """
    return full((), s, dtype=dtype or get_default_dtype(), device=device)

# Subpackages load on first use, so `import workbench` stays fast (and never imports cupy).
_SUBMODULES = {"nn", "optim", "utils", "viz", "linalg", "func", "multiprocessing", "distributed", "special", "fft", "testing",
               "library", "jit", "backends", "compiler", "onnx", "serialization", "distributions", "signal",
               "profiler", "futures", "_dynamo"}
_LAZY = {"save": "serialization", "load": "serialization", "einsum": "ops.linalg", "compile": "compiler", "vmap": "func"}


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module("." + name, __name__)
    if name in _LAZY:
        return getattr(importlib.import_module("." + _LAZY[name], __name__), name)
    raise AttributeError(f"module 'workbench' has no attribute '{name}'")
