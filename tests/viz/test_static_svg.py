"""The static SVG fallback: well-formed XML, escaped user strings, readable small, bounded and fast big."""
import time

import pytest
from xml.etree import ElementTree

import workbench as wb
from models import MLP, mse
from workbench.viz.static_svg import layout, render_svg

SVG = "{http://www.w3.org/2000/svg}"


def _mlp_snapshot(name="encoder"):
    m = MLP(name=name)
    x, y = wb.randn(8, 3), wb.randn(8, 2)
    with wb.viz.record():
        loss = mse(m(x), y)
    loss.backward(retain_graph=True)
    return wb.viz.snapshot(loss, m)


def test_mlp_svg_is_xml_with_every_node():
    snap = _mlp_snapshot()
    root = ElementTree.fromstring(snap.svg(standalone=True))
    texts = [t.text for t in root.iter(SVG + "text")]
    # the viewer's words and shapes: node names, "op → shape", "param 4×3 float32", scalars as "scalar"
    for label in ("encoder.0.weight", "head.bias", "MatmulBackward0", "relu → 8×4", "param 4×3 float32", "x", "y",
                  "8×4"):
        assert label in texts, label
    assert any(t.startswith("mean → scalar") for t in texts)
    assert not any("[" in t for t in texts)
    assert len(list(root.iter(SVG + "rect"))) >= len(snap.to_dict()["nodes"])
    assert 'stroke="currentColor"' in snap.svg()


def test_malicious_module_name_is_escaped_text():
    evil = "<img src=x onerror=alert(1)>"
    snap = _mlp_snapshot(name=evil)
    html = snap._repr_mimebundle_()["text/html"]
    assert "<img" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    root = ElementTree.fromstring(html)
    assert any(t.text and evil in t.text for t in root.iter(SVG + "text")) or \
        any(evil in (t.text or "") for t in root.iter(SVG + "title"))


def test_nan_inf_and_cut_marks():
    x = wb.tensor([1.0, 0.0], requires_grad=True)
    with wb.viz.record():
        y = wb.log(x)
        z = (y.detach() * x).sum() + y.sum()
    svg = wb.viz.snapshot(z, trace=True).svg()
    assert ">Inf<" in svg and "✂ detach" in svg and "#d32f2f" in svg or "#ef6c00" in svg


def _chain(n):
    """A synthetic tape.v1 with n nodes in modules blk.<k>.<j> (as a transformer's blocks)."""
    nodes, edges = [], []
    for i in range(n):
        nodes.append({"id": f"n{i}", "kind": "op", "op": "add", "name": "AddBackward0",
                      "scope": f"blk.{i // 100}.{(i // 10) % 10}", "group": None, "site": None, "shape": [4],
                      "dtype": "float32", "device": "cpu", "param": None, "saved": [], "value": None, "grad": None,
                      "cut": None})
        if i:
            edges.append({"source": f"n{i - 1}", "target": f"n{i}", "index": 0, "shape": [4], "dtype": "float32"})
            if i > 5:
                edges.append({"source": f"n{i - 5}", "target": f"n{i}", "index": 1, "shape": [4], "dtype": "float32"})
    return {"title": "big", "nodes": nodes, "edges": edges, "modules": []}


def test_big_graphs_collapse_and_stay_bounded_and_fast():
    snap = _chain(2000)
    t = time.perf_counter()
    svg = render_svg(snap)
    assert time.perf_counter() - t < 1.0
    root = ElementTree.fromstring(svg)
    labels = [t.text for t in root.iter(SVG + "text")]
    assert "▸ blk.0" in labels and "module · 100 nodes" in labels  # modules collapsed to one box each
    units, _, hidden = layout(snap)
    assert len(units) == 20 and hidden == 0
    huge = _chain(20000)
    t = time.perf_counter()
    svg = render_svg(huge, budget=60)
    assert time.perf_counter() - t < 3.0
    assert "more nodes" in svg and len(svg) < 200_000


def test_layout_ranks_follow_edges_and_reduce_crossings():
    snap = _mlp_snapshot().to_dict()
    units, edges, _ = layout(snap)
    for a, b, *_ in edges:
        assert a.rank < b.rank
    by_rank = {}
    for u in units:
        by_rank.setdefault(u.rank, []).append(u)
    for lvl in by_rank.values():  # no overlaps within a rank
        lvl.sort(key=lambda u: u.x)
        for p, q in zip(lvl, lvl[1:]):
            assert p.x + p.w <= q.x


def _text_boxes(svg):
    """(x0, y0, x1, y1, text) of every <text>, from its position, anchor and font size (monospace: 0.6 em wide)."""
    boxes = []
    for t in ElementTree.fromstring(svg).iter(SVG + "text"):
        size = float(t.get("font-size", 11))
        w = len(t.text or "") * size * 0.6
        x, y = float(t.get("x")), float(t.get("y"))
        x0 = x - w / 2 if t.get("text-anchor") == "middle" else x
        boxes.append((x0, y - size * 0.8, x0 + w, y + size * 0.2, t.text))
    return boxes


def _gru_snapshot():
    class Net(wb.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = wb.nn.GRU(4, 8)
            self.head = wb.nn.Linear(8, 1)

        def forward(self, x):
            out, _ = self.rnn(x)
            return self.head(out[-1])

    net = Net()
    with wb.viz.record():
        loss = net(wb.randn(3, 2, 4)).pow(2).mean()
    return wb.viz.snapshot(loss, net)


def _nan_snapshot():
    x = wb.tensor([1.0, 0.0], requires_grad=True)
    with wb.viz.record():
        y = wb.log(x)
        z = (y.detach() * x).sum() + y.sum() + (x * x).sum() * (x + 1).sum()
    return wb.viz.snapshot(z, trace=True)


@pytest.mark.parametrize("make", [_mlp_snapshot, _gru_snapshot, _nan_snapshot], ids=["mlp", "gru", "nan"])
def test_no_label_overlaps_another(make):
    boxes = _text_boxes(make().svg(standalone=True))
    assert len(boxes) > 10
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            overlap = a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5
            assert not overlap, f"{a[4]!r} overlaps {b[4]!r}"


def test_long_edges_run_in_lanes_of_their_own():
    # the debugging notebook's BCE: p feeds log(p) and (1 - p), so an edge skips a rank
    p = wb.randn(16, requires_grad=True).sigmoid()
    y = (wb.randn(16) > 0).float()
    loss = -(y * p.log() + (1 - y) * (1 - p).log()).mean()
    units, edges, _ = layout(wb.viz.snapshot(loss).to_dict())
    long = [(a, b, lanes) for a, b, _, lanes in edges if b.rank - a.rank > 1]
    assert long
    for a, b, lanes in long:
        assert [v.rank for v in lanes] == list(range(a.rank + 1, b.rank))
        for v in lanes:
            for u in units:
                if u.rank == v.rank:
                    assert u.x + u.w <= v.x or v.x + v.w <= u.x, f"the lane of {a.label} -> {b.label} crosses {u.label}"
