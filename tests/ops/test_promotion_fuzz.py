"""Random binary ops on workbench and on PyTorch with mixed operands: tensors of every common dtype and of
broadcasting (or not) shapes, 0-d tensors and Python numbers, in the function, operator, method and in-place
forms. The result's dtype, shape and values, and the error type where PyTorch raises, must agree (PyTorch's
type promotion: categories, 0-d tensors and numbers ranking below dimensioned tensors; integer division and
the in-place cast rule). Seeded: a failing seed names its case."""
import warnings

import numpy as np
import pytest

import workbench as wb

torch = pytest.importorskip("torch")

N_CASES = 3000
DTYPES = ["bool", "uint8", "int8", "int32", "int64", "float16", "float32", "float64"]
OPS = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "pow", "maximum", "minimum",
       "eq", "lt", "ge", "atan2", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "hypot",
       "copysign", "fmax", "xlogy"]
SHAPES = [(), (3,), (2, 3), (2, 1), (1, 3), (4,), (2, 2, 3)]


def _operand(rng):
    kind = rng.choice(["tensor", "tensor", "tensor0d", "int", "float", "bool"])
    if kind == "int":
        v = int(rng.integers(-3, 4))
        return f"{v}", lambda lib, v=v: v
    if kind == "float":
        v = float(rng.choice([-1.5, 0.5, 2.0, 3.25]))
        return f"{v}", lambda lib, v=v: v
    if kind == "bool":
        v = bool(rng.integers(0, 2))
        return f"{v}", lambda lib, v=v: v
    dt = str(rng.choice(DTYPES))
    shape = () if kind == "tensor0d" else SHAPES[int(rng.integers(0, len(SHAPES)))]
    vals = rng.integers(-4, 5, shape) if dt != "bool" else rng.integers(0, 2, shape)
    if dt.startswith("float"):
        vals = vals + rng.choice([0.0, 0.25, 0.5], shape)
    if dt == "uint8":
        vals = np.abs(vals)
    arr = np.asarray(vals).astype(dt)
    return f"{dt}{list(shape)}", lambda lib, a=arr, dt=dt: lib.tensor(a.copy(), dtype=getattr(lib, dt))


def _case(seed):
    rng = np.random.default_rng(seed)
    op = str(rng.choice(OPS))
    form = str(rng.choice(["function", "operator", "method", "inplace"]))
    a, b = _operand(rng), _operand(rng)
    if form == "function" and not (a[0][0].isalpha() and a[0] not in ("True", "False")) and not (
            b[0][0].isalpha() and b[0] not in ("True", "False")):
        form = "operator"  # two Python numbers: PyTorch's functions each have their own overloads for that
    if form in ("method", "inplace") or op in ("atan2", "hypot", "copysign", "fmax", "xlogy", "fmod"):
        if not a[0][0].isalpha() or a[0] in ("True", "False"):  # the first operand must be a tensor there
            a = ("float32[3]", lambda lib: lib.tensor([1.5, -2.0, 0.5], dtype=lib.float32))
    return op, form, a, b


_OPERATORS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "true_divide": "/", "floor_divide": "//",
              "remainder": "%", "pow": "**", "eq": "==", "lt": "<", "ge": ">=", "bitwise_and": "&",
              "bitwise_or": "|", "bitwise_xor": "^"}


def _run(lib, op, form, a, b):
    x, y = a[1](lib), b[1](lib)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if form == "operator" and op in _OPERATORS:
                r = eval(f"x {_OPERATORS[op]} y")
            elif form == "method":
                r = getattr(x, op)(y)
            elif form == "inplace":
                name = op + "_"
                if not hasattr(x, name):
                    return "skip"
                r = getattr(x, name)(y)
            else:
                r = getattr(lib, op)(x, y)
        except (RuntimeError, TypeError, ValueError, ZeroDivisionError, OverflowError) as e:
            return type(e).__name__
    if not hasattr(r, "dtype"):
        return ("number", type(r).__name__, r)
    v = r.detach().cpu().numpy() if lib is torch else r.numpy()
    return (str(r.dtype).split(".")[-1], tuple(r.shape), np.asarray(v, dtype=np.float64))


@pytest.mark.parametrize("chunk", range(6))
def test_random_binary_ops_promote_as_pytorch(chunk):
    for seed in range(chunk * N_CASES // 6, (chunk + 1) * N_CASES // 6):
        op, form, a, b = _case(seed)
        t = _run(torch, op, form, a, b)
        if t == "skip":
            continue
        w = _run(wb, op, form, a, b)
        what = f"seed {seed}: {form} {op}({a[0]}, {b[0]})"
        if isinstance(t, str):
            assert w == t or isinstance(w, str), f"{what}: PyTorch raised {t}, workbench gave {w}"
            continue
        assert not isinstance(w, str), f"{what}: workbench raised {w}, PyTorch gave {t[:2]}"
        assert w[:2] == t[:2], f"{what}: workbench {w[:2]}, PyTorch {t[:2]}"
        if t[0] == "number":
            continue
        tol = 1e-3 if t[0] in ("float16", "bfloat16") else 1e-6
        np.testing.assert_allclose(w[2], t[2], rtol=tol, atol=tol, equal_nan=True, err_msg=what)
