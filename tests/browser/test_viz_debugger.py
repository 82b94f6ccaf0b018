"""The backward debugger in a real JupyterLab: stepping runs the kernel's engine, the highlighted node
and the gradients shown equal Python's; continue stops at a NaN; replay works with no kernel."""
import math

import pytest

from nbhelp import page_errors, ask_kernel, open_and_run, reopen_without_kernel, save, stat, wait_idle

pytestmark = pytest.mark.browser

LIVE = """m = MLP()
x, y = wb.randn(8, 3), wb.randn(8, 2)
with wb.viz.trace():
    loss = mse(m(x), y)
dbg = wb.viz.debug(loss, m, classroom=True)"""

NAN = """w = wb.tensor([1.0, 0.0, 2.0], requires_grad=True)
with wb.viz.trace():
    bad = wb.log(w * w).sum()
dbg2 = wb.viz.debug(bad)"""

REPLAY = """m3 = MLP()
with wb.viz.record():
    loss3 = mse(m3(wb.randn(8, 3)), wb.randn(8, 2))
wb.viz.show(loss3, m3, trace=True)"""


def _outputs(page):
    return page.locator(".jp-OutputArea-output:has(.wb-root)")


def _btn(root, key):
    return root.locator(f".wb-btn[aria-keyshortcuts='{key}']")


def test_live_stepping_nan_breakpoint_and_offline_replay(lab, page):
    open_and_run(page, lab, "debug.ipynb", [LIVE, NAN, REPLAY])
    wait_idle(page)
    outs = _outputs(page)
    outs.nth(2).wait_for(timeout=60_000)
    live = outs.nth(0)
    total = ask_kernel(page, lab, "dbg.total")
    counter = live.locator(".wb-counter")
    counter.wait_for()
    for k in range(1, 4):
        _btn(live, "n").click()
        page.wait_for_function("([el, want]) => el.textContent.trim().startsWith(want)",
                               arg=[counter.element_handle(), f"{k} / {total}"], timeout=15_000)
    cur = ask_kernel(page, lab, "[dbg.position, dbg.current.node_id, float(dbg.current.grad_output.norm()), "
                                "[float(g.norm()) for (n, _), g in zip(dbg.current.node.next_functions, "
                                "dbg.current.grad_inputs) if n is not None]]")
    assert cur[0] == 3
    highlighted = live.locator(".wb-node.wb-current")
    highlighted.wait_for()
    assert highlighted.get_attribute("data-id") == cur[1]
    step_panel = live.locator(".wb-step-current")
    step_panel.wait_for()
    assert stat(step_panel, "incoming gradient") == pytest.approx(cur[2], rel=2e-3)
    shown = [float(v.inner_text()) for v in step_panel.locator(".wb-summary:has(h4:text-matches('→ input')) "
                                                                 "th:text-is('norm') + td").all()]
    assert shown == pytest.approx(cur[3], rel=2e-3)

    nan = outs.nth(1)
    _btn(nan, "c").click()
    paused = nan.locator(".wb-step-current .wb-paused").first
    paused.wait_for(timeout=15_000)
    page.wait_for_function("(el) => /NaN|Inf/.test(el.textContent)", arg=paused.element_handle(), timeout=15_000)
    reason = ask_kernel(page, lab, "dbg2.paused_reason")
    assert "Inf" in reason or "NaN" in reason
    assert "forward:" in reason  # the source line of the op, recorded under wb.viz.trace()

    save(page)
    reopen_without_kernel(page, lab, "debug.ipynb")
    replay = _outputs(page).last
    replay.wait_for(timeout=60_000)
    counter = replay.locator(".wb-counter")
    total3 = int(counter.inner_text().split("/")[1])
    _btn(replay, "n").click()
    _btn(replay, "n").click()
    assert counter.inner_text().strip().startswith(f"2 / {total3}")
    _btn(replay, "c").click()
    assert counter.inner_text().strip().startswith(f"{total3} / {total3}")
    assert not math.isnan(total3) and page_errors(page) == []
