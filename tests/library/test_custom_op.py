"""workbench.library.custom_op against torch.library: schema, kernels per device, autograd, fake functions, opcheck,
and the op as a tape node (named, on the right device, in the viewer and debugger, inside a trained model)."""
from typing import Optional

import numpy as np
import pytest
import torch

import workbench as wb
from workbench import Tensor
from workbench.library import OpCheckError, custom_op, opcheck


def _swish_np(x, beta):
    return x / (1 + np.exp(-beta * x))


def _make_swish(name):
    @custom_op(name, mutates_args=())
    def swish(x: Tensor, beta: float = 1.0) -> Tensor:
        return wb.from_numpy(_swish_np(x.numpy(), beta))

    def setup_context(ctx, inputs, output):
        x, beta = inputs
        ctx.save_for_backward(x)
        ctx.beta = beta

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = wb.sigmoid(ctx.beta * x)
        return grad * (s + ctx.beta * x * s * (1 - s)), None

    swish.register_autograd(backward, setup_context=setup_context)
    swish.register_fake(lambda x, beta=1.0: wb.empty_like(x))
    return swish


SWISH = _make_swish("wbtest::swish")


def test_forward_backward_gradcheck_and_opcheck():
    x64 = np.random.default_rng(0).standard_normal((3, 4))
    x = wb.tensor(x64, requires_grad=True)
    y = SWISH(x, 0.8)
    np.testing.assert_allclose(y.detach().numpy(), _swish_np(x64, 0.8), rtol=1e-12)
    tx = torch.tensor(x64, requires_grad=True)
    torch.nn.functional.silu(tx).sum().backward()  # beta=1 is SiLU: PyTorch is the oracle for the gradient
    x1 = wb.tensor(x64, requires_grad=True)
    SWISH(x1).sum().backward()
    np.testing.assert_allclose(x1.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
    assert wb.autograd.gradcheck(lambda t: SWISH(t, 0.8), (x,))
    assert set(opcheck(SWISH, (x, 0.8)).values()) == {"SUCCESS"}
    assert opcheck(wb.ops.wbtest.swish.default, (wb.randn(5),))["test_schema"] == "SUCCESS"


def test_node_is_named_by_the_user_as_in_pytorch():
    y = SWISH(wb.randn(3, requires_grad=True))

    @torch.library.custom_op("wbtest::swish", mutates_args=())
    def tswish(x: torch.Tensor, beta: float = 1.0) -> torch.Tensor:
        return x * torch.sigmoid(beta * x)

    ty = tswish(torch.randn(3, requires_grad=True))
    assert y.grad_fn.name() == ty.grad_fn.name() == "GeneratedBackwardFor_wbtest_swish_defaultBackward"
    assert y.grad_fn.op == "wbtest::swish"
    assert SWISH._schema == tswish._schema
    assert repr(wb.ops.wbtest.swish) == repr(torch.ops.wbtest.swish)
    assert str(wb.ops.wbtest.swish.default) == str(torch.ops.wbtest.swish.default) == "wbtest.swish.default"


def _sig_a(x: Tensor, ys: list[Tensor], n: int, o: Optional[Tensor], s: str, b: bool, d: wb.dtype,
           l: list[int], f: list[float], *, k: float = 2.0) -> tuple[Tensor, Tensor]: ...


def _sig_b(x: Tensor, out: Tensor, alpha: float = 1.0, flag: bool = False) -> None: ...


@pytest.mark.parametrize("fn,mutates", [(_sig_a, {"x"}), (_sig_b, {"out"}), (_sig_b, ())])
def test_infer_schema_matches_pytorch(fn, mutates):
    import typing

    def torch_version():  # the same signature with torch's own types
        hints = typing.get_type_hints(fn)
        conv = {Tensor: torch.Tensor, wb.dtype: torch.dtype, Optional[Tensor]: Optional[torch.Tensor],
                list[Tensor]: list[torch.Tensor], tuple[Tensor, Tensor]: tuple[torch.Tensor, torch.Tensor]}
        g = lambda *a, **k: None  # noqa: E731
        g.__signature__ = __import__("inspect").signature(fn).replace(
            parameters=[p.replace(annotation=conv.get(hints[p.name], hints[p.name]))
                        for p in __import__("inspect").signature(fn).parameters.values()],
            return_annotation=conv.get(hints["return"], hints["return"]))
        g.__annotations__ = {k: conv.get(v, v) for k, v in hints.items()}
        if hints["return"] is type(None):
            g.__annotations__["return"] = None
            g.__signature__ = g.__signature__.replace(return_annotation=None)
        return g

    assert wb.library.infer_schema(fn, mutates_args=mutates) == torch.library.infer_schema(
        torch_version(), mutates_args=mutates)


def test_definition_errors():
    with pytest.raises(ValueError, match="must have a type annotation"):
        custom_op("wbtest::bad", lambda x: x, mutates_args=())
    with pytest.raises(ValueError, match="namespace::name"):
        custom_op("nonamespace", SWISH._init_fn, mutates_args=())
    with pytest.raises(ValueError, match="not arguments"):
        custom_op("wbtest::bad2", SWISH._init_fn, mutates_args=("y",))
    with pytest.raises(ValueError, match="Please make these consistent"):
        custom_op("wbtest::bad3", SWISH._init_fn, mutates_args=(), schema="(Tensor(a!) x, float beta) -> Tensor")


def test_call_errors_name_the_op():
    with pytest.raises(RuntimeError, match=r"wbtest::swish\(\) Expected a value of type 'float' for argument 'beta'"):
        SWISH(wb.ones(2), "a")
    with pytest.raises(TypeError, match="missing value for argument 'x'"):
        SWISH()
    with pytest.raises(RuntimeError, match="no autograd formula was registered"):
        @custom_op("wbtest::noback", mutates_args=())
        def noback(x: Tensor) -> Tensor:
            return x * 2

        noback(wb.ones(2, requires_grad=True)).sum().backward()


def test_kernel_output_checks():
    @custom_op("wbtest::alias", mutates_args=())
    def alias(x: Tensor) -> Tensor:
        return x[:1]

    with pytest.raises(RuntimeError, match="may not alias any inputs"):
        alias(wb.ones(3))

    @custom_op("wbtest::tworets", mutates_args=())
    def tworets(x: Tensor) -> tuple[Tensor, Tensor]:
        return x.clone()

    with pytest.raises(RuntimeError, match="says it returns a tuple of 2"):
        tworets(wb.ones(3))

    @custom_op("wbtest::rawarray", mutates_args=())
    def rawarray(x: Tensor) -> Tensor:
        return x.numpy() * 2

    with pytest.raises(RuntimeError, match="returned a ndarray where the schema .* has a Tensor"):
        rawarray(wb.ones(3))


def test_ops_pickle_by_name():
    import pickle

    assert pickle.loads(pickle.dumps(SWISH)) is SWISH
    assert pickle.loads(pickle.dumps(wb.ops.wbtest.swish)) is wb.ops.wbtest.swish
    assert pickle.loads(pickle.dumps(wb.ops.wbtest.swish.default)) is SWISH._opoverload


def test_mutation_bumps_the_version_and_is_checked():
    @custom_op("wbtest::scale_", mutates_args={"x"})
    def scale_(x: Tensor, a: float) -> None:
        x.numpy()[...] *= a  # writes straight into the buffer, as a C or Numba kernel would

    x = wb.ones(3)
    v = x._version
    scale_(x, 2.0)
    assert x.tolist() == [2.0, 2.0, 2.0] and x._version == v + 1
    w = wb.ones(3, requires_grad=True)
    h = w * 1
    y = h * h  # saves h
    scale_(h.detach(), 3.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="mutates its argument 'x', which requires grad"):
        scale_(wb.ones(2, requires_grad=True), 2.0)
    with pytest.raises(RuntimeError, match="Cannot register autograd formula for non-functional operator"):
        scale_.register_autograd(lambda ctx, g: g)
    assert set(opcheck(scale_, (wb.ones(3), 2.0), test_utils=["test_schema", "test_aot_dispatch_dynamic"]).values()) \
        == {"SUCCESS"}

    @custom_op("wbtest::sneaky", mutates_args=())
    def sneaky(x: Tensor) -> Tensor:
        x.numpy()[...] += 1
        return x.clone()

    with pytest.raises(OpCheckError, match="Argument x is not defined as mutable but was mutated"):
        opcheck(sneaky, (wb.ones(2),), test_utils="test_schema")


def test_opcheck_reports_each_failure():
    @custom_op("wbtest::wrong", mutates_args=())
    def wrong(x: Tensor) -> Tensor:
        return x * x

    res = opcheck(wrong, (wb.randn(3, dtype=wb.float64, requires_grad=True),), raise_exception=False)
    assert "no autograd formula" in str(res["test_autograd_registration"])
    assert "no fake impl registered" in str(res["test_faketensor"])
    wrong.register_fake(lambda x: x.new_empty(x.shape[0] + 1))
    wrong.register_autograd(lambda ctx, g: g * 3 * ctx.saved_tensors[0],  # wrong factor: gradcheck must see it
                            setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))
    res = opcheck(wrong, (wb.randn(3, dtype=wb.float64, requires_grad=True),), raise_exception=False)
    assert "has shape" in str(res["test_faketensor"])
    assert "Jacobian mismatch" in str(res["test_gradcheck"])
    assert res["test_schema"] == res["test_autograd_registration"] == res["test_aot_dispatch_dynamic"] == "SUCCESS"


def test_tensor_lists_keyword_only_and_several_outputs():
    @custom_op("wbtest::wsum", mutates_args=())
    def wsum(xs: list[Tensor], ws: list[float], *, bias: float = 0.0) -> tuple[Tensor, Tensor]:
        s = sum(x * w for x, w in zip(xs, ws)) + bias
        return s, s * s

    def setup(ctx, inputs, keyword_only_inputs, output):
        ctx.ws = inputs[1]
        ctx.save_for_backward(output[0])
        assert keyword_only_inputs == {"bias": 0.5}

    def backward(ctx, g_s, g_sq):
        (s,) = ctx.saved_tensors
        assert ctx.needs_input_grad == ([True, False, True], False)
        g = g_s + 2 * s * g_sq
        return [g * w for w in ctx.ws], None

    wsum.register_autograd(backward, setup_context=setup)
    xs = [wb.randn(2, dtype=wb.float64, requires_grad=True), wb.randn(2, dtype=wb.float64),
          wb.randn(2, dtype=wb.float64, requires_grad=True)]
    s, sq = wsum(xs, [1.0, 2.0, 3.0], bias=0.5)
    (s.sum() + sq.sum()).backward()
    expect = 1 + 2 * (xs[0] + 2 * xs[1] + 3 * xs[2] + 0.5)
    np.testing.assert_allclose(xs[2].grad.numpy(), 3 * expect.detach().numpy())
    assert xs[1].grad is None
    assert wb.autograd.gradcheck(lambda a, b: wsum([a, xs[1], b], [1.0, 2.0, 3.0], bias=0.5),
                                 (xs[0].detach().requires_grad_(), xs[2].detach().requires_grad_()))


def test_device_dispatch_on_the_fake_cupy(fake_cuda):
    calls = []

    @custom_op("wbtest::dsin", mutates_args=(), device_types="cpu")
    def dsin(x: Tensor) -> Tensor:
        calls.append("cpu")
        return wb.from_numpy(np.sin(x.numpy()))

    with pytest.raises(NotImplementedError, match="Could not run 'wbtest::dsin' with arguments from the 'CUDA'"):
        dsin(wb.ones(2, device="cuda"))

    @dsin.register_kernel("cuda")
    def _(x):  # the fake cupy runs the 'cuda' kernel itself (a launched __global__ one on its CPU emulator)
        calls.append("cuda")
        return x.sin()

    dsin.register_autograd(lambda ctx, g: g * ctx.saved_tensors[0].cos(),
                           setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))
    x = wb.tensor([0.5, 1.0], device="cuda", requires_grad=True)
    y = dsin(x)
    assert y.device.type == "cuda" and y.grad_fn.op == "wbtest::dsin" and calls == ["cuda"]
    y.sum().backward()
    assert x.grad.device.type == "cuda"
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.cos([0.5, 1.0]), rtol=1e-6)
    with pytest.raises(RuntimeError, match="at least two devices"):
        @custom_op("wbtest::add2", mutates_args=())
        def add2(a: Tensor, b: Tensor) -> Tensor:
            return a + b

        add2(wb.ones(1), wb.ones(1, device="cuda"))

    @custom_op("wbtest::cuda_only", mutates_args=(), device_types="cuda")
    def cuda_only(x: Tensor) -> Tensor:
        return x * 2

    with pytest.raises(RuntimeError, match="has a CUDA kernel but no CPU reference"):
        cuda_only(wb.ones(1, device="cuda"))

    @custom_op("wbtest::host_out", mutates_args=())
    def host_out(x: Tensor) -> Tensor:
        return wb.zeros(x.shape)

    with pytest.raises(RuntimeError, match="returned a tensor on cpu, but the op's inputs are on cuda:0"):
        host_out(wb.ones(1, device="cuda"))
    r = opcheck(dsin, (wb.tensor([0.2, 0.3], dtype=wb.float64, device="cuda", requires_grad=True),),
                test_utils=["test_schema", "test_aot_dispatch_dynamic", "test_gradcheck"])
    assert set(r.values()) == {"SUCCESS"}


def test_library_define_impl():
    lib = wb.library.Library("wbtestlib", "DEF")
    assert lib.define("axpb(Tensor x, float a, float b=0.0) -> Tensor") == "axpb"
    with pytest.raises(RuntimeError, match="same name and overload name multiple times"):
        lib.define("axpb(Tensor x, float a, float b=0.0) -> Tensor")
    with pytest.raises(RuntimeError, match="Only a single TORCH_LIBRARY"):
        wb.library.Library("wbtestlib", "DEF")
    lib.impl("axpb", lambda x, a, b: x * a + b, "CPU")
    lib.impl("axpb", lambda x, a, b: wb.empty_like(x), "Meta")
    wb.library.register_autograd("wbtestlib::axpb", lambda ctx, g: (g * ctx.a, None, None),
                                 setup_context=lambda ctx, inputs, output: setattr(ctx, "a", inputs[1]))
    x = wb.ones(2, dtype=wb.float64, requires_grad=True)
    y = wb.ops.wbtestlib.axpb(x, 3.0, b=1.0)
    assert y.tolist() == [4.0, 4.0] and y.grad_fn.op == "wbtestlib::axpb"
    assert set(opcheck("wbtestlib::axpb", (x, 3.0)).values()) == {"SUCCESS"}

    wb.library.define("wbtestlib2::twice", "(Tensor x) -> Tensor")
    wb.library.impl("wbtestlib2::twice", "CompositeImplicitAutograd", lambda x: x + x)
    y = wb.ops.wbtestlib2.twice(wb.ones(2, requires_grad=True))
    assert y.grad_fn.name() == "AddBackward0"  # its own ops record autograd: no node of its own
    old = wb.library.Library("wbtestlib4", "DEF")

    @wb.library.define(old, "inc(Tensor x) -> Tensor")
    def inc(x):
        return x + 1

    @wb.library.impl(old, "inc", "CPU")
    def inc_cpu(x):
        return x + 2

    assert inc(wb.ones(1)).tolist() == [2.0]
    assert wb.ops.wbtestlib4.inc(wb.ones(1)).tolist() == [3.0]  # a CPU kernel wins over CompositeImplicitAutograd
    with pytest.raises(ValueError, match="Unsupported kind"):
        wb.library.Library("wbtestlib3", "BOGUS")


class Swish(wb.nn.Module):
    def forward(self, x):
        return SWISH(x)


class _SwishNet(wb.nn.Module):
    def __init__(self, act):
        super().__init__()
        self.fc1, self.fc2, self.act = wb.nn.Linear(4, 8), wb.nn.Linear(8, 1), act

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_custom_op_in_a_trained_model_matches_the_composed_model():
    X = wb.randn(32, 4, generator=wb.Generator().manual_seed(0))
    Y = (X[:, :1] * X[:, 1:2]).detach()
    losses = {}
    params = {}
    for kind, act in (("custom", Swish()), ("composed", wb.nn.SiLU())):
        wb.manual_seed(0)
        net = _SwishNet(act)
        opt = wb.optim.SGD(net.parameters(), lr=0.1)
        losses[kind] = []
        for _ in range(5):
            opt.zero_grad()
            loss = wb.nn.functional.mse_loss(net(X), Y)
            loss.backward()
            opt.step()
            losses[kind].append(loss.item())
        params[kind] = [p.detach().numpy() for p in net.parameters()]
    np.testing.assert_allclose(losses["custom"], losses["composed"], rtol=1e-5)
    assert losses["custom"][-1] < losses["custom"][0]
    for a, b in zip(params["custom"], params["composed"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_seen_in_the_viewer_and_the_debugger(fake_cuda):
    net = _SwishNet(Swish())
    loss = net(wb.randn(2, 4)).sum()
    snap = wb.viz.snapshot(loss, model=net).to_dict()
    (node,) = [n for n in snap["nodes"] if n["op"] == "wbtest::swish"]
    assert node["name"] == "GeneratedBackwardFor_wbtest_swish_defaultBackward" and node["device"] == "cpu"
    assert node["scope"] == "act" and node["shape"] == [2, 8]
    assert "wbtest::swish" in wb.viz.snapshot(loss, model=net).to_json()  # what a saved notebook keeps
    st = wb.viz.stepper.Stepper(loss)
    ops = [st.step().node.op for _ in range(st.total)]
    assert "wbtest::swish" in ops
    net.to("cuda")
    SWISH.register_kernel("cuda", lambda x, beta=1.0: x * wb.sigmoid(beta * x))
    try:
        snap = wb.viz.snapshot(net(wb.randn(2, 4, device="cuda")).sum(), model=net).to_dict()
        (node,) = [n for n in snap["nodes"] if n["op"] == "wbtest::swish"]
        assert node["device"].startswith("cuda")
    finally:
        del SWISH._backend_fns["cuda"]


def test_factory_ops_dispatch_on_their_device_argument(fake_cuda):
    lib = wb.library.Library("wbtestfac", "FRAGMENT")
    lib.define("full(SymInt[] size, float v, *, Device? device=None) -> Tensor")
    seen = []

    @wb.library.impl("wbtestfac::full", "cpu")
    def _(size, v, device=None):
        seen.append(device)
        return wb.full(size, v, device=device)

    assert wb.ops.wbtestfac.full(3, 1.5).tolist() == [1.5] * 3  # int[] takes one int; no device: the CPU kernel
    wb.library.register_kernel("wbtestfac::full", "cuda", lambda size, v, device=None: wb.full(size, v, device=device))
    y = wb.ops.wbtestfac.full([2, 2], 2.0, device="cuda")
    assert y.device.type == "cuda" and y.shape == (2, 2)
    assert seen == [None]  # the cuda kernel ran (on the fake cupy too), not the CPU one
