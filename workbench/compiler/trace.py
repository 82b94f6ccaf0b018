"""Tracing one call: run it eagerly while recording the array program it executes.

While a ``Tracer`` is active, the places where workbench turns arrays into results are swapped for
recording versions (module globals and class attributes, put back afterwards, so eager code pays
nothing): a primitive's no-grad result (``_plain``, ``_plain_tuple``, ``_view_of``), a recorded forward
(``_record_raw``), the engine's gradient sums and leaf accumulation, in-place writes (``Tensor._write``),
reads of values on the host (``item``, ``bool``...), and the calls whose Python effects must happen again
on every replay (``optimizer.step``, ``zero_grad``, LR schedulers, gradient clipping), which are kept as
opaque calls. Every array an event consumes gets a slot: the output of an earlier event, an array a
forward kept on its ctx for the backward, an argument, a tensor that existed before the call (a
parameter, a buffer, a captured tensor), or a constant made by a creation function. Anything else (an
array made from raw arrays outside an op, a host read followed by more work, a hook) makes the trace
unusable, with the reason; the call itself has run eagerly, so its result is eager's either way.
"""
import importlib
import logging
import os
import random
import sys
import threading
import time
import warnings

from .. import _backend
from .. import _broadcast
from .._patches import Patches, subclasses
from ..autograd import engine as _engine
from ..autograd import function as _function
from ..autograd import graph as _graph
from ..autograd import backprop as _backprop
from ..autograd.grad_mode import STATE
from ..nn import utils as _nn_utils
from ..nn.module import Module
from ..nn.utils import clip_grad as _clip_grad
from ..optim import lr_scheduler as _lr_scheduler
from ..optim.optimizer import Optimizer
from ..ops._util import ArrayStep
from ..ops.index import GetItem
from ..random import Generator
from ..utils.checkpoint import Checkpoint as _Checkpoint
from ..tensor import Tensor
from .. import _outargs
from .. import creation as _creation
from . import pystate as _pystate

np = _backend.numpy
_tensor_mod = importlib.import_module("workbench.tensor")  # the name 'tensor' is also the factory
_random_mod = importlib.import_module("workbench.random")  # (the package exports a function 'random' too)
_ndarray = _backend.ndarray
ACTIVE = [None]  # the Tracer recording in this process, if any
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # workbench's own source

# the functions whose Tensor._make calls make deterministic constants (a factory's fresh array, the implicit
# ones gradient of backward(), zeros for gradients that never arrived): (module, name)
_CONST_MAKERS = ((_creation, "_finish"), (_engine, "_materialize"), (_backprop, "_make_grads"))


class Unsupported(Exception):
    """Raised inside the tracer's bookkeeping when the call cannot be replayed (the reason is kept)."""


class ShapeChanged(Exception):
    """Raised by a replay where a shape that follows from values (a mask's count, nonzero), and that the traced
    call read, came out different: nothing has changed yet, and the call runs eagerly instead."""


def _site(depth):
    return _graph.user_site(depth + 1)


def _where(site):
    return f" at {_graph.format_site(site)}" if site else ""


def _uf_eligible(uf, datas):
    # the conditions under which _apply_raw (or a Tensor operator) calls the primitive's _ufunc itself
    if uf is None or not 1 <= len(datas) <= 2:
        return False
    dt = None
    for d in datas:
        if d.__class__ is _ndarray:
            if d.dtype.kind not in "fc" or (dt is not None and d.dtype is not dt):
                return False
            dt = d.dtype
        elif d.__class__ is not float and d.__class__ is not int:
            return False
    return dt is not None


class Event:
    """One step of the recorded program. kind: 'call' (fn(*ins) -> outs), 'write' (ins[0][...] = ins[1]),
    'acc' (leaf accumulation), 'opaque' (a Python call replayed as is), 'host' (a value read back)."""

    __slots__ = ("kind", "fn", "ins", "outs", "info", "op", "scope", "extract", "multi", "scalar", "keep_ctx",
                 "value_shaped", "checked", "copy_saved")

    def __init__(self, kind, fn, ins, outs, op="", scope="", info=None):
        self.kind, self.fn, self.ins, self.outs, self.op, self.scope, self.info = kind, fn, ins, outs, op, scope, info
        self.extract = ()  # [(slot, 'saved'|'attr', key, sub)] arrays a forward kept on its ctx
        self.multi = False
        self.scalar = ()  # output positions that came back as NumPy scalars (made 0-d arrays)
        self.keep_ctx = False  # a recorded forward whose ctx a backward unit reads
        self.value_shaped = None  # where an op's output shape depends on values (nonzero, a mask): its site
        self.checked = None  # such an op whose shape Python read: what read it (the replay checks the shape)
        self.copy_saved = ()  # (index in the ctx's saves, slot): saves an in-place op then overwrote (copied)


class Tracer:
    """Records the array program of one eager call (see the module docstring)."""

    def __init__(self):
        self.events = []
        self.slot_of = {}  # id(array) -> slot number
        self.shadowed = {}  # slot -> the earlier slot of the same array, restored if the slot is rolled back
        self.arrays = []  # every array with a slot, kept alive so ids stay unique during the trace
        self.bindings = {}  # slot -> ('arg', path) | ('ext', tensor) | ('const', array)
        self.externals = {}  # id(tensor) -> (tensor, slot)
        self.made = {}  # id(array) -> (kind, site): arrays wrapped by Tensor._make during the trace
        self.made_keep = []
        self.const_depth = 0  # > 0 while a constant maker runs (_hook_const)
        # set while tensor() copies an array or a tensor (not Python numbers): no constant, whatever the maker
        self.from_values = False
        self.keep_alive = []  # arrays whose slots were rolled back (their ids must stay unique)
        self.forward_of = {}  # id(node) -> the forward event that made it (its ctx serves a backward unit)
        self.modules = {}  # id(module) -> module, every module called
        self.entry_modes = {}  # id(module) -> (module, its .training when the call began): what the guard checks
        self.mode_set = set()  # ids of modules whose mode the call set (train()/eval()) before using them
        self.grad_reads = {}  # slot -> the tensor whose .grad (made before the call) the call read
        self.module_attrs = {}  # id(module) -> {name: value} of its plain attributes when the call first used it
        self.module_state = {}  # id(module) -> [(name, value)] of its public attributes when the call first used it
        # pystate.python_state's containers the call must leave as it found them, and the indices of those an
        # opaque call (replayed: optimizer.step and its hooks) changed
        self.holders = ()
        self.thread = threading.get_ident()  # the thread that traces
        self.replayed_changes = set()
        self.snapshots = []  # (what, tensor, array, copy): module state to check for unrecorded writes
        self.written = set()  # ids of arrays that recorded events wrote
        self.covered = set()  # ids of arrays that opaque calls may change (optimized parameters)
        self.host_after = None  # index of the first event after a host read
        self.host_values = {}  # id(python value) -> event index of the host read that returned it
        self.host_keep = []
        self.reason = None
        self.region = None  # a grad-mode call's backward, recorded after it (grad_region.Region)
        self.differentiated = set()  # ids of the nodes whose backward ran during the call
        self.random = False  # whether the call drew random numbers (a CUDA graph would repeat them)
        self.suspended = 0
        self.in_record = 0
        self.seq0 = -1  # the tape's node counter when the call began (nodes numbered above it are the call's)
        self.dyn = {}  # slot -> indices of the value-shaped events its shape follows from
        self.random_from = None  # index of the first event after the call first drew random numbers
        self._patches = Patches()

    # --- slots ---------------------------------------------------------------------------------
    def new_slot(self, arr):
        n = len(self.arrays)
        self.arrays.append(arr)
        prev = self.slot_of.get(id(arr))
        if prev is not None:  # an op that hands back its input's array (a cast to the same dtype)
            self.shadowed[n] = prev
        self.slot_of[id(arr)] = n
        return n

    def rollback(self, n_events, n_slots):
        """Forget the events and slots recorded since (n_events, n_slots)."""
        del self.events[n_events:]
        for n in range(len(self.arrays) - 1, n_slots - 1, -1):
            a = self.arrays[n]
            if self.slot_of.get(id(a)) == n:
                prev = self.shadowed.pop(n, None)
                if prev is None:
                    del self.slot_of[id(a)]
                else:
                    self.slot_of[id(a)] = prev
            self.bindings.pop(n, None)
        self.keep_alive.extend(self.arrays[n_slots:])
        del self.arrays[n_slots:]
        if self.dyn:
            self.dyn = {k: v for k, v in self.dyn.items() if k < n_slots}

    def fail(self, reason):
        if self.reason is None:
            self.reason = reason
        raise Unsupported(reason)

    def ref(self, x, opname):
        """The replay reference of an argument: ('s', slot) for arrays, ('c', value) for the rest."""
        if x.__class__ is Tensor or isinstance(x, Tensor):
            arr = x._data
            n = self.slot_of.get(id(arr))
            if n is not None:
                return ("s", n)
            made = self.made.get(id(arr))
            if made is not None:
                return ("s", self._made_slot(arr, made, opname))
            n = self.new_slot(arr)
            self.bindings[n] = ("ext", x)
            self.externals[id(x)] = (x, n)
            return ("s", n)
        if _is_array(x):
            n = self.slot_of.get(id(x))
            if n is not None:
                return ("s", n)
            made = self.made.get(id(x))
            if made is not None:
                return ("s", self._made_slot(x, made, opname))
            self.fail(f"'{opname}' was given a raw array (shape {list(x.shape)}) that no recorded op produced")
        if x.__class__ is list or x.__class__ is tuple:
            refs = [self.ref(v, opname) for v in x]
            if all(r[0] == "c" for r in refs):
                return ("c", x)
            return ("seq", x.__class__, refs)
        if isinstance(x, Module):
            self.fail(f"'{opname}' was given a module as an argument")
        return ("c", x)

    def _made_slot(self, arr, made, opname):
        kind, site = made
        if kind != "const":
            maker, site = site
            by = f"{maker}() made" if maker else "was made"
            self.fail(f"'{opname}' used a tensor that {by} from raw arrays, not as a recorded op{_where(site)} (the "
                      "replay would freeze its values)")
        n = self.new_slot(arr)
        # its value now: the call may write into it later (zeros(3).index_add_(...)), and the replay repeats that
        self.bindings[n] = ("const", arr.copy())
        return n

    def outputs(self, arrays):
        return [self.new_slot(a) for a in arrays]

    def add(self, ev):
        if self.host_after is not None and self.host_after == len(self.events) and ev.kind != "host":
            site = self.events[-1].info
            self.fail(f"a tensor's value was read on the host ({self.events[-1].op}{_where(site)}) and the call "
                      "went on computing: the rest may depend on it")
        self.events.append(ev)
        if self.dyn or ev.value_shaped is not None:
            self._propagate_dyn(len(self.events) - 1, ev)
        return ev

    def _propagate_dyn(self, i, ev):
        srcs = set()
        for r in slot_refs(ev.ins):
            srcs.update(self.dyn.get(r, ()))
        if ev.value_shaped is not None:
            srcs.add(i)
        if not srcs:
            return
        if ev.kind == "opaque":  # Python code the replay repeats as is, given an array of that shape
            self.observe(srcs, ev.op)
        srcs = frozenset(srcs)
        for o in ev.outs:
            if self.arrays[o].ndim:
                self.dyn[o] = srcs

    def observe(self, srcs, what):
        for k in srcs:
            ev = self.events[k]
            if ev.checked is None:
                ev.checked = what

    # --- installing the recording hooks ---------------------------------------------------------
    def __enter__(self):
        if ACTIVE[0] is not None:
            raise RuntimeError("workbench.compile: a trace is already running (nested compiled calls trace "
                               "as part of the outer one)")
        ACTIVE[0] = self
        T = self
        swap = self._patches.swap
        swap(_function, "_plain", _hook_plain(_function._plain, T))
        swap(_function, "_plain_tuple", _hook_plain_tuple(_function._plain_tuple, T))
        swap(_function, "_view_of", _hook_view_of(_function._view_of, T))
        swap(_function, "_record_raw", _hook_record_raw(_function._record_raw, T))
        swap(_engine, "_add_grads", _hook_add_grads(_engine._add_grads, T))
        swap(_engine, "_sum_to", _hook_sum_to(_engine._sum_to, T))
        swap(_engine, "_accumulate", _hook_accumulate(_engine._accumulate, T))
        swap(_engine, "_call_backward", _hook_call_backward(_engine._call_backward, T))
        swap(_engine, "_make", _hook_make(_engine._make, T, "engine"))
        for mod, name in _CONST_MAKERS:
            swap(mod, name, _hook_const(getattr(mod, name), T))
        swap(_creation, "_host_array", _hook_host_array(_creation._host_array, T))
        swap(Tensor, "_make", staticmethod(_hook_make(Tensor.__dict__["_make"].__func__, T, None)))
        swap(Tensor, "_write", _hook_write(Tensor._write, T))
        # stores and in-place ops that nothing records write the array directly (x[k] = v, x.add_(y)); traced,
        # they take their general path, an op and _write
        for name, v in list(Tensor.__dict__.items()):
            general = getattr(v, "_wb_general", None)
            if general is not None and (name == "__setitem__" or name[-1] == "_" and name[-2:] != "__"):
                swap(Tensor, name, general)
        swap(_tensor_mod, "_detach_saved", _hook_detach_saved(_tensor_mod._detach_saved, T))
        swap(_outargs, "_write_out", _hook_write_out(_outargs._write_out, T))
        swap(_random_mod, "_fill_from", _hook_fill_from(_random_mod._fill_from, T))
        for name in ("item", "tolist", "numpy", "__bool__", "__float__", "__int__", "__index__", "__array__",
                     "__repr__", "__format__"):
            swap(Tensor, name, _hook_host(Tensor.__dict__[name], T, name))
        # Python reading the shape of a tensor whose shape follows from values: the replay must check it
        shape = Tensor.__dict__["shape"]
        swap(Tensor, "shape", property(_hook_shape_read(shape.fget, T, "shape"), None, None, shape.__doc__))
        for name in ("size", "numel", "nelement", "__len__"):
            swap(Tensor, name, _hook_shape_read(getattr(Tensor, name), T, name))
        grad = Tensor.__dict__["grad"]
        swap(Tensor, "grad", property(_hook_getgrad(grad.fget, T), _hook_setgrad(grad.fset, T), grad.fdel,
                                      grad.__doc__))
        data = Tensor.__dict__["data"]
        swap(Tensor, "data", property(data.fget, _hook_setdata(T), None, data.__doc__))
        swap(Module, "__call__", _hook_module_call(Module.__call__, T))
        swap(Generator, "_stream", _hook_random(Generator.__dict__["_stream"], T))
        for name in ("manual_seed", "seed", "set_state"):  # a replay would not reseed
            swap(Generator, name, _hook_reseed(Generator.__dict__[name], T, name))
        swap(Module, "zero_grad", _hook_opaque(Module.zero_grad, T, "zero_grad", None))
        for cls in subclasses(Module):  # train()/eval() inside the call: replayed, and the guard checks the mode before
            if "train" in cls.__dict__:
                swap(cls, "train", _hook_train(cls.__dict__["train"], T, f"{cls.__name__}.train"))
        for name in ("time", "perf_counter", "monotonic", "process_time", "time_ns", "perf_counter_ns",
                     "monotonic_ns", "process_time_ns"):
            swap(time, name, _hook_clock(getattr(time, name), T, name))
        swap(logging.Logger, "_log", _hook_log(logging.Logger._log, T))
        swap(warnings, "warn", _hook_warn(warnings.warn, T))
        self._streams = {}  # (set and put back by hand: a stream the call itself sets is kept, as eagerly)
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            if stream is not None:
                proxy = self._streams[name] = _Stream(stream, T, name)
                setattr(sys, name, proxy)
        for mod, names in _PY_RANDOM:
            for name in names:
                if hasattr(mod, name):
                    swap(mod, name, _hook_py_random(getattr(mod, name), T, f"{mod.__name__}.{name}"))
        for cls in subclasses(Optimizer):
            for name in ("step", "zero_grad"):
                if name in cls.__dict__:
                    swap(cls, name, _hook_opaque(cls.__dict__[name], T, f"{cls.__name__}.{name}", "optimizer"))
        for cls in subclasses(_lr_scheduler.LRScheduler):
            if "step" in cls.__dict__:
                swap(cls, "step", _hook_opaque(cls.__dict__["step"], T, f"{cls.__name__}.step", None))
        for mod in (_nn_utils, _clip_grad):
            for name in ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"):
                if name in mod.__dict__:
                    swap(mod, name, _hook_opaque(mod.__dict__[name], T, name, "free"))
        return self

    def __exit__(self, *exc):
        self._patches.restore()
        for name, proxy in self._streams.items():
            if getattr(sys, name) is proxy:
                setattr(sys, name, proxy._stream)
            elif _recording(self):  # the call replaced the stream (sys.stdout = buf): kept, and eager
                self.reason = self.reason or f"it set sys.{name} (a replay would not)"
            proxy._T = None  # (one a handler kept, logging.basicConfig's, just writes through from now on)
        ACTIVE[0] = None
        return False

    # --- after the call ---------------------------------------------------------------------------
    def module_changes(self):
        """The first public attribute of a module the call used that the call set, added or deleted (a replay
        would skip it: ``self.calls += 1`` in a forward), named for a message, or None."""
        for mid, before in self.module_state.items():
            m = self.modules[mid]
            now = {k: v for k, v in m.__dict__.items() if k != "training" and k[0] != "_"}
            for k, v in before:
                if k not in now or now.pop(k) is not v:
                    return f"{type(m).__name__}.{k}"
            if now:
                return f"{type(m).__name__}.{next(iter(now))}"
        return None

    def check_state(self):
        """Fail if a module's parameter or buffer changed without a recorded event explaining it."""
        for what, t, arr, copy in self.snapshots:
            if id(arr) in self.written or id(arr) in self.covered:
                continue
            if t._data is not arr:
                self.fail(f"{what} was replaced by a new tensor during the call (a Python side effect the replay "
                          "would not repeat)")
            if arr.shape != copy.shape or arr.tobytes() != copy.tobytes():
                self.fail(f"{what} was changed in place outside any recorded op (raw array code); the replay "
                          "would not repeat it")


def slot_refs(refs):
    """The slots an event's input references name."""
    for r in refs:
        if r[0] == "s":
            yield r[1]
        elif r[0] == "seq":
            yield from slot_refs(r[2])


def _op_name(cls, args):
    if cls is ArrayStep and getattr(args[0], "__name__", "<lambda>") != "<lambda>":
        return args[0].__name__  # the op an array step serves (nonzero)
    return cls.op_name or cls.__name__.lower()


def _value_shaped(cls, args):
    """Whether primitive ``cls``'s output shape on ``args`` follows from values, not only from the inputs'
    shapes: a boolean mask's count (x[mask], masked_select), nonzero (an array step marked so)."""
    if cls is ArrayStep:
        return getattr(args[0], "value_shaped", False)
    if issubclass(cls, GetItem) and len(args) > 1:
        key = args[1]
        for k in key if key.__class__ is tuple else (key,):
            d = k._data if isinstance(k, Tensor) else k
            if _is_array(d) and d.dtype.kind == "b":
                return True
    return False


def _is_array(x):
    if x.__class__ is _ndarray or isinstance(x, _ndarray):
        return True
    cp = _backend._cupy
    return cp is not None and isinstance(x, cp.ndarray)


def _recording(T):
    return T.suspended == 0 and T.reason is None


def _datas(args):
    return [a._data if isinstance(a, Tensor) else a for a in args]


def _call_event(T, cls, args, result_arrays, scalars, view=False):
    datas = _datas(args)
    name = _op_name(cls, args)
    ins = [T.ref(a, name) for a in args]
    xp = _backend.xp_of(next(d for d in datas if _is_array(d))) if any(
        _is_array(d) for d in datas) else np
    uf = cls._ufunc if xp is np and _uf_eligible(cls._ufunc, datas) else None
    if uf is not None:
        fn, info = uf, "ufunc"
    else:
        fn, info = cls.forward, ("noctx", xp, len(args))
    ev = Event("call", fn, ins, T.outputs(result_arrays), name, _graph.SCOPE.get(), info)
    ev.scalar = scalars
    if _value_shaped(cls, args):
        ev.value_shaped = _site(3)
    return T.add(ev)


def _guarded(T, f):
    # run a recording step; an unsupported construct stops recording (the call goes on eagerly)
    try:
        f()
    except Unsupported:
        pass


def _hook_plain(orig, T):
    def _plain(out, rg, cls, args):
        res = orig(out, rg, cls, args)
        if _recording(T):
            scal = (0,) if res._data is not out else ()
            _guarded(T, lambda: _call_event(T, cls, args, [res._data], scal))
        return res

    return _plain


def _hook_plain_tuple(orig, T):
    def _plain_tuple(out, cls, args):
        res = orig(out, cls, args)
        if _recording(T):
            def rec():
                ev = _call_event(T, cls, args, [r._data for r in res],
                                 tuple(k for k, (o, r) in enumerate(zip(out, res)) if r._data is not o))
                ev.multi = True
            _guarded(T, rec)
        return res

    return _plain_tuple


def _hook_view_of(orig, T):
    def _view_of(cls, args, out, xp):
        res = orig(cls, args, out, xp)
        if _recording(T) and not T.in_record:
            _guarded(T, lambda: _call_event(T, cls, args, [res._data], ()))
        return res

    return _view_of


def _hook_record_raw(orig, T):
    def _record_raw(cls, args, datas, xp, saves=None):
        T.in_record += 1
        try:
            res = orig(cls, args, datas, xp, saves)
        finally:
            T.in_record -= 1
        if _recording(T):
            _guarded(T, lambda: _forward_event(T, cls, args, xp, res))
        return res

    return _record_raw


def _forward_event(T, cls, args, xp, res):
    results = res if res.__class__ is tuple else (res,)
    name = _op_name(cls, args)
    node = next((r.grad_fn for r in results if r.grad_fn is not None), None)
    ins = [T.ref(a, name) for a in args]
    datas = _datas(args)
    outs = T.outputs([r._data for r in results])
    nig = node.needs_input_grad if node is not None else (False,) * len(args)
    ev = Event("call", cls.forward, ins, outs, name, _graph.SCOPE.get(), ("ctx", xp, nig))
    ev.multi = res.__class__ is tuple
    # a NumPy scalar result was made a 0-d array by _record_raw/_make: the replay does the same
    ev.scalar = tuple(k for k, r in enumerate(results) if r._data.ndim == 0)
    if node is not None:
        ext = []
        saved = node._saved or ()
        for i, entry in enumerate(saved):
            t = entry[0]
            if isinstance(t, Tensor) and id(t._data) not in T.slot_of:
                ext.append((T.new_slot(t._data), "saved", i, None))
        for k, v in node.__dict__.items():
            if _is_array(v):
                if id(v) not in T.slot_of:
                    ext.append((T.new_slot(v), "attr", k, None))
            elif v.__class__ in (tuple, list):
                for j, w in enumerate(v):
                    if _is_array(w) and id(w) not in T.slot_of:
                        ext.append((T.new_slot(w), "attr", k, j))
        ev.extract = ext
        T.forward_of[id(node)] = ev
    del datas
    if _value_shaped(cls, args):
        ev.value_shaped = _site(3)
    T.add(ev)


def _hook_call_backward(orig, T):
    """A node's backward: its formula's own ops when they all record (Tensor ops), else the formula as one
    unit replayed on the forward's ctx (backward formulas with raw-array fast paths)."""
    def _call_backward(node, grads):
        T.differentiated.add(id(node))
        if not _recording(T):
            return orig(node, grads)
        if node._fn is _Checkpoint:
            T.reason = T.reason or ("activation checkpointing (utils.checkpoint) recomputes its segment in backward "
                                    "from Python, with the RNG state put back: the replay cannot repeat that")
            return orig(node, grads)
        n_ev, n_sl, host_after = len(T.events), len(T.arrays), T.host_after
        res = orig(node, grads)
        if T.reason is None and not node._fn._backward_effects and all(
                g is None or id(g._data) in T.slot_of for g in res):
            return res
        if T.suspended:
            return res
        T.rollback(n_ev, n_sl)
        T.reason, T.host_after = None, host_after
        fwd = T.forward_of.get(id(node))
        if fwd is None:
            if getattr(node, "_seq", T.seq0 + 1) <= T.seq0:
                T.reason = T.reason or (f"the backward reached {node.name()}, recorded before the call: an argument or "
                                        "captured tensor carries a graph from outside the compiled function (compile "
                                        "the function that builds it too, or pass it detached)")
            else:
                T.reason = T.reason or (f"the backward of {node.name()} computes on raw arrays and its forward was "
                                        "not recorded as a primitive (a custom Function?)")
            return res

        def rec():
            ins = [T.ref(g, node.name()) if g is not None else ("c", None) for g in grads]
            ev = Event("backward", fwd, ins, [], node.name(), node.scope, node)
            ev.outs = T.outputs([g._data for g in res if g is not None])
            ev.multi = tuple(g is not None for g in res)
            fwd.keep_ctx = True
            T.add(ev)
        _guarded(T, rec)
        return res

    return _call_backward


def _hook_add_grads(orig, T):
    def _add_grads(xp, a, b):
        res = orig(xp, a, b)
        if _recording(T):
            def rec():
                ev = Event("call", xp.add, [T.ref(a, "add"), T.ref(b, "add")], T.outputs([res._data]), "add",
                           "", "ufunc")
                T.add(ev)
            _guarded(T, rec)
        return res

    return _add_grads


def _hook_sum_to(orig, T):
    def _sum_to(g, shape):
        res = orig(g, shape)
        if _recording(T):
            def rec():
                T.add(Event("call", _broadcast.sum_to, [T.ref(g, "sum_to_size"), ("c", shape)],
                            T.outputs([res._data]), "sum_to_size", "", "ufunc"))
            _guarded(T, rec)
        return res

    return _sum_to


def _hook_accumulate(orig, T):
    def _accumulate(node, g, shared_ids, create_graph, index, keep_before):
        t = node.variable
        if not _recording(T) or t is None or g is None:
            return orig(node, g, shared_ids, create_graph, index, keep_before)
        if node._pre_hooks is not None or node._hooks is not None or t._post_acc_hooks is not None:
            T.reason = T.reason or "a gradient hook is registered on a leaf tensor (hooks run Python code the " \
                                   "replay would skip)"
        before = t._grad
        if create_graph or (before is not None and before._rg):
            T.reason = T.reason or "backward(create_graph=True) builds a graph of the gradients"
        gref = None
        if T.reason is None:
            try:
                gref = T.ref(g, "AccumulateGrad")
                tref = T.ref(t, "AccumulateGrad")
            except Unsupported:
                gref = None
        step = orig(node, g, shared_ids, create_graph, index, keep_before)
        if gref is not None and T.reason is None:
            out = t._grad._data
            T.written.add(id(out))
            ev = Event("acc", None, [tref, gref], [], "AccumulateGrad", "", t)
            ev.outs = T.outputs([out])
            _guarded(T, lambda: T.add(ev))
        return step

    return _accumulate


def _hook_const(orig, T):
    # what Tensor._make wraps while one of _CONST_MAKERS runs is a constant (counted, not read off the
    # caller's frame: compiled code has none)
    def const(*args, **kwargs):
        T.const_depth += 1
        try:
            return orig(*args, **kwargs)
        finally:
            T.const_depth -= 1
            if not T.const_depth:
                T.from_values = False

    return const


def _hook_host_array(orig, T):
    # tensor(data) copying what is not Python numbers (an array, a tensor, NumPy scalars): values that may differ
    # on the next call, which a constant would freeze
    def _host_array(data):
        if _recording(T) and not _python_numbers(data):
            T.from_values = True
        return orig(data)

    return _host_array


def _python_numbers(data, depth=0):
    c = data.__class__
    if c is float or c is int or c is bool or c is complex:
        return True
    if (c is list or c is tuple) and depth < 32:
        return all(_python_numbers(x, depth + 1) for x in data)
    return False


def _hook_make(orig, T, where):
    def _make(data, *a, **k):
        t = orig(data, *a, **k)
        if _recording(T) and id(t._data) not in T.slot_of:
            n = _same_memory_slot(T, t._data)
            if n is not None:  # a new array object over an array with a slot (the value before an in-place op)
                T.slot_of[id(t._data)] = n
                T.keep_alive.append(t._data)
                return t
            kind = "const" if T.const_depth and not T.from_values else "raw"
            if kind == "const":
                T.made[id(t._data)] = (kind, None)
            elif T.from_values:  # wb.tensor(x) of a tensor or an array: its values now, frozen as a constant
                T.made[id(t._data)] = (kind, ("tensor", _graph.user_site(1)))
            else:  # the function that made it (workbench's, or compiled code's caller), and the user's line
                f = sys._getframe(1)
                maker = f.f_code.co_name if f.f_code.co_filename.startswith(_PACKAGE_DIR) else None
                T.made[id(t._data)] = (kind, (maker, _graph.user_site(1)))
            T.made_keep.append(t._data)
        return t

    return _make


def _layout(a):
    ptr = a.__array_interface__["data"][0] if a.__class__ is _ndarray else a.data.ptr
    return ptr, a.shape, a.strides, a.dtype


def _same_memory_slot(T, data):
    # the slot of an array with the same memory, shape, strides and dtype as the view ``data``, if any
    base = data.base
    if base is None or not _is_array(base):
        return None
    lay = _layout(data)
    if _layout(base) == lay:
        n = T.slot_of.get(id(base))
        made = T.made.get(id(base))
        if n is None and made is not None and made[0] == "const":  # a constant not read yet (zeros(3).index_add_)
            n = T._made_slot(base, made, "view")
        if n is not None:
            return n
    for n in range(len(T.arrays) - 1, -1, -1):
        a = T.arrays[n]
        if a.base is base and T.slot_of.get(id(a)) == n and _layout(a) == lay:
            return n
    return None


def _hook_write(orig, T):
    def _write(self, r, opname, region=None):
        dst = None
        if _recording(T) and r._data is not self._data:
            try:  # before the write: a constant written into is bound with its value before it
                dst = T.ref(self, opname)
            except Unsupported:
                pass
        orig(self, r, opname, region)  # the replay writes the whole result: in one process the same values
        if dst is not None and _recording(T):
            def rec():
                src = T.ref(r, opname)
                T.written.add(id(self._data))
                T.add(Event("write", None, [dst, src], [], opname, _graph.SCOPE.get(), self))
            _guarded(T, rec)

    return _write


def _hook_write_out(orig, T):
    # a result stored into out=: a write the replay repeats (a resized out gets a new array: not replayed)
    def _write_out(r, out):
        before, dst = out._data, None
        if _recording(T):
            try:  # before the write, as _write: a constant written into is bound with its value before it
                dst = T.ref(out, "out=")
            except Unsupported:
                pass
        res = orig(r, out)
        if dst is not None and _recording(T):
            if out._data is not before:
                T.reason = T.reason or (f"an out= tensor was resized{_where(_site(1))} (it gets a new array the replay "
                                        "would not make)")
            else:
                def rec():
                    T.written.add(id(before))
                    T.add(Event("write", None, [dst, T.ref(r, "out=")], [], "out=", _graph.SCOPE.get(), out))
                _guarded(T, rec)
        return res

    return _write_out


def _hook_fill_from(orig, T):
    def _fill_from(self, arr, opname):
        if _recording(T):
            T.reason = T.reason or (f"{opname}() fills a tensor with random numbers in place{_where(_site(1))} (the "
                                    "replay would not draw them again; wb.rand/randn/dropout replay)")
        return orig(self, arr, opname)

    return _fill_from


def _hook_detach_saved(orig, T):
    # an in-place op whose own forward saved the value it overwrites: eager gives the node a copy; the replay
    # copies what its forward's ctx saved right after that forward, before the write
    def _detach_saved(node, old):
        hit = [i for i, entry in enumerate(node._saved) if entry[0] is old]
        if not hit or not _recording(T):
            return orig(node, old)
        fwd = T.forward_of.get(id(node))
        src = T.slot_of.get(id(old._data))
        res = orig(node, old)
        if fwd is None or src is None or fwd.info == "ufunc" or fwd.info[0] != "ctx":
            T.reason = T.reason or (f"an in-place op overwrote a value its own backward reads{_where(_site(1))}, "
                                    "and its forward was not recorded with a ctx (eager keeps a copy for the graph)")
        else:
            slot = T.new_slot(old._data)
            fwd.copy_saved = fwd.copy_saved + tuple((i, slot) for i in hit)
        return res

    return _detach_saved


def _hook_host(orig, T, name):
    def host(self, *a, **k):
        r = orig(self, *a, **k)
        if _recording(T):
            site = _site(1)
            if name in ("item", "__float__", "__int__", "__bool__", "__index__") and self._data.size == 1:
                def rec():
                    ev = T.add(Event("host", name, [T.ref(self, name)], [], f".{name.strip('_')}()", "", site))
                    T.host_values[id(r)] = len(T.events) - 1
                    T.host_keep.append(r)
                    del ev
                _guarded(T, rec)
                T.host_after = len(T.events)
            else:
                T.reason = T.reason or (f"Tensor.{name}() read a tensor's values on the host{_where(site)} "
                                        "(the replay would freeze them)")
        return r

    host.__name__ = getattr(orig, "__name__", name)
    return host


def _hook_setgrad(fset, T):
    def setgrad(self, value):
        fset(self, value)
        if _recording(T):
            def rec():
                tref = T.ref(self, "grad")
                vref = ("c", None) if value is None else T.ref(value, "grad")
                T.add(Event("setgrad", None, [tref, vref], [], "set .grad", "", self))
            _guarded(T, rec)

    return setgrad


def _hook_setdata(T):
    def setdata(self, value):
        if _recording(T):
            T.reason = T.reason or "Tensor.data was assigned during the call (the replay would keep the old array)"
        if not isinstance(value, Tensor):
            raise TypeError(f"Tensor.data must be set to a Tensor, got {type(value).__name__}")
        self._data = value._data
        if self._acc is not None:
            self._acc._out_meta = ((value._data.shape, value._data.dtype),)

    return setdata


def _hook_module_call(orig, T):
    def __call__(self, *args, **kwargs):
        if _recording(T) and id(self) not in T.modules:
            T.modules[id(self)] = self
            if id(self) not in T.mode_set:
                T.entry_modes.setdefault(id(self), (self, self.training))
            # the settings the forward may read (negative_slope, p, dim, a temperature): the guard checks them
            # (not private ones: workbench's caches, such as the scope path, start with _)
            # (those its forward, or a method that names, uses: not a counter on_epoch_end() keeps)
            used = _pystate.forward_names(type(self))
            T.module_attrs[id(self)] = {k: v for k, v in self.__dict__.items()
                                        if k != "training" and k[0] != "_" and _simple(v) and k in used}
            # all its public attributes, to see that the call left them as it found them (Tracer.module_changes)
            T.module_state[id(self)] = [(k, v) for k, v in self.__dict__.items() if k != "training" and k[0] != "_"]
            d = self.__dict__
            if d["_forward_pre_hooks"] or d["_forward_hooks"] or d["_backward_hooks"] or d["_backward_pre_hooks"]:
                T.reason = T.reason or (f"module {type(self).__name__} has hooks (they run Python code the replay "
                                        "would skip)")
            for kind, table in (("parameter", d["_parameters"]), ("buffer", d["_buffers"])):
                for k, t in table.items():
                    if t is not None and not T.suspended:
                        T.snapshots.append((f"{type(self).__name__} {kind} '{k}'", t, t._data, t._data.copy()))
        return orig(self, *args, **kwargs)

    return __call__


def _hook_shape_read(orig, T, name):
    def read(self, *a):
        if T.dyn:
            n = T.slot_of.get(id(self._data))
            if n is not None and n in T.dyn:
                T.observe(T.dyn[n], f".{name}" + ("" if name == "shape" else "()") + _where(_site(1)))
        return orig(self, *a)

    read.__name__ = orig.__name__
    return read


def _hook_reseed(orig, T, name):
    def reseed(self, *args):
        if _recording(T):
            T.reason = T.reason or (f"the random generator was reseeded or its state set during the call ({name}"
                                    f"{_where(_site(1))}): the replay would not do it again")
        return orig(self, *args)

    return reseed


def _hook_random(orig, T):
    def _stream(self, dev):
        T.random = True
        if T.random_from is None:
            T.random_from = len(T.events)
        return orig(self, dev)

    return _stream


def _simple(v):
    return v is None or v.__class__ in (bool, int, float, str) or (
        v.__class__ is tuple and all(x is None or x.__class__ in (bool, int, float, str) for x in v))


def _is_iterator(x):
    return hasattr(x, "__next__") and not isinstance(x, Tensor)


def _hook_train(orig, T, name):
    opaque = _hook_opaque(orig, T, name, None)

    def train(self, mode=True):
        if _recording(T):  # the modes before the call changed them: what the guard checks, for the modules the
            for m in self.modules():  # call used before (the mode of one it sets first does not matter)
                if id(m) in T.modules:
                    T.entry_modes.setdefault(id(m), (m, m.training))
                else:
                    T.mode_set.add(id(m))
        return opaque(self, mode)

    return train


# Python's and NumPy's global random functions: a trace would freeze what they returned
_PY_RANDOM = ((random, ("random", "randint", "randrange", "uniform", "choice", "choices", "shuffle", "sample",
                        "gauss", "normalvariate", "getrandbits", "betavariate", "expovariate", "triangular")),
              (np.random, ("random", "rand", "randn", "randint", "random_sample", "choice", "uniform", "normal",
                           "permutation", "shuffle", "binomial", "poisson", "beta", "exponential")))


def _hook_py_random(orig, T, name):
    def draw(*args, **kwargs):
        if _recording(T):
            T.reason = T.reason or (f"{name}() was called{_where(_site(1))}: the replay would repeat the value it "
                                    "returned this time (draw with workbench's generator, e.g. wb.rand, to replay)")
        return orig(*args, **kwargs)

    return draw


def _from_user(T, depth):
    """Whether the code ``depth`` frames above the caller, in the thread that traces, is the user's: not
    workbench's, an installed package's (Numba times its compiles) or the standard library's (the logging
    module's own frames are skipped: ``logging.info`` is the user's call)."""
    if threading.get_ident() != T.thread:  # (another thread printing meanwhile is not the call's doing)
        return False
    frame = sys._getframe(depth + 1)
    while frame is not None and frame.f_globals.get("__name__") == "logging":
        frame = frame.f_back
    f = frame.f_code.co_filename if frame is not None else ""
    return not (f.startswith(_PACKAGE_DIR) or f.startswith(_STDLIB) or "site-packages" in f or "dist-packages" in f
                or f.startswith("<frozen"))


_STDLIB = os.path.dirname(os.__file__)


def _hook_clock(orig, T, name):
    def clock():
        if _recording(T) and _from_user(T, 1):
            T.reason = T.reason or (f"it reads the clock (time.{name}(){_where(_site(1))}): a replay would not "
                                    "read it again")
        return orig()

    clock.__name__ = clock.__qualname__ = name
    clock.__module__ = "time"
    return clock


def _hook_log(orig, T):
    def _log(self, *args, **kwargs):
        if _recording(T) and _from_user(T, 2):
            T.reason = T.reason or f"it logs (logging{_where(_site(2))}): a replay runs the tensor ops only, and would not"
        return orig(self, *args, **kwargs)

    return _log


def _hook_warn(orig, T):
    def warn(message, category=None, stacklevel=1, source=None, **kwargs):
        if _recording(T) and _from_user(T, 1):
            T.reason = T.reason or f"it warns{_where(_site(1))} (a replay would not)"
        return orig(message, category, stacklevel + 1, source, **kwargs)

    warn.__name__ = warn.__qualname__ = "warn"
    warn.__module__ = "warnings"
    return warn


class _Stream:
    """sys.stdout or sys.stderr while a call traces: a write makes the call eager (a replay would not write)."""

    def __init__(self, stream, T, name):
        self._stream, self._T, self._name = stream, T, name

    def write(self, text):
        T = self._T
        if text and T is not None and _recording(T) and _from_user(T, 1):
            T.reason = T.reason or f"it writes to sys.{self._name}{_where(_site(1))} (a replay would not)"
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _hook_getgrad(orig, T):
    # a .grad made before the call (by a backward outside it): the replay reads the tensor's .grad then, not
    # the tensor the trace saw (zero_grad() may have replaced it)
    def grad(self):
        g = orig(self)
        if g is not None and _recording(T):
            d = g._data
            if id(d) not in T.slot_of and id(d) not in T.made:
                n = T.new_slot(d)
                T.bindings[n] = ("grad", self)
                T.grad_reads[n] = self
        return g

    return grad


def _hook_opaque(orig, T, name, kind):
    def opaque(*args, **kwargs):
        if not _recording(T):
            return orig(*args, **kwargs)
        # an iterator argument (clip_grad_norm_(model.parameters(), ...)) is used up by this call: the replay
        # gets the list of what it yielded
        args = tuple(list(a) if _is_iterator(a) else a for a in args)
        kwargs = {k: list(v) if _is_iterator(v) else v for k, v in kwargs.items()}
        T.suspended += 1
        before = _pystate.contents(T.holders) if T.holders else None
        try:
            r = orig(*args, **kwargs)
        finally:
            T.suspended -= 1
        if before is not None:  # what this call changes it changes again on each replay (a step hook's list)
            T.replayed_changes.update(_pystate.changed_at(T.holders, before))
        is_step = kind == "optimizer" and orig.__name__ == "step"
        if is_step:  # what step() changes (zero_grad changes none of the parameters)
            for group in args[0].param_groups:
                for p in group["params"]:
                    T.covered.add(id(p._data))

        def rec():
            for a in list(args[1:] if kind in ("optimizer", None) else args) + list(kwargs.values()):
                if callable(a) and not isinstance(a, (Tensor, Module)):
                    T.fail(f"{name}() was given a Python function (a closure){_where(_site(2))}: the replay would "
                           "call the one this call made, on this call's tensors")
            # a tensor the call computed (a loss handed to ReduceLROnPlateau.step): the replay passes its own
            made = [(k, ("s", T.slot_of[id(v._data)])) for k, v in list(enumerate(args)) + list(kwargs.items())
                    if isinstance(v, Tensor) and id(v._data) in T.slot_of]
            ev = Event("opaque", (orig, args, kwargs), [ref for _k, ref in made], [], name, "",
                       "step" if is_step else None)
            ev.extract = tuple(k for k, _ref in made)
            T.add(ev)
            if isinstance(r, Tensor):  # a closure's loss, a gradient norm: the replay hands out its own
                ev.outs = T.outputs([r._data])
        _guarded(T, rec)
        return r

    return opaque
