"""Kernel-free views: the bundles the debugger and the monitor leave in a notebook, and plain-script output."""
import json
import re
from html import unescape

import numpy as np

import workbench as wb
from models import MLP, mse
from workbench.viz.monitor_svg import ALARM_CHAR_W
from workbench.viz.views import MONITOR_MIME, monitor_report


def _train(m, steps, nan_at=None):
    x, y = wb.randn(8, 3), wb.randn(8, 2)
    for k in range(steps):
        for p in m.parameters():
            p.grad = None
        out = m(x)
        if k == nan_at:
            out = out * wb.tensor(float("nan"))
        mse(out, y).backward()


def test_debugger_output_carries_the_whole_replay_and_leaves_grads_untouched():
    m = MLP()
    loss = mse(m(wb.randn(8, 3)), wb.randn(8, 2))
    dbg = wb.viz.debug(loss, m, display=False)
    assert all(p.grad is None for p in m.parameters())  # the recorded run was undone
    bundle, _ = dbg._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    snap = bundle[wb.viz.MIME]
    assert len(snap["trace"]["steps"]) == dbg.total
    json.dumps(snap, allow_nan=False)
    assert "<svg" in bundle["text/html"] and "object at 0x" not in bundle["text/plain"]
    assert bundle["text/plain"].startswith("<workbench debugger") and "\n" not in bundle["text/plain"]
    dbg.stepper.run_to_end()  # stepping live still gives backward()'s gradients
    by_name = dict(m.named_parameters())
    grads = {n["param"]: n["grad"]["norm"] for n in snap["nodes"] if n["kind"] == "param"}
    assert len(grads) == 4
    for name, g in grads.items():  # the replay's final .grad summaries equal the live run's
        assert np.isclose(g, float(by_name[name].grad.norm()), rtol=1e-5)


def test_monitor_report_holds_charts_and_alarms_downsampled():
    m = MLP()
    mon = wb.viz.watch(m, display=False)
    _train(m, 40, nan_at=30)
    mon.detach()
    rep = monitor_report(mon.stats, "run", max_rows=16)
    json.dumps(rep, allow_nan=False)
    assert rep["every"] == 3 and rep["n"] == 14 and len(rep["values"]) == 14
    assert len(rep["values"][0]) == len(mon.layers) and len(rep["values"][0][0]) == 3
    assert rep["values"][0][0][1] is not None and rep["values"][1][0][1] is None  # weight norms on detail steps only
    assert rep["values"][10][0][0] == "NaN"  # step 30: the NaN gradient
    assert [a["kind"] for a in rep["alarms"]] == ["nan"]
    bundle, _ = mon._repr_mimebundle_()
    assert set(bundle) >= {MONITOR_MIME, "text/html", "text/plain", "application/vnd.jupyter.widget-view+json"}
    assert "40 steps" in bundle["text/plain"] and "1 alarms (nan)" in bundle["text/plain"]
    assert bundle["text/html"].count("<svg") == 1 and "data:image/png;base64," in bundle["text/html"]
    # the alarm's where and what on a line each, neither running past the drawing's right edge (nbconvert's
    # HTML cut "the loss itself is nan" off at 850 px), the whole alarm in its tooltip
    html = bundle["text/html"]
    width = float(re.search(r'<svg [^>]*width="([\d.]+)"', html).group(1))
    lines = re.findall(r'<text x="([\d.]+)" y="[\d.]+" font-size="11" fill="currentColor">(.*?)</text>', html)
    assert len(lines) == 2
    for x, text in lines:
        assert float(x) + ALARM_CHAR_W * len(unescape(re.sub(r"<[^>]+>", "", text))) <= width - 16
    assert "(the loss itself is nan)</title>" in html


def test_outside_ipython_show_and_watch_print_one_line(capsys):
    w = wb.ones(2, requires_grad=True)
    wb.viz.show((w * 2).sum())
    m = MLP()
    wb.viz.watch(m).detach()
    wb.viz.debug(mse(m(wb.randn(2, 3)), wb.randn(2, 2)), m)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3
    assert out[0].startswith("<workbench tape") and out[1].startswith("<workbench gradient monitor")
    assert out[2].startswith("<workbench debugger")
