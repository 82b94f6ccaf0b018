"""Everything survives saving: the debugger and the monitor leave kernel-free views behind.

Live, their outputs are widgets; saved and reopened with the kernel shut down, in an untrusted copy,
and in `jupyter nbconvert --to html`, the same outputs show the recorded replay and the monitor's
charts and alarms. Nowhere "Error displaying widget" or a Python repr.
"""
import json
import os
import subprocess
import sys

import pytest

from nbhelp import ask_kernel, open_and_run, page_errors, reopen_without_kernel, save, wait_idle

pytestmark = pytest.mark.browser

DEBUG = """m = MLP()
with wb.viz.trace():
    loss = mse(m(wb.randn(8, 3)), wb.randn(8, 2))
dbg = wb.viz.debug(loss, m)"""

MONITOR = """m2 = MLP()
x, y = wb.randn(8, 3), wb.randn(8, 2)
mon = wb.viz.watch(m2, title="saved monitor", plot_on_detach=False)
for step in range(30):
    for p in m2.parameters():
        p.grad = None
    out = m2(x)
    if step == 20:
        out = out * wb.tensor(float("nan"))
    mse(out, y).backward()
    with wb.no_grad():
        for p in m2.parameters():
            p -= 0.05 * p.grad
mon.detach()"""

BAD = ("Error displaying widget", "object at 0x", "Loading widget")


def _shoot(page, name):
    d = os.environ.get("WORKBENCH_SCREENSHOTS")
    if d:
        page.screenshot(path=os.path.join(d, name), full_page=True)


def _no_bad_text(page):
    text = page.locator(".jp-Notebook").inner_text()
    for bad in BAD:
        assert bad not in text, f"{bad!r} shown in the notebook"


def _check_saved_views(page):
    outs = page.locator(".jp-OutputArea-output")
    dbg = outs.filter(has=page.locator(".wb-counter")).first
    dbg.wait_for(timeout=60_000)
    counter = dbg.locator(".wb-counter")
    total = int(counter.inner_text().split("/")[1])
    assert total > 5
    dbg.locator(".wb-btn[aria-keyshortcuts='n']").click()  # the replay steps with no kernel
    assert counter.inner_text().strip().startswith(f"1 / {total}")
    mon = outs.filter(has=page.locator(".wb-monitor")).first
    mon.wait_for(timeout=30_000)
    assert "30 steps" in mon.locator(".wb-status").inner_text()
    assert any("NaN" in t and "step 20" in t for t in mon.locator(".wb-alarms li").all_inner_texts())
    _no_bad_text(page)


def test_debugger_and_monitor_survive_saving_reopening_untrusted_and_nbconvert(lab, page, tmp_path):
    open_and_run(page, lab, "saved.ipynb", [DEBUG, MONITOR])
    wait_idle(page)
    live = page.locator(".jp-OutputArea-output:has(.wb-counter)").first
    live.wait_for(timeout=60_000)
    live.locator(".wb-btn[aria-keyshortcuts='n']").click()  # live: the kernel's stepper runs the step
    page.wait_for_function("(el) => el.textContent.trim().startsWith('1 /')",
                           arg=live.locator(".wb-counter").element_handle(), timeout=15_000)
    assert ask_kernel(page, lab, "dbg.position") == 1
    _shoot(page, "saved-live.png")
    save(page)

    reopen_without_kernel(page, lab, "saved.ipynb")
    _check_saved_views(page)
    _shoot(page, "saved-no-kernel.png")

    nb = json.loads((lab.root / "saved.ipynb").read_text())
    nb["metadata"]["copied"] = True  # a changed notebook no longer matches its trust signature
    (lab.root / "untrusted.ipynb").write_text(json.dumps(nb))
    reopen_without_kernel(page, lab, "untrusted.ipynb")
    _check_saved_views(page)
    assert page_errors(page) == []

    out = tmp_path / "saved.html"
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--output", str(out),
                    str(lab.root / "saved.ipynb")], check=True, capture_output=True)
    html = out.read_text()
    for bad in BAD:
        assert bad not in html
    assert html.count("wb-static-tape") >= 1 and html.count("wb-static-monitor") == 1
