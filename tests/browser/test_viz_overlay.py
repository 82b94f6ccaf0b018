"""Colouring the tape by cost in a real JupyterLab: the Colour-by switch recolours the nodes, the legend
says what the colours mean, a top-N row jumps into a collapsed module; live, in the saved notebook
reopened without a kernel, and in the nbconvert HTML (coloured boxes, legend, top-N table)."""
import os
import subprocess
import sys

import pytest

from nbhelp import open_and_run, page_errors, reopen_without_kernel, save, wait_idle

pytestmark = pytest.mark.browser

CELL = """m = MLP()
x, y = wb.randn(8, 3), wb.randn(8, 2)
with wb.viz.record():
    loss = mse(m(x), y)
loss.backward()
wb.viz.show(loss, m, color_by="flops")"""

# how far apart the toolbar's items sit vertically with the viewer 900 px wide (a notebook's width): one row
ROW_SPREAD = """(r) => { const w = r.style.width; r.style.width = '900px';
  const mids = [...r.querySelector('.wb-bar').children].filter((c) => c.offsetParent)
    .map((c) => { const b = c.getBoundingClientRect(); return b.top + b.height / 2; });
  r.style.width = w; return Math.max(...mids) - Math.min(...mids); }"""

FILLS = """(root) => [...root.querySelectorAll('.wb-graph [data-id]')].map(g => [g.getAttribute('data-id'),
    getComputedStyle(g.querySelector('.wb-node-box') || g).fill])"""


def _shoot(page, name):
    d = os.environ.get("WORKBENCH_SCREENSHOTS")
    if d:
        page.screenshot(path=os.path.join(d, name))


def _check_overlay(page):
    root = page.locator(".jp-OutputArea-output .wb-root").first
    root.wait_for(timeout=60_000)
    root.locator(".wb-box").first.wait_for(timeout=30_000)
    legend = root.locator(".wb-legend")
    assert "FLOPs" in legend.inner_text() and "FLOP" in legend.locator(".wb-legend-tick").first.inner_text()
    assert root.locator(".wb-select").input_value() == "flops"
    # Colour-by sits in the legend's row, so the toolbar keeps one row at a notebook's width
    assert root.locator(".wb-legend-bar .wb-select").count() == 1
    assert root.evaluate(ROW_SPREAD) < 6
    flops = dict(root.evaluate(FILLS))
    assert len(set(flops.values())) >= 3  # the boxes are coloured by their FLOPs, not all alike
    root.locator(".wb-select").select_option("saved_bytes")
    page.wait_for_function("(r) => r.querySelector('.wb-legend').textContent.includes('saved for backward')",
                           arg=root.element_handle())
    saved = dict(root.evaluate(FILLS))
    assert saved.keys() == flops.keys() and saved != flops
    assert "B" in legend.inner_text()
    root.locator(".wb-select").select_option("flops")
    # the most expensive op sits inside the collapsed encoder: its row opens the module and selects it
    row = root.locator(".wb-topn-row").first
    assert "MmBackward0" in row.inner_text() and "encoder.0" in row.inner_text()
    node_id = row.get_attribute("data-id")
    assert root.locator(f".wb-graph [data-id='{node_id}']").count() == 0
    row.click()
    node = root.locator(f".wb-graph .wb-node[data-id='{node_id}']")
    node.wait_for(timeout=10_000)
    page.wait_for_function("(g) => g.classList.contains('wb-selected')", arg=node.element_handle())
    assert "MmBackward0" in root.locator(".wb-panel section[aria-label='selected node']").inner_text()
    page.wait_for_timeout(400)  # the pan is animated
    nb, cb = node.bounding_box(), root.locator(".wb-canvas").bounding_box()
    assert abs(nb["x"] + nb["width"] / 2 - (cb["x"] + cb["width"] / 2)) < 40
    assert abs(nb["y"] + nb["height"] / 2 - (cb["y"] + cb["height"] / 2)) < 40
    assert row.get_attribute("aria-current") == "true"


def test_overlay_live_saved_without_kernel_and_nbconvert(lab, page, tmp_path):
    open_and_run(page, lab, "overlay.ipynb", [CELL])
    wait_idle(page)
    _check_overlay(page)
    _shoot(page, "overlay-live.png")
    save(page)
    reopen_without_kernel(page, lab, "overlay.ipynb")
    _check_overlay(page)
    _shoot(page, "overlay-no-kernel.png")
    assert page_errors(page) == []
    out = tmp_path / "overlay.html"
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--output", str(out),
                    str(lab.root / "overlay.ipynb")], check=True, capture_output=True)
    html = out.read_text()
    assert 'class="wb-legend"' in html and "colour: FLOPs (log scale)" in html
    assert "wb-static-top" in html and "Top 10 by FLOPs" in html
    assert "rgba(227,26,28,0.62)" in html  # the strongest colour of the ramp: the most expensive box
