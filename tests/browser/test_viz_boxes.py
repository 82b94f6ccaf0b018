"""The live viewer's module boxes on a tape big enough for its linear (layered) layout, the one above
DAGRE_LIMIT drawn nodes: sibling boxes never overlap, and a box holds its own nodes only (nested modules
nest). Checked in headless Chromium on the saved page (the viewer without a kernel), fully expanded."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "viz"))

import workbench as wb  # noqa: E402

pytestmark = pytest.mark.browser

DRAWN = """(root) => ({
  boxes: [...root.querySelectorAll('.wb-graph .wb-cluster-rect')].map((r) => {
    const b = r.getBoundingClientRect();
    return [r.nextElementSibling.getAttribute('data-id').slice(2), b.left, b.top, b.right, b.bottom]; }),
  nodes: [...root.querySelectorAll('.wb-graph .wb-nodes [data-id]')].map((g) => {
    const b = g.querySelector('.wb-node-box').getBoundingClientRect();
    return [g.getAttribute('data-id'), b.left, b.top, b.right, b.bottom]; }),
  status: root.querySelector('.wb-status').textContent })"""


def _within(scope, path):
    return scope == path or scope.startswith(path + ".")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_module_boxes_of_a_big_expanded_tape_nest_and_never_overlap(browser, tmp_path, theme):
    wb.manual_seed(0)
    # 4 stages of 60 blocks (Linear + Tanh): 960 nodes, three levels of modules
    model = wb.nn.Sequential(*[wb.nn.Sequential(*[wb.nn.Sequential(wb.nn.Linear(4, 4), wb.nn.Tanh()) for _ in range(60)])
                               for _ in range(4)])
    with wb.viz.record():
        loss = model(wb.randn(2, 4)).sum()
    snap = wb.viz.snapshot(loss, model, title="four stages")
    scope = {n["id"]: n["scope"] for n in snap.to_dict()["nodes"]}
    assert len(scope) > 800  # above DAGRE_LIMIT: the layered layout
    page = browser.new_page(viewport={"width": 1200, "height": 900}, color_scheme=theme)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(Path(snap.save(tmp_path / "big.html")).as_uri())
    root = page.locator(".wb-root")
    root.locator(".wb-graph .wb-box").first.wait_for(timeout=30_000)
    root.locator(".wb-btn", has_text="Expand all").click()
    page.wait_for_function("() => /^\\d+ items shown of/.test(document.querySelector('.wb-status').textContent)"
                           " && document.querySelectorAll('.wb-graph .wb-cluster-rect').length > 0", timeout=60_000)
    page.wait_for_timeout(500)
    drawn = root.evaluate(DRAWN)
    boxes, nodes = {b[0]: b[1:] for b in drawn["boxes"]}, drawn["nodes"]
    assert len(boxes) >= 6 and len(nodes) >= 10, drawn["status"]
    apart = lambda a, b: a[2] <= b[0] + 0.5 or b[2] <= a[0] + 0.5 or a[3] <= b[1] + 0.5 or b[3] <= a[1] + 0.5  # noqa: E731
    for p, a in boxes.items():
        for q, b in boxes.items():
            if p < q and not _within(p, q) and not _within(q, p):
                assert apart(a, b), f"the boxes of {p} and {q} overlap"
    for nid, *r in nodes:
        for path, b in boxes.items():
            if not _within(scope[nid], path):
                assert apart(r, b), f"a node of {scope[nid]} is inside the box of {path}"
    page.screenshot(path=str(tmp_path / f"big-{theme}.png"))
    assert errors == []
    page.close()
