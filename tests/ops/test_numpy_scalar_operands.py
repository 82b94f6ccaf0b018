"""NumPy scalars as operands, against PyTorch: its argument parser reads a NumPy integer as a Python int, a
NumPy float as a Python float and a NumPy bool as a float too (np.bool_ is no Python bool), so
``int_tensor * np.True_`` is float32 and ``float_tensor - np.True_`` is no bool subtraction."""
import numpy as np
import pytest

import workbench as wb

torch = pytest.importorskip("torch")

SCALARS = [np.True_, np.False_, True, 3, np.float32(2.0), np.float64(2.0), np.float16(2.0), np.int64(3),
           np.int8(3), np.uint8(3)]
BASES = {"int64": [1, 2], "float32": [1.0, 2.0], "bool": [True, False], "uint8": [1, 2], "float16": [1.0, 2.0],
         "int8": [1, 2]}


def _f(m, a):
    return a if a.is_floating_point() else a.float()


OPS = {
    "add": lambda m, a, s: m.add(a, s), "radd": lambda m, a, s: s + a, "sub": lambda m, a, s: m.sub(a, s),
    "rsub": lambda m, a, s: s - a, "sub_method": lambda m, a, s: a.sub(s), "rsub_fn": lambda m, a, s: m.rsub(a, s),
    "mul": lambda m, a, s: a * s, "mul_fn": lambda m, a, s: m.mul(a, s), "div": lambda m, a, s: a / s,
    "rdiv": lambda m, a, s: s / a, "floordiv": lambda m, a, s: a // s, "fmod": lambda m, a, s: m.fmod(a, s),
    "remainder": lambda m, a, s: m.remainder(a, s), "div_floor": lambda m, a, s: a.div(s, rounding_mode="floor"),
    "pow": lambda m, a, s: a ** s, "rpow": lambda m, a, s: s ** a, "clamp_min": lambda m, a, s: a.clamp(min=s),
    "clamp_max": lambda m, a, s: m.clamp(a, max=s), "lerp": lambda m, a, s: m.lerp(_f(m, a), _f(m, a) + 1, s),
    "where": lambda m, a, s: m.where(a > 0, a, s), "where_r": lambda m, a, s: m.where(a > 0, s, a),
    "eq": lambda m, a, s: a == s, "lt": lambda m, a, s: a < s, "and": lambda m, a, s: a & s,
    "xlogy": lambda m, a, s: m.xlogy(a, s), "copysign": lambda m, a, s: m.copysign(a, s),
    "add_alpha": lambda m, a, s: m.add(a, a, alpha=s), "sub_alpha": lambda m, a, s: m.sub(a, a, alpha=s),
    "add_": lambda m, a, s: a.clone().add_(s), "mul_": lambda m, a, s: a.clone().mul_(s),
    "masked_fill": lambda m, a, s: a.masked_fill(a > 1, s), "fill_": lambda m, a, s: a.clone().fill_(s),
}


def _run(m, op, base, s):
    a = m.tensor(BASES[base], dtype=getattr(m, base))
    try:
        r = OPS[op](m, a, s)
    except Exception as e:  # noqa: BLE001 - the exception type is what is compared
        return type(e).__name__
    return str(r.dtype).split(".")[-1], str(r.tolist())  # str: nan equals nan


@pytest.mark.parametrize("op", sorted(OPS))
def test_numpy_scalar_operand_matches_torch(op):
    bad = []
    for base in BASES:
        for s in SCALARS:
            got, want = _run(wb, op, base, s), _run(torch, op, base, s)
            if got != want:
                bad.append(f"{op} {base} {type(s).__name__}({s}): workbench {got}, torch {want}")
    assert not bad, "\n".join(bad)


def test_numpy_int_scalar_wraps_like_a_python_int():
    # int8 + 1000: PyTorch wraps the scalar into the tensor's dtype, a NumPy int64 as a Python int
    for s in (1000, np.int64(1000), np.uint8(200)):
        got = (wb.tensor([1], dtype=wb.int8) + s).tolist()
        assert got == (torch.tensor([1], dtype=torch.int8) + s).tolist(), s


@pytest.mark.parametrize("a,b", [("bool", True), ("bool", "bool"), ("bool", np.True_), ("float32", "bool"),
                                 ("bool", 1)])
def test_bool_subtraction_error_matches_torch(a, b):
    def run(m):
        x = m.tensor([True, False], dtype=getattr(m, a))
        y = m.tensor([True, False]) if b == "bool" else b
        with pytest.raises(RuntimeError) as e:
            m.sub(x, y)
        with pytest.raises(RuntimeError) as e2:
            y - x
        return str(e.value), str(e2.value)
    assert run(wb) == run(torch)
