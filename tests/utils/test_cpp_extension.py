"""workbench.utils.cpp_extension: C/C++ built with the system compiler, bound through the C ABI, cached by source
hash, registered as a custom op (forward, backward, gradcheck, opcheck, training)."""
import os
import shutil

import numpy as np
import pytest

import workbench as wb
from workbench.library import custom_op, opcheck
from workbench.utils import cpp_extension

pytestmark = pytest.mark.skipif(shutil.which("c++") is None and shutil.which("g++") is None,
                                reason="needs a C++ compiler")

AXPY = 'extern "C" void axpy(float a, const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] += a * x[i]; }'

SWISH_CPP = r"""
#include <cmath>
// one template, instantiated for float32 and float64 below
template <typename T> static void fwd(const T* x, T* y, long n) {
    for (long i = 0; i < n; ++i) y[i] = x[i] / (T(1) + std::exp(-x[i]));
}
template <typename T> static void bwd(const T* x, const T* g, T* dx, long n) {
    for (long i = 0; i < n; ++i) {
        T s = T(1) / (T(1) + std::exp(-x[i]));
        dx[i] = g[i] * (s + x[i] * s * (T(1) - s));
    }
}
extern "C" {
void swish_fwd_f32(const float* x, float* y, long n) { fwd(x, y, n); }
void swish_fwd_f64(const double* x, double* y, long n) { fwd(x, y, n); }
void swish_bwd_f32(const float* x, const float* g, float* dx, long n) { bwd(x, g, dx, n); }
void swish_bwd_f64(const double* x, const double* g, double* dx, long n) { bwd(x, g, dx, n); }
}
"""


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("ext"))


def test_axpy_updates_y_in_place(build_dir):
    mod = cpp_extension.load_inline("wbt_axpy", AXPY, functions=["axpy"], build_directory=build_dir)
    x, y = wb.arange(4.0), wb.ones(4)
    v = y._version
    assert mod.axpy(2.0, x, y, x.numel()) is None
    assert y.tolist() == [1.0, 3.0, 5.0, 7.0] and y._version == v + 1
    a = np.ones(4, np.float32)
    mod.axpy(1, np.arange(4, dtype=np.float32), a, 4)  # NumPy arrays pass their buffers too; ints pass to float
    assert a.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert "void axpy(float a, const float* x, float* y, long n)" in mod.axpy.__doc__


def test_the_c_abi_refuses_what_it_cannot_pass(build_dir, fake_cuda):
    mod = cpp_extension.load_inline("wbt_axpy", AXPY, functions=["axpy"], build_directory=build_dir)
    x, y = wb.ones(3), wb.zeros(3)
    with pytest.raises(TypeError, match=r"argument 1 'x' \(const float\* x\) expected a float32 buffer, but got "
                                        "dtype float64"):
        mod.axpy(2.0, x.double(), y, 3)
    with pytest.raises(RuntimeError, match=r"argument 1 'x' .* must be contiguous .* strides"):
        mod.axpy(2.0, wb.ones(3, 2).t(), wb.zeros(2, 3), 6)
    with pytest.raises(TypeError, match="takes 4 arguments"):
        mod.axpy(2.0, x, y)
    with pytest.raises(TypeError, match="'n' is a long and takes an integer, got float"):
        mod.axpy(2.0, x, y, 3.0)
    with pytest.raises(TypeError, match="takes a Python number, got a Tensor"):
        mod.axpy(wb.tensor(2.0), x, y, 3)
    with pytest.raises(RuntimeError, match="expected a CPU tensor, but got one on cuda:0"):
        mod.axpy(2.0, x.cuda(), y, 3)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad cannot be modified in place"):
        mod.axpy(2.0, x, wb.zeros(3, requires_grad=True), 3)
    frozen = np.zeros(3, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(RuntimeError, match="read-only"):
        mod.axpy(2.0, x, frozen, 3)
    assert y.tolist() == [0.0, 0.0, 0.0]  # nothing was half-applied


def test_build_cache_is_reused_and_keyed_on_the_sources(tmp_path, monkeypatch):
    header = tmp_path / "inc" / "k.h"
    header.parent.mkdir()
    header.write_text("#define K 2.0f\n")
    src = '#include "k.h"\nextern "C" float times_k(float x) { return K * x; }'
    kw = dict(build_directory=str(tmp_path), extra_include_paths=[str(header.parent)])
    m1 = cpp_extension.load_inline("wbt_cache", src, **kw)
    assert m1.times_k(3.0) == 6.0
    stamp = os.stat(m1.__file__).st_mtime_ns

    def no_compiler(*a, **k):
        raise AssertionError("the compiler ran although the build is cached")

    monkeypatch.setattr(cpp_extension.subprocess, "run", no_compiler)
    m2 = cpp_extension.load_inline("wbt_cache", src, **kw)
    assert m2.__file__ == m1.__file__ and os.stat(m2.__file__).st_mtime_ns == stamp and m2.times_k(1.0) == 2.0
    monkeypatch.undo()
    m3 = cpp_extension.load_inline("wbt_cache", src.replace("K * x", "K * x + 1"), **kw)
    assert m3.__file__ != m1.__file__ and m3.times_k(1.0) == 3.0
    header.write_text("#define K 10.0f\n")  # an included header changed: rebuilt although the source is the same
    m4 = cpp_extension.load_inline("wbt_cache", src, **kw)
    assert m4.times_k(1.0) == 10.0


def test_compiler_errors_carry_the_compilers_lines(build_dir):
    with pytest.raises(RuntimeError) as e:
        cpp_extension.load_inline("wbt_broken", 'extern "C" void f(float* x) {\n  x[0] = not_declared;\n}',
                                  build_directory=build_dir)
    msg = str(e.value)
    assert "Error building extension 'wbt_broken'" in msg
    assert "wbt_broken.cpp:2:" in msg and "not_declared" in msg and "error" in msg


def test_libtorch_sources_are_refused(build_dir):
    src = '#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor x) { return x; }\n' \
          'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("f", &f); }'
    with pytest.raises(RuntimeError, match=r"line 1, uses libtorch's C\+\+ API .*extern \"C\" functions on plain "
                                           "pointers"):
        cpp_extension.load_inline("wbt_torch", src, functions=["f"], build_directory=build_dir)
    with pytest.raises(RuntimeError, match="no extern \"C\" function named \\['g'\\]"):
        cpp_extension.load_inline("wbt_mangled", "void g(float* x) { x[0] = 1; }", functions=["g"],
                                  build_directory=build_dir)


def test_load_builds_c_and_cpp_files_and_binds_every_function(tmp_path):
    (tmp_path / "dot.c").write_text("/* C: no extern \"C\" needed */\n"
                                    "double dot(const double* a, const double* b, long n) {\n"
                                    "  double s = 0; for (long i = 0; i < n; ++i) s += a[i] * b[i]; return s; }\n"
                                    "static int helper(void) { return 0; }\n")
    (tmp_path / "fill.cpp").write_text('#include <cstddef>\n#include <cstdint>\nextern "C" void fill(int64_t* out, int64_t v, '
                                       'size_t n) { for (size_t i = 0; i < n; ++i) out[i] = v; }\n')
    mod = cpp_extension.load("wbt_load", [str(tmp_path / "dot.c"), str(tmp_path / "fill.cpp")],
                             build_directory=str(tmp_path / "build"))
    assert mod.dot(wb.ones(5, dtype=wb.float64), wb.arange(5.0, dtype=wb.float64), 5) == 10.0
    out = wb.zeros(3, dtype=wb.int64)
    mod.fill(out, 7, 3)
    assert out.tolist() == [7, 7, 7] and not hasattr(mod, "helper")


def _swish_module(build_dir):
    return cpp_extension.load_inline("wbt_swish", SWISH_CPP, build_directory=build_dir)


@pytest.fixture(scope="module")
def cpp_swish(build_dir):
    mod = _swish_module(build_dir)
    fwd = {wb.float32: mod.swish_fwd_f32, wb.float64: mod.swish_fwd_f64}
    bwd = {wb.float32: mod.swish_bwd_f32, wb.float64: mod.swish_bwd_f64}

    @custom_op("wbcpp::swish", mutates_args=(), device_types="cpu")
    def swish(x: wb.Tensor) -> wb.Tensor:
        x = x.contiguous()
        y = wb.empty_like(x)
        fwd[x.dtype](x, y, x.numel())
        return y

    @custom_op("wbcpp::swish_backward", mutates_args=(), device_types="cpu")
    def swish_backward(x: wb.Tensor, g: wb.Tensor) -> wb.Tensor:
        x, g = x.contiguous(), g.contiguous()
        dx = wb.empty_like(x)
        bwd[x.dtype](x, g, dx, x.numel())
        return dx

    swish.register_fake(lambda x: wb.empty_like(x))
    swish.register_autograd(lambda ctx, g: swish_backward(ctx.saved_tensors[0], g),
                            setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))
    return swish


def test_cpp_op_end_to_end(cpp_swish):
    x = wb.randn(3, 5, dtype=wb.float64, requires_grad=True)
    y = cpp_swish(x)
    xn = x.detach().numpy()
    np.testing.assert_allclose(y.detach().numpy(), xn / (1 + np.exp(-xn)), rtol=1e-12)
    assert y.grad_fn.op == "wbcpp::swish"
    y.sum().backward()
    s = 1 / (1 + np.exp(-xn))
    np.testing.assert_allclose(x.grad.numpy(), s + xn * s * (1 - s), rtol=1e-12)
    assert wb.autograd.gradcheck(cpp_swish, (x,))
    assert set(opcheck(cpp_swish, (x,)).values()) == {"SUCCESS"}
    assert cpp_swish(wb.randn(4, 3).t()).shape == (3, 4)  # non-contiguous input: the op copies before the call


def test_cpp_op_in_a_model_trained_a_few_steps(cpp_swish):
    wb.manual_seed(1)
    X = wb.randn(64, 3)
    Y = (X ** 2).sum(1, keepdim=True)
    net = wb.nn.Sequential(wb.nn.Linear(3, 16), wb.nn.Module(), wb.nn.Linear(16, 1))
    net[1].forward = cpp_swish
    ref = wb.nn.Sequential(wb.nn.Linear(3, 16), wb.nn.SiLU(), wb.nn.Linear(16, 1))
    ref.load_state_dict(net.state_dict())
    curves = []
    for model in (net, ref):
        opt = wb.optim.Adam(model.parameters(), lr=0.02)
        curve = []
        for _ in range(8):
            opt.zero_grad()
            loss = wb.nn.functional.mse_loss(model(X), Y)
            loss.backward()
            opt.step()
            curve.append(loss.item())
        curves.append(curve)
    np.testing.assert_allclose(curves[0], curves[1], rtol=1e-4)
    assert curves[0][-1] < 0.8 * curves[0][0]


STRIDED = r"""
#include <workbench/extension.h>
extern "C" double total(const wb_tensor* x) {  // any 2-D float64 view: walks its strides
    if (x->dtype != WB_FLOAT64 || x->ndim != 2) return -1.0;
    const double* d = (const double*)x->data;
    double s = 0;
    for (int64_t i = 0; i < x->shape[0]; ++i)
        for (int64_t j = 0; j < x->shape[1]; ++j) s += (i + 1) * d[i * x->strides[0] + j * x->strides[1]];
    return s;
}
extern "C" void fill_diag(wb_tensor* x, double v) {
    double* d = (double*)x->data;
    for (int64_t i = 0; i < x->shape[0] && i < x->shape[1]; ++i) d[i * x->strides[0] + i * x->strides[1]] = v;
}
"""


def test_the_richer_abi_passes_shape_strides_and_dtype(build_dir):
    mod = cpp_extension.load_inline("wbt_strided", STRIDED, build_directory=build_dir)
    base = wb.arange(12.0, dtype=wb.float64).reshape(3, 4)
    view = base.t()[1:, ::2]  # non-contiguous, offset, negative-free strides
    expect = sum((i + 1) * v for i, row in enumerate(view.tolist()) for v in row)
    assert mod.total(view) == expect
    assert mod.total(wb.ones(2, 2)) == -1.0  # the function sees the dtype code and refuses float32 itself
    assert mod.total(np.arange(6.0).reshape(2, 3)[:, ::-1]) == sum((i + 1) * v for i, row in
                                                                    enumerate([[2, 1, 0], [5, 4, 3]]) for v in row)
    v = base._version
    mod.fill_diag(base.t(), -1.0)  # writes through a transposed view into base
    assert base[0, 0].item() == base[1, 1].item() == base[2, 2].item() == -1.0 and base._version == v + 1
