"""Devices, dtypes, promotion, the lazy CuPy import and the fake-cupy CUDA device."""
import subprocess
import sys

import numpy as np
import pytest
import torch

import workbench as wb

ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64",
       "complex128", "bfloat16"]


def test_import_loads_numpy_and_nothing_heavier():
    # what `import workbench` costs is what it loads: NumPy and the standard library, never CuPy, ml_dtypes
    # (bfloat16, on first use), torch, IPython or the viz front-end's dependencies. The time it takes is a
    # benchmark figure (benchmarks/import_time.py), not a test
    code = ("import sys; before = set(sys.modules); import workbench; "
            "print(' '.join(sorted({m.split('.')[0] for m in set(sys.modules) - before})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    third_party = {m for m in out if m not in sys.stdlib_module_names and not m.startswith("_")}
    assert third_party - {"cython_runtime"} == {"numpy", "workbench"}  # cython_runtime: NumPy's compiled parts


@pytest.mark.parametrize("s,typ,idx", [("cpu", "cpu", None), ("cuda", "cuda", None), ("cuda:1", "cuda", 1)])
def test_device_strings(s, typ, idx):
    d = wb.device(s)
    assert (d.type, d.index) == (typ, idx)
    assert str(d) == s
    assert d == s and d == wb.device(typ, idx)
    assert repr(d) == repr(torch.device(s))


def test_device_errors():
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        wb.device("tpu")
    with pytest.raises(RuntimeError):
        wb.device("cuda:-1")


def test_cuda_unavailable_is_clear(monkeypatch):
    from workbench import _backend

    monkeypatch.setattr(_backend, "_cupy", None)
    monkeypatch.setattr(_backend, "_cupy_error", "CUDA is not available: test")
    assert wb.cuda.is_available() is False
    assert wb.cuda.device_count() == 0
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        wb.zeros(2, device="cuda")


@pytest.mark.parametrize("name", ALL)
def test_dtype_names_and_sizes(name):
    d = getattr(wb, name)
    t = getattr(torch, name)
    assert d.itemsize == t.itemsize
    assert d.is_floating_point == t.is_floating_point
    assert d.is_complex == t.is_complex
    assert repr(d) == "workbench." + name


@pytest.mark.parametrize("a", ALL)
@pytest.mark.parametrize("b", ALL)
def test_promote_types_matches_torch(a, b):
    assert wb.promote_types(getattr(wb, a), getattr(wb, b)).name == str(
        torch.promote_types(getattr(torch, a), getattr(torch, b))).replace("torch.", "")


@pytest.mark.parametrize("dt", ["bool", "uint8", "int32", "int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("scalar", [True, 2, 2.5, 1j])
def test_python_scalars_do_not_promote(dt, scalar):
    if dt == "float16" and isinstance(scalar, complex):
        pytest.skip("PyTorch's complex32 (ComplexHalf) is experimental; workbench has no complex32")
    x = wb.ones(3, dtype=getattr(wb, dt))
    tx = torch.ones(3, dtype=getattr(torch, dt))
    assert (x * scalar).dtype.name == str((tx * scalar).dtype).replace("torch.", "")


def test_int_division_gives_default_float():
    assert (wb.tensor([1, 2]) / wb.tensor([2, 2])).dtype == wb.float32
    wb.set_default_dtype(wb.float64)
    assert (wb.tensor([1, 2]) / 2).dtype == wb.float64
    assert wb.tensor([1.0]).dtype == wb.float64


def test_zero_dim_tensors_promote_like_torch():
    a = wb.ones(3, dtype=wb.float32) + wb.tensor(1.0, dtype=wb.float64)
    assert a.dtype == wb.float32
    b = wb.ones(3, dtype=wb.int32) + wb.tensor(1.5)
    assert b.dtype == wb.float32
    c = wb.ones(3, dtype=wb.int32) + wb.tensor(1)
    assert c.dtype == wb.int32


def test_set_default_dtype_rejects_ints():
    with pytest.raises(TypeError):
        wb.set_default_dtype(wb.int32)


# --- the fake cupy device -------------------------------------------------------------------------
def test_fake_cuda_placement_and_transfer(fake_cuda):
    assert wb.cuda.is_available() and wb.cuda.device_count() == 2
    x = wb.arange(4.0, device="cuda")
    assert x.device == wb.device("cuda:0") and x.is_cuda
    assert isinstance(x._data, fake_cuda.ndarray)
    y = wb.ones(2, device="cuda:1")
    assert y.device.index == 1
    z = x.cpu()
    assert z.device == wb.device("cpu") and type(z._data) is np.ndarray
    np.testing.assert_array_equal(z.numpy(), [0, 1, 2, 3])
    back = z.to("cuda:1")
    assert back.device == wb.device("cuda:1")
    assert repr(x) == "tensor([0., 1., 2., 3.], device='cuda:0')"


def test_fake_cuda_mixed_devices_raise(fake_cuda):
    a = wb.ones(3, device="cuda")
    b = wb.ones(3)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device.*cuda:0.*cpu|cpu.*cuda:0"):
        a + b
    with pytest.raises(RuntimeError, match="same device"):
        a + wb.ones(3, device="cuda:1")
    # 0-dim CPU tensors act as scalars, as in PyTorch
    assert (a + wb.tensor(1.0)).device == wb.device("cuda:0")


def test_fake_cuda_refuses_implicit_host_conversion(fake_cuda):
    x = wb.ones(2, device="cuda")
    with pytest.raises(TypeError, match="cpu()"):
        x.numpy()
    with pytest.raises(TypeError):
        np.asarray(x)
    assert x.tolist() == [1.0, 1.0]
    assert x.sum().item() == 2.0


def test_fake_cuda_autograd(fake_cuda):
    x = wb.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.device == wb.device("cuda:0")
    np.testing.assert_allclose(x.grad.cpu().numpy(), [2.0, 4.0])
    # gradients flow back across a device transfer
    w = wb.tensor([3.0], requires_grad=True)
    (w.cuda() * 2).sum().backward()
    assert w.grad.device == wb.device("cpu") and w.grad.item() == 2.0


def test_invalid_cuda_ordinal(fake_cuda):
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        wb.zeros(1, device="cuda:5")


def test_cuda_memory_and_events(fake_cuda):
    x = wb.ones(1000, device="cuda")
    assert wb.cuda.memory_allocated() >= 4000
    assert wb.cuda.max_memory_allocated() >= wb.cuda.memory_allocated()
    s, e = wb.cuda.Event(enable_timing=True), wb.cuda.Event(enable_timing=True)
    s.record(); (x * 2).sum(); e.record(); wb.cuda.synchronize()
    assert s.elapsed_time(e) >= 0
    wb.cuda.empty_cache()
    del x
