"""Collecting timed ranges while a profiler is on: every op, every backward step, every module call.

Nothing here costs anything while no profiler runs: ``Collector.install`` swaps timing wrappers in for
``Function.apply`` (every op of every family, and users' Functions), the engine's per-node backward
call and gradient accumulation, ``Module.__call__``, and the Tensor operators' NumPy fast paths
(which skip ``apply``; while profiling they take the general path so the op is seen), and
``uninstall`` puts the originals back. The wrappers time with ``perf_counter_ns`` on the host and,
for an op on a CUDA tensor, with a pair of CUDA events on the current stream (read after the run,
so profiling never syncs per op).
"""
import os
import sys
import threading
import time

from .. import _backend
from .._patches import Patches, subclasses
from .._core import Tensor
from ..autograd import engine as _engine
from ..autograd import function as _function
from ..autograd.function import Function, storage_root
from ..nn import module as _module
from ..nn.module import Module
from . import flops as _flops

_ndarray = _backend.ndarray
_clock = time.perf_counter_ns
FORWARD, BACKWARD = 0, 1  # lanes: the caller's thread, and the backward engine's steps


class Range:
    """One timed range as recorded (times in ns from the profile's start); events.FunctionEvent reads it."""

    __slots__ = ("name", "kind", "lane", "start", "end", "parent", "children", "shapes", "mem", "dev_mem",
                 "stack", "flops", "scope", "cuda", "device_us", "device_start", "step", "node", "_ids", "_inputs")

    def __init__(self, name, kind, lane, start, parent):
        self.name, self.kind, self.lane, self.start, self.parent = name, kind, lane, start, parent
        self.end = start
        self.children = []
        self.shapes = None
        self.mem = self.dev_mem = 0
        self.stack = None
        self.flops = None
        self.scope = ""
        self.cuda = None  # (start event, end event) for ops on a CUDA device
        self.device_us = 0.0
        self.device_start = None
        self.step = None
        self.node = None
        self._ids = None  # ids of output storages already counted by this range or a child
        self._inputs = ()  # ids of the inputs' storages (a view of one allocates nothing)


def _shape_of(a):
    if isinstance(a, Tensor):
        return list(a._data.shape)
    if isinstance(a, (list, tuple)) and a and all(isinstance(x, Tensor) for x in a):
        return [list(x._data.shape) for x in a]
    return []


def _on_cuda(args):
    for a in args:
        if isinstance(a, Tensor) and a._data.__class__ is not _ndarray:
            return True
    return False


def _user_stack():
    # the user's frames (outside workbench), innermost first, as PyTorch's "file(line): function"
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    out = []
    f = sys._getframe(2)
    while f is not None and len(out) < 8:
        fn = f.f_code.co_filename
        if not fn.startswith(pkg):
            out.append(f"{fn}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out


class Collector:
    """The ranges of one recording window (the profile's active steps), and the hooks that time them."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False, with_flops=False, cuda=False):
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.with_stack, self.with_flops, self.cuda = with_stack, with_flops, cuda
        self.ranges = []  # finished, in order of their end
        self._threads = threading.local()  # per thread: the ranges entered and not yet left, innermost last
        self._stacks = []  # every thread's stack, to close what a stop leaves open
        self.t0 = _clock()
        self.cuda_t0 = None
        self.step = None
        self._patches = Patches()

    # --- ranges -------------------------------------------------------------------------------------
    @property
    def open(self):
        """The calling thread's open ranges (each thread nests its own)."""
        st = self._threads.__dict__.get("open")
        if st is None:
            st = self._threads.open = []
            self._stacks.append(st)
        return st

    def begin(self, name, kind, lane=None, args=None):
        opened = self.open
        parent = opened[-1] if opened else None
        if lane is None:
            lane = parent.lane if parent is not None else FORWARD
        r = Range(name, kind, lane, 0, parent)
        r.step = self.step
        if args is not None:
            if self.record_shapes:
                r.shapes = [_shape_of(a) for a in args]
            if self.profile_memory:
                r._inputs = {id(storage_root(a._data)) for a in args if isinstance(a, Tensor)}
            if self.cuda and _on_cuda(args):
                if self.cuda_t0 is None:  # device times count from the first event
                    self.cuda_t0 = self._cuda_event()
                r.cuda = self._cuda_event()
        if self.with_stack and kind != "module":
            r.stack = _user_stack()
        opened.append(r)
        r.start = _clock() - self.t0
        return r

    def end(self, r, result=None):
        r.end = _clock() - self.t0
        if r.cuda is not None:
            r.cuda = (r.cuda, self._cuda_event())
        opened = self.open
        if opened and opened[-1] is r:
            opened.pop()
        elif r in opened:  # an exception unwound inner ranges without their end
            del opened[opened.index(r):]
        if result is not None and self.profile_memory:
            self._count_memory(r, result)
        parent = r.parent
        if parent is not None:
            parent.children.append(r)
            parent.mem += r.mem
            parent.dev_mem += r.dev_mem
            if r._ids:
                parent._ids = r._ids if parent._ids is None else parent._ids | r._ids
        self.ranges.append(r)

    def _count_memory(self, r, result):
        # what an op allocated: its outputs that own new storage, not already counted by an inner op
        outs = result if result.__class__ is tuple else (result,)
        seen = r._ids or set()
        for o in outs:
            if isinstance(o, Tensor):
                d = o._data
                root = storage_root(d)
                if id(root) not in seen and id(root) not in r._inputs:
                    seen.add(id(root))
                    if d.__class__ is _ndarray:
                        r.mem += root.nbytes
                    else:
                        r.dev_mem += root.nbytes
        r._ids = seen

    def _cuda_event(self):
        ev = _backend.cupy().cuda.Event()
        ev.record()
        return ev

    def finish(self):
        """Read the CUDA events (one sync, after the run) into device times."""
        if not self.cuda or self.cuda_t0 is None:
            return
        cp = _backend.cupy()
        for r in self.ranges:
            if r.cuda is not None and isinstance(r.cuda, tuple):
                start, stop = r.cuda
                stop.synchronize()
                r.device_us = cp.cuda.get_elapsed_time(start, stop) * 1000.0
                r.device_start = cp.cuda.get_elapsed_time(self.cuda_t0, start) * 1000.0
                r.cuda = None

    # --- the hooks ----------------------------------------------------------------------------------
    def install(self):
        swap = self._patches.swap
        for cls in subclasses(Function):
            f = cls.__dict__.get("apply")
            if isinstance(f, classmethod):
                swap(cls, "apply", classmethod(self._timed_apply(f.__func__)))
        swap(_engine, "_call_backward", self._timed_backward(_engine._call_backward))
        swap(_engine, "_accumulate", self._timed_accumulate(_engine._accumulate))
        swap(Module, "__call__", self._timed_module(Module.__call__))
        # the operators' fast paths skip apply: while profiling they take their general path
        for name, v in list(Tensor.__dict__.items()):
            general = getattr(v, "_wb_general", None)
            if general is not None:
                swap(Tensor, name, general)
        for modname, mod in list(sys.modules.items()):
            if mod is None or not (modname == "workbench" or modname.startswith("workbench.")):
                continue
            for name, v in list(vars(mod).items()):
                general = getattr(v, "_wb_general", None) if callable(v) else None
                if general is not None:
                    swap(mod, name, general)
        self.t0 = _clock()  # times count from here: installing is not part of the profile

    def uninstall(self):
        self._patches.restore()
        for st in self._stacks:  # ranges left open by a profile stopped inside them
            while st:
                r = st.pop()
                r.end = _clock() - self.t0
                self.ranges.append(r)

    def _timed_apply(self, orig):
        col = self

        def apply(cls, *args):
            name = cls._node_cls._op if cls._raw else cls.__name__
            r = col.begin(name, "op", None, args)
            res = None
            try:
                res = orig(cls, *args)
                return res
            finally:
                col.end(r, res)
                out = res[0] if res.__class__ is tuple and res else res
                node = out.grad_fn if isinstance(out, Tensor) else None
                if node is not None and node._fn is cls:  # the node this call recorded
                    r.node = node
                    r.scope = str(node.scope or "")
                    node._times = [(r.end - r.start) / 1000.0, None]
                if col.with_flops and res is not None and cls._raw:
                    r.flops = _op_flops(cls, node, args, res)

        return apply

    def _timed_backward(self, orig):
        col = self

        def _call_backward(node, grads):
            r = col.begin(f"autograd::engine::evaluate_function: {node.name()}", "backward", BACKWARD,
                          grads if col.cuda and node.xp is not _backend.numpy else None)
            r.scope = str(node.scope or "")
            r.node = node
            try:
                return orig(node, grads)
            finally:
                col.end(r)
                _set_backward_time(node, r)

        return _call_backward

    def _timed_accumulate(self, orig):
        col = self

        def _accumulate(node, g, *rest):
            r = col.begin("autograd::engine::evaluate_function: AccumulateGrad", "backward", BACKWARD)
            r.node = node
            try:
                return orig(node, g, *rest)
            finally:
                col.end(r)
                _set_backward_time(node, r)

        return _accumulate

    def _timed_module(self, orig):
        col = self

        def __call__(self, *args, **kwargs):
            names = _module._NAMES.get()
            path = names.get(id(self), "") if names is not None else ""
            r = col.begin(f"nn.Module: {type(self).__name__}", "module")
            r.scope = path
            try:
                return orig(self, *args, **kwargs)
            finally:
                col.end(r)

        return __call__


def _set_backward_time(node, r):
    t = node._times
    us = (r.end - r.start) / 1000.0
    if t is None:
        node._times = [None, us]
    else:
        t[1] = us


def _op_flops(cls, node, args, res):
    ins = [tuple(a._data.shape) for a in args if isinstance(a, Tensor)]
    if node is not None:
        return _flops.node_flops(node, ins)
    outs = [tuple(o._data.shape) for o in (res if res.__class__ is tuple else (res,)) if isinstance(o, Tensor)]
    return _flops.op_flops(cls, cls._node_cls._op, outs, ins, {}, {})
