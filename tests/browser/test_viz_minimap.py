"""The minimap after a selection: whichever way a node is selected and brought into view (a search, a
top-N row, a click), the minimap covers neither it nor its neighbours, and the node stays in view.
Checked on the saved page (``snapshot.save("x.html")``: the viewer without a kernel) of a tape too tall
to fit at a readable scale, so the minimap is up."""
import sys
from pathlib import Path

import pytest

from nbhelp import SELECTED_UNCOVERED

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "viz"))

import workbench as wb  # noqa: E402
from models import mse  # noqa: E402

pytestmark = pytest.mark.browser


@pytest.fixture
def deep_page(browser, tmp_path):
    wb.manual_seed(0)
    deep = wb.nn.Sequential(*[wb.nn.Linear(4, 16 if i == 11 else 4) for i in range(12)])
    loss = mse(deep(wb.randn(4, 4)), wb.zeros(4, 16))
    loss.backward()
    path = wb.viz.snapshot(loss, deep, title="twelve layers", color_by="flops").save(tmp_path / "deep.html")
    page = browser.new_page(viewport={"width": 1100, "height": 800})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(Path(path).as_uri())
    root = page.locator(".wb-root")
    root.locator(".wb-graph .wb-node-box").first.wait_for(timeout=20_000)
    root.locator(".wb-btn", has_text="Expand all").click()
    yield page, root
    assert errors == []
    page.close()


def _settled(page, root):
    page.wait_for_timeout(450)  # the pan animates
    return root.evaluate(SELECTED_UNCOVERED)


def _check(seen, what):
    assert seen is not None and seen["inView"], (what, seen)
    assert seen["under"] == [], f"after {what} the minimap covers {seen['under']} of {seen['near']}"


def test_search_keeps_the_found_node_and_its_neighbours_clear_of_the_minimap(deep_page):
    page, root = deep_page
    search = root.locator(".wb-search")
    shown = 0
    for name in [f"{i}.weight" for i in range(12)] + [f"{i}.bias" for i in range(12)] + ["MseLossBackward0"]:
        search.fill(name)
        search.press("Enter")
        seen = _settled(page, root)
        shown += seen["minimap"]
        _check(seen, f"searching {name}")
    assert shown >= 10  # the minimap was up for most of them: the check had something to check


def test_top_n_rows_and_clicks_keep_the_node_and_its_neighbours_clear_of_the_minimap(deep_page):
    page, root = deep_page
    rows = root.locator(".wb-topn-row")
    for k in range(rows.count()):
        rows.nth(k).click()  # centres the node
        _check(_settled(page, root), f"the top-N row {k + 1}")
    root.locator(".wb-btn[aria-keyshortcuts='f']").click()
    page.wait_for_timeout(450)
    # every node box in view whose centre is clear of the minimap, clicked
    ids = root.evaluate("""(root) => { const c = root.querySelector('.wb-canvas').getBoundingClientRect(),
      m = root.querySelector('.wb-minimap').getBoundingClientRect();
      return [...root.querySelectorAll('.wb-graph .wb-node')].filter((g) => { const r = g.getBoundingClientRect(),
        x = r.left + r.width / 2, y = r.top + r.height / 2;
        return x > c.left && x < c.right && y > c.top + 10 && y < c.bottom - 10 && !(x > m.left && y > m.top); })
        .map((g) => g.getAttribute('data-id')); }""")
    assert len(ids) >= 5
    for node_id in ids[-6:]:  # the lowest ones, next to the minimap
        root.locator(f".wb-graph .wb-node[data-id='{node_id}'] .wb-t-title").click()
        _check(_settled(page, root), f"clicking {node_id}")
