"""Every registered op spec on every device: forward vs NumPy, gradcheck, gradgradcheck, non-contiguous, PyTorch.

Non-contiguous inputs come in three layouts (``LAYOUTS``): on every sample each must give the contiguous forward
values and gradients (whose Jacobian gradcheck checks), and gradcheck itself runs on the most general layout
("both": a transposed, strided view) for the first differentiable sample of each spec (``NC_GRAD_CASES``): every
sample there would cost as much again as the contiguous gradcheck, for entries the comparison already covers.

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
NC_GRAD_CASES = [next(((s, i) for i, smp in enumerate(s.samples) if not s.skip_reason("noncontiguous_gradcheck", smp)),
                      None) for s in SPECS.values()]
NC_GRAD_CASES = [c for c in NC_GRAD_CASES if c is not None]
CHECKS = ("forward", "noncontiguous", "noncontiguous_backward", "noncontiguous_gradcheck", "gradcheck",
          "gradgradcheck", "torch")
LAYOUTS = ("strided", "transposed", "both")


def _host(x):
    if isinstance(x, wb.Tensor):
        return x.detach().cpu().numpy()
    return x


def _lay_out(d, device, layout):
    """A tensor on device with d's values in a non-contiguous storage: every other element of a buffer twice as
    long in the last dim ("strided"), the last two dims swapped in memory ("transposed"), or both. A 0-d array,
    and a 1-d one for "transposed", is laid out as it is."""
    swap = layout in ("transposed", "both") and d.ndim >= 2
    stride = layout in ("strided", "both") and d.ndim >= 1
    if swap:
        d = d.swapaxes(-1, -2)
    if stride:
        big = np.zeros(d.shape[:-1] + (d.shape[-1] * 2,), d.dtype)
        big[..., ::2] = d
        t = wb.from_numpy(big).to(device)[..., ::2]
    else:
        t = wb.tensor(d.copy(), device=device)
    return t.transpose(-1, -2) if swap else t


def _make_args(spec, sample, dtype, device, requires_grad, layout=None):
    out = []
    for k, a in enumerate(sample.args):
        if isinstance(a, np.ndarray):
            d = a.astype(dtype) if a.dtype.kind == "f" else a
            t = _lay_out(d, device, layout) if layout else wb.tensor(d, device=device)
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
    for layout in LAYOUTS:
        b = _as_tuple(spec.op(*_make_args(spec, sample, "float64", device, False, layout), **sample.kwargs))
        for x, y in zip(a, b):
            np.testing.assert_allclose(_host(x), _host(y), rtol=1e-12, atol=1e-12,
                                       err_msg=f"{spec.name} on {device}, {layout} inputs")


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


def _input_grads(spec, sample, args):
    # d(sum of every output times a fixed random seed)/d(each input requiring grad); None where no path
    outs = [o for o in _as_tuple(_select(spec, spec.op(*args, **sample.kwargs)))
            if isinstance(o, wb.Tensor) and o.requires_grad]
    rng = np.random.default_rng(1)
    seeds = []
    for o in outs:
        v = rng.standard_normal(tuple(o.shape))
        if o.is_complex():
            v = v + 1j * rng.standard_normal(tuple(o.shape))
        seeds.append(wb.tensor(v.astype(_host(o).dtype), device=o.device))
    ins = [a for a in args if isinstance(a, wb.Tensor) and a.requires_grad]
    return wb.autograd.grad(outs, ins, seeds, allow_unused=True) if outs else [None] * len(ins)


@pytest.mark.parametrize("spec,i", CASES, ids=IDS)
def test_noncontiguous_backward(spec, i, device):
    _skip_unless(spec, i, "noncontiguous_backward")
    sample = spec.samples[i]
    want = _input_grads(spec, sample, _make_args(spec, sample, "float64", device, True))
    for layout in LAYOUTS:
        got = _input_grads(spec, sample, _make_args(spec, sample, "float64", device, True, layout))
        for k, (g, w) in enumerate(zip(got, want)):
            where = f"{spec.name} on {device}, {layout} inputs: gradient of input {k}"
            assert (g is None) == (w is None), f"{where} is {g} where contiguous inputs give {w}"
            if g is not None:
                assert g.shape == w.shape, f"{where} has shape {tuple(g.shape)}, contiguous {tuple(w.shape)}"
                np.testing.assert_allclose(_host(g), _host(w), rtol=1e-12, atol=1e-12, err_msg=where)


@pytest.mark.parametrize("spec,i", NC_GRAD_CASES, ids=[f"{s.name}-{i}" for s, i in NC_GRAD_CASES])
def test_noncontiguous_gradcheck(spec, i, device):
    sample = spec.samples[i]
    args = _make_args(spec, sample, "float64", device, True, "both")
    assert wb.autograd.gradcheck(lambda *a: _select(spec, spec.op(*a, **sample.kwargs)), tuple(args))


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
