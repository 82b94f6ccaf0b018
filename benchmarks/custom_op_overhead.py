"""What a call of a user's operator costs: workbench.library.custom_op against torch.library.custom_op, measured side
by side in one run, on a tiny tensor (so the framework's overhead is what is timed).

    python benchmarks/custom_op_overhead.py [--quick]    (--quick: fewer repetitions, no PyTorch C++ build)

* call        op(x) on a tensor that does not require grad (schema check, dispatch, output checks)
* fwd+bwd     op(x).sum().backward() on a leaf that requires grad (one node recorded, its backward run)
* C++ call    a C function bound by cpp_extension.load_inline (workbench, ctypes) against the same function
              bound by torch's load_inline (pybind11): y += 2 x on 16 floats

Single-threaded, CPU time of this process, the minimum over repetitions.
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import workbench as wb  # noqa: E402
from workbench.utils import cpp_extension  # noqa: E402

try:
    import torch  # noqa: E402
    import torch.utils.cpp_extension as torch_ext  # noqa: E402

    torch.set_num_threads(1)
except ImportError:
    torch = None

AXPY = "for (long i = 0; i < n; ++i) y[i] += a * x[i];"


def best_us(fn, number, repeat):
    return min(timeit.repeat(fn, number=number, repeat=repeat, timer=time.process_time)) / number * 1e6


def _ops(lib, custom_op, Tensor):
    @custom_op(f"bench_{lib.__name__}::neg", mutates_args=())
    def neg(x: Tensor) -> Tensor:
        return -x

    neg.register_autograd(lambda ctx, g: -g)
    x = lib.ones(16)
    leaf = lib.ones(16, requires_grad=True)

    def fwd_bwd():
        leaf.grad = None
        neg(leaf).sum().backward()

    return {"call": lambda: neg(x), "fwd+bwd": fwd_bwd}


def _cpp(build_dir, with_torch):
    wb_mod = cpp_extension.load_inline("bench_axpy", f'extern "C" void axpy(float a, const float* x, float* y, long n)'
                                                     f' {{ {AXPY} }}', build_directory=build_dir)
    x, y = wb.ones(16), wb.zeros(16)
    out = {"workbench": lambda: wb_mod.axpy(2.0, x, y, 16)}
    if with_torch:  # torch's build takes a minute (its headers); --quick skips it
        try:
            t_mod = torch_ext.load_inline(
                "bench_axpy_torch",
                "void axpy(double a, torch::Tensor x, torch::Tensor y) { long n = x.numel(); "
                "const float* xp = x.data_ptr<float>(); float* yp = y.data_ptr<float>(); "
                "for (long i = 0; i < n; ++i) yp[i] += a * xp[i]; }",
                functions=["axpy"], build_directory=build_dir)
            tx, ty = torch.ones(16), torch.zeros(16)
            out["pytorch"] = lambda: t_mod.axpy(2.0, tx, ty)
        except Exception as e:  # torch's build needs its headers and ninja; report without it
            print(f"(torch's load_inline failed, C++ figure for workbench only: {type(e).__name__})")
    return out


def main():
    quick = "--quick" in sys.argv
    number, repeat = (500, 3) if quick else (5000, 7)
    cases = {"workbench": _ops(wb, wb.library.custom_op, wb.Tensor)}
    if torch is not None:
        cases["pytorch"] = _ops(torch, torch.library.custom_op, torch.Tensor)
    rows = {}
    for mode in ("call", "fwd+bwd"):
        for name, fns in cases.items():  # the libraries take turns, so a load change hits both
            rows.setdefault(mode, {})[name] = best_us(fns[mode], number, repeat)
    with tempfile.TemporaryDirectory() as d:
        rows["C++ call"] = {k: best_us(fn, number, repeat) for k, fn in _cpp(d, torch is not None and not quick).items()}
    print(f"{'':12}{'workbench µs':>14}{'PyTorch µs':>12}{'ratio':>8}")
    for mode, r in rows.items():
        w, t = r["workbench"], r.get("pytorch")
        print(f"{mode:12}{w:14.2f}" + (f"{t:12.2f}{w / t:8.2f}" if t else ""))


if __name__ == "__main__":
    main()
