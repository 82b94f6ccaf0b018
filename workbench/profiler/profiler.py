"""``profile``, ``schedule``, ``record_function``: PyTorch's profiler interface over workbench's ops.

Ops are named as workbench names them (``mul``, ``matmul``, ``linear``, ``convolution``; PyTorch shows
``aten::mul``...); backward steps as PyTorch names them (``autograd::engine::evaluate_function:
MulBackward0``); user ranges by their record_function name; scheduled steps ``ProfilerStep#N``.
"""
import enum
import functools
import gzip
import json
import os
import socket
import time

from .. import _backend
from . import collect
from .chrome_trace import chrome_trace
from .events import DeviceType, EventList, FunctionEvent  # noqa: F401 - DeviceType is public here
from .timeline import bundle

_ACTIVE = [None]  # the Collector of the profile now recording, if any


class ProfilerActivity(enum.Enum):
    """What to time: CPU (host time of every op) and CUDA (device time from CUDA events)."""

    CPU = 0
    CUDA = 2


class ProfilerAction(enum.Enum):
    """What the profiler does at a step (what a ``schedule`` returns)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities():
    """The activities this process can profile: CPU, and CUDA when CuPy (or the test fake) is loaded.

    >>> import workbench as wb
    >>> wb.profiler.ProfilerActivity.CPU in wb.profiler.supported_activities()
    True
    """
    acts = {ProfilerActivity.CPU}
    if _backend.cupy_loaded():
        acts.add(ProfilerActivity.CUDA)
    return acts


def kineto_available():
    """False: workbench times ops itself (PyTorch's Kineto library is not used)."""
    return False


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """A step -> ProfilerAction function, as PyTorch's: skip ``skip_first`` steps, then cycles of
    ``wait`` idle, ``warmup`` warm-up and ``active`` recorded steps (the last one saves), ``repeat``
    times (0: forever).

    >>> import workbench as wb
    >>> s = wb.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
    >>> [s(i).name for i in range(5)]
    ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        # AssertionError, as PyTorch raises here
        raise AssertionError(f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
                             f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
                             f"skip_first={skip_first} (need >= 0).")

    def fn(step):
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:  # the first cycle starts without its wait
            step += wait
        cycle = wait + warmup + active
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        mod = step % cycle
        if mod < wait:
            return ProfilerAction.NONE
        if mod < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return fn


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False, use_python_export=False):
    """An ``on_trace_ready`` that writes each finished trace to ``dir_name`` as
    ``<worker>.<ms>.pt.trace.json`` (``.gz`` with use_gzip): the files TensorBoard's profiler plugin,
    Perfetto and chrome://tracing open.

    >>> import tempfile, os, workbench as wb
    >>> d = tempfile.mkdtemp()
    >>> with wb.profiler.profile(on_trace_ready=wb.profiler.tensorboard_trace_handler(d, "w")):
    ...     _ = wb.ones(2) * 2
    >>> [f.endswith(".pt.trace.json") for f in os.listdir(d)]
    [True]
    """

    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))

    return handler


class profile:
    """Time every op, backward step and module call of the block (or of the scheduled steps).

    Results: ``events()``, ``key_averages(group_by_input_shape=...)`` and its ``.table(sort_by=...,
    row_limit=...)`` (PyTorch's columns), ``export_chrome_trace(path)``; in a notebook the object
    shows as a timeline (forward and backward lanes, ops nested in module calls) and the table. The
    autograd nodes recorded in the block carry their times, so a later ``wb.viz.show(loss)`` fills
    ``forward_us``/``backward_us`` and colours by them.

    >>> import workbench as wb
    >>> from workbench.profiler import profile, ProfilerActivity
    >>> w = wb.ones(3, requires_grad=True)
    >>> with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    ...     (w * 2).sum().backward()
    >>> sorted({e.key for e in prof.key_averages()})[:2]
    ['autograd::engine::evaluate_function: AccumulateGrad', 'autograd::engine::evaluate_function: MulBackward0']
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False, use_cuda=None,
                 custom_trace_id_callback=None, post_processing_timeout_s=None):
        acts = set(activities) if activities is not None else supported_activities()
        if use_cuda:
            acts.add(ProfilerActivity.CUDA)
        for a in acts:
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"profile(): activities must be ProfilerActivity members, got {a!r}")
        self.activities = acts
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.with_stack, self.with_flops, self.with_modules = with_stack, with_flops, with_modules
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.step_num = 0
        self.current_action = None
        self._collector = None
        self._step_range = None
        self._events = None
        self._metadata = {}

    # --- running ------------------------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        """Begin: record now (no schedule) or as the schedule says for step 0."""
        self.step_num = 0
        self.current_action = self.schedule(0) if self.schedule else ProfilerAction.RECORD
        if self._recording(self.current_action):
            self._start_recording()

    def stop(self):
        """End: finish the trace being recorded and hand it to ``on_trace_ready``."""
        if self._collector is not None:
            self._stop_recording()
            self._ready()
        self.current_action = None

    def step(self):
        """Mark the end of a training step: the schedule decides what the next step records."""
        if self.current_action is None:
            return
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num) if self.schedule else ProfilerAction.RECORD
        if self._collector is not None:
            if prev is ProfilerAction.RECORD_AND_SAVE or not self._recording(self.current_action):
                self._stop_recording()
                if prev is ProfilerAction.RECORD_AND_SAVE:
                    self._ready()
            else:
                self._next_step_range()
        if self._collector is None and self._recording(self.current_action):
            self._start_recording()

    @staticmethod
    def _recording(action):
        return action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)

    def _start_recording(self):
        if _ACTIVE[0] is not None:
            raise RuntimeError("profile(): another workbench profiler is already recording in this process; "
                               "nest record_function() ranges instead of profilers")
        c = collect.Collector(self.record_shapes, self.profile_memory, self.with_stack, self.with_flops,
                              ProfilerActivity.CUDA in self.activities)
        self._collector = c
        _ACTIVE[0] = c
        c.install()
        if self.schedule is not None:
            self._next_step_range()

    def _next_step_range(self):
        c = self._collector
        if self._step_range is not None:
            c.end(self._step_range)
        c.step = self.step_num
        self._step_range = c.begin(f"ProfilerStep#{self.step_num}", "step", collect.FORWARD)

    def _stop_recording(self):
        c = self._collector
        if self._step_range is not None:
            c.end(self._step_range)
            self._step_range = None
        c.uninstall()
        _ACTIVE[0] = None
        c.finish()
        self._collector = None
        self._events = _to_events(c.ranges, "cuda" if c.cuda else None, self.profile_memory, self.with_flops)

    def _ready(self):
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # --- results ------------------------------------------------------------------------------------
    def events(self):
        """Every timed range of the last recorded trace (an EventList of FunctionEvent), in start order."""
        if self._events is None:
            raise RuntimeError("profile.events(): nothing recorded yet; run code inside `with profile():` (or "
                               "until the schedule's active steps end) first")
        return self._events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        """The events averaged per op name (and input shapes with group_by_input_shape=True, which
        needs record_shapes=True; and the top ``group_by_stack_n`` frames, which needs with_stack=True)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path):
        """Write the trace as Trace Event JSON (Perfetto, chrome://tracing); ``.gz`` paths are gzipped."""
        doc = chrome_trace(self.events(), self._metadata)
        text = json.dumps(doc)
        if str(path).endswith(".gz"):
            with gzip.open(path, "wt", encoding="utf-8") as f:
                f.write(text)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)

    def add_metadata(self, key, value):
        """Add a string entry to the trace's metadata."""
        self._metadata[key] = str(value)

    def add_metadata_json(self, key, value):
        """Add a JSON entry (given as text) to the trace's metadata."""
        self._metadata[key] = json.loads(value)

    def _repr_mimebundle_(self, include=None, exclude=None):
        if self._events is None:
            return {"text/plain": f"<workbench.profiler.profile: nothing recorded yet (step {self.step_num})>"}
        return bundle(self._events)


def _to_events(ranges, use_device, profile_memory, with_flops):
    # range_parent: the enclosing range (the timeline's nesting); cpu_parent/cpu_children skip module
    # calls, which the table leaves out, so their Python time counts as the enclosing range's self time
    # (as in PyTorch, whose table has no module rows)
    made = {}
    out = []
    for k, r in enumerate(sorted(ranges, key=lambda r: (r.start, -r.end))):
        e = FunctionEvent(k, r, use_device)
        made[id(r)] = e
        out.append(e)
    for r in ranges:
        e = made[id(r)]
        p = r.parent
        e.range_parent = made.get(id(p)) if p is not None else None
        while p is not None and p.kind == "module":
            if e.kind != "module":
                made[id(p)].cpu_children.append(e)
            p = p.parent
        if p is not None and id(p) in made:
            e.cpu_parent = made[id(p)]
            if e.kind != "module":
                e.cpu_parent.cpu_children.append(e)
    return EventList(out, use_device, profile_memory, with_flops)


class record_function:
    """Time a block (or every call of a decorated function) as one named range in the profile.

    Outside a profile it costs one check. Ops inside nest under it in the table and the trace.

    >>> import workbench as wb
    >>> with wb.profiler.profile() as prof:
    ...     with wb.profiler.record_function("my_block"):
    ...         _ = wb.ones(2) + 1
    >>> [e.name for e in prof.events()]
    ['my_block', 'add']
    """

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._range = None
        self._collector = None

    def __enter__(self):
        c = _ACTIVE[0]
        if c is not None:
            self._collector = c
            self._range = c.begin(self.name, "user")
        return self

    def __exit__(self, *exc):
        if self._range is not None and self._collector is _ACTIVE[0]:
            self._collector.end(self._range)
        self._range = self._collector = None
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapper
