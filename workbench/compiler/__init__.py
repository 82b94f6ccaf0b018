"""``workbench.compile``: trace a call once, then replay its array program.

The first call with a new signature runs eagerly while its array program is recorded (see
``trace.py``); later calls whose guards hold replay it (``program.py``) with no module dispatch, no
Tensor per intermediate and no tape: the same array functions in the same order, so results,
gradients and optimizer state are eager's bit for bit. What cannot be replayed (a value read on the
host mid-call, a tensor made from raw arrays outside an op, hooks, Python side effects on tensors)
runs eagerly, and ``explain`` says why.

The replay repeats the array work and the calls of optimizers, LR schedulers, ``zero_grad`` and
gradient clipping. Other Python the function runs (printing, appending to a list, counters, reading a
value it keeps in a container) is followed: a replay is used only where that Python would do nothing
different, and the call runs eagerly otherwise (``pystate.py``; docs/compile.md).
"""
import contextlib
import functools

from ..nn.module import Module
from . import compiled as _compiled
from . import config  # noqa: F401  (torch._dynamo.config's settings)
from .compiled import CompiledFunction, OptimizedModule
from .trace import ACTIVE, Unsupported

__all__ = ["compile", "explain", "reset", "is_compiling", "is_dynamo_compiling", "is_exporting", "disable",
           "set_stance", "list_backends", "allow_in_graph", "assume_constant_result", "Unsupported",
           "OptimizedModule"]

_BACKENDS = ("inductor", "eager", "aot_eager", "cudagraphs", "workbench")
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile(model=None, *, fullgraph=False, dynamic=None, backend=None, mode=None, options=None, name=None,
            disable=False, recompile_limit=None, isolate_recompiles=False, shapes_spec=None):
    """Compile a module or function for replay; the signature is ``torch.compile``'s.

    Returns a callable that behaves as the original: a module comes back wrapped (``_orig_mod`` is the
    original; attributes, ``train()``/``eval()``, hooks and the state dict go through to it), a function
    as a ``CompiledFunction``. ``model=None`` returns a decorator. ``backend``, ``mode``, ``options`` and
    ``dynamic`` are accepted for PyTorch code (every backend name replays here; traces specialise on
    shapes, so a new shape retraces); ``mode="reduce-overhead"`` (or ``backend="cudagraphs"``) also captures
    a replay on CUDA in a CUDA graph (see ``cudagraph.py``); ``disable=True`` returns ``model`` itself.

    >>> import workbench as wb
    >>> net = wb.nn.Linear(4, 2)
    >>> opt = wb.optim.SGD(net.parameters(), lr=0.1)
    >>> @wb.compile
    ... def step(x, y):
    ...     opt.zero_grad()
    ...     loss = wb.nn.functional.mse_loss(net(x), y)
    ...     loss.backward()
    ...     opt.step()
    ...     return loss
    >>> x, y = wb.ones(3, 4), wb.zeros(3, 2)
    >>> losses = [step(x, y) for _ in range(3)]
    >>> wb.compiler.explain(step).replays
    2
    """
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode!r}, should be one of: {', '.join(m for m in _MODES if m)}")
    if isinstance(backend, str) and backend not in _BACKENDS:  # None: the default (PyTorch: inductor)
        raise RuntimeError(f"workbench.compile: unknown backend {backend!r}; known backends: {', '.join(_BACKENDS)} "
                           "(a callable backend is accepted too: the replay is the same)")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"workbench.compile: options must be a dict, got {type(options).__name__}")
    if model is None:
        def decorator(fn):
            if fn is None:
                raise RuntimeError("Model can't be None")
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                           name=name, disable=disable, recompile_limit=recompile_limit)
        return decorator
    if not callable(model):
        raise TypeError(f"workbench.compile expects a Module or a callable, got {type(model).__name__}")
    if disable:
        return model
    if isinstance(model, OptimizedModule):
        model = model._orig_mod
    graphs = mode == "reduce-overhead" or backend == "cudagraphs"
    if isinstance(model, Module):
        return OptimizedModule(model, fullgraph, recompile_limit, graphs)
    if isinstance(model, CompiledFunction):
        model = model._fn
    return CompiledFunction(model, fullgraph, recompile_limit, name, graphs)


class Explanation:
    """What a compiled callable did: its traces (with their guards and steps), replays, eager calls,
    and the reasons for each fallback."""

    def __init__(self, compiled):
        self.name = compiled._name
        self.traces = len(compiled._programs)
        self.replays = compiled.calls["replay"]
        self.eager_calls = compiled.calls["eager"]
        self.traced_calls = compiled.calls["trace"]
        self.reasons = [p.reason for p in compiled._programs if p.reason is not None] + [
            detail for kind, detail in compiled.log if kind in ("limit", "listening")]
        self.programs = list(compiled._programs)
        self.log = list(compiled.log)

    def __repr__(self):
        lines = [f"workbench.compile: {self.name}: {self.traces} trace(s), {self.traced_calls} traced call(s), "
                 f"{self.replays} replay(s), {self.eager_calls} eager call(s)"]
        for i, p in enumerate(self.programs):
            graph = "" if p.cuda_graph is None else f"; {p.cuda_graph.describe()}"
            if p.retraced:
                graph += f"; traced because {p.retraced}"
            if p.shape_misses:
                graph += (f"; {p.shape_misses} call(s) ran eagerly where a shape that follows from the values "
                          "changed")
            if p.reason is None and p.backward_steps:
                lines.append(f"  trace {i}: replays {len(p.steps) - p.backward_steps} steps, and "
                             f"{p.backward_steps} in the backward of its one tape node ({p.replays} replays{graph})")
            elif p.reason is None:
                lines.append(f"  trace {i}: replays {len(p.steps)} steps ({p.replays} replays{graph})")
            else:
                lines.append(f"  trace {i}: runs eagerly: {p.reason}")
        for kind, detail in self.log:
            if kind in ("limit", "listening"):
                lines.append(f"  {detail}")
        return "\n".join(lines)


def explain(fn):
    """Report on a compiled callable: traces, replays, eager calls and why any call ran eagerly.

    >>> import workbench as wb
    >>> f = wb.compile(lambda x: (x * 2).sum().item() + (x * 3).sum().item())
    >>> _ = f(wb.ones(2)); _ = f(wb.ones(2))
    >>> print(wb.compiler.explain(f).reasons[0][:46])
    a tensor's value was read on the host (.item()
    """
    if isinstance(fn, OptimizedModule):
        target = fn.__dict__["_compiled_call"]
    elif isinstance(fn, Module):  # compiled in place by Module.compile()
        target = fn.__dict__.get("forward")
    else:
        target = fn
    if not isinstance(target, CompiledFunction):
        raise TypeError(f"workbench.compiler.explain expects what workbench.compile returned, got "
                        f"{type(fn).__name__}")
    return Explanation(target)


def reset():
    """Forget every trace (as ``torch.compiler.reset``): the next calls trace again."""
    for obj in list(_compiled.ALL):
        obj._reset()


def is_compiling():
    """True inside a call of a compiled function or module (the traced call, and calls that run eagerly), as
    code compiled by PyTorch sees it; False elsewhere.

    >>> import workbench as wb
    >>> f = wb.compile(lambda x: x * 2 if wb.compiler.is_compiling() else x * 3)
    >>> wb.compiler.is_compiling(), f(wb.ones(1)).item()
    (False, 2.0)
    """
    return _compiled.inside()  # (a trace runs inside a call too)


is_dynamo_compiling = is_compiling


def is_exporting():
    """False: workbench has no ``torch.export``."""
    return False


def disable(fn=None, recursive=True, *, reason=None):
    """Keep ``fn`` out of compilation, as ``torch.compiler.disable`` (a decorator, with or without arguments).

    PyTorch runs such a function eagerly between compiled graphs. A replay here is one program for the whole
    call, so a compiled call that reaches ``fn`` runs eagerly as a whole (``explain`` names ``fn`` and
    ``reason``); results are eager's either way. A module is returned with its ``forward`` disabled.

    >>> import workbench as wb
    >>> @wb.compiler.disable
    ... def log_stats(x):
    ...     return x.mean()
    >>> step = wb.compile(lambda x: log_stats(x * 2))
    >>> _ = step(wb.ones(2)); _ = step(wb.ones(2))
    >>> 'log_stats' in wb.compiler.explain(step).reasons[0]
    True
    """
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    if isinstance(fn, Module):
        fn.__dict__["forward"] = disable(fn.forward, recursive, reason=reason)
        return fn
    name = getattr(fn, "__qualname__", type(fn).__name__)

    @functools.wraps(fn)
    def disabled(*args, **kwargs):
        T = ACTIVE[0]
        if T is not None and T.reason is None:
            T.reason = (f"it calls {name}, marked workbench.compiler.disable" + (f" ({reason})" if reason else "")
                        + ": that runs eagerly, and so does the whole call")
        return fn(*args, **kwargs)

    disabled._workbench_disabled = True
    return disabled


_STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile")


class _Stance(contextlib.ContextDecorator):
    def __init__(self, stance):
        self.stance, self.prev = stance, _compiled.STANCE[0]
        _compiled.STANCE[0] = stance

    def __enter__(self):
        _compiled.STANCE[0] = self.stance
        return self

    def __exit__(self, *exc):
        _compiled.STANCE[0] = self.prev
        return False


def set_stance(stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
    """How compiled callables behave from now on (or within a ``with`` block, or a decorated function), as
    ``torch.compiler.set_stance``: ``"default"``; ``"force_eager"`` (run the original, trace nothing);
    ``"eager_on_recompile"`` (replay what is traced, run eagerly where a new trace would be needed);
    ``"fail_on_recompile"`` (raise RuntimeError where a new trace would be needed).

    >>> import workbench as wb
    >>> f = wb.compile(lambda x: x + 1)
    >>> with wb.compiler.set_stance("force_eager"):
    ...     _ = f(wb.ones(2))
    >>> wb.compiler.explain(f).traced_calls
    0
    """
    if stance not in _STANCES:
        raise RuntimeError(f"invalid torch.compile stance {stance!r}: expected one of {', '.join(_STANCES)}")
    if force_backend is not None and stance != "default":
        raise RuntimeError("force_backend can only be used with the 'default' stance")
    return _Stance(stance)


def list_backends(exclude_tags=("debug", "experimental")):
    """The backend names ``compile`` accepts (each replays the traced program here).

    >>> import workbench as wb
    >>> "inductor" in wb.compiler.list_backends()
    True
    """
    debug = {"eager", "aot_eager"}
    return sorted(b for b in _BACKENDS if not (exclude_tags and "debug" in exclude_tags and b in debug))


def allow_in_graph(fn):
    """``fn`` itself: the tracer records whatever array work a function does, so nothing needs allowing."""
    return fn


def assume_constant_result(fn):
    """``fn`` itself, accepted for PyTorch code: the tracer and its guards treat it as any function the call
    runs (what it reads is checked on every call)."""
    return fn
