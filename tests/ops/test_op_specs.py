"""Every registered op spec on every device: forward vs NumPy, gradcheck, gradgradcheck, non-contiguous, PyTorch.

The device fixture (tests/conftest.py) runs each check on NumPy, on the fake CuPy and, with a GPU, on real
CuPy. A check that does not apply skips with the reason its spec gives (``OpSpec.skip_reason``); the
comparison with PyTorch runs once, on the CPU, where PyTorch's CPU build is the oracle.
"""
import numpy as np
import pytest

import workbench as wb
from workbench.testing import op_specs
from workbench.testing.op_specs import load_all

SPECS = load_all()
CASES = [(s, i) for s in SPECS.values() for i in range(len(s.samples))]
IDS = [f"{s.name}-{i}" for s, i in CASES]
CHECKS = ("forward", "noncontiguous", "gradcheck", "gradgradcheck", "torch")


def _host(x):
    if isinstance(x, wb.Tensor):
        return x.detach().cpu().numpy()
    return x


def _make_args(spec, sample, dtype, device, requires_grad, noncontig=False):
    out = []
    for k, a in enumerate(sample.args):
        if isinstance(a, np.ndarray):
            d = a
            if d.dtype.kind == "f":
                d = d.astype(dtype)
            if noncontig and d.ndim >= 1:
                # same values, laid out with a stride: every other element of a buffer twice the size
                big = np.empty(d.shape[:-1] + (d.shape[-1] * 2,), d.dtype)
                big[..., ::2] = d
                t = wb.from_numpy(big).to(device)[..., ::2]
            else:
                t = wb.tensor(d, device=device)
            if requires_grad and spec.gradcheck and sample.grad and k not in sample.nondiff and t.is_floating_point():
                t = t.detach().requires_grad_(True)
            out.append(t)
        else:
            out.append(a)
    return out


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _skip_unless(spec, i, check):
    why = spec.skip_reason(check, spec.samples[i])
    if why:
        pytest.skip(f"{spec.name}: {why}")


@pytest.mark.parametrize("spec,i", CASES, ids=IDS)
def test_forward_matches_numpy(spec, i, device):
    _skip_unless(spec, i, "forward")
    sample = spec.samples[i]
    for dt in spec.dtypes:
        args = _make_args(spec, sample, dt, device, False)
        got = _as_tuple(spec.op(*args, **sample.kwargs))
        ref_args = [a.astype(dt) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in sample.args]
        want = _as_tuple(spec.ref(*ref_args, **sample.kwargs))
        tol = dict(rtol=1e-4, atol=1e-5) if dt == "float32" else dict(rtol=spec.rtol, atol=spec.atol)
        for g, w in zip(got, want):
            np.testing.assert_allclose(_host(g), np.asarray(w), **tol, err_msg=f"{spec.name} {dt} on {device}")


@pytest.mark.parametrize("spec,i", CASES, ids=IDS)
def test_noncontiguous_inputs(spec, i, device):
    sample = spec.samples[i]
    a = _as_tuple(spec.op(*_make_args(spec, sample, "float64", device, False), **sample.kwargs))
    b = _as_tuple(spec.op(*_make_args(spec, sample, "float64", device, False, noncontig=True), **sample.kwargs))
    for x, y in zip(a, b):
        np.testing.assert_allclose(_host(x), _host(y), rtol=1e-12, atol=1e-12, err_msg=f"{spec.name} on {device}")


def _select(spec, out):
    out = _as_tuple(out)
    return out[spec.output_index] if spec.output_index is not None else out


@pytest.mark.parametrize("spec,i", CASES, ids=IDS)
def test_gradcheck(spec, i, device):
    _skip_unless(spec, i, "gradcheck")
    sample = spec.samples[i]
    args = _make_args(spec, sample, "float64", device, True)
    assert wb.autograd.gradcheck(lambda *a: _select(spec, spec.op(*a, **sample.kwargs)), tuple(args))


@pytest.mark.parametrize("spec,i", CASES, ids=IDS)
def test_gradgradcheck(spec, i, device):
    _skip_unless(spec, i, "gradgradcheck")
    sample = spec.samples[i]
    args = _make_args(spec, sample, "float64", device, True)
    assert wb.autograd.gradgradcheck(lambda *a: _select(spec, spec.op(*a, **sample.kwargs)), tuple(args))


@pytest.mark.parametrize("spec,i", CASES, ids=IDS)
def test_against_torch(spec, i):
    torch = pytest.importorskip("torch")
    _skip_unless(spec, i, "torch")
    sample = spec.samples[i]
    args = _make_args(spec, sample, "float64", "cpu", True)
    targs = [torch.tensor(a.detach().numpy(), requires_grad=a.requires_grad) if isinstance(a, wb.Tensor) else a
             for a in args]
    got = _select(spec, spec.op(*args, **sample.kwargs))
    want = _select(spec, spec.torch_op(*targs, **sample.kwargs))
    got, want = _as_tuple(got), _as_tuple(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(_host(g), w.detach().numpy(), rtol=1e-10, atol=1e-12)
    g0, w0 = got[0], want[0]
    if g0.requires_grad:
        rng = np.random.default_rng(1)
        seed = rng.standard_normal(tuple(g0.shape))
        if g0.is_complex():
            seed = seed + 1j * rng.standard_normal(tuple(g0.shape))
        g0.backward(wb.tensor(seed))
        w0.backward(torch.tensor(seed))
        for k, (a, ta) in enumerate(zip(args, targs)):
            if isinstance(a, wb.Tensor) and a.requires_grad:
                # None (no path to the output) and zeros are different answers: optimizers skip a None grad
                assert (a.grad is None) == (ta.grad is None), f"input {k}: grad {a.grad} where PyTorch has {ta.grad}"
                if a.grad is not None:
                    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_every_skip_says_why():
    # the checks above skip only through _skip_unless, with the spec's own reason: none may be empty or generic
    reasons = {(s.name, i, c): s.skip_reason(c, s.samples[i]) for s, i in CASES for c in CHECKS}
    skipped = {k: why for k, why in reasons.items() if why}
    assert skipped, "no spec skips anything: this test would not notice a missing reason"
    short = {k: why for k, why in skipped.items() if len(why.split()) < 4}
    assert not short, f"skip reasons too short to say why: {short}"
    with pytest.raises(ValueError, match="say why in no_ref="):
        op_specs._check_reasons(op_specs.OpSpec("x", wb.exp, None, [], torch_op=wb.exp))
