"""Helpers for the viz browser tests: notebook cells, running them, asking the kernel, reopening offline."""
import json
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SETUP = f"""import sys, json
sys.path.insert(0, {str(REPO / 'tests' / 'viz')!r})
import workbench as wb
from models import MLP, mse
_ = wb.manual_seed(0)"""


def code(src):
    return {"cell_type": "code", "metadata": {}, "source": src, "outputs": [], "execution_count": None}


def open_and_run(page, lab, name, cells, *, run=True):
    """Write a notebook, open it in JupyterLab, wait for an idle kernel and run every cell."""
    lab.write_notebook(name, [code(SETUP), *[code(c) for c in cells]])
    # a workspace of its own: tabs restored from another test's workspace would steal currentWidget
    page.goto(f"{lab.url}/lab/workspaces/{name.split('.')[0]}/tree/{name}?reset")
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell.currentWidget"
                           " && window.jupyterapp.shell.currentWidget.sessionContext", timeout=90_000)
    if run:
        page.wait_for_function("window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'",
                               timeout=90_000)
        # not awaited: the command's promise resolves only when every cell has finished
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


def wait_idle(page, timeout=90_000):
    """Wait until every cell has run (no '[*]' prompt left) and the kernel is idle."""
    page.wait_for_function(
        "(() => { const w = window.jupyterapp.shell.currentWidget;"
        " const prompts = [...w.node.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')];"
        " return prompts.length && prompts.every(p => /\\[\\d+\\]/.test(p.textContent))"
        " && w.sessionContext.session?.kernel?.status === 'idle'; })()", timeout=timeout)


def ask_kernel(page, lab, expr, timeout=30):
    """Evaluate ``expr`` in the notebook's kernel and return it (JSON round trip through a file)."""
    out = lab.root / f"_answer_{time.monotonic_ns()}.json"
    src = f"import json as _j\nopen({str(out)!r}, 'w').write(_j.dumps({expr}))"
    page.evaluate("(src) => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
                  ".requestExecute({code: src, store_history: false}).done", src)
    deadline = time.monotonic() + timeout
    while not out.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the kernel did not answer {expr!r}")
        time.sleep(0.1)
    time.sleep(0.05)
    return json.loads(out.read_text())


def save(page):
    page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("!window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)


def reopen_without_kernel(page, lab, name):
    """Open the saved notebook in a fresh page and shut its kernel down: outputs must live on alone."""
    page.goto(f"{lab.url}/lab/workspaces/{name.split('.')[0]}-offline/tree/{name}?reset")
    page.wait_for_function("window.jupyterapp && window.jupyterapp.shell.currentWidget"
                           " && window.jupyterapp.shell.currentWidget.sessionContext", timeout=90_000)
    # shut down once the session context is ready: before that, shutdown() finds no session and does nothing,
    # and the kernel then starts anyway (a loaded CI run waited 90 s for it; not awaited here, the wait is below)
    page.evaluate("() => { const sc = window.jupyterapp.shell.currentWidget.sessionContext;"
                  " sc.ready.then(() => sc.shutdown()); }")
    # a kernel shutdown can take tens of seconds on a loaded 2-core machine
    page.wait_for_function("!window.jupyterapp.shell.currentWidget.sessionContext.session", timeout=90_000)


def stat(panel_section, title, key="norm"):
    """The number shown for ``key`` in the summary block titled ``title`` inside a details section."""
    block = panel_section.locator(".wb-summary", has=panel_section.page.locator("h4", has_text=title)).first
    cell = block.locator(f"th:text-is('{key}') + td").first
    return float(cell.inner_text())


# what JupyterLab's own code may raise when a test shuts a kernel down under it (the session is gone while a
# kernel-status or widget-manager callback still reads it)
SHUTDOWN_NOISE = ("Canceled future", "Kernel is dead", "disposed", "Cannot read properties of null (reading 'kernel')")
# where workbench's code runs in the page: the lab extension's bundle, the widget's ESM (anywidget loads it from a
# blob: URL)
OURS = ("/extensions/workbench/", "blob:")


def page_errors(page):
    """JS errors on the page, less JupyterLab's own noise when a kernel is shut down under it: a known message
    whose stack has no frame of workbench's code (an error raised in workbench's code always counts)."""
    return [m for m, stack in zip(page.errors, page.error_stacks)
            if not (any(n in m for n in SHUTDOWN_NOISE) and not any(o in stack for o in OURS))]


# The kernel-free drawing of a tape (static_svg.py's HTML) as it opens: its scroll box, the scale it is drawn
# at, and whether what matters is in view without scrolling: compare's added and removed nodes, else the
# loss (the output). "headerInView": the title (and legend, notes) sit above the box, never scrolled away.
STATIC_IN_VIEW = """(tape) => {
  const svgs = [...tape.querySelectorAll('svg')], graph = svgs.at(-1);
  let box = graph.parentElement;
  while (box !== tape.parentElement && getComputedStyle(box).overflowY === 'visible') box = box.parentElement;
  const b = box.getBoundingClientRect(), inside = (r) => r.top >= b.top - 1 && r.bottom <= b.bottom + 1
    && r.left >= b.left - 1 && r.right <= b.right + 1;
  let marks = [...graph.querySelectorAll('g.wb-added, g.wb-removed')];
  if (!marks.length) marks = [...graph.querySelectorAll('g.wb-output')];
  const kind = (g) => ['added', 'removed', 'output'].find((k) => g.classList.contains(`wb-${k}`));
  const title = tape.querySelector('svg text');
  return {scrolls: box.scrollHeight > box.clientHeight + 1, targets: marks.map(kind),
          hidden: marks.filter((g) => !inside(g.querySelector('rect').getBoundingClientRect())).map(kind),
          scale: graph.getBoundingClientRect().width / graph.viewBox.baseVal.width,
          headerInView: !!title && !box.contains(title) && title.getBoundingClientRect().bottom <= b.top + 1}; }"""


# The selected node of a tape viewer and its neighbours (the edges' ends): which of them the minimap covers,
# and whether the node itself is inside the canvas. null: nothing selected.
SELECTED_UNCOVERED = """(root) => { const sel = root.querySelector('.wb-graph .wb-selected'); if (!sel) return null;
  const id = sel.getAttribute('data-id'), near = new Set([id]);
  for (const p of root.querySelectorAll('.wb-graph path.wb-edge')) {
    if (p.dataset.source === id) near.add(p.dataset.target);
    if (p.dataset.target === id) near.add(p.dataset.source); }
  const rect = (n) => root.querySelector(`.wb-graph [data-id="${CSS.escape(n)}"] .wb-node-box`)?.getBoundingClientRect();
  const mm = root.querySelector('.wb-minimap'), m = mm.hidden ? null : mm.getBoundingClientRect();
  const c = root.querySelector('.wb-canvas').getBoundingClientRect(), r = rect(id);
  const meets = (a, b) => a.left < b.right && a.right > b.left && a.top < b.bottom && a.bottom > b.top;
  return {minimap: !!m, near: near.size, under: [...near].filter((n) => m && rect(n) && meets(rect(n), m)),
          inView: r.left >= c.left && r.right <= c.right && r.top >= c.top && r.bottom <= c.bottom}; }"""
