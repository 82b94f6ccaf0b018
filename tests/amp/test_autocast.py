"""autocast: the op lists (dtypes against PyTorch CPU's autocast, the CUDA lists on the fake GPU), nesting,
the decorator, the weight cache, gradients flowing back in float32, and the flag/dtype functions."""
import warnings

import numpy as np
import pytest
import torch

import workbench as wb

RNG = np.random.default_rng(0)
A, B = RNG.standard_normal((4, 5)).astype(np.float32), RNG.standard_normal((5, 3)).astype(np.float32)
IMG, KER = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32), RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)
Q = RNG.standard_normal((1, 2, 4, 8)).astype(np.float32)


def _name(dt):
    return str(dt).split(".")[-1]


# (id, fn(module, F, tensor) -> result) run identically on workbench and torch; dtypes must agree
CASES = [
    ("matmul", lambda m, F, t: t(A) @ t(B)),
    ("mm", lambda m, F, t: m.mm(t(A), t(B))),
    ("bmm", lambda m, F, t: m.bmm(t(A)[None], t(B)[None])),
    ("addmm", lambda m, F, t: m.addmm(t(A[:, :3]), t(A), t(B))),
    ("baddbmm", lambda m, F, t: m.baddbmm(t(A[None, :, :3]), t(A)[None], t(B)[None])),
    ("linear", lambda m, F, t: F.linear(t(A), t(B.T), t(B[0]))),
    ("conv2d", lambda m, F, t: F.conv2d(t(IMG), t(KER))),
    ("conv1d", lambda m, F, t: F.conv1d(t(IMG[:, :, 0]), t(KER[:, :, 0]))),
    ("conv_transpose2d", lambda m, F, t: F.conv_transpose2d(t(IMG), t(KER.transpose(1, 0, 2, 3)))),
    ("sdpa", lambda m, F, t: F.scaled_dot_product_attention(t(Q), t(Q), t(Q))),
    ("prelu", lambda m, F, t: F.prelu(t(A), t(np.array([0.2], np.float32)))),
    ("float64 matmul untouched", lambda m, F, t: t(A).double() @ t(B).double()),
    ("mse_loss of bf16", lambda m, F, t: F.mse_loss(t(A).bfloat16(), t(A).bfloat16() * 2)),
    ("cross_entropy of bf16", lambda m, F, t: F.cross_entropy(t(A).bfloat16(), m.tensor([0, 1, 2, 0]))),
    ("nll_loss of bf16", lambda m, F, t: F.nll_loss(t(A).bfloat16(), m.tensor([0, 1, 2, 0]))),
    ("l1_loss of bf16", lambda m, F, t: F.l1_loss(t(A).bfloat16(), t(A).bfloat16())),
    ("bce_with_logits of bf16", lambda m, F, t: F.binary_cross_entropy_with_logits(t(A).bfloat16(),
                                                                                    t(A).bfloat16().sigmoid())),
    ("softmax not listed", lambda m, F, t: t(A).bfloat16().softmax(-1)),
    ("exp not listed on cpu", lambda m, F, t: t(A).bfloat16().exp()),
    ("layer_norm not listed", lambda m, F, t: F.layer_norm(t(A).bfloat16(), (5,))),
    ("cat promotes", lambda m, F, t: m.cat([t(A).bfloat16(), t(A)])),
    ("stack promotes", lambda m, F, t: m.stack([t(A), t(A).bfloat16()])),
    ("add follows inputs", lambda m, F, t: t(A).bfloat16() + t(A)),
    ("fft of bf16", lambda m, F, t: m.fft.rfft(t(A).bfloat16())),
    ("linalg.inv of bf16", lambda m, F, t: m.linalg.inv(t(A[:4, :4]).bfloat16())),
    ("prod of bf16", lambda m, F, t: t(A).bfloat16().prod()),
    ("linalg.svd of bf16", lambda m, F, t: m.linalg.svd(t(A).bfloat16())[1]),
    ("linalg.qr of bf16", lambda m, F, t: m.linalg.qr(t(A).bfloat16())[1]),
    ("linalg.eigh of bf16", lambda m, F, t: m.linalg.eigvalsh((t(A[:4, :4]) @ t(A[:4, :4]).T).bfloat16())),
    ("cholesky_solve of bf16", lambda m, F, t: m.cholesky_solve(t(B[:4, :1]).bfloat16(), m.eye(4).bfloat16())),
    ("einsum", lambda m, F, t: m.einsum("ij,jk->ik", t(A), t(B))),
    ("multi_dot", lambda m, F, t: m.linalg.multi_dot([t(A), t(B)])),
    ("tensordot", lambda m, F, t: m.tensordot(t(A), t(B), 1)),
    ("mv not on the cpu list", lambda m, F, t: m.mv(t(A), t(B[:, 0]))),
    ("dot not on the cpu list", lambda m, F, t: m.dot(t(A[0]), t(A[0]))),
    ("addmv not on the cpu list", lambda m, F, t: m.addmv(t(A[:, 0]), t(A), t(B[:, 0]))),
    ("integer matmul untouched", lambda m, F, t: m.tensor([[1, 2]]) @ m.tensor([[3], [4]])),
]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_cpu_lists_match_torch(case, dtype):
    name, fn = case
    if dtype == "float16" and "promotes" in name:
        pytest.skip("PyTorch raises 'Unexpected floating ScalarType in at::autocast::prioritize' on bfloat16 "
                    "inputs under a float16 region")
    with torch.autocast("cpu", dtype=getattr(torch, dtype)):
        want = fn(torch, torch.nn.functional, torch.tensor)
    with wb.autocast("cpu", dtype=getattr(wb, dtype)):
        got = fn(wb, wb.nn.functional, wb.tensor)
    assert _name(got.dtype) == _name(want.dtype)
    np.testing.assert_allclose(got.float().numpy() if not got.is_complex() else got.numpy(),
                               want.float().numpy() if not want.is_complex() else want.numpy(),
                               rtol=3e-2, atol=6e-2)  # 16-bit rounding, accumulated differently


def test_off_outside_and_with_enabled_false():
    a, b = wb.tensor(A), wb.tensor(B)
    assert (a @ b).dtype is wb.float32
    with wb.autocast("cpu"):
        assert (a @ b).dtype is wb.bfloat16
        with wb.autocast("cpu", enabled=False):
            assert (a @ b).dtype is wb.float32
            assert wb.is_autocast_enabled("cpu") is False
        assert (a @ b).dtype is wb.bfloat16
    assert (a @ b).dtype is wb.float32 and not wb.is_autocast_enabled("cpu")
    with wb.autocast("cpu"):
        try:
            raise ValueError("inside")
        except ValueError:
            pass
    assert not wb.is_autocast_enabled("cpu")


def test_decorator_and_exceptions_restore_state():
    @wb.autocast("cpu")
    def f(a, b):
        return a @ b

    assert f(wb.tensor(A), wb.tensor(B)).dtype is wb.bfloat16
    assert (wb.tensor(A) @ wb.tensor(B)).dtype is wb.float32
    with pytest.raises(RuntimeError):
        with wb.autocast("cpu"):
            wb.ones(2, 3) @ wb.ones(2, 3)
    assert not wb.is_autocast_enabled("cpu")
    with pytest.raises(TypeError, match="requires a callable"):
        wb.autocast("cpu")(3)


def test_training_step_gradients_are_float32_and_match_torch():
    wm = wb.nn.Sequential(wb.nn.Linear(5, 8), wb.nn.ReLU(), wb.nn.Linear(8, 3))
    tm = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    for wp, tp in zip(wm.parameters(), tm.parameters()):
        wp.data = wb.tensor(tp.detach().numpy().copy())
    x, y = RNG.standard_normal((6, 5)).astype(np.float32), np.array([0, 1, 2, 0, 1, 2])
    with wb.autocast("cpu"):
        wl = wb.nn.functional.cross_entropy(wm(wb.tensor(x)), wb.tensor(y))
    with torch.autocast("cpu"):
        tl = torch.nn.functional.cross_entropy(tm(torch.tensor(x)), torch.tensor(y))
    assert wl.dtype is wb.float32 and tl.dtype is torch.float32
    wl.backward()
    tl.backward()
    for wp, tp in zip(wm.parameters(), tm.parameters()):
        assert wp.grad.dtype is wb.float32
        np.testing.assert_allclose(wp.grad.numpy(), tp.grad.numpy(), rtol=5e-2, atol=5e-3)


def test_weight_cast_is_cached_inside_the_region():
    from workbench.ops import _autocast

    lin = wb.nn.Linear(5, 3)
    x = wb.tensor(A)
    with wb.autocast("cpu"):
        lin(x)
        lin(x)
        assert len(_autocast.STATE.cache) == 2  # weight and bias, cast once each
        with wb.autocast("cpu", cache_enabled=False):
            assert not wb.is_autocast_cache_enabled()
    assert not _autocast.STATE.cache  # cleared when the outermost region exits
    with wb.autocast("cpu", cache_enabled=False):
        lin(x)
        assert not _autocast.STATE.cache


def test_cuda_lists_on_the_fake_gpu(fake_cuda):
    a, b = wb.tensor(A, device="cuda"), wb.tensor(B, device="cuda")
    with wb.autocast("cuda"):
        assert (a @ b).dtype is wb.float16
        h = (a @ b)
        assert h.exp().dtype is wb.float32  # exp, log, pow, softmax, sum... run in float32 on CUDA
        assert h.softmax(-1).dtype is wb.float32 and h.sum().dtype is wb.float32 and (h ** 2).dtype is wb.float32
        assert wb.nn.functional.layer_norm(h, (3,)).dtype is wb.float32
        assert (h + 1).dtype is wb.float16
        cpu = wb.tensor(A) @ wb.tensor(B)
        assert cpu.dtype is wb.float32  # a CUDA region leaves CPU ops alone
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            wb.nn.functional.binary_cross_entropy(h.sigmoid(), h.sigmoid().detach())
        assert wb.addcmul(h.float(), h, h).dtype is wb.float32  # promote
        assert wb.einsum("ij,jk->ik", a, b).dtype is wb.float16 and wb.einsum(a, [0, 1], b, [1, 2]).dtype is wb.float16
        assert wb.linalg.chain_matmul(a, b).dtype is wb.float16 if hasattr(wb.linalg, "chain_matmul") else True
    with wb.autocast("cuda", dtype=wb.bfloat16):
        assert (a @ b).dtype is wb.bfloat16


def test_cuda_without_a_gpu_warns_and_disables():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        ctx = wb.autocast("cuda")
    with ctx:
        assert (wb.tensor(A) @ wb.tensor(B)).dtype is wb.float32


def test_device_and_dtype_checks_and_state_functions():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        wb.autocast(wb.device("cpu"))
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        wb.autocast("tpu")
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        ctx = wb.autocast("cpu", dtype=wb.float64)
    with ctx:
        assert not wb.is_autocast_enabled("cpu")
    assert wb.get_autocast_dtype("cpu") is wb.bfloat16 and wb.get_autocast_gpu_dtype() is wb.float16
    wb.set_autocast_cpu_dtype(wb.float16)
    try:
        with wb.autocast("cpu"):
            assert (wb.tensor(A) @ wb.tensor(B)).dtype is wb.float16
    finally:
        wb.set_autocast_cpu_dtype(wb.bfloat16)
    assert wb.amp.is_autocast_available("cpu") and not wb.amp.is_autocast_available("tpu")
    assert wb.is_autocast_enabled() is False and wb.is_autocast_cpu_enabled() is False


def test_device_specific_aliases():
    with pytest.warns(FutureWarning, match=r"torch.amp.autocast\('cpu', args...\)"):
        ctx = wb.cpu.amp.autocast()
    with ctx:
        assert (wb.tensor(A) @ wb.tensor(B)).dtype is wb.bfloat16
    from workbench.cuda.amp import GradScaler, autocast  # noqa: F401 - importable as in PyTorch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaler = GradScaler(enabled=False)  # nanoGPT's construction on a CPU
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0


def test_custom_fwd_bwd():
    class Mul2(wb.autograd.Function):
        @staticmethod
        @wb.amp.custom_fwd(device_type="cpu", cast_inputs=wb.float32)
        def forward(ctx, x):
            ctx.inner = wb.is_autocast_enabled("cpu")
            return x * 2

        @staticmethod
        @wb.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            return g * 2

    x = wb.ones(3, dtype=wb.bfloat16, requires_grad=True)
    with wb.autocast("cpu"):
        y = Mul2.apply(x)
    assert y.dtype is wb.float32
    y.sum().backward()
    assert x.grad.dtype is wb.bfloat16 and x.grad.tolist() == [2.0, 2.0, 2.0]
