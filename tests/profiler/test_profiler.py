"""workbench.profiler against torch.profiler (the oracle for the interface and the table's columns), the
chrome trace against the Trace Event format, the times reaching the tape snapshot, and the hooks coming off."""
import json

import pytest

import workbench as wb
from workbench.autograd.function import Function
from workbench.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule

torch = pytest.importorskip("torch")
import torch.profiler as tp  # noqa: E402


def header(table):
    """The column names of a PyTorch-style table (its second line, split on runs of 2+ spaces)."""
    import re

    return [c for c in re.split(r"\s{2,}", table.splitlines()[1].strip()) if c]


def step(lib, m, x):
    with lib.profiler.record_function("model_inference"):
        y = m(x).relu().sum()
    y.backward()
    return y


def both(**kw):
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    wm = wb.nn.Sequential(wb.nn.Linear(4, 8), wb.nn.ReLU(), wb.nn.Linear(8, 3))
    # a step outside the profile first: the process's first compiled loop loads Numba (~0.5 s), which would
    # otherwise land in whichever backward runs first when this file runs alone
    step(wb, wb.nn.Sequential(wb.nn.Linear(4, 8), wb.nn.ReLU(), wb.nn.Linear(8, 3)), wb.randn(2, 4))
    with tp.profile(activities=[tp.ProfilerActivity.CPU], **kw) as tprof:
        step(torch, tm, torch.randn(2, 4))
    with profile(activities=[ProfilerActivity.CPU], **kw) as wprof:
        y = step(wb, wm, wb.randn(2, 4))
    return tprof, wprof, y, wm


@pytest.mark.parametrize("kw, grouped", [({}, False), ({"profile_memory": True}, False),
                                         ({"record_shapes": True}, True), ({"with_flops": True}, False)])
def test_table_columns_are_pytorchs(kw, grouped):
    tprof, wprof, _, _ = both(**kw)
    t = tprof.key_averages(group_by_input_shape=grouped).table(sort_by="cpu_time_total", row_limit=5)
    w = wprof.key_averages(group_by_input_shape=grouped).table(sort_by="cpu_time_total", row_limit=5)
    th, wh = header(t), header(w)
    if kw.get("with_flops"):  # the unit follows the smallest count: compare the name around it
        assert th[-1].startswith("Total ") and th[-1].endswith("FLOPs") and wh[-1].startswith("Total ")
        th, wh = th[:-1], wh[:-1]
    assert wh == th
    assert w.splitlines()[-1].startswith("Self CPU time total: ")
    assert len([line for line in w.splitlines()[3:-2] if line.strip()]) == 5  # row_limit
    rows = wprof.key_averages()
    first = max(rows, key=lambda e: e.cpu_time_total)
    assert first.key == "model_inference"
    assert abs(rows.self_cpu_time_total - sum(e.self_cpu_time_total for e in rows)) < 1e-6


def test_events_nest_ops_in_modules_and_backward_in_its_lane():
    _, prof, y, m = both(record_shapes=True, profile_memory=True, with_flops=True)
    ev = prof.events()
    lin = [e for e in ev if e.name == "linear"]
    assert [e.scope for e in lin] == ["0", "2"]
    assert lin[0].range_parent.name == "nn.Module: Linear" and lin[0].cpu_parent.name == "model_inference"
    assert lin[0].input_shapes == [[2, 4], [8, 4], [8]]
    assert lin[0].flops == 2 * 2 * 4 * 8 and lin[0].self_cpu_memory_usage == 2 * 8 * 4
    back = [e for e in ev if e.lane == 1]
    assert {e.name for e in back} >= {"autograd::engine::evaluate_function: LinearBackward0",
                                      "autograd::engine::evaluate_function: AccumulateGrad"}
    assert min(e.start_us for e in back) >= max(e.start_us + e.cpu_time_total for e in ev if e.lane == 0)
    for e in ev:
        if e.range_parent is not None:
            p = e.range_parent
            assert p.start_us <= e.start_us and e.start_us + e.cpu_time_total <= p.start_us + p.cpu_time_total
    # the times reach the tape: forward and backward per node, summed per module
    d = wb.viz.snapshot(y, m).to_dict()
    ops = {n["op"]: n for n in d["nodes"] if n["kind"] in ("op", "output")}
    assert ops["linear"]["forward_us"] > 0 and ops["linear"]["backward_us"] > 0
    assert all(n["backward_us"] > 0 for n in d["nodes"] if n["kind"] == "param")
    mods = {x["path"]: x for x in d["modules"]}
    assert mods["0"]["forward_us"] == pytest.approx(lin[0].cpu_time_total, rel=1e-3)


def test_chrome_trace_is_trace_event_format(tmp_path):
    _, prof, _, _ = both(record_shapes=True)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    doc = json.loads(path.read_text())
    evs = doc["traceEvents"]
    xs = [e for e in evs if e["ph"] == "X"]
    assert xs and all(e["ph"] in ("X", "M") for e in evs)
    for e in xs:
        assert {"name", "ph", "ts", "dur", "pid", "tid", "cat"} <= set(e)
        assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
    names = {(e["args"]["name"], e["tid"]) for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {("forward", 1), ("backward", 2)}
    # complete events on one thread nest: each one lies inside any other it overlaps
    eps = 1e-6
    for tid in (1, 2):
        lane = sorted((e for e in xs if e["tid"] == tid), key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in lane:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"] + eps:
                stack.pop()
            if stack:
                assert e["ts"] + e["dur"] <= stack[-1]["ts"] + stack[-1]["dur"] + eps, (stack[-1], e)
            stack.append(e)
    lanes = {e["name"]: e["tid"] for e in xs}
    assert lanes["linear"] == 1 and lanes["autograd::engine::evaluate_function: LinearBackward0"] == 2
    assert lanes["nn.Module: 0 (backward)"] == 2  # the backward steps nest in their module scopes


@pytest.mark.parametrize("kw", [dict(wait=1, warmup=1, active=2), dict(wait=1, warmup=1, active=2, repeat=2),
                                dict(wait=0, warmup=0, active=1, skip_first=3),
                                dict(wait=2, warmup=1, active=1, repeat=1, skip_first=1, skip_first_wait=1)])
def test_schedule_matches_pytorch(kw):
    assert [schedule(**kw)(i).name for i in range(14)] == [tp.schedule(**kw)(i).name for i in range(14)]


def test_schedule_steps_and_trace_handler(tmp_path):
    ready = []
    x = wb.ones(3, requires_grad=True)
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
                 on_trace_ready=lambda p: ready.append((p.step_num, sorted({e.step for e in p.events()})))) as prof:
        for _ in range(9):
            (x * 2).sum().backward()
            prof.step()
    assert ready == [(4, [2, 3]), (8, [6, 7])]
    assert [e.key for e in prof.key_averages() if e.key.startswith("ProfilerStep")] == ["ProfilerStep*"]
    assert prof.current_action is None and ProfilerAction.NONE.value == 0
    with profile(on_trace_ready=wb.profiler.tensorboard_trace_handler(str(tmp_path), "w1", use_gzip=True)):
        _ = x * 3
    (f,) = list(tmp_path.iterdir())
    assert f.name.startswith("w1.") and f.name.endswith(".pt.trace.json.gz")


def test_record_function_decorator_no_grad_fast_paths_and_hooks_restored():
    before = (wb.Tensor.__dict__["__mul__"], Function.__dict__["apply"], wb.exp)

    @record_function("helper")
    def helper(t):
        return wb.exp(t) * 2  # the operator's and exp's fast paths skip apply: the profiler still sees them

    with record_function("outside"):  # no profiler: nothing happens
        pass
    with wb.no_grad(), profile() as prof:
        helper(wb.ones(3))
    names = [(e.name, e.cpu_parent.name if e.cpu_parent else None) for e in prof.events()]
    assert names == [("helper", None), ("exp", "helper"), ("mul", "helper")]
    assert (wb.Tensor.__dict__["__mul__"], Function.__dict__["apply"], wb.exp) == before
    with profile():
        with pytest.raises(RuntimeError, match="already recording"):
            profile().start()


def test_cuda_device_time_from_events(fake_cuda):
    x = wb.ones(64, 64, device="cuda", requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True) as prof:
        (x @ x).sum().backward()
    mm = next(e for e in prof.events() if e.name == "mm")
    assert mm.device_time_total > 0 and mm.device_memory_usage == 64 * 64 * 4
    cols = header(prof.key_averages().table(sort_by="cuda_time_total"))
    assert cols[6:10] == ["Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"]
    assert "CUDA Mem" in cols and "Self CUDA Mem" in cols
    trace = wb.profiler.profiler.chrome_trace(prof.events())
    assert any(e.get("cat") == "kernel" and e["name"] == "mm" for e in trace["traceEvents"])


def test_notebook_bundle_is_a_timeline_and_the_table():
    _, prof, _, _ = both()
    b = prof._repr_mimebundle_()
    assert set(b) == {"text/html", "text/plain"}
    assert b["text/plain"].startswith("---") and "Self CPU %" in b["text/plain"]
    html = b["text/html"]
    assert html.count("<svg") == 1 and "forward" in html and "backward" in html and "0 (Linear)" in html
    assert "<script" not in html
    import xml.etree.ElementTree as ET

    svg = ET.fromstring(html[html.index("<svg"):html.index("</svg>") + 6])  # well-formed, so browsers draw it
    rects = [r for r in svg.iter("{http://www.w3.org/2000/svg}rect")][1:]  # after the background
    assert len(rects) == len(prof.events()) + 3  # + the backward module scopes 2, 1, 0
    assert all(float(r.get("width")) > 0 for r in rects)


def test_threads_nest_their_own_ranges():
    import threading

    def work():
        with record_function("in_thread"):
            _ = wb.ones(8) * 2

    with profile() as prof:
        with record_function("main"):
            t = threading.Thread(target=work)
            t.start()
            t.join()
            _ = wb.ones(4) + 1
    parents = {e.name: e.cpu_parent.name if e.cpu_parent else None for e in prof.events()}
    assert parents == {"main": None, "in_thread": None, "mul": "in_thread", "add": "main"}
    assert "nothing recorded" in profile()._repr_mimebundle_()["text/plain"]
