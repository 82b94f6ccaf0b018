"""``workbench.cuda``: CUDA devices through CuPy (imported only when first needed), and elementwise kernels."""
import sys as _sys

from . import _backend
from .random import default_generator
from ._backend.dtypes import float16 as _float16
from .amp._device_aliases import _module as _amp_module
from .tensor import Tensor


def is_available():
    """Whether a CUDA device can be used (CuPy installed and a GPU present).

    >>> import workbench as wb
    >>> isinstance(wb.cuda.is_available(), bool)
    True
    """
    try:
        return _backend.cupy().cuda.runtime.getDeviceCount() > 0
    except RuntimeError:
        return False


def device_count():
    """Number of CUDA devices (0 without CuPy or a GPU)."""
    try:
        return int(_backend.cupy().cuda.runtime.getDeviceCount())
    except RuntimeError:
        return 0


def _cp():
    return _backend.cupy()


def current_device():
    return _cp().cuda.Device().id


def set_device(device):
    idx = _backend.resolve_device(device if not isinstance(device, int) else f"cuda:{device}").index
    _cp().cuda.Device(idx).use()


def synchronize(device=None):
    """Wait for all kernels on the device to finish."""
    cp = _cp()
    if device is None:
        cp.cuda.Device().synchronize()
    else:
        cp.cuda.Device(_backend.resolve_device(device).index).synchronize()


def manual_seed(seed):
    default_generator.manual_seed(seed)


manual_seed_all = manual_seed


def memory_allocated(device=None):
    """Bytes held by live CuPy arrays (CuPy's default memory pool's used bytes)."""
    return int(_cp().get_default_memory_pool().used_bytes())


_peak = [0]


def max_memory_allocated(device=None):
    _peak[0] = max(_peak[0], memory_allocated(device))
    return _peak[0]


def reset_peak_memory_stats(device=None):
    _peak[0] = memory_allocated(device)


def memory_reserved(device=None):
    return int(_cp().get_default_memory_pool().total_bytes())


def empty_cache():
    """Return cached, unused blocks of CuPy's memory pool to the driver."""
    if _backend.cupy_loaded():
        _cp().get_default_memory_pool().free_all_blocks()


class device:
    """Context manager that makes a CUDA device current."""

    def __init__(self, device):
        self.idx = _backend.resolve_device(device if not isinstance(device, int) else f"cuda:{device}").index

    def __enter__(self):
        self._d = _cp().cuda.Device(self.idx)
        self._d.__enter__()

    def __exit__(self, *a):
        self._d.__exit__(*a)


class Stream:
    """A CUDA stream (CuPy's), usable as a context manager."""

    def __init__(self, device=None, priority=0):
        self._s = _cp().cuda.Stream(non_blocking=True)

    def __enter__(self):
        self._s.__enter__()
        return self

    def __exit__(self, *a):
        return self._s.__exit__(*a)

    def synchronize(self):
        self._s.synchronize()


class Event:
    """A CUDA event for timing: ``start.record(); ...; end.record(); start.elapsed_time(end)`` (ms)."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self._e = _cp().cuda.Event(block=blocking, disable_timing=not enable_timing)

    def record(self, stream=None):
        self._e.record(None if stream is None else stream._s)

    def synchronize(self):
        self._e.synchronize()

    def query(self):
        return self._e.query()

    def elapsed_time(self, end):
        return _cp().cuda.get_elapsed_time(self._e, end._e)


def current_stream(device=None):
    s = Stream.__new__(Stream)
    s._s = _cp().cuda.get_current_stream()
    return s


# --- elementwise kernels --------------------------------------------------------------------------------
_ELEMENTWISE = {}
# CuPy's dtype names of ElementwiseKernel parameters -> the C types of the kernel cuda_source writes
C_TYPES = {"float32": "float", "float64": "double", "int32": "int", "int64": "long long", "bool": "bool",
           "float16": "__half", "uint8": "unsigned char", "int8": "signed char"}


def _param_names(params):
    return [p.split()[-1] for p in params.split(",") if p.strip()]


class ElementwiseKernel:
    """A CUDA elementwise kernel over CuPy's ``ElementwiseKernel``, called with CUDA tensors (or CuPy arrays).

    Positional arguments are the inputs of ``in_params``, then optionally the outputs of ``out_params`` (written
    in place; their version counters are bumped); the outputs come back as tensors (a tuple when several). It is
    not recorded on the tape: register it as a custom op's 'cuda' kernel (with a CPU reference) for autograd.
    """

    def __init__(self, in_params, out_params, body, name, **kwargs):
        self.in_params, self.out_params, self.body, self.name, self.kwargs = in_params, out_params, body, name, kwargs
        self._n_in = len(_param_names(in_params))
        self._kernel = None

    def __repr__(self):
        return f"<workbench.cuda.ElementwiseKernel {self.name}({self.in_params}) -> ({self.out_params})>"

    def cuda_source(self, **types):
        """A standalone CUDA C kernel with this body, type placeholders bound by ``types`` (``T="float"``): what
        CI compiles with nvcc to check the body where no GPU (and so no CuPy) is present, and what the fake cupy's
        CPU emulator runs. A placeholder may be bound to a C type or to a dtype name (``T="float32"``)."""
        params, loads = [], []
        types = {k: C_TYPES.get(v, v) for k, v in types.items()}
        for kind, text in (("in", self.in_params), ("out", self.out_params)):
            for p in (q.split() for q in text.split(",") if q.strip()):
                raw = p[0] == "raw"
                t, n = (p[1], p[2]) if raw else (p[0], p[1])
                ct = types.get(t) or C_TYPES.get(t)
                if ct is None:
                    raise ValueError(f"cuda_source: bind the type placeholder {t!r}, e.g. cuda_source({t}='float')")
                const = "const " if kind == "in" else ""
                if raw:
                    params.append(f"{const}{ct}* {n}")
                else:
                    params.append(f"{const}{ct}* {n}_")
                    loads.append(f"{const}{ct}& {n} = {n}_[i];" if kind == "out" else f"const {ct} {n} = {n}_[i];")
        head = "".join(f"typedef {v} {k};\n" for k, v in types.items())
        return (f"{head}{self.kwargs.get('preamble', '')}\nextern \"C\" __global__ void {self.name}("
                f"{', '.join(params + ['long long n'])}) {{\n"
                "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;"
                " i += (long long)blockDim.x * gridDim.x) {\n"
                f"    {' '.join(loads)}\n    {self.body};\n  }}\n}}\n")

    def __call__(self, *args, size=None):
        cp = _cp()
        arrays, written, devs = [], [], set()
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                if a.device.type != "cuda":
                    raise RuntimeError(f"{self.name}: argument {i} is on {a.device}; elementwise kernels run on CUDA "
                                       "tensors (pass x.cuda())")
                devs.add(a.device.index)
                if i >= self._n_in:
                    written.append(a)
                arrays.append(a._data)
            else:
                arrays.append(a)
        if len(devs) > 1:
            raise RuntimeError(f"{self.name}: the tensors are on several devices {sorted(devs)}; move them to one")
        if self._kernel is None:
            self._kernel = cp.ElementwiseKernel(self.in_params, self.out_params, self.body, self.name, **self.kwargs)
        with cp.cuda.Device(devs.pop() if devs else cp.cuda.Device().id):
            out = self._kernel(*arrays, size=size)
        for t in written:
            t._vbox[0] += 1
        passed = {id(a._data): a for a in args if isinstance(a, Tensor)}

        def wrap(o):
            t = passed.get(id(o))
            return Tensor._make(o) if t is None else t

        return tuple(wrap(o) for o in out) if isinstance(out, tuple) else wrap(out)


def elementwise(in_params, out_params, body, name, **kwargs):
    """A CUDA elementwise kernel, made once per distinct definition (as Chainer's ``cuda.elementwise``).

    ``in_params``/``out_params`` are CuPy's parameter lists (``'T x, T beta'``, ``'T y'``), ``body`` the code run
    for each element ``i``; keyword arguments (``preamble``, ``reduce_dims``...) go to ``cupy.ElementwiseKernel``.

    >>> import workbench as wb
    >>> k = wb.cuda.elementwise("T x", "T y", "y = x / (1 + exp(-x))", "swish_fwd")
    >>> k is wb.cuda.elementwise("T x", "T y", "y = x / (1 + exp(-x))", "swish_fwd")
    True
    """
    key = (in_params, out_params, body, name, tuple(sorted(kwargs.items())))
    k = _ELEMENTWISE.get(key)
    if k is None:
        k = _ELEMENTWISE[key] = ElementwiseKernel(in_params, out_params, body, name, **kwargs)
    return k


# torch.cuda.amp (autocast, GradScaler), importable as a submodule as in PyTorch
amp = _amp_module("cuda", _float16, __name__ + ".amp")
_sys.modules[amp.__name__] = amp
