"""The tape viewer in a real JupyterLab: an MLP's tape drawn, modules expand, details open, the saved
notebook re-renders the interactive viewer with no kernel, a hostile module name stays text."""
import pytest

from nbhelp import page_errors, open_and_run, reopen_without_kernel, save, wait_idle

EVIL = "<img src=x onerror=alert(1)>"

pytestmark = pytest.mark.browser

CELL = f"""m = MLP(name={EVIL!r})
x, y = wb.randn(8, 3), wb.randn(8, 2)
with wb.viz.record():
    loss = mse(m(x), y)
wb.viz.show(loss, m, trace=True)"""


def _check_viewer(page):
    out = page.locator(".jp-OutputArea-output .wb-root").first
    out.wait_for(timeout=60_000)
    page.locator(".jp-OutputArea-output .wb-node").first.wait_for(timeout=30_000)
    boxes = page.locator(".jp-OutputArea-output .wb-box")
    assert boxes.count() >= 2  # the modules start collapsed
    n_before = page.locator(".jp-OutputArea-output .wb-node").count()
    box = page.locator(".jp-OutputArea-output .wb-box", has_text="head").first
    box.click()
    page.locator(".jp-OutputArea-output .wb-cluster-head").first.wait_for(timeout=10_000)
    page.wait_for_function(f"document.querySelectorAll('.jp-OutputArea-output .wb-node').length > {n_before}")
    page.locator(".jp-OutputArea-output .wb-node", has_text="head.weight").first.click()
    sec = page.locator(".wb-panel section[aria-label='selected node']")
    sec.wait_for(timeout=10_000)
    assert "head.weight" in sec.inner_text() and "AccumulateGrad" in sec.inner_text()
    # the hostile module name is shown as text, never as an element
    assert EVIL in out.inner_text() or EVIL in page.locator(".jp-OutputArea-output").inner_text()
    assert page.locator(".jp-OutputArea-output img[src='x']").count() == 0


def test_tape_viewer_live_then_saved_without_kernel(lab, page):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    open_and_run(page, lab, "tape.ipynb", [CELL])
    wait_idle(page)
    _check_viewer(page)
    save(page)
    reopen_without_kernel(page, lab, "tape.ipynb")
    _check_viewer(page)
    assert dialogs == [] and page_errors(page) == []
