"""The static SVG fallback: well-formed XML, escaped user strings, readable small, bounded and fast big."""
import time
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
    for label in ("encoder.0.weight", "head.bias", "matmul", "relu", "x", "y", "mean", "[8, 4]"):
        assert label in texts, label
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
    assert "blk.0" in labels and "100 nodes" in labels  # modules collapsed to one box each
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
    for a, b, _ in edges:
        assert a.rank < b.rank
    by_rank = {}
    for u in units:
        by_rank.setdefault(u.rank, []).append(u)
    for lvl in by_rank.values():  # no overlaps within a rank
        lvl.sort(key=lambda u: u.x)
        for p, q in zip(lvl, lvl[1:]):
            assert p.x + p.w <= q.x
