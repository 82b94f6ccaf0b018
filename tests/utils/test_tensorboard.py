"""SummaryWriter: real event files, read back with TensorBoard's EventAccumulator, against PyTorch's writer."""
import glob
import os
import subprocess
import sys

import numpy as np
import pytest

import workbench as wb
from workbench import nn

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.plugins.hparams import plugin_data_pb2  # noqa: E402

from workbench.utils.tensorboard import SummaryWriter  # noqa: E402

torch = pytest.importorskip("torch")
from torch.utils.tensorboard import SummaryWriter as TorchWriter  # noqa: E402


def _read(path):
    ea = EventAccumulator(str(path), size_guidance={"images": 0, "histograms": 0, "scalars": 0, "tensors": 0})
    ea.Reload()
    return ea


def _log(writer_cls, logdir, values):
    rng = np.random.default_rng(0)
    img = rng.random((3, 8, 6)).astype(np.float32)
    with writer_cls(str(logdir)) as w:
        for step in range(4):
            w.add_scalar("train/loss", 1.0 / (step + 1), step)
            w.add_histogram("weights", values + step, step)
        w.add_scalars("lr", {"a": 0.1, "b": 0.2}, 0)
        w.add_image("img", img, 0)
        w.add_images("batch", np.stack([img, img]), 0)
        w.add_image("gray", img[0], 0, dataformats="HW")
        w.add_text("notes", "hello **world**", 0)
        w.add_hparams({"lr": 0.01, "opt": "adam", "bn": True}, {"hparam/acc": 0.9}, run_name="hp")


def test_event_files_match_pytorchs_writer(tmp_path):
    values = np.random.default_rng(1).standard_normal(500)
    _log(SummaryWriter, tmp_path / "ours", wb.tensor(values))
    _log(TorchWriter, tmp_path / "theirs", torch.tensor(values))
    ours, theirs = _read(tmp_path / "ours"), _read(tmp_path / "theirs")
    for key in ("scalars", "histograms", "images", "tensors"):
        assert sorted(ours.Tags()[key]) == sorted(theirs.Tags()[key]), key
    assert [e.value for e in ours.Scalars("train/loss")] == [e.value for e in theirs.Scalars("train/loss")]
    assert [e.step for e in ours.Scalars("train/loss")] == [0, 1, 2, 3]
    for a, b in zip(ours.Histograms("weights"), theirs.Histograms("weights")):
        assert a.step == b.step
        assert a.histogram_value.bucket_limit == pytest.approx(b.histogram_value.bucket_limit)
        assert a.histogram_value.bucket == b.histogram_value.bucket
        assert (a.histogram_value.num, a.histogram_value.min) == (b.histogram_value.num, b.histogram_value.min)
    from PIL import Image  # decode both PNGs: the same pixels, whoever encoded them
    import io

    for tag in ("img", "batch", "gray"):
        a, b = ours.Images(tag)[0], theirs.Images(tag)[0]
        assert (a.width, a.height) == (b.width, b.height)
        pa = np.asarray(Image.open(io.BytesIO(a.encoded_image_string)))
        pb = np.asarray(Image.open(io.BytesIO(b.encoded_image_string)))
        np.testing.assert_array_equal(pa, pb)
    text = ours.Tensors("notes/text_summary")[0].tensor_proto.string_val[0]
    assert text == b"hello **world**"
    for sub in ("lr_a", "lr_b"):
        assert _read(tmp_path / "ours" / sub).Scalars("lr")[0].value == pytest.approx(
            _read(tmp_path / "theirs" / sub).Scalars("lr")[0].value)
    hp = _read(tmp_path / "ours" / "hp")
    content = hp.PluginTagToContent("hparams")
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    assert start.session_start_info.hparams["lr"].number_value == 0.01
    assert start.session_start_info.hparams["opt"].string_value == "adam"
    assert start.session_start_info.hparams["bn"].bool_value is True
    assert hp.Scalars("hparam/acc")[0].value == pytest.approx(0.9)


def test_graph_from_the_tape(tmp_path):
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8, 3))
    with SummaryWriter(tmp_path) as w:
        w.add_graph(model, wb.randn(1, 1, 4, 4))
    g = _read(tmp_path).Graph()
    names = {n.name: n for n in g.node}
    assert "input/input.0" in names and "output/output.0" in names and "0/weight" in names
    ops = [n for n in g.node if n.op not in ("IO Node", "Parameter", "Constant")]
    assert ops[0].name.startswith("0/") and "input/input.0" in ops[0].input and "0/weight" in ops[0].input
    assert any(n.name.startswith("3/") for n in ops)  # the Linear layer's ops, grouped under its scope
    last = names[names["output/output.0"].input[0]]
    assert [d.size for d in last.attr["_output_shapes"].list.shape[0].dim] == [1, 3]


def test_flush_close_purge_and_bad_input(tmp_path):
    w = SummaryWriter(tmp_path, purge_step=5, filename_suffix=".x")
    w.add_scalar("a", wb.tensor(2.0), 7)
    w.flush()
    assert _read(tmp_path).Scalars("a")[0].value == 2.0
    assert glob.glob(str(tmp_path / "events.out.tfevents.*.x"))
    with pytest.raises(ValueError, match="one element"):
        w.add_scalar("a", wb.ones(3), 8)
    with pytest.raises(ValueError, match="dataformats"):
        w.add_image("i", np.zeros((2, 2)), 0, dataformats="CHW")
    with pytest.raises(TypeError, match="dictionary"):
        w.add_hparams([], {})
    w.close()
    w.add_scalar("b", 1.0, 0)  # a new event file after close, as PyTorch's writer
    w.close()
    assert len(glob.glob(str(tmp_path / "events.*"))) == 2


def test_scalars_and_histograms_feed_an_attached_monitor(tmp_path):
    model = nn.Linear(3, 1)
    stats = wb.viz.GradStats(model)
    w = SummaryWriter(tmp_path)
    try:
        for step in range(3):
            loss = model(wb.ones(2, 3)).pow(2).mean() * 0 + (step + 1.0)
            loss.backward()
            w.add_scalar("train/loss", 10.0 + step, step)
            w.add_histogram("w", model.weight, step)
        assert stats.history["loss"].tolist() == [10.0, 11.0, 12.0]  # the writer's loss is the monitor's
        assert [s for s, _ in stats.external["scalar/train/loss"]] == [0, 1, 2]
        assert stats.external["histogram/w"][0][1]["counts"].sum() == 3
    finally:
        stats.detach()
        w.close()
    w2 = SummaryWriter(tmp_path / "after")
    w2.add_scalar("train/loss", 1.0, 0)  # nothing attached any more: nothing fed
    w2.close()
    assert len(stats.external["scalar/train/loss"]) == 3


def test_clear_error_without_tensorboard():
    code = ("import sys; sys.modules['tensorboard'] = None\n"
            "try:\n    import workbench.utils.tensorboard\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert "pip install tensorboard" in out.stdout, out.stderr
