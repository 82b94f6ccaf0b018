"""The gradient monitor in a real JupyterLab: charts grow while the training cell is still running
(comm messages go out on iopub mid-cell), the overview has a row per layer and a layer's detail
opens on click, and a NaN alarm appears when a NaN is injected."""
import re
import time

import pytest

from nbhelp import page_errors, open_and_run, wait_idle

pytestmark = pytest.mark.browser

TRAIN = """import time
m = MLP()
x, y = wb.randn(8, 3), wb.randn(8, 2)
mon = wb.viz.watch(m, title="training")
for step in range(100):
    for p in m.parameters():
        p.grad = None
    out = m(x)
    if step == 70:
        out = out * wb.tensor(float("nan"))
    loss = mse(out, y)
    loss.backward()
    with wb.no_grad():
        for p in m.parameters():
            p -= 0.05 * p.grad
    time.sleep(0.04)
mon.detach()"""


def _steps_shown(status):
    m = re.search(r"(\d+) steps", status.inner_text())
    return int(m.group(1)) if m else 0


def test_monitor_updates_live_and_raises_nan_alarm(lab, page):
    open_and_run(page, lab, "monitor.ipynb", [TRAIN])
    mon = page.locator(".jp-OutputArea-output .wb-monitor").first
    mon.wait_for(timeout=60_000)
    status = mon.locator(".wb-status")
    seen = []
    deadline = time.monotonic() + 60
    running = "[...document.querySelectorAll('.jp-CodeCell')].at(-1).querySelector('.jp-InputArea-prompt')" \
              ".textContent.includes('*')"
    while time.monotonic() < deadline:
        n = _steps_shown(status)
        busy = page.evaluate(running)  # the training cell's prompt still shows [*]
        if busy and n:
            seen.append(n)
        if len(set(seen)) >= 3 or not busy and n:
            break
        time.sleep(0.15)
    assert len(set(seen)) >= 2 and seen == sorted(seen), seen  # grew while the cell was still running
    wait_idle(page)
    # every finite point is drawn: steps 0..69 (the NaN steps are skipped on the log scale)
    count = "(el) => Math.max(0, ...[...el.querySelectorAll('.wb-chart polyline')]" \
            ".map(p => (p.getAttribute('points') || '').trim().split(' ').length))"
    deadline = time.monotonic() + 20
    while mon.evaluate(count) < 70 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert mon.evaluate(count) == 70  # the loss: NaN from step 70 on
    labels = mon.locator(".wb-ov-label")
    assert labels.count() == 4  # one overview row per parameter
    labels.nth(3).click()
    detail = mon.locator(".wb-mon-detail")
    detail.locator("polyline").first.wait_for(timeout=10_000)
    assert "head.bias" in detail.inner_text()
    assert detail.evaluate(count.replace(".wb-chart polyline", "polyline")) == 70  # ‖grad‖ of head.bias
    alarms = mon.locator(".wb-alarms li")
    alarms.first.wait_for(timeout=10_000)
    # (a view's monitor_sync is answered with every alarm so far, so the list may repeat them)
    nan = sorted({t for t in alarms.all_inner_texts() if "NaN" in t})
    assert len(nan) == 1 and "step 70" in nan[0] and "head.bias" in nan[0] and "models.py" in nan[0]
    assert all("NaN" in t for t in alarms.all_inner_texts())  # the healthy steps before raised nothing
    assert page_errors(page) == []
