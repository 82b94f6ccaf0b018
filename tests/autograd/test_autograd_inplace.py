"""In-place semantics: version counters shared by views, saved-tensor checks, leaves, views, setitem."""
import numpy as np
import pytest
import torch

import workbench as wb

A = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]])


def close(a, b):
    np.testing.assert_allclose(np.asarray(a.detach()._data), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def both(fn):
    x, tx = wb.tensor(A, requires_grad=True), torch.tensor(A, requires_grad=True)
    fn(wb, x).sum().backward()
    fn(torch, tx).sum().backward()
    close(x.grad, tx.grad)


def test_versions_shared_by_views():
    x = wb.zeros(2, 3)
    v = x[0]
    r = x.reshape(6)
    x.add_(1)
    assert x._version == v._version == r._version == 1
    v.mul_(2)
    assert x._version == 2 and r._version == 2
    d = x.detach()
    d.zero_()
    assert x._version == 3


def test_modifying_a_saved_tensor_names_op_scope_and_line():
    x = wb.tensor(A, requires_grad=True)
    with wb.autograd.graph.scope("encoder.0"):
        h = x * 2
        y = h.exp()  # exp saves its output
    y.add_(1)  # modified here
    line = test_modifying_a_saved_tensor_names_op_scope_and_line.__code__.co_firstlineno + 5
    with pytest.raises(RuntimeError) as e:
        y.sum().backward()
    msg = str(e.value)
    assert "modified by an inplace operation" in msg
    assert "ExpBackward0" in msg and "encoder.0" in msg
    assert "add_" in msg and f"test_autograd_inplace.py:{line}" in msg
    assert "version 1; expected version 0" in msg


def test_leaf_refuses_inplace_except_under_no_grad():
    x = wb.tensor(A, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x[0] = 1.0
    with wb.no_grad():
        x.add_(1)
        x[0, 0] = 5.0
    assert x._version == 2 and float(x[0, 0]) == 5.0


def test_inplace_on_nonleaf_gradients():
    both(lambda m, x: (x * 2).mul_(x).add_(1).exp_())


def test_inplace_on_view_of_nonleaf():
    def f(m, x):
        h = x * 1
        h[0].mul_(3)
        h[:, 1].add_(h[1, 2] * 2)
        return h * h

    both(f)


def test_setitem_with_tensor_value_and_index_put():
    def f(m, x):
        h = x.sin()
        h[0, 1] = x[1, 0] * 4
        h[1] = x[0] * x[1]
        return h * 2

    both(f)

    def g(m, x):
        h = x * 1
        idx = (m.tensor([0, 1, 1]), m.tensor([2, 0, 2]))
        return h.index_put_(idx, x[0] * 10, accumulate=True)

    both(g)


def test_view_of_leaf_inplace_then_backward():
    def f(m, x):
        base = x.clone()
        v = base.view(6)
        v.mul_(2)
        return base * x

    both(f)


def _fast_general_torch(name, base, args_w, args_t=None, kwargs=None):
    """Run Tensor.<name> three ways on copies of base: the method (checked to return x and keep x's array), its
    general form (``_wb_general``: the out-of-place result copied in) and PyTorch's. Returns the three tensors."""
    import torch as T
    kwargs = kwargs or {}
    x, y, t = wb.tensor(base), wb.tensor(base), T.tensor(base)
    data = x._data
    assert getattr(x, name)(*args_w, **kwargs) is x and x._data is data
    getattr(wb.Tensor, name)._wb_general(y, *args_w, **kwargs)
    getattr(t, name)(*(args_w if args_t is None else args_t), **kwargs)
    return x, y, t


INPLACE_FAST = [("add_", 1), ("sub_", 1), ("mul_", 1), ("div_", 1), ("true_divide_", 1), ("subtract_", 1),
                ("multiply_", 1), ("divide_", 1), ("exp_", 0), ("sin_", 0), ("tanh_", 0), ("sqrt_", 0),
                ("log1p_", 0), ("neg_", 0), ("negative_", 0), ("abs_", 0), ("absolute_", 0)]


@pytest.mark.parametrize("name,nargs", INPLACE_FAST)
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
def test_inplace_ops_nothing_records_match_the_general_path_and_pytorch(name, nargs, dtype):
    # with nothing to record, x.add_(y) runs the ufunc into x's array (Tensor.add_._wb_general is the
    # generic path: the out-of-place result copied in); values, dtype, version and identity must agree
    import torch as T
    if dtype == "complex64" and name in ("abs_", "absolute_"):  # a real result: PyTorch's error on every path
        for f in (getattr(wb.Tensor, name), getattr(wb.Tensor, name)._wb_general):
            with pytest.raises(RuntimeError, match="In-place abs is not supported for complex tensors"):
                f(wb.tensor([1j, 2.0], dtype=wb.complex64))
        with pytest.raises(RuntimeError, match="In-place abs is not supported for complex tensors"):
            getattr(T.tensor([1j]), name)()
        return
    rng = np.random.default_rng(0)
    base = (rng.random((3, 4)) + 0.5).astype(dtype)
    others = [None] if not nargs else [2, 0.75, base[0] * 0 + 1.5, base[:, :1] + 0.25, base + 1]
    if not nargs:
        base = base - 1  # negative values too
    for other in others:
        args = () if other is None else (other if not isinstance(other, np.ndarray) else None,)
        x, y, t = wb.tensor(base), wb.tensor(base), T.tensor(base)
        view = x[1]
        if args and args[0] is None:
            args_w, args_t = (wb.tensor(other),), (T.tensor(other),)
        else:
            args_w = args_t = args
        data = x._data
        assert getattr(x, name)(*args_w) is x
        getattr(wb.Tensor, name)._wb_general(y, *args_w)
        getattr(t, name)(*args_t)
        assert x._data is data and x.dtype == y.dtype and x._version == y._version == view._version == 1
        np.testing.assert_array_equal(x.numpy(), y.numpy())
        np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-6)


def test_inplace_fast_path_keeps_the_checks_and_errors():
    import tracemalloc
    x = wb.ones(1_000_000)
    y = wb.ones(1_000_000)
    tracemalloc.start()
    try:
        x += y
        x.mul_(2.0)
        x.exp_()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100_000, peak  # the general path allocates the 4 MB result of each op
    assert x[0].item() == pytest.approx(np.exp(4.0)) and x._version == 3
    w = wb.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w.add_(1.0)
    with wb.no_grad():
        w.sub_(wb.tensor([1.0, 2.0, 3.0]))
    assert w.tolist() == [0.0, -1.0, -2.0] and w.grad_fn is None
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        wb.ones(3).add_(wb.ones(2, 3))
    h = w * 1  # recorded: the general path, with its graph
    h.mul_(wb.tensor([2.0, 2.0, 2.0]))
    assert h.grad_fn is not None and h.grad_fn.name() == "MulBackward0"
    with wb.inference_mode():
        t = wb.ones(2)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        t.add_(1.0)
    with wb.profiler.profile() as prof:
        wb.ones(2).add_(1.0)
    assert "add" in {e.key for e in prof.key_averages()}
    # the version counter keeps where the op ran (its line read only for the error)
    x = wb.ones(3, requires_grad=True)
    y = x * 2
    z = y.sin()
    with wb.no_grad():
        y.mul_(2.0)
        y[0] = 1.0
    line = test_inplace_fast_path_keeps_the_checks_and_errors.__code__.co_firstlineno + 38
    with pytest.raises(RuntimeError, match=rf"version 2; expected version 0 instead\. It was modified by "
                                           rf"__setitem__ at .*test_autograd_inplace\.py:{line} in "
                                           "test_inplace_fast_path_keeps_the_checks_and_errors"):
        z.sum().backward()


def test_a_compiled_step_replays_the_inplace_fast_ops():
    def step(w, g):
        with wb.no_grad():
            w.sub_(g * 0.5)
            w.mul_(0.9)
        return w.sum()

    compiled = wb.compile(step)
    a, b = wb.ones(4), wb.ones(4)
    for i in range(3):
        g = wb.full((4,), float(i + 1))
        assert compiled(a, g).item() == step(b, g).item()
    assert a.tolist() == b.tolist()
    report = wb.compiler.explain(compiled)
    assert report.traces == 1 and report.replays == 2 and not report.reasons


@pytest.mark.parametrize("name", ["add_", "sub_"])
@pytest.mark.parametrize("alpha", [0.5, -3, 1, 1.0])
@pytest.mark.parametrize("shape", [(3, 4), (256, 256)])  # the second one pass (fused.add_scaled_)
def test_inplace_add_and_sub_with_alpha_match_the_general_path_and_pytorch(name, alpha, shape):
    import torch as T
    base = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    for other in (2.5, base[0] * 0.3, base * 0.7 + 0.1):
        x, y, t = wb.tensor(base), wb.tensor(base), T.tensor(base)
        o = wb.tensor(other) if isinstance(other, np.ndarray) else other
        getattr(x, name)(o, alpha=alpha)
        getattr(wb.Tensor, name)._wb_general(y, o, alpha=alpha)
        getattr(t, name)(T.tensor(other) if isinstance(other, np.ndarray) else other, alpha=alpha)
        np.testing.assert_array_equal(x.numpy(), y.numpy())
        # PyTorch fuses the multiply-add (one rounding), workbench rounds u * alpha first, as NumPy's two steps
        np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-6, atol=1e-6)
        assert x._version == 1
    with pytest.raises(RuntimeError, match="alpha must not be a complex number"):
        wb.ones(2).add_(wb.ones(2), alpha=1j)  # not a float or int: the general path, with its checks


def test_inplace_op_with_a_partly_overlapping_operand_is_pytorchs_error():
    # u[i] is x[i - 1]: a loop writing x would read what it wrote. PyTorch refuses (assert_no_partial_overlap),
    # before anything is written, on every path (the fused alpha loop, the ufunc, the general op)
    for op in (lambda x, u: x.add_(u, alpha=2), lambda x, u: x.mul_(u), lambda x, u: x.copysign_(u)):
        for lib in (wb, torch):
            buf = lib.arange(70_000, dtype=lib.float32)
            with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor"):
                op(buf[1:], buf[:-1])
            assert buf[1:].equal(lib.arange(1, 70_000, dtype=lib.float32))
    buf = wb.arange(10.0)
    buf[::2].add_(buf[1::2])  # interleaved, not overlapping (and not contiguous: PyTorch does not judge those)
    np.testing.assert_array_equal(buf.numpy()[::2], np.arange(0, 10, 2) + np.arange(1, 10, 2))
    y = wb.arange(70_000, dtype=wb.float32)
    y.sub_(y, alpha=0.5)  # the same array: each element reads itself first
    np.testing.assert_array_equal(y.numpy(), np.arange(70_000, dtype=np.float32) * np.float32(0.5))


CLAMP_FORMS = [("clamp_", (-0.5, 0.75), {}), ("clamp_", (), {"min": 0}), ("clamp_", (), {"max": 0.25}),
               ("clip_", (-1, 1), {}), ("clamp_min_", (0.1,), {}), ("clamp_max_", (), {"max": -0.2}),
               ("clamp_", (0.5, -0.5), {}), ("relu_", (), {})]


@pytest.mark.parametrize("name,args,kwargs", CLAMP_FORMS)
@pytest.mark.parametrize("shape", [(3, 5), (64, 600)])  # relu_: the general path, then its loop (>= 1024)
def test_clamp_and_relu_in_place_match_the_general_path_and_pytorch(name, args, kwargs, shape):
    rng = np.random.default_rng(0)
    base = rng.standard_normal(shape).astype(np.float32)
    base.flat[:4] = [-0.0, 0.0, np.nan, np.inf]
    x, y, t = _fast_general_torch(name, base, args, kwargs=kwargs)
    np.testing.assert_array_equal(x.numpy(), y.numpy())
    np.testing.assert_array_equal(np.signbit(x.numpy()), np.signbit(y.numpy()))
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    assert x._version == y._version == 1


def test_clamp_and_relu_in_place_allocate_nothing_and_keep_their_errors():
    import tracemalloc
    x = wb.randn(1_000_000)
    tracemalloc.start()
    try:
        x.clamp_(-1, 1)
        x.relu_()
        x.clamp_max_(0.5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100_000, peak
    assert float(x.max()) <= 0.5 and float(x.min()) >= 0.0 and x._version == 3
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        wb.ones(2).clamp_()
    w = wb.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w.clamp_(0, 1)
    h = w * 1
    h.relu_()  # recorded: the general path, with its node
    assert h.grad_fn is not None
    c = wb.tensor([1, -2, 3])  # an integer tensor: the general path
    c.clamp_(0, 2)
    assert c.tolist() == [1, 0, 2]


FUSED_UPDATES = [("addcmul_", 2, {"value": 0.3}), ("addcmul_", 2, {}), ("addcmul_", 2, {"value": -2}),
                 ("addcdiv_", 2, {"value": -0.01}), ("addcdiv_", 2, {}), ("lerp_", 1, 0.1), ("lerp_", 1, 0.7),
                 ("lerp_", 1, 0), ("lerp_", 1, 1), ("lerp_", 1, -0.25), ("lerp_", 1, 0.5)]


@pytest.mark.parametrize("name,ntensors,number", FUSED_UPDATES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(3, 4), (256, 256)])  # the second one loop (fused.addcmul_ ...)
def test_hand_written_optimizer_updates_in_place_match_the_general_path_and_pytorch(name, ntensors, number, dtype,
                                                                                   shape):
    import torch as T
    rng = np.random.default_rng(0)
    base = rng.standard_normal(shape).astype(dtype)
    ops = [rng.standard_normal(shape).astype(dtype) for _ in range(ntensors)]
    if name == "addcdiv_":
        ops[1] = np.abs(ops[1]) + 0.5
    args_w = [wb.tensor(o) for o in ops] + ([number] if name == "lerp_" else [])
    args_t = [T.tensor(o) for o in ops] + ([number] if name == "lerp_" else [])
    kw = {} if name == "lerp_" else number
    x, y, t = _fast_general_torch(name, base, args_w, args_t, kw)
    np.testing.assert_array_equal(x.numpy(), y.numpy())
    np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-6, atol=1e-6)
    assert x._version == y._version == 1


def test_hand_written_optimizer_updates_keep_the_general_path_where_they_must():
    import tracemalloc
    m, g = wb.randn(1_000_000), wb.randn(1_000_000)
    tracemalloc.start()
    try:
        m.lerp_(g, 0.1)
        m.addcmul_(g, g, value=0.001)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100_000, peak
    buf = wb.arange(70_000, dtype=wb.float32)
    x, u = buf[1:], buf[:-1]  # u overlaps x one element behind: PyTorch's error (assert_no_partial_overlap)
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor"):
        x.addcmul_(u, u, value=0.5)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
        wb.ones(3).addcdiv_(wb.tensor([1, 2, 3]), wb.tensor([1, 1, 1]))
    w = wb.ones(3, requires_grad=True)
    h = w * 1
    h.lerp_(wb.zeros(3), 0.5)  # recorded: the general path
    assert h.grad_fn is not None and h.grad_fn.name() == "LerpBackward0"
