"""Single names and habits of real PyTorch code (issue 14's long tail), each checked against PyTorch."""
import array
import warnings
from collections import deque

import numpy as np
import pytest

import workbench as wb
import workbench.nn.functional as F

torch = pytest.importorskip("torch")


# --- indexing with any sequence ----------------------------------------------------------------------
@pytest.mark.parametrize("key", [
    lambda n, y: (range(n), y),
    lambda n, y: (range(1, n), slice(None)),
    lambda n, y: ((0, 2), slice(1, 3)),
    lambda n, y: deque([2, 0]),
    lambda n, y: (range(n), range(n)),
    lambda n, y: range(0),
], ids=["range-with-tensor", "range-slice", "tuple-in-tuple", "deque", "two-ranges", "empty-range"])
def test_sequence_indices_read_write_and_differentiate_as_pytorch(key):
    a = np.random.default_rng(0).normal(size=(3, 4))
    y = [1, 3, 0]
    x, t = wb.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ours = x[key(3, wb.tensor(y))]
    theirs = t[key(3, torch.tensor(y))]
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    (ours * 2).sum().backward()
    (theirs * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
    xw, tw = wb.zeros(3, 4), torch.zeros(3, 4)
    xw[key(3, wb.tensor(y))] = 5.0
    tw[key(3, torch.tensor(y))] = 5.0
    np.testing.assert_array_equal(xw.numpy(), tw.numpy())


# --- torch.tensor of any sequence ------------------------------------------------------------------------
@pytest.mark.parametrize("data", [
    lambda: deque([1, 2, 3]), lambda: deque([[1.0, 2.0], [3.0, 4.0]]), lambda: range(5), lambda: array.array("f", [1, 2]),
    lambda: array.array("q", [7, 8]), lambda: [deque([1, 2]), deque([3, 4])], lambda: deque(), lambda: (True, False),
], ids=["deque", "deque-2d", "range", "array-f", "array-q", "list-of-deques", "empty-deque", "bools"])
def test_tensor_accepts_sequences_as_pytorch(data):
    ours, theirs = wb.tensor(data()), torch.tensor(data())
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_tensor_of_a_non_sequence_raises_pytorchs_error():
    with pytest.raises(RuntimeError, match="Could not infer dtype of set"):
        wb.tensor({1, 2})
    with pytest.raises(TypeError, match="str"):
        wb.tensor(["a"])


# --- dropout2d / dropout3d outside their intended ranks: warn and proceed, as PyTorch ----------------------
def test_dropout2d_on_2d_input_warns_and_drops_elements():
    x = wb.ones(200, 30)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        y = F.dropout2d(x, 0.5)
    kept = y.numpy() != 0
    assert 0.4 < kept.mean() < 0.6 and set(np.unique(y.numpy())) <= {0.0, 2.0}
    assert not (kept.all(axis=1) | (~kept).all(axis=1)).all()  # elementwise, not whole rows
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        torch.nn.functional.dropout2d(torch.ones(4, 3), 0.5)


def test_dropout2d_on_3d_input_masks_channels_of_n_c_l():
    with pytest.warns(UserWarning, match=r"interpreted as shape \(N, C, L\)"):
        y = F.dropout2d(wb.ones(50, 8, 6), 0.5).numpy()
    per_channel = y.reshape(50, 8, 6)
    assert ((per_channel == 0).all(axis=2) | (per_channel == 2).all(axis=2)).all()


def test_dropout3d_on_4d_input_is_unbatched_and_on_3d_warns():
    y = F.dropout3d(wb.ones(40, 2, 2, 2), 0.5).numpy().reshape(40, -1)
    assert ((y == 0).all(axis=1) | (y == 2).all(axis=1)).all()
    with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d"):
        F.dropout3d(wb.ones(4, 2, 2), 0.5)


def test_dropout2d_eval_is_identity_and_1d_input_is_an_error():
    x = wb.ones(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert F.dropout2d(x, 0.5, training=False) is x
        with pytest.raises(RuntimeError, match="at least 2 dimensions"):
            F.dropout2d(wb.ones(3), 0.5)


# --- histogram -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", [
    (lambda m, a: m.histogram(a, 5)),
    (lambda m, a: m.histogram(a, 7, range=(-1.0, 2.0), density=True)),
    (lambda m, a: m.histogram(a, m.tensor([-3.0, -0.5, 0.0, 0.25, 4.0], dtype=a.dtype))),
    (lambda m, a: m.histogram(a, 4, weight=a.abs())),
    (lambda m, a: a.histogram(3)),
    (lambda m, a: m.histogram(m.ones(3, dtype=a.dtype), 2)),
], ids=["bins", "range-density", "edges", "weights", "method", "constant"])
def test_histogram_matches_pytorch(case, dtype):
    a = np.random.default_rng(1).normal(size=(6, 5)).astype(dtype)
    ours, theirs = case(wb, wb.tensor(a)), case(torch, torch.tensor(a))
    for o, t in zip(ours, theirs):
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-6, atol=1e-7)
    assert ours.hist is ours[0] and ours.bin_edges is ours[1]


def test_histogram_errors():
    with pytest.raises(RuntimeError, match="floating point"):
        wb.histogram(wb.tensor([1, 2]), 2)
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        wb.histogram(wb.tensor([1.0]), 0)
    with pytest.raises(RuntimeError, match="min should not exceed max"):
        wb.histogram(wb.tensor([1.0]), 2, range=(3.0, 1.0))
