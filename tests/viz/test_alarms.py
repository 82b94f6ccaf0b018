"""Monitor alarms are judged against each layer's smoothed level: healthy training raises none, while
the debugging notebook's exploding net, NaNs, dead ReLUs and vanishing gradients are still caught."""
import pytest

import workbench as wb
import workbench.nn as nn
import workbench.nn.functional as F


def _run(model, batches, opt, steps, loss_fn, nan_at=None):
    mon = wb.viz.watch(model, display=False)
    for k in range(steps):
        x, y = batches(k)
        out = model(x)
        if k == nan_at:
            out = out * wb.tensor(float("nan"))
        loss = loss_fn(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    mon.detach()
    return [(a["kind"], a["layer"]) for a in mon.alarms]


def _bce_data():
    wb.manual_seed(0)
    X = wb.randn(256, 10)
    Y = (X[:, :3].sum(dim=1) > 0).float()
    return lambda k: (X, Y), lambda out, y: F.binary_cross_entropy_with_logits(out.squeeze(1), y)


def _mlp(bias=0.0):
    m = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
    with wb.no_grad():
        m[0].bias.fill_(bias)
    return m


def _deep(scale):
    layers = []
    for _ in range(20):
        lin = nn.Linear(32, 32)
        with wb.no_grad():
            lin.weight.normal_(0.0, scale)
        layers += [lin, nn.Tanh()]
    return nn.Sequential(nn.Linear(10, 32), *layers, nn.Linear(32, 1))


def _tour_batches(k):
    x = wb.randn(64, 4)
    return x, (x[:, 0] > 0).long() + (x[:, 1] > 0).long()


def test_healthy_training_raises_no_alarm():
    wb.manual_seed(0)
    tour = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 3))
    assert _run(tour, _tour_batches, wb.optim.Adam(tour.parameters(), lr=1e-2), 150, F.cross_entropy) == []
    data, loss = _bce_data()
    m = _mlp()
    assert _run(m, data, wb.optim.Adam(m.parameters(), lr=1e-2), 60, loss) == []


@pytest.mark.parametrize("opt", ["sgd_momentum", "adam"])
def test_healthy_digits_mlp_raises_no_alarm(opt):
    datasets = pytest.importorskip("sklearn.datasets")
    d = datasets.load_digits()
    X = wb.tensor(d.data / 16.0, dtype=wb.float32)
    Y = wb.tensor(d.target)
    wb.manual_seed(0)
    m = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))
    o = wb.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) if opt == "sgd_momentum" else wb.optim.Adam(m.parameters(), lr=1e-3)
    batches = lambda k: (X[(k * 64) % 1728:(k * 64) % 1728 + 64], Y[(k * 64) % 1728:(k * 64) % 1728 + 64])  # noqa: E731
    assert _run(m, batches, o, 60, F.cross_entropy) == []


def test_exploding_nan_dead_relu_and_vanishing_are_caught():
    data, loss = _bce_data()
    deep = _deep(1.0)
    got = _run(deep, data, wb.optim.Adam(deep.parameters(), lr=1e-3), 20, loss)
    assert ("exploding", "0.weight") in got
    m = _mlp()
    assert _run(m, data, wb.optim.Adam(m.parameters(), lr=1e-2), 20, loss, nan_at=12)[0] == ("nan", "4.bias")
    dead = _mlp(bias=-10.0)
    got = _run(dead, data, wb.optim.Adam(dead.parameters(), lr=1e-2), 20, loss)
    assert ("dead_relu", "1") in got and not any(k == "exploding" for k, _ in got)
    flat = _deep(0.05)
    assert ("vanishing", "0.weight") in _run(flat, data, wb.optim.SGD(flat.parameters(), lr=1e-3), 20, loss)
