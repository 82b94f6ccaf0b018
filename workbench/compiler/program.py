"""The replay: a trace turned into two generated Python functions, a guard and the program.

The guard checks what the trace depends on (argument shapes, dtypes, devices and requires_grad, the
same for every tensor read from outside, grad mode, each called module's train/eval flag, hooks and
parameter identity). The program calls, in the recorded order, the very array functions eager ran
(a primitive's ufunc or its forward on arrays, the engine's sums, leaf accumulation, in-place writes),
with the arrays in local variables: no module dispatch, no Tensor per intermediate, no tape. Same
functions on the same arrays in the same order: the results are eager's, bit for bit. Each local (an
array, a forward's ctx with what it saved for backward) is deleted right after the last step that reads
it, so the replay holds no more memory than eager, which frees a tensor when its last reference goes and
a node's saved arrays when its backward ran; kept to the end of the program, every intermediate of a
step would stay alive at once and each new array would land in memory the cache has not seen.
"""
import collections
import dis
import functools
import itertools
import types

from .. import _backend
from .._backend import dtypes as _dt
from ..ops import _autocast
from ..autograd import engine as _engine
from ..autograd import function as _function
from ..autograd.grad_mode import STATE
from ..nn.module import Module
from .._core import _INFERENCE_BOX
from ..tensor import Tensor
from . import pystate as _pystate
from .pystate import plain_value
from .trace import ShapeChanged, Unsupported, _where, slot_refs as _slot_refs

np = _backend.numpy
_make = Tensor._make


class ReplayCtx:
    """The ctx a primitive's forward gets in the replay: it keeps what forward saves and stashes, which
    the recorded backward formulas read back."""

    __slots__ = ("__dict__",)
    xp = np
    needs_input_grad = ()
    materialize_grads = True
    _saved = ()

    def save_for_backward(self, *xs):
        self._saved = xs

    def save_for_forward(self, *xs):
        pass

    def mark_dirty(self, *xs):
        pass

    def mark_non_differentiable(self, *xs):
        pass

    def set_materialize_grads(self, value):
        pass

    @property
    def saved_tensors(self):
        return tuple([None if x is None else _make(x) for x in self._saved])


_CTX_CLASSES = {}


def _ctx_class(xp, nig):
    key = (xp, nig)
    c = _CTX_CLASSES.get(key)
    if c is None:
        c = _CTX_CLASSES[key] = type("ReplayCtx", (ReplayCtx,), {"__slots__": (), "xp": xp, "needs_input_grad": nig})
    return c


def _unit_ctx_class(xp, node):
    # the ctx of a forward whose backward formula is replayed whole: it also carries what the engine's
    # _call_backward reads from a node
    return type("ReplayCtx", (ReplayCtx,), {"__slots__": (), "xp": xp, "needs_input_grad": node.needs_input_grad,
                                              "_fn": node._fn, "_tensor_pos": node._tensor_pos,
                                              "_out_meta": node._out_meta, "_materialize": node._materialize})


def accumulate(t, g, steal):
    """Leaf accumulation as the engine does it (without hooks, which a replayable trace has none of)."""
    before = t._grad
    if before is None:
        if not steal or g.base is not None or not g.flags.c_contiguous:
            g = _backend.xp_of(g).array(g, copy=True, order="C")
        t._grad = _make(g)
        return g
    d = before._data
    d += g.astype(d.dtype, copy=False)
    before._vbox[0] += 1
    return d


class PlannedStep:
    """``optimizer.step()`` in a replay: the optimizer's plan (``Optimizer._plan``) while it serves, else
    ``step()`` itself, after which the plan is made again (a first step creates the state a plan needs).
    Only a plan of the class that defines the ``step()`` in use: a subclass with a ``step()`` of its own
    runs that."""

    __slots__ = ("step", "opt", "plan", "planned")

    def __init__(self, step, opt):
        self.step, self.opt, self.plan = step, opt, None
        mro = type(opt).__mro__
        self.planned = next(c for c in mro if "step" in c.__dict__) is next(c for c in mro if "_plan" in c.__dict__)

    def __call__(self):
        plan = self.plan
        if plan is None or not plan():
            self.plan = None
            self.step(self.opt)
            if self.planned:
                self.plan = self.opt._plan()


def set_grad(t, value):
    t._grad = value


def make_output(arr, rg, node, inference=False):
    t = _make(arr, rg, node if rg else None)
    if inference or STATE.inference:  # a replay under inference_mode (or one the call entered) hands out
        t._vbox = _INFERENCE_BOX      # inference tensors, as eager
    return t


def leaf_hooks(t):
    """The hooks on leaf ``t`` (its accumulator's and its post-accumulate ones), or None where it has never had
    any (the guard's check is then inline)."""
    acc = t._acc
    if (acc is None or not acc._hooked) and t._post_acc_hooks is None:
        return None
    node = () if acc is None else tuple(tuple(d.values()) if d else () for d in (
        acc._tensor_pre_hooks, acc._pre_hooks, acc._hooks))
    return node, tuple(t._post_acc_hooks.values()) if t._post_acc_hooks else (), bool(t._retains_grad)


def make_view_output(arr, of):
    """The replayed output that is a view of argument ``of``: its version counter and base, as eager's view."""
    return _make(arr, False, None, 0, of._vbox, of if of._base is None else of._base)


class Program:
    """One trace, compiled: ``guard(args, kwargs)`` and ``run(args, kwargs)``; ``steps`` describes it."""

    def __init__(self, tracer, args, kwargs, result, arg_paths, captured=(), numbers=()):
        self.tracer = tracer
        self.captured = captured  # (container, key, tensor, what): where the call's code read an outside tensor
        self.numbers = numbers  # (container, key, value, what): the Python values its code read by name
        self.reason = tracer.reason
        self.replays = 0
        self.steps = []
        self._names = {}
        self._globals = {"Tensor": Tensor, "STATE": STATE, "np": np, "_ACC": accumulate, "_SETGRAD": set_grad,
                         "_OUT": make_output, "_OUTV": make_view_output, "_HOOKS": leaf_hooks, "_DGET": dict.get, "partial": functools.partial, "_BW": _engine._call_backward, "_mk": _make,
                         "_asarray": _backend.numpy.asarray, "_SHAPE": ShapeChanged, "_CELL": _cell_value,
                         "_CELLX": _cell_or_missing, "_MISSING": _MISSING,
                         "_REPEAT": lambda n: itertools.repeat(_MISSING, n), "_DEFAULT_DTYPE": _dt._default,
                         "_AUTOCAST_STATE": _autocast.state_key, "_AUTOCAST": _autocast.AUTOCAST}
        # captured tensors the replay reads afresh from where the code read them (id(tensor) -> that expression)
        self.lifted = self._lift(tracer, captured, result)
        self.guard_src = self._guard_source(args, kwargs, arg_paths)
        self.guard = self._compile(self.guard_src, "guard")
        self.run = None
        self.run_src = None
        self.backward_src = None
        self.backward_steps = 0  # of a grad-mode call: the steps its one tape node's backward runs
        self.random = tracer.random
        self.externals = [t for t, _slot in tracer.externals.values()]
        self.grad_reads = len(tracer.grad_reads)  # .grad tensors made before the call, read afresh on each replay
        self.cuda_graph = None  # mode="reduce-overhead": the program's cudagraph.GraphReplay
        self.signature = None  # {argument path: description} of the traced call (compiled.signature)
        self.retraced = None  # what differed from the trace before it, if any
        self.checks = 0  # shapes that follow from values, checked by the replay (see _value_checks)
        self.shape_misses = 0  # replays that found one changed and ran the call eagerly
        if self.reason is None:
            try:
                self.run_src = self._program_source(result, arg_paths)
                self.run = self._compile(self.run_src, "run")
            except Unsupported as e:
                self.reason = str(e)
        if tracer.region is not None:
            tracer.region.outputs = None  # nor its outputs (and with them its tape)
        self.tracer = None  # the arrays of the traced call are not kept

    def _bind(self, obj, prefix):
        key = (prefix, id(obj))
        name = self._names.get(key)
        if name is None:
            name = self._names[key] = f"{prefix}{len(self._names)}"
            self._globals[name] = obj
        return name

    def _compile(self, src, name):
        code = compile(src, f"<workbench.compile {name}>", "exec")
        ns = dict(self._globals)
        exec(code, ns)
        return ns[name]

    def _read_src(self, container, key):
        """The expression that reads ``container[key]`` (a dict's, a list's item, a closure cell's value) now, or
        None where nothing is there."""
        cn = self._bind(container, "S")
        if container.__class__ is dict or container.__class__ is types.MappingProxyType:
            return f"{cn}.get({self._key_src(key)})"
        if container.__class__ is list:
            return f"({cn}[{key}] if len({cn}) > {key} else None)"
        return f"_CELL({cn})"

    def _key_src(self, key):
        """A dict key in the guard's source: written out (a string, an int), else bound (a tensor, a tuple)."""
        return repr(key) if key.__class__ in (str, int) else self._bind(key, "Y")

    def _place_src(self, container, key):
        """The expression that reads ``container[key]`` (a dict's, an attribute table's, a list's or tuple's
        item, a closure cell's value) now, or _MISSING where nothing is there."""
        if container is _pystate.ARGUMENT:  # key: the argument's path (args[0])
            return key
        cn = self._bind(container, "S")
        k = self._key_src(key)
        if isinstance(container, (list, tuple, collections.deque)):  # (a namedtuple, a list subclass too)
            return f"({cn}[{k}] if len({cn}) > {k} else _MISSING)"
        if container.__class__ is types.CellType:
            return f"_CELLX({cn})"
        if isinstance(container, dict) and container.__class__ is not dict:  # dict's get, not an override's
            return f"_DGET({cn}, {k}, _MISSING)"
        return f"{cn}.get({k}, _MISSING)"

    def _lift(self, T, captured, result):
        """The captured tensors the replay reads from where the code read them instead of the traced tensor, as
        it reads an argument: data (no grad), read at one place (a global, a closure variable, a module's plain
        attribute, ``batch["x"]``: not through a tuple), no view and no other outside tensor sharing its memory,
        not returned by it. A batch rebound on every call (``xb = next(it)`` in the notebook, ``step()`` reading
        ``xb``) then replays, and so does a metric's count the call updates in place after a ``reset()`` bound a new
        one (the replay writes the tensor it reads, as it writes an argument); the guard checks its class, shape,
        dtype and flags."""
        places = {}
        for container, key, t, _what in captured:
            places.setdefault(id(t), []).append((container, key, t))
        returned = {id(t) for t in tensors_in(result)}
        boxes = {}
        for t, _slot in T.externals.values():
            boxes[id(t._vbox)] = boxes.get(id(t._vbox), 0) + 1
        lifted = {}
        for tid, ps in places.items():
            if len(ps) != 1 or tid not in T.externals:
                continue
            container, key, t = ps[0]
            if (container.__class__ is tuple or t._rg or t._base is not None or boxes[id(t._vbox)] != 1
                    or tid in returned):
                continue
            lifted[tid] = self._read_src(container, key)
        return lifted

    # --- guards --------------------------------------------------------------------------------
    def _guard_source(self, args, kwargs, arg_paths):
        T = self.tracer
        lines = ["def guard(args, kwargs):",
                 f"    if len(args) != {len(args)} or kwargs.keys() != {set(kwargs)!r}:",
                 "        return False"]
        conds = [f"STATE.enabled is {bool(STATE.enabled)}", f"STATE.inference is {bool(STATE.inference)}",
                 # the default dtype (wb.ones(2) * 0.1) and autocast (its casts) as the trace found them
                 f"_DEFAULT_DTYPE[0] is {self._bind(_dt._default[0], 'K')}",
                 # (one flag read while no thread has autocast on: the common replay)
                 "not _AUTOCAST[0] or _AUTOCAST_STATE() is None" if _autocast.state_key() is None else
                 f"_AUTOCAST_STATE() == {self._bind(_autocast.state_key(), 'V')}"]
        first = {}  # id(array) -> the first argument path holding it: the program reads it from there
        arg_exprs = []
        for path, value in _walk(args, kwargs):
            expr = path
            if isinstance(value, Tensor):
                arg_exprs.append(expr)
                conds.extend(self._tensor_conds(expr, value))
                seen = first.setdefault(id(value._data), expr)
                if seen is not expr:  # the same array twice (f(x, x)): the replay needs it twice again
                    conds.append(f"{expr}._data is {seen}._data")
            elif value is None or value.__class__ in (bool, int, float, str) or (
                    value.__class__ is tuple and all(v.__class__ in (bool, int, str) for v in value)):
                conds.append(f"{expr}.__class__ is {self._bind(value.__class__, 'K')} and {expr} == {value!r}"
                             if value is not None else f"{expr} is None")
            else:
                conds.append(f"{expr} is {self._bind(value, 'V')}")
        for t, slot in T.externals.values():  # (a lifted one: what the name holds now, as an argument)
            conds.extend(self._tensor_conds(self.lifted.get(id(t)) or self._bind(t, "E"), t))
        # the hooks on the leaves whose gradients the call computes (w.register_hook(lambda g: g * 10) ran in the
        # trace, and a replay repeats what it did): none, as at the trace, or the same ones
        leaves = [(self._bind(t, "E"), t) for t, _slot in T.externals.values() if t._rg and t.grad_fn is None]
        leaves += [(e, v) for e, v in zip(arg_exprs, [v for _p, v in _walk(args, kwargs) if isinstance(v, Tensor)])
                   if v._rg and v.grad_fn is None]
        for expr, t in leaves:
            hooks = leaf_hooks(t)
            if hooks is None:
                conds.append(f"({expr}._acc is None or not {expr}._acc._hooked) and {expr}._post_acc_hooks is None")
            else:
                conds.append(f"_HOOKS({expr}) == {self._bind(hooks, 'V')}")
        others = [self.lifted.get(id(t)) or self._bind(t, "E") for t, _slot in T.externals.values()] + arg_exprs
        for t, slot in T.externals.values():  # a lifted batch shares memory with nothing else the call reads (an
            read = self.lifted.get(id(t))     # in-place write to that must be seen by the version checks)
            if read is not None:
                conds.append(f"{read}._base is None")
                conds.extend(f"{read}._vbox is not {o}._vbox" for o in others if o != read)
        for container, key, t, _what in self.captured:  # the name the code read it by still holds it
            if id(t) in self.lifted or container.__class__ is tuple:  # (a tuple's items cannot be rebound)
                continue
            cn, tn = self._bind(container, "S"), self._bind(t, "E")
            if container.__class__ is dict or container.__class__ is types.MappingProxyType:
                conds.append(f"{cn}.get({self._key_src(key)}) is {tn}")
            elif container.__class__ is list:
                conds.append(f"len({cn}) > {key} and {cn}[{key}] is {tn}")
            else:  # a closure cell
                conds.append(f"{cn}.cell_contents is {tn}")
        conds.extend(self._read_conds(self.numbers))
        for t in T.grad_reads.values():  # a .grad made before the call, read where the call reads it
            g = t._grad
            gn = f"{self._bind(t, 'E')}._grad"
            conds.append(f"{gn} is not None")
            conds.extend(self._tensor_conds(gn, g))
        for m, training in T.entry_modes.values():  # as the call found it: a train()/eval() in the call replays
            conds.append(f"{self._bind(m, 'M')}.training is {bool(training)}")
        submodules_read = {id(c) for c, k, _v, _w in self.numbers if k is _pystate.VALUES}
        for m in T.modules.values():
            mn = self._bind(m, "M")
            attrs = T.module_attrs.get(id(m))
            if attrs:  # one comparison per module: its plain attributes as the traced call found them
                names = tuple(attrs)
                conds.append(f"tuple(map({mn}.__dict__.get, {names!r})) == {self._bind(tuple(attrs.values()), 'V')}")
            hooked = bool(m._forward_pre_hooks or m._forward_hooks or m._backward_hooks or m._backward_pre_hooks)
            conds.append(f"bool({mn}._forward_pre_hooks or {mn}._forward_hooks or {mn}._backward_hooks or "
                         f"{mn}._backward_pre_hooks) is {hooked}")  # (a trace with hooks runs eagerly: it must match)
            if m._modules and id(m._modules) not in submodules_read:  # its submodules (model[0] = nn.Linear(...))
                conds.append(f"tuple({mn}._modules.items()) == {self._bind(tuple(m._modules.items()), 'V')}")
            for table in ("_parameters", "_buffers"):
                d = m.__dict__[table]
                if d:
                    dn = self._bind(d, "D")
                    conds.append(f"{mn}.{table} is {dn}")
                    for k, v in d.items():
                        conds.append(f"{dn}.get({k!r}) is {self._bind(v, 'P') if v is not None else 'None'}")
        for c in conds:
            lines.append(f"    if not ({c}):")
            lines.append("        return False")
        lines.append("    return True")
        return "\n".join(lines) + "\n"

    def _read_conds(self, reads):
        """The guard's checks of the Python values the call read (``pystate.python_state``): each place holds the
        same value, of the same class (1 is not 1.0 or True; a nan is itself), or the very container or module it
        held. A container's many values are compared in one go (a config dict, a list of numbers)."""
        conds, bulk = [], {}
        for container, key, v, _what in reads:
            if key is _pystate.LENGTH:
                conds.append(f"len({self._bind(container, 'S')}) == {v}")
                continue
            if key is _pystate.ENVIRON:  # os.environ's items
                conds.append(f"dict({self._bind(container, 'S')}) == {self._bind(v, 'V')}")
                continue
            if key is _pystate.SET:  # a set's items
                conds.append(f"{self._bind(container, 'S')} == {self._bind(v, 'V')}")
                continue
            if key is _pystate.VALUES:  # a module's submodules, in order
                conds.append(f"tuple({self._bind(container, 'S')}.values()) == {self._bind(v, 'V')}")
                continue
            if v is _pystate.ABSENT:  # nothing there (a class attribute the object does not shadow)
                conds.append(f"{self._place_src(container, key)} is _MISSING")
                continue
            if isinstance(v, np.ndarray):  # that array, holding the same values
                conds.append(f"(_a := {self._place_src(container, key)}) is {self._bind(v, 'V')} and "
                             f"_a.tobytes() == {self._bind(v.tobytes(), 'V')}")
                continue
            if plain_value(v) and container.__class__ is not types.CellType and container is not _pystate.ARGUMENT:
                bulk.setdefault(id(container), (container, []))[1].append((key, v))
                continue
            read = self._place_src(container, key)
            vn = self._bind(v, "V")
            if plain_value(v):
                conds.append(f"(_v := {read}) is {vn} or _v.__class__ is {self._bind(v.__class__, 'K')} and _v == {vn}")
            else:
                conds.append(f"{read} is {vn}")
        for container, items in bulk.values():
            if len(items) < 4:
                for key, v in items:
                    vn = self._bind(v, "V")
                    conds.append(f"(_v := {self._place_src(container, key)}) is {vn} or "
                                 f"_v.__class__ is {self._bind(v.__class__, 'K')} and _v == {vn}")
                continue
            cn = self._bind(container, "S")
            keys, values = tuple(k for k, _v in items), tuple(v for _k, v in items)
            kn, vn, tn = self._bind(keys, "V"), self._bind(values, "V"), self._bind(tuple(map(type, values)), "V")
            if container.__class__ is list and len(items) == len(container) and len(items) > 64:
                # a long list of numbers: one C-level comparison (the classes not checked one by one)
                conds.append(f"{cn} == {self._bind(list(values), 'V')}")
                continue
            if isinstance(container, (list, tuple, collections.deque)):
                read = f"len({cn}) > {max(keys)} and (_t := tuple(map({cn}.__getitem__, {kn})))"
            else:
                get = f"{cn}.get" if container.__class__ is dict or not isinstance(container, dict) else \
                    f"partial(_DGET, {cn})"
                read = f"(_t := tuple(map({get}, {kn}, _REPEAT({len(keys)}))))"
            conds.append(f"{read} == {vn} and tuple(map(type, _t)) == {tn}")
        return conds

    def _tensor_conds(self, expr, t):
        d = t._data
        return [f"{expr}.__class__ is {self._bind(t.__class__, 'K')}",
                f"{expr}._data.__class__ is {self._bind(d.__class__, 'K')}",
                f"{expr}._data.shape == {tuple(d.shape)!r}",
                f"{expr}._data.dtype == {self._bind(d.dtype, 'K')}",
                # (code may branch on x.is_contiguous(), and a kernel's choice follows the layout)
                f"{expr}._data.flags.c_contiguous is {bool(d.flags.c_contiguous)}",
                f"{expr}._rg is {bool(t._rg)}"] + (
                    # a leaf's gradient is accumulated into it; a non-leaf's flows on to its graph
                    [f"({expr}.grad_fn is None) is {t.grad_fn is None}"] if t._rg else [])

    # --- the program ---------------------------------------------------------------------------
    def _program_source(self, result, arg_paths):
        T = self.tracer
        self._arg_paths = arg_paths
        self._vboxes = {}  # id(version box) -> the source of the argument or outside tensor that owns it
        self._out_memo = {}  # id(output tensor) -> the local holding its replayed tensor
        # the .grad of a leaf the call was given or read, as the call left it: returned, it is read there
        self._grads = {id(t._grad): f"{src}._grad" for t, src in
                       [(t, self._bind(t, "E")) for t, _slot in T.externals.values()] +
                       [(obj, arg_paths[id(obj)]) for _s, (kind, obj) in T.bindings.items() if kind == "arg"]
                       if t._grad is not None and t.grad_fn is None}
        for _s, (kind, obj) in sorted(T.bindings.items()):
            if kind == "arg":
                self._vboxes.setdefault(id(obj._vbox), arg_paths[id(obj)])
            elif kind in ("ext", "grad"):
                t = obj if kind == "ext" else obj._grad
                self._vboxes.setdefault(id(t._vbox), self._bind(obj, "E") + ("" if kind == "ext" else "._grad"))
        region = T.region
        events = T.events
        if region is not None:
            events = T.events = _live_backward(events, region)
        stop = len(events) if region is None else region.split
        uses = {}  # slot -> index of the last event that reads it
        for i, ev in enumerate(events):
            for r in _slot_refs(ev.ins):
                uses[r] = i
        out_slots = {T.slot_of[id(t._data)] for t in tensors_in(result) if id(t._data) in T.slot_of}
        if region is not None:
            out_slots.update(s for _src, s in region.contributions)
        for s in out_slots:
            uses[s] = len(events)
        written = set()
        for ev in events:
            if ev.kind == "write":
                written.add(ev.ins[0][1])
        units = {id(ev.fn): ev.info for ev in events if ev.kind == "backward"}  # forward event -> its node
        lines = ["def run(args, kwargs):"]
        for s, b in sorted(T.bindings.items()):
            if s not in uses:
                continue
            kind, obj = b
            if kind == "arg":
                lines.append(f"    s{s} = {arg_paths[id(obj)]}._data")
            elif kind == "ext":
                lines.append(f"    s{s} = {self.lifted.get(id(obj)) or self._bind(obj, 'E')}._data")
            elif kind == "grad":
                lines.append(f"    s{s} = {self._bind(obj, 'E')}._grad._data")
            elif kind == "const":  # a fresh copy when the program writes into it, or hands it out
                cn = self._bind(obj, "C")
                stolen = any(ev.kind == "acc" and ev.ins[1] == ("s", s) for ev in events)
                lines.append(f"    s{s} = {cn}.copy()" if s in written or s in out_slots or stolen
                             else f"    s{s} = {cn}")
        ctx_uses = {}  # index of a forward event whose ctx a backward unit reads -> index of that backward
        for i, ev in enumerate(events):
            if ev.kind == "backward":
                ctx_uses[events.index(ev.fn)] = i
        dead = {}  # event index -> the locals it is the last to read (dropped after it, as eager drops them)
        for s, i in uses.items():
            dead.setdefault(i, []).append(f"s{s}")
        for i, ev in enumerate(events):
            dead.setdefault(i, []).extend(f"s{o}" for o in ev.outs if o not in uses)
        for k, i in ctx_uses.items():
            dead.setdefault(i, []).append(f"_c{k}")
        self._value_checks(events, stop)
        host_vars = {}
        ctx = {"uses": uses, "units": units, "events": events, "host_vars": host_vars, "dead": dead,
               "grad_mode": bool(STATE.enabled), "in_backward": False}
        for i in range(stop):
            self._event_lines(i, events[i], ctx, lines)
        if ctx["in_backward"]:
            lines.append("    STATE.enabled = True")
        if region is not None:
            lines.append(self._region_finish(region, events, stop, arg_paths))
            self.backward_src = self._backward_source(region, events, stop, ctx)
            self.backward_steps = len(events) - stop
            region.backward = self._compile(self.backward_src, "backward")
        lines.append(f"    return {self._output_src(result, arg_paths, host_vars, region)}")
        if ctx["grad_mode"]:  # an error mid-replay must not leave grad mode off
            body = ["    try:"] + ["    " + ln for ln in lines[1:]] + ["    finally:", "        STATE.enabled = True"]
            lines = lines[:1] + body
        return "\n".join(lines) + "\n"

    def _value_checks(self, events, stop):
        """Count the replay's shape checks (events whose shape follows from values and was read by Python:
        nonzero's count in a reshape, a mask's in a size); fail if one would come after the call changed
        something a fallback to eager could not undo."""
        T = self.tracer
        checked = [i for i, ev in enumerate(events) if ev.checked is not None]
        if not checked:
            return
        if checked[-1] >= stop:
            ev = events[checked[-1]]
            raise Unsupported(f"{ev.op}'s shape follows from the values{_where(ev.value_shaped)} and was read in the "
                              f"backward that runs after the call ({ev.checked})")
        self.checks = len(checked)
        last = checked[-1]
        changed = ("it drew random numbers" if T.random_from is not None and T.random_from <= last
                   else _first_change(T, events[:last]))
        if changed is not None:
            ev = events[last]
            raise Unsupported(f"{ev.op}'s shape follows from the values{_where(ev.value_shaped)} and the call read "
                              f"it ({ev.checked}) after {changed}: a replay could not fall back to eager where the "
                              "shape differs")

    def _event_lines(self, i, ev, ctx, lines):
        """The source lines of event ``i``, appended to ``lines``."""
        T = self.tracer
        uses, units, events = ctx["uses"], ctx["units"], ctx["events"]
        # backward formulas run with grad mode off, as the engine runs them
        if (ev.kind == "backward") != ctx["in_backward"] and ctx["grad_mode"]:
            ctx["in_backward"] = not ctx["in_backward"]
            lines.append(f"    STATE.enabled = {not ctx['in_backward']}")
        args_src = ", ".join(self._ref_src(r) for r in ev.ins)
        outs = ev.outs
        lhs = ", ".join(f"s{o}" for o in outs) if outs else None
        self.steps.append((ev.kind, ev.op, ev.scope))
        if ev.kind == "call":
            info = ev.info
            if info == "ufunc":
                call = f"{self._bind(ev.fn, 'F')}({args_src})"
            elif info[0] == "noctx":
                _, xp, n = info
                if xp is np and n < 9:
                    c = f"{self._bind(_function._NUMPY_CTX[n], 'X')}()"
                else:
                    c = f"{self._bind(_function._no_grad_ctx, 'X')}({self._bind(xp, 'X')}, {n})"
                call = f"{self._bind(ev.fn, 'F')}({c}{', ' if args_src else ''}{args_src})"
            else:  # a recorded forward: its ctx keeps what the backward formulas read
                _, xp, nig = info
                need = [e for e in ev.extract if e[0] in uses] or list(ev.copy_saved)
                unit_node = units.get(id(ev))
                if unit_node is not None or need:
                    ctxc = self._bind(_unit_ctx_class(xp, unit_node) if unit_node is not None
                                      else _ctx_class(xp, tuple(nig)), "X")
                    lines.append(f"    _c{i} = {ctxc}()")
                    call = f"{self._bind(ev.fn, 'F')}(_c{i}{', ' if args_src else ''}{args_src})"
                else:
                    ctxc = self._bind(_ctx_class(xp, tuple(nig)), "X")
                    call = f"{self._bind(ev.fn, 'F')}({ctxc}(){', ' if args_src else ''}{args_src})"
            if ev.multi and len(outs) == 1:
                lhs += ","
            lines.append(f"    {lhs} = {call}")
            for k in ev.scalar:
                lines.append(f"    s{outs[k]} = _asarray(s{outs[k]})")
            if ev.checked is not None:
                why = self._bind(f"{ev.op}'s shape changed (it follows from the values; the traced call read it: "
                                 f"{ev.checked})", "V")
                for o in outs:
                    lines.append(f"    if s{o}.shape != {tuple(T.arrays[o].shape)!r}:")
                    lines.append(f"        raise _SHAPE({why})")
            if info != "ufunc" and info[0] == "ctx":
                for k, slot in ev.copy_saved:  # the value an in-place op overwrites next: the ctx keeps a copy
                    lines.append(f"    s{slot} = _c{i}._saved[{k}].copy()")
                    lines.append(f"    _c{i}._saved = _c{i}._saved[:{k}] + (s{slot},) + _c{i}._saved[{k + 1}:]")
                for slot, where, key, sub in ev.extract:
                    if slot in uses:
                        src = f"_c{i}._saved[{key}]" if where == "saved" else f"_c{i}.{key}"
                        lines.append(f"    s{slot} = {src}" + (f"[{sub}]" if sub is not None else ""))
                if need and units.get(id(ev)) is None:
                    lines.append(f"    del _c{i}")
        elif ev.kind == "backward":
            # the formula on the replayed forward's ctx, as the engine calls it (gradients as tensors); the
            # arrays of the gradients it returned at trace time
            k = events.index(ev.fn)
            grads = ", ".join("None" if r == ("c", None) else f"_mk({self._ref_src(r)})" for r in ev.ins)
            lines.append(f"    _r = _BW(_c{k}, [{grads}])")
            it = iter(outs)
            got = [f"s{next(it)}" for present in ev.multi if present]
            if got:
                lines.append(f"    {', '.join(got)}, = {', '.join(f'_r[{j}]._data' for j, p in enumerate(ev.multi) if p)},")
            return self._drop(i, ctx, lines, ["_r"])
        elif ev.kind == "write":
            lines.append(f"    {self._ref_src(ev.ins[0])}[...] = {self._ref_src(ev.ins[1])}")
            owner = self._vboxes.get(id(ev.info._vbox))
            if owner is not None:  # an argument or an outside tensor (or a view of one) written: its version moves
                lines.append(f"    {owner}._vbox[0] += 1")
        elif ev.kind == "acc":
            g = ev.ins[1]
            steal = g[0] == "s" and uses.get(g[1], -1) <= i and T.bindings.get(g[1]) is None
            lines.append(f"    {lhs} = _ACC({self._leaf_src(ev.info)}, {self._ref_src(g)}, {steal})")
        elif ev.kind == "setgrad":
            v = ev.ins[1]
            val = "None" if v == ("c", None) else f"Tensor._make({self._ref_src(v)})"
            lines.append(f"    _SETGRAD({self._leaf_src(ev.info)}, {val})")
        elif ev.kind == "opaque":
            fn, a, k = ev.fn
            if ev.info == "step" and len(a) == 1 and not k and not outs:  # optimizer.step(), no closure
                lines.append(f"    {self._bind(PlannedStep(fn, a[0]), 'O')}()")
                return self._drop(i, ctx, lines)
            fname = self._bind(fn, "O")
            if ev.extract:  # tensors the call computed, passed as this replay's
                at = dict(zip(ev.extract, ev.ins))

                def item(key, v):
                    return f"_mk({self._ref_src(at[key])})" if key in at else self._bind(v, "A")
                an = "(" + "".join(f"{item(j, v)}, " for j, v in enumerate(a)) + ")"
                kn = "{" + ", ".join(f"{key!r}: {item(key, v)}" for key, v in k.items()) + "}"
            else:
                an = self._bind(a, "A")
                kn = self._bind(k, "A")
            if outs:
                lines.append(f"    s{outs[0]} = {fname}(*{an}, **{kn})._data")
            else:
                lines.append(f"    {fname}(*{an}, **{kn})")
        elif ev.kind == "host":
            conv = {"item": "", "__float__": "float", "__int__": "int", "__bool__": "bool",
                    "__index__": "int"}[ev.fn]
            lines.append(f"    h{i} = {conv}({self._ref_src(ev.ins[0])}.reshape(()).item())")
            ctx["host_vars"][i] = f"h{i}"
        self._drop(i, ctx, lines)

    def _drop(self, i, ctx, lines, also=()):
        dead = [*also, *ctx["dead"].get(i, ())]
        if dead:
            lines.append(f"    del {', '.join(dead)}")

    # --- a grad-mode call: one node on the tape, and the backward program ----------------------
    def _source_src(self, src):
        return src[1] if src[0] == "arg" else self._bind(src[1], "E")

    def _region_env(self, region, events, stop):
        # what the backward program reads that the forward program made: slots and forward ctxs
        made_after = set(region.gins)
        slots, ctxs = [], []
        for ev in events[stop:]:
            for r in _slot_refs(ev.ins):
                if r not in made_after and r not in slots:
                    slots.append(r)
            if ev.kind == "backward":
                k = events.index(ev.fn)
                if k not in ctxs:
                    ctxs.append(k)
            made_after.update(ev.outs)
        for _src, s in region.contributions:
            if s not in made_after and s not in slots:
                slots.append(s)
        return [f"s{s}" for s in slots] + [f"_c{k}" for k in ctxs]

    def _region_finish(self, region, events, stop, arg_paths):
        env = self._region_env(region, events, stop)
        T = self.tracer
        outs = ", ".join(f"s{T.slot_of[id(t._data)]}" for t in region.outputs)
        sources = ", ".join(self._source_src(src) for src, _s in region.contributions)
        saved = ", ".join(self._source_src(src) for src in region.saved)
        return (f"    _o = {self._bind(region, 'R')}.finish(({', '.join(env)}{',' if len(env) == 1 else ''}), ({outs},), "
                f"({sources}{',' if len(region.contributions) == 1 else ''}), ({saved}{',' if len(region.saved) == 1 else ''}))")

    def _backward_source(self, region, events, stop, ctx):
        env = self._region_env(region, events, stop)
        lines = ["def backward(env, grads):"]
        if env:
            lines.append(f"    {', '.join(env)}{',' if len(env) == 1 else ''} = env")
        lines.append(f"    {', '.join(f's{s}' for s in region.gins)}, = grads")
        ctx = dict(ctx, grad_mode=False, in_backward=False)  # the engine runs it with grad mode off
        for i in range(stop, len(events)):
            self._event_lines(i, events[i], ctx, lines)
        res = ", ".join(f"s{s}" for _src, s in region.contributions)
        lines.append(f"    return ({res}{',' if len(region.contributions) == 1 else ''})")
        return "\n".join(lines) + "\n"

    def _leaf_src(self, t):
        # the tensor whose .grad an event sets: this call's argument where it was one, else the traced tensor
        path = self._arg_paths.get(id(t))
        return path if path is not None else self._bind(t, "L")

    def _ref_src(self, r):
        if r[0] == "s":
            return f"s{r[1]}"
        if r[0] == "seq":
            items = ", ".join(self._ref_src(x) for x in r[2])
            return f"[{items}]" if r[1] is list else f"({items}{',' if len(r[2]) == 1 else ''})"
        v = r[1]
        if v is None or v.__class__ in (bool, int, str) or (v.__class__ is float and v == v and abs(v) != float("inf")):
            return repr(v)
        return self._bind(v, "V")

    def _output_src(self, out, arg_paths, host_vars, region=None):
        T = self.tracer
        if isinstance(out, Tensor):
            if region is not None and id(out) in region.out_index:
                return f"_o[{region.out_index[id(out)]}]"
            if id(out) in arg_paths:
                return arg_paths[id(out)]
            if id(out) in T.externals:
                return self._bind(out, "E")
            memo = self._out_memo.get(id(out))
            if memo is not None:  # the same tensor twice (return y, y): the same object twice, as eager
                return memo
            grad_of = self._grads.get(id(out))
            if grad_of is not None:  # a parameter's .grad the call made: that tensor, as the replay leaves it
                return grad_of
            s = T.slot_of.get(id(out._data))
            if s is None:
                raise Unsupported("the call returns a tensor that no recorded op produced")
            node = out.grad_fn
            if node is not None and node._freed is None and node._saved is not None:
                raise Unsupported("the call returns a tensor whose graph is still to be differentiated (backward "
                                  "would run outside the replay); compile the whole training step instead")
            if node is None and out._rg:
                raise Unsupported("the call returns a leaf that requires grad")
            rg = out._rg
            if out._vbox is _INFERENCE_BOX:  # made under inference_mode() inside the call
                src = f"_OUT(s{s}, {rg}, None, True)"
            elif id(out._vbox) in self._vboxes and not rg:  # a view of an argument: its version counter and base
                src = f"_OUTV(s{s}, {self._vboxes[id(out._vbox)]})"
            else:
                src = f"_OUT(s{s}, {rg}, {self._bind(node, 'N') if rg else 'None'})"
            name = self._out_memo[id(out)] = f"_r{len(self._out_memo)}"
            return f"({name} := {src})"
        if out.__class__ in (tuple, list):
            items = [self._output_src(o, arg_paths, host_vars, region) for o in out]
            if out.__class__ is list:
                return "[" + ", ".join(items) + "]"
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if isinstance(out, tuple) and hasattr(out.__class__, "_fields"):  # a namedtuple (return types included)
            items = [self._output_src(o, arg_paths, host_vars, region) for o in out]
            return f"{self._bind(out.__class__, 'K')}({''.join(i + ', ' for i in items)})"
        if out.__class__ is dict:
            return "{" + ", ".join(f"{self._bind(k, 'V')}: {self._output_src(v, arg_paths, host_vars, region)}"
                                   for k, v in out.items()) + "}"
        if id(out) in T.host_values:
            return host_vars[T.host_values[id(out)]]
        if out is None or out.__class__ in (bool, int, str):
            return repr(out)
        if isinstance(out, (float, complex, np.floating, np.complexfloating)):  # (an int is most often a size)
            raise Unsupported(f"the call returns the Python number {out!r}, computed in Python (a learning rate, a "
                              "time): the replay would return it again; return a tensor, or compute it outside")
        if _contains_tensor(out):
            raise Unsupported(f"the call returns a {type(out).__name__} holding tensors")
        if hasattr(out, "__next__"):  # a generator function's generator runs its body later, outside any trace
            raise Unsupported(f"the call returns a {type(out).__name__} (an iterator: the replay would hand out the "
                              "same one, used up)")
        return self._bind(out, "V")


def _contains_tensor(x):
    if isinstance(x, Tensor):
        return True
    if isinstance(x, (list, tuple)):
        return any(_contains_tensor(v) for v in x)
    if isinstance(x, dict):
        return any(_contains_tensor(v) for v in x.values())
    return False


def _walk(args, kwargs):
    """(source expression, value) for every argument, tensors inside lists/tuples/dicts included."""
    stack = [(f"args[{i}]", a) for i, a in enumerate(args)] + [(f"kwargs[{k!r}]", v) for k, v in kwargs.items()]
    stack.reverse()
    while stack:
        path, v = stack.pop()
        if v.__class__ in (list, tuple):
            yield f"len({path})", len(v)
            stack.extend(reversed([(f"{path}[{i}]", x) for i, x in enumerate(v)]))
        elif v.__class__ is dict:
            yield f"tuple({path})", tuple(v)
            stack.extend(reversed([(f"{path}[{k!r}]", x) for k, x in v.items()]))
        else:
            yield path, v


def _first_change(T, events):
    """What the first of ``events`` to change state outside the replay did (None if none does): a fallback to
    eager after it would do it twice."""
    for ev in events:
        if ev.kind in ("acc", "setgrad") or ev.kind == "opaque" and not ev.op.endswith("zero_grad"):
            return f"{ev.op} ran"  # (not zero_grad: the eager call does it again, to the same effect)
        if ev.kind == "write":  # into an argument, a parameter, or a view (of who knows what)
            dst = ev.ins[0][1]
            b = T.bindings.get(dst)  # (a constant is copied afresh for each replay)
            if b is not None and b[0] != "const" or T.arrays[dst].base is not None:
                return f"{ev.op} wrote a tensor in place"
    return None


def captured_sources(fn, tensors, modules=()):
    """Where ``fn``'s code can read each of ``tensors`` (tensors from outside its arguments) by a name that may
    be bound to another tensor before the next call: [(container, key, tensor, what)]. Looked for in fn's
    globals, closure cells and default arguments, and those of the functions (and ``functools.partial``
    objects) found there, three levels deep; in the plain attributes of the ``modules`` the call used
    (``self.mask``) and of the object a bound method belongs to (``trainer.step`` reading ``self.x``); and two
    levels into the dicts, lists, tuples and plain objects held in all those places (``batch["x"]``,
    ``params[0]``, ``ns.x``, ``box["l"][0]``); a tuple's items are found through the name that holds the tuple.
    Each place found is either read afresh by the replay (``Program._lift``: a batch) or guarded: a new tensor
    there traces the call again. (A module's parameters and buffers are guarded through its own tables.)"""
    if not tensors:
        return []
    want = {id(t): t for t in tensors}
    scopes = [(m.__dict__, k, v, f"{type(m).__name__}.{k}", ()) for m in modules
              for k, v in list(m.__dict__.items()) if not k.startswith("_")]
    owner = getattr(fn, "__self__", None)
    scopes += [s for s in _pystate.scopes(fn)[0] if owner is None or owner not in modules
               or s[0] is not getattr(owner, "__dict__", None)]
    found, seen = [], set()

    def add(container, key, v, what):
        if (id(container), key) not in seen:
            seen.add((id(container), key))
            found.append((container, key, v, what))

    def visit(container, key, v, what, depth, record=True):
        # whether v is a wanted tensor or holds one (depth levels down); records the places on the way, but not
        # inside a tuple (its items are read through the name that holds it: that name is guarded)
        if id(v) in want and v is want[id(v)]:
            if record:
                add(container, key, v, what)
            return True
        if depth == 0:
            return False
        c = v.__class__
        if c is dict or c is list or c is tuple:
            holder, items, dot = v, (v.items() if c is dict else enumerate(v)), False
        elif _pystate.plain_object(v):
            holder, dot = v.__dict__, True
            items = [(k, x) for k, x in holder.items() if not k.startswith("_")]
        elif _pystate.user_class(v):
            holder, dot = vars(v), True  # a class of the user's (Data.x): its attributes, through the live proxy
            items = [(k, x) for k, x in holder.items() if not k.startswith("_")]
        else:
            return False
        if len(holder) > _pystate.MAX_ITEMS:
            return False
        inner = record and c is not tuple
        hit = False
        for k2, v2 in list(items):
            hit = visit(holder, k2, v2, f"{what}.{k2}" if dot else f"{what}[{k2!r}]", depth - 1, inner) or hit
        if hit and record:  # the holder itself must stay the one traced
            add(container, key, v, what)
        return hit

    for container, key, v, what, chain in scopes:
        if visit(container, key, v, what, 2):
            for c, k, h, w in chain:  # the helper must stay the one traced, where it was found
                if c.__class__ is not tuple:
                    add(c, k, h, w)
    return found


def unguardable(fn, T, captured):
    """Why a replay of ``fn``'s trace could not follow what an eager call would read or write, or None: the code
    assigns a global or an outer variable (a replay skips the Python that stores it), or it read a tensor from
    outside its arguments that ``captured_sources`` found at no place the guard can check (through an
    iterator's ``next``, a class attribute, a property, a global of another module): a replay would reuse the
    traced tensor while eager reads a new one."""
    stored = _outer_stores(fn)
    if stored:
        return (f"it assigns {stored} (a replay would skip the store): return the new value, or update a tensor in "
                "place")
    found = {id(t) for _c, _k, v, _w in captured for t in _tensors_held(v)}
    owned = set()  # the parameters and buffers of the modules the call used or its code can reach
    for m in list(T.modules.values()) + _reachable_modules(fn):
        owned.update(id(v) for v in m.parameters())
        owned.update(id(v) for v in m.buffers())
    for t, _slot in T.externals.values():
        if id(t) not in found and id(t) not in owned:
            return (f"it read a {t.dtype} tensor of shape {list(t.shape)} from outside its arguments at a place the "
                    "guard cannot check (an iterator, a class attribute, a property, another module's global): "
                    "pass it as an argument")
    return None


def _tensors_held(v, depth=3):
    """v if a tensor, or the tensors in a tuple (nested, ``depth`` levels): the ones a captured tuple guards."""
    if isinstance(v, Tensor):
        return [v]
    if v.__class__ is tuple and depth:
        return [t for x in v for t in _tensors_held(x, depth - 1)]
    return []


def _reachable_modules(fn):
    """The nn.Modules held by ``fn``'s object (a bound method's), globals and closure cells, or one level into a
    dict, list or tuple there: their parameters and buffers are the model's, not a batch."""
    f = getattr(fn, "__func__", fn)
    values = [getattr(fn, "__self__", None)] + list(getattr(f, "__globals__", {}).values())
    for cell in getattr(f, "__closure__", None) or ():
        values.append(_cell_value(cell))
    out = []
    for v in values:
        if isinstance(v, Module):
            out.append(v)
        elif v.__class__ in (dict, list, tuple) and len(v) <= 10_000:
            out.extend(x for x in (v.values() if v.__class__ is dict else v) if isinstance(x, Module))
    return out


def _outer_stores(fn):
    """The globals and outer variables ``fn``'s code (its nested functions' included) assigns or deletes, named
    for a message ("the global 'step'"), or ''."""
    f = getattr(fn, "__func__", fn)
    code = getattr(f, "__code__", None)
    if code is None:
        return ""
    local_cells = set(code.co_cellvars)
    names = []
    stack = [(code, True)]
    while stack:
        c, top = stack.pop()
        for i in dis.get_instructions(c):
            if i.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
                names.append(f"the global '{i.argval}'")
            elif i.opname in ("STORE_DEREF", "DELETE_DEREF") and i.argval in c.co_freevars and (
                    top or i.argval not in local_cells):
                names.append(f"the outer variable '{i.argval}'")
        stack.extend((k, False) for k in c.co_consts if hasattr(k, "co_code"))
    return ", ".join(sorted(set(names)))


def _cell_value(cell):
    """A closure cell's value, or None once the variable is deleted (a lifted batch's guard then misses)."""
    try:
        return cell.cell_contents
    except ValueError:
        return None


def _cell_or_missing(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


_MISSING = object()  # what the guard reads where a place holds nothing now



def signature(args, kwargs):
    """{argument path: what the guards see of it}, to say what differed when a call traces again."""
    sig = {"grad mode": "on" if STATE.enabled else "off"}
    for path, v in _walk(args, kwargs):
        if isinstance(v, Tensor):
            sig[path] = describe(v)
        else:
            sig[path] = f"{type(v).__name__} {v!r}"[:80]
    return sig


def describe(t):
    """What the guards see of a tensor argument (or a lifted captured tensor), for ``signature``."""
    return (f"a {t.dtype} tensor of shape {list(t.shape)} on {t.device}" + (" that requires grad" if t._rg else "")
            + ("" if t.grad_fn is None else " (non-leaf)"))


def arg_paths_of(args, kwargs):
    """{id(tensor): source expression} for the tensors among the arguments."""
    return {id(v): p for p, v in _walk(args, kwargs) if isinstance(v, Tensor)}


def _live_backward(events, region):
    """The events with the backward program's dead steps dropped (the sums of gradients at the region's
    boundary, which the engine does itself when the replay's gradients arrive there)."""
    live = {s for _src, s in region.contributions}
    keep = []
    for ev in reversed(events[region.split:]):
        # a backward that leaves state for a later one (Function._backward_effects) stays, whatever it returns
        if any(o in live for o in ev.outs) or ev.kind == "backward" and ev.info._fn._backward_effects:
            keep.append(ev)
            live.update(_slot_refs(ev.ins))
    return events[:region.split] + keep[::-1]


def tensors_in(out):
    """The tensors in ``out`` (a tensor, or lists, tuples and dicts of them, nested), depth first."""
    if isinstance(out, Tensor):
        yield out
    elif isinstance(out, (list, tuple)):
        for o in out:
            yield from tensors_in(o)
    elif isinstance(out, dict):
        for o in out.values():
            yield from tensors_in(o)

