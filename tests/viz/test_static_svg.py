"""The static SVG fallback: well-formed XML, escaped user strings, readable small, bounded big."""
import pytest
from xml.etree import ElementTree

import workbench as wb
import repeated
from models import MLP, mse
from workbench.viz import align
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
    for label in ("encoder.0.weight", "head.bias", "MmBackward0", "relu → 8×4", "param 4×3 float32", "x", "y",
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


def test_big_graphs_collapse_and_stay_bounded():
    # (how fast: benchmarks/viewer_speed.py's static_ms)
    snap = _chain(2000)
    root = ElementTree.fromstring(render_svg(snap))
    labels = [t.text for t in root.iter(SVG + "text")]
    assert "▸ blk.0" in labels and "module · 100 nodes" in labels  # modules collapsed to one box each
    units, _, hidden, _ = layout(snap)
    assert len(units) == 20 and hidden == 0
    svg = render_svg(_chain(20000), budget=60)
    assert "more nodes" in svg and len(svg) < 200_000


def test_layout_ranks_follow_edges_and_reduce_crossings():
    snap = _mlp_snapshot().to_dict()
    units, edges, _, _ = layout(snap)
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


def _compare_view():
    m = MLP()
    x, y = wb.randn(8, 3), wb.randn(8, 2)
    a = wb.viz.snapshot(mse(m(x) * 2, y), m, title="before", trace=True)
    b = wb.viz.snapshot(mse(m(x).tanh(), y), m, title="after", trace=True)
    return wb.viz.compare(a, b)


def _deep_snapshot(layers=12):
    wb.manual_seed(0)
    deep = wb.nn.Sequential(*[wb.nn.Linear(4, 4) for _ in range(layers)])
    return wb.viz.snapshot(mse(deep(wb.randn(4, 4)).tanh(), wb.zeros(4, 4)), deep)


def _repeated(make):
    return lambda: wb.viz.snapshot(*make())


@pytest.mark.parametrize("make", [_mlp_snapshot, _gru_snapshot, _nan_snapshot, _compare_view, _deep_snapshot,
                                  _repeated(repeated.gru_loop), _repeated(repeated.tied)],
                         ids=["mlp", "gru", "nan", "compare", "deep", "gru-8-steps", "weight-tied"])
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
    units, edges, _, _ = layout(wb.viz.snapshot(loss).to_dict())
    long = [(a, b, lanes) for a, b, _, lanes in edges if b.rank - a.rank > 1]
    assert long
    for a, b, lanes in long:
        assert [v.rank for v in lanes] == list(range(a.rank + 1, b.rank))
        for v in lanes:
            for u in units:
                if u.rank == v.rank:
                    assert u.x + u.w <= v.x or v.x + v.w <= u.x, f"the lane of {a.label} -> {b.label} crosses {u.label}"


def _rect(el):
    x, y = float(el.get("x")), float(el.get("y"))
    return x, y, x + float(el.get("width")), y + float(el.get("height"))


def _inside(inner, outer):
    return outer[0] <= inner[0] and inner[2] <= outer[2] and outer[1] <= inner[1] and inner[3] <= outer[3]


def _disjoint(a, b):
    return a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]


def _within(scope, path):
    return scope == path or scope.startswith(path + ".")


@pytest.mark.parametrize("make", [_compare_view, _deep_snapshot, _mlp_snapshot, _repeated(repeated.gru_loop),
                                  _repeated(repeated.tied), _repeated(repeated.resnet)],
                         ids=["compare", "deep", "mlp", "gru-8-steps", "weight-tied", "resnet"])
def test_module_boxes_nest_and_hold_their_own_nodes_only(make):
    # every node inside its own boxes and outside all others, every box inside the boxes around it and
    # apart from the rest; a module called more than once has one box per call (align.boxes)
    snap = make().to_dict()
    chains = {n["id"]: [b[0] for b in c if b[1] == "module"] for n, c in zip(snap["nodes"], align.boxes(snap))}
    root = ElementTree.fromstring(render_svg(snap, budget=400, standalone=True))
    boxes = {g.get("data-box"): _rect(g.find(SVG + "rect")) for g in root.iter(SVG + "g") if g.get("class") == "wb-scope"}
    nodes = {g.get("data-node"): _rect(g.find(SVG + "rect")) for g in root.iter(SVG + "g") if g.get("data-node")}
    assert len(boxes) >= 2 and len(nodes) == len(snap["nodes"])
    assert set(boxes) == {b for c in chains.values() for b in c}
    around = {b: set(c[:c.index(b)]) for c in chains.values() for b in c}
    for p, a in boxes.items():
        for q, b in boxes.items():
            if q in around[p]:
                assert _inside(a, b), f"{p} is not inside {q}"
            elif p != q and p not in around[q]:
                assert _disjoint(a, b), f"the boxes of {p} and {q} overlap"
    for nid, r in nodes.items():
        for path, b in boxes.items():
            if path in chains[nid]:
                assert _inside(r, b), f"node {nid} is outside the box of {path}"
            else:
                assert _disjoint(r, b), f"node {nid} ({chains[nid] or 'top level'}) is inside the box of {path}"


def test_a_module_called_in_a_loop_has_a_box_per_call_and_its_parameters_once():
    snap = wb.viz.snapshot(*repeated.gru_loop(8)).to_dict()
    root = ElementTree.fromstring(render_svg(snap, budget=400, standalone=True))
    labels = [g.find(SVG + "text").text for g in root.iter(SVG + "g") if g.get("class") == "wb-scope"]
    assert [t for t in labels if t.startswith("cell")] == [f"cell · call {k}/8 (GRUCell)" for k in range(1, 9)]
    # open, the calls read down one column: each one's box starts where the one before starts
    lefts = [float(g.find(SVG + "rect").get("x")) for g in root.iter(SVG + "g")
             if g.get("class") == "wb-scope" and g.find(SVG + "text").text.startswith("cell")]
    assert max(lefts) - min(lefts) < 1, lefts
    params = [t.text for g in root.iter(SVG + "g") if g.get("class") == "wb-param" for t in g.iter(SVG + "text")][::2]
    assert sorted(params) == ["cell.bias_hh", "cell.bias_ih", "cell.weight_hh", "cell.weight_ih", "head.bias", "head.weight"]
    # collapsed (a budget under the graph's 42 nodes: 2 products and the fused cell a call), one box per call in
    # a column, then the head
    assert len(snap["nodes"]) > 30
    units, edges, hidden, _ = layout(snap, budget=30)
    # every edge runs down, also from a shared parameter recorded after the first call's first op
    assert all(a.rank < b.rank for a, b, _, _ in edges), [(a.label, b.label) for a, b, _, _ in edges if a.rank >= b.rank]
    calls = sorted((u for u in units if u.label.startswith("▸ cell")), key=lambda u: u.rank)
    assert [u.label for u in calls] == [f"▸ cell · call {k}/8" for k in range(1, 9)] and hidden == 0
    assert [u.rank for u in calls] == list(range(calls[0].rank, calls[0].rank + 8))
    # in one column (the lanes of the shared weights' edges put calls 7 and 8 left of 1-6)
    assert len({u.x + u.w / 2 for u in calls}) == 1, [(u.label, u.x) for u in calls]


def _path_points(d, n=24):
    """Points along an SVG path of M, L and cubic C commands (absolute), n per curve."""
    toks = d.replace(",", " ").replace("M", " M ").replace("L", " L ").replace("C", " C ").split()
    pts, i, cur = [], 0, None
    while i < len(toks):
        op = toks[i]
        if op in "ML":
            cur = (float(toks[i + 1]), float(toks[i + 2]))
            pts.append(cur)
            i += 3
        else:
            (x1, y1), (x2, y2), (x3, y3) = [(float(toks[i + 1 + 2 * k]), float(toks[i + 2 + 2 * k])) for k in range(3)]
            x0, y0 = cur
            for k in range(1, n + 1):
                t = k / n
                c = 1 - t
                pts.append((c ** 3 * x0 + 3 * c * c * t * x1 + 3 * c * t * t * x2 + t ** 3 * x3,
                            c ** 3 * y0 + 3 * c * c * t * y1 + 3 * c * t * t * y2 + t ** 3 * y3))
            cur = (x3, y3)
            i += 7
    return pts


@pytest.mark.parametrize("make", [_compare_view, _nan_snapshot], ids=["compare", "nan"])
def test_badges_sit_clear_of_the_edges(make):
    root = ElementTree.fromstring(make().svg(standalone=True))
    badges = [_rect(r) for r in root.iter(SVG + "rect") if r.get("class") == "wb-badge"]
    assert badges
    points = [p for path in root.iter(SVG + "path") if path.get("marker-end") for p in _path_points(path.get("d"))]
    for b in badges:
        hits = [p for p in points if b[0] < p[0] < b[2] and b[1] < p[1] < b[3]]
        assert not hits, f"an edge runs through the badge at {b}: {hits[:3]}"
