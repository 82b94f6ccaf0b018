"""The kernel-free drawing of a tape (the ``text/html`` that nbconvert, VS Code, GitHub and nbviewer show)
opens on what matters, as the live viewer does: a tape that fits at a readable scale is shown whole; a
taller one opens at its loss (where backward starts), or at compare's added and removed nodes, and the
title, notes and legend stay above the drawing's box. Checked in headless Chromium on the HTML itself."""
import sys
from pathlib import Path

import pytest

from nbhelp import STATIC_IN_VIEW

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "viz"))

import workbench as wb  # noqa: E402
from models import mse  # noqa: E402

pytestmark = pytest.mark.browser


def _deep(layers):
    wb.manual_seed(0)
    return wb.nn.Sequential(*[wb.nn.Linear(4, 4) for _ in range(layers)])


def _show(browser, html, theme="light"):
    page = browser.new_page(viewport={"width": 1100, "height": 900}, color_scheme=theme)
    page.set_content(f"<!doctype html><html><body style='margin:16px; font: 13px sans-serif'>{html}</body></html>")
    return page


def _view(page):
    return page.locator(".wb-static-tape").first.evaluate(STATIC_IN_VIEW)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_tall_tape_opens_at_its_loss(browser, theme):
    deep = _deep(12)
    snap = wb.viz.snapshot(mse(deep(wb.randn(4, 4)).tanh(), wb.zeros(4, 4)), deep, title="twelve layers")
    page = _show(browser, snap._repr_mimebundle_()["text/html"], theme)
    v = _view(page)
    assert v["scrolls"], v  # too tall to show whole at a readable scale
    assert v["targets"] == ["output"] and v["hidden"] == [], v
    assert v["scale"] >= 0.8 and v["headerInView"], v
    page.close()


def test_a_tape_that_fits_at_a_readable_scale_is_shown_whole(browser):
    deep = _deep(3)  # each layer a band of two rows in its own box
    snap = wb.viz.snapshot(mse(deep(wb.randn(4, 4)), wb.zeros(4, 4)), deep, title="three layers")
    page = _show(browser, snap._repr_mimebundle_()["text/html"])
    v = _view(page)
    assert not v["scrolls"] and v["hidden"] == [] and v["scale"] >= 0.8, v
    page.close()


def _compare(where):
    deep = _deep(12)
    x, y = wb.randn(4, 4), wb.zeros(4, 4)
    def run(first, last):
        h = first(deep[0](x))  # what follows the first layer: near the top of a tall tape
        for layer in list(deep)[1:]:
            h = layer(h)
        return mse(last(h), y)

    same = lambda v: v  # noqa: E731
    if where == "end":  # the last op changed: tanh became sigmoid
        a, b = wb.viz.snapshot(run(same, wb.tanh), deep, title="a"), wb.viz.snapshot(run(same, wb.sigmoid), deep, title="b")
    else:  # the first layer's activation changed
        a, b = wb.viz.snapshot(run(wb.tanh, same), deep, title="a"), wb.viz.snapshot(run(wb.sigmoid, same), deep, title="b")
    return wb.viz.compare(a, b)


@pytest.mark.parametrize("where", ["end", "start"])
def test_compare_opens_at_its_added_and_removed_nodes(browser, where):
    page = _show(browser, _compare(where)._repr_mimebundle_()["text/html"])
    v = _view(page)
    assert v["scrolls"], v
    assert sorted(v["targets"]) == ["added", "removed"] and v["hidden"] == [], v
    assert v["headerInView"], v
    page.close()


# where a link's target is, in the drawing's scroll box: fully in view or not
TARGET_IN_VIEW = """(a) => { const g = document.getElementById(a.getAttribute('href').slice(1));
  const box = g.closest('.wb-static-graph').getBoundingClientRect(), r = g.querySelector('rect').getBoundingClientRect();
  return r.top >= box.top - 1 && r.bottom <= box.bottom + 1 && r.left >= box.left - 1 && r.right <= box.right + 1; }"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_tall_drawing_links_to_each_mark_at_either_end(browser, theme):
    # the marks near the top (the first layer's activation changed), the loss at the bottom: one click each
    page = _show(browser, _compare("start")._repr_mimebundle_()["text/html"], theme)
    links = page.locator(".wb-static-jump a")
    texts = links.all_inner_texts()
    assert [t.split()[0] for t in texts] == ["−", "+", "loss"], texts  # top to bottom
    assert _view(page)["scrolls"]
    seen = [links.nth(k).evaluate(TARGET_IN_VIEW) for k in range(len(texts))]
    assert seen.count(False) >= 1, seen  # one end is out of view as it opens...
    for k in [2, 0, 1, 2]:
        links.nth(k).click()
        assert links.nth(k).evaluate(TARGET_IN_VIEW), texts[k]  # ...and each mark one click away
    page.close()


def test_a_drawing_shown_whole_has_no_jump_links(browser):
    deep = _deep(3)
    snap = wb.viz.snapshot(mse(deep(wb.randn(4, 4)), wb.zeros(4, 4)), deep, title="three layers")
    page = _show(browser, snap._repr_mimebundle_()["text/html"])
    assert page.locator(".wb-static-jump").count() == 0
    page.close()
