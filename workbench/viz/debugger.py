"""The backward debugger: the engine's generator, advanced one node at a time.

``Stepper`` owns one ``iter_backward(..., keep_before=True)`` generator (the same one ``backward()``
drains) and turns each ``BackwardStep`` into a tape.v1 step record. ``debug()`` wraps it in the
anywidget "debugger" view (extensions/PROTOCOL.md, section 3). ``run_trace`` drains a generator the
same way for ``snapshot(trace=True)``.
"""
from ..autograd import engine, graph
from ..autograd.graph import AccumulateGrad
from . import classroom
from .summary import summarize


# --- conditions --------------------------------------------------------------------------------
def on_nan(step):
    """Breakpoint condition: a gradient of this step (sent to inputs, or a leaf's .grad) holds NaN or Inf.

    >>> import workbench as wb
    >>> dbg = wb.viz.debug(loss, breakpoints=[wb.viz.on_nan])   # doctest: +SKIP
    """
    return step.nonfinite() is not None


def grad_norm_above(bound):
    """Breakpoint condition factory: some gradient of the step has an L2 norm above ``bound``.

    >>> import workbench as wb
    >>> cond = wb.viz.grad_norm_above(1e3)
    >>> cond.__name__
    'grad_norm_above(1000.0)'
    """
    bound = float(bound)

    def cond(step):
        for g in step.grad_inputs + tuple(after for _, _, after in step.leaves):
            if g is not None and g.dtype.is_floating_point:
                n = float(g.detach().norm())
                if n > bound or n != n:
                    return True
        return False

    cond.__name__ = f"grad_norm_above({bound})"
    return cond


class Step:
    """``dbg.current``: one executed backward step, with workbench tensors.

    node: the backward Node; grad_output / grad_outputs: what arrived; grad_inputs: what it sent to
    each input (aligned with ``node.next_functions``); leaves: [(tensor, grad_before, grad_after)];
    record: the tape.v1 step record (summaries) the viewer shows.
    """

    def __init__(self, bstep, record, node_id):
        self.node = bstep.node
        self.grad_outputs = tuple(bstep.grad_outputs)
        self.grad_inputs = tuple(bstep.grad_inputs)
        self.leaves = tuple(bstep.leaves)
        self.index = bstep.index
        self.record = record
        self.node_id = node_id

    @property
    def grad_output(self):
        """The gradient that arrived for the node's (first) output."""
        return self.grad_outputs[0] if self.grad_outputs else None

    def nonfinite(self):
        """'NaN in grad_inputs[0] (sent to n3)'-style text when the step produced NaN/Inf, else None."""
        rec = self.record
        for gi in rec["grad_inputs"]:
            g = gi["grad"]
            if g is not None and (g["nan"] or g["inf"]):
                what = "NaN" if g["nan"] else "Inf"
                return f"{what} in grad_inputs[{gi['index']}] (sent to {gi['target']})"
        for leaf in rec["leaves"]:
            a = leaf["after"]
            if a["nan"] or a["inf"]:
                return f"{'NaN' if a['nan'] else 'Inf'} in the .grad of {leaf['node']}"
        return None

    def __repr__(self):
        return f"<Step {self.index}: {self.node.name()} ({self.node_id})>"


# --- records -----------------------------------------------------------------------------------
def _label(snap_nodes, nid, labels=None):
    n = snap_nodes.get(nid)
    if n is None:
        return str(nid)
    if n["kind"] in ("leaf", "param", "input", "cut"):
        return n.get("param") or n["name"]
    return (labels or {}).get(nid) or n["op"] or nid


def make_record(bstep, ids, snap_nodes, classroom_text=True, labels=None):
    """The tape.v1 step record of an engine ``BackwardStep`` (summaries computed on the device)."""
    node = bstep.node
    nid = ids[node]
    rec = {"index": bstep.index, "node": nid,
           "grad_outputs": [summarize(g) for g in bstep.grad_outputs],
           "grad_inputs": [], "leaves": [], "derivation": None, "breakpoint": None}
    tpos = getattr(node, "_tensor_pos", ())
    names = labels
    labels = []
    for k, ((nxt, _), g) in enumerate(zip(node.next_functions, bstep.grad_inputs)):
        labels.append(_label(snap_nodes, ids.get(nxt), names) if nxt is not None else f"input{k}")
        if nxt is None or nxt not in ids:
            continue
        rec["grad_inputs"].append({"target": ids[nxt], "index": int(tpos[k]) if k < len(tpos) else k,
                                   "grad": summarize(g)})
    for t, before, after in bstep.leaves:
        rec["leaves"].append({"node": nid, "before": summarize(before), "after": summarize(after)})
    if classroom_text:
        if type(node) is AccumulateGrad:
            labels = [_label(snap_nodes, nid)]
        rec["derivation"] = classroom.derivation(node, bstep.grad_outputs, bstep.grad_inputs, labels,
                                                 _label(snap_nodes, nid, names) if type(node) is not AccumulateGrad else "out")
    return rec


def _flag_first_nonfinite(rec, step_obj, seen_bad):
    # the recorder flags the first step where NaN/Inf appears, so `continue` stops there by itself
    reason = step_obj.nonfinite()
    if reason is None:
        return False
    incoming = any(g is not None and (g["nan"] or g["inf"]) for g in rec["grad_outputs"])
    if not incoming and not seen_bad:
        site = step_obj.node.site
        where = f"; forward: {graph.format_site(site)}" if site else \
            "; record the forward pass under `with wb.viz.trace():` to see its source line"
        rec["breakpoint"] = {"reason": f"{reason} by {step_obj.node.name()}{where}"}
    return True


def _default_grads(roots, gradient):
    from ..autograd import _make_grads

    grads = None if gradient is None else ([gradient] if len(roots) == 1 else list(gradient))
    return _make_grads(roots, grads, False)


def run_trace(roots, builder, gradient=None, retain_graph=False):
    """Run the backward pass through ``iter_backward`` and return the tape.v1 step records."""
    for r in roots:
        if not r._rg:
            raise engine.no_grad_error(r, "tensors")
    grads = _default_grads(roots, gradient)
    nodes = {n["id"]: n for n in builder.nodes}
    steps = []
    bad = False
    for bstep in engine.iter_backward(roots, grads, retain_graph=True, keep_before=True):
        rec = make_record(bstep, builder.ids, nodes, True, builder.labels)
        bad = _flag_first_nonfinite(rec, Step(bstep, rec, rec["node"]), bad) or bad
        steps.append(rec)
        if not retain_graph and type(bstep.node) is not AccumulateGrad and bstep.node._saved is not None:
            _free(bstep.node)
    return steps


def _free(node):
    # what iter_backward does itself with retain_graph=False; done here after the step's text was made
    node._saved = None
    node._freed = graph.user_site(2) or True


# --- the stepper -------------------------------------------------------------------------------
class Stepper:
    """Steps a backward pass node by node; the kernel side of the debugger, usable without a browser.

    >>> import workbench as wb
    >>> a = wb.tensor(2.0, requires_grad=True); b = wb.tensor(-3.0, requires_grad=True)
    >>> st = Stepper(a * b)
    >>> st.step().node.name(), st.position, st.total
    ('MulBackward0', 1, 3)
    >>> len(st.run_to_end()), a.grad
    (3, tensor(-3.))
    """

    def __init__(self, roots, model=None, breakpoints=(), gradient=None, names=None, nan_break=True, classroom=True):
        from .snapshot import _as_roots, build

        self.roots = _as_roots(roots)
        for r in self.roots:
            if not r._rg:
                raise engine.no_grad_error(r, "tensors")
        self.snapshot, self.builder = build(self.roots, model, names, values=True, grads=False)
        for n in self.builder.main:  # a backward already ran without retain_graph: say so now, not mid-way
            if n._saved is None and n._freed:
                n._raise_freed()
        self.ids = self.builder.ids
        self.by_id = {v: k for k, v in self.ids.items()}
        self.nodes = {n["id"]: n for n in self.snapshot["nodes"]}
        self.scopes = self.builder.scopes
        self.grads = _default_grads(self.roots, gradient)
        self.classroom = classroom
        self.nan_break = nan_break
        self.node_breaks = set()
        self.conditions = []
        for b in breakpoints:
            self.add_breakpoint(b)
        leaves = [n.variable for n in self.ids if type(n) is AccumulateGrad and n.variable is not None]
        # restart puts every .grad back as it was before the session (accumulation is in place: copy)
        self._before = [(t, None if t._grad is None else t._grad.detach().clone()) for t in leaves]
        # steps this backward executes: every node reachable (an unreached branch ends the run early)
        self.total = len(self.builder.main)
        self._start()

    def _start(self):
        self._gen = engine.iter_backward(self.roots, self.grads, retain_graph=True, keep_before=True)
        self.position = 0
        self.records = []
        self.current = None
        self.paused_reason = None
        self.done = False
        self._bad = False
        self._broken = None

    # --- breakpoints ---------------------------------------------------------------------------
    def add_breakpoint(self, b):
        """A node id ("n3"), a backward Node, a Tensor (its grad_fn), or a condition ``cond(step) -> bool``."""
        from ..tensor import Tensor

        if isinstance(b, str):
            if b not in self.by_id:
                raise KeyError(f"no node {b!r} in this graph (ids are n0..n{len(self.by_id) - 1})")
            self.node_breaks.add(b)
        elif isinstance(b, Tensor):
            node = b.grad_fn if b.grad_fn is not None else (b._acc if b._acc is not None else None)
            if node is None or node not in self.ids:
                raise ValueError("breakpoint tensor is not part of the debugged graph")
            self.node_breaks.add(self.ids[node])
        elif isinstance(b, graph.Node):
            if b not in self.ids:
                raise ValueError(f"breakpoint node {b.name()} is not part of the debugged graph")
            self.node_breaks.add(self.ids[b])
        elif callable(b):
            self.conditions.append(b)
        else:
            raise TypeError(f"a breakpoint is a node id, a Node, a Tensor or a callable cond(step), got "
                            f"{type(b).__name__}")

    def set_breakpoint(self, node_id, enabled=True):
        if enabled:
            self.add_breakpoint(node_id)
        else:
            self.node_breaks.discard(node_id)

    # --- running -------------------------------------------------------------------------------
    def step(self):
        """Run one engine step; returns the new current ``Step`` (None at the end)."""
        if self._broken:
            raise RuntimeError(self._broken)
        if self.done:
            self.paused_reason = "end"
            return None
        try:
            bstep = next(self._gen)
        except StopIteration:
            self.done = True
            self.total = self.position
            self.paused_reason = "end"
            return None
        except BaseException as e:  # an error (or an interrupt) inside backward ends this run
            self._broken = (f"the backward pass stopped at step {self.position + 1}: {type(e).__name__}: {e}. "
                            "Restart to run it again.")
            self.done = True
            raise
        rec = make_record(bstep, self.ids, self.nodes, self.classroom, self.builder.labels)
        cur = Step(bstep, rec, rec["node"])
        self._bad = _flag_first_nonfinite(rec, cur, self._bad) or self._bad
        self.records.append(rec)
        self.current = cur
        self.position += 1
        self.paused_reason = None
        if self.position >= self.total:
            self._peek_end()
        return cur

    def _peek_end(self):
        # the counted total is reached: let the generator finish (runs the engine's epilogue)
        try:
            next(self._gen)
        except StopIteration:
            self.done = True
            self.paused_reason = "end"
            return
        raise RuntimeError("the debugged graph changed while stepping (more steps than nodes)")

    def _stop_reason(self, cur):
        rec = cur.record
        if rec["breakpoint"] and self.nan_break:
            return rec["breakpoint"]["reason"]
        if rec["node"] in self.node_breaks:
            return "breakpoint"
        for cond in self.conditions:
            if cond(cur):
                return f"condition {getattr(cond, '__name__', 'cond')} is true"
        return None

    def _run(self, keep_going):
        start = self.position
        while not self.done:
            cur = self.step()
            if cur is None:
                break
            reason = self._stop_reason(cur)
            if reason:
                self.paused_reason = reason
                break
            if not keep_going(cur):
                break
        if self.done and self.paused_reason is None:
            self.paused_reason = "end"
        return self.records[start:]

    def continue_(self):
        """Run to the next breakpoint (node, NaN/Inf, condition) or the end; returns the records run."""
        return self._run(lambda cur: True)

    def run_to_end(self):
        """Run every remaining step, ignoring breakpoints."""
        while self.step() is not None:
            pass
        return self.records

    def step_over(self):
        """Run the next step and every following one in the current module's scope (PROTOCOL.md).

        The scope is the current node's; at top level it is the next node's, so a whole module is
        stepped over from outside; both top level: one step.
        """
        scope = self.scopes.get(self.current.node_id, "") if self.current else ""
        if not scope:
            nxt = self.peek()
            scope = self.scopes.get(self.ids.get(nxt), "") if nxt is not None else ""
        if not scope:
            return self._run(lambda cur: False)

        def inside(cur):
            nxt = self.peek()
            s = self.scopes.get(self.ids.get(nxt), "") if nxt is not None else ""
            return s == scope or s.startswith(scope + ".")

        return self._run(inside)

    def peek(self):
        """The node the engine runs next (read from the suspended generator's ready queue), or None."""
        import inspect

        if inspect.getgeneratorstate(self._gen) == inspect.GEN_CREATED:  # not started: the newest root
            from .snapshot import _start

            starts = [n for n in (_start(r) for r in self.roots) if n is not None]
            return max(starts, key=lambda n: n._seq) if starts else None
        frame = self._gen.gi_frame
        if frame is None:
            return None
        ready = frame.f_locals.get("ready")
        return ready[0][2] if ready else None

    def restart(self):
        """Back to before the first step: .grad restored, the graph (retained) run again from the start."""
        if self._broken and "closed" in self._broken:
            raise RuntimeError(self._broken)
        self._gen.close()
        for t, g in self._before:
            t._grad = None if g is None else g.clone()
        self.total = len(self.builder.main)
        self._start()

    def close(self):
        """End the session: the generator is closed and the graph's saved tensors are freed."""
        self._gen.close()
        for n in self.builder.main:
            if type(n) is not AccumulateGrad and n._saved is not None:
                _free(n)
        self.done = True
        self._broken = "this debugger session was closed (dbg.close()); start another with wb.viz.debug(...)"


def debug(roots, model=None, breakpoints=(), classroom=False, *, gradient=None, names=None, nan_break=True,
          height=0, display=True):
    """Step through the backward pass of ``roots`` in the notebook, node by node.

    Returns the widget; ``dbg.current`` is the step shown (``node``, ``grad_output``, ``grad_inputs``,
    ``leaves`` as workbench tensors); ``dbg.step()``, ``dbg.step_over()``, ``dbg.continue_()`` and
    ``dbg.restart()`` drive it from Python too. Breakpoints: node ids, tensors, or conditions such as
    ``wb.viz.on_nan`` and ``wb.viz.grad_norm_above(1e3)``; NaN/Inf stop ``continue`` by default.
    Build the model and loss under ``with wb.viz.trace():`` so a NaN points at its forward line.
    After the last step every ``.grad`` equals what ``loss.backward()`` gives.

    >>> import workbench as wb
    >>> a = wb.tensor(2.0, requires_grad=True)
    >>> dbg = wb.viz.debug((a * a).sum(), display=False)
    >>> dbg.step().node.name()
    'SumBackward0'
    """
    from .widgets import DebuggerWidget

    st = Stepper(roots, model, breakpoints, gradient, names, nan_break, classroom)
    w = DebuggerWidget(st, height=height)
    if display:
        w.show()
    return w
