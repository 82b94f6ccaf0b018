"""Writes into a view that ``expand`` made, as PyTorch: through to the expanded tensor where the written region
has no internal overlap (``e[0] = v``, ``e[0, 1] = v``, a slice, ``e[0].add_(1)``, ``fill_`` anywhere, an advanced
index with PyTorch's deprecation warning), and PyTorch's RuntimeError before anything is written where it does
(``e.add_(1)``, ``e[:, 1] = v``, ``e.copy_(...)``, ``clamp_``...). An expand that stretches nothing is a writeable
view. NumPy's broadcast views are read-only, and these writes raised its ValueError."""
import warnings

import numpy as np
import pytest
import torch

import workbench as wb

FORMS = ["e[0, 1] = 5", "e[0] = 7", "e[1:, :2] = 3", "e[0, ..., 1] = 2", "e[..., 1] = 2", "e[:, 1] = 9",
         "e.add_(1)", "e += 1", "e.mul_(2)", "e.fill_(2)", "e.zero_()", "e[0].add_(1)", "e[0].clamp_(min=1)",
         "e.clamp_(min=1)", "e.relu_()", "e.copy_(lib.ones(2, 3))", "e[0].copy_(lib.tensor([1.0, 2.0, 3.0]))",
         "e[[0], [1]] = 4", "e[lib.tensor([True, False])] = 6", "e.sub_(lib.ones(2, 3), alpha=2)",
         "e[0].addcmul_(lib.ones(3), lib.ones(3))"]


def _run(lib, form, grad=False):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=grad)
    y = x * 1 if grad else x
    e = y.expand(2, 3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            exec(form, {"e": e, "lib": lib})
            if grad:  # (PyTorch raises some of these in backward, workbench at the write)
                (e * lib.tensor([[1.0], [2.0]])).sum().backward()
        except RuntimeError as err:
            return ("error", str(err)), y.detach().numpy().copy(), any("expanded" in str(m.message) for m in w)
    got = x.grad.numpy().copy() if grad else e.numpy().copy()
    return ("ok", got), y.detach().numpy().copy(), any("expanded" in str(m.message) for m in w)


@pytest.mark.parametrize("form", FORMS)
def test_writes_as_pytorch(form):
    (wk, wv), wy, ww = _run(wb, form)
    (tk, tv), ty, tw = _run(torch, form)
    assert wk == tk, (wv, tv)
    np.testing.assert_array_equal(wy, ty)  # nothing half-written where PyTorch refuses
    if wk == "error":
        assert wv == tv
    else:
        np.testing.assert_array_equal(wv, tv)
    assert ww == tw  # PyTorch's deprecation warning for an advanced index into an expanded tensor


@pytest.mark.parametrize("form", ["e.add_(1)", "e[:, 1] = 9", "e.fill_(2)", "e.mul_(2)"])
def test_overlapping_writes_on_the_tape_raise_as_pytorch(form):
    (wk, wv), _, _ = _run(wb, form, grad=True)
    (tk, tv), _, _ = _run(torch, form, grad=True)
    assert wk == tk == "error" and wv == tv


@pytest.mark.parametrize("form", ["e[0] = 7", "e[0, 1] = 5", "e[1:, :2] = lib.tensor([4.0, 5.0])", "e[0].add_(1)",
                                  "e[0] = lib.tensor([1.0, 1.0, 1.0], requires_grad=True) * 3"])
def test_writes_on_the_tape_as_pytorch(form):
    # the store goes into the indexed view (PyTorch's copy_ into x[k]), and the expanded view, made before it,
    # reads the new values (tests/autograd/test_view_refresh.py)
    (wk, wg), wy, _ = _run(wb, form, grad=True)
    (tk, tg), ty, _ = _run(torch, form, grad=True)
    assert wk == tk == "ok"
    np.testing.assert_array_equal(wy, ty)
    np.testing.assert_array_equal(wg, tg)


def test_an_expand_that_stretches_nothing_is_a_writeable_view():
    x = wb.zeros(3)
    e = x.expand(1, 3)
    e.add_(1)
    x.expand(3).mul_(3)
    assert x.tolist() == [3.0, 3.0, 3.0] and e.tolist() == [[3.0, 3.0, 3.0]]
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x.expand(2, 3).add_(1)


def test_a_read_only_buffer_keeps_numpys_error():
    a = np.frombuffer(np.arange(3, dtype=np.float32).tobytes(), dtype=np.float32)  # read-only memory
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = wb.from_numpy(a)
    with pytest.raises(ValueError, match="WRITEABLE"):
        t.expand(1, 3)[0] = 5.0
