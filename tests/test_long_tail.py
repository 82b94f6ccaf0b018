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
    # PyTorch sizes by the first elements (a string there is "too many dimensions"), then infers the dtype
    for data, exc in ((["a"], ValueError), ([["a"], [1]], ValueError), ([1, "a"], TypeError),
                      ([[1], ["a"]], TypeError), ("a", TypeError)):
        with pytest.raises(exc) as ours:
            wb.tensor(data)
        with pytest.raises(exc) as theirs:
            torch.tensor(data)
        assert str(theirs.value).split(":")[0] in str(ours.value), (data, ours.value, theirs.value)


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


# --- single names: limits, constants, legacy constructors, predicates, switches --------------------------
@pytest.mark.parametrize("name", ["float16", "float32", "float64", "bfloat16", "complex64"])
def test_finfo_matches_pytorch(name):
    ours, theirs = wb.finfo(getattr(wb, name)), torch.finfo(getattr(torch, name))
    for k in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(ours, k) == getattr(theirs, k), k
    assert repr(ours) == repr(theirs)
    assert wb.finfo().dtype == torch.finfo().dtype


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_pytorch(name):
    ours, theirs = wb.iinfo(getattr(wb, name)), torch.iinfo(getattr(torch, name))
    assert (ours.bits, ours.max, ours.min, ours.dtype) == (theirs.bits, theirs.max, theirs.min, theirs.dtype)
    with pytest.raises(TypeError):
        wb.iinfo(wb.float32)
    with pytest.raises(TypeError):
        wb.finfo(wb.int32)


def test_constants_match_pytorch():
    for name in ("pi", "e", "inf"):
        assert getattr(wb, name) == getattr(torch, name)
    assert np.isnan(wb.nan) and wb.newaxis is torch.newaxis is None
    assert wb.zeros(2, 3)[:, wb.newaxis].shape == (2, 1, 3)


@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "ByteTensor", "BoolTensor"])
def test_legacy_constructors_match_pytorch(name):
    ours, theirs = getattr(wb, name)([1, 0, 2]), getattr(torch, name)([1, 0, 2])
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert getattr(wb, name)(2, 3).shape == (2, 3)
    assert isinstance(ours, getattr(wb, name)) and not isinstance(ours.to(wb.float16), getattr(wb, name))
    assert wb.ones(2, dtype=ours.dtype).new([4, 5]).dtype == ours.dtype
    assert wb.ones(2, dtype=ours.dtype).new(3, 1).shape == (3, 1)


def test_predicates_and_small_methods_match_pytorch():
    a = np.arange(6.0).reshape(2, 3)
    x, t = wb.tensor(a), torch.tensor(a)
    for name in ("is_xpu", "is_mps", "is_meta", "is_sparse", "is_quantized", "is_nested", "is_cuda", "is_cpu"):
        assert getattr(x, name) == getattr(t, name), name
    assert (x.get_device(), x.is_signed(), wb.tensor([1], dtype=wb.uint8).is_signed()) == \
        (t.get_device(), t.is_signed(), torch.tensor([1], dtype=torch.uint8).is_signed())
    assert wb.is_nonzero(wb.tensor([0.5])) and not wb.is_nonzero(wb.tensor(0))
    with pytest.raises(RuntimeError, match="more than one value"):
        wb.is_nonzero(x)
    assert x.is_same_size(wb.zeros(2, 3)) and not x.is_conj() and not wb.is_neg(x)
    assert x.type_as(wb.tensor([1])).dtype == wb.int64
    np.testing.assert_array_equal(x.H.numpy(), t.H.numpy())
    np.testing.assert_array_equal(wb.ones(4, 2, 3).mH.shape, torch.ones(4, 2, 3).mH.shape)
    with pytest.raises(RuntimeError, match="matrices"):
        wb.ones(2, 2, 2).H
    assert repr(x.layout) == "workbench.strided" and x.layout is wb.strided
    assert x.contiguous(memory_format=wb.channels_last).shape == (2, 3)


def test_function_forms_of_methods():
    x, t = wb.tensor([-1.0, 4.0]), torch.tensor([-1.0, 4.0])
    assert wb.relu_(x) is x and torch.relu_(t) is t
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    np.testing.assert_array_equal(wb.clamp_(x, max=2.0).numpy(), torch.clamp_(t, max=2.0).numpy())
    y = wb.ones(2, requires_grad=True) * 2
    assert not wb.detach(y).requires_grad and y.requires_grad


def test_variable_as_old_code_uses_it():
    from workbench.autograd import Variable

    base = wb.ones(2)
    v = Variable(base, requires_grad=True)
    assert v.is_leaf and v.requires_grad and not base.requires_grad and v.data_ptr() == base.data_ptr()
    (v * 3).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [3.0, 3.0])
    assert isinstance(wb.zeros(1), Variable)
    with pytest.warns(UserWarning, match="volatile"):
        Variable(base, volatile=True)


def test_process_switches_round_trip_and_check_values():
    wb.set_float32_matmul_precision("medium")
    assert wb.get_float32_matmul_precision() == "medium"
    wb.set_float32_matmul_precision("highest")
    with pytest.raises(RuntimeError, match="precision"):
        wb.set_float32_matmul_precision("fast")
    wb.set_deterministic_debug_mode("warn")
    assert wb.are_deterministic_algorithms_enabled() and wb.is_deterministic_algorithms_warn_only_enabled()
    assert wb.get_deterministic_debug_mode() == 1
    wb.use_deterministic_algorithms(False)
    assert wb.get_deterministic_debug_mode() == 0
    n = wb.get_num_threads()
    wb.set_num_threads(1)
    assert wb.get_num_threads() == 1
    wb.set_num_threads(n)
    with pytest.raises(RuntimeError):
        wb.set_num_threads(0)
    with wb.set_anomaly_enabled(True):
        assert wb.is_anomaly_enabled()
    assert not wb.is_anomaly_enabled()


def test_import_raises_the_collectors_first_threshold_only_upward_and_the_env_var_sets_it():
    import subprocess
    import sys

    def threshold(env, pre=""):
        code = f"import gc; {pre}import workbench; print(gc.get_threshold()[0])"
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**__import__("os").environ, **env})
        return run.stdout.strip() or run.stderr.strip().splitlines()[-1]

    assert threshold({}) == "10000"
    assert threshold({"WORKBENCH_GC_THRESHOLD": "0"}) == "700"  # Python's default, left alone
    assert threshold({"WORKBENCH_GC_THRESHOLD": "3000"}) == "3000"
    assert threshold({}, pre="gc.set_threshold(50000); ") == "50000"  # a higher one the program set is kept
    assert "must be an integer" in threshold({"WORKBENCH_GC_THRESHOLD": "many"})


def test_a_training_steps_tape_sets_off_no_collection():
    # the tape's objects are freed by reference counting: at the threshold import sets, a recurrent step's
    # graph (thousands of objects) runs no collection at all
    import gc
    W, U, b = (wb.randn(*s, requires_grad=True) for s in ((4, 32), (8, 32), (32,)))
    x = wb.randn(32, 3, 4)

    def step():  # an LSTM written by hand: some 20 recorded ops a time step
        h = c = wb.zeros(3, 8)
        for t in range(32):
            i, f, g, o = (x[t] @ W + h @ U + b).chunk(4, 1)
            c = f.sigmoid() * c + i.sigmoid() * g.tanh()
            h = o.sigmoid() * c.tanh()
        h.sum().backward()

    step()  # the first call compiles its kernels (Numba's objects count too)
    runs = []
    gc.collect()
    gc.callbacks.append(cb := lambda phase, info: runs.append(info["generation"]) if phase == "start" else None)
    try:
        for _ in range(3):
            step()
    finally:
        gc.callbacks.remove(cb)
    assert runs == []
