"""Two matrices multiplied (``x @ w``, ``wb.matmul``, ``wb.mm``, ``Tensor.mm``) are PyTorch's ``mm``: one primitive
(``linalg_core.Mm``, node ``MmBackward0``) whose ``@`` operator computes and records it without a forward frame
(``function.product_operator``). Values and gradients against PyTorch and NumPy, the node names, the errors of
the general path, autocast, the profiler's and the compiler's view of it; and the engine's raw sum of a
broadcast operand's gradient (``engine._sum_to``) against the recorded ``sum_to_size``."""
import numpy as np
import pytest
import torch

import workbench as wb
from workbench.autograd import engine

FORMS = {"operator": lambda lib, a, b: a @ b, "matmul": lambda lib, a, b: lib.matmul(a, b),
         "mm": lambda lib, a, b: lib.mm(a, b), "method": lambda lib, a, b: a.mm(b)}


def _pair(lib, dtype, rg=(True, True), shapes=((5, 3), (3, 4))):
    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal(s).astype(dtype) for s in shapes]
    return [lib.tensor(x, requires_grad=r) for x, r in zip(arrs, rg)]


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rg", [(True, True), (True, False), (False, True), (False, False)])
def test_values_gradients_and_node_as_pytorch(form, dtype, rg):
    out = {}
    for lib in (wb, torch):
        a, b = _pair(lib, dtype, rg)
        y = FORMS[form](lib, a, b)
        gf = type(y.grad_fn).__name__ if y.grad_fn is not None else None
        if any(rg):
            y.backward(lib.ones_like(y))
        out[lib] = (y.detach().numpy(), gf, [t.grad.numpy() if t.grad is not None else None for t in (a, b)])
    (yw, gw, dw), (yt, gt, dt) = out[wb], out[torch]
    assert gw == gt and yw.dtype == yt.dtype
    np.testing.assert_allclose(yw, yt, rtol=1e-5 if dtype == "float32" else 1e-12)
    for x, y in zip(dw, dt):
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_allclose(x, y, rtol=1e-5 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "float16", "int64"])
def test_no_grad_product_is_numpys(dtype):
    a, b = _pair(wb, "float64", (False, False))
    a, b = a.to(getattr(wb, dtype)), b.to(getattr(wb, dtype))
    y = a @ b
    want = (a._data.astype(np.float32) @ b._data.astype(np.float32)).astype(np.float16) if dtype == "float16" \
        else a._data @ b._data
    assert y.dtype == a.dtype and y.grad_fn is None
    np.testing.assert_array_equal(y.numpy(), want)


def test_a_parameter_operand_and_a_view_record_mm():
    w = wb.nn.Parameter(wb.randn(4, 3))
    x = wb.randn(4, 5, requires_grad=True)
    y = x.T @ w
    assert type(y.grad_fn).__name__ == "MmBackward0"
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), x.detach().numpy().sum(1)[:, None].repeat(3, 1), rtol=1e-6)


@pytest.mark.parametrize("shapes", [((2, 3), (4, 5)), ((2, 3), (3,)), ((3,), (3,)), ((2, 2, 3), (3, 4)), ((0, 3), (3, 0))])
def test_other_shapes_take_the_general_path_as_pytorch(shapes):
    for_lib = {}
    for lib in (wb, torch):
        a, b = _pair(lib, "float32", shapes=shapes)
        try:
            y = a @ b
            y.sum().backward()
            for_lib[lib] = ("ok", type(y.grad_fn).__name__ if y.numel() else None, y.detach().numpy(),
                            a.grad.numpy(), b.grad.numpy())
        except RuntimeError as e:
            for_lib[lib] = ("error", str(e).split("\n")[0])
    w, t = for_lib[wb], for_lib[torch]
    assert w[0] == t[0]
    if w[0] == "error":
        assert w[1] == t[1]
    else:
        for x, y in zip(w[2:], t[2:]):
            np.testing.assert_allclose(x, y, rtol=1e-5)


def test_mixed_dtypes_and_bad_operands_raise_as_pytorch():
    a = wb.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        a @ wb.ones(3, 2, dtype=wb.float64)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)"):
        a @ wb.ones(2, 3)
    for other in ("x", [[1.0], [2.0], [3.0]], 2.0):  # Python's own error, as PyTorch's operator gives
        with pytest.raises(TypeError, match=f"unsupported operand type\\(s\\) for @: 'Tensor' and '{type(other).__name__}'"):
            a @ other
    np.testing.assert_array_equal((a @ np.ones((3, 2), np.float32)).detach().numpy(), np.full((2, 2), 3.0))


def test_gradcheck_and_double_backward():
    a = wb.tensor(np.random.default_rng(1).standard_normal((3, 4)), requires_grad=True)
    b = wb.tensor(np.random.default_rng(2).standard_normal((4, 2)), requires_grad=True)
    assert wb.autograd.gradcheck(lambda x, y: x @ y, (a, b))
    assert wb.autograd.gradgradcheck(lambda x, y: x @ y, (a, b))


def test_autocast_takes_the_general_path():
    a, b = wb.ones(4, 8, requires_grad=True), wb.ones(8, 2)
    with wb.autocast("cpu", dtype=wb.bfloat16):
        y = a @ b
    assert y.dtype == wb.bfloat16 and type(y.grad_fn).__name__ == "MmBackward0"


def test_profiler_shows_mm():
    a, b = _pair(wb, "float32")
    with wb.profiler.profile() as prof:
        (a @ b).sum().backward()
    keys = {e.key for e in prof.key_averages()}
    assert {"mm", "autograd::engine::evaluate_function: MmBackward0"} <= keys


def test_compiled_step_replays_mm_and_the_bias_sum_bitwise():
    rng = np.random.default_rng(3)
    x = wb.tensor(rng.standard_normal((8, 6)).astype(np.float32))
    ps = [wb.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in ((6, 5), (5,))]
    ref = [wb.tensor(p.detach().numpy().copy(), requires_grad=True) for p in ps]

    def step(w, b):
        loss = ((x @ w + b).relu() ** 2).mean()
        loss.backward()
        with wb.no_grad():
            for p in (w, b):
                p -= 0.1 * p.grad
                p.grad = None
        return loss

    compiled = wb.compile(step)
    for _ in range(3):
        lc, le = compiled(*ps), step(*ref)
        np.testing.assert_array_equal(lc.detach().numpy(), le.detach().numpy())
        for p, q in zip(ps, ref):
            np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert wb.compiler.explain(compiled).replays >= 1


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("shapes", [((8, 5), (5,)), ((4, 3, 5), (3, 1)), ((2, 3), (1, 3)), ((6,), ())])
def test_broadcast_gradient_raw_sum_is_the_recorded_ops(dtype, shapes, monkeypatch):
    rng = np.random.default_rng(4)
    xa, ba = (rng.standard_normal(s).astype(dtype) for s in shapes)
    grads = {}
    for how in ("raw", "recorded"):
        calls = []
        if how == "raw":
            orig = engine._sum_to
            monkeypatch.setattr(engine, "_sum_to", lambda g, s: calls.append(s) or orig(g, s))
        x, b = wb.tensor(xa, requires_grad=True), wb.tensor(ba, requires_grad=True)
        y = ((x * 1.5 + b) ** 2).sum()
        if how == "raw":
            y.backward()
            assert calls == [tuple(ba.shape)]
            grads[how] = b.grad.numpy()
        else:  # create_graph: the gradient is recorded (sum_to_size), and differentiable
            (gb,) = wb.autograd.grad(y, [b], create_graph=True)
            assert gb.grad_fn is not None
            grads[how] = gb.detach().numpy()
    assert grads["raw"].dtype == np.dtype(dtype)
    np.testing.assert_array_equal(grads["raw"], grads["recorded"])
    bt = torch.tensor(ba, requires_grad=True)
    ((torch.tensor(xa) * 1.5 + bt) ** 2).sum().backward()
    np.testing.assert_allclose(grads["raw"].astype(np.float64), bt.grad.numpy().astype(np.float64),
                               rtol=1e-2 if dtype == "float16" else 1e-5)
