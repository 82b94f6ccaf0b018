"""The live viewer's module boxes, fully expanded: sibling boxes never overlap, a box holds its own nodes
only (nested modules nest), and a module called more than once has one box per call. On a tape big
enough for the linear (layered) layout, the one above DAGRE_LIMIT drawn nodes, and on real models: a GRU
cell applied at 8 and 48 time steps (the linear layout too: dagre's drifts into a staircase of calls), a weight-tied model with a layer
called twice and two ResNet blocks (dagre). Checked in headless Chromium on the saved page (the viewer
without a kernel)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "viz"))

import repeated  # noqa: E402
import workbench as wb  # noqa: E402
from workbench.viz import align  # noqa: E402

pytestmark = pytest.mark.browser

DRAWN = """(root) => ({
  boxes: [...root.querySelectorAll('.wb-graph .wb-cluster-rect')].map((r) => {
    const b = r.getBoundingClientRect();
    return [r.nextElementSibling.getAttribute('data-id'), b.left, b.top, b.right, b.bottom]; }),
  nodes: [...root.querySelectorAll('.wb-graph .wb-nodes [data-id]')].map((g) => {
    const b = g.querySelector('.wb-node-box').getBoundingClientRect();
    return [g.getAttribute('data-id'), b.left, b.top, b.right, b.bottom]; }),
  status: root.querySelector('.wb-status').textContent })"""


def _four_stages():
    wb.manual_seed(0)
    # 4 stages of 60 blocks (Linear + Tanh): 960 nodes, three levels of modules
    model = wb.nn.Sequential(*[wb.nn.Sequential(*[wb.nn.Sequential(wb.nn.Linear(4, 4), wb.nn.Tanh()) for _ in range(60)])
                               for _ in range(4)])
    with wb.viz.record():
        loss = model(wb.randn(2, 4)).sum()
    return loss, model


CASES = {"four-stages": _four_stages, "gru-8-steps": lambda: repeated.gru_loop(8), "weight-tied": repeated.tied,
         "gru-48-steps": lambda: repeated.gru_loop(48), "resnet": repeated.resnet}


@pytest.mark.parametrize("case, theme", [("four-stages", "light"), ("four-stages", "dark"), ("gru-8-steps", "light"),
                                         ("weight-tied", "light"), ("gru-48-steps", "light"), ("resnet", "dark")])
def test_module_boxes_of_an_expanded_tape_nest_and_never_overlap(browser, tmp_path, theme, case):
    loss, model = CASES[case]()
    snap = wb.viz.snapshot(loss, model, title=case)
    d = snap.to_dict()
    # each node's boxes, as the viewer's graph model makes them (align.boxes is its rule); an open series
    # of calls draws no box of its own
    own = {n["id"]: {b[0] for b in c if b[1] != "series"} for n, c in zip(d["nodes"], align.boxes(d))}
    around = {b: set(c[:c.index(b)]) for c in ([b[0] for b in c if b[1] != "series"] for c in align.boxes(d)) for b in c}
    # four-stages is over DAGRE_LIMIT; the GRUs' open calls put them on the linear layout too (SERIES_CALLS):
    # 4 nodes a step (the input's row, two products, the fused cell)
    assert (len(d["nodes"]) > 800) == (case == "four-stages")
    if case.startswith("gru"):
        assert len(d["nodes"]) >= 4 * int(case.split("-")[1])
    page = browser.new_page(viewport={"width": 1200, "height": 900}, color_scheme=theme)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(Path(snap.save(tmp_path / "tape.html")).as_uri())
    root = page.locator(".wb-root")
    root.locator(".wb-graph .wb-box").first.wait_for(timeout=30_000)
    root.locator(".wb-btn", has_text="Expand all").click()
    page.wait_for_function("() => /^\\d+ items shown of/.test(document.querySelector('.wb-status').textContent)"
                           " && document.querySelectorAll('.wb-graph .wb-cluster-rect').length > 0", timeout=60_000)
    page.wait_for_timeout(500)
    drawn = root.evaluate(DRAWN)
    boxes, nodes = {b[0]: b[1:] for b in drawn["boxes"]}, drawn["nodes"]
    assert len(boxes) >= 3 and len(nodes) >= 10, drawn["status"]
    assert set(boxes) <= set(around), set(boxes) - set(around)
    if case.startswith("gru"):
        steps = int(case.split("-")[1])
        calls = [b for b in around if b.startswith("m:cell|")]
        assert len(calls) == steps  # one box per call of the cell
    apart = lambda a, b: a[2] <= b[0] + 0.5 or b[2] <= a[0] + 0.5 or a[3] <= b[1] + 0.5 or b[3] <= a[1] + 0.5  # noqa: E731
    inside = lambda a, b: b[0] - 0.5 <= a[0] and a[2] <= b[2] + 0.5 and b[1] - 0.5 <= a[1] and a[3] <= b[3] + 0.5  # noqa: E731
    for p, a in boxes.items():
        for q, b in boxes.items():
            if q in around[p]:
                assert inside(a, b), f"the box of {p} is not inside {q}"
            elif p != q and p not in around[q]:
                assert apart(a, b), f"the boxes of {p} and {q} overlap"
    for nid, *r in nodes:
        for path, b in boxes.items():
            if path in own[nid]:
                assert inside(r, b), f"node {nid} is outside the box of {path}"
            else:
                assert apart(r, b), f"node {nid} ({sorted(own[nid]) or 'top level'}) is inside the box of {path}"
    page.screenshot(path=str(tmp_path / f"{case}-{theme}.png"))
    assert errors == []
    page.close()
