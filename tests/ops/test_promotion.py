"""Type promotion against PyTorch: result_type and binary ops over every dtype pair, with dimensioned
tensors, 0-dim tensors and Python scalars (each test gathers every mismatch and reports them together)."""
import numpy as np
import pytest

import workbench as wb

torch = pytest.importorskip("torch")

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
         "complex64", "complex128"]
SCALARS = [True, 3, 2.5, 1 + 2j]


def _pair(name, dim=True):
    vals = [1, 2, 3] if dim else 2
    wt = wb.tensor(vals, dtype=getattr(wb, name if name != "bool" else "bool"))
    tt = torch.tensor(vals, dtype=getattr(torch, name))
    return wt, tt


def _wname(d):
    return d.name


def _tname(d):
    # workbench has no complex32 (NumPy has no complex half): float16 with complex promotes to complex64
    return str(d).replace("torch.", "").replace("complex32", "complex64")


def _operands():
    for a in NAMES:
        for b in NAMES:
            for dim_b in (True, False):
                yield (a, True), (b, dim_b)
    for a in NAMES:
        for s in SCALARS:
            yield (a, True), s
            yield (a, False), s


def _make(x):
    if isinstance(x, tuple):
        return _pair(*x)
    return x, x


def test_result_type_all_pairs():
    bad = []
    for xa, xb in _operands():
        (wa, ta), (wb_, tb) = _make(xa), _make(xb)
        got, want = _wname(wb.result_type(wa, wb_)), _tname(torch.result_type(ta, tb))
        if got != want:
            bad.append((xa, xb, got, want))
    assert not bad, bad


def test_result_type_default_float64():
    wb.set_default_dtype(wb.float64)
    torch.set_default_dtype(torch.float64)
    try:
        bad = []
        for xa, xb in _operands():
            (wa, ta), (wb_, tb) = _make(xa), _make(xb)
            got, want = _wname(wb.result_type(wa, wb_)), _tname(torch.result_type(ta, tb))
            if got != want:
                bad.append((xa, xb, got, want))
        assert not bad, bad
    finally:
        torch.set_default_dtype(torch.float32)


def test_promote_types_table():
    bad = []
    for a in NAMES:
        for b in NAMES:
            got = wb.promote_types(getattr(wb, a), getattr(wb, b)).name
            want = _tname(torch.promote_types(getattr(torch, a), getattr(torch, b)))
            if got != want:
                bad.append((a, b, got, want))
    assert not bad, bad


_OPS = {
    "add": lambda m, a, b: m.add(a, b) if not isinstance(a, (int, float, complex)) else a + b,
    "sub": lambda m, a, b: a - b,
    "mul": lambda m, a, b: a * b,
    "div": lambda m, a, b: a / b,
    "floor_divide": lambda m, a, b: a // b,
    "remainder": lambda m, a, b: a % b,
    "pow": lambda m, a, b: a ** b,
    "maximum": lambda m, a, b: m.maximum(a, b),
    "eq": lambda m, a, b: a == b,
    "lt": lambda m, a, b: a < b,
    "atan2": lambda m, a, b: m.atan2(a, b),
    "bitwise_and": lambda m, a, b: a & b,
    "bitwise_xor": lambda m, a, b: a ^ b,
    "left_shift": lambda m, a, b: a << b,
    "where": lambda m, a, b: m.where(m.tensor([True, False, True]), a, b),
    "fmod": lambda m, a, b: m.fmod(a, b),
    "copysign": lambda m, a, b: m.copysign(a, b),
    "hypot": lambda m, a, b: m.hypot(a, b),
    "logical_and": lambda m, a, b: m.logical_and(a, b),
    "xlogy": lambda m, a, b: m.xlogy(a, b),
    "lerp": lambda m, a, b: m.lerp(a, b, 0.5),
    "clamp_min": lambda m, a, b: m.clamp(a, min=b),
}


_TENSOR_ONLY = ("maximum", "logical_and", "atan2", "hypot", "copysign")


def _half_complex(xa, xb):
    # PyTorch computes these in complex32, which has few kernels; workbench computes them in complex64
    names = str(xa) + str(xb)
    return "float16" in names and ("complex" in names or isinstance(xb, complex))


def _run(fn, m, a, b):
    try:
        return fn(m, a, b), None
    except (RuntimeError, TypeError, ValueError) as e:
        return None, e


@pytest.mark.parametrize("op", sorted(_OPS))
def test_binary_op_dtypes_and_values(op):
    """Every operand pair: same result dtype and values as PyTorch, or both refuse (NotImplementedError is a
    RuntimeError, as in PyTorch)."""
    fn = _OPS[op]
    bad = []
    for xa, xb in _operands():
        (wa, ta), (wb_, tb) = _make(xa), _make(xb)
        if op == "lerp" and not isinstance(wb_, wb.Tensor):  # lerp's end must be a tensor
            continue
        if op in _TENSOR_ONLY and not isinstance(wb_, wb.Tensor):  # workbench also takes a number here
            continue
        w, we = _run(fn, wb, wa, wb_)
        t, te = _run(fn, torch, ta, tb)
        if _half_complex(xa, xb) and te is not None:
            continue
        if (we is None) != (te is None):
            bad.append((xa, xb, "workbench raised" if we else "torch raised", repr(we or te)[:120]))
            continue
        if we is not None:
            if not isinstance(we, type(te)) and not (isinstance(te, RuntimeError) and isinstance(we, RuntimeError)):
                bad.append((xa, xb, "exception types", type(we).__name__, type(te).__name__))
            continue
        if _wname(w.dtype) != _tname(t.dtype):
            bad.append((xa, xb, _wname(w.dtype), _tname(t.dtype)))
            continue
        got = np.asarray(w.to(wb.float64 if not w.is_complex() else wb.complex128).tolist())
        want = t.to(torch.float64 if not t.is_complex() else torch.complex128).numpy()
        tol = 1e-2 if any(n in str(xa) + str(xb) for n in ("float16", "bfloat16")) else 1e-6
        if not np.allclose(got, want, rtol=tol, atol=tol, equal_nan=True):
            bad.append((xa, xb, "values", got.tolist(), want.tolist()))
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:6]}"


def test_zero_dim_tensor_does_not_promote_within_category():
    x = wb.ones(3, dtype=wb.float16)
    assert (x + wb.tensor(2.0, dtype=wb.float64)).dtype == wb.float16
    assert (x + wb.tensor([2.0], dtype=wb.float64)).dtype == wb.float64
    assert (wb.ones(3, dtype=wb.int8) + wb.tensor(2.5)).dtype == wb.float32
    assert (wb.ones(3, dtype=wb.uint8) + 300).dtype == wb.uint8


def test_int_inputs_to_float_functions_give_default_dtype():
    x = wb.tensor([1, 2, 3])
    for fn in (wb.exp, wb.sqrt, wb.sin, wb.log, wb.sigmoid, wb.erf, wb.reciprocal, wb.rsqrt):
        assert fn(x).dtype == wb.float32, fn.__name__
    wb.set_default_dtype(wb.float64)
    assert wb.exp(x).dtype == wb.float64
    assert (x / 2).dtype == wb.float64
