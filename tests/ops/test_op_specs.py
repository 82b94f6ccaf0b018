"""Every registered op spec: forward vs NumPy, gradcheck, gradgradcheck, non-contiguous, backends, PyTorch."""
import numpy as np
import pytest

import workbench as wb
from workbench.testing.op_specs import load_all

SPECS = load_all()
CASES = [(s, i) for s in SPECS.values() for i in range(len(s.samples))]
IDS = [f"{s.name}-{i}" for s, i in CASES]


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
            if requires_grad and sample.grad and k not in sample.nondiff and t.is_floating_point():
                t.requires_grad_(True) if t.is_leaf else None
                if not t.is_leaf:
                    t = t.detach().requires_grad_(True)
            out.append(t)
        else:
            out.append(a)
    return out


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("spec,i", CASES, ids=IDS)
def test_forward_matches_numpy(spec, i, device):
    if spec.ref is None:
        pytest.skip("no NumPy reference")
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
def test_noncontiguous_inputs(spec, i):
    sample = spec.samples[i]
    a = _as_tuple(spec.op(*_make_args(spec, sample, "float64", "cpu", False), **sample.kwargs))
    b = _as_tuple(spec.op(*_make_args(spec, sample, "float64", "cpu", False, noncontig=True), **sample.kwargs))
    for x, y in zip(a, b):
        np.testing.assert_allclose(_host(x), _host(y), rtol=1e-12, atol=1e-12)


def _select(spec, out):
    out = _as_tuple(out)
    return out[spec.output_index] if spec.output_index is not None else out


@pytest.mark.parametrize("spec,i", CASES, ids=IDS)
def test_gradcheck(spec, i):
    sample = spec.samples[i]
    if not spec.gradcheck or not sample.grad:
        pytest.skip("not differentiable")
    args = _make_args(spec, sample, "float64", "cpu", True)
    assert wb.autograd.gradcheck(lambda *a: _select(spec, spec.op(*a, **sample.kwargs)), tuple(args))


@pytest.mark.parametrize("spec,i", CASES, ids=IDS)
def test_gradgradcheck(spec, i):
    sample = spec.samples[i]
    if not (spec.gradcheck and spec.gradgradcheck and sample.grad):
        pytest.skip("no second derivative")
    args = _make_args(spec, sample, "float64", "cpu", True)
    assert wb.autograd.gradgradcheck(lambda *a: _select(spec, spec.op(*a, **sample.kwargs)), tuple(args))


@pytest.mark.parametrize("spec,i", CASES, ids=IDS)
def test_against_torch(spec, i):
    torch = pytest.importorskip("torch")
    if spec.torch_op is None:
        pytest.skip("PyTorch is not the contract for this op")
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
    if g0.requires_grad and sample.grad:
        seed = np.random.default_rng(1).standard_normal(tuple(g0.shape))
        g0.backward(wb.tensor(seed))
        w0.backward(torch.tensor(seed))
        for a, ta in zip(args, targs):
            if isinstance(a, wb.Tensor) and a.requires_grad:
                np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)
