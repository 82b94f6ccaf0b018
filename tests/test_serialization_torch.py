"""Checkpoints as PyTorch users write them: whole objects, weights_only and its allowlist, PyTorch's own
files read without PyTorch (and without running code), and PyTorch's formats written for torch.load."""
import io
import os
import pickle
import struct
import subprocess
import sys
import textwrap
import zipfile
from fractions import Fraction

import numpy as np
import pytest

import workbench as wb
from workbench import nn
from workbench.serialization import CheckpointError

torch = pytest.importorskip("torch")


class Point:  # a user class, as checkpoints hold them (module-level so that pickle can find it)
    def __init__(self, x, y):
        self.x, self.y = x, y


def _fixture(tmp_path, legacy=False):
    """A checkpoint real PyTorch wrote: a model, its optimizer after one Adam step, views sharing one
    storage, bfloat16, a Parameter, sizes, dtypes, devices, sets, bytes, complex numbers."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 3), torch.randn(8, 2)
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    base = torch.arange(12.0)
    obj = {"model": model.state_dict(), "opt": opt.state_dict(), "base": base, "row": base[2:6],
           "tr": base.view(3, 4).t(), "bf": torch.tensor([1.5, -2.25], dtype=torch.bfloat16),
           "param": torch.nn.Parameter(torch.ones(2)), "size": torch.Size([2, 3]), "dtype": torch.float16,
           "device": torch.device("cpu"), "set": {1, 2}, "bytes": b"\x00\xff", "c": 1 + 2j,
           "empty": torch.zeros(0, 3), "i16": torch.arange(3, dtype=torch.int16), "flags": torch.tensor([True])}
    p = tmp_path / ("legacy.pt" if legacy else "zip.pt")
    torch.save(obj, p, _use_new_zipfile_serialization=not legacy)
    return p, model, opt, (x, y)


def _np(t):
    return t.detach().float().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


@pytest.mark.parametrize("legacy", [False, True])
def test_files_pytorch_wrote_load_with_views_bfloat16_parameters_and_optimizer_state(tmp_path, legacy):
    p, model, opt, (x, y) = _fixture(tmp_path, legacy)
    for use_mmap in ([False] if legacy else [False, True]):
        o = wb.load(p, mmap=use_mmap)
        assert type(o["param"]) is nn.Parameter and o["param"].requires_grad
        assert o["bf"].dtype == wb.bfloat16 and o["bf"].float().tolist() == [1.5, -2.25]
        assert o["size"] == wb.Size([2, 3]) and type(o["size"]) is wb.Size
        assert o["dtype"] is wb.float16 and o["device"] == wb.device("cpu")
        assert o["set"] == {1, 2} and o["bytes"] == b"\x00\xff" and o["c"] == 1 + 2j
        assert o["empty"].shape == (0, 3) and o["i16"].dtype == wb.int16 and o["flags"].tolist() == [True]
        assert o["tr"].tolist() == torch.arange(12.0).view(3, 4).t().tolist()
        o["base"][3] = 100.0  # the views share the storage again
        assert o["row"][1].item() == 100.0 and o["tr"][3, 0].item() == 100.0
        assert o["model"]._metadata[""] == {"version": 1}

    # the model and the optimizer resume in workbench exactly where PyTorch stopped
    ours = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    ours.load_state_dict(o["model"])
    ours_opt = wb.optim.Adam(ours.parameters(), lr=0.01)
    ours_opt.load_state_dict(o["opt"])
    for _ in range(2):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        ours_opt.zero_grad()
        nn.functional.mse_loss(ours(wb.tensor(x.numpy())), wb.tensor(y.numpy())).backward()
        ours_opt.step()
    for (k, a), b in zip(model.state_dict().items(), ours.state_dict().values()):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-5, atol=1e-6, err_msg=k)


def test_pytorch_files_load_without_pytorch_and_run_no_code(tmp_path):
    z, *_ = _fixture(tmp_path)
    legacy, *_ = _fixture(tmp_path, legacy=True)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.ReLU(), torch.nn.Flatten(),
                              torch.nn.Linear(8, 3), torch.nn.TransformerEncoderLayer(3, 1, 4, dropout=0.0,
                                                                                      activation="gelu"))
    net.eval()
    x = torch.randn(2, 1, 4, 4)
    np.save(tmp_path / "x.npy", x.numpy())
    np.save(tmp_path / "y.npy", net(x).detach().numpy())
    torch.save(net, tmp_path / "module.pt")  # a whole torch module: workbench's counterpart on weights_only=False
    script = textwrap.dedent(f"""
        import sys
        sys.modules["torch"] = None  # `import torch` raises ImportError from here on
        import workbench as wb
        for p in ({str(z)!r}, {str(legacy)!r}):
            o = wb.load(p)
            assert o["bf"].float().tolist() == [1.5, -2.25] and type(o["param"]).__name__ == "Parameter"
            o["base"][3] = 7.0
            assert o["row"][1].item() == 7.0
            assert sorted(o["opt"]["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
        try:
            wb.load({str(tmp_path / "module.pt")!r})
        except Exception as e:
            assert "torch.nn.modules.container.Sequential was not an allowed global" in str(e), e
        else:
            raise AssertionError("a pickled torch module loaded with weights_only=True")
        import numpy as np
        net = wb.load({str(tmp_path / "module.pt")!r}, weights_only=False)
        assert type(net) is wb.nn.Sequential and type(net[5]) is wb.nn.TransformerEncoderLayer
        y = net(wb.from_numpy(np.load({str(tmp_path / "x.npy")!r})))
        assert np.allclose(y.detach().numpy(), np.load({str(tmp_path / "y.npy")!r}), atol=1e-5)
        assert "torch" not in sys.modules or sys.modules["torch"] is None
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _zip_with(data_pkl):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", data_pkl)
        zf.writestr("archive/byteorder", "little")
    buf.seek(0)
    return buf


def test_weights_only_refuses_code_in_every_format(tmp_path):
    marker = tmp_path / "pwned"
    payload = {"w": wb.ones(2), "evil": _Payload(marker)}
    blobs = {"zip": _zip_with(pickle.dumps(payload["evil"], protocol=2)).getvalue()}
    for name, kw in [("native", {}), ("torch zip", {"_use_new_zipfile_serialization": True}),
                     ("torch legacy", {"_use_new_zipfile_serialization": False})]:
        buf = io.BytesIO()
        wb.save(payload, buf, **kw)
        blobs[name] = buf.getvalue()
    for name, blob in blobs.items():
        with pytest.raises(pickle.UnpicklingError, match=r"os\.system|posix\.system") as e:
            wb.load(io.BytesIO(blob))
        assert "blocked" in str(e.value), name
        with pytest.raises(pickle.UnpicklingError):
            wb.load(io.BytesIO(blob), weights_only=True)
        assert not marker.exists(), name
    # a hand-made pickle that calls a function it never imports through an allowlisted global
    sneaky = b"\x80\x02c__builtin__\neval\nq\x00X\x04\x00\x00\x001+1q\x01\x85q\x02Rq\x03."
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL eval was not an allowed global"):
        wb.load(_zip_with(sneaky))


def test_whole_modules_numpy_arrays_and_objects(tmp_path):
    wb.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(), nn.LazyLinear(3)
                          if hasattr(nn, "LazyLinear") else nn.Linear(8, 3))
    x = wb.randn(2, 1, 4, 4)
    model(x)
    opt = wb.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(x).sum().backward()
    opt.step()
    p = tmp_path / "all.pt"
    wb.save({"model": model, "opt": opt, "arr": np.arange(6.0).reshape(2, 3), "obj": Point(1, [2, 3]),
             "epoch": 4}, p)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        wb.load(p)
    back = wb.load(p, weights_only=False)
    model.eval()
    back["model"].eval()
    np.testing.assert_array_equal(back["model"](x).detach().numpy(), model(x).detach().numpy())
    assert back["arr"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and back["obj"].y == [2, 3]
    assert back["opt"].state_dict()["param_groups"][0]["momentum"] == 0.9
    # NumPy arrays and plain containers need no allowlist: their bytes are storages, not pickles
    wb.save({"arr": np.arange(4, dtype=np.int32), "nested": [np.ones((2, 2), np.float16)]}, p)
    got = wb.load(p)
    assert got["arr"].dtype == np.int32 and got["nested"][0].dtype == np.float16


def test_safe_globals_api_and_wording_match_pytorch(tmp_path):
    p_torch, p_ours = tmp_path / "t.pt", tmp_path / "w.pt"
    torch.save({"pt": Point(1, 2)}, p_torch)
    wb.save({"pt": Point(1, 2)}, p_ours)
    with pytest.raises(pickle.UnpicklingError) as theirs:
        torch.load(p_torch)
    for p in (p_torch, p_ours):
        with pytest.raises(pickle.UnpicklingError) as ours:
            wb.load(p)
        want = str(theirs.value).split("WeightsUnpickler error: ")[1].split("\n")[0]
        got = str(ours.value).split("WeightsUnpickler error: ")[1].split("\n")[0]
        assert got == want.replace("torch.serialization", "workbench.serialization")
        assert wb.serialization.get_unsafe_globals_in_checkpoint(p) == [f"{__name__}.Point"]
    assert torch.serialization.get_unsafe_globals_in_checkpoint(p_torch) == [f"{__name__}.Point"]
    with wb.serialization.safe_globals([Point]):
        assert wb.serialization.get_safe_globals() == [Point]
        assert wb.load(p_torch)["pt"].y == 2 and wb.load(p_ours)["pt"].x == 1
    assert wb.serialization.get_safe_globals() == []
    wb.serialization.add_safe_globals([(Point, f"{__name__}.Point"), Fraction])
    try:
        assert wb.load(p_ours)["pt"].x == 1
        assert set(wb.serialization.get_safe_globals()) == {(Point, f"{__name__}.Point"), Fraction}
    finally:
        wb.serialization.clear_safe_globals()
    with pytest.raises(pickle.UnpicklingError):
        wb.load(p_ours)


def test_environment_switches(tmp_path, monkeypatch):
    p = tmp_path / "obj.pt"
    wb.save(Point(3, 4), p)
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(pickle.UnpicklingError):
        wb.load(p, weights_only=False)  # forced on, even when asked for off (as torch.load)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(RuntimeError, match="Only one of"):
        wb.load(p)
    monkeypatch.delenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD")
    with pytest.warns(UserWarning, match="TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"):
        assert wb.load(p).y == 4
    with pytest.raises(pickle.UnpicklingError):
        wb.load(p, weights_only=True)  # an explicit True stays True


@pytest.mark.parametrize("zipped", [True, False])
def test_pytorch_reads_what_workbench_writes_in_its_formats(tmp_path, zipped):
    base = wb.arange(12.0)
    lin = nn.Linear(3, 2)
    obj = {"sd": lin.state_dict(), "param": lin.weight, "base": base, "row": base[2:6], "tr": base.view(3, 4).t(),
           "flip": wb.from_numpy(np.arange(4.0)[::-1]), "bf": wb.tensor([1.5, -2.0], dtype=wb.bfloat16),
           "size": wb.Size([2]), "dtype": wb.int32, "device": wb.device("cpu"), "i": wb.arange(3),
           "grad": wb.ones(2, requires_grad=True)}
    p = tmp_path / "for_torch.pt"
    wb.save(obj, p, _use_new_zipfile_serialization=zipped)
    for use_mmap in ([False, True] if zipped else [False]):
        t = torch.load(p, mmap=use_mmap)  # weights_only=True: nothing of workbench's is in the pickle
        assert isinstance(t["param"], torch.nn.Parameter) and t["grad"].requires_grad
        assert t["bf"].dtype == torch.bfloat16 and t["bf"].tolist() == [1.5, -2.0]
        assert t["size"] == torch.Size([2]) and t["dtype"] is torch.int32 and t["device"] == torch.device("cpu")
        assert t["flip"].tolist() == [3.0, 2.0, 1.0, 0.0] and t["tr"].tolist() == base.view(3, 4).t().tolist()
        assert t["i"].dtype == torch.int64
        t["base"][3] = -1.0
        assert t["row"][1].item() == -1.0 and t["tr"][3, 0].item() == -1.0
        model = torch.nn.Linear(3, 2)
        model.load_state_dict(t["sd"])
        np.testing.assert_array_equal(model.weight.detach().numpy(), lin.weight.detach().numpy())
    assert wb.load(p)["tr"].tolist() == base.view(3, 4).t().tolist()  # and workbench reads it back


def test_damaged_pytorch_files_raise_clear_errors(tmp_path):
    z, *_ = _fixture(tmp_path)
    legacy, *_ = _fixture(tmp_path, legacy=True)
    data, old = z.read_bytes(), legacy.read_bytes()
    for cut in (10, len(data) // 2, len(data) - 30):
        with pytest.raises(CheckpointError, match="damaged zip|truncated|corrupted"):
            wb.load(io.BytesIO(data[:cut]))
    for cut in (40, len(old) // 2, len(old) - 3):
        with pytest.raises(CheckpointError, match="truncated|corrupted"):
            wb.load(io.BytesIO(old[:cut]))
    with zipfile.ZipFile(z) as zf:
        info = zf.getinfo("zip/data/0")
    name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
    flipped = bytearray(data)
    flipped[info.header_offset + 30 + name_len + extra_len + 5] ^= 0xFF  # inside storage 0's bytes
    with pytest.raises(CheckpointError, match="storage 0.*CRC"):
        wb.load(io.BytesIO(bytes(flipped)))
    with pytest.raises(RuntimeError, match="mmap can only be used"):
        wb.load(legacy, mmap=True)


def test_a_crash_mid_save_keeps_the_old_file_in_pytorch_format(tmp_path, monkeypatch):
    p = tmp_path / "model.pt"
    wb.save({"v": wb.ones(3)}, p, _use_new_zipfile_serialization=True)
    old = p.read_bytes()
    real = zipfile.ZipFile.writestr

    def failing(self, info, data, *args, **kwargs):
        if info.filename.endswith("data/1"):
            raise OSError("disk full while writing")
        return real(self, info, data, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "writestr", failing)
    with pytest.raises(OSError, match="disk full"):
        wb.save({"a": wb.zeros(100), "b": wb.zeros(200)}, p, _use_new_zipfile_serialization=True)
    assert p.read_bytes() == old and os.listdir(tmp_path) == ["model.pt"]


def test_torchscript_and_unsupported_tensors_are_named(tmp_path):
    scripted = torch.jit.script(torch.nn.Linear(2, 2))
    torch.jit.save(scripted, tmp_path / "ts.pt")
    with pytest.raises(RuntimeError, match="TorchScript"):
        wb.load(tmp_path / "ts.pt")
    torch.save({"s": torch.eye(2).to_sparse()}, tmp_path / "sparse.pt")
    with pytest.raises(CheckpointError, match="sparse.*to_dense"):
        wb.load(tmp_path / "sparse.pt")
    torch.save({"q": torch.zeros(2, dtype=torch.float8_e4m3fn)}, tmp_path / "f8.pt")
    with pytest.raises(Exception, match="float8_e4m3fn"):
        wb.load(tmp_path / "f8.pt")


def test_device_tensors_in_pytorch_format(tmp_path, fake_cuda):
    base = wb.arange(6.0, device="cuda")
    p = tmp_path / "cuda.pt"
    wb.save({"base": base, "view": base[2:4], "h": wb.ones(2)}, p, _use_new_zipfile_serialization=True)
    t = torch.load(p, map_location="cpu")
    assert t["view"].tolist() == [2.0, 3.0] and t["h"].tolist() == [1.0, 1.0]
    t["base"][2] = 9.0
    assert t["view"][0].item() == 9.0  # one storage for the base and its view, as torch.save writes
    back = wb.load(p)
    assert back["view"].device.type == "cuda" and back["h"].device.type == "cpu"
    assert wb.load(p, map_location="cpu")["view"].tolist() == [2.0, 3.0]


def test_whole_pytorch_modules_allowlisted_by_their_workbench_classes(tmp_path):
    p = tmp_path / "lin.pt"
    torch.save(torch.nn.Linear(3, 2), p)
    with pytest.raises(pickle.UnpicklingError, match="torch.nn.modules.linear.Linear was not an allowed global"):
        wb.load(p)
    with wb.serialization.safe_globals([nn.Linear]):  # what `import workbench as torch` code names
        lin = wb.load(p)
    assert type(lin) is nn.Linear and lin(wb.ones(1, 3)).shape == (1, 2)
    torch.save({"opt": torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=0.1)}, p)
    with pytest.raises(pickle.UnpicklingError, match="torch.optim.sgd.SGD, a PyTorch object workbench has no"):
        wb.load(p, weights_only=False)


def test_serialization_config(tmp_path, monkeypatch):
    import mmap

    cfg = wb.utils.serialization.config
    assert (cfg.load.mmap, cfg.save.storage_alignment) == (torch.utils.serialization.config.load.mmap,
                                                           torch.utils.serialization.config.save.storage_alignment)
    p = tmp_path / "t.pt"
    monkeypatch.setattr(cfg.save, "storage_alignment", 4096)
    wb.save({"x": wb.arange(3.0)}, p, _use_new_zipfile_serialization=True)
    with zipfile.ZipFile(p) as zf:
        assert zf.read("archive/.storage_alignment") == b"4096"
        info = zf.getinfo("archive/data/0")
    name_len, extra_len = struct.unpack_from("<HH", p.read_bytes(), info.header_offset + 26)
    assert (info.header_offset + 30 + name_len + extra_len) % 4096 == 0
    assert torch.load(p)["x"].tolist() == [0.0, 1.0, 2.0]
    monkeypatch.setattr(cfg.load, "mmap", True)
    monkeypatch.setattr(cfg.load, "mmap_flags", mmap.MAP_SHARED)
    back = wb.load(p)  # mmap=None follows config.load.mmap; MAP_SHARED writes reach the file
    back["x"][0] = 7.0
    del back
    monkeypatch.setattr(cfg.load, "mmap_flags", mmap.MAP_PRIVATE)
    assert wb.load(p)["x"].tolist() == [7.0, 1.0, 2.0]  # (mapped: the zip's CRC is the old bytes' now)
