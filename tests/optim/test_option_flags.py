"""The option-flag tables (workbench/optim/flags.py, workbench/autograd/_gradcheck.py, docs/optim.md):
every flag of every optimizer and of gradcheck is in them, as PyTorch's signatures have it, and each flag
does what its row says: acted on as PyTorch acts, no effect at all, or refused."""
import inspect

import numpy as np
import pytest
import torch

import workbench as wb
from workbench._option_flags import ACTED_ON, NO_EFFECT, REFUSED, flags_of
from workbench.autograd import _gradcheck
from workbench.optim.flags import FLAGS
from workbench.testing import flag_tables

OPTIMIZERS = flag_tables.optimizers()


def _torch_flags(fn, table):
    # a flag: a keyword PyTorch defaults to a bool, or one the table knows (foreach/fused default to None)
    return [n for n, p in inspect.signature(fn).parameters.items() if isinstance(p.default, bool) or n in table]


@pytest.mark.parametrize("cls", OPTIMIZERS, ids=lambda c: c.__name__)
def test_every_optimizer_flag_is_in_the_table_as_pytorch_has_it(cls):
    tcls = getattr(torch.optim, cls.__name__)
    flags = _torch_flags(tcls, FLAGS)
    assert set(flags) <= set(FLAGS), f"{cls.__name__}: flags {set(flags) - set(FLAGS)} not in optim/flags.py FLAGS"
    assert flags_of(cls, FLAGS) == flags
    wsig, tsig = inspect.signature(cls).parameters, inspect.signature(tcls).parameters
    assert {f: wsig[f].default for f in flags} == {f: tsig[f].default for f in flags}


def test_every_optimizer_is_in_the_docs():
    names = {n for n in dir(torch.optim) if isinstance(getattr(torch.optim, n), type)
             and issubclass(getattr(torch.optim, n), torch.optim.Optimizer) and n != "Optimizer"}
    assert names - {c.__name__ for c in OPTIMIZERS} == {"SparseAdam"}  # sparse gradients: no sparse tensors


@pytest.mark.parametrize("name", ["gradcheck", "gradgradcheck"])
def test_every_gradcheck_flag_is_in_the_table_as_pytorch_has_it(name):
    fn, tfn = getattr(_gradcheck, name), getattr(torch.autograd, name)
    flags = [f for f in _torch_flags(tfn, _gradcheck.FLAGS) if f != "grad_outputs"]
    assert set(flags) <= set(_gradcheck.FLAGS), set(flags) - set(_gradcheck.FLAGS)
    assert sorted(flags_of(fn, _gradcheck.FLAGS)) == sorted(flags)
    wsig, tsig = inspect.signature(fn).parameters, inspect.signature(tfn).parameters
    assert {f: wsig[f].default for f in flags} == {f: tsig[f].default for f in flags}


def test_docs_page_is_current():
    with open(flag_tables.PATH) as f:
        page = f.read()
    assert flag_tables.render(page) == page, "docs/optim.md is stale: run python -m workbench.testing.flag_tables"


# --- each flag does what the table says -----------------------------------------------------------------
_EXTRA = {"SGD": {"momentum": 0.9}, "RMSprop": {"momentum": 0.5}, "Muon": {"lr": 0.02}}
_C = [np.linspace(0.5, 2.0, 12).reshape(3, 4) * k for k in (1.0, 0.3, 2.0)]  # a changing objective


def _run(lib, cls_name, **kw):
    w0 = np.arange(12, dtype=np.float32).reshape(3, 4) / 7 - 0.8
    w = lib.nn.Parameter(lib.tensor(w0))
    cls = getattr(lib.optim, cls_name)
    base = {"lr": 0.1, **({"weight_decay": 0.1} if "weight_decay" in inspect.signature(cls).parameters else {})}
    opt = cls([w], **{**base, **_EXTRA.get(cls_name, {}), **kw})
    for c in _C:
        opt.zero_grad()
        ((w * lib.tensor(c.astype(np.float32))) ** 2).sum().backward()
        opt.step()
    return w.detach().numpy().copy()


_CASES = [(c.__name__, f) for c in OPTIMIZERS for f in flags_of(c, FLAGS)]


@pytest.mark.parametrize("cls_name, flag", _CASES, ids=[f"{c}-{f}" for c, f in _CASES])
def test_each_optimizer_flag_does_what_the_table_says(cls_name, flag):
    default = inspect.signature(getattr(wb.optim, cls_name)).parameters[flag].default
    other = not default
    what = FLAGS[flag][0]
    if what == REFUSED:
        with pytest.raises(RuntimeError, match=f"{flag}=True is not supported"):
            _run(wb, cls_name, **{flag: other})
        return
    plain, flagged = _run(wb, cls_name), _run(wb, cls_name, **{flag: other})
    if what == NO_EFFECT:
        assert np.array_equal(plain, flagged)
        np.testing.assert_allclose(plain, _run(torch, cls_name), rtol=1e-5, atol=1e-6)
    else:
        assert what == ACTED_ON and not np.allclose(plain, flagged)
        np.testing.assert_allclose(flagged, _run(torch, cls_name, **{flag: other}), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls_name", [c.__name__ for c in OPTIMIZERS if "fused" in flags_of(c, FLAGS)])
def test_fused_and_foreach_together_refused_as_pytorch(cls_name):
    for lib in (torch, wb):
        with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together."):
            getattr(lib.optim, cls_name)([lib.nn.Parameter(lib.ones(2))], lr=0.1, fused=True, foreach=True)


def _wrong_grad(t):
    return t.detach() * t  # d/dt is 2t; backward sees only the second factor's t


def test_each_gradcheck_flag_does_what_the_table_says():
    x = wb.randn(3, dtype=wb.float64, requires_grad=True)
    for name in ("gradcheck", "gradgradcheck"):
        fn = getattr(wb.autograd, name)
        params = inspect.signature(fn).parameters
        for flag in flags_of(fn, _gradcheck.FLAGS):
            if _gradcheck.FLAGS[flag][0] == REFUSED:
                default = params[flag].default
                with pytest.raises(AssertionError if default else RuntimeError, match=f"{flag}={not default}"):
                    fn(lambda t: t * t, (x,), **{flag: not default})
    # no effect: fast_mode checks every entry anyway, so a wrong backward fails; undefined grads are zeros
    assert not wb.autograd.gradcheck(_wrong_grad, (x,), fast_mode=True, raise_exception=False)
    assert wb.autograd.gradcheck(lambda t: t * t, (x,), fast_mode=True, check_undefined_grad=True)
    with pytest.raises(wb.autograd.GradcheckError):  # raise_exception acted on (default True)
        wb.autograd.gradcheck(_wrong_grad, (x,))
    seen = []

    class _Cube(wb.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t ** 3

        @staticmethod
        def backward(ctx, g):
            seen.append(g.is_contiguous())
            (t,) = ctx.saved_tensors
            return 3 * g * t ** 2

    xs = wb.randn(2, 3, dtype=wb.float64, requires_grad=True)
    assert wb.autograd.gradgradcheck(_Cube.apply, (xs,), gen_non_contig_grad_outputs=True)
    assert seen and not any(seen)
    seen.clear()
    assert wb.autograd.gradgradcheck(_Cube.apply, (xs,)) and all(seen)
