"""A module called more than once in one forward, in a real JupyterLab (dark theme): a GRU cell applied
at 8 time steps is one series box ("cell ×8") that opens into one box per call ("cell · call 3/8"), the
parameters every call shares are one node each (search finds one), a node's details name its call and
give breadcrumbs that close its boxes, and fully expanded its calls line up in order, one under the other;
the same after reopening without a kernel, and in nbconvert's HTML (the static drawing, one box per
call). A weight-tied model, two ResNet blocks, a widening one and a transformer layer are drawn alongside.
Screenshots go to $WORKBENCH_SCREENSHOTS when set."""
import os
import subprocess
import sys

import pytest

from nbhelp import REPO, open_and_run, page_errors, reopen_without_kernel, save, wait_idle

pytestmark = pytest.mark.browser

MODELS = f"""sys.path.insert(0, {str(REPO / 'tests' / 'viz')!r})
import repeated"""
CELLS = [MODELS] + [f"wb.viz.show(*repeated.{make}(), title={title!r})" for make, title in
                    [("gru_loop", "GRU over 8 steps"), ("tied", "weight-tied"), ("resnet", "small ResNet"),
                     ("transformer", "transformer layer"), ("widening", "widening ResNet")]]


def _shoot(loc, name):
    d = os.environ.get("WORKBENCH_SCREENSHOTS")
    if d:
        loc.screenshot(path=os.path.join(d, f"calls-{name}.png"))


def _viewer(page, title):
    v = page.locator(f'.jp-OutputArea-output .wb-root[aria-label*="{title}"]').first
    v.wait_for(timeout=60_000)
    v.locator(".wb-box").first.wait_for(timeout=30_000)
    v.scroll_into_view_if_needed()
    return v


def _open(v, text):
    v.locator(".wb-status").evaluate("el => { el.textContent = ''; }")
    v.locator(".wb-box", has_text=text).first.dispatch_event("click")  # it may be out of the view's pan
    v.locator(".wb-status").filter(has_text="opened").wait_for(timeout=30_000)


def _boxes(v, prefix):
    return sorted(t for t in v.locator(".wb-box .wb-t-title").all_text_contents() if t.lstrip("▸ ").startswith(prefix))


def _check_gru(page, stage):
    v = _viewer(page, "GRU over 8 steps")
    assert _boxes(v, "cell") == ["▸ cell ×8"]
    _open(v, "cell ×8")
    v.locator(".wb-box", has_text="cell · call 8/8").first.wait_for(timeout=30_000)
    assert _boxes(v, "cell") == [f"▸ cell · call {k}/8" for k in range(1, 9)]
    # the opened series is brought into view from its first call (it has no box of its own to show)
    page.wait_for_timeout(600)  # the pan animates
    view = v.locator(".wb-graph").bounding_box()
    first = v.locator(".wb-box", has_text="cell · call 1/8").first.bounding_box()
    assert view["y"] <= first["y"] and first["y"] + first["height"] <= view["y"] + view["height"], (view, first)
    # the parameters the calls share: drawn once each, next to the calls
    params = [t for t in v.locator(".wb-node .wb-t-title").all_text_contents() if t.startswith("cell.")]
    assert sorted(params) == ["cell.bias_hh", "cell.bias_ih", "cell.weight_hh", "cell.weight_ih"]
    v.locator(".wb-btn", has_text="Fit").click()  # the calls below the parameters, all in view
    page.wait_for_timeout(300)
    _shoot(v, f"gru-{stage}")
    _open(v, "cell · call 3/8")
    assert v.locator(".wb-cluster-head", has_text="cell · call 3/8").count() == 1
    v.locator(".wb-cluster-head", has_text="cell · call 3/8").first.wait_for(timeout=10_000)
    # search: one shared parameter, one result; a node of the third call says which call it ran in
    search = v.locator(".wb-search")
    search.fill("weight_hh")
    assert v.locator(".wb-results li").count() == 1
    search.fill("GruCell")  # the fused cell: one node a call
    results = v.locator(".wb-results li").all_text_contents()
    assert len(results) == 8 and sum("cell · call 3/8" in r for r in results) == 1, results
    search.press("Escape")
    v.locator(".wb-search").fill("")
    node = v.locator(".wb-graph .wb-node", has_text="GruCellBackward0").first
    node.wait_for(timeout=10_000)
    node.click()
    sec = v.locator(".wb-panel section[aria-label='selected node']")
    sec.wait_for(timeout=10_000)
    assert "cell · call 3/8" in sec.inner_text()
    # where it is, as breadcrumbs: each closes its box; the series' closes all eight calls at once
    nav = sec.locator("nav.wb-crumbs")
    assert nav.inner_text() == "cell ×8 › cell · call 3/8"
    _shoot(v, f"gru-call3-{stage}")
    v.locator(".wb-status").evaluate("el => { el.textContent = ''; }")
    nav.locator("button", has_text="cell ×8").click()
    v.locator(".wb-status").filter(has_text="closed").wait_for(timeout=30_000)
    v.locator(".wb-box", has_text="cell ×8").first.wait_for(timeout=30_000)
    assert _boxes(v, "cell") == ["▸ cell ×8"]


CALLS = """(root) => [...root.querySelectorAll('.wb-graph .wb-cluster-head')]
  .filter((h) => h.dataset.id.startsWith('m:cell|'))
  .map((h) => { const b = h.previousElementSibling.getBoundingClientRect();
    return [Number(h.dataset.id.split('#').pop()), b.left + b.width / 2, b.top]; })"""


def _expand(page, title):
    v = _viewer(page, title)
    v.locator(".wb-status").evaluate("el => { el.textContent = ''; }")
    v.locator(".wb-btn", has_text="Expand all").click()
    v.locator(".wb-status").filter(has_text="items shown of").wait_for(timeout=30_000)
    v.locator(".wb-btn", has_text="Fit").click()
    page.wait_for_timeout(300)
    return v


def _check_others(page, stage):
    # the GRU's calls, each an open box: in order down one column (the linear layout stepped each
    # ~140 px sideways)
    v = _expand(page, "GRU over 8 steps")
    calls = v.evaluate(CALLS)
    assert len(calls) == 8
    assert [c[0] for c in sorted(calls, key=lambda c: c[2])] == sorted(c[0] for c in calls)
    centres = [c[1] for c in calls]
    assert max(centres) - min(centres) < 1, calls
    _shoot(v, f"gru-expanded-{stage}")
    for title in ("weight-tied", "small ResNet", "transformer layer", "widening ResNet"):
        v = _expand(page, title)
        if title == "weight-tied":
            assert v.locator(".wb-cluster-head", has_text="mix · call 2/2").count() == 1
            assert v.locator(".wb-nodes .wb-node", has_text="emb.weight").count() == 1  # tied: one node
        _shoot(v, f"{'-'.join(title.lower().split())}-{stage}")


def _set_theme(page, theme):
    name = "JupyterLab Dark" if theme == "dark" else "JupyterLab Light"
    page.evaluate(f"window.jupyterapp.commands.execute('apputils:change-theme', {{theme: '{name}'}})")
    page.wait_for_function(f"document.body.dataset.jpThemeName === {name!r}", timeout=30_000)
    page.wait_for_timeout(500)


def test_repeated_calls_live_saved_and_in_nbconvert(lab, page, browser, tmp_path):
    open_and_run(page, lab, "calls.ipynb", CELLS)
    wait_idle(page)
    _set_theme(page, "dark")
    try:
        _check_gru(page, "live")
        _check_others(page, "live")
        save(page)
        reopen_without_kernel(page, lab, "calls.ipynb")
        _check_gru(page, "no-kernel")
        assert page_errors(page) == []
    finally:
        _set_theme(page, "light")  # a user setting of this lab: the later tests expect the default
    out = tmp_path / "calls.html"
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--HTMLExporter.theme=dark",
                    "--output", str(out), str(lab.root / "calls.ipynb")], check=True, capture_output=True)
    html = out.read_text()
    for k in range(1, 9):
        assert f"cell · call {k}/8 (GRUCell)" in html  # the static drawing: one box per call, open (42 nodes)
    assert "mix · call 1/2 (Linear)" in html and "mix · call 2/2 (Linear)" in html
    view = browser.new_page(viewport={"width": 1100, "height": 900}, color_scheme="dark")
    view.goto(out.as_uri())
    outs = view.locator(".jp-OutputArea-output:has(svg)")
    outs.first.wait_for(timeout=30_000)
    for k, name in enumerate(["gru", "tied", "resnet", "transformer", "widening"]):
        _shoot(outs.nth(k), f"{name}-html")
    view.close()
