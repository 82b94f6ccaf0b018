"""Legible at any size, in a real JupyterLab: Fit keeps node titles at 10 px or more on screen (a
transformer block, a 1,800-node chain), a minimap marks the visible window when the graph is larger,
the view maximizes and restores, long names end in an ellipsis with the full text as tooltip, and the
status line (role=status, aria-live) says how many items are shown."""
import os
import re

import pytest

from nbhelp import open_and_run, page_errors, wait_idle

pytestmark = pytest.mark.browser

BLOCK = """block = wb.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0)
src = wb.randn(5, 3, 16)
wb.viz.show(block(src).pow(2).mean(), block, title="transformer block")"""

CHAIN = """w = wb.randn(4, requires_grad=True)
h = w
for i in range(900):
    h = (h * 1.01).tanh()
wb.viz.show(h.sum(), title="chain of 1800")"""

LONG = """class Wide(wb.nn.Module):
    def __init__(self):
        super().__init__()
        self.a_parameter_with_a_really_quite_extraordinarily_long_descriptive_name = wb.nn.Parameter(wb.ones(3))
    def forward(self, x):
        return (x * self.a_parameter_with_a_really_quite_extraordinarily_long_descriptive_name).sum()
wide = Wide()
wb.viz.show(wide(wb.ones(3)), wide, title="long names")"""


def _viewer(page, title):
    v = page.locator(f'.jp-OutputArea-output .wb-root[aria-label*="{title}"]').first
    v.wait_for(timeout=60_000)
    v.locator(".wb-node, .wb-box").first.wait_for(timeout=30_000)
    return v


def _title_px(v):
    """On-screen height (px) of the smallest node title drawn."""
    return v.evaluate("(el) => Math.min(...[...el.querySelectorAll('.wb-t-title')].map(t => t.getBoundingClientRect().height))")


def _fit(v):
    v.locator(".wb-btn[aria-keyshortcuts='f']").click()
    v.page.wait_for_timeout(400)  # the fit animates


def test_fit_stays_readable_with_minimap_maximize_ellipsis_and_status(lab, page):
    open_and_run(page, lab, "legible.ipynb", [BLOCK, CHAIN, LONG])
    wait_idle(page)
    block = _viewer(page, "transformer block")
    block.locator(".wb-btn", has_text="Expand all").click()
    page.wait_for_timeout(500)
    _fit(block)
    assert _title_px(block) >= 10

    status = block.locator("[role=status][aria-live]")
    assert re.match(r"\d+ items shown of \d+ nodes", status.inner_text())

    chain = _viewer(page, "chain of 1800")
    chain.scroll_into_view_if_needed()
    _fit(chain)
    assert _title_px(chain) >= 10
    m = re.match(r"(\d+) items shown of (\d+) nodes", chain.locator("[role=status]").inner_text())
    assert m and int(m.group(2)) >= 1800
    assert chain.locator(".wb-minimap").is_visible()  # the graph is larger than the view: the window is marked

    before = chain.bounding_box()
    chain.locator(".wb-btn", has_text="⤢").click()
    page.wait_for_timeout(300)
    maxed = page.locator(".wb-root.wb-max")  # on <body> while maximized
    big = maxed.bounding_box()
    vp = page.viewport_size
    assert big["width"] >= vp["width"] - 20 and big["height"] >= vp["height"] - 20
    if os.environ.get("WORKBENCH_SCREENSHOTS"):
        page.screenshot(path=os.path.join(os.environ["WORKBENCH_SCREENSHOTS"], "legible-maximized.png"))
    maxed.focus()
    page.keyboard.press("Escape")
    page.wait_for_timeout(300)
    assert abs(chain.bounding_box()["height"] - before["height"]) < 2

    wide = _viewer(page, "long names")
    wide.scroll_into_view_if_needed()
    node = wide.locator(".wb-node", has_text="…").first
    node.wait_for(timeout=10_000)
    assert "a_parameter_with_a_really_quite_extraordinarily_long_descriptive_name" in node.locator("title").first.text_content()
    # text never overflows its box
    assert node.evaluate("(g) => [...g.querySelectorAll('text')].every(t => t.getBBox().x + t.getBBox().width"
                         " <= g.querySelector('.wb-node-box').getBBox().width + 1)")
    assert page_errors(page) == []
