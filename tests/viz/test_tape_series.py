"""The tape over time (watch(model, snapshots_every=N), mon.snapshot(), mon.snapshots): numbers equal a
traced snapshot of the same step, 4 significant digits, structure changes said, no tensor kept, the size
budget of a saved notebook."""
import gc
import json
import weakref

import numpy as np
import pytest

import workbench as wb
from models import MLP, Linear, Mod, mse
from workbench.autograd import graph
from workbench.tensor import Tensor
from workbench.viz.gradstats import GradStats


def _step(m, x, y, lr=0.1):
    for p in m.parameters():
        p.grad = None
    out = m(x)
    loss = mse(out, y)
    loss.backward()
    with wb.no_grad():
        for p in m.parameters():
            p -= lr * p.grad
    return loss


def _data():
    wb.manual_seed(0)
    return wb.randn(8, 3), wb.randn(8, 2)


def _sig4(v):
    return v if not isinstance(v, float) else float(f"{v:.4g}")


def test_series_equals_a_traced_snapshot_of_the_same_step(validate):
    x, y = _data()
    m = MLP()
    stats = GradStats(m, snapshots_every=2)
    for _ in range(5):
        _step(m, x, y)
    stats.detach()
    series = stats.series
    assert series.steps == [0, 2, 4] and len(series) == 3
    d = validate(series.to_dict())
    n = len(d["nodes"])
    for key in ("grad_norm", "value_norm"):
        rows = d["series"]["measures"][key]
        assert len(rows) == 3 and all(len(r) == n for r in rows)
    # the same step again, traced by wb.viz.snapshot (nothing watching): every norm agrees
    for p in m.parameters():
        p.grad = None
    loss = mse(m(x), y)
    ref = wb.viz.snapshot(loss, m, trace=True).to_dict()
    stats = GradStats(m, snapshots_every=1)
    for p in m.parameters():
        p.grad = None
    mse(m(x), y).backward()
    stats.detach()
    one = validate(stats.series.step_dict(0))
    assert [k["id"] for k in one["nodes"]] == [k["id"] for k in ref["nodes"]]
    got_g, got_v = one["series"]["measures"]["grad_norm"][0], one["series"]["measures"]["value_norm"][0]
    checked = 0
    for j, node in enumerate(ref["nodes"]):
        if node["grad"] is not None:
            assert got_g[j] == pytest.approx(_sig4(node["grad"]["norm"]), rel=1e-3), node["name"]
            assert one["nodes"][j]["grad"]["norm"] == got_g[j]
            checked += 1
        if node["kind"] == "param":
            assert got_v[j] == pytest.approx(node["value"]["norm"], rel=1e-3)
    assert checked >= 8  # every op node and every parameter


def test_four_significant_digits_and_the_last_step_on_the_nodes():
    x, y = _data()
    m = MLP()
    stats = GradStats(m, snapshots_every=1)
    for _ in range(3):
        _step(m, x, y)
    stats.detach()
    d = stats.series.to_dict()
    for rows in d["series"]["measures"].values():
        for row in rows:
            for v in row:
                assert v is None or v == float(f"{v:.4g}")
    last = d["series"]["measures"]["grad_norm"][-1]
    assert [n["grad"]["norm"] if n["grad"] else None for n in d["nodes"]] == last
    assert all(n["value"] is None for n in d["nodes"])  # the values of every step are in the series only
    w = next(j for j, n in enumerate(d["nodes"]) if n["param"] == "head.weight")
    assert last[w] == float(f"{float(np.linalg.norm(m.head.weight.grad.numpy())):.4g}")


def test_nan_gradients_are_said_not_dropped(validate):
    x, y = _data()
    m = MLP()
    stats = GradStats(m, snapshots_every=1)
    _step(m, x, y)
    x[0, 0] = float("nan")  # a bad sample: the same graph, NaN gradients
    _step(m, x, y)
    stats.detach()
    rows = stats.series.to_dict()["series"]["measures"]["grad_norm"]
    assert "NaN" not in rows[0] and "NaN" in rows[1]
    d = validate(stats.series.step_dict(-1))
    by_param = {n["param"]: n["grad"] for n in d["nodes"] if n["param"]}
    for path, p in m.named_parameters():
        g = p.grad.numpy()
        fin = g[np.isfinite(g)]
        assert by_param[path]["nan"] == int(np.isnan(g).sum()) and by_param[path]["inf"] == 0
        assert by_param[path]["norm"] == (float(f"{np.linalg.norm(fin):.4g}") if fin.size else None)
    assert any(v["nan"] for v in by_param.values())


class _Branchy(Mod):
    """head(relu(enc(x))), with an extra op in the head's scope when `extra` is set."""

    def __init__(self):
        super().__init__()
        self.enc = self.add("enc", Linear(3, 4, 1))
        self.head = self.add("head", Linear(4, 2, 2))
        self.extra = False
        self.finish()

    def forward(self, x):
        h = wb.relu(self.enc(x))
        if self.extra:
            h = h * 2.0
        return self.head(h)


def test_a_structure_change_is_said_in_a_note(validate):
    x, y = _data()
    m = _Branchy()
    stats = GradStats(m, snapshots_every=1)
    _step(m, x, y)
    m.extra = True
    _step(m, x, y)
    m.extra = False
    _step(m, x, y)
    stats.detach()
    d = validate(stats.series.to_dict())
    notes = [n["text"] for n in d.get("notes", ())]
    assert len(notes) == 1 and "changed at step 1" in notes[0] and "not shown" in notes[0]
    # the nodes both graphs have keep their values at the changed step
    row = d["series"]["measures"]["grad_norm"][1]
    enc_w = next(j for j, n in enumerate(d["nodes"]) if n["param"] == "enc.weight")
    assert row[enc_w] is not None
    own = validate(stats.series.step_dict(1))  # the changed step alone is its own graph, the extra op included
    assert own["notes"][0]["text"] == notes[0] and len(own["nodes"]) == len(d["nodes"]) + 1
    assert len(own["series"]["measures"]["grad_norm"][0]) == len(own["nodes"])
    assert "notes" not in stats.series.step_dict(2)
    snaps = wb.viz.Snapshots(stats.series)
    diff = wb.viz.compare(snaps[0], snaps[1]).to_dict()
    assert diff["compare"]["counts"]["added"] == 1 and diff["compare"]["counts"]["removed"] == 0


def test_compare_two_kept_steps():
    x, y = _data()
    m = MLP()
    mon = wb.viz.watch(m, snapshots_every=3, display=False)
    for _ in range(7):
        _step(m, x, y, lr=0.5)
    mon.detach()
    snaps = mon.snapshots
    a, b = snaps[0].to_dict(), snaps[-1].to_dict()
    ratio = wb.viz.compare(snaps[0], snaps[-1]).to_dict()["measures"]["grad_norm_ratio"]["values"]
    j = next(k for k, n in enumerate(a["nodes"]) if n["param"] == "head.weight")
    ga, gb = a["series"]["measures"]["grad_norm"][0][j], b["series"]["measures"]["grad_norm"][0][j]
    assert ratio[b["nodes"][j]["id"]] == pytest.approx(gb / ga, rel=1e-3)


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, "5"])
def test_snapshots_every_is_validated_before_anything_is_hooked(bad):
    hooks = list(graph.BACKWARD_HOOKS)
    with pytest.raises(ValueError, match="snapshots_every"):
        wb.viz.watch(MLP(), snapshots_every=bad, display=False)
    with pytest.raises(ValueError, match="snapshots_every"):
        GradStats(MLP(), snapshots_every=bad)
    assert graph.BACKWARD_HOOKS == hooks


def test_snapshot_keeps_the_next_step_and_the_view_indexes():
    x, y = _data()
    m = MLP()
    mon = wb.viz.watch(m, display=False)
    for k in range(5):
        if k == 3:
            mon.snapshot()
        _step(m, x, y)
    mon.detach()
    snaps = mon.snapshots
    assert isinstance(snaps, wb.viz.Snapshots) and len(snaps) == 1 and snaps.steps == [3]
    one = snaps[0]
    assert isinstance(one, wb.viz.Snapshot) and one.to_dict()["series"]["steps"] == [3]
    assert snaps[-1].to_dict() == one.to_dict()
    with pytest.raises(IndexError, match="1 step kept"):
        snaps[1]
    with pytest.raises(TypeError):
        snaps["a"]
    b = snaps._repr_mimebundle_()
    assert set(b) == {wb.viz.MIME, "text/html", "text/plain"}
    assert "Step 3, the last of 1 kept" in b["text/html"] and "JupyterLab" in b["text/html"]
    assert b["text/plain"].startswith("<workbench tape series")


def test_empty_series_says_how_to_get_steps_and_a_script_prints_one_line(capsys, tmp_path):
    m = MLP()
    mon = wb.viz.watch(m, display=False)
    assert len(mon.snapshots) == 0 and set(mon.snapshots._repr_mimebundle_()) == {"text/plain"}
    assert "snapshots_every" in repr(mon.snapshots)
    x, y = _data()
    mon.snapshot()
    _step(m, x, y)
    mon.detach()
    mon.snapshots.show()  # no IPython here: one line
    assert capsys.readouterr().out.startswith("<workbench tape series")
    page = mon.snapshots.save(tmp_path / "run.html")
    assert '"series"' in open(page).read()


def _arrays_in(obj, seen=None):
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, (Tensor, np.ndarray, graph.Node)):
        return [obj]
    if isinstance(obj, dict):
        items = list(obj.keys()) + list(obj.values())
    elif isinstance(obj, (list, tuple, set)):
        items = list(obj)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        items = list(vars(obj).values())
    else:
        return []
    return [a for it in items for a in _arrays_in(it, seen)]


def test_no_tensor_array_or_node_outlives_its_step():
    x, y = _data()
    m = MLP()
    stats = GradStats(m, snapshots_every=1)
    for p in m.parameters():
        p.grad = None
    out = m(x)
    loss = mse(out, y)
    refs = [weakref.ref(out), weakref.ref(loss), weakref.ref(loss.grad_fn), weakref.ref(out.grad_fn)]
    loss.backward(retain_graph=True)
    left = sum(len(n._pre_hooks or ()) for n in graph.walk([loss.grad_fn]))  # the gradient hooks are gone
    assert left == 0
    del out, loss
    gc.collect()
    assert all(r() is None for r in refs)
    assert _arrays_in(stats.series.__dict__ | {"model": None}) == []
    stats.detach()


def test_size_budget_20_steps_of_a_2000_node_graph_in_a_saved_notebook():
    nbformat = pytest.importorskip("nbformat")
    wb.manual_seed(0)
    layers = []
    for _ in range(500):  # Linear (weight, bias, linear) + tanh: 4 nodes a layer
        layers += [wb.nn.Linear(4, 4), wb.nn.Tanh()]
    model = wb.nn.Sequential(*layers)
    x = wb.randn(8, 4)
    stats = GradStats(model, snapshots_every=1, histograms=False)
    opt = wb.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(20):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
    stats.detach()
    snaps = wb.viz.Snapshots(stats.series)
    assert len(snaps) == 20 and len(snaps.to_dict()["nodes"]) >= 2000
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("mon.snapshots")
    cell.outputs = [nbformat.v4.new_output("display_data", data=snaps._repr_mimebundle_())]
    nb.cells.append(cell)
    size = len(nbformat.writes(nb).encode())
    assert size <= 5_000_000, f"{size / 1e6:.2f} MB"
    series = json.dumps(snaps.to_dict()["series"])
    assert len(series) < 30 * 20 * 2000  # about 13 bytes a value: 4 significant digits


def _on_device(m, dev):
    for mod in [m.encoder._children["0"], m.head]:
        for k in ("weight", "bias"):
            t = getattr(mod, k).detach().to(dev).requires_grad_()
            mod._params[k] = t
            setattr(mod, k, t)
    return m


@pytest.mark.parametrize("dev", ["fake_cuda"] + (["cuda"] if wb.cuda.is_available() else []))
def test_series_on_a_gpu_device_equals_the_cpu_one(dev, request):
    if dev == "fake_cuda":
        request.getfixturevalue("fake_cuda")
    got = {}
    for where in ("cpu", "cuda"):
        x, y = _data()
        m = _on_device(MLP(), where)
        stats = GradStats(m, snapshots_every=1)
        _step(m, x.to(where), y.to(where))
        x[1, 1] = float("inf")  # the full count's path too
        _step(m, x.to(where), y.to(where))
        stats.detach()
        got[where] = stats.series.to_dict()["series"]
    rows = got["cpu"]["measures"]["grad_norm"]
    assert all(isinstance(v, float) for v in rows[0]) and "NaN" in rows[1]
    assert got["cuda"]["steps"] == got["cpu"]["steps"]
    for key, rows in got["cpu"]["measures"].items():  # real GPUs sum in another order: the 4th digit may differ
        for a, b in zip(rows, got["cuda"]["measures"][key]):
            if all(isinstance(v, float) for v in a):
                assert b == pytest.approx(a, rel=2e-3)
            else:
                assert b == a


def test_a_backward_that_raises_keeps_nothing_of_that_step():
    x, y = _data()
    m = MLP()
    stats = GradStats(m)
    stats.snapshot()
    for p in m.parameters():
        p.grad = None
    loss = mse(m(x), y)
    h = m.head.weight.register_hook(lambda g: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        loss.backward()  # the kept step's backward never reaches its end
    h.remove()
    assert stats.series.pending
    _step(m, x, y)  # step 0, not asked for: the raised pass's numbers must not become it
    assert stats.series.steps == [] and not stats.series.pending
    assert sum(len(n._pre_hooks or ()) for n in graph.walk([loss.grad_fn])) == 0
    stats.snapshot()
    _step(m, x, y)
    stats.detach()
    assert stats.series.steps == [1]
