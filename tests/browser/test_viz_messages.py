"""NaN, messages and classroom mode in a real JupyterLab: a NaN loss is said once, in the error
colour, above the graph with its first op marked; a pause is in the warning colour (never the
accent) and says its reason once, with the cell as IPython names it; a debugger whose graph a later
cell changed says exactly that; the classroom control shows the state and toggles it live."""
import pytest

from nbhelp import ask_kernel, open_and_run, page_errors, wait_idle

pytestmark = pytest.mark.browser

SHOW = """w = wb.tensor([1.0, 0.0, 2.0], requires_grad=True)
with wb.viz.record():
    bad = (wb.log(w * w) * 2).sum()
wb.viz.show(bad, title="nan loss")"""

DEBUG = """with wb.viz.trace():
    bad2 = wb.log(w * w).sum()
dbg = wb.viz.debug(bad2, classroom=True)"""

LIVE = """m = MLP()
opt = wb.optim.SGD(m.parameters(), lr=0.1)
loss = mse(m(wb.randn(8, 3)), wb.randn(8, 2))
dbg3 = wb.viz.debug(loss, m)"""

LATER = """loss.backward(retain_graph=True)
opt.step()"""

COLOURS = """(el) => { const cs = getComputedStyle(el), root = getComputedStyle(el.closest('.wb-root'));
  const probe = (v) => { const d = document.createElement('span'); d.style.color = root.getPropertyValue(v);
    el.append(d); const c = getComputedStyle(d).color; d.remove(); return c; };
  return {color: cs.color, warn: probe('--wb-warn-text'), error: probe('--wb-error-text'), accent: probe('--wb-accent')}; }"""


def _viewer(page, n):
    v = page.locator(".jp-OutputArea-output .wb-root").nth(n)
    v.wait_for(timeout=60_000)
    v.locator(".wb-node").first.wait_for(timeout=30_000)
    return v


def _btn(root, key):
    return root.locator(f".wb-btn[aria-keyshortcuts='{key}']")


def test_nan_pause_error_and_classroom(lab, page):
    open_and_run(page, lab, "messages.ipynb", [SHOW, DEBUG, LIVE, LATER])
    wait_idle(page)
    shown, nan_dbg, live = _viewer(page, 0), _viewer(page, 1), _viewer(page, 2)

    # the NaN loss: one note, error colour, first op marked, and "show the node" selects it
    note = shown.locator(".wb-note-error")
    assert note.count() == 1 and "The first op that produced NaN or Inf: log" in note.inner_text()
    assert "Cell In[2], line 3" in note.inner_text()
    c = note.evaluate(COLOURS)
    assert c["color"] == c["error"] != c["accent"]
    origin = shown.locator(".wb-node.wb-origin")
    assert origin.count() == 1 and "⚑ origin" in origin.text_content()
    note.locator("button").click()
    shown.locator(".wb-panel h3").filter(has_text="LogBackward0").wait_for(timeout=10_000)

    # the debugger of a NaN loss says so before the first step, opens in classroom mode
    assert nan_dbg.locator(".wb-note-error").count() == 1
    assert nan_dbg.locator(".wb-counter").inner_text().startswith("0 /")
    assert nan_dbg.locator("input.wb-classroom").is_checked()
    _btn(nan_dbg, "c").click()
    reason = nan_dbg.locator(".wb-step-current .wb-paused")
    reason.wait_for(timeout=15_000)
    assert "Cell In[3], line 2" in reason.inner_text() and "/tmp/ipykernel" not in reason.inner_text()
    c = reason.evaluate(COLOURS)
    assert c["color"] == c["warn"] != c["accent"]
    said = [t for t in nan_dbg.locator(".wb-paused, .wb-banner, .wb-status").all_inner_texts() if "NaN" in t or "Inf" in t]
    assert len(said) == 1  # the toolbar says "paused", the panel the reason, once
    derivation = nan_dbg.locator(".wb-step-current .wb-derivation")
    assert derivation.count() == 1

    # classroom off by default: ticking it shows the derivation first, live
    _btn(live, "n").click()
    live.locator(".wb-counter").filter(has_text="1 /").wait_for(timeout=15_000)
    box = live.locator("input.wb-classroom")
    assert not box.is_checked() and live.locator(".wb-derivation").count() == 0
    box.check()
    first = live.locator(".wb-step-current > :nth-child(2)")
    assert "wb-derivation" in first.get_attribute("class") and "dL/d" in first.inner_text()
    box.uncheck()
    assert live.locator(".wb-derivation").count() == 0

    # a later cell changed the graph (optimizer.step()): the next step says so, in the error colour
    _btn(live, "c").click()
    banner = live.locator(".wb-banner.wb-banner-error")
    banner.wait_for(timeout=15_000)
    text = banner.inner_text()
    assert "changed by code run after its forward pass" in text and "wb.viz.debug(loss)" in text
    assert "out-of-place" not in text
    c = banner.evaluate(COLOURS)
    assert c["color"] == c["error"]
    assert ask_kernel(page, lab, "dbg3.stepper.changed_since_forward() is not None")
    assert page_errors(page) == []
