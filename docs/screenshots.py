"""Retakes the pictures of docs/viz.md (docs/images/*.png): the real viewer bundle in headless Chromium.

    python docs/screenshots.py [DIR]    # needs the built extension (make setup) and /usr/bin/chromium

The tape viewer and the backward debugger are the offline page ``snapshot.save("x.html")`` writes; the
gradient monitor is its saved report (``monitor_report``), drawn by the same bundle.
"""
import json
import os
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import workbench as wb  # noqa: E402
import workbench.nn as nn  # noqa: E402
import workbench.nn.functional as F  # noqa: E402
from workbench.viz import _assets  # noqa: E402
from workbench.viz.views import monitor_report  # noqa: E402

IMAGES = Path(__file__).resolve().parent / "images"
CHROMIUM = os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium")


def model_and_data():
    wb.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    return model, wb.randn(32, 4), wb.randint(0, 3, (32,))


def overlay_page(tmp):
    """A wider MLP's tape coloured by FLOPs (deterministic, unlike times)."""
    wb.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    x, y = wb.randn(128, 64), wb.randint(0, 10, (128,))
    scope = {"F": F, "model": model, "x": x, "y": y}
    with wb.viz.record():  # the selected node's source line: that of a short "train.py", as for the debugger
        exec(compile("loss = F.cross_entropy(model(x), y)\n", "train.py", "exec"), scope)
    loss = scope["loss"]
    loss.backward()
    return wb.viz.snapshot(loss, model, title="loss, coloured by FLOPs", color_by="flops").save(tmp / "overlay.html")


def monitor_page(tmp):
    model, x, y = model_and_data()
    opt = wb.optim.Adam(model.parameters(), lr=1e-2)
    mon = wb.viz.watch(model, title="gradient monitor", plot_on_detach=False, display=False)
    for _ in range(120):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        mon.log(loss=loss.item())
    mon.detach()
    report = json.dumps(monitor_report(mon.stats, "gradient monitor")).replace("</", "<\\/")
    js = _assets.standalone_js().replace("</script", "<\\/script")
    page = tmp / "monitor.html"
    page.write_text(f'<!doctype html><html><body style="margin:0"><div id="m"></div><script>{js}</script>'
                    f'<script>workbench.renderReport(document.getElementById("m"), {report});</script></body></html>')
    return page


def series_page(tmp):
    """``mon.snapshots`` of a run kept every 10 steps, saved as the offline page (slider and play)."""
    model, x, y = model_and_data()
    opt = wb.optim.SGD(model.parameters(), lr=0.5)
    mon = wb.viz.watch(model, snapshots_every=10, display=False)
    for _ in range(100):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    mon.detach()
    return mon.snapshots.save(tmp / "series.html")


def compare_page(tmp):
    """``wb.viz.compare`` of step 0 and step 50 of a run whose ReLU then became a GELU (offline page)."""
    model, x, y = model_and_data()
    a = wb.viz.snapshot(F.cross_entropy(model(x), y), model, title="step 0, ReLU", trace=True)
    opt = wb.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(50):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    model[1] = nn.GELU()
    model.zero_grad()
    b = wb.viz.snapshot(F.cross_entropy(model(x), y), model, title="step 50, GELU", trace=True)
    return wb.viz.compare(a, b).save(tmp / "compare.html")


def main(images=IMAGES):
    tmp = Path(tempfile.mkdtemp())
    model, x, y = model_and_data()
    with wb.viz.record():
        loss = F.cross_entropy(model(x), y)
    wb.viz.snapshot(loss, model, title="loss").save(tmp / "tape.html")
    model.zero_grad()
    scope = {"F": F, "model": model, "x": x, "y": y}
    with wb.viz.trace():  # the debugger shows each node's forward line: that of a short "train.py"
        exec(compile("loss = F.cross_entropy(model(x), y)\n", "train.py", "exec"), scope)
    loss = scope["loss"]
    wb.viz.snapshot(loss, model, trace=True, title="backward, step by step").save(tmp / "debug.html")
    monitor = monitor_page(tmp)
    overlay = overlay_page(tmp)
    series = series_page(tmp)
    compare = compare_page(tmp)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 960, "height": 640})
        page.goto((tmp / "tape.html").as_uri())
        page.locator(".wb-root .wb-node").first.wait_for()
        page.wait_for_timeout(500)
        page.screenshot(path=images / "tape-viewer.png")
        page.goto((tmp / "debug.html").as_uri())
        page.locator(".wb-root .wb-node").first.wait_for()
        for _ in range(4):
            page.locator(".wb-btn[aria-keyshortcuts='n']").click()
        page.wait_for_timeout(500)
        page.screenshot(path=images / "backward-debugger.png")
        page.goto(Path(overlay).as_uri())
        page.locator(".wb-root .wb-box").first.wait_for()
        page.locator(".wb-topn-row").first.click()  # the costliest op, inside its module: opened and centred
        page.wait_for_timeout(800)
        page.screenshot(path=images / "tape-overlay.png")
        page.goto(monitor.as_uri())
        page.locator("#m svg").first.wait_for()
        page.wait_for_timeout(500)
        page.locator("#m").screenshot(path=images / "gradient-monitor.png")
        page.goto(Path(series).as_uri())
        page.locator(".wb-root .wb-ov-has").first.wait_for()
        page.locator(".wb-btn", has_text="Expand all").click()
        page.locator(".wb-step-slider").focus()
        page.keyboard.press("Home")  # the first kept step: the gradients before training moved them
        page.wait_for_timeout(500)
        page.screenshot(path=images / "tape-over-time.png")
        page.goto(Path(compare).as_uri())
        page.locator(".wb-root .wb-ov-has").first.wait_for()
        page.locator(".wb-btn", has_text="Expand all").click()
        page.locator(".wb-cmp-added").click()  # walks to the added GELU and selects it
        page.wait_for_timeout(500)
        page.screenshot(path=images / "compare.png")
        browser.close()
    for name in ("tape-viewer", "backward-debugger", "tape-overlay", "gradient-monitor", "tape-over-time", "compare"):
        print(images / f"{name}.png", (images / f"{name}.png").stat().st_size // 1024, "KiB")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else IMAGES)
