"""CUDA extensions: cuda_sources kernels (NVRTC through CuPy) and workbench.cuda.elementwise, registered as custom ops
with a C++ reference. Here nvcc compiles the sources and the fake cupy runs the kernels on its CPU emulator against
their references; on a GPU (make test-gpu) the real kernels run against them."""
import shutil
import subprocess

import numpy as np
import pytest

import workbench as wb
from workbench import _backend
from workbench.library import custom_op, opcheck
from workbench.testing.cuda_emulator import NotEmulated
from workbench.testing.custom_ops import assert_matches_reference
from workbench.utils import cpp_extension

REFERENCE = r"""
#include <cmath>
template <typename T> static void fwd(const T* x, T* y, long long n) {
    for (long long i = 0; i < n; ++i) y[i] = x[i] / (T(1) + std::exp(-x[i]));
}
extern "C" void swish_ref_f32(const float* x, float* y, long long n) { fwd(x, y, n); }
extern "C" void swish_ref_f64(const double* x, double* y, long long n) { fwd(x, y, n); }
"""

KERNELS = r"""
template <typename T> __device__ void fwd(const T* __restrict__ x, T* __restrict__ y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] / (T(1) + exp(-x[i]));
}
extern "C" __global__ void swish_f32(const float* x, float* y, long long n) { fwd(x, y, n); }
extern "C" __global__ void swish_f64(const double* x, double* y, long long n) { fwd(x, y, n); }
"""

SWISH_ELEMENTWISE = wb.cuda.elementwise("T x", "T y", "y = x / (T(1) + exp(-x))", "wbt_swish_ew")


@pytest.fixture(scope="module")
def ext(tmp_path_factory):
    if shutil.which("c++") is None and shutil.which("g++") is None:
        pytest.skip("needs a C++ compiler")
    return cpp_extension.load_inline("wbt_cuda_swish", REFERENCE, cuda_sources=KERNELS,
                                     build_directory=str(tmp_path_factory.mktemp("cuext")))


@pytest.fixture(scope="module")
def swish(ext):
    ref = {wb.float32: ext.swish_ref_f32, wb.float64: ext.swish_ref_f64}
    kern = {wb.float32: ext.swish_f32, wb.float64: ext.swish_f64}

    @custom_op("wbcu::swish", mutates_args=(), device_types="cpu")
    def swish(x: wb.Tensor) -> wb.Tensor:  # the C++ reference
        x = x.contiguous()
        y = wb.empty_like(x)
        ref[x.dtype](x, y, x.numel())
        return y

    @swish.register_kernel("cuda")
    def _(x):
        x = x.contiguous()
        y = wb.empty_like(x)
        kern[x.dtype](x, y, x.numel())  # one thread per element, on the current stream of x's device
        return y

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        s = wb.sigmoid(x)
        return g * (s + x * s * (1 - s))

    swish.register_autograd(backward, setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))
    swish.register_fake(lambda x: wb.empty_like(x))
    return swish


def _nvcc(tmp_path, source, name):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed on this machine")
    src = tmp_path / f"{name}.cu"
    src.write_text(source)
    r = subprocess.run([nvcc, "-arch=sm_90", "-ptx", "-std=c++17", "-o", str(tmp_path / f"{name}.ptx"), str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return (tmp_path / f"{name}.ptx").read_text()


def test_cuda_sources_compile_with_nvcc(ext, tmp_path):
    ptx = _nvcc(tmp_path, cpp_extension.cuda_source_text(ext), "kernels")
    assert ".entry swish_f32" in ptx and ".entry swish_f64" in ptx
    ptx = _nvcc(tmp_path, SWISH_ELEMENTWISE.cuda_source(T="float"), "elementwise")
    assert ".entry wbt_swish_ew" in ptx


def test_kernels_are_bound_from_their_signatures(ext):
    assert "__global__" not in str(ext.swish_f32._sig) and ext.swish_f32._sig.is_kernel
    assert [str(p) for p in ext.swish_f32._sig.params] == ["const float* x", "float* y", "long long n"]
    assert callable(ext.swish_ref_f32) and not ext.swish_ref_f32._sig.is_kernel


def test_dispatch_on_the_fake_cupy(swish, ext, fake_cuda):
    # the fake cupy runs the kernel on its CPU emulator: the numbers below are the CUDA kernel's
    x = wb.randn(4, 3, dtype=wb.float64, device="cuda", requires_grad=True)
    y = swish(x)
    assert y.device.type == "cuda" and y.grad_fn.op == "wbcu::swish"
    xh = x.detach().cpu().numpy()
    np.testing.assert_allclose(y.detach().cpu().numpy(), xh / (1 + np.exp(-xh)), rtol=1e-12)
    y.sum().backward()
    assert x.grad.device.type == "cuda"
    for dt in (wb.float32, wb.float64):
        assert_matches_reference(swish, (wb.randn(1000, 3, dtype=dt, requires_grad=True),), rtol=1e-5, atol=1e-6)
    r = opcheck(swish, (wb.randn(5, dtype=wb.float64, device="cuda", requires_grad=True),))
    assert set(r.values()) == {"SUCCESS"}
    xs = wb.randn(300, device="cuda")  # two blocks of 256 threads
    out = wb.empty(300, device="cuda")
    v0 = out._version
    ext.swish_f32(xs, out, 300)
    assert out._version == v0 + 1
    np.testing.assert_allclose(out.cpu().numpy(), wb.nn.functional.silu(xs).cpu().numpy(), rtol=1e-6)


def test_elementwise_on_the_fake_cupy(fake_cuda):
    for dt in (wb.float32, wb.float64):
        x = wb.randn(3, 5, dtype=dt, device="cuda")
        y = SWISH_ELEMENTWISE(x)
        assert y.device.type == "cuda" and y.dtype == dt and y.shape == (3, 5)
        np.testing.assert_allclose(y.cpu().numpy(), wb.nn.functional.silu(x).cpu().numpy(), rtol=1e-6)
    out = wb.empty(3, 5, device="cuda")
    assert SWISH_ELEMENTWISE(x.float(), out) is out
    np.testing.assert_allclose(out.cpu().numpy(), y.float().cpu().numpy(), rtol=1e-6)
    # inputs broadcast, a fixed-type scalar parameter, two outputs
    axpb = wb.cuda.elementwise("T x, T b, float32 a", "T y, T z", "y = a * x + b; z = -y", "wbt_axpb")
    y, z = axpb(wb.ones(2, 3, device="cuda"), wb.arange(3.0, device="cuda"), 2.0)
    np.testing.assert_array_equal(y.cpu().numpy(), [[2, 3, 4], [2, 3, 4]])
    np.testing.assert_array_equal(z.cpu().numpy(), -y.cpu().numpy())


BUGGY = r"""
extern "C" __global__ void twice(const float* x, float* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n - 1) y[i] = 2 * x[i];   // misses the last element
}
"""

SHARED = r"""
extern "C" __global__ void twice(const float* x, float* y, long long n) {
    __shared__ float tile[256];
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) { tile[threadIdx.x] = x[i]; __syncthreads(); y[i] = 2 * tile[threadIdx.x]; }
}
"""


def _twice_op(name, mod):
    @custom_op(f"wbcu::{name}", mutates_args=(), device_types="cpu")
    def twice(x: wb.Tensor) -> wb.Tensor:
        return x * 2

    @twice.register_kernel("cuda")
    def _(x):
        y = wb.zeros_like(x)
        mod.twice(x.contiguous(), y, x.numel())
        return y

    return twice


def test_the_fake_cupy_tests_the_kernel_itself(fake_cuda, tmp_path):
    # a wrong kernel fails its comparison with the reference on a CPU-only machine
    buggy = _twice_op("twice_buggy", cpp_extension.load_inline("wbt_buggy", "", cuda_sources=BUGGY,
                                                               build_directory=str(tmp_path)))
    with pytest.raises(AssertionError, match="cuda kernel vs CPU reference"):
        assert_matches_reference(buggy, (wb.randn(10),), grads=False)
    # one the emulator cannot run exactly (shared memory, barriers) leaves its op to the reference
    mod = cpp_extension.load_inline("wbt_shared", "", cuda_sources=SHARED, build_directory=str(tmp_path))
    with pytest.raises(NotEmulated, match="__shared__"):
        mod.twice(wb.ones(3, device="cuda"), wb.empty(3, device="cuda"), 3)
    shared = _twice_op("twice_shared", mod)
    x = wb.randn(10, device="cuda")
    np.testing.assert_array_equal(shared(x).cpu().numpy(), 2 * x.cpu().numpy())


def test_emulated_grids_and_compile_errors(fake_cuda):
    mod = fake_cuda.RawModule(code=r"""
extern "C" __global__ void coords(int* out, int w) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w) out[y * w + x] = 100 * y + x;
}""")
    out = fake_cuda.zeros((4, 6), dtype=np.int32)
    mod.get_function("coords")((2, 2), (4, 2), (out, np.int32(6)))
    np.testing.assert_array_equal(out.get(), 100 * np.arange(4)[:, None] + np.arange(6))
    with pytest.raises(RuntimeError, match="named symbol not found"):
        mod.get_function("nope")
    with pytest.raises(NotEmulated, match="error: .*undeclared"):
        fake_cuda.RawModule(code='extern "C" __global__ void k(float* y) { y[0] = undeclared_thing; }')


def test_cuda_kernels_need_cuda(ext):
    prev = _backend._cupy
    _backend.use_cupy(None)
    try:
        if _backend.cupy_loaded() or wb.cuda.is_available():
            pytest.skip("CuPy is installed here")
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            ext.swish_f32(wb.ones(2), wb.ones(2), 2)
    finally:
        _backend.use_cupy(prev)


@pytest.mark.gpu
def test_kernels_match_their_references_on_a_gpu(swish):
    for dt in (wb.float32, wb.float64):
        assert_matches_reference(swish, (wb.randn(1000, 3, dtype=dt, requires_grad=True),), rtol=1e-5, atol=1e-6)
    r = opcheck(swish, (wb.randn(64, dtype=wb.float64, device="cuda", requires_grad=True),))
    assert set(r.values()) == {"SUCCESS"}
    x = wb.randn(1 << 16, device="cuda")
    y = SWISH_ELEMENTWISE(x)
    xh = x.cpu().numpy()
    np.testing.assert_allclose(y.cpu().numpy(), xh / (1 + np.exp(-xh)), rtol=1e-5, atol=1e-6)
    out = wb.empty_like(x)
    assert SWISH_ELEMENTWISE(x, out) is out
