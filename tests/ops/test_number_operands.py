"""Which binary ops take a Python number for which operand: PyTorch's Scalar overloads, declared per op.

``maximum``, ``atan2``, ``hypot``, ``fmax``... take only tensors (a number is PyTorch's TypeError), ``fmod``,
``copysign`` and the comparisons take one as ``other``, ``remainder``, ``xlogy``, ``pow`` and the bitwise ops
for either operand. Every op here is called with a number in each place and as a method, against PyTorch:
a TypeError must come exactly where PyTorch raises one, with its message.
"""
import warnings

import pytest

import workbench as wb

torch = pytest.importorskip("torch")

FLOAT_OPS = [
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "remainder", "fmod",
    "pow", "float_power", "atan2", "arctan2", "hypot", "fmax", "fmin", "maximum", "minimum", "copysign", "nextafter",
    "logaddexp", "logaddexp2", "xlogy", "ldexp", "heaviside", "eq", "ne", "lt", "le", "gt", "ge", "greater", "less",
    "not_equal", "greater_equal", "less_equal", "logical_and", "logical_or", "logical_xor", "igamma", "igammac",
    "polar", "complex", "dist", "isclose", "rsub", "clamp_min", "clamp_max", "special.xlog1py", "special.zeta",
    "special.xlogy", "special.gammainc", "special.gammaincc", "special.chebyshev_polynomial_t",
    "special.hermite_polynomial_h",
]
INT_OPS = ["gcd", "lcm", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"]
FORMS = ("tensor, number", "number, tensor", "method(number)", "tensor, int")


def _get(lib, name):
    f = lib
    for part in name.split("."):
        f = getattr(f, part)
    return f


def _outcome(lib, name, form, ints):
    x = lib.tensor([1, 2]) if ints else lib.tensor([1.5, 2.5])
    num = 2 if ints else 2.0
    f = _get(lib, name)
    calls = {"tensor, number": lambda: f(x, num), "number, tensor": lambda: f(num, x),
             "method(number)": lambda: getattr(x, name.split(".")[-1])(num), "tensor, int": lambda: f(x, 2)}
    if form == "method(number)" and not hasattr(x, name.split(".")[-1]):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            calls[form]()
        except TypeError as e:
            return str(e).splitlines()[0]
        except Exception:  # noqa: BLE001 - another error (a dtype PyTorch has no kernel for) is not this contract
            return "other error"
    return "ok"


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", FLOAT_OPS + INT_OPS)
def test_number_operand_like_pytorch(name, form):
    ints = name in INT_OPS
    theirs = _outcome(torch, name, form, ints)
    if theirs is None:
        pytest.skip(f"{name} is not a Tensor method")
    ours = _outcome(wb, name, form, ints)
    if theirs in ("ok", "other error"):
        assert ours in ("ok", "other error"), f"workbench raised TypeError: {ours}; PyTorch gave {theirs}"
        return
    assert ours not in ("ok", "other error"), f"PyTorch raises TypeError: {theirs}; workbench: {ours}"
    # the words after the op's name (PyTorch names an alias, arctan2 or greater, by itself)
    if "(position" in theirs and form.startswith("method"):  # the method counts from the argument after self
        assert theirs.split("(", 1)[1].split(" (position")[0] in ours, (ours, theirs)
    elif "(position" in theirs:  # PyTorch's one-signature message, word for word
        assert ours.split("(", 1)[1] == theirs.split("(", 1)[1], (ours, theirs)
    else:
        assert ours.split("(", 1)[1].startswith(theirs.split("(", 1)[1].split(" but expected")[0]), (ours, theirs)
