"""Real models that call a module more than once in one forward, and residual blocks, for the viz tests.

``gru_loop(steps)``: a GRUCell applied in a Python loop over time steps, then a head. ``tied()``: an
embedding whose weight the output layer shares, and a layer applied twice with a tanh between. ``resnet()``:
two residual blocks (conv, batch norm, relu, a skip added back). ``widening()``: a stem and a residual block from 2
to 4 channels, its skip through a 1x1 convolution (torchvision's ``downsample``, here applied first). ``transformer()``: one encoder
layer (attention and feed-forward, each with a residual add). Each returns ``(loss, model)`` recorded under
``wb.viz.record()``."""
import workbench as wb


class GRULoop(wb.nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.hidden = hidden
        self.cell = wb.nn.GRUCell(4, hidden)
        self.head = wb.nn.Linear(hidden, 1)

    def forward(self, x):
        h = wb.zeros(x.shape[1], self.hidden)
        for t in range(x.shape[0]):
            h = self.cell(x[t], h)
        return self.head(h)


class Tied(wb.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = wb.nn.Embedding(10, 6)
        self.mix = wb.nn.Linear(6, 6)
        self.out = wb.nn.Linear(6, 10, bias=False)
        self.out.weight = self.emb.weight

    def forward(self, ids):
        h = self.mix(self.emb(ids)).tanh()
        return self.out(self.mix(h).tanh())


class Block(wb.nn.Module):
    def __init__(self, c, out=None):
        super().__init__()
        out = out or c
        self.conv1 = wb.nn.Conv2d(c, out, 3, padding=1)
        self.bn1 = wb.nn.BatchNorm2d(out)
        self.conv2 = wb.nn.Conv2d(out, out, 3, padding=1)
        self.bn2 = wb.nn.BatchNorm2d(out)
        self.downsample = wb.nn.Conv2d(c, out, 1) if out != c else None

    def forward(self, x):
        skip = x if self.downsample is None else self.downsample(x)
        return (skip + self.bn2(self.conv2(self.bn1(self.conv1(x)).relu()))).relu()


class ResNet(wb.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = wb.nn.Conv2d(1, 4, 3, padding=1)
        self.b1, self.b2 = Block(4), Block(4)
        self.head = wb.nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.b2(self.b1(self.stem(x))).mean((2, 3)))


class Widening(wb.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = wb.nn.Conv2d(1, 2, 3, padding=1)
        self.bn1 = wb.nn.BatchNorm2d(2)
        self.block = Block(2, 4)
        self.head = wb.nn.Linear(4, 2)

    def forward(self, x):  # the stem's relu as a function, as handwritten CIFAR ResNets have it
        return self.head(self.block(self.bn1(self.conv1(x)).relu()).mean((2, 3)))


def _run(model, x, reduce):
    with wb.viz.record():
        loss = reduce(model(x))
    return loss, model


def gru_loop(steps=8, hidden=8):
    wb.manual_seed(0)
    return _run(GRULoop(hidden), wb.randn(steps, 2, 4), lambda y: y.pow(2).mean())


def tied():
    wb.manual_seed(0)
    return _run(Tied(), wb.tensor([[1, 2, 3]]), lambda y: y.logsumexp(-1).mean())


def resnet():
    wb.manual_seed(0)
    return _run(ResNet(), wb.randn(2, 1, 6, 6), lambda y: y.pow(2).mean())


def widening():
    wb.manual_seed(0)
    return _run(Widening(), wb.randn(2, 1, 6, 6), lambda y: y.pow(2).mean())


def transformer():
    wb.manual_seed(0)
    return _run(wb.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), wb.randn(3, 2, 8), lambda y: y.pow(2).mean())


if __name__ == "__main__":  # the layout tests' fixtures: python tests/viz/repeated.py (structure only, no values)
    import json
    from pathlib import Path

    out = Path(__file__).resolve().parents[2] / "extensions" / "test" / "fixtures"
    for name, make in [("gru_loop", gru_loop), ("tied", tied), ("resnet", resnet), ("widening", widening),
                       ("transformer", transformer)]:
        loss, model = make()
        snap = wb.viz.snapshot(loss, model, title=name, values=False, grads=False).to_dict()
        for n in snap["nodes"]:
            n["site"] = None  # no paths of this checkout
        (out / f"{name}.tape.json").write_text(json.dumps(snap, allow_nan=False, separators=(",", ":")) + "\n")
