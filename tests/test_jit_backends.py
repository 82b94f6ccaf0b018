"""torch.jit (eager), torch.backends switches and nn.DataParallel on one device, against PyTorch."""
import io

import numpy as np
import pytest

import workbench as wb
from workbench import nn

torch = pytest.importorskip("torch")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    @wb.jit.ignore
    def helper(self, x):
        return x * 2

    @wb.jit.export
    def extra(self, x):
        return self.fc(x)

    def forward(self, x):
        if x.sum() > 0:  # data-dependent control flow keeps working: the Python runs on every call
            return self.helper(self.fc(x))
        return self.fc(x)


def test_script_and_trace_run_eagerly_sharing_parameters():
    net = Net()
    for made in (wb.jit.script(net), wb.jit.trace(net, wb.randn(2, 3)), wb.jit.trace_module(net, {})):
        assert isinstance(made, wb.jit.ScriptModule) and isinstance(made, Net) and type(made).__name__ == "Net"
        assert made.fc.weight is net.fc.weight and list(made.state_dict()) == list(net.state_dict())
        x = wb.ones(2, 3)
        assert np.array_equal(made(x).detach().numpy(), net(x).detach().numpy())
        assert np.array_equal(made(-x).detach().numpy(), net(-x).detach().numpy())
        assert "def forward" in made.code
    assert not isinstance(net, wb.jit.ScriptModule)  # the original is left alone, as in PyTorch
    f = wb.jit.script(lambda x: x + 1)
    assert isinstance(f, wb.jit.ScriptFunction) and f(wb.tensor([1.0])).tolist() == [2.0]
    assert wb.jit.ignore(drop=True)(len)([1]) == 1 and wb.jit.unused(len) is len
    assert wb.jit.annotate(list, []) == [] and wb.jit.Attribute(3, int) == 3
    assert not wb.jit.is_scripting() and not wb.jit.is_tracing()
    assert wb.jit.wait(wb.jit.fork(sum, [1, 2])) == 3

    class WithFinal(nn.Module):
        n: wb.jit.Final[int] = 3

    assert WithFinal.__annotations__["n"] == torch.jit.Final[int]


def test_saving_a_scripted_module_names_workbench_save(tmp_path):
    made = wb.jit.script(Net())
    for call in (lambda: made.save(str(tmp_path / "m.pt")), lambda: wb.jit.save(made, tmp_path / "m.pt"),
                 lambda: wb.jit.script(len).save("f.pt")):
        with pytest.raises(RuntimeError, match=r"workbench\.save\(model\.state_dict\(\)"):
            call()
    with pytest.raises(RuntimeError, match="TorchScript"):
        wb.jit.load(tmp_path / "m.pt")
    with pytest.raises(RuntimeError, match="eval mode"):
        wb.jit.freeze(made)
    assert wb.jit.freeze(made.eval()) is made


def test_backend_switches_as_pytorch_exposes_them():
    b, tb = wb.backends, torch.backends
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(b.cudnn, name) == getattr(tb.cudnn, name), name
    for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        assert getattr(b.cuda.matmul, name) == getattr(tb.cuda.matmul, name), name
    assert (b.mps.is_available(), b.mps.is_built()) == (False, False) == (tb.mps.is_available(), tb.mps.is_built())
    assert b.cudnn.is_available() is False and b.cudnn.version() is None  # no cuDNN here, as torch's CPU build
    assert b.cpu.get_cpu_capability() == tb.cpu.get_cpu_capability()
    assert b.mkldnn.enabled is True and b.opt_einsum.is_available() == tb.opt_einsum.is_available()
    assert b.mha.get_fastpath_enabled() == tb.mha.get_fastpath_enabled()
    for mod, theirs in ((b.cudnn, tb.cudnn),):
        for bad in ("x", 1):
            with pytest.raises(RuntimeError) as e_ours:
                mod.benchmark = bad
            with pytest.raises(RuntimeError) as e_theirs:
                theirs.benchmark = bad
            assert str(e_ours.value) == str(e_theirs.value)
    with pytest.raises(AttributeError, match="Unknown attribute"):
        b.cuda.matmul.allow_tf33 = True
    b.cudnn.benchmark = True
    try:
        assert b.cudnn.benchmark is True
        with b.cudnn.flags(enabled=True, deterministic=True):
            assert b.cudnn.deterministic and not b.cudnn.benchmark
        assert b.cudnn.benchmark and not b.cudnn.deterministic
    finally:
        b.cudnn.benchmark = False
    assert b.cuda.flash_sdp_enabled()
    with b.cuda.sdp_kernel(enable_flash=False):
        assert not b.cuda.flash_sdp_enabled() and b.cuda.math_sdp_enabled()
    assert b.cuda.flash_sdp_enabled()


def test_data_parallel_matches_pytorch_on_the_cpu():
    torch.manual_seed(0)
    theirs = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()))
    ours = nn.DataParallel(nn.Sequential(nn.Linear(4, 3), nn.ReLU()))
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["module.0.weight", "module.0.bias"]
    buf = io.BytesIO()
    torch.save(theirs.state_dict(), buf)
    buf.seek(0)
    ours.load_state_dict(wb.load(buf))
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    out_t, out_w = theirs(torch.tensor(x)), ours(wb.tensor(x))
    np.testing.assert_allclose(out_w.detach().numpy(), out_t.detach().numpy(), rtol=1e-6)
    out_t.sum().backward()
    out_w.sum().backward()
    np.testing.assert_allclose(ours.module[0].weight.grad.numpy(), theirs.module[0].weight.grad.numpy(), rtol=1e-6)
    assert ours.device_ids == theirs.device_ids == []
    assert wb.nn.parallel.data_parallel(ours.module, wb.tensor(x)).shape == (5, 3)


def test_data_parallel_on_one_gpu(fake_cuda):
    net = nn.Linear(3, 2).cuda()
    dp = nn.DataParallel(net)
    assert dp.device_ids == [0] and dp.output_device == 0
    out = dp(wb.ones(4, 3))  # a CPU batch is moved to cuda:0, as PyTorch's scatter does
    assert out.device == wb.device("cuda:0")
    with pytest.raises(RuntimeError, match="parameters and buffers on device cuda:0"):
        nn.DataParallel(nn.Linear(3, 2))
    with pytest.raises(ValueError, match="DistributedDataParallel"):
        nn.DataParallel(net, device_ids=[0, 1])
