"""The gradient monitor in a real JupyterLab: charts grow while the training cell is still running
(comm messages go out on iopub mid-cell), the overview has a row per layer and a layer's detail
opens on click, and a NaN alarm appears when a NaN is injected; a constant loss is drawn mid-plot live,
reopened without a kernel and in nbconvert's HTML."""
import re
import subprocess
import sys
import time

import pytest

from nbhelp import open_and_run, page_errors, reopen_without_kernel, save, wait_idle

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


# a loss that does not move (a frozen model, a data bug): drawn mid-plot on an axis padded both ways
CONSTANT = """m = MLP()
x, y = wb.randn(8, 3), wb.randn(8, 2)
mon = wb.viz.watch(m, title="constant loss")
for step in range(10):
    for p in m.parameters():
        p.grad = None
    mse(m(x), y).backward()
    mon.log(loss=0.75)
mon.detach()"""

# where the loss line sits between the plot's top and bottom (0: bottom, 1: top), and the y ticks' values
LIVE_LINE = """(mon) => { const svg = mon.querySelector('.wb-chart svg'), axes = [...svg.querySelectorAll(':scope > line.wb-axis')];
  const top = Math.min(...axes.map((l) => +l.getAttribute('y1'))), bottom = +axes[1].getAttribute('y1');
  const ys = (svg.querySelector('polyline').getAttribute('points') || '').trim().split(' ').map((p) => +p.split(',')[1]);
  const ticks = [...svg.querySelectorAll('.wb-ticks text[text-anchor=end]')].filter((t) => !t.classList.contains('wb-axis-name'));
  return {at: ys.map((y) => (bottom - y) / (bottom - top)), ticks: ticks.map((t) => +t.textContent)}; }"""

STATIC_LINE = """(svg) => { const frame = [...svg.querySelectorAll('rect')][0], path = svg.querySelector('path');
  const top = +frame.getAttribute('y'), bottom = top + +frame.getAttribute('height');
  const ys = path.getAttribute('d').match(/[ML][\\d.]+,[\\d.]+/g).map((p) => +p.split(',')[1]);
  const ticks = [...svg.querySelectorAll('text[text-anchor=end]')].map((t) => +t.textContent).filter((v) => !Number.isNaN(v));
  return {at: ys.map((y) => (bottom - y) / (bottom - top)), ticks}; }"""


def _mid_plot(line):
    assert line["at"] and all(0.3 < a < 0.7 for a in line["at"]), line  # mid-plot, not on an edge
    assert min(line["ticks"]) < 0.75 < max(line["ticks"]), line  # an axis padded below and above


def test_a_constant_loss_is_drawn_mid_plot_live_saved_and_in_nbconvert(lab, page, tmp_path):
    open_and_run(page, lab, "constant.ipynb", [CONSTANT])
    wait_idle(page)
    mon = page.locator(".jp-OutputArea-output .wb-monitor").first
    page.wait_for_function("(el) => el.textContent.includes('10 steps')", arg=mon.locator(".wb-status").element_handle(),
                           timeout=30_000)
    _mid_plot(mon.evaluate(LIVE_LINE))
    save(page)
    reopen_without_kernel(page, lab, "constant.ipynb")
    mon = page.locator(".jp-OutputArea-output .wb-monitor").first
    mon.wait_for(timeout=60_000)
    _mid_plot(mon.evaluate(LIVE_LINE))
    assert page_errors(page) == []
    out = tmp_path / "constant.html"
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--output", str(out),
                    str(lab.root / "constant.ipynb")], check=True, capture_output=True)
    html = page.context.new_page()
    html.goto(out.as_uri())
    _mid_plot(html.locator(".wb-static-monitor svg").first.evaluate(STATIC_LINE))
    html.close()
