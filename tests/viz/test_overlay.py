"""Colouring the tape by a measure: the measures read from a snapshot, color_by=, and the static SVG's
coloured boxes, legend and top-N table (what nbconvert and GitHub show)."""
import re
from xml.etree import ElementTree

import pytest

import workbench as wb
from models import MLP, mse
from workbench.viz import measures
from workbench.viz.static_svg import render_svg

SVG = "{http://www.w3.org/2000/svg}"


def _loss():
    m = MLP()
    x, y = wb.randn(8, 3), wb.randn(8, 2)
    with wb.viz.record():
        loss = mse(m(x), y)
    loss.backward(retain_graph=True)
    return loss, m


def test_measures_read_node_fields_and_the_snapshots_own(validate):
    loss, m = _loss()
    d = wb.viz.snapshot(loss, m).to_dict()
    by_id = {n["id"]: n for n in d["nodes"]}
    flops = measures.measure(d, "flops")
    assert flops.unit == "FLOP" and flops.aggregate == "sum"
    assert flops.values == {i: n["flops"] for i, n in by_id.items()}
    grad = measures.measure(d, "grad_norm")
    assert grad.aggregate == "max"
    assert all(v == (by_id[i]["grad"] or {}).get("norm") for i, v in grad.values.items())
    assert any(v is not None for v in grad.values.values())
    assert set(measures.measure(d, "forward_us").values.values()) == {None}  # not profiled
    d["measures"] = {"r": {"label": "ratio", "unit": "", "scale": "ratio", "values": {d["nodes"][3]["id"]: 2.0}}}
    d["overlay"] = "r"
    validate(d)
    assert measures.known(d)[-1] == "r"
    r = measures.measure(d, "r")
    assert r.values[d["nodes"][3]["id"]] == 2.0 and r.values[d["nodes"][0]["id"]] is None


def test_aggregates_formats_and_scales():
    m = measures.Measure("r", "r", "", "ratio", "max", {"a": 1.5, "b": 0.25, "c": None})
    assert measures.aggregate(m, ["a", "b", "c"]) == 0.25  # the farthest from 1
    s = measures.Measure("f", "f", "FLOP", "log", "sum", {"a": 3, "b": None, "c": 4})
    assert measures.aggregate(s, ["a", "b", "c"]) == 7 and measures.aggregate(s, ["b"]) is None
    assert [measures.format_value(v, u) for v, u in ((512, "B"), (3 * 1024 ** 2, "B"), (192, "FLOP"), (4.2e7, "FLOP"),
                                                     (840, "us"), (2.5e6, "us"), (0.5, ""))] == \
        ["512 B", "3.00 MiB", "192 FLOP", "42.0 MFLOP", "840 µs", "2.5 s", "0.5"]
    assert measures.format_value(2.0, "", "ratio") == "2×"
    sc = measures.Scale("ratio", [4.0, 0.5, 1.0, None])
    assert sc.missing == 1 and sc.hi == pytest.approx(4.0)
    (up, mu), (down, md) = sc.tint(4.0), sc.tint(0.25)
    assert up == measures.RED and down == measures.BLUE and mu == md == measures.MIX_HI
    assert sc.tint(1.0)[1] == measures.MIX_NEUTRAL
    lin = measures.Scale("linear", [1.0, 3.0])
    assert lin.tint(1.0)[1] == measures.MIX_LO and lin.tint(3.0)[1] == measures.MIX_HI


def test_color_by_is_validated_and_stored(validate):
    loss, m = _loss()
    snap = wb.viz.snapshot(loss, m, color_by="saved_bytes")
    assert validate(snap)["overlay"] == "saved_bytes"
    assert wb.viz.snapshot(loss, m).to_dict()["overlay"] is None
    with pytest.raises(ValueError, match=r"snapshot\(\): unknown measure 'flop' for color_by; valid measures: "
                                         r"grad_norm, value_norm, flops, saved_bytes, forward_us, backward_us"):
        wb.viz.snapshot(loss, m, color_by="flop")
    with pytest.raises(ValueError, match="unknown measure"):
        wb.viz.show(loss, m, color_by="gradnorm")
    with pytest.raises(ValueError, match=r"debug\(\): unknown measure 7"):
        wb.viz.debug(loss, m, color_by=7, display=False)
    dbg = wb.viz.debug(loss, m, color_by="flops", display=False)
    assert dbg.snapshot["overlay"] == dbg.stepper.replay_snapshot()["overlay"] == "flops"


def _fills(svg):
    """(fill, tooltip) of every drawn box."""
    root = ElementTree.fromstring(svg)
    out = []
    for g in root.iter(SVG + "g"):
        title, rect = g.find(SVG + "title"), g.find(SVG + "rect")
        if title is not None and rect is not None and g.get("class") not in ("wb-legend", "wb-scope"):
            out.append((rect.get("fill"), title.text))
    return out


def test_static_svg_colours_boxes_with_a_legend_and_a_top_table():
    loss, m = _loss()
    d = wb.viz.snapshot(loss, m, color_by="flops").to_dict()
    svg = render_svg(d, standalone=True)
    fills = _fills(svg)
    top = max((n for n in d["nodes"] if n["flops"] is not None), key=lambda n: n["flops"])
    # the most expensive node has the strongest colour of the ramp; nodes without FLOPs keep a plain box
    assert [f for f, tip in fills if f"FLOPs: {top['flops']} FLOP" in tip] == \
        [measures.rgba((measures.RAMP[-1], measures.MIX_HI))]
    param = next((f, tip) for f, tip in fills if tip.startswith("weight") and "encoder.0" in tip)
    assert param[0] == "rgba(128,128,128,0.06)" and "FLOPs: n/a" in param[1]
    legend = ElementTree.fromstring(svg).find(f".//{SVG}g[@class='wb-legend']")
    words = [t.text for t in legend.iter(SVG + "text")]
    lo = min(n["flops"] for n in d["nodes"] if n["flops"])
    assert words[0] == "colour: FLOPs (log scale)" and words[1] == f"{lo} FLOP" and words[2] == f"{top['flops']} FLOP"
    nulls = sum(n["flops"] is None for n in d["nodes"])
    zeros = sum(n["flops"] == 0 for n in d["nodes"])
    assert f"n/a ({nulls})" in words and f"0 ({zeros})" in words
    html = render_svg(d)
    rows = re.findall(r"<tr><td[^>]*>(\d+)</td>.*<td[^>]*>([^<]+)</td></tr>", html.replace("<tr>", "\n<tr>"))
    values = [n["flops"] for n in d["nodes"] if n["flops"] is not None]
    assert [int(k) for k, _ in rows] == list(range(1, 11))
    assert [int(v.split()[0]) for _, v in rows] == sorted(values, reverse=True)[:10]
    assert f"Top 10 by FLOPs, of {len(values)} nodes with a value, {nulls} n/a" in html
    assert "wb-legend" not in render_svg(wb.viz.snapshot(loss, m).to_dict())


def test_static_svg_collapsed_module_shows_its_sum():
    loss, m = _loss()
    d = wb.viz.snapshot(loss, m, color_by="saved_bytes").to_dict()
    svg = render_svg(d, budget=6, standalone=True)
    head = next(v for v in _fills(svg) if v[1].startswith("▸ head:"))
    total = next(mod["saved_bytes"] for mod in d["modules"] if mod["path"] == "head")
    assert f"saved for backward: {measures.format_value(total, 'B')}" in head[1]
    assert head[0].startswith("rgba(")


def test_static_svg_ratio_overlay_and_all_missing():
    loss, m = _loss()
    d = wb.viz.snapshot(loss, m).to_dict()
    ids = [n["id"] for n in d["nodes"]]
    d["measures"] = {"grad_norm_ratio": {"label": "gradient norm ratio", "unit": "", "scale": "ratio",
                                         "values": {ids[-1]: 4.0, ids[-2]: 0.5}}}
    d["overlay"] = "grad_norm_ratio"
    words = [t.text for t in ElementTree.fromstring(render_svg(d, standalone=True)).iter(SVG + "text")]
    assert "colour: gradient norm ratio (log₂ scale)" in words and "0.25×" in words and "4×" in words
    d["overlay"] = "forward_us"
    svg = render_svg(d, standalone=True)
    assert f"n/a: all {len(_fills(svg))}" in svg
