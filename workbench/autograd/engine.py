"""The backward engine: one generator, ``iter_backward``, that yields a record per executed node.

``backward()`` and ``autograd.grad()`` drain it; the debugger (workbench.viz) pauses it one step at a
time; the recorder turns its steps into a replayable trace. There is no second engine.

The walk is iterative (dependency counts + a ready heap ordered by recording sequence, newest first,
as PyTorch does), so a 100,000-node chain needs no recursion.
"""
import heapq
import operator
import sys
import threading
import warnings

from .. import _backend
from .._broadcast import sum_to
from .._pyframe import call2 as _call2, iadd_cast as _iadd_cast
from .._core import Tensor
from . import graph
from .function import free_saved
from .grad_mode import STATE, count_backward
from .graph import AccumulateGrad, gradient_edge

_ndarray = _backend.ndarray
# the backward run whose nodes execute now in this thread (set as a walk starts or resumes, put back as it ends):
# a primitive whose nodes share work across a run (ops.recurrent's recurrent weights) tells runs apart by it
_LOCAL = threading.local()


def current_run():
    """The backward run (``iter_backward``'s object) executing in this thread, or None."""
    return getattr(_LOCAL, "run", None)

_make = Tensor._make
_step = tuple.__new__  # BackwardStep's constructor without a Python-level call
xp_of = _backend.xp_of


class BackwardStep(tuple):
    """What one node of the backward pass did (a named tuple: cheap to make once per node).

    node:         the Node executed (an op's grad_fn, or an AccumulateGrad for a leaf)
    grad_outputs: the gradients that arrived for the node's outputs (Tensors or None)
    grad_inputs:  the gradients the node produced, one per entry of node.next_functions
    leaves:       [(tensor, grad_before, grad_after)] for AccumulateGrad steps
    index:        0, 1, 2... in execution order

    >>> import workbench as wb
    >>> x = wb.ones(2, requires_grad=True)
    >>> y = (x * 2).sum()
    >>> [s.node.name() for s in wb.autograd.iter_backward([y], [wb.tensor(1.)])]
    ['SumBackward0', 'MulBackward0', 'AccumulateGrad']
    """

    __slots__ = ()

    def __new__(cls, node, grad_outputs, grad_inputs, leaves, index):
        return tuple.__new__(cls, (node, grad_outputs, grad_inputs, leaves, index))

    node = property(operator.itemgetter(0))
    grad_outputs = property(operator.itemgetter(1))
    grad_inputs = property(operator.itemgetter(2))
    leaves = property(operator.itemgetter(3))
    index = property(operator.itemgetter(4))

    def __repr__(self):
        return f"<BackwardStep {self[4]}: {self[0].name()}>"


def no_grad_error(t, what="tensors"):
    """The 'element 0 ... does not require grad' error, saying where this tensor's graph was cut."""
    desc = f"a {t.dtype.name} tensor of shape {list(t.shape)}"
    cut = getattr(t, "_cut", None)
    if cut is not None and cut != "detach":
        cut = cut.op_name or cut.__name__.lower()  # the Function class that ran under no_grad
    if cut == "detach":
        why = f"It is {desc} made by .detach() (or .data), which cuts the graph."
    elif cut:
        why = (f"It is {desc} computed by '{cut}' from tensors that require grad, but while grad mode was "
               "off (inside no_grad(), inference_mode() or set_grad_enabled(False)): the graph was cut there.")
    else:
        why = (f"It is {desc} that no recorded op produced: it was built from data (wb.tensor, from_numpy, a "
               ".numpy()/.item() round trip), from tensors none of which requires grad, or by ops run under "
               "no_grad() on such tensors.")
    return RuntimeError(
        f"element 0 of {what} does not require grad and does not have a grad_fn. {why} Set requires_grad=True "
        "on the leaves you differentiate with respect to, and compute the output from them with grad mode on."
    )


class BackwardRun:
    """One backward pass under way, as ``iter_backward`` returns it: iterating it runs the graph one node
    per BackwardStep (the walk ``backward()`` drains), and it answers what a debugger asks between steps.

    peek()         the node that runs next (None once the run is over)
    retain_graph   the freeing policy: when False, each node's saved tensors are freed as it runs (with
                   ``free_after_step``: once its step has been consumed, so the consumer can still read them)
    free(node)     free a node's saved tensors as a retain_graph=False run does, naming the backward call site
    close()        stop here; nodes not yet run keep their saved tensors

    >>> import workbench as wb
    >>> x = wb.ones(2, requires_grad=True)
    >>> run = wb.autograd.iter_backward([(x * 3).sum()], [wb.tensor(1.)])
    >>> run.peek().name(), next(run).node.name(), run.peek().name()
    ('SumBackward0', 'SumBackward0', 'MulBackward0')
    >>> [s.node.name() for s in run], run.peek()
    (['MulBackward0', 'AccumulateGrad'], None)
    """

    __slots__ = ("_gen", "_ready", "retain_graph", "_freed_by")

    def __iter__(self):
        return self._gen

    def __next__(self):
        return next(self._gen)

    def peek(self):
        """The node the run executes next, or None when nothing is left."""
        ready = self._ready
        return ready[0][2] if ready else None

    def free(self, node):
        """Free ``node``'s saved tensors: a later backward through it raises, naming this run's call site."""
        if node._saved is not None:
            free_saved(node, self._freed_by or graph.user_mark(2) or True)

    def close(self):
        """End the run where it stands (a generator's close)."""
        self._gen.close()


def iter_backward(roots, grad_roots, retain_graph=False, create_graph=False, inputs=None, accumulate=True,
                  captured=None, keep_before=False, free_after_step=False, _drain=False, _site_depth=1):
    """Walk the graph from ``roots`` backwards: a BackwardRun that yields a BackwardStep per node executed.

    With ``inputs``, only the nodes on paths to those tensors run; if ``accumulate`` is False their
    gradients go into ``captured`` (a list aligned with inputs) instead of ``.grad``. ``keep_before``
    keeps a copy of each leaf's ``.grad`` before accumulation in the step (for the debugger).
    ``free_after_step`` (with retain_graph=False) frees a node's saved tensors only when the run resumes
    after its step, so the consumer may read them (the recorder). ``_drain`` is for callers that never
    pause (backward(), grad()): the walk yields nothing, and the caller's grad mode is not restored
    between steps (no user code runs there). ``_site_depth``: how many frames up the search for the
    user's line (named if freed saved tensors are used again) may start. Bad roots and inputs raise here,
    before any node runs.

    >>> import workbench as wb
    >>> x = wb.ones(2, requires_grad=True)
    >>> steps = list(wb.autograd.iter_backward([(x * 3).sum()], [wb.tensor(1.)]))
    >>> len(steps), x.grad
    (3, tensor([3., 3.]))
    """
    buffers = {}  # node -> list of grads, one per output
    # gradients that others may hold (the caller's root gradients, what hooks and custom Functions
    # return): a leaf never steals their memory for its .grad
    shared_ids = set()
    starts = []
    for t, g in zip(roots, grad_roots):
        node, nr = gradient_edge(t)
        if node is None:
            raise no_grad_error(t)
        starts.append(node)
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * len(node._out_meta)
        shared_ids.add(id(g))
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    if len(starts) > 1:
        starts = list(dict.fromkeys(starts))
        walked = set(starts)
    else:
        walked = ()

    # dependency counts over the reachable graph (iterative, one pass): a node is walked when it gets
    # its first count; a start that another start reaches is counted but not walked twice
    deps = {}
    stack = starts[:]
    pop, push = stack.pop, stack.append
    while stack:
        for nxt, _ in pop().next_functions:
            if nxt is not None:
                if nxt in deps:
                    deps[nxt] += 1
                else:
                    deps[nxt] = 1
                    if nxt not in walked:
                        push(nxt)

    capture = needed = None
    if inputs is not None:
        capture = {}
        for k, t in enumerate(inputs):
            node, nr = t if t.__class__ is tuple else gradient_edge(t)  # a tensor, or an edge (node, nr)
            if node is None:
                raise RuntimeError(f"One of the differentiated Tensors (input {k}, shape {list(t.shape)}) does not "
                                   "require grad. Set requires_grad=True on it before computing the output.")
            capture.setdefault((node, nr), []).append(k)
        targets = {n for n, _ in capture}
        needed = _needed_nodes([*starts, *deps], targets)
        if accumulate:  # backward(inputs=...): the leaves among the inputs accumulate as usual
            needed.update(n for n in targets if n.__class__ is AccumulateGrad)

    ready = [(-n._seq, id(n), n) for n in starts if n not in deps]
    if len(ready) > 1:
        heapq.heapify(ready)
    run = BackwardRun()
    run._ready = ready
    run.retain_graph = retain_graph
    run._freed_by = None if retain_graph else (graph.user_mark(_site_depth) or True)
    run._gen = _steps(run, roots, buffers, deps, ready, shared_ids, capture, needed, captured, create_graph,
                      accumulate and inputs is None, accumulate, keep_before, free_after_step, _drain)
    return run


def _steps(run, roots, buffers, deps, ready, shared_ids, capture, needed, captured, create_graph, call_hooks,
           accumulate, keep_before, free_after_step, _drain):
    # the walk itself: iter_backward's generator (it runs the backward-hooks' begin/end around the walk)
    freed_by = None if free_after_step else run._freed_by
    late_free = run._freed_by if free_after_step else None
    hooks = graph.BACKWARD_HOOKS if call_hooks else None
    if hooks:
        for h in list(hooks):
            h("begin", roots)
    anomaly = graph.ANOMALY
    heappop, heappush, shared_add = heapq.heappop, heapq.heappush, shared_ids.add
    grad_mode = STATE.enabled
    STATE.enabled = create_graph  # backward formulas are recorded only for create_graph=True
    count_backward(1)  # ops run by backward formulas are not 'cuts' of the user's graph
    running = True
    index = 0
    local = _LOCAL
    outer = getattr(local, "run", None)
    local.run = run
    # a drained walk keeps the one node that just became ready out of the heap while the heap is empty (a
    # linear stretch of the graph: no push and pop per node); a paused walk keeps it in the heap (peek())
    nxt_up = None
    try:
        while nxt_up is not None or ready:
            if nxt_up is not None:
                node = nxt_up
                nxt_up = None
            else:
                node = heappop(ready)[2]
            grads = buffers.pop(node)
            hooked = node._hooked
            if hooked:
                grads = _run_tensor_pre_hooks(node, grads)
            if capture is not None:
                for nr, g in enumerate(grads):
                    ks = capture.get((node, nr))
                    if ks:
                        for k in ks:
                            captured[k] = g
                if node not in needed:
                    continue
            if node.__class__ is AccumulateGrad:
                if accumulate:
                    step = _accumulate(node, grads[0], shared_ids, create_graph, index, keep_before)
                    if _drain:
                        continue
                    STATE.enabled = grad_mode  # a consumer paused at a step (the debugger) runs user code
                    count_backward(-1)
                    running = False
                    yield step
                    local.run = run
                    STATE.enabled = create_graph
                    count_backward(1)
                    running = True
                    index += 1
                continue
            if hooked and node._pre_hooks is not None:
                for h in list(node._pre_hooks.values()):
                    r = h(tuple(grads))
                    if r is not None:
                        grads = list(r)
            if anomaly[0]:
                grad_inputs = _call_backward_anomaly(node, grads)
                if anomaly[1]:
                    _check_nan(node, grad_inputs)
            else:  # a call, not inlined: the compiler's trace hooks _call_backward
                grad_inputs = _call_backward(node, grads)
            if hooked and node._hooks is not None:
                for h in list(node._hooks.values()):
                    r = h(grad_inputs, tuple(grads))
                    if r is not None:
                        grad_inputs = tuple(r)
            if hooked or not node._fn._raw:  # hooks and users' backward may return tensors they keep
                for g in (*grads, *grad_inputs):
                    shared_add(id(g))
            if freed_by is not None and node._saved is not None:  # nodes that saved nothing stay reusable
                if node._saved_meta is None:
                    free_saved(node, freed_by)
                else:  # free_saved, inlined for what primitives record (their facts are kept already)
                    node._saved = None
                    node._freed = freed_by
            for (nxt, nr), g in zip(node.next_functions, grad_inputs):
                if nxt is None:
                    continue
                if g is not None:
                    shape, dt = nxt._out_meta[nr]
                    d = g._data
                    if d.shape != shape or d.dtype is not dt and d.dtype != dt:
                        g = _conform(node, nxt, nr, g, shape, dt)
                    buf = buffers.get(nxt)
                    if buf is None:
                        buf = buffers[nxt] = [None] * len(nxt._out_meta)
                    if buf[nr] is None:
                        buf[nr] = g
                    elif create_graph:
                        buf[nr] = buf[nr] + g
                    else:  # nothing records this sum: add the arrays (shape and dtype conformed above)
                        buf[nr] = _add_grads(nxt.xp, buf[nr], g)
                d = deps[nxt] - 1
                deps[nxt] = d
                if d == 0:
                    if nxt in buffers:
                        if _drain and nxt_up is None and not ready:
                            nxt_up = nxt
                        else:
                            heappush(ready, (-nxt._seq, id(nxt), nxt))
                    else:
                        _skip_subgraph(nxt, deps, buffers, ready)
            if _drain:  # nobody pauses between steps: the walk runs to the end in one resume
                if nxt_up is not None and ready:  # more than one ready: the heap orders them
                    heappush(ready, (-nxt_up._seq, id(nxt_up), nxt_up))
                    nxt_up = None
                continue
            STATE.enabled = grad_mode
            count_backward(-1)
            running = False
            yield _step(BackwardStep, (node, tuple(grads), grad_inputs, (), index))
            local.run = run
            if late_free is not None and node._saved is not None:
                free_saved(node, late_free)
            STATE.enabled = create_graph
            count_backward(1)
            running = True
            index += 1
    finally:
        local.run = outer
        STATE.enabled = grad_mode
        if running:
            count_backward(-1)
    if hooks:
        for h in list(hooks):
            h("end", roots)


def _add_grads(xp, a, b):
    # two gradient contributions for one output, summed on the arrays (a function of its own: the
    # compiler's trace records it)
    return _make(_call2(xp.add, a._data, b._data))  # in a frame: see _pyframe


def _skip_subgraph(node, deps, buffers, ready):
    # a node no gradient reached: its inputs lose one dependency each, and may become ready
    stack = [node]
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if nxt is None:
                continue
            d = deps[nxt] - 1
            deps[nxt] = d
            if d == 0:
                if nxt in buffers:
                    heapq.heappush(ready, (-nxt._seq, id(nxt), nxt))
                else:
                    stack.append(nxt)


def _needed_nodes(visited, targets):
    # nodes from which some target is reachable through at least one edge (computed on the reversed
    # edges): a target itself runs only if another target lies beyond it, as in PyTorch, so
    # grad(y, h) leaves h.grad_fn and its saved tensors alone
    parents = {}
    for n in visited:
        for nxt, _ in n.next_functions:
            if nxt is not None:
                parents.setdefault(nxt, []).append(n)
    needed = set()
    stack = list(targets)
    while stack:
        for p in parents.get(stack.pop(), ()):
            if p not in needed:
                needed.add(p)
                stack.append(p)
    return needed


def _materialize(node, grads):
    out = list(grads)
    for i, g in enumerate(out):
        if g is None:
            meta = node._out_meta[i]
            if meta is not None:
                out[i] = _make(node.xp.zeros(meta[0], meta[1]))
    return out


def _call_backward(node, grads):
    if len(grads) == 1:
        if grads[0] is None and node._materialize:
            grads = _materialize(node, grads)
    elif node._materialize:
        for g in grads:
            if g is None:
                grads = _materialize(node, grads)
                break
    res = node._fn.backward(node, *grads)
    if res.__class__ is not tuple:
        res = (res,)
    pos = node._tensor_pos
    n = len(res)
    if n == len(pos) == len(node.needs_input_grad):  # every forward argument was a tensor
        return res
    if n == len(node.needs_input_grad) and node._fn._raw:  # one per argument: keep the tensors'
        return tuple([res[i] for i in pos])
    return _select_tensor_grads(node, res, pos)


def _select_tensor_grads(node, res, pos):
    # backward returns one entry per forward argument; keep those of tensor arguments
    n_args = len(node.needs_input_grad)
    if len(res) > n_args and all(r is None for r in res[n_args:]):
        res = res[:n_args]
    if len(res) == n_args:
        if not node._fn._raw:
            for i, r in enumerate(res):
                if r is not None and i not in pos:
                    raise RuntimeError(
                        f"function {node.name()} returned a gradient different than None at position {i + 1}, but "
                        "the corresponding forward input was not a Tensor. Return None for non-tensor inputs.")
        return tuple([res[i] for i in pos])
    if node._fn._raw and len(res) == len(pos):
        return res
    raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients (expected {n_args}, "
                       f"got {len(res)}). backward must return one gradient (or None) per forward input.")


def _call_backward_anomaly(node, grads):
    try:
        return _call_backward(node, grads)
    except Exception:
        if node._stack:
            warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                          f"{node._stack}", UserWarning, stacklevel=3)
        raise


def _conform(node, nxt, nr, g, shape, dt):
    # the gradient for an input must match that input's shape and dtype: sum over broadcast dims
    # (as PyTorch's validate_outputs does) and cast, or fail naming the node
    if not isinstance(g, Tensor):
        raise TypeError(f"function {node.name()} returned a {type(g).__name__} as a gradient; expected a Tensor "
                        "or None")
    if g._data.shape != shape:
        if _expandable(shape, g._data.shape):
            # the op, recorded, for create_graph; else the sum on the array (a bias's gradient, summed over
            # the batch: sum_to_size's apply cost 3x the sum)
            g = g.sum_to_size(shape) if STATE.enabled else _sum_to(g, shape)
        else:
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {nr} - got {list(g._data.shape)} "
                f"but expected shape compatible with {list(shape)}"
            )
    if g._data.dtype != dt:
        if g._data.dtype.kind == "c" and dt.kind != "c":  # a real input takes the real part, silently (PyTorch)
            g = g.real
        g = g.to(_backend.dtypes.from_numpy_dtype(dt))
    return g


def _sum_to(g, shape):
    # a broadcast operand's gradient summed back to its shape, on the array (a function of its own: the
    # compiler's trace records it)
    return _make(sum_to(g._data, shape))


def _expandable(shape, target):
    if len(shape) > len(target):
        return False
    for a, b in zip(reversed(shape), reversed(target)):
        if a != b and a != 1:
            return False
    return True


def _run_tensor_pre_hooks(node, grads):
    grads = list(grads)
    if node._tensor_pre_hooks is not None:
        for (nr, h) in list(node._tensor_pre_hooks.values()):
            g = grads[nr]
            if g is not None:
                r = h(g)
                if r is not None:
                    if not isinstance(r, Tensor) or r.shape != g.shape:
                        raise RuntimeError(
                            f"hook '{getattr(h, '__name__', h)}' registered on a tensor (gradient of "
                            f"{node.name()}) has changed the gradient from shape {list(g.shape)} to "
                            f"{list(r.shape) if isinstance(r, Tensor) else type(r).__name__}; a tensor hook "
                            "must return None or a tensor of the gradient's shape")
                    grads[nr] = r
    if node._retain is not None:
        for nr, ref in list(node._retain.items()):
            t = ref()
            if t is not None and grads[nr] is not None:
                g = grads[nr]
                if t._grad is None:
                    t._grad = g.clone() if STATE.enabled else g.detach().clone()
                else:
                    t._grad = t._grad + g
    return grads


def _refs(t):
    return sys.getrefcount(t._data)


def _alone_count():
    # what _refs reads for an array that its tensor alone holds (calibrated, not assumed: the count
    # includes the interpreter's own temporaries, which differ between Python versions)
    probe = type("_Probe", (), {})()
    probe._data = bytearray(1)
    return _refs(probe)


_ALONE = _alone_count()


def _sole_view(d):
    """Whether d is a reshape of a whole NumPy array that only d refers to (a kernel's 2-D result reshaped
    to the input's shape): stealing d then hides no memory anyone else sees. The count 3: the view's
    reference to its base, the name b and getrefcount's argument."""
    b = d.base
    return type(b) is _ndarray and b.base is None and b.nbytes == d.nbytes and sys.getrefcount(b) <= 3


def _copy(xp, d):
    return xp.array(d, copy=True, order="C")


def _accumulate(node, g, shared_ids, create_graph, index, keep_before):
    t = node._variable_ref()
    if t is None or g is None:
        return BackwardStep(node, (g,), (), (), index)
    if node._pre_hooks is not None:
        for h in list(node._pre_hooks.values()):
            r = h((g,))
            if r is not None:
                g = r[0]
    before = t._grad
    if create_graph and g._rg:
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between the parameter and its "
            "gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to "
            "avoid this. If you have to use this function, make sure to reset the .grad fields of your parameters "
            "to None after use to break the cycle and avoid the leak.", UserWarning, stacklevel=2)
    if before is None:
        if create_graph:
            new = g
        else:
            # steal the gradient's memory only if nothing else can see it (PyTorch's use-count rule): no
            # other tensor or array holds the array, nobody outside the engine was handed the tensor (the
            # caller, a hook, a custom Function) and it is a whole contiguous array, not a view
            alone = _refs(g) <= _ALONE and id(g) not in shared_ids and not node._hooked
            d = g._data
            if not alone or (d.base is not None and not _sole_view(d)) or not d.flags.c_contiguous:
                new = _make(_copy(node.xp, d))
            else:  # the engine's own array becomes .grad (a tensor of its own, not a view of g)
                new = _make(d)
        t._grad = new
    elif create_graph or before._rg:
        t._grad = before + g
    else:
        if keep_before:  # the debugger shows .grad before and after: keep a copy of before
            before = _make(node.xp.array(before._data, copy=True))
        _iadd_cast(t._grad._data, g._data)
        t._grad._vbox[0] += 1
    if t._post_acc_hooks is not None:
        for h in list(t._post_acc_hooks.values()):
            h(t)
    if node._hooks is not None:
        for h in list(node._hooks.values()):
            h((), (g,))
    return _step(BackwardStep, (node, (g,), (), ((t, before, t._grad),), index))


def _check_nan(node, grad_inputs):
    for i, g in enumerate(grad_inputs):
        if g is not None and g.dtype.category >= 2 and bool(node.xp.isnan(g._data).any()):
            site = graph.format_site(node.site) if node.site else "an unknown line"
            raise RuntimeError(
                f"Function '{node.name()}' returned nan values in its {i}th output. The node was created in the "
                f"forward pass at {site}" + (f" in module '{node.scope}'" if node.scope else "")
                + (".\nTraceback of the forward call that created it:\n" + node._stack if node._stack else ".")
            )


def run_backward(roots, grad_roots, retain_graph, create_graph, inputs=None, accumulate=True, captured=None):
    """Drain iter_backward: what ``Tensor.backward`` and ``autograd.grad`` do."""
    # the user's line is at least four frames up (iter_backward, this, backward()/grad() or checkpoint, their
    # caller): the walk for it starts there, not materializing the frames in between
    for _ in iter_backward(roots, grad_roots, retain_graph, create_graph, inputs, accumulate, captured,
                           _drain=True, _site_depth=4)._gen:
        pass  # a drained walk yields nothing: the loop ends when the walk does
