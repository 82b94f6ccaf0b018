"""Every tool, light and dark (JupyterLab Light and Dark), live, reopened without a kernel, and in
nbconvert's HTML of the same theme: the cost overlay with its legend and top-N table, the profiler's
timeline and table, compare, the step slider, the backward debugger and the gradient monitor.

What is checked is what a user sees: every piece of text reads on what it is drawn on (WCAG contrast
4.5:1; 3:1 for what is muted on purpose: a box without a value for the colouring, a removed node), the
views take the theme's background, the top-N table's header keeps its title and its count on one line
each, every toolbar row of a view is one height with its items centred, after Fit the minimap covers no
node, the monitor's NaN/Inf key is in view at its default size, and nbconvert's drawing of a tape opens
with its loss, or compare's marked nodes, in view. Screenshots of each view at each stage go to
$WORKBENCH_SCREENSHOTS when set.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nbhelp import STATIC_IN_VIEW, open_and_run, page_errors, reopen_without_kernel, save, wait_idle

pytestmark = pytest.mark.browser

CONTRAST = (Path(__file__).parent / "contrast.js").read_text()
FADED = ("wb-ov-na", "wb-diff-removed", "wb-na", "wb-removed")  # muted on purpose: 3:1 is enough

OVERLAY = """m = MLP()
x, y = wb.randn(8, 3), wb.randn(8, 2)
with wb.viz.record():
    loss = mse(m(x), y)
loss.backward()
wb.viz.show(loss, m, color_by="flops", title="cost overlay")"""

PROFILE = """from workbench.profiler import profile, record_function
with profile(record_shapes=True, with_flops=True) as prof:
    with record_function("train_step"):
        mse(m(x), y).backward()
prof"""

COMPARE = """a = wb.viz.snapshot(mse(m(x) * 2, y), m, title="before", trace=True)
with wb.no_grad():
    for p in m.parameters():
        p -= 0.5 * p.grad
        p.grad = None
b = wb.viz.snapshot(mse(m(x).tanh(), y), m, title="after", trace=True)
wb.viz.compare(a, b)"""

SLIDER = """m2 = MLP()
mon = wb.viz.watch(m2, snapshots_every=5, display=False)
for step in range(20):
    for p in m2.parameters():
        p.grad = None
    mse(m2(x), y).backward()
    with wb.no_grad():
        for p in m2.parameters():
            p -= 0.5 * p.grad
mon.detach()
mon.snapshots"""

# twelve layers: taller than the view at a readable scale, so Fit leaves the minimap up; the output has
# 16 values, so its box (at the bottom, where the fit starts) is wide enough to reach the minimap's corner
DEBUG = """deep = wb.nn.Sequential(*[wb.nn.Linear(4, 4) for _ in range(12)])
dbg = wb.viz.debug(deep(wb.randn(4, 4)).tanh(), deep, gradient=wb.ones(4, 4))"""

MONITOR = """m3 = MLP()
mon3 = wb.viz.watch(m3, title="theme monitor", plot_on_detach=False)
for step in range(30):
    for p in m3.parameters():
        p.grad = None
    out = m3(x)
    if step == 20:
        out = out * wb.tensor(float("nan"))
    mse(out, y).backward()
    with wb.no_grad():
        for p in m3.parameters():
            p -= 0.05 * p.grad
mon3.detach()"""

# the outputs, by what they hold (the order of the cells)
TOOLS = {"overlay": ".wb-root[aria-label*='cost overlay']", "profiler": ".wb-profile", "compare": ".wb-compare-bar",
         "slider": ".wb-timeline", "debugger": ".wb-counter", "monitor": ".wb-monitor"}

ROWS = """(root) => [...root.querySelectorAll('.wb-bar:not(.wb-compare-bar)')].filter((b) => b.offsetParent).map((b) => {
  const items = [...b.children].flatMap((c) => getComputedStyle(c).display === 'contents' ? [...c.children] : [c])
    .filter((c) => c.offsetParent);
  const mids = items.map((c) => { const r = c.getBoundingClientRect(); return r.top + r.height / 2; });
  return {name: b.getAttribute('aria-label') || b.className, height: b.getBoundingClientRect().height,
          spread: Math.max(...mids) - Math.min(...mids)}; })"""

TOP_HEADER = """(root) => { const s = root.querySelector('.wb-top summary'), head = s.querySelector('.wb-top-head'),
  count = s.querySelector('.wb-top-count'), h = head.getBoundingClientRect(), c = count.getBoundingClientRect();
  const line = parseFloat(getComputedStyle(count).fontSize) * 1.6;
  return {headLines: head.getClientRects().length, countOneLine: c.height <= line, countBelow: c.top >= h.bottom - 1,
          cut: s.scrollWidth > s.clientWidth + 1 || count.scrollWidth > count.clientWidth + 1}; }"""

UNDER_MINIMAP = """(root) => { const mm = root.querySelector('.wb-minimap'), cv = root.querySelector('.wb-canvas').getBoundingClientRect();
  if (mm.hidden) return null;
  const m = mm.getBoundingClientRect(), meets = (a, b) => a.left < b.right && a.right > b.left && a.top < b.bottom && a.bottom > b.top;
  const boxes = [...root.querySelectorAll('.wb-graph .wb-node-box')].map((e) => e.getBoundingClientRect()).filter((r) => meets(r, cv));
  return {shown: boxes.length, under: boxes.filter((r) => meets(r, m)).length}; }"""

# the overview's NaN/Inf key, at the monitor's default size: in view without scrolling its panel
NAN_KEY = """(mon) => { const key = mon.querySelector('.wb-ov-nan'), grid = mon.querySelector('.wb-mon-grid');
  const k = key.getBoundingClientRect(), g = grid.getBoundingClientRect();
  return {scrolled: grid.scrollTop, shown: k.height > 0 && k.top >= g.top && k.bottom <= g.top + grid.clientHeight}; }"""

BACKGROUND = """(root) => { const probe = document.createElement('div'); probe.style.background = 'var(--jp-layout-color0)';
  document.body.append(probe); const page = getComputedStyle(probe).backgroundColor; probe.remove();
  return [getComputedStyle(root).backgroundColor, page]; }"""


def _shoot(locator, name):
    d = os.environ.get("WORKBENCH_SCREENSHOTS")
    if d:
        locator.scroll_into_view_if_needed()
        locator.screenshot(path=os.path.join(d, f"{name}.png"))


def _unreadable(locator):
    """The text in ``locator`` under its contrast bar, as (ratio, text, where)."""
    return [(round(r["ratio"], 2), r["text"], r["where"]) for r in locator.evaluate(CONTRAST)
            if r["ratio"] < (3.0 if any(f in r["where"] for f in FADED) else 4.5)]


def _set_theme(page, theme):
    name = "JupyterLab Dark" if theme == "dark" else "JupyterLab Light"
    page.evaluate(f"window.jupyterapp.commands.execute('apputils:change-theme', {{theme: '{name}'}})")
    page.wait_for_function(f"document.body.dataset.jpThemeName === {name!r}", timeout=30_000)
    page.wait_for_timeout(500)  # the theme's stylesheet applies after the attribute


def _outputs(page):
    outs = {}
    for tool, sel in TOOLS.items():
        out = page.locator(f".jp-OutputArea-output:has({sel})").first
        out.wait_for(timeout=60_000)
        outs[tool] = out
    for tool in ("overlay", "compare", "slider", "debugger"):
        outs[tool].locator(".wb-graph .wb-node-box").first.wait_for(timeout=30_000)
    return outs


def _check_views(page, theme, stage):
    outs = _outputs(page)
    for tool, out in outs.items():
        assert _unreadable(out) == [], f"{tool} ({theme}, {stage}): text under its contrast bar"
        _shoot(out, f"{tool}-{theme}-{stage}")
        root = out.locator(".wb-root").first
        if root.count():
            bg, jp = root.evaluate(BACKGROUND)
            assert bg == jp, f"{tool} ({theme}, {stage}): background {bg}, not the theme's {jp}"
    assert outs["monitor"].locator(".wb-monitor").evaluate(NAN_KEY) == {"scrolled": 0, "shown": True}
    top = outs["overlay"].locator(".wb-root")
    assert top.evaluate(TOP_HEADER) == {"headLines": 1, "countOneLine": True, "countBelow": True, "cut": False}
    for tool in ("overlay", "slider", "debugger"):
        rows = outs[tool].locator(".wb-root").evaluate(ROWS)
        assert len(rows) >= 2 and max(r["height"] for r in rows) - min(r["height"] for r in rows) <= 1, (tool, rows)
        assert all(r["spread"] < 4 for r in rows), (tool, rows)
    dbg = outs["debugger"].locator(".wb-root")
    dbg.scroll_into_view_if_needed()
    # a step opens the side panel: the canvas narrows and the graph's column reaches the minimap's corner
    dbg.locator(".wb-btn[aria-keyshortcuts='r']").click()
    page.wait_for_function("(el) => el.textContent.trim().startsWith('0 /')", arg=dbg.locator(".wb-counter").element_handle())
    dbg.locator(".wb-btn[aria-keyshortcuts='n']").click()
    page.wait_for_function("(el) => el.textContent.trim().startsWith('1 /')", arg=dbg.locator(".wb-counter").element_handle(),
                           timeout=15_000)
    assert dbg.locator(".wb-panel").is_visible()
    dbg.locator(".wb-btn[aria-keyshortcuts='f']").click()
    page.wait_for_timeout(500)  # the fit animates
    cover = dbg.evaluate(UNDER_MINIMAP)
    _shoot(dbg, f"debugger-fit-{theme}-{stage}")
    assert cover is not None and cover["shown"] >= 5, cover  # too tall to fit: the minimap is up
    assert cover["under"] == 0, f"the minimap covers {cover['under']} of the {cover['shown']} nodes in view"
    loss = dbg.locator(".wb-graph .wb-kind-output")
    assert loss.is_visible()  # the fit starts where backward does


def _check_html(browser, path, theme):
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.goto(path.as_uri())
    outs = page.locator(".jp-OutputArea-output:has(svg)")
    outs.first.wait_for(timeout=30_000)
    names = ["overlay", "profiler", "compare", "slider", "debugger", "monitor"]
    assert outs.count() == len(names)
    for k, name in enumerate(names):
        out = outs.nth(k)
        assert _unreadable(out) == [], f"{name} in nbconvert's {theme} HTML: text under its contrast bar"
        _shoot(out, f"{name}-{theme}-html")
        if name in ("overlay", "compare", "slider", "debugger"):  # a tape: it opens on what matters
            view = out.locator(".wb-static-tape").first.evaluate(STATIC_IN_VIEW)
            assert view["hidden"] == [] and view["headerInView"], (name, theme, view)
    # the profiler's table is columns of spaces: they line up only in a monospace font
    pre = outs.nth(names.index("profiler")).locator("pre")
    widths = pre.evaluate("""(pre) => ['iiiiiiii', 'MMMMMMMM'].map((t) => { const s = document.createElement('span');
      s.textContent = t; pre.append(s); const w = s.getBoundingClientRect().width; s.remove(); return w; })""")
    assert widths[0] == widths[1], f"the profiler's table in nbconvert's {theme} HTML is not in a monospace font"
    page.close()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_tool_reads_in_the_theme_live_saved_and_in_nbconvert(lab, page, browser, tmp_path, theme):
    name = f"theme-{theme}.ipynb"
    try:
        open_and_run(page, lab, name, [OVERLAY, PROFILE, COMPARE, SLIDER, DEBUG, MONITOR], run=False)
        _set_theme(page, theme)
        page.wait_for_function("window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'",
                               timeout=90_000)
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        wait_idle(page)
        _check_views(page, theme, "live")
        save(page)
        reopen_without_kernel(page, lab, name)
        _check_views(page, theme, "no-kernel")
        assert page_errors(page) == []
    finally:
        _set_theme(page, "light")  # a user setting of this lab: the later tests expect the default
    out = tmp_path / f"{name}.html"
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", f"--HTMLExporter.theme={theme}",
                    "--output", str(out), str(lab.root / name)], check=True, capture_output=True)
    _check_html(browser, out, theme)
