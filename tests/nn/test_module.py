"""Module mechanics: registration, traversal, state dicts, modes, conversion, hooks, repr, scopes."""
import copy

import numpy as np
import pytest
import torch

import workbench as wb
from workbench.autograd import graph
from workbench.nn import Module, Parameter


class Net(Module):
    def __init__(self):
        super().__init__()
        self.fc1 = wb.nn.Linear(4, 8)
        self.act = wb.nn.ReLU()
        self.blocks = wb.nn.Sequential(wb.nn.Linear(8, 8), wb.nn.Tanh())
        self.scale = Parameter(wb.ones(1))
        self.register_buffer("steps", wb.zeros(()))
        self.register_buffer("cache", wb.zeros(2), persistent=False)

    def forward(self, x):
        return self.blocks(self.act(self.fc1(x))) * self.scale


class TNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.act = torch.nn.ReLU()
        self.blocks = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh())
        self.scale = torch.nn.Parameter(torch.ones(1))
        self.register_buffer("steps", torch.zeros(()))
        self.register_buffer("cache", torch.zeros(2), persistent=False)


def test_registration_and_traversal_match_torch():
    n, t = Net(), TNet()
    assert [k for k, _ in n.named_parameters()] == [k for k, _ in t.named_parameters()]
    assert [k for k, _ in n.named_buffers()] == [k for k, _ in t.named_buffers()]
    assert [k for k, _ in n.named_modules()] == [k for k, _ in t.named_modules()]
    assert [k for k, _ in n.named_children()] == [k for k, _ in t.named_children()]
    assert list(n.state_dict()) == list(t.state_dict())
    assert n.state_dict()._metadata == t.state_dict()._metadata
    bn_meta = wb.nn.Sequential(wb.nn.BatchNorm1d(2)).state_dict()._metadata
    assert bn_meta == torch.nn.Sequential(torch.nn.BatchNorm1d(2)).state_dict()._metadata
    assert [k for k, _ in n.named_parameters(prefix="m", recurse=False)] == ["m.scale"]
    assert n.get_submodule("blocks.0") is n.blocks[0]
    assert n.get_parameter("blocks.0.bias") is n.blocks[0].bias
    assert n.get_buffer("steps") is n.steps
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        n.get_submodule("blocks.nope")
    with pytest.raises(AttributeError, match="is not an nn.Parameter"):
        n.get_parameter("steps")
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'missing'"):
        n.missing


def test_setattr_rules():
    m = Module()
    m.w = Parameter(wb.ones(2))
    with pytest.raises(TypeError, match="cannot assign .* as parameter 'w'"):
        m.w = wb.ones(2)
    m.w = None
    assert list(m.named_parameters()) == [] and "w" in m._parameters
    m.sub = wb.nn.Linear(1, 1)
    with pytest.raises(TypeError, match="child module 'sub'"):
        m.sub = 3
    m.register_buffer("b", wb.zeros(1))
    m.b = wb.ones(1)
    assert float(m.b) == 1.0
    with pytest.raises(TypeError, match="buffer 'b'"):
        m.b = 3
    with pytest.raises(KeyError, match="attribute 'plain' already exists"):
        m.plain = 1
        m.register_buffer("plain", wb.zeros(1))
    with pytest.raises(KeyError, match="contain"):
        m.add_module("a.b", wb.nn.ReLU())
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("x", 3)
    del m.sub
    assert "sub" not in dict(m.named_children())

    class Early(Module):
        def __init__(self):
            self.w = Parameter(wb.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()
    m.buf2 = wb.nn.Buffer(wb.ones(1), persistent=False)
    assert "buf2" in dict(m.named_buffers()) and "buf2" not in m.state_dict()


def test_shared_parameters_listed_once():
    lin = wb.nn.Linear(2, 2)
    seq = wb.nn.Sequential(lin, wb.nn.ReLU(), lin)
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_modules()] == ["", "0", "1"]
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_state_dict_round_trip_and_errors_are_atomic():
    a, b = Net(), Net()
    b.load_state_dict(a.state_dict())
    for (_, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    sd = a.state_dict()
    assert not sd["fc1.weight"].requires_grad and sd["fc1.weight"].data_ptr() == a.fc1.weight.data_ptr()
    assert b.state_dict(keep_vars=True)["fc1.weight"] is b.fc1.weight
    c = Net()
    before = {k: v.numpy().copy() for k, v in c.state_dict().items()}
    bad = dict(a.state_dict())
    bad["fc1.weight"] = wb.zeros(3, 3)
    del bad["scale"]
    bad["extra"] = wb.zeros(1)
    with pytest.raises(RuntimeError) as ei:
        c.load_state_dict(bad)
    msg = str(ei.value)
    assert msg.startswith("Error(s) in loading state_dict for Net:")
    assert 'Missing key(s) in state_dict: "scale".' in msg
    assert 'Unexpected key(s) in state_dict: "extra".' in msg
    assert "size mismatch for fc1.weight: copying a param with shape" in msg
    for k, v in c.state_dict().items():  # nothing was half-loaded
        np.testing.assert_array_equal(v.numpy(), before[k])
    # strict=False still reports, and shape mismatches still raise
    res = c.load_state_dict({"scale": wb.full((1,), 3.0), "extra": wb.zeros(1)}, strict=False)
    assert res.unexpected_keys == ["extra"] and "fc1.weight" in res.missing_keys
    assert float(c.scale) == 3.0
    with pytest.raises(RuntimeError, match="size mismatch"):
        c.load_state_dict({"scale": wb.zeros(2)}, strict=False)
    assert repr(c.load_state_dict(a.state_dict())) == "<All keys matched successfully>"


def test_load_from_torch_state_dict_and_assign():
    t = TNet()
    n = Net()
    n.load_state_dict({k: wb.tensor(v.numpy()) for k, v in t.state_dict().items()})
    np.testing.assert_array_equal(n.fc1.weight.detach().numpy(), t.fc1.weight.detach().numpy())
    w = n.fc1.weight
    src = wb.randn(8, 4)
    n.load_state_dict({**n.state_dict(), "fc1.weight": src}, assign=True)
    assert n.fc1.weight is not w and isinstance(n.fc1.weight, Parameter)
    np.testing.assert_array_equal(n.fc1.weight.detach().numpy(), src.numpy())


def test_train_eval_requires_grad_zero_grad_apply():
    n = Net()
    assert n.training and n.blocks[0].training
    n.eval()
    assert not n.training and not n.blocks[1].training
    n.train()
    assert n.blocks[1].training
    with pytest.raises(ValueError, match="boolean"):
        n.train("yes")
    n(wb.randn(2, 4)).sum().backward()
    assert all(p.grad is not None for p in n.parameters())
    n.zero_grad(set_to_none=False)
    assert all(float(p.grad.abs().sum()) == 0 for p in n.parameters())
    n.zero_grad()
    assert all(p.grad is None for p in n.parameters())
    n.requires_grad_(False)
    assert not any(p.requires_grad for p in n.parameters())
    seen = []
    n.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "ReLU", "Linear", "Tanh", "Sequential", "Net"]


def test_to_dtype_keeps_parameter_objects():
    n = Net()
    w = n.fc1.weight
    opt = wb.optim.SGD(n.parameters(), lr=0.1)
    n.double()
    assert n.fc1.weight is w and w.dtype == wb.float64 and n.steps.dtype == wb.float64
    n(wb.randn(2, 4, dtype=wb.float64)).sum().backward()
    opt.step()
    n.float()
    assert w.dtype == wb.float32 and w.grad.dtype == wb.float32
    n.to(wb.float16)
    assert w.dtype == wb.float16
    n.to("cpu", dtype=wb.float32)
    assert w.dtype == wb.float32
    with pytest.raises(TypeError, match="floating point or complex"):
        n.to(wb.int64)
    m = Module()
    m.register_buffer("idx", wb.tensor([1, 2]))
    m.double()
    assert m.idx.dtype == wb.int64


def test_to_device_fake_cuda(fake_cuda):
    n = Net()
    w = n.fc1.weight
    n.cuda()
    assert w.device.type == "cuda" and n.steps.device.type == "cuda" and n.fc1.weight is w
    n.cpu()
    assert w.device.type == "cpu"


def test_forward_hooks():
    m = wb.nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append("pre") or (args[0] * 0,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append("post") or out + 1)
    h3 = m.register_forward_hook(lambda mod, args, out: calls.append("first"), prepend=True)
    out = m(wb.ones(1, 2))
    assert calls == ["pre", "first", "post"]
    np.testing.assert_allclose(out.detach().numpy(), m.bias.detach().numpy()[None] + 1, rtol=1e-6)
    for h in (h1, h2, h3):
        h.remove()
    calls.clear()
    m(wb.ones(1, 2))
    assert calls == []
    m.register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] * 2,), kwargs), with_kwargs=True)
    m.register_forward_hook(lambda mod, args, kwargs, out: calls.append(kwargs), with_kwargs=True)
    m(wb.ones(1, 2))
    assert calls == [{}]

    class Boom(Module):
        def forward(self, x):
            raise ValueError("boom")

    order = []
    m2 = wb.nn.Identity()
    m2.register_forward_pre_hook(lambda mod, args: order.append("second"))
    m2.register_forward_pre_hook(lambda mod, args: order.append("first"), prepend=True)
    with m2.register_forward_hook(lambda mod, args, out: order.append("post")):
        m2(wb.ones(1))
    m2(wb.ones(1))
    assert order == ["first", "second", "post", "first", "second"]  # a handle is also a context manager

    b = Boom()
    b.register_forward_hook(lambda mod, args, out: calls.append("always"), always_call=True)
    with pytest.raises(ValueError):
        b(wb.ones(1))
    assert calls[-1] == "always"


def test_full_backward_hooks_match_torch():
    results = {}
    for lib, nn in (("torch", torch.nn), ("wb", wb.nn)):
        torch.manual_seed(0)
        m = nn.Linear(3, 2)
        if lib == "wb":
            m.load_state_dict({k: wb.tensor(v.numpy()) for k, v in results["torch_sd"].items()})
        else:
            results["torch_sd"] = {k: v.detach().clone() for k, v in m.state_dict().items()}
        seen = []
        m.register_full_backward_pre_hook(lambda mod, go: seen.append(("pre", go[0].shape)) or (go[0] * 2,))
        m.register_full_backward_hook(lambda mod, gi, go: seen.append(("hook", gi[0].numpy().copy(),
                                                                         go[0].numpy().copy())))
        lib_mod = torch if lib == "torch" else wb
        x = lib_mod.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3), requires_grad=True)
        m(x).sum().backward()
        results[lib] = (seen, x.grad.numpy().copy(), m.weight.grad.numpy().copy())
    (ts, tx, tw), (ws, wx, ww) = results["torch"], results["wb"]
    assert [s[0] for s in ws] == [s[0] for s in ts] == ["pre", "hook"]
    np.testing.assert_allclose(ws[1][1], ts[1][1], rtol=1e-6)
    np.testing.assert_allclose(ws[1][2], ts[1][2], rtol=1e-6)
    np.testing.assert_allclose(wx, tx, rtol=1e-6)
    np.testing.assert_allclose(ww, tw, rtol=1e-6)


def test_backward_hook_can_replace_grad_input_and_is_removable():
    m = wb.nn.Linear(2, 2)
    x = wb.ones(1, 2, requires_grad=True)
    h = m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0,))
    m(x).sum().backward()
    assert float(x.grad.abs().sum()) == 0
    h.remove()
    x.grad = None
    m(x).sum().backward()
    assert float(x.grad.abs().sum()) > 0
    with wb.no_grad():  # nothing is recorded, so there is nothing to hook
        assert m(x).grad_fn is None
    # no input needs grad: the hook still runs, with grad_input None
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(gi))
    m(wb.ones(1, 2)).sum().backward()
    assert seen == [(None,)]


def test_repr_matches_torch():
    def build(nn):
        return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(16, 10, bias=False), nn.Dropout(0.1),
                             nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Tanh()]),
                             nn.ModuleDict({"bn": nn.BatchNorm1d(3, momentum=None), "ln": nn.LayerNorm([2, 3])}),
                             nn.Embedding(10, 3, padding_idx=0), nn.LSTM(3, 4, num_layers=2, bidirectional=True),
                             nn.GELU(approximate="tanh"), nn.LeakyReLU(0.2), nn.Softmax(dim=-1),
                             nn.Upsample(scale_factor=2), nn.AvgPool1d(2), nn.CrossEntropyLoss(),
                             nn.Unflatten(1, (2, 2)), nn.Identity(), nn.GroupNorm(2, 4), nn.RMSNorm(4))

    assert repr(build(wb.nn)) == repr(build(torch.nn))
    assert repr(wb.nn.ParameterList([wb.ones(2), wb.ones(3)])) == repr(
        torch.nn.ParameterList([torch.ones(2), torch.ones(3)])).replace("torch", "workbench")
    assert repr(wb.nn.ParameterDict({"a": wb.ones(2)})) == repr(
        torch.nn.ParameterDict({"a": torch.ones(2)})).replace("torch", "workbench")


def test_scope_stack_records_dotted_names():
    net = wb.nn.Sequential(wb.nn.Linear(4, 4), wb.nn.Sequential(wb.nn.Linear(4, 4), wb.nn.ReLU()))
    seen = []

    def listener(node, args, results):
        seen.append((node._op, node.scope))

    with graph.add_listener(listener):
        net(wb.randn(2, 4, requires_grad=True))
        inner = net[1]
        seen_inner_start = len(seen)
        inner(wb.randn(2, 4, requires_grad=True))  # called on its own, it is the root
    scopes = [s for _, s in seen[:seen_inner_start]]
    assert "0" in scopes and "1.0" in scopes and "1.1" in scopes
    assert {s for _, s in seen[seen_inner_start:]} <= {"", "0", "1"}
    assert graph.SCOPE.get() == ""


def test_scope_recomputed_after_tree_changes_and_for_copies():
    net = wb.nn.Sequential(wb.nn.Linear(2, 2))
    out = net(wb.ones(1, 2))
    assert out.grad_fn.scope == "0"
    net.append(wb.nn.Linear(2, 2))
    out = net(wb.ones(1, 2))
    assert out.grad_fn.scope == "1"
    twin = copy.deepcopy(net)
    assert twin(wb.ones(1, 2)).grad_fn.scope == "1"


def test_module_without_forward_raises():
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        Module()(wb.ones(1))
    with pytest.raises(TypeError):
        Module(3)


def test_training_step_on_fake_cuda_device(fake_cuda):
    """Layers, losses and every optimizer run on the device the parameters live on."""
    for opt_cls in (wb.optim.SGD, wb.optim.Adam, wb.optim.AdamW, wb.optim.RMSprop, wb.optim.Adagrad,
                    wb.optim.Adadelta, wb.optim.Adamax, wb.optim.NAdam, wb.optim.RAdam, wb.optim.Rprop,
                    wb.optim.ASGD):
        net = wb.nn.Sequential(wb.nn.Linear(4, 8), wb.nn.ReLU(), wb.nn.LayerNorm(8), wb.nn.Linear(8, 3)).cuda()
        kw = {"lr": 0.1, "momentum": 0.9} if opt_cls is wb.optim.SGD else {}
        opt = opt_cls(net.parameters(), **kw)
        x, y = wb.randn(5, 4, device="cuda"), wb.tensor([0, 1, 2, 0, 1], device="cuda")
        before = [p.detach().cpu().numpy().copy() for p in net.parameters()]
        loss = wb.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        wb.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        for p, b in zip(net.parameters(), before):
            assert p.device.type == "cuda" and p.grad.device.type == "cuda"
            assert not np.array_equal(p.detach().cpu().numpy(), b), opt_cls.__name__
        for st in opt.state.values():
            for k, v in st.items():
                if isinstance(v, wb.Tensor) and k not in ("step", "mu_product", "eta", "mu"):  # host scalars
                    assert v.device.type == "cuda", (opt_cls.__name__, k)


def test_layers_built_on_fake_cuda_device(fake_cuda):
    m = wb.nn.Sequential(wb.nn.Conv2d(1, 2, 3, device="cuda"), wb.nn.BatchNorm2d(2, device="cuda"),
                         wb.nn.Flatten(), wb.nn.Linear(8, 2, device="cuda"), wb.nn.LSTMCell(2, 3, device="cuda"))
    for t in list(m.parameters()) + list(m.buffers()):
        assert t.device.type == "cuda"
    w = m[0].weight.detach().cpu().numpy()
    assert np.abs(w).max() <= 1 / 3 + 1e-6 and w.std() > 0  # kaiming-uniform bound 1/sqrt(fan_in)
    out = m[:4](wb.randn(3, 1, 4, 4, device="cuda"))
    assert out.device.type == "cuda" and int(m[1].num_batches_tracked) == 1
