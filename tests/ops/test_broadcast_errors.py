"""Operands that do not broadcast raise PyTorch's RuntimeError with PyTorch's message, not NumPy's ValueError.

The translation happens where ops enter (a primitive's ``apply``, the Tensor operators, copy_, the few ops that
compute on arrays themselves: ``workbench._broadcast``), so every elementwise op gets it, on every device. The
sweep runs every op spec with one operand's first non-1 dimension grown by one: wherever PyTorch answers
with its broadcasting error, workbench must give the same type and message, and wherever PyTorch refuses the
shapes otherwise (a loss's target, pooling indices, a solve's matrices), an error of the same type.
"""
import warnings

import numpy as np
import pytest

import workbench as wb
from workbench.testing.op_specs import load_all

torch = pytest.importorskip("torch")

CASES = {
    "add": lambda t: t.ones(2, 3) + t.ones(4, 3),
    "add_3d": lambda t: t.ones(5, 2, 3) + t.ones(4, 3),
    "radd_number_first": lambda t: t.ones(2).__radd__(t.ones(3)),
    "mul": lambda t: t.ones(2, 3) * t.ones(4, 3),
    "sub": lambda t: t.ones(2, 3) - t.ones(4, 3),
    "div": lambda t: t.ones(2, 3) / t.ones(4, 3),
    "pow": lambda t: t.ones(2, 3) ** t.ones(4, 3),
    "int_add": lambda t: t.ones(2, 3, dtype=t.int64) + t.ones(4, 3, dtype=t.int64),
    "mixed_dtypes": lambda t: t.ones(2, 3, dtype=t.int64) + t.ones(4, 3),
    "recorded": lambda t: t.ones(2, 3, requires_grad=True) * t.ones(4, 3),
    "recorded_both": lambda t: t.ones(2, 3, requires_grad=True).mul(t.ones(4, 3, requires_grad=True)),
    "maximum": lambda t: t.maximum(t.ones(2, 3), t.ones(4, 3)),
    "atan2": lambda t: t.atan2(t.ones(2, 3), t.ones(4, 3)),
    "where_input": lambda t: t.where(t.ones(2, 3) > 0, t.ones(4, 3), t.ones(2, 3)),
    "where_other": lambda t: t.where(t.ones(2, 3) > 0, t.ones(2, 3), t.ones(4, 3)),
    "where_cond": lambda t: t.where(t.ones(4, 3) > 0, t.ones(2, 3), t.ones(2, 3)),
    "where_number": lambda t: t.where(t.ones(4, 3) > 0, t.ones(2, 3), 0.0),
    "add_": lambda t: t.ones(2, 3).add_(t.ones(4, 3)),
    "add_grows_self": lambda t: t.ones(2, 1).add_(t.ones(2, 3)),
    "iadd": lambda t: t.ones(2, 3).__iadd__(t.ones(4, 3)),
    "iadd_grows_self": lambda t: t.ones(1, 3).__iadd__(t.ones(4, 3)),
    "lerp": lambda t: t.lerp(t.ones(2, 3), t.ones(4, 3), 0.5),
    "lerp_weight": lambda t: t.lerp(t.ones(2, 3), t.ones(2, 3), t.ones(4, 3)),
    "addcmul": lambda t: t.addcmul(t.ones(2, 3), t.ones(4, 3), t.ones(2, 3)),
    "addcmul_last": lambda t: t.addcmul(t.ones(2, 3), t.ones(2, 3), t.ones(4, 3)),
    "addcdiv": lambda t: t.addcdiv(t.ones(2, 3), t.ones(4, 3), t.ones(2, 3)),
    "addcmul_grows_self": lambda t: t.ones(2, 1).addcmul_(t.ones(2, 3), t.ones(2, 3)),
    "out": lambda t: t.add(t.ones(2, 3), t.ones(4, 3), out=t.empty(0)),
    "eq": lambda t: t.ones(2, 3) == t.ones(4, 3),
    "lt": lambda t: t.ones(2, 3) < t.ones(4, 3),
    "ne_1d": lambda t: t.ones(2) != t.ones(3),
    "bool_and": lambda t: (t.ones(2, 3) > 0) & (t.ones(4, 3) > 0),
    "clamp": lambda t: t.clamp(t.ones(2, 3), t.ones(4, 3)),
    "clamp_max": lambda t: t.clamp(t.ones(2, 3), t.ones(2, 3), t.ones(4, 3)),
    "masked_fill": lambda t: t.ones(2, 3).masked_fill(t.ones(4, 3) > 0, 1.0),
    "masked_fill_grows_self": lambda t: t.ones(1, 3).masked_fill_(t.ones(4, 3) > 0, 1.0),
    "masked_fill_self_first": lambda t: t.ones(2, 3).masked_fill_(t.ones(2, 4) > 0, 1.0),  # in place: self, mask
    "masked_fill_mask_first": lambda t: t.ones(2, 3).masked_fill(t.ones(2, 4) > 0, 1.0),  # out of place: mask, self
    "masked_fill_recorded": lambda t: t.ones(2, 3, requires_grad=True).clone().masked_fill_(t.ones(5, 2, 4) > 0, 0.0),
    "sdpa_batch": lambda t: t.nn.functional.scaled_dot_product_attention(t.ones(2, 3, 4), t.ones(3, 5, 4),
                                                                         t.ones(3, 5, 4)),
    "sdpa_value_batch": lambda t: t.nn.functional.scaled_dot_product_attention(t.ones(2, 2, 3, 4), t.ones(2, 2, 5, 4),
                                                                               t.ones(2, 3, 5, 4)),
    "sdpa_dropout_batch": lambda t: t.nn.functional.scaled_dot_product_attention(t.ones(2, 3, 4), t.ones(3, 5, 4),
                                                                                 t.ones(3, 5, 4), dropout_p=0.5),
    "sdpa_mask": lambda t: t.nn.functional.scaled_dot_product_attention(t.ones(2, 3, 4), t.ones(2, 5, 4),
                                                                        t.ones(2, 5, 4), attn_mask=t.ones(3, 4)),
    "sdpa_bool_mask_batch": lambda t: t.nn.functional.scaled_dot_product_attention(
        t.ones(2, 3, 4), t.ones(2, 5, 4), t.ones(2, 5, 4), attn_mask=t.ones(4, 3, 5) > 0),
    "sdpa_mask_grows_scores": lambda t: t.nn.functional.scaled_dot_product_attention(
        t.ones(2, 3, 4), t.ones(2, 5, 4), t.ones(2, 5, 4), attn_mask=t.ones(7, 2, 3, 5)),
    "linalg_solve_batch": lambda t: t.linalg.solve(t.eye(3).expand(2, 3, 3), t.ones(4, 3, 1)),
    "linalg_solve_right": lambda t: t.linalg.solve(t.eye(3).expand(4, 2, 3, 3), t.ones(3, 3, 1, 3), left=False),
    "linalg_solve_ex": lambda t: t.linalg.solve_ex(t.eye(3).expand(2, 3, 3), t.ones(4, 3, 2)),
    "linalg_lu_solve": lambda t: t.linalg.lu_solve(*t.linalg.lu_factor(t.eye(3).repeat(2, 1, 1)), t.ones(4, 3, 1)),
    "copy_": lambda t: t.ones(2, 3).copy_(t.ones(4, 3)),
    "copy_grows_self": lambda t: t.ones(2, 1).copy_(t.ones(2, 3)),
    "copy_recorded": lambda t: t.ones(2, 3, requires_grad=True).clone().copy_(t.ones(4, 3)),
    "mse_loss": lambda t: t.nn.functional.mse_loss(t.ones(2, 3), t.ones(4, 3)),
    "broadcast_tensors": lambda t: t.broadcast_tensors(t.ones(2, 3), t.ones(4, 3)),
    "broadcast_shapes": lambda t: t.broadcast_shapes((2, 3), (4, 3)),
    "gcd": lambda t: t.gcd(t.ones(2, 3, dtype=t.int64), t.ones(4, 3, dtype=t.int64)),
    "heaviside": lambda t: t.heaviside(t.ones(2, 3), t.ones(4, 3)),
    "isclose": lambda t: t.isclose(t.ones(2, 3), t.ones(4, 3)),
    "masked_select": lambda t: t.masked_select(t.ones(2, 3), t.ones(4, 3) > 0),
    "masked_scatter": lambda t: t.ones(2, 3).masked_scatter(t.ones(4, 3) > 0, t.ones(12)),
}


def _raised(fn, lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as info:
            fn(lib)
    return info.value


def _first_line(e):
    return str(e).splitlines()[0]


def _assert_like_torch(fn):
    theirs, ours = _raised(fn, torch), _raised(fn, wb)
    assert type(ours) is type(theirs), f"workbench raised {type(ours).__name__}: {ours}; PyTorch {theirs!r}"
    # workbench may add where it happened, e.g. " (in add_)"
    assert _first_line(ours).startswith(_first_line(theirs)), f"{ours} where PyTorch says {theirs}"
    return ours


@pytest.mark.parametrize("name", CASES)
def test_broadcast_error_is_pytorchs(name):
    _assert_like_torch(CASES[name])


CUDA_CASES = {
    "add": lambda a, b: a + b,
    "mul_recorded": lambda a, b: a.requires_grad_() * b,
    "maximum": lambda a, b: a.maximum(b),
    "where": lambda a, b: a.where(b > 0, a),
    "add_": lambda a, b: a.add_(b),
    "addcmul": lambda a, b: a.addcmul(b, a),
    "eq": lambda a, b: a == b,
    "copy_": lambda a, b: a.copy_(b),
}


@pytest.mark.parametrize("name", CUDA_CASES)
def test_broadcast_error_on_fake_cuda(name, fake_cuda):
    theirs = _raised(lambda t: CUDA_CASES[name](t.ones(2, 3), t.ones(4, 3)), torch)
    a, b = wb.ones(2, 3, device="cuda"), wb.ones(4, 3, device="cuda")
    ours = _raised(lambda t: CUDA_CASES[name](a, b), wb)
    assert type(ours) is type(theirs) and _first_line(ours).startswith(_first_line(theirs)), (ours, theirs)


def test_user_except_runtimeerror_catches_it():
    try:
        wb.ones(2, 3) + wb.ones(4, 3)
    except RuntimeError as e:
        assert "at non-singleton dimension 0" in str(e)
    else:
        raise AssertionError("no error")


def test_other_value_errors_pass_through():
    # a ValueError that is not about broadcasting keeps its type (translation only names broadcasting)
    with pytest.raises(ValueError, match="broadcast"):
        np.ones((2, 3)) + np.ones((4, 3))  # the check itself: NumPy still says ValueError
    from workbench._broadcast import broadcast_error
    assert broadcast_error(ValueError("math domain error"), (wb.ones(2),)) is None


# --- every op spec, one operand grown ----------------------------------------------------------------------
BROADCAST_MESSAGES = ("The size of tensor a", "output with shape")


def _grown(a, rng):
    shape = list(a.shape)
    d = next((k for k, n in enumerate(shape) if n > 1), None)
    if d is None:
        return None
    shape[d] += 1
    if a.dtype.kind == "f":
        return rng.uniform(0.2, 0.8, shape).astype(a.dtype)
    return rng.random(shape) > 0.5 if a.dtype == bool else np.ones(shape, a.dtype)


def _sweep_cases():
    rng = np.random.default_rng(0)
    for s in load_all().values():
        if s.torch_op is None:
            continue
        for i, smp in enumerate(s.samples):
            arrays = [k for k, a in enumerate(smp.args) if isinstance(a, np.ndarray) and a.ndim >= 1]
            if len(arrays) < 2:
                continue
            for k in arrays:
                g = _grown(smp.args[k], rng)
                if g is not None:
                    args = list(smp.args)
                    args[k] = g
                    yield pytest.param(s, args, smp.kwargs, id=f"{s.name}-{i}-arg{k}")


def _call(op, lib, args, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            op(*[lib.tensor(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs)
        except Exception as e:  # noqa: BLE001 - what was raised is the result
            return e
    return None


# where PyTorch's error is not its contract: Python asserts in multi_head_attention_forward (workbench raises a
# RuntimeError), a storage quirk of stft on a window longer than n_fft's frame (workbench computes the frames)
NOT_A_CONTRACT = {"F.multi_head_attention_forward": "PyTorch checks the shapes with Python asserts",
                  "stft": "PyTorch's setStorage error on a grown window is an implementation artefact"}


@pytest.mark.parametrize("spec,args,kwargs", list(_sweep_cases()))
def test_op_spec_sweep_grown_operand(spec, args, kwargs):
    theirs = _call(spec.torch_op, torch, args, kwargs)
    if theirs is None:
        pytest.skip("the grown operand still broadcasts (or the op takes any shape there)")
    if spec.name in NOT_A_CONTRACT:
        pytest.skip(NOT_A_CONTRACT[spec.name])
    ours = _call(spec.op, wb, args, kwargs)
    if not _first_line(theirs).startswith(BROADCAST_MESSAGES):  # another shape check: the same kind of error
        base = next(k for k in (IndexError, ValueError, TypeError, RuntimeError, Exception) if isinstance(theirs, k))
        assert isinstance(ours, base), f"workbench raised {ours!r}; PyTorch {theirs!r}"
        return
    assert type(ours) is type(theirs), f"workbench raised {type(ours).__name__}: {ours}; PyTorch {theirs!r}"
    assert _first_line(ours).startswith(_first_line(theirs)), f"{ours} where PyTorch says {theirs}"


def test_sweep_meets_broadcasting_errors():
    # the sweep is not vacuous: PyTorch raises its broadcasting error on hundreds of the grown cases
    n = sum(1 for p in _sweep_cases() if isinstance(_call(p.values[0].torch_op, torch, *p.values[1:]), RuntimeError)
            and _first_line(_call(p.values[0].torch_op, torch, *p.values[1:])).startswith(BROADCAST_MESSAGES))
    assert n > 300
