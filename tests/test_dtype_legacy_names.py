"""One dtype -> legacy-name table, on the dtype: every spelling PyTorch derives from its ScalarType name
(``x.type()`` on cpu and cuda, the legacy tensor and storage classes, the dtype word in error messages)."""
import pytest
import torch

import workbench as wb
from workbench._backend import dtypes as _dt
from workbench.serialization import _torch_names


@pytest.mark.parametrize("dt", _dt.ALL, ids=lambda d: d.name)
def test_legacy_names_on_the_dtype_are_pytorchs(dt):
    t = torch.zeros(1, dtype=getattr(torch, dt.name))
    assert dt._legacy_names["cpu"].replace("workbench", "torch") == t.type()
    # a CUDA tensor's type() is "torch.cuda." + the CPU type's name (the CPU build has the classes, not complex)
    assert dt._legacy_names["cuda"].replace("workbench", "torch") == "torch.cuda." + t.type()[len("torch."):]
    cuda_cls = getattr(torch.cuda, dt._scalar_name + "Tensor", None)
    if not dt.is_complex:
        assert dt._legacy_names["cuda"].replace("workbench", "torch") == f"{cuda_cls.__module__}.{cuda_cls.__name__}"
    assert _dt._BY_LEGACY_NAME[dt._scalar_name + "Tensor"] is dt
    assert hasattr(torch, dt._scalar_name + "Storage")
    assert _torch_names.STORAGE_NAME[dt.name] == dt._scalar_name + "Storage"
    legacy_cls = getattr(wb, dt._scalar_name + "Tensor", None)  # complex has no legacy constructor, as in PyTorch
    assert (legacy_cls is None) == (getattr(torch, dt._scalar_name + "Tensor", None) is None)
    if legacy_cls is not None:
        assert legacy_cls.dtype is dt and legacy_cls.__name__ == dt._scalar_name + "Tensor"


def test_type_on_cuda_and_back(fake_cuda):
    x = wb.ones(2, device="cuda", dtype=wb.int32)
    assert x.type() == "workbench.cuda.IntTensor"
    y = x.type("torch.cuda.DoubleTensor")
    assert y.device.type == "cuda" and y.type() == "workbench.cuda.DoubleTensor"
    assert x.type("torch.FloatTensor").type() == "workbench.FloatTensor"


@pytest.mark.parametrize("dst", ["torch.DoubleTensor", "torch.HalfTensor", "workbench.ComplexFloatTensor", "float64",
                                 "DoubleTensor class", "FloatTensor", "torch.float64", "torch.nn.FloatTensor"])
def test_tensor_and_module_type_take_what_pytorch_takes(dst):
    def build(lib):
        m = lib.nn.Linear(2, 1)
        m.register_buffer("steps", lib.zeros(1, dtype=lib.int64))
        return m

    def target(lib):
        if dst == "float64":
            return lib.float64
        return lib.DoubleTensor if dst == "DoubleTensor class" else dst.replace("workbench", lib.__name__)

    for obj in (lambda lib: lib.ones(2), build):
        try:
            t = obj(torch).type(target(torch))
        except ValueError:
            with pytest.raises(ValueError, match="invalid type"):
                obj(wb).type(target(wb))
            continue
        w = obj(wb).type(target(wb))
        pairs = zip(t.state_dict().values(), w.state_dict().values()) if isinstance(t, torch.nn.Module) else [(t, w)]
        for a, b in pairs:
            assert a.type() == b.type().replace("workbench", "torch")


def test_module_type_to_an_integer_type_is_refused_whole():
    t, w = torch.nn.Linear(2, 1), wb.nn.Sequential(wb.nn.Linear(2, 1), wb.nn.Linear(1, 1))
    with pytest.raises(RuntimeError) as te:
        t.type(torch.IntTensor)
    with pytest.raises(RuntimeError) as we:
        w.type("torch.IntTensor")
    assert str(te.value) in str(we.value)
    assert all(p.dtype is wb.float32 for p in w.parameters())  # nothing half-applied (PyTorch converts child 0)


def test_messages_spell_dtypes_as_pytorch():
    cases = [(lambda m: m.ones(2, dtype=m.int32).float_power_(2), RuntimeError),
             (lambda m: m.fft.rfft(m.ones(2, dtype=m.complex64)), RuntimeError),
             (lambda m: m.fft.fft(m.ones(2, dtype=m.float16)), RuntimeError)]
    for fn, exc in cases:
        with pytest.raises(exc) as te:
            fn(torch)
        with pytest.raises(exc) as we:
            fn(wb)
        word = [w for w in ("Int", "ComplexFloat", "Half") if w in str(te.value)][0]
        assert f" {word}" in str(we.value), (str(te.value), str(we.value))
    with pytest.raises(TypeError, match="cannot assign 'workbench.DoubleTensor' as parameter 'weight'"):
        wb.nn.Linear(1, 1).weight = wb.ones(1, dtype=wb.float64)
