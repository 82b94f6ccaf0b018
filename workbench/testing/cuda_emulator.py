"""CUDA kernels run on the CPU, for the fake cupy: its ``RawModule`` and ``ElementwiseKernel`` in CPU-only CI.

The kernel source is compiled as C++ (with the system compiler, through cpp_extension's cached build) after a
prelude that defines ``threadIdx``/``blockIdx``/``blockDim``/``gridDim`` and makes the CUDA qualifiers plain C++;
each launch runs every thread of every block in turn, on the fake device arrays' host memory. That is exact for
kernels whose threads are independent (elementwise and row-wise kernels, the common custom kernel), which is what
it accepts: a source using shared memory, barriers, atomics or warp intrinsics raises ``NotEmulated``, and a custom
op then runs its CPU reference instead (as Numba's CUDA simulator, this is a test tool, not a GPU). A source the
C++ compiler refuses (a CUDA-only intrinsic) raises ``NotEmulated`` with the compiler's lines; nvcc, not this
emulator, is the judge of whether CUDA code compiles.

An elementwise kernel runs as the standalone kernel ``workbench.cuda.ElementwiseKernel.cuda_source`` writes (the
one CI compiles with nvcc), its type placeholders bound from the arguments' dtypes, its inputs broadcast.
"""
import ctypes
import hashlib
import os
import re
import tempfile

import numpy

from . import fake_cuda_graph
from .. import cuda
from ..utils import _c_abi, cpp_extension

_UNSUPPORTED = re.compile(r"\b(__syncthreads\w*|__shared__|atomic[A-Z]\w*|__shfl\w*|__ballot\w*|__any_sync|"
                          r"__all_sync|__syncwarp|warpSize|cooperative_groups|__ldg|tex[123]D\w*|surf\w+|clock64|"
                          r"__half2?|__nv_bfloat16)\b")
PRELUDE = r"""
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
using namespace std;
struct __wb_uint3 { unsigned int x, y, z; };
static thread_local __wb_uint3 threadIdx, blockIdx, blockDim, gridDim;  // launches from two threads do not mix
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
// CUDA's fast-math intrinsics, as the exact functions (glibc declares some of these names itself)
#define __expf expf
#define __logf logf
#define __sinf sinf
#define __cosf cosf
#define __powf powf
#define __fdividef(a, b) ((a) / (b))
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
"""


class NotEmulated(RuntimeError):
    """The kernel uses a CUDA feature the CPU emulator cannot reproduce exactly."""


def _launcher(sig):
    params = ", ".join(f"{'const ' if p.const else ''}{p.type}{'*' * p.pointer} a{k}"
                       for k, p in enumerate(sig.params))
    call = ", ".join(f"a{k}" for k in range(len(sig.params)))
    return (f'extern "C" void __wb_launch_{sig.name}(unsigned gx, unsigned gy, unsigned gz, unsigned bx, '
            f'unsigned by, unsigned bz{", " if params else ""}{params}) {{\n'
            "  gridDim = {gx, gy, gz}; blockDim = {bx, by, bz};\n"
            "  for (unsigned z = 0; z < gz; ++z) for (unsigned y = 0; y < gy; ++y) for (unsigned x = 0; x < gx; ++x) {\n"
            "    blockIdx = {x, y, z};\n"
            "    for (unsigned tz = 0; tz < bz; ++tz) for (unsigned ty = 0; ty < by; ++ty)"
            " for (unsigned tx = 0; tx < bx; ++tx) {\n"
            f"      threadIdx = {{tx, ty, tz}}; {sig.name}({call});\n    }}\n  }}\n}}\n")


class EmulatedModule:
    """``cupy.RawModule(code=..., options=...)`` on the fake cupy: the kernels, compiled for the CPU.

    >>> import numpy as np
    >>> mod = EmulatedModule(code='extern "C" __global__ void scale(float* y, float a, int n) {'
    ...     ' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] *= a; }')
    >>> y = np.ones(5, np.float32)
    >>> mod.get_function("scale")((2,), (4,), (y, np.float32(3), np.int32(5))); y
    array([3., 3., 3., 3., 3.], dtype=float32)
    """

    def __init__(self, code=None, path=None, options=(), **kwargs):
        if code is None:
            with open(path) as f:
                code = f.read()
        m = _UNSUPPORTED.search(_c_abi.strip_comments(code))
        if m:
            raise NotEmulated(f"the fake cupy's CPU emulator runs kernels whose threads are independent; this one uses "
                              f"{m.group(0)!r}. Test it on a GPU (make test-gpu); its op's CPU reference runs here")
        self._sigs = {k: v for k, v in _c_abi.functions_in(code).items() if v.is_kernel}
        source = PRELUDE + code + "\n" + "".join(_launcher(s) for s in self._sigs.values())
        includes = [o[2:] for o in options if o.startswith("-I")]
        digest = hashlib.sha256(source.encode()).hexdigest()[:16]
        build = os.path.join(tempfile.gettempdir(), "workbench_fake_cupy_kernels")
        os.makedirs(build, exist_ok=True)
        src = os.path.join(build, f"k_{digest}.cpp")
        if not os.path.exists(src):
            with open(src, "w") as f:
                f.write(source)
        try:
            lib, _ = cpp_extension._build(f"k_{digest}", [(src, False)], ["-O1"], None, includes, build, False)
        except RuntimeError as e:
            raise NotEmulated(f"the fake cupy's CPU emulator could not compile the kernel as C++ (a CUDA-only "
                              f"intrinsic?); nvcc decides whether it is valid CUDA. {e}") from None
        self._dll = ctypes.CDLL(lib)

    def get_function(self, name):
        sig = self._sigs.get(name)
        if sig is None:
            raise RuntimeError(f"CUDA_ERROR_NOT_FOUND: named symbol not found: {name!r} is not an extern \"C\" "
                               f"__global__ kernel of the module (kernels: {sorted(self._sigs)})")
        return EmulatedKernel(sig, getattr(self._dll, f"__wb_launch_{name}"))


def _dims(d):
    d = tuple(d) if isinstance(d, (tuple, list)) else (int(d),)
    return tuple(int(v) for v in d) + (1,) * (3 - len(d))


class EmulatedKernel:
    """A kernel of an ``EmulatedModule``: ``kernel(grid, block, args, shared_mem=0)`` as CuPy's RawKernel."""

    def __init__(self, sig, fn):
        self._sig = sig
        self._fn = fn
        fn.argtypes = [ctypes.c_uint] * 6 + [ctypes.c_void_p if p.pointer else _c_abi._TYPES[p.type][0]
                                             for p in sig.params]
        fn.restype = None

    def __call__(self, grid, block, args, *, shared_mem=0):
        if fake_cuda_graph.CAPTURING[0] is not None:  # a launch into a capturing stream is recorded, not run
            return fake_cuda_graph.inplace(lambda: self(grid, block, args, shared_mem=shared_mem), None)
        if len(args) != len(self._sig.params):
            raise TypeError(f"{self._sig.name}: {len(args)} arguments for a kernel of {len(self._sig.params)}")
        if shared_mem:
            raise NotEmulated(f"{self._sig.name}: dynamic shared memory cannot be emulated")
        conv = []
        for p, a in zip(self._sig.params, args):
            if p.pointer:
                conv.append(a.__array_interface__["data"][0] if hasattr(a, "__array_interface__") else (a or None))
            else:
                conv.append(a.item() if hasattr(a, "item") else a)
        self._fn(*_dims(grid), *_dims(block), *conv)


def _elementwise_params(text):
    # CuPy's parameter list 'T x, raw T y, float32 a' -> [(raw, type, name)]
    out = []
    for p in (q.split() for q in text.split(",") if q.strip()):
        raw = p[0] == "raw"
        out.append((raw, p[1], p[2]) if raw else (False, p[0], p[1]))
    return out


def _host(a):
    return a.view(numpy.ndarray) if isinstance(a, numpy.ndarray) else numpy.asarray(a)


class EmulatedElementwiseKernel:
    """``cupy.ElementwiseKernel(in_params, out_params, operation, name)`` on the fake cupy: ``kernel(*inputs)`` or
    ``kernel(*inputs, *outputs)``; outputs not given are allocated by ``device_array`` (the fake cupy's)."""

    def __init__(self, in_params, out_params, operation, name="kernel", device_array=None, **kwargs):
        self._kernel = cuda.ElementwiseKernel(in_params, out_params, operation, name, **kwargs)
        self._ins, self._outs = _elementwise_params(in_params), _elementwise_params(out_params)
        self._device_array = device_array
        self._compiled = {}  # bound placeholder types -> EmulatedKernel

    def __call__(self, *args, size=None, stream=None):
        if fake_cuda_graph.CAPTURING[0] is not None:  # a launch into a capturing stream is recorded, not run
            if len(args) == len(self._ins) + len(self._outs):
                return fake_cuda_graph.inplace(lambda: self(*args, size=size, stream=stream), None)
            return fake_cuda_graph.kernel(lambda: self(*args, size=size, stream=stream), args, None)
        name, n_in, n_out = self._kernel.name, len(self._ins), len(self._outs)
        if len(args) not in (n_in, n_in + n_out):
            raise TypeError(f"Wrong number of arguments for {name!r}: {n_in} or {n_in + n_out} expected, "
                            f"{len(args)} given")
        params = self._ins + self._outs
        given = list(args) + [None] * (n_in + n_out - len(args))
        types = {}
        for (_, t, _), a in zip(params, given):  # a placeholder takes the dtype of the first array bound to it
            if t not in cuda.C_TYPES and t not in types and hasattr(a, "dtype"):
                types[t] = numpy.dtype(a.dtype).name
        for (_, t, _), a in zip(self._ins, args):  # ... or of a Python scalar, where no array binds it
            if t not in cuda.C_TYPES and t not in types:
                types[t] = numpy.asarray(a).dtype.name
        unbound = sorted({t for _, t, _ in self._outs if t not in cuda.C_TYPES and t not in types})
        if unbound:
            raise TypeError(f"{name}: cannot determine the output type placeholder(s) {unbound}; pass the outputs")
        shapes = [numpy.shape(a) for (raw, _, _), a in zip(params, given) if not raw and a is not None]
        if shapes:
            shape = numpy.broadcast_shapes(*shapes)
        elif size is not None:
            shape = (int(size),)
        else:
            raise ValueError(f"{name}: loop size is undecided (all arguments are raw); pass size=")
        n = int(numpy.prod(shape))
        host, outs, copy_back = [], [], []
        for k, ((raw, t, _), a) in enumerate(zip(params, given)):
            dt = numpy.dtype(types.get(t, t))
            if k < n_in:
                h = _host(a).astype(dt, copy=False)
                host.append(numpy.ascontiguousarray(h if raw else numpy.broadcast_to(h, shape)))
                continue
            if a is None:
                a = self._device_array(numpy.empty(shape, dt))
            h = _host(a)
            if not raw and h.shape != shape:
                raise ValueError(f"{name}: output {k - n_in} has shape {h.shape}, the loop's is {shape}")
            if h.dtype != dt or not h.flags.c_contiguous:
                copy_back.append((h, len(host)))
                h = numpy.empty(h.shape, dt)
            host.append(h)
            outs.append(a)
        key = tuple(sorted(types.items()))
        kern = self._compiled.get(key)
        if kern is None:
            code = self._kernel.cuda_source(**types)
            kern = self._compiled[key] = EmulatedModule(code=code).get_function(name)
        threads = 256
        kern((max(1, (n + threads - 1) // threads),), (threads,), tuple(host) + (n,))
        for h, k in copy_back:
            h[...] = host[k]
        return outs[0] if len(outs) == 1 else tuple(outs)
