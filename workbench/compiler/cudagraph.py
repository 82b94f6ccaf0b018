"""``mode="reduce-overhead"``: a replay on CUDA captured once into a CUDA graph, then launched.

As PyTorch's CUDA graphs (``mode="reduce-overhead"``), with static buffers: the first replay of a program runs
plainly (every kernel is then compiled and cached before any capture); the second copies the tensor arguments
into buffers of its own and captures the program on a side stream (``stream.begin_capture()`` ...
``end_capture()`` -> ``cupy.cuda.Graph``), with the memory it allocates taken from a private memory pool that the
graph keeps, so no block it writes is handed out to anything else. That call and every later one copy the
arguments into the buffers, launch the graph on the current stream (one launch instead of one per kernel) and
return copies of the outputs, so an output stays valid after the next call (PyTorch's instead are overwritten).

A program is captured only where a graph repeats it faithfully: no value read on the host, no random numbers
(a graph would draw the same ones on every launch), no optimizer step, LR scheduler, ``zero_grad`` or ``.grad``
accumulation (Python code and numbers a graph would freeze), no grad-mode call whose backward runs later (the
next launch would overwrite what that backward reads), every array on the GPU. Otherwise it replays as usual, and
``workbench.compiler.explain`` says why. A parameter whose array was replaced since the capture (``p.data = ...``)
makes the next call capture again; a guard miss traces (and later captures) a new program.
"""
from .. import _backend
from ..tensor import Tensor
from .program import _walk, tensors_in

_NOT_CAPTURED = {"opaque": "it calls {op} (Python code, and numbers, a graph would freeze)",
                 "host": "it reads a tensor's value on the host ({op})",
                 "acc": "it accumulates into .grad (which makes and rebinds gradient tensors)",
                 "setgrad": "it sets .grad"}


def why_not(program):
    """Why ``program`` cannot be captured in a CUDA graph, or None."""
    if program.backward_src is not None:
        return ("a call in grad mode whose backward runs later is not captured (the next launch would overwrite the "
                "arrays its pending backward reads)")
    for kind, op, _scope in program.steps:
        if kind in _NOT_CAPTURED:
            return _NOT_CAPTURED[kind].format(op=op)
    if program.lifted:
        return ("it reads a tensor from outside its arguments by name (a graph would keep reading the first one); "
                "pass it as an argument")
    if program.grad_reads:
        return "it reads a .grad made before the call (zero_grad may replace that tensor between launches)"
    if program.checks:
        return ("its shapes follow from values (nonzero, a boolean mask), which the replay checks on the host and a "
                "graph would fix")
    if program.random:
        return "it draws random numbers (a captured graph would repeat the same ones on every launch)"
    return None


def call(program, args, kwargs):
    """A replay under mode="reduce-overhead": through the program's CUDA graph where it has one."""
    g = program.cuda_graph
    if g is None:
        g = program.cuda_graph = GraphReplay(program)
    if g.reason is not None:
        return program.run(args, kwargs)
    return g(args, kwargs)


class GraphReplay:
    """One program's CUDA graph: static input buffers, the captured outputs; ``reason`` when not captured."""

    def __init__(self, program):
        self.program = program
        self.reason = why_not(program)
        self.graph = None
        self.captures = 0
        self.launches = 0
        self._plain_runs = 0

    def __call__(self, args, kwargs):
        tensors = [v for _p, v in _walk(args, kwargs) if isinstance(v, Tensor)]
        if self.graph is None or any(t._data is not a for t, a in self._externals):
            if self._plain_runs == 0:  # a warm-up: kernels compiled and handles made before the capture
                self._plain_runs += 1
                return self.program.run(args, kwargs)
            xp = _xp(tensors + self.program.externals)
            if xp is None:
                self.reason = "it runs on the CPU (CUDA graphs capture GPU work)"
                return self.program.run(args, kwargs)
            try:
                self._capture(xp, args, kwargs, tensors)
            except Exception as e:  # nothing ran while capturing: the call replays plainly instead
                self.graph = None
                self.reason = f"capturing failed: {type(e).__name__}: {e}"
                return self.program.run(args, kwargs)
        for s, t in zip(self._statics, tensors):
            s[...] = t._data
        self.graph.launch(stream=self._xp.cuda.get_current_stream())
        self.launches += 1
        return _rebuild(self._out, lambda t: self._emit(t, tensors))

    def _capture(self, xp, args, kwargs, tensors):
        self._xp = xp
        self._pool = xp.cuda.MemoryPool()  # private: its blocks stay the graph's
        stream = xp.cuda.Stream(non_blocking=True)
        with xp.cuda.using_allocator(self._pool.malloc):
            self._statics = [xp.empty_like(t._data) for t in tensors]
            for s, t in zip(self._statics, tensors):
                s[...] = t._data
            subs = {id(t): Tensor._make(s, t._rg) for s, t in zip(self._statics, tensors)}
            sargs, skw = _rebuild(args, lambda t: subs[id(t)]), _rebuild(kwargs, lambda t: subs[id(t)])
            with stream:
                stream.begin_capture()
                try:
                    out = self.program.run(sargs, skw)
                except BaseException:
                    try:
                        stream.end_capture()
                    except Exception:  # the capture was invalidated: the error that did it is the one to tell
                        pass
                    raise
                self.graph = stream.end_capture()
        self.captures += 1
        self._externals = [(t, t._data) for t in self.program.externals]
        # each output: an argument (its buffer), an outside tensor as is, or an array the graph writes
        where = {id(s): k for k, s in enumerate(self._statics)}
        self._kinds = {}
        for t in tensors_in(out):
            k = where.get(id(t._data))
            self._kinds[id(t)] = ("arg", k) if k is not None else (
                ("same", None) if any(t is e for e in self.program.externals) else ("graph", None))
        self._out = out

    def _emit(self, t, tensors):
        kind, k = self._kinds[id(t)]
        if kind == "arg":
            return tensors[k]
        if kind == "same":
            return t
        return Tensor._make(t._data.copy(), t._rg, t.grad_fn)

    def describe(self):
        if self.reason is not None:
            return f"not captured in a CUDA graph: {self.reason}"
        if self.graph is None:
            return "CUDA graph: captured on the next replay"
        return f"CUDA graph: {self.captures} capture(s), {self.launches} launch(es)"


def _xp(tensors):
    mods = {_backend.xp_of(t._data) for t in tensors}
    if not mods or _backend.numpy in mods:
        return None
    return mods.pop()


def _rebuild(obj, leaf):
    if isinstance(obj, Tensor):
        return leaf(obj)
    if obj.__class__ in (list, tuple):
        return obj.__class__(_rebuild(o, leaf) for o in obj)
    if obj.__class__ is dict:
        return {k: _rebuild(v, leaf) for k, v in obj.items()}
    return obj
