"""The bundles in a real JupyterLab + headless chromium: the MIME renderer (live, and in a saved
untrusted notebook with no kernel), the anywidget views, and the kernel end of PROTOCOL.md played by
tiny stand-in widgets (so this checks the browser side alone). Screenshots of every view, light and
dark, go to $WORKBENCH_SCREENSHOTS when set.
"""

import json
import os
import textwrap
from pathlib import Path

import pytest

from conftest import open_notebook

pytestmark = pytest.mark.browser

FIX = Path(__file__).resolve().parents[1] / "fixtures"
MIME = "application/vnd.workbench.tape.v1+json"
SHOTS = os.environ.get("WORKBENCH_SCREENSHOTS")

# Minimal kernel ends of PROTOCOL.md sections 3 and 4, independent of workbench.viz.
KERNEL = textwrap.dedent(f'''
    import json, anywidget, traitlets, numpy as np
    from IPython.display import display
    from workbench.viz import _assets
    FIX = "{FIX}"
    def load(name): return json.load(open(f"{{FIX}}/{{name}}.tape.json"))
    class View(anywidget.AnyWidget):
        _esm = _assets.widget_esm_path()
        view = traitlets.Unicode("tape").tag(sync=True)
        snapshot = traitlets.Dict().tag(sync=True)
        height = traitlets.Int(0).tag(sync=True)
        title = traitlets.Unicode("").tag(sync=True)
    class Debugger(View):
        def __init__(self, snap):
            super().__init__(view="debugger", snapshot={{**snap, "trace": None}})
            self.steps, self.pos, self.bps = snap["trace"]["steps"], 0, set()
            self.on_msg(self._on)
        def _on(self, _w, msg, _b):
            t, new, why = msg["type"], [], None
            if t == "set_breakpoint":
                (self.bps.add if msg["enabled"] else self.bps.discard)(msg["node"]); return
            if t == "sync": new = self.steps[:self.pos]
            elif t == "restart": self.pos = 0
            else:
                while self.pos < len(self.steps):
                    new.append(self.steps[self.pos]); self.pos += 1
                    if self.steps[self.pos - 1]["node"] in self.bps: why = "breakpoint"; break
                    if t != "continue": break
            if self.pos == len(self.steps) and new: why = why or "end"
            self.send({{"type": "state", "position": self.pos, "total": len(self.steps), "steps": new,
                       "step": self.steps[self.pos - 1] if self.pos else None, "paused_reason": why,
                       "breakpoints": sorted(self.bps)}})
    LAYERS, METRICS, HIST = ["encoder.0.weight", "encoder.0.bias", "head.weight"], ["grad_norm", "weight_norm", "update_ratio"], {{"bins": 24, "lo": -8, "hi": 1}}
    def batch(start, n):
        t = np.arange(start, start + n, dtype=np.float32)
        loss = 2 * np.exp(-t / 40) + 0.05
        m = np.stack([np.exp(-t / 60), 1 + t / 200, 1e-3 * np.exp(-t / 80)], axis=1)[:, None, :].repeat(3, axis=1)
        centre = (-2 - t / 40)[:, None, None] + np.array([0.0, 1.0, -1.0])[None, :, None]
        counts = 1000 * np.exp(-(np.linspace(-8, 1, 24)[None, None, :] - centre) ** 2)
        head = {{"type": "monitor", "event": "steps", "layers": LAYERS, "metrics": METRICS, "start": start, "n": n, "hist": HIST}}
        return head, [loss.astype("<f4").tobytes(), m.astype("<f4").tobytes(), counts.astype("<u4").tobytes()]
    class Monitor(anywidget.AnyWidget):
        _esm = _assets.widget_esm_path()
        view = traitlets.Unicode("monitor").tag(sync=True)
        title = traitlets.Unicode("gradient monitor").tag(sync=True)
        def __init__(self):
            super().__init__(); self.n = 0; self.on_msg(self._on)
        def _on(self, _w, msg, _b):
            if msg["type"] == "monitor_sync" and self.n:
                self.send(*batch(0, self.n))
        def push(self, n):
            head, bufs = batch(self.n, n); self.n += n; self.send(head, buffers=bufs)
''')

ALARMS = [{"step": 125, "layer": "head.weight", "kind": "nan", "op": "log", "site": {"file": "train.py", "line": 42, "function": "step"},
           "value": None, "detail": "3 NaN in grad"},
          {"step": 160, "layer": "encoder.0.weight", "kind": "vanishing", "op": None, "site": None, "value": 1e-9, "detail": "grad norm below 1e-7"}]


def code(src, outputs=()):
    return {"cell_type": "code", "metadata": {}, "source": src, "outputs": list(outputs), "execution_count": None}


def shoot(locator, name):
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        locator.screenshot(path=str(Path(SHOTS) / f"{name}.png"))


def show_cell(page, index):
    """Scrolls JupyterLab's notebook to a cell: off-screen cells are hidden (windowed notebook)."""
    page.evaluate(f"""async () => {{
        const nb = window.jupyterapp.shell.currentWidget.content;
        nb.activeCellIndex = {index};
        await nb.scrollToItem({index}, 'start');
    }}""")
    page.wait_for_timeout(300)


def counter_is(page, text):
    page.wait_for_function(f"[...document.querySelectorAll('.wb-counter')].some(e => e.textContent === {text!r})", timeout=15_000)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_views_render_and_talk_to_the_kernel(lab, page, theme):
    lab.write_notebook(f"views-{theme}.ipynb", [
        code(KERNEL),
        code(f'display({{"{MIME}": load("mlp"), "text/html": "<b>FALLBACK</b>", "text/plain": "tape"}}, raw=True)'),
        code('View(snapshot=load("nan_cut"))'),
        code('d = Debugger(load("scalar")); d'),
        code("mon = Monitor(); mon.push(120); display(mon)"),
        code(f"import time\nfor i in range(5):\n    mon.push(10); time.sleep(0.1)\n"
             f"mon.send({{'type': 'monitor', 'event': 'alarms', 'alarms': {ALARMS!r}}})"),
    ])
    open_notebook(page, lab, f"views-{theme}.ipynb", theme=theme)
    page.wait_for_function("document.querySelectorAll('.jp-OutputArea-output .wb-root').length === 4", timeout=60_000)
    outputs = page.locator(".jp-OutputArea-output")
    # By title, not position: the windowed notebook drops off-screen outputs from the DOM.
    root = lambda title: page.locator(f'.jp-OutputArea-output .wb-root[aria-label*="{title}"]')
    mime, tape, dbg, mon = root("mse_loss"), root("log(0)"), root("(a*b + c)"), root("gradient monitor")

    # MIME renderer beats the text/html fallback; modules start collapsed. (JupyterLab hides
    # off-screen cells, so wait for elements to exist rather than to be visible.)
    assert "FALLBACK" not in " ".join(outputs.all_text_contents())
    mime.locator(".wb-box").first.wait_for(state="attached")
    assert mime.locator(".wb-box").count() == 3
    # Layout ran in the Blob worker: the main-thread fallback never had to define itself.
    assert page.evaluate("typeof globalThis.__workbenchLayout") == "undefined"
    # Widget tape view, NaN marked with colour and icon, cut marked.
    tape.locator(".wb-health-nan").first.wait_for(state="attached")
    assert tape.locator(".wb-cut").count() == 1
    # Live debugger: the kernel answers step and continue.
    show_cell(page, 3)
    dbg.get_by_role("button", name="Step", exact=False).first.click()
    counter_is(page, "1 / 7")
    dbg.locator(".wb-graph").click(position={"x": 5, "y": 5})
    page.keyboard.press("c")
    counter_is(page, "7 / 7")
    # Monitor: history sent on sync plus increments; alarms listed.
    page.wait_for_function("[...document.querySelectorAll('.wb-status')].some(e => e.textContent.startsWith('170 steps'))", timeout=15_000)
    assert mon.locator(".wb-chart").count() == 1 and mon.locator(".wb-ov-label").count() == 3  # loss + a row per layer
    assert "step 125 · head.weight · log at train.py:42" in mon.locator(".wb-alarms").text_content()
    for cell, (name, loc) in enumerate([("mime", mime), ("tape", tape), ("debugger", dbg), ("monitor", mon)], start=1):
        show_cell(page, cell)
        shoot(loc, f"{name}-{theme}")

    # The kernel restarts: both live views say so at once, and the debugger keeps stepping
    # through the steps it received.
    page.evaluate("window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()")
    show_cell(page, 3)
    dbg.locator(".wb-banner:not([hidden])").wait_for(timeout=20_000)
    assert "Replaying the 7 steps" in dbg.locator(".wb-banner").text_content()
    assert "kernel connection closed" in mon.locator(".wb-banner").text_content()
    dbg.locator(".wb-graph").click(position={"x": 5, "y": 5})
    for k in "rnn":
        page.keyboard.press(k)
    assert dbg.locator(".wb-counter").text_content() == "2 / 7"
    assert page.errors == []


def test_saved_untrusted_notebook_replays_without_a_kernel(lab, page):
    snap = json.loads((FIX / "scalar.tape.json").read_text())
    out = {"output_type": "display_data", "metadata": {}, "data": {MIME: snap, "text/html": "<b>FALLBACK</b>", "text/plain": ["tape"]}}
    lab.write_notebook("saved.ipynb", [code("wb.viz.show(loss)", [out])])
    open_notebook(page, lab, "saved.ipynb", run=False)
    root = page.locator(".jp-OutputArea-output .wb-root")
    root.locator(".wb-node").first.wait_for(timeout=30_000)
    root.click(position={"x": 300, "y": 5})
    for k in "nnn":
        page.keyboard.press(k)
    assert root.locator(".wb-counter").text_content() == "3 / 7"
    assert "Step 3 / 7 · AddBackward0" in root.locator(".wb-panel").text_content()
    shoot(root, "saved-untrusted")
    assert page.errors == []
