"""The no-record fast paths (operators, unary ufunc ops, ``sum()``) give what the general path gives.

``binary_operator``/``unary_operator`` and apply's ``_ufunc`` shortcut skip the op's forward when nothing
records; these tests pin that every result (values, dtype, type of the array, graph-cut marks, inference
marks, fresh version counters) is the one the general path, and PyTorch, produce.
"""
import operator

import numpy as np
import pytest
import torch

import workbench as wb
from workbench.autograd import graph

OPS = [operator.add, operator.sub, operator.mul, operator.truediv]
DTYPES = ["float16", "float32", "float64", "complex64", "int32", "bool"]


def _arr(dtype, shape=(3, 2), seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 2.0, shape) if dtype[0] in "fc" else rng.integers(1, 4, shape)
    if dtype == "complex64":
        a = a + 1j * rng.uniform(0.5, 2.0, shape)
    return a.astype(dtype)


def _same(w, t):
    assert str(w.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (w.dtype, t.dtype)
    assert tuple(w.shape) == tuple(t.shape)
    assert w._data.__class__ is np.ndarray  # never a NumPy scalar, even for 0-d results
    np.testing.assert_allclose(w.numpy(), t.numpy(), rtol=1e-3 if w.dtype == wb.float16 else 1e-6)


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.__name__)
@pytest.mark.parametrize("da", DTYPES)
@pytest.mark.parametrize("db", ["float32", "float64", "int32", "float", "int"])
@pytest.mark.parametrize("shape", [(3, 2), ()], ids=["2d", "0d"])
def test_operators_match_torch(op, da, db, shape):
    a = _arr(da, shape)
    if db in ("float", "int"):
        b = 1.5 if db == "float" else 3
        wb_b, t_b = b, b
    else:
        b = _arr(db, shape, seed=1)
        wb_b, t_b = wb.tensor(b), torch.tensor(b)
    for fwd in (lambda x, y: op(x, y), lambda x, y: op(y, x)):  # the operator and its reflection
        try:
            t = fwd(torch.tensor(a), t_b)
        except RuntimeError:
            with pytest.raises(RuntimeError):
                fwd(wb.tensor(a), wb_b)
            continue
        with wb.no_grad():
            _same(fwd(wb.tensor(a), wb_b), t)
        _same(fwd(wb.tensor(a), wb_b), t)  # grad mode on, nothing requires grad: the same path


@pytest.mark.parametrize("name", ["exp", "sin", "tanh", "sqrt", "log", "sigmoid", "cos"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "int64"])
def test_unary_method_and_function_match_torch(name, dtype):
    a = _arr(dtype)
    if dtype == "float16" and name == "sigmoid":
        a = a.astype("float32")
    t = getattr(torch.tensor(a), name)()
    _same(getattr(wb.tensor(a), name)(), t)
    _same(getattr(wb, name)(wb.tensor(a)), t)
    out = wb.empty(0, dtype=wb.tensor(a).exp().dtype)
    assert getattr(wb, name)(wb.tensor(a), out=out) is out
    _same(out, t)


@pytest.mark.parametrize("dtype", ["float16", "float32", "complex64", "int32", "bool"])
def test_sum_matches_torch(dtype):
    a = _arr(dtype, (4, 5))
    _same(wb.tensor(a).sum(), torch.tensor(a).sum())
    _same(wb.tensor(a).sum(keepdim=True), torch.tensor(a).sum((0, 1), keepdim=True))
    _same(wb.tensor(a).sum(dtype=wb.float64), torch.tensor(a).sum(dtype=torch.float64))


def test_no_grad_results_mark_the_cut_and_are_fresh():
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    with wb.no_grad():
        ys = [x * 2, 2 * x, x - x, 1 / x, x.exp(), wb.exp(x), x.sum()]
    for y in ys:
        assert not y.requires_grad and y.grad_fn is None and y._version == 0
        with pytest.raises(RuntimeError, match="does not require grad.*grad mode was off"):
            y.backward(wb.ones_like(y))
    y = ys[0]
    y.add_(1)  # a fresh version counter: bumping it touches nobody else
    assert y._version == 1 and ys[1]._version == 0 and x._version == 0


def test_recording_still_happens_when_grad_is_on():
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    y = (2 - x) * x / 4 + x.exp()
    assert y.grad_fn.name() == "AddBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (2 - 2 * x.detach().numpy()) / 4 + np.exp([1.0, 2.0]),
                               rtol=1e-6)


def test_inference_mode_marks_fast_path_results():
    x = wb.tensor([1.0, 2.0])
    with wb.inference_mode():
        ys = [x * x, x + 1.0, x.tanh(), x.sum()]
    assert all(y.is_inference() for y in ys)
    assert not (x * x).is_inference()


def test_a_viz_recorder_hears_about_cuts_on_the_fast_path():
    x = wb.tensor([1.0], requires_grad=True)
    heard = []
    prev = graph.CUTS[0]
    graph.CUTS[0] = lambda t, reason, source: heard.append((reason, source))
    try:
        with wb.no_grad():
            x * 3
            x.exp()
    finally:
        graph.CUTS[0] = prev
    assert heard == [("no_grad", x), ("no_grad", x)]


def test_fast_path_leaves_fake_cuda_and_mixed_devices_to_the_general_path(fake_cuda):
    a = wb.tensor([1.0, 2.0], device="cuda")
    with wb.no_grad():
        r = a * a + 1.0
    assert r.device.type == "cuda" and r.cpu().tolist() == [2.0, 5.0]
    with pytest.raises(RuntimeError, match="same device"):
        a * wb.tensor([1.0, 2.0])
