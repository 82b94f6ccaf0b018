"""How fast the tape viewer is on big graphs, in headless Chromium (Debian's /usr/bin/chromium).

    python benchmarks/viewer_speed.py [--nodes 2000,20000]

For each size, a deep model (blocks of Linear(4, 4) + Tanh in stages of 50 blocks, four tape nodes per
block) is recorded and saved as the standalone viewer page (``snapshot.save("tape.html")``: the same
viewer, layout worker and stylesheet as JupyterLab's). Figures, from the page's own clock:

- ready_ms: page start to the first layout drawn (the status line says "N items shown of M nodes");
- open_ms: the first stage's box clicked to that layout drawn (its 50 blocks shown as boxes: the
  dagre layout, as a user opens a block list);
- expand_ms: "Expand all" clicked to that layout drawn (every node laid out and culled to the view);
- longest_task_ms: the longest main-thread task seen meanwhile (PerformanceObserver "longtask"),
  i.e. how long the page could not answer a click;
- static_ms: the kernel-free drawing (``render_svg``, the bundle's ``text/html``: modules collapsed to fit
  60 boxes), in Python, best of three;
- recolour_ms: the expanded graph's "Colour by" switched from FLOPs to saved bytes (setOverlay:
  new tints, legend and top-N table, no relayout) to the next frame drawn.

Targets: 2,000 nodes ready, opened and expanded within 1 s each, recoloured within 100 ms; 20,000 nodes never
freeze the page (no task of 1 s or more).

The scrub rows (``--scrub 2000``): the same model trained 20 SGD steps under
``wb.viz.watch(model, snapshots_every=1)``, ``mon.snapshots`` saved as that page, then the step
slider moved through every kept step, modules collapsed (as it opens) and expanded; a step's time runs
from the slider's input event to the frame after it was drawn (setOverlay's recolouring, style and
paint; frame-bound, so about 16.7 ms at least), and the recolouring's own work (setOverlay, the
event handler's time). Target: within 100 ms a step. Without chromium or playwright it says so and exits 0.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import workbench as wb  # noqa: E402
import workbench.nn as nn  # noqa: E402
from workbench.viz.static_svg import render_svg  # noqa: E402

CHROMIUM = os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium")
LONGTASKS = """window.__longest = 0;
new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__longest = Math.max(window.__longest, e.duration); })
  .observe({ type: "longtask", buffered: true });"""
SHOWN = "() => /items shown of/.test(document.querySelector('.wb-status')?.textContent ?? '')"


def tape_model(nodes):
    blocks = max(1, nodes // 4)
    stages = [nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.Tanh()) for _ in range(min(50, blocks - s))])
              for s in range(0, blocks, 50)]
    return nn.Sequential(*stages)


def tape(nodes):
    model = tape_model(nodes)
    with wb.viz.record():
        loss = model(wb.randn(2, 4)).sum()
    return wb.viz.snapshot(loss, model, color_by="flops")


def series(nodes, steps=20):
    """``mon.snapshots`` of the deep model above trained ``steps`` SGD steps, every step kept."""
    model = tape_model(nodes)
    x = wb.randn(2, 4)
    mon = wb.viz.watch(model, snapshots_every=1, display=False, histograms=False)
    opt = wb.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        opt.zero_grad()
        model(x).pow(2).sum().backward()
        opt.step()
    mon.detach()
    return mon.snapshots


SCRUB = """async () => {
  const s = document.querySelector('.wb-step-slider'), out = [];
  for (let i = 0; i <= Number(s.max); i++) {
    const t0 = performance.now();
    s.value = String(i);
    s.dispatchEvent(new Event('input'));
    const work = performance.now() - t0;
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    out.push([work, performance.now() - t0]);
  }
  return out;
}"""


def scrub(page, path):
    """Per-step redraw times (ms) of the slider, collapsed then expanded, and the status line."""
    page.goto(f"file://{path}")
    page.wait_for_function(SHOWN, timeout=120_000)
    collapsed = page.evaluate(SCRUB)
    before = page.evaluate("document.querySelector('.wb-status').textContent")
    page.locator(".wb-btn", has_text="Expand all").click()
    page.wait_for_function(f"() => {{ const t = document.querySelector('.wb-status').textContent;"
                           f" return t !== {before!r} && /items shown of/.test(t); }}", timeout=120_000)
    expanded = page.evaluate(SCRUB)
    return collapsed, expanded, page.evaluate("document.querySelector('.wb-step-label').textContent")


def static_ms(d):
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        render_svg(d)
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def timed(page, act, done):
    """ms from ``act`` (a click) to the JS predicate ``done`` holding (polled each animation frame)."""
    page.evaluate("window.__t0 = performance.now()")
    act()
    page.wait_for_function(done, timeout=120_000)
    return page.evaluate("performance.now() - window.__t0")


def measure(page, path):
    page.goto(f"file://{path}")
    page.wait_for_function(SHOWN, timeout=120_000)
    ready = page.evaluate("performance.now()")
    # the first stage opened: drawn once its first block's box is
    opened = timed(page, lambda: page.locator(".wb-graph .wb-box").first.dispatch_event("click"),
                   "() => !!document.querySelector('.wb-graph .wb-box[data-id=\"m:0.0\"]')")
    before = page.evaluate("document.querySelector('.wb-status').textContent")
    expand = timed(page, lambda: page.locator(".wb-btn", has_text="Expand all").click(),
                   f"() => {{ const t = document.querySelector('.wb-status').textContent;"
                   f" return t !== {before!r} && /items shown of/.test(t); }}")
    status = page.evaluate("document.querySelector('.wb-status').textContent")
    recolour = page.evaluate("""async () => {
      const s = document.querySelector('.wb-select'), t0 = performance.now();
      s.value = 'saved_bytes';
      s.dispatchEvent(new Event('change'));
      await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
      return performance.now() - t0; }""")
    return ready, opened, expand, page.evaluate("window.__longest"), recolour, status


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", default="2000,20000", help="tape sizes, comma-separated")
    ap.add_argument("--scrub", default="2000", help="watched-run sizes for the step-slider rows, comma-separated ('' for none)")
    args = ap.parse_args()
    try:
        from playwright.sync_api import sync_playwright  # the [dev] extra's; optional here
    except ImportError:
        print("viewer_speed: playwright is not installed (pip install -e '.[dev]'); nothing measured")
        return
    if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
        print(f"viewer_speed: no chromium at {CHROMIUM} (apt-get install chromium); nothing measured")
        return
    tmp = tempfile.mkdtemp()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        print(f"{'nodes':>7} {'ready_ms':>9} {'open_ms':>8} {'expand_ms':>10} {'longest_task_ms':>16} {'recolour_ms':>12}"
              f" {'static_ms':>10}  status after expand")
        for n in [int(s) for s in args.nodes.split(",")]:
            snap = tape(n)
            path = snap.save(os.path.join(tmp, f"tape{n}.html"))
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.add_init_script(LONGTASKS)
            ready, opened, expand, longest, recolour, status = measure(page, path)
            static = static_ms(snap.to_dict())
            print(f"{len(snap.to_dict()['nodes']):>7} {ready:>9.0f} {opened:>8.0f} {expand:>10.0f} {longest:>16.0f} {recolour:>12.0f}"
                  f" {static:>10.0f}  {status}")
            page.close()
        sizes = [int(s) for s in args.scrub.split(",") if s]
        if sizes:
            print(f"\n{'nodes':>7} {'steps':>6} {'view':>10} {'drawn_median_ms':>16} {'drawn_max_ms':>13} "
                  f"{'work_median_ms':>15} {'work_max_ms':>12}  label at the end")
        for n in sizes:
            snaps = series(n)
            path = snaps.save(os.path.join(tmp, f"series{n}.html"))
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            collapsed, expanded, label = scrub(page, path)
            for view, ts in (("collapsed", collapsed), ("expanded", expanded)):
                work, drawn = sorted(t[0] for t in ts), sorted(t[1] for t in ts)
                print(f"{len(snaps.to_dict()['nodes']):>7} {len(snaps):>6} {view:>10} {drawn[len(ts) // 2]:>16.1f} "
                      f"{drawn[-1]:>13.1f} {work[len(ts) // 2]:>15.1f} {work[-1]:>12.1f}  {label}")
            page.close()
        browser.close()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
