"""wb.viz.compare(a, b): the union of two tapes, added/removed nodes, norm ratios, both sides per node."""
import copy
import math

import numpy as np
import pytest

import workbench as wb

nn = wb.nn


def _mlp(*sizes, act=nn.ReLU, seed=0):
    wb.manual_seed(seed)
    layers = []
    for i, o in zip(sizes, sizes[1:]):
        layers += [nn.Linear(i, o), act()]
    return nn.Sequential(*layers[:-1])


def _step(net, x, y):
    net.zero_grad()
    loss = ((net(x) - y) ** 2).mean()
    loss.backward()
    snap = wb.viz.snapshot(loss, net)
    grads = {k: p.grad.numpy().copy() for k, p in net.named_parameters()}
    weights = {k: p.detach().numpy().copy() for k, p in net.named_parameters()}
    return snap, grads, weights


def _by(d, side):
    return {v["id"]: k for k, v in d["compare"][side]["nodes"].items()}


def test_same_model_two_steps(validate):
    net, x, y = _mlp(3, 8, 2), wb.randn(16, 3), wb.randn(16, 2)
    opt = wb.optim.SGD(net.parameters(), lr=0.5)
    a, ga, wa = _step(net, x, y)
    opt.step()
    b, gb, wb_ = _step(net, x, y)
    d = validate(wb.viz.compare(a, b, title="steps 0 -> 1"))
    assert d["title"] == "steps 0 -> 1"
    assert len(d["nodes"]) == len(a.to_dict()["nodes"]) == len(b.to_dict()["nodes"])
    assert all(n["diff"] is None for n in d["nodes"])
    assert d["compare"]["counts"]["added"] == d["compare"]["counts"]["removed"] == 0
    assert d["overlay"] == "grad_norm_ratio"
    g_ratio, v_ratio = d["measures"]["grad_norm_ratio"], d["measures"]["value_norm_ratio"]
    assert g_ratio["scale"] == v_ratio["scale"] == "ratio"
    params = {n["param"]: n["id"] for n in d["nodes"] if n["kind"] == "param"}
    assert sorted(params) == sorted(ga)
    for path, nid in params.items():  # against the norms computed here from the tensors themselves
        assert g_ratio["values"][nid] == pytest.approx(np.linalg.norm(gb[path]) / np.linalg.norm(ga[path]), rel=1e-4)
        assert v_ratio["values"][nid] == pytest.approx(np.linalg.norm(wb_[path]) / np.linalg.norm(wa[path]), rel=1e-4)
        side_a, side_b = d["compare"]["a"]["nodes"][nid], d["compare"]["b"]["nodes"][nid]
        assert side_a["grad"]["norm"] == pytest.approx(float(np.linalg.norm(ga[path])), rel=1e-4)
        assert side_b["grad"]["norm"] == pytest.approx(float(np.linalg.norm(gb[path])), rel=1e-4)
    # the node fields are b's
    assert d["nodes"][0]["value"] == b.to_dict()["nodes"][0]["value"]
    assert d["compare"]["a"]["title"] == a.to_dict()["title"]
    changed = sum(1 for k, r in g_ratio["values"].items() if r is not None and (r > 2 or r < 0.5))
    assert d["compare"]["counts"]["changed"] >= changed


def test_extra_layer_adds_exactly_its_nodes(validate):
    x, y = wb.randn(4, 3), wb.randn(4, 2)
    a, _, _ = _step(_mlp(3, 5, 2), x, y)
    b, _, _ = _step(_mlp(3, 5, 5, 2), x, y)
    d = validate(wb.viz.compare(a, b))
    added = [n for n in d["nodes"] if n["diff"] == "added"]
    assert {(n["scope"], n["op"] if n["kind"] != "param" else n["param"]) for n in added} == \
        {("3", "relu"), ("4", "linear"), ("4", "4.weight"), ("4", "4.bias")}
    assert not [n for n in d["nodes"] if n["diff"] == "removed"]
    assert d["compare"]["counts"] == {"added": 4, "removed": 0, "changed": d["compare"]["counts"]["changed"]}
    for n in added:  # only b has them: no a side, no ratio
        assert n["id"] not in d["compare"]["a"]["nodes"] and n["id"] in d["compare"]["b"]["nodes"]
        assert d["measures"]["grad_norm_ratio"]["values"][n["id"]] is None
    # the other way round, they are removed, and carry a's fields
    r = validate(wb.viz.compare(b, a))
    removed = [n for n in r["nodes"] if n["diff"] == "removed"]
    assert len(removed) == 4 and r["compare"]["counts"]["removed"] == 4
    bd = b.to_dict()
    src = {n["id"]: n for n in bd["nodes"]}
    for n in removed:
        orig = src[r["compare"]["a"]["nodes"][n["id"]]["id"]]
        assert (n["op"], n["scope"], n["shape"], n["value"]) == (orig["op"], orig["scope"], orig["shape"], orig["value"])
    # a's edges into and out of the removed layer are drawn, so it hangs where it was
    rid = {n["id"] for n in removed}
    assert any(e["source"] in rid and e["target"] not in rid for e in r["edges"])


def test_changed_code_path(validate):
    x, y = wb.randn(4, 3), wb.randn(4, 2)
    a, _, _ = _step(_mlp(3, 5, 2, act=nn.ReLU), x, y)
    b, _, _ = _step(_mlp(3, 5, 2, act=nn.Tanh), x, y)
    d = validate(wb.viz.compare(a, b))
    diff = {(n["diff"], n["op"]) for n in d["nodes"] if n["diff"]}
    assert diff == {("removed", "relu"), ("added", "tanh")}
    ids = [n["id"] for n in d["nodes"]]
    relu = next(n for n in d["nodes"] if n["op"] == "relu")
    tanh = next(n for n in d["nodes"] if n["op"] == "tanh")
    assert relu["scope"] == tanh["scope"] == "1"
    # the removed relu sits between the first linear and the second, as it did in a
    lin = [n["id"] for n in d["nodes"] if n["op"] == "linear"]
    assert ids.index(lin[0]) < ids.index(relu["id"]) < ids.index(lin[1])
    assert {(e["source"], e["target"]) for e in d["edges"]} >= {(lin[0], relu["id"]), (relu["id"], lin[1])}
    # a removed node in a call b also has joins that call's group (b's call numbering)
    assert relu["calls"] == tanh["calls"]


def test_ratios_at_zero_nan_and_missing(validate):
    w = wb.tensor([1.0, 2.0], requires_grad=True)
    (w * 2).sum().backward()
    base = wb.viz.snapshot((w * 2).sum()).to_dict()
    a, b = copy.deepcopy(base), copy.deepcopy(base)
    leaf = next(i for i, n in enumerate(base["nodes"]) if n["kind"] == "leaf")
    a["nodes"][leaf]["grad"]["norm"] = 0.0
    d = validate(wb.viz.compare(a, b))
    nid = f"n{leaf}"
    # infinite (0 in a): no colour value (measures hold JSON numbers), but counted as changed; the
    # panel says "∞ (0 in a)" from both sides' norms, which compare keeps
    assert d["measures"]["grad_norm_ratio"]["values"][nid] is None
    assert d["compare"]["counts"]["changed"] == 1
    assert d["compare"]["a"]["nodes"][nid]["grad"]["norm"] == 0 and d["compare"]["b"]["nodes"][nid]["grad"]["norm"] > 0
    b["nodes"][leaf]["grad"]["norm"] = 0.0
    assert wb.viz.compare(a, b).to_dict()["measures"]["grad_norm_ratio"]["values"][nid] is None  # 0/0
    a["nodes"][leaf]["grad"]["norm"] = 4.0
    assert wb.viz.compare(a, b).to_dict()["measures"]["grad_norm_ratio"]["values"][nid] == 0.0
    b["nodes"][leaf]["grad"]["norm"] = 8.0
    b["nodes"][leaf]["grad"]["nan"] = 1  # the norm of the finite elements says nothing then
    assert wb.viz.compare(a, b).to_dict()["measures"]["grad_norm_ratio"]["values"][nid] is None
    b["nodes"][leaf]["grad"] = None
    assert wb.viz.compare(a, b).to_dict()["measures"]["grad_norm_ratio"]["values"][nid] is None
    assert wb.viz.compare(a, b).to_dict()["measures"]["value_norm_ratio"]["values"][nid] == pytest.approx(1.0)
    assert not math.isnan(wb.viz.compare(base, base).to_dict()["measures"]["value_norm_ratio"]["values"][nid])


def test_a_module_called_once_less():
    net = nn.Sequential(nn.Linear(2, 2))
    x = wb.ones(1, 2)
    a = wb.viz.snapshot(net(net(x)).sum(), net).to_dict()
    b = wb.viz.snapshot(net(x).sum(), net).to_dict()
    d = wb.viz.compare(a, b).to_dict()
    removed = [n for n in d["nodes"] if n["diff"] == "removed"]
    assert [n["op"] for n in removed] == ["linear"]
    b_calls = {c for n in b["nodes"] for c in n.get("calls") or ()}
    assert removed[0]["calls"][0] not in b_calls  # its own call box, not merged into b's call


def test_bad_inputs():
    w = wb.ones(2, requires_grad=True)
    snap = wb.viz.snapshot((w * 2).sum())
    with pytest.raises(TypeError, match=r"compare\(\): a must be a Snapshot .*got Tensor.*wb.viz.snapshot"):
        wb.viz.compare((w * 2).sum(), snap)
    with pytest.raises(TypeError, match=r"b must be .*got int"):
        wb.viz.compare(snap, 3)
    with pytest.raises(ValueError, match=r"b is a dict but not a tape.v1 snapshot \(format 'workbench.monitor'"):
        wb.viz.compare(snap, {"format": "workbench.monitor", "nodes": []})
    with pytest.raises(ValueError, match="tape version 2"):
        wb.viz.compare(dict(snap.to_dict(), version=2), snap)
    with pytest.raises(ValueError, match="already a comparison"):
        wb.viz.compare(wb.viz.compare(snap, snap), snap)


def test_text_and_svg_say_the_diff():
    x, y = wb.randn(4, 3), wb.randn(4, 2)
    a, _, _ = _step(_mlp(3, 5, 2, act=nn.ReLU), x, y)
    b, _, _ = _step(_mlp(3, 5, 2, act=nn.Tanh), x, y)
    cmp = wb.viz.compare(a, b)
    assert "1 added, 1 removed" in repr(cmp)
    svg = cmp.svg()
    assert "+ added" in svg and "− removed" in svg
    assert 'class="wb-op wb-removed" opacity="0.7"' in svg and 'class="wb-op wb-added"' in svg
    assert "1 added, 1 removed" in svg and "only in b (bold outline)" in svg  # the legend, in words


def test_two_kept_steps_of_a_watched_run(validate):
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    opt = wb.optim.SGD(model.parameters(), lr=0.5)
    mon = wb.viz.watch(model, snapshots_every=1, display=False)
    for _ in range(3):
        opt.zero_grad()
        (model(wb.randn(2, 3)) ** 2).sum().backward()
        opt.step()
    mon.detach()
    snaps = mon.snapshots
    d = validate(wb.viz.compare(snaps[0], snaps[-1]))
    assert d["compare"]["counts"]["added"] == d["compare"]["counts"]["removed"] == 0
    first, last = snaps[0].to_dict()["nodes"], snaps[-1].to_dict()["nodes"]
    w = next(i for i, n in enumerate(first) if n.get("param") == "0.weight")
    assert d["measures"]["grad_norm_ratio"]["values"][f"n{w}"] == pytest.approx(
        last[w]["grad"]["norm"] / first[w]["grad"]["norm"])
    with pytest.raises(ValueError, match=r"a holds 3 kept steps .*mon.snapshots\[0\], mon.snapshots\[-1\]"):
        wb.viz.compare(snaps, snaps[0])
