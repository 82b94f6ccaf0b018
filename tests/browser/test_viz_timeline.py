"""The tape over time in a real JupyterLab: mon.snapshots' step slider recolours the graph, play runs
through the kept steps, live and in the saved notebook reopened without a kernel; nbconvert's HTML shows
the last step and says where the slider works."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nbhelp import open_and_run, page_errors, reopen_without_kernel, save, wait_idle

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "viz"))

import workbench as wb  # noqa: E402
from models import MLP, mse  # noqa: E402

pytestmark = pytest.mark.browser

WATCH = """m = MLP()
x, y = wb.randn(8, 3), wb.randn(8, 2)
mon = wb.viz.watch(m, snapshots_every=5, display=False)
for step in range(20):
    for p in m.parameters():
        p.grad = None
    mse(m(x), y).backward()
    with wb.no_grad():
        for p in m.parameters():
            p -= 0.5 * p.grad
mon.detach()
mon.snapshots"""

FILLS = """(root) => Object.fromEntries([...root.querySelectorAll('.wb-graph [data-id]')]
  .map((g) => [g.getAttribute('data-id'), g.style.getPropertyValue('--wb-ov-fill')]))"""


def _shoot(page, name):
    d = os.environ.get("WORKBENCH_SCREENSHOTS")
    if d:
        page.screenshot(path=os.path.join(d, name), full_page=True)


def _label_is(page, view, text):
    page.wait_for_function("([el, t]) => el.textContent.startsWith(t)",
                           arg=[view.locator(".wb-step-label").element_handle(), text], timeout=15_000)


def _check_slider(page):
    view = page.locator(".jp-OutputArea-output:has(.wb-timeline)").first
    view.wait_for(timeout=60_000)
    view.locator(".wb-graph .wb-ov-has").first.wait_for(timeout=30_000)
    root = view.locator(".wb-root").element_handle()
    _label_is(page, view, "step 15 (4 of 4)")
    last = page.evaluate(FILLS, root)
    assert sum(1 for v in last.values() if v) >= 3  # coloured by the last step's gradient norms
    slider = view.locator(".wb-step-slider")
    slider.focus()
    page.keyboard.press("Home")
    _label_is(page, view, "step 0 (1 of 4)")
    first = page.evaluate(FILLS, root)
    assert first != last and set(first) == set(last)  # recoloured, not laid out again
    legend = view.locator(".wb-legend")
    # one colour scale over all kept steps: the legend's end values do not move with the slider
    assert "same scale at all 4 steps" in legend.inner_text()
    ticks = legend.locator(".wb-legend-tick").all_inner_texts()
    page.keyboard.press("ArrowRight")
    _label_is(page, view, "step 5 (2 of 4)")
    page.keyboard.press("End")
    _label_is(page, view, "step 15 (4 of 4)")
    assert page.evaluate(FILLS, root) == last
    assert legend.locator(".wb-legend-tick").all_inner_texts() == ticks
    play = view.locator(".wb-play")
    play.click()  # at the end, play starts over from the first step
    _label_is(page, view, "step 0 (1 of 4)")
    page.wait_for_function("(el) => el.getAttribute('aria-pressed') === 'false'", arg=play.element_handle(),
                           timeout=20_000)
    _label_is(page, view, "step 15 (4 of 4)")
    return view


def test_step_slider_and_play_live_saved_and_in_nbconvert(lab, page, tmp_path):
    open_and_run(page, lab, "timeline.ipynb", [WATCH])
    wait_idle(page)
    _check_slider(page)
    _shoot(page, "timeline-live.png")
    save(page)
    reopen_without_kernel(page, lab, "timeline.ipynb")
    _check_slider(page)
    _shoot(page, "timeline-no-kernel.png")
    assert page_errors(page) == []

    out = tmp_path / "timeline.html"
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--output", str(out),
                    str(lab.root / "timeline.ipynb")], check=True, capture_output=True)
    html = out.read_text()
    assert "Step 15, the last of 4 kept steps (0–15)" in html and "The step slider needs JupyterLab" in html
    assert "wb-static-tape" in html and "Error displaying" not in html


def test_saved_html_page_scrubs_offline(browser, tmp_path):
    m = MLP()
    x, y = wb.randn(8, 3), wb.randn(8, 2)
    mon = wb.viz.watch(m, snapshots_every=2, display=False)
    for _ in range(5):
        for p in m.parameters():
            p.grad = None
        mse(m(x), y).backward()
        with wb.no_grad():
            for p in m.parameters():
                p -= 0.5 * p.grad
    mon.detach()
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(Path(mon.snapshots.save(tmp_path / "run.html")).as_uri())
    view = page.locator(".wb-root")
    view.locator(".wb-graph .wb-ov-has").first.wait_for(timeout=20_000)
    root = view.element_handle()
    _label_is(page, view, "step 4 (3 of 3)")
    last = page.evaluate(FILLS, root)
    view.locator(".wb-step-slider").focus()
    page.keyboard.press("Home")
    _label_is(page, view, "step 0 (1 of 3)")
    assert page.evaluate(FILLS, root) != last
    assert errors == []
    page.close()
