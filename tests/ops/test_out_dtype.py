"""out= of each dtype against PyTorch: which dtypes an op writes into, and that a refused out= is left untouched.

PyTorch's rule is TensorIterator's for most ops (the result's dtype must cast to out's, ``torch.can_cast``),
the same dtype for others (matmul, where, amax, floor, abs...), anything for reductions like cumsum; each
op declares its rule where it hands its result to ``out=`` (``workbench._outargs``).
"""
import warnings

import numpy as np
import pytest

import workbench as wb
from workbench.testing.op_specs import load_all

torch = pytest.importorskip("torch")

DTYPES = ("float32", "float64", "int64", "int32", "bool", "complex64", "float16")


def _cases(lib):
    f, i, b = lib.ones(3) * 1.5, lib.arange(3), lib.tensor([True, False, True])
    d, c, m = lib.ones(3, dtype=lib.float64), lib.ones(3, dtype=lib.complex64), lib.ones(2, 3)
    return {
        "add": lambda o: lib.add(f, f, out=o), "add_ints": lambda o: lib.add(i, i, out=o),
        "add_doubles": lambda o: lib.add(d, d, out=o), "add_complex": lambda o: lib.add(c, c, out=o),
        "exp_ints": lambda o: lib.exp(i, out=o), "sqrt": lambda o: lib.sqrt(f, out=o),
        "div_ints": lambda o: lib.div(i, i + 1, out=o), "maximum": lambda o: lib.maximum(f, f, out=o),
        "eq": lambda o: lib.eq(f, f, out=o), "mul_bools": lambda o: lib.mul(b, b, out=o),
        "cumsum": lambda o: lib.cumsum(f, 0, out=o), "cumsum_ints": lambda o: lib.cumsum(i, 0, out=o),
        "amax": lambda o: lib.amax(m, 0, out=o), "matmul": lambda o: lib.matmul(m, m.T, out=o),
        "mm": lambda o: lib.mm(m, m.T, out=o), "where": lambda o: lib.where(b, f, f, out=o),
        "clamp": lambda o: lib.clamp(f, 0, 1, out=o), "floor": lambda o: lib.floor(f, out=o),
        "abs": lambda o: lib.abs(f, out=o), "neg_ints": lambda o: lib.neg(i, out=o),
        "cat": lambda o: lib.cat([f, f], out=o), "stack": lambda o: lib.stack([f, f], out=o),
        "arange": lambda o: lib.arange(3, out=o), "linspace": lambda o: lib.linspace(0, 1, 3, out=o),
        "gather": lambda o: lib.gather(f, 0, i, out=o), "index_select": lambda o: lib.index_select(f, 0, i, out=o),
        "vector_norm": lambda o: lib.linalg.vector_norm(f, out=o), "atan2": lambda o: lib.atan2(f, f, out=o),
        "remainder_ints": lambda o: lib.remainder(i, 2, out=o),
        # reductions (workbench.ops.reduce): sum-likes compute in out's dtype, picks write their own dtype
        "sum": lambda o: lib.sum(m, 1, out=o), "sum_ints": lambda o: lib.sum(i, 0, out=o),
        "prod": lambda o: lib.prod(m, 1, out=o), "nansum": lambda o: lib.nansum(m, 1, out=o),
        "nansum_ints": lambda o: lib.nansum(i, 0, out=o), "mean": lambda o: lib.mean(m, 1, out=o),
        "mean_ints": lambda o: lib.mean(i, 0, out=o), "nanmean": lambda o: lib.nanmean(m, 1, out=o),
        "logsumexp": lambda o: lib.logsumexp(m, 1, out=o), "logsumexp_ints": lambda o: lib.logsumexp(i, 0, out=o),
        "argmax": lambda o: lib.argmax(m, 1, out=o), "argmin": lambda o: lib.argmin(f, out=o),
        "max_all": lambda o: lib.max(f, out=o), "min_all_ints": lambda o: lib.min(i, out=o),
        "std": lambda o: lib.std(m, 1, out=o), "var": lambda o: lib.var(f, out=o),
        "msort": lambda o: lib.msort(m, out=o), "argsort": lambda o: lib.argsort(f, stable=True, out=o),
        # a tensor bound makes clamp a TensorIterator op (the cast rule), numbers the same-dtype one
        "clamp_tensor": lambda o: lib.clamp(f, f.flip(0), out=o), "clamp_min": lambda o: lib.clamp_min(f, 1, out=o),
        "clamp_max_tensor": lambda o: lib.clamp_max(i, i.flip(0), out=o),
        "isposinf": lambda o: lib.isposinf(f, out=o), "isneginf": lambda o: lib.isneginf(f, out=o),
        "signbit": lambda o: lib.signbit(f, out=o), "tril": lambda o: lib.tril(m, out=o),
        "triu": lambda o: lib.triu(m, 1, out=o), "diag": lambda o: lib.diag(f, 1, out=o),
        "narrow_copy": lambda o: lib.narrow_copy(m, 1, 1, 2, out=o),
    }


def _run(fn, out):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(out)
        except Exception as e:  # noqa: BLE001 - what was raised is the result
            return e
    return None


def _takes_no_out(e):
    m = str(e)
    return isinstance(e, TypeError) and ("keyword argument 'out'" in m or "takes no keyword arguments" in m or
                                         "invalid combination of arguments" in m)


def _assert_like_torch(theirs_fn, ours_fn, dtype):
    t_out, w_out = torch.empty(0, dtype=getattr(torch, dtype)), wb.empty(0, dtype=getattr(wb, dtype))
    theirs, ours = _run(theirs_fn, t_out), _run(ours_fn, w_out)
    if theirs is None:
        assert ours is None, f"workbench raised {ours!r} where PyTorch writes out= of {dtype}"
        np.testing.assert_allclose(w_out.numpy().astype(np.complex128), t_out.numpy().astype(np.complex128),
                                   rtol=1e-3)
        assert w_out.dtype.name == str(t_out.dtype).split(".")[1]
        return
    if _takes_no_out(theirs):
        pytest.skip(f"PyTorch takes no out= here: {theirs}")
    base = next(k for k in (TypeError, RuntimeError, ValueError, Exception) if isinstance(theirs, k))
    assert isinstance(ours, base), f"workbench: {ours!r}; PyTorch: {theirs!r}"
    assert tuple(w_out.shape) == (0,), "a refused out= must be left as it was"


# PyTorch runs std's kernel in out's dtype and has no complex one (var into complex64 works, into complex128
# not): workbench writes the real result into the complex out
LEFT = {("std", "complex64")}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(_cases(wb)))
def test_out_dtype_like_pytorch(name, dtype):
    if (name, dtype) in LEFT:
        pytest.skip(f"{name} into {dtype}: PyTorch's kernel refuses it, workbench writes it")
    _assert_like_torch(_cases(torch)[name], _cases(wb)[name], dtype)


def test_refused_out_keeps_its_values():
    o = wb.full((3,), 7, dtype=wb.int64)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        wb.add(wb.ones(3), 0.5, out=o)
    assert o.tolist() == [7, 7, 7]
    v, k = wb.empty(0, dtype=wb.float64), wb.empty(0, dtype=wb.int64)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got double"):
        wb.max(wb.ones(2, 3), 0, out=(v, k))
    assert tuple(v.shape) == (0,) and tuple(k.shape) == (0,), "neither output of a refused pair is written"


def _spec_cases():
    for s in load_all().values():
        if s.torch_op is None:
            continue
        smp = s.samples[0]
        for dtype in DTYPES:
            yield pytest.param(s, smp, dtype, id=f"{s.name}-{dtype}")


@pytest.mark.parametrize("spec,sample,dtype", list(_spec_cases()))
def test_op_spec_out_dtype(spec, sample, dtype):
    # the spec's first sample with out= of dtype, where both the spec's op and PyTorch's take out=
    def call(lib, op):
        args = [lib.tensor(a) if isinstance(a, np.ndarray) else a for a in sample.args]
        return lambda o: op(*args, **sample.kwargs, out=o)

    theirs = _run(call(torch, spec.torch_op), torch.empty(0, dtype=getattr(torch, dtype)))
    if _takes_no_out(theirs):
        pytest.skip("PyTorch's form takes no out=")
    probe = _run(call(wb, spec.op), wb.empty(0, dtype=getattr(wb, dtype)))
    if isinstance(probe, TypeError) and "unexpected keyword argument 'out'" in str(probe):
        pytest.skip("the spec's form passes no out= on")
    _assert_like_torch(call(torch, spec.torch_op), call(wb, spec.op), dtype)
