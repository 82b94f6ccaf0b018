"""A profile as Trace Event Format JSON (the ``traceEvents`` document Perfetto and chrome://tracing open).

Every range is a complete event (``"ph": "X"``) with ``ts``/``dur`` in microseconds from the profile's
start. The host process has two threads: 1 ``forward`` (the caller's thread: ops nested in module
calls and record_function ranges) and 2 ``backward`` (the engine's steps, nested in the module scopes
of the nodes they ran, which are added as ranges over each run of consecutive steps in one module).
Ops timed on a CUDA device also appear on a device process (pid 0) with their CUDA-event times.
"""
import os

CATEGORY = {"op": "cpu_op", "backward": "cpu_op", "user": "user_annotation", "step": "user_annotation",
            "module": "python_function"}
LANES = {0: "forward", 1: "backward"}


def backward_scopes(events):
    """Ranges over runs of consecutive backward steps in one module scope, one per dotted level:
    [(scope, level, start_us, end_us)], so the backward lane nests like the forward one."""
    steps = [e for e in events if e.lane == 1 and e.kind == "backward" and
             (e.range_parent is None or e.range_parent.lane != 1)]
    steps.sort(key=lambda e: e.start_us)
    out = []
    open_ = []  # [scope, start, end] per level
    for e in steps:
        parts = e.scope.split(".") if e.scope else []
        paths = [".".join(parts[:k + 1]) for k in range(len(parts))]
        keep = 0
        while keep < len(open_) and keep < len(paths) and open_[keep][0] == paths[keep]:
            keep += 1
        for level in range(len(open_) - 1, keep - 1, -1):
            sc, st, en = open_.pop()
            out.append((sc, level, st, en))
        for p in paths[keep:]:
            open_.append([p, e.start_us, e.start_us])
        end = e.start_us + e.cpu_time_total
        for o in open_:
            o[2] = end
    for level in range(len(open_) - 1, -1, -1):
        sc, st, en = open_.pop()
        out.append((sc, level, st, en))
    return out


def _args(e):
    a = {}
    if e.input_shapes:
        a["Input Dims"] = e.input_shapes
    if e.scope:
        a["Module"] = e.scope
    if e.stack:
        a["Call stack"] = ";".join(e.stack)
    if e.flops:
        a["FLOPs"] = e.flops
    if e.cpu_memory_usage:
        a["Allocated bytes"] = e.cpu_memory_usage
    if e.step is not None:
        a["Step"] = e.step
    return a


def chrome_trace(events, metadata=None):
    """The Trace Event JSON document (a dict) of an EventList.

    >>> import workbench as wb
    >>> with wb.profiler.profile() as prof:
    ...     _ = wb.ones(2) * 3
    >>> doc = chrome_trace(prof.events())
    >>> [(e["ph"], e["name"]) for e in doc["traceEvents"] if e["ph"] == "X"]
    [('X', 'mul')]
    """
    pid = os.getpid()
    out = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "workbench (host)"}}]
    for tid, name in LANES.items():
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid + 1, "args": {"name": name}})
        out.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid + 1, "args": {"sort_index": tid}})
    device = False
    for e in events:
        out.append({"ph": "X", "cat": CATEGORY[e.kind], "name": e.name, "pid": pid, "tid": e.lane + 1,
                    "ts": e.start_us, "dur": e.cpu_time_total, "args": _args(e)})
        if e.device_start is not None:
            device = True
            out.append({"ph": "X", "cat": "kernel", "name": e.name, "pid": 0, "tid": 1, "ts": e.device_start,
                        "dur": e.device_time_total, "args": {"Host start (us)": e.start_us}})
    for scope, level, start, end in backward_scopes(events):
        out.append({"ph": "X", "cat": "python_function", "name": f"nn.Module: {scope} (backward)", "pid": pid,
                    "tid": 2, "ts": start, "dur": end - start, "args": {"Module": scope}})
    if device:
        out.append({"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "CUDA (event times)"}})
    doc = {"traceEvents": out, "displayTimeUnit": "ms", "schemaVersion": 1}
    if metadata:
        doc["metadata"] = dict(metadata)
    return doc
