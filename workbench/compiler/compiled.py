"""What ``workbench.compile`` returns: a compiled function, or a module wrapper around the original.

A call looks for a trace whose guard accepts it and replays it; with none, it traces the call (which
runs eagerly, so its results are eager's) and keeps the replay for the next calls, or keeps the reason
it cannot be replayed and runs those calls eagerly. While a visualizer listens to the tape, anomaly
detection or a trace level above 1 is on, or a backward hook (the gradient monitor) is registered,
calls run eagerly so the tools see every op.
"""
import functools
import threading
import weakref

from .. import _backend
from ..autograd import graph as _graph
from ..autograd.grad_mode import STATE
from ..nn.module import global_hooks_on as _module_hooks  # (nn.modules.module's hooks run Python per module)
from ..nn.module import Module
from ..tensor import Tensor
from . import config as _config
from . import cudagraph as _cudagraph
from . import grad_region as _grad_region
from . import trace as _trace
from .program import Program, _walk, arg_paths_of, captured_sources, describe, leaf_hooks, signature, unguardable
from .pystate import ABSENT, plain_value, changed, contents, python_state

np = _backend.numpy
ALL = weakref.WeakSet()  # every CompiledFunction alive (compiler.reset() forgets their traces)
INSIDE = threading.local()  # .depth: calls of compiled callables under way in this thread that run their Python
STANCE = ["default"]  # workbench.compiler.set_stance's


def inside():
    """Whether this thread runs the Python of a compiled callable's call (is_compiling() is True there)."""
    return getattr(INSIDE, "depth", 0) > 0


def _run_python(fn, args, kwargs):
    # the function itself (a trace, or an eager call): code in it sees is_compiling() True on every call, as code
    # that PyTorch compiled does (a replay runs no Python)
    depth = getattr(INSIDE, "depth", 0)
    INSIDE.depth = depth + 1
    try:
        return fn(*args, **kwargs)
    finally:
        INSIDE.depth = depth


class CompiledFunction:
    """A function compiled by ``workbench.compile``: call it as the original."""

    def __init__(self, fn, fullgraph=False, recompile_limit=None, name=None, cuda_graphs=False):
        self._fn = fn
        self._fullgraph = fullgraph
        self._cuda_graphs = cuda_graphs  # mode="reduce-overhead": replays on CUDA go through a CUDA graph
        self._limit_arg = recompile_limit
        self._programs = []  # most recent first
        self.calls = {"replay": 0, "eager": 0, "trace": 0}
        self.log = []  # (event, detail): traces, fallbacks and why
        self._name = name or getattr(fn, "__qualname__", type(fn).__name__)
        functools.update_wrapper(self, fn, updated=())
        ALL.add(self)

    @property
    def _limit(self):  # read on each call: config.recompile_limit may change between calls
        return int(self._limit_arg if self._limit_arg is not None else _config.recompile_limit)

    def __reduce__(self):  # a copy (deepcopy, pickle) is the function compiled afresh: traces are not copied
        return (_compiled_function, (self._fn, self._fullgraph, self._limit_arg, self._name, self._cuda_graphs))

    def __get__(self, obj, objtype=None):  # @compile on a method: bound as the function it wraps would be
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if STANCE[0] == "force_eager":
            return self._fn(*args, **kwargs)
        if _tools_listening():
            self.calls["eager"] += 1
            if not any(kind == "listening" for kind, _ in self.log):
                self.log.append(("listening", "a tool was watching the tape (a viz recorder or trace, the gradient "
                                              "monitor, detect_anomaly, a global module hook): those calls ran "
                                              "eagerly, so it saw every op"))
            return _run_python(self._fn, args, kwargs)
        for p in self._programs:
            if p.guard(args, kwargs):
                if p.run is None:
                    if self._fullgraph and not _suppressed():
                        raise _trace.Unsupported(f"workbench.compile(fullgraph=True): {self._name} cannot be replayed: "
                                                 f"{p.reason}")
                    self.calls["eager"] += 1
                    return _run_python(self._fn, args, kwargs)
                self.calls["replay"] += 1
                p.replays += 1
                try:
                    if self._cuda_graphs:
                        return _cudagraph.call(p, args, kwargs)
                    return p.run(args, kwargs)
                except _trace.ShapeChanged as e:  # raised before the replay changed anything
                    self.calls["replay"] -= 1
                    p.replays -= 1
                    p.shape_misses += 1
                    self.calls["eager"] += 1
                    if p.shape_misses == 1:
                        self.log.append(("eager", str(e)))
                    return _run_python(self._fn, args, kwargs)
        if self._programs and STANCE[0] != "default":  # set_stance: no new trace once there is one
            if STANCE[0] == "fail_on_recompile":
                raise RuntimeError(f"workbench.compile: {self._name} would trace again (its guards failed: the "
                                   "arguments or what it reads changed) while set_stance('fail_on_recompile') is on")
            self.calls["eager"] += 1
            return _run_python(self._fn, args, kwargs)
        if len(self._programs) >= self._limit:
            self.calls["eager"] += 1
            if not self.log or self.log[-1][0] != "limit":
                numbers = any(" was float " in (p.retraced or "") or " was int " in (p.retraced or "")
                              for p in self._programs)
                # a captured tensor rebound (guarded by identity), or a tensor whose shape changed
                captured = any("now Tensor object" in (p.retraced or "") for p in self._programs)
                shapes = any(" of shape " in (p.retraced or "") for p in self._programs)
                self.log.append(("limit", f"{self._limit} traces kept (recompile_limit); further signatures run "
                                          "eagerly" + ("; traces specialise on the Python values the function "
                                                       "reads, and one changed from call to call: pass a number "
                                                       "that changes every call as a tensor (wb.tensor(lr)), and "
                                                       "keep what changes out of the containers the function reads"
                                                       if numbers else "")
                                 + ("; a tensor the function reads from outside its arguments was a new one each "
                                    "call (a batch): pass it as an argument" if captured else "")
                                 + ("; traces specialise on shapes, and a tensor's shape changed from call to call: "
                                    "keep batches one shape (a DataLoader's drop_last=True)" if shapes else "")))
            return _run_python(self._fn, args, kwargs)
        return self._trace(args, kwargs)

    def _trace(self, args, kwargs):
        if _trace.ACTIVE[0] is not None:  # called inside another compiled call: part of that trace
            return _run_python(self._fn, args, kwargs)
        self.calls["trace"] += 1
        T = _trace.Tracer()
        paths = arg_paths_of(args, kwargs)
        for _path, t in _tensor_args(args, kwargs):
            if id(t._data) not in T.slot_of:
                n = T.new_slot(t._data)
                T.bindings[n] = ("arg", t)
        seq0 = T.seq0 = next(_graph._seq)
        # the Python values the call can read (the guard checks them), and the containers it must leave as it
        # found them (a replay would skip a change to them), as the call finds them
        try:  # (objects of any kind are inspected: one that raises makes the call eager, never fail it)
            state = python_state(self._fn, args, kwargs)
            numbers, holders = state.reads, state.holders
            before = contents(holders)
        except Exception as e:
            state, numbers, holders, before = None, [], [], []
            T.reason = (f"inspecting the Python state it reads raised {type(e).__name__}: {e} (an object whose "
                        "attributes raise): pass what it needs as arguments")
        T.holders = holders
        with T:
            result = _run_python(self._fn, args, kwargs)
            if T.reason is None and STATE.enabled:
                try:
                    T.region = _grad_region.record(T, self._name, result, [(("arg", paths[id(t)]), t) for _p, t
                                                                           in _tensor_args(args, kwargs)], seq0)
                except _trace.Unsupported:
                    pass
        if T.reason is None:
            try:
                T.check_state()
            except _trace.Unsupported:
                pass
        captured = captured_sources(self._fn, [t for t, _slot in T.externals.values()], list(T.modules.values()))
        if T.reason is None:
            T.reason = unguardable(self._fn, T, captured)
        if T.reason is None:
            try:
                what = changed(holders, before, T.replayed_changes) or T.module_changes()
            except Exception as e:
                what = f"something it found (comparing raised {type(e).__name__}: {e})"
            if what:
                T.reason = (f"it changed {what} (Python state: a replay runs the tensor ops only, and would skip "
                            "that): keep the bookkeeping outside the compiled function, or return the value")
            else:
                T.reason = state.unguardable
        del before
        T.holders = ()
        if T.reason is not None:  # a program that runs eagerly: what Python read does not matter to it
            numbers = []
        prog = Program(T, args, kwargs, result, paths, captured, numbers)
        prog.signature = signature(args, kwargs)
        for _c, _k, v, what in captured:  # by identity: a batch rebound to a new tensor is a new signature
            prog.signature[f"captured {what}"] = (describe(v) if id(v) in prog.lifted  # (read anew: as an argument)
                                                  else f"{type(v).__name__} object {id(v):#x}")
        for c, k, v, what in numbers:
            prog.signature[("global " if c.__class__ is dict and "__builtins__" in c else "") + what] = (
                "absent" if v is ABSENT else _describe(v))
        for t, _slot in T.externals.values():  # the hooks on the leaves it differentiates
            if t._rg and t.grad_fn is None:
                hooks = leaf_hooks(t)
                prog.signature[f"the hooks of {describe(t)} ({id(t):#x})"] = (
                    "none" if hooks is None else f"{sum(map(len, hooks[0])) + len(hooks[1])} hook(s)")
        for m in T.modules.values():  # their parameters (a layer frozen with requires_grad_(False) traces again)
            for k, p in m._parameters.items():
                if p is not None:
                    prog.signature[f"{type(m).__name__} (module {id(m):#x}) parameter {k}"] = describe(p)
        for m, training in T.entry_modes.values():  # the modules' modes and settings, as the call found them
            prog.signature[f"{type(m).__name__} (module {id(m):#x})"] = (
                f"in {'train' if training else 'eval'} mode, with {T.module_attrs.get(id(m), {})}")
        if self._programs:  # what differs from the latest trace (the guard missed for it)
            last = self._programs[0].signature
            diff = [f"{k} was {last.get(k, 'absent')}, now {v}" for k, v in prog.signature.items() if last.get(k) != v]
            diff += [f"{k} was {v}, now absent" for k, v in last.items() if k not in prog.signature]
            prog.retraced = "; ".join(diff[:3]) or "a parameter or a captured tensor changed"
        self._programs.insert(0, prog)
        if prog.reason is None:
            self.log.append(("trace", f"traced {len(prog.steps)} steps"))
        else:
            self.log.append(("fallback", prog.reason))
            if self._fullgraph and not _suppressed():
                raise _trace.Unsupported(f"workbench.compile(fullgraph=True): {self._name} cannot be replayed: "
                                         f"{prog.reason} (this call ran eagerly)")
        return result

    def _reset(self):
        self._programs.clear()
        self.calls = {"replay": 0, "eager": 0, "trace": 0}
        self.log = []


def _suppressed():
    return bool(_config.suppress_errors)


def _describe(v):
    """What the guard sees of a Python value it checks, for ``explain``'s 'traced because ...'."""
    if plain_value(v):
        return f"{type(v).__name__} {v!r}"[:80]
    if v.__class__ is np.ndarray:
        return f"ndarray object {id(v):#x} holding {v.tobytes().hex()[:40]}"
    if v.__class__ is tuple:  # a module's submodules (rebuilt for each trace: described by what they are)
        return "(" + ", ".join(f"{type(x).__name__} {id(x):#x}" for x in v) + ")"
    return f"{type(v).__name__} object {id(v):#x}"


def _tensor_args(args, kwargs):
    return [(p, v) for p, v in _walk(args, kwargs) if isinstance(v, Tensor)]


def _tools_listening():
    return bool(_graph.LISTENERS or _graph.BACKWARD_HOOKS or _graph.ANOMALY[0] or _graph.TRACE[0] >= 2
                or _graph.CUTS[0] is not None or _module_hooks())


def _optimized_module(mod, fullgraph, recompile_limit, cuda_graphs, hooks):
    m = OptimizedModule(mod, fullgraph, recompile_limit, cuda_graphs)
    m.__dict__.update(hooks)
    return m


def _compiled_function(fn, fullgraph, recompile_limit, name, cuda_graphs):
    return CompiledFunction(fn, fullgraph, recompile_limit, name, cuda_graphs)


class OptimizedModule(Module):
    """A module compiled by ``workbench.compile``: calls replay, everything else is the original's
    (``_orig_mod``): attributes, parameters, ``train()``/``eval()``, hooks; the state dict's keys carry
    the ``_orig_mod.`` prefix, as PyTorch's.

    >>> import workbench as wb
    >>> m = wb.compile(wb.nn.Linear(2, 1))
    >>> type(m._orig_mod).__name__, list(m.state_dict())
    ('Linear', ['_orig_mod.weight', '_orig_mod.bias'])
    """

    _own = frozenset({"_orig_mod", "_compiled_call", "forward", "__dict__"})  # what stays on the wrapper

    def __init__(self, mod, fullgraph=False, recompile_limit=None, cuda_graphs=False):
        super().__init__()
        Module.__setattr__(self, "_orig_mod", mod)
        self.__dict__["_compiled_call"] = CompiledFunction(mod, fullgraph, recompile_limit, type(mod).__name__,
                                                           cuda_graphs)

    def __call__(self, *args, **kwargs):
        d = self.__dict__
        if d["_forward_pre_hooks"] or d["_forward_hooks"] or d["_backward_hooks"] or d["_backward_pre_hooks"]:
            return Module.__call__(self, *args, **kwargs)  # hooks on the wrapper itself run around the call
        return d["_compiled_call"](*args, **kwargs)

    def forward(self, *args, **kwargs):
        return self.__dict__["_compiled_call"](*args, **kwargs)

    # attributes set or deleted on the wrapper are the original's (``cm.temperature = 2``, ``cm.fc = ...``), as
    # PyTorch's OptimizedModule: the replay reads the module it traced
    def __setattr__(self, name, value):
        if name in OptimizedModule._own or hasattr(type(self), name) or "_compiled_call" not in self.__dict__:
            return Module.__setattr__(self, name, value)
        return setattr(self._orig_mod, name, value)

    def __delattr__(self, name):
        if name in OptimizedModule._own or hasattr(type(self), name):
            return Module.__delattr__(self, name)
        return delattr(self._orig_mod, name)

    def __dir__(self):
        mine = Module.__dir__(self)
        theirs = dir(self._orig_mod)
        return theirs + [a for a in mine if a not in set(theirs)]

    def __reduce__(self):  # a copy (deepcopy, pickle, torch.save(model)) compiles the copied module afresh
        c = self.__dict__["_compiled_call"]
        return (_optimized_module, (self._orig_mod, c._fullgraph, c._limit_arg, c._cuda_graphs, self._hook_state()))

    def _hook_state(self):
        return {name: self.__dict__[name] for name in ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks",
                                                       "_backward_pre_hooks") if self.__dict__.get(name)}

    @property
    def training(self):
        return self._orig_mod.training

    @training.setter
    def training(self, value):
        if "_modules" in self.__dict__ and "_orig_mod" in self._modules:
            self._orig_mod.training = value

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_modules"]["_orig_mod"], name)
