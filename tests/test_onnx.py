"""workbench.onnx.export: the recorded tape as an ONNX file that onnxruntime runs with the same outputs."""
import io
import os
import subprocess
import sys

import numpy as np
import pytest

import workbench as wb
from workbench import nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _run(model, args, atol=1e-5, **kw):
    buf = io.BytesIO()
    wb.onnx.export(model, args, buf, **kw)
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    return sess, buf.getvalue()


def _check(model, *args, atol=1e-5, **kw):
    wb.manual_seed(0)
    sess, _ = _run(model, args, **kw)
    model.eval()
    with wb.no_grad():
        want = model(*args)
    want = [t.numpy() for t in (want if isinstance(want, (tuple, list)) else [want]) if isinstance(t, wb.Tensor)]
    feeds = {i.name: a.numpy() for i, a in zip(sess.get_inputs(), args)}
    got = sess.run(None, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=atol)
    return sess


class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 6, 3, stride=2, groups=2, dilation=1)
        self.pool = nn.MaxPool2d(2, ceil_mode=True)
        self.avg = nn.AdaptiveAvgPool2d((2, 2))
        self.fc = nn.Linear(6 * 4, 5)

    def forward(self, x):
        x = self.pool(nn.functional.relu(self.bn(self.conv1(x))))
        x = nn.functional.gelu(self.conv2(nn.functional.pad(x, (1, 1, 1, 1))))
        return self.fc(self.avg(x).flatten(1)).softmax(-1)


def test_cnn_with_a_dynamic_batch():
    model = TinyCNN()
    x = wb.randn(2, 1, 12, 12)
    sess = _check(model, x, input_names=["image"], output_names=["probs"],
                  dynamic_axes={"image": {0: "batch"}, "probs": {0: "batch"}})
    assert sess.get_inputs()[0].shape[0] == "batch"
    bigger = wb.randn(7, 1, 12, 12)
    with wb.no_grad():
        np.testing.assert_allclose(sess.run(None, {"image": bigger.numpy()})[0], model(bigger).numpy(), rtol=1e-4,
                                   atol=1e-6)


@pytest.mark.parametrize("make, shape", [
    (lambda: nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.2), nn.Linear(8, 8), nn.ELU(), nn.SiLU(), nn.Tanh(),
                           nn.Sigmoid(), nn.Softplus(), nn.ReLU6(), nn.SELU(), nn.GELU("tanh"), nn.Dropout(0.3),
                           nn.LayerNorm(8), nn.Hardtanh(-0.5, 0.5), nn.LogSoftmax(1)), (3, 6)),
    (lambda: nn.Sequential(nn.Conv1d(2, 4, 3, padding=2, dilation=2), nn.BatchNorm1d(4), nn.MaxPool1d(2),
                           nn.GroupNorm(2, 4), nn.AvgPool1d(2), nn.Flatten(), nn.Linear(16, 2)), (2, 2, 16)),
    (lambda: nn.Sequential(nn.ReflectionPad2d(1), nn.ReplicationPad2d((1, 0, 2, 1)), nn.ZeroPad2d(1)), (1, 2, 3, 3)),
    (lambda: nn.Sequential(nn.Conv3d(1, 2, 2), nn.InstanceNorm3d(2, affine=True), nn.ReLU()), (1, 1, 4, 4, 4)),
    (lambda: nn.Sequential(nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1),
                           nn.Upsample(scale_factor=2), nn.AvgPool2d(2)), (1, 3, 4, 4)),
])
def test_layers(make, shape):
    _check(make(), wb.randn(*shape))


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU, nn.RNN])
def test_recurrent_layers_unrolled(cell):
    class Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = cell(3, 5, num_layers=2, batch_first=True, bidirectional=True)
            self.head = nn.Linear(10, 2)

        def forward(self, x):
            out, _ = self.rnn(x)
            return self.head(out[:, -1])

    _check(Seq(), wb.randn(2, 4, 3))


def test_transformer_and_embedding_language_model():
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(20, 8)
            self.pos = nn.Parameter(wb.randn(6, 8) * 0.1)
            self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True), 2)
            self.out = nn.Linear(8, 20)

        def forward(self, idx):
            h = self.emb(idx) + self.pos[: idx.shape[1]]
            mask = nn.Transformer.generate_square_subsequent_mask(idx.shape[1])
            return self.out(self.enc(h, mask=mask, is_causal=True))

    _check(LM(), wb.randint(0, 20, (2, 6)), atol=1e-4)
    _check(nn.Transformer(8, 2, 1, 1, 16, dropout=0.0), wb.randn(5, 2, 8), wb.randn(4, 2, 8), atol=1e-4)


def test_tensor_ops_between_layers():
    class Ops(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(wb.randn(4, 4))

        def forward(self, x):
            y = (x @ self.w).permute(1, 0).t().unsqueeze(0).squeeze(0)
            y = wb.cat([y, y * 2 - 1, 1 / (y.abs() + 1)], dim=1)[:, 1:9:2]
            z = wb.stack([y.sum(1), y.mean(1), y.amax(1), y.max(1).values], dim=1)
            z = wb.where(z > 0, z.clamp(max=2.0), z.exp()) ** 2
            return z.reshape(-1, 2).expand(3, -1, 2), x.min(), x[:, None, 1:3].sqrt().neg()

    _check(Ops(), wb.rand(3, 4) + 0.1)


def test_split_chunk_and_unbind():
    class Pieces(nn.Module):  # recorded while the input requires grad: one node each (SplitBackward0...)
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(wb.randn(4, 6))

        def forward(self, x):
            y = x @ self.w
            a, b, c = y.chunk(3, 1)
            p, q = y.split([2, 4], 1)
            rows = y.unbind(0)
            return a * b - c, q.sum(1) + p[:, 0], rows[1] + rows[2]

    _check(Pieces(), wb.randn(3, 4))


def test_file_names_params_and_errors(tmp_path):
    model = nn.Linear(3, 2)
    p = tmp_path / "m.onnx"
    wb.onnx.export(model, (wb.randn(1, 3),), p, input_names=["x"])
    proto = onnx.load(str(p))
    assert {i.name for i in proto.graph.initializer} == {"weight", "bias"}
    assert [i.name for i in proto.graph.input] == ["x"] and proto.opset_import[0].version == 18
    wb.onnx.export(model, (wb.randn(1, 3),), p, export_params=False, opset_version=17)
    assert {i.name for i in onnx.load(str(p)).graph.input} == {"input", "weight", "bias"}
    with pytest.raises(ValueError, match="opset_version 9"):
        wb.onnx.export(model, (wb.randn(1, 3),), p, opset_version=9)
    with pytest.raises(ValueError, match="dynamic_axes names"):
        wb.onnx.export(model, (wb.randn(1, 3),), p, dynamic_axes={"nope": [0]})

    class Odd(nn.Module):
        def forward(self, x):
            return wb.cumsum(x, 0)

    with pytest.raises(wb.onnx.UnsupportedOperatorError, match="cumsum"):
        wb.onnx.export(Odd(), (wb.randn(3),), p)
    m = nn.Sequential(nn.Dropout(0.5))
    m.train()
    wb.onnx.export(nn.Sequential(nn.Linear(2, 2), m), (wb.randn(1, 2),), p)
    assert m.training  # exported in eval mode, the mode restored after


def test_importable_without_onnx():
    code = ("import sys; sys.modules['onnx'] = None\n"
            "import workbench as wb, workbench.onnx\n"
            "try:\n    wb.onnx.export(wb.nn.Linear(2, 2), (wb.ones(1, 2),), None)\n"
            "except ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert "pip install onnx" in out.stdout, out.stderr


def test_vecdot_primitive():
    # same-shape operands record the one-pass linalg_vecdot primitive (x with itself: y None)
    class Dots(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(wb.randn(3, 4))

        def forward(self, x):
            return wb.linalg.vecdot(x, self.w, dim=1), wb.linalg.vecdot(x, x, dim=0)

    _check(Dots(), wb.rand(3, 4))
