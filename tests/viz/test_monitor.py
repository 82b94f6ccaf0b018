"""The gradient monitor: numbers equal a hand computation; alarms; hooks removed; fake GPU; messages."""
import math

import numpy as np
import pytest

import workbench as wb
from models import MLP, mse
from workbench.autograd import graph


def _train(m, steps, lr=0.1, mon=None, x=None, y=None, poison=None):
    wb.manual_seed(0)
    x = wb.randn(8, 3) if x is None else x
    y = wb.randn(8, 2) if y is None else y
    snaps = []
    for k in range(steps):
        for p in m.parameters():
            p.grad = None
        out = m(x)
        if poison is not None and k == poison:
            out = out * wb.tensor(float("nan"))
        loss = mse(out, y)
        loss.backward()
        snaps.append({n: (p.detach().cpu().numpy().copy(), p.grad.cpu().numpy().copy()) for n, p in m.named_parameters()})
        snaps[-1]["loss"] = loss.item()
        with wb.no_grad():
            for p in m.parameters():
                p -= lr * p.grad
    return snaps


def test_numbers_equal_a_hand_computation():
    m = MLP()
    lo, hi, bins = -4.0, 1.0, 10
    mon = wb.viz.watch(m, display=False, bins=bins, hist_range=(lo, hi), detail_every=1, sample=10**6,
                       hist_every=1)
    snaps = _train(m, 4)
    mon.detach()
    h = mon.history
    assert list(h["step"]) == [0, 1, 2, 3]
    np.testing.assert_allclose(h["loss"], [s["loss"] for s in snaps], rtol=1e-6)
    for name in mon.layers:
        w = [s[name][0] for s in snaps]
        g = [s[name][1] for s in snaps]
        np.testing.assert_allclose(h[f"grad_norm/{name}"], [np.linalg.norm(v) for v in g], rtol=1e-5)
        np.testing.assert_allclose(h[f"weight_norm/{name}"], [np.linalg.norm(v) for v in w], rtol=1e-5)
        ratio = h[f"update_ratio/{name}"]
        assert math.isnan(ratio[0])
        for k in range(1, 4):
            want = np.linalg.norm(w[k] - w[k - 1]) / np.linalg.norm(w[k])
            assert ratio[k] == pytest.approx(want, rel=1e-4, abs=1e-12)
        edges = (10.0 ** (lo + (hi - lo) / bins * np.arange(1, bins))).astype("float32")
        for k in range(4):  # bin b holds 10**(lo + b w) < |g| <= 10**(lo + (b+1) w), ends clamped, zeros out
            a = np.abs(g[k].ravel())
            a = a[a > 0]
            idx = (edges[None, :] < a[:, None]).sum(1)
            np.testing.assert_array_equal(h[f"hist/{name}"][k], np.bincount(idx, minlength=bins))
    assert graph.BACKWARD_HOOKS == [] and mon.stats._on_op not in graph.LISTENERS.values()


def test_every_and_detail_every_and_log():
    m = MLP()
    mon = wb.viz.watch(m, every=2, detail_every=2, display=False)
    _train(m, 6)
    mon.log(loss=0.5)
    h = mon.history
    assert list(h["step"]) == [0, 1, 2]  # every 2nd backward
    name = mon.layers[0]
    assert not math.isnan(h[f"weight_norm/{name}"][0]) and math.isnan(h[f"weight_norm/{name}"][1])
    assert not math.isnan(h[f"update_ratio/{name}"][2])  # the copy was taken at the step before
    assert h["loss"][-1] == 0.5
    mon.detach()
    with pytest.raises(ValueError, match="every"):
        wb.viz.watch(m, every=0, display=False)
    with pytest.raises(ValueError, match="hist_every"):
        wb.viz.watch(m, hist_every=0, display=False)


def test_nan_alarm_names_layer_op_and_line():
    m = MLP()
    mon = wb.viz.watch(m, display=False)  # the first forward records source lines
    _train(m, 3, poison=1)
    mon.detach()
    nan = [a for a in mon.alarms if a["kind"] in ("nan", "inf")]
    assert len(nan) == 1
    a = nan[0]
    assert a["step"] == 1 and a["layer"] == "head.bias"  # nearest the loss: the first to get NaN
    assert a["op"] == "add" and a["site"]["file"].endswith("models.py")
    assert "NaN" in a["detail"]


def test_exploding_vanishing_and_dead_relu_alarms():
    m = MLP()
    with wb.no_grad():
        m.encoder._children["0"].bias -= 100.0  # every ReLU unit dead
    mon = wb.viz.watch(m, display=False, detail_every=1)  # dead units are counted on detail steps
    _train(m, 3)  # vanishing must hold 3 steps in a row
    mon.detach()
    kinds = {a["kind"]: a for a in mon.alarms}
    assert "dead_relu" in kinds and kinds["dead_relu"]["layer"] == "encoder.1"
    assert kinds["dead_relu"]["value"] == 1.0 and "4 of 4 units" in kinds["dead_relu"]["detail"]
    assert "vanishing" in kinds  # encoder.0 gets no gradient through dead units
    assert mon.history["dead_relu/encoder.1"].tolist() == [4, 4, 4]

    m = MLP()
    mon = wb.viz.watch(m, display=False, explode_at=1e-6)
    _train(m, 2)
    assert mon.alarms == []  # two steps above the bound are not yet an explosion
    _train(m, 1)
    mon.detach()
    assert {a["kind"] for a in mon.alarms} >= {"exploding"}


def test_fake_cuda_summaries_on_device(fake_cuda):
    m = MLP()
    for mod in [m.encoder._children["0"], m.head]:
        for k in ("weight", "bias"):
            t = getattr(mod, k).detach().to("cuda").requires_grad_()
            mod._params[k] = t
            setattr(mod, k, t)
    x, y = wb.randn(8, 3).to("cuda"), wb.randn(8, 2).to("cuda")
    mon = wb.viz.watch(m, display=False, detail_every=1)
    snaps = _train(m, 2, x=x, y=y)
    mon.detach()
    name = "head.weight"
    np.testing.assert_allclose(mon.history[f"grad_norm/{name}"],
                               [np.linalg.norm(s[name][1]) for s in snaps], rtol=1e-5)


def test_messages_to_the_widget_and_sync():
    m = MLP()
    mon = wb.viz.watch(m, display=False, bins=8, hist_range=(-8, 0))
    sent = []
    mon.send = lambda content, buffers=None: sent.append((content, buffers))
    _train(m, 5)
    mon.flush()
    steps = [c for c, _ in sent if c.get("event") == "steps"]
    assert sum(c["n"] for c in steps) == 5 and steps[0]["start"] == 0
    assert steps[0]["layers"] == mon.layers and steps[0]["hist"] == {"bins": 8, "lo": -8.0, "hi": 0.0}
    c, bufs = next((c, b) for c, b in sent if c.get("event") == "steps")
    n, L = c["n"], len(c["layers"])
    loss = np.frombuffer(bufs[0], "<f4")
    metrics = np.frombuffer(bufs[1], "<f4").reshape(n, L, 3)
    counts = np.frombuffer(bufs[2], "<u4").reshape(n, L, 8)
    assert loss.shape == (n,) and np.isfinite(loss).all()
    np.testing.assert_allclose(metrics[:, 0, 0], mon.history[f"grad_norm/{mon.layers[0]}"][:n], rtol=1e-6)
    assert counts.sum() > 0
    sent.clear()
    mon._on_msg(mon, {"type": "monitor_sync"}, [])
    assert sent[0][0]["event"] == "reset"  # the view starts from a clean slate, then gets everything
    assert sent[1][0]["start"] == 0 and sent[1][0]["n"] == 5
    mon.detach(display=False)
    mon.detach()  # idempotent


def test_history_frame_and_plot(tmp_path):
    m = MLP()
    mon = wb.viz.watch(m, display=False)
    _train(m, 3)
    mon.detach()
    pd = pytest.importorskip("pandas")
    f = mon.history_frame()
    assert isinstance(f, pd.DataFrame) and list(f.index) == [0, 1, 2]
    assert f"grad_norm/{mon.layers[0]}" in f.columns
    pytest.importorskip("matplotlib")
    path = mon.plot(tmp_path / "flow.png")
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def _hand_hist(g, lo, hi, bins):
    edges = (10.0 ** (lo + (hi - lo) / bins * np.arange(1, bins))).astype("float32")
    a = np.abs(g.ravel())
    a = a[a > 0]
    return np.bincount((edges[None, :] < a[:, None]).sum(1), minlength=bins)


def test_rows_across_blocks_and_flushes_and_repeated_histograms(monkeypatch):
    from workbench.viz import gradstats as monitor

    monkeypatch.setattr(monitor, "_BLOCK", 3)  # rows span several device blocks and partial flushes
    m = MLP()
    lo, hi, bins = -4.0, 1.0, 10
    mon = wb.viz.watch(m, display=False, bins=bins, hist_range=(lo, hi), sample=10**6, hist_every=3,
                       detail_every=4, rate=1e-9)
    snaps = _train(m, 5)
    mon.flush()
    snaps += _train(m, 6)
    mon.detach()
    h = mon.history
    assert list(h["step"]) == list(range(11))
    np.testing.assert_allclose(h["loss"], [s["loss"] for s in snaps], rtol=1e-6)
    for name in mon.layers:
        np.testing.assert_allclose(h[f"grad_norm/{name}"], [np.linalg.norm(s[name][1]) for s in snaps], rtol=1e-5)
        wn = h[f"weight_norm/{name}"]
        ratio = h[f"update_ratio/{name}"]
        for k in range(11):
            if k % 4:  # not a detail step
                assert math.isnan(wn[k]) and math.isnan(ratio[k])
                continue
            w = snaps[k][name][0]
            assert wn[k] == pytest.approx(np.linalg.norm(w), rel=1e-5)
            if k:
                want = np.linalg.norm(w - snaps[k - 1][name][0]) / np.linalg.norm(w)
                assert ratio[k] == pytest.approx(want, rel=1e-4, abs=1e-12)
        for k in range(11):  # recomputed at steps 0, 3, 6, 9; the steps between show the last one
            np.testing.assert_array_equal(h[f"hist/{name}"][k], _hand_hist(snaps[k - k % 3][name][1], lo, hi, bins))


def test_auto_detail_steps_stretch_to_multiples_of_ten_within_the_budget(monkeypatch):
    from workbench.viz import gradstats as monitor

    monkeypatch.setattr(monitor, "DETAIL_BUDGET", 1e-12)  # any cost is over budget: the gap doubles
    m = MLP()
    mon = wb.viz.watch(m, display=False, histograms=False)
    snaps = _train(m, 75)
    mon.detach()
    h = mon.history
    name = mon.layers[0]
    detail = [k for k, v in enumerate(h[f"weight_norm/{name}"]) if not math.isnan(v)]
    # every 10 steps for the first 50 (WARMUP); then the gap doubles at most, and stays a multiple of 10
    assert detail == [0, 10, 20, 30, 40, 50, 70]
    for k in detail[1:]:  # the weights were copied at the step before each, wherever it fell
        w = snaps[k][name][0]
        want = np.linalg.norm(w - snaps[k - 1][name][0]) / np.linalg.norm(w)
        assert h[f"update_ratio/{name}"][k] == pytest.approx(want, rel=1e-4, abs=1e-12)
    assert mon.history["dead_relu/encoder.1"].size == len(detail)  # dead ReLUs on detail steps' forwards


def test_rows_reach_the_widget_after_the_loop_stops():
    import time

    m = MLP()
    mon = wb.viz.watch(m, display=False, rate=20.0)
    sent = []
    mon.send = lambda content, buffers=None: sent.append(content)
    _train(m, 3)
    deadline = time.monotonic() + 5
    while sum(c.get("n", 0) for c in sent if c.get("event") == "steps") < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sum(c.get("n", 0) for c in sent if c.get("event") == "steps") == 3  # sent by the flusher thread
    mon.detach(display=False)


def test_auto_histograms_every_step_at_first_then_within_the_budget(monkeypatch):
    from workbench.viz import gradstats as monitor

    monkeypatch.setattr(monitor, "HIST_BUDGET", 1e-12)  # any cost is over budget
    m = MLP()
    mon = wb.viz.watch(m, display=False)
    _train(m, 70)
    mon.detach()
    # a short run's heatmap is complete (WARMUP steps); then the interval doubles at most per histogram
    assert mon.stats._hsteps.view().tolist() == list(range(51)) + [52, 56, 64]
    assert mon.history[f"hist/{mon.layers[0]}"].shape[0] == 70
