"""wb.viz.compare in a real JupyterLab: added/removed marks, the header's counts, the a | b panel and
the ratio colouring, live and in the saved notebook reopened without a kernel; nbconvert's HTML marks
the diff too."""
import os
import subprocess
import sys

import pytest

from nbhelp import open_and_run, page_errors, reopen_without_kernel, save, wait_idle

pytestmark = pytest.mark.browser

# the same model before and after a code change: "* 2" became ".tanh()", and one SGD step between
COMPARE = """m = MLP()
x, y = wb.randn(8, 3), wb.randn(8, 2)
a = wb.viz.snapshot(mse(m(x) * 2, y), m, title="before", trace=True)
with wb.no_grad():
    for p in m.parameters():
        p -= 0.5 * p.grad
        p.grad = None
b = wb.viz.snapshot(mse(m(x).tanh(), y), m, title="after", trace=True)
wb.viz.compare(a, b)"""


def _shoot(page, name):
    d = os.environ.get("WORKBENCH_SCREENSHOTS")
    if d:
        page.screenshot(path=os.path.join(d, name), full_page=True)


def _check_compare(page, shot=None):
    view = page.locator(".jp-OutputArea-output:has(.wb-compare-bar)").first
    view.wait_for(timeout=60_000)
    bar = view.locator(".wb-compare-bar")
    text = bar.inner_text()
    assert "a: before" in text and "b: after" in text
    assert "1 added" in text and "1 removed" in text and "changed by > 2×" in text
    assert "only in b" in text and "only in a" in text  # the marks' legend, in words
    # the ratio colouring is the overlay's, chosen by the snapshot
    view.locator(".wb-graph .wb-ov-has").first.wait_for(timeout=30_000)
    assert "gradient norm ratio" in view.locator(".wb-legend").inner_text()
    for kind, badge in (("added", "+ added"), ("removed", "− removed")):
        view.locator(f".wb-cmp-{kind}").click()  # walks to the node: revealed and selected
        node = view.locator(f".wb-graph .wb-diff-{kind}").first
        node.wait_for(timeout=15_000)
        assert badge in node.text_content()
        panel = view.locator(".wb-cmp-panel")
        assert ("only in b" if kind == "added" else "only in a") in panel.inner_text()
    if shot:
        _shoot(page, shot)
    # a node in both: both columns have numbers, and the ratio says b/a
    search = view.locator(".wb-search")
    search.fill("head.weight")
    search.press("Enter")  # reveals and selects the first match
    view.locator(".wb-panel h3", has_text="head.weight").wait_for(timeout=15_000)
    rows = {r.locator("th").first.inner_text(): r.locator("td").all_inner_texts()
            for r in view.locator(".wb-cmp-panel tr").all()[1:]}
    a, b, ratio = rows["‖grad‖"]
    assert float(a) > 0 and float(b) > 0 and ratio.endswith("×")
    assert float(ratio[:-1]) == pytest.approx(float(b) / float(a), rel=0.01)


def test_compare_live_saved_and_in_nbconvert(lab, page, tmp_path):
    open_and_run(page, lab, "compare.ipynb", [COMPARE])
    wait_idle(page)
    _check_compare(page, "compare-live.png")
    save(page)

    reopen_without_kernel(page, lab, "compare.ipynb")
    _check_compare(page, "compare-no-kernel.png")
    assert page_errors(page) == []

    out = tmp_path / "compare.html"
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--output", str(out),
                    str(lab.root / "compare.ipynb")], check=True, capture_output=True)
    html = out.read_text()
    assert "wb-static-tape" in html and "+ added" in html and "− removed" in html
    assert "1 added, 1 removed" in html and 'class="wb-op wb-removed"' in html
