"""The backward stepper: the engine's generator, advanced one node at a time, with breakpoints.

``Stepper`` owns one ``iter_backward(..., keep_before=True)`` run (the same generator ``backward()``
drains) and turns each ``BackwardStep`` into a tape.v1 step record through the backward recorder
(``replay.py``). It needs no browser: the debugger widget (``widgets.DebuggerWidget``) drives it
with the messages of extensions/PROTOCOL.md, section 3.
"""

from ..autograd import engine, graph
from ..autograd.graph import AccumulateGrad
from ..tensor import Tensor
from .replay import default_grads, fill_grads, flag_first_nonfinite, make_record, nonfinite, record_backward
from .recorder import site_text
from .snapshot import as_roots, build


# --- conditions --------------------------------------------------------------------------------
def on_nan(step):
    """Breakpoint condition: a gradient of this step (sent to inputs, or a leaf's .grad) holds NaN or Inf.

    >>> import workbench as wb
    >>> x = wb.tensor([0.0], requires_grad=True); loss = (x.sqrt() * 0).sum()   # d sqrt/dx at 0 is inf
    >>> dbg = wb.viz.debug(loss, breakpoints=[wb.viz.on_nan], display=False)
    >>> type(dbg).__name__
    'DebuggerWidget'
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
        return nonfinite(self.record)

    def __repr__(self):
        return f"<Step {self.index}: {self.node.name()} ({self.node_id})>"


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
        self.roots = as_roots(roots)
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
        self.grads = default_grads(self.roots, gradient)
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
        self.replay = self._record_replay(gradient)
        self._start()

    def _record_replay(self, gradient):
        # the whole backward once, recorded and then undone: what a saved notebook replays with no
        # kernel (the debugger's output carries it), and what the session knows before the first step
        try:
            return record_backward(self.roots, self.builder, gradient, retain_graph=True)
        except Exception:  # the same error meets the user when the live stepping reaches it
            return None
        finally:
            self._restore_grads()

    def _restore_grads(self):
        for t, g in self._before:
            t._grad = None if g is None else g.clone()

    def replay_snapshot(self):
        """The tape.v1 dict with the recorded replay as its trace (None steps: the backward failed)."""
        snap = dict(self.snapshot, nodes=[dict(n) for n in self.snapshot["nodes"]],
                    trace={"steps": self.replay, "classroom": self.classroom} if self.replay is not None else None)
        if self.replay is not None:
            fill_grads(snap)
        return snap

    def _start(self):
        self._backward = engine.iter_backward(self.roots, self.grads, retain_graph=True, keep_before=True)
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
            bstep = next(self._backward)
        except StopIteration:
            self.done = True
            self.total = self.position
            self.paused_reason = "end"
            return None
        except BaseException as e:  # an error (or an interrupt) inside backward ends this run
            self.done = True
            changed = self.changed_since_forward() if isinstance(e, RuntimeError) else None
            if changed is not None:  # restarting cannot help: say what changed, not the in-place hint
                self._broken = changed
                raise RuntimeError(changed) from None
            self._broken = (f"the backward pass stopped at step {self.position + 1}: {type(e).__name__}: {e}. "
                            "Restart to run it again.")
            raise
        rec = make_record(bstep, self.ids, self.nodes, True, self.builder.labels)
        cur = Step(bstep, rec, rec["node"])
        self._bad = flag_first_nonfinite(rec, bstep.node, self._bad, self.nodes) or self._bad
        self.records.append(rec)
        self.current = cur
        self.position += 1
        self.paused_reason = None
        if self.position >= self.total:
            self._peek_end()
        return cur

    def changed_since_forward(self):
        """Why the debugged graph can no longer run, when code after the forward pass changed a tensor
        it saved in place (``optimizer.step()`` updating the weights), else None.

        >>> import workbench as wb
        >>> w = wb.tensor([1.0, 2.0], requires_grad=True)
        >>> st = Stepper((w * w).sum())
        >>> with wb.no_grad():
        ...     _ = w.add_(1.0)
        >>> print(st.changed_since_forward())  # doctest: +ELLIPSIS
        The graph being debugged was changed by code run after its forward pass: w, which MulBackward0 saved ...
        """
        for n in self.builder.main:
            for entry in n._saved or ():
                if type(entry) is not tuple:
                    continue
                t, box, version = entry
                if box is None or box[0] == version:
                    continue
                # the leaf whose storage it is (a view like w.t() shares the leaf's version box)
                leaf = next((a.variable for a in self.ids if type(a) is AccumulateGrad and a.variable is not None
                             and a.variable._vbox is box), t)
                path = self.builder.params.get(id(leaf))
                name = path or self.builder.names.get(id(leaf))
                what = f"{'parameter ' if path else ''}{name}" if name else "a tensor"
                by = ""
                if box[1]:
                    op, _scope, site = box[1]
                    by = f" by {op} at {site_text(site)}"
                # an optimizer's update runs under no_grad, where no op is recorded: name the usual cause
                hint = "" if by or leaf.grad_fn is not None else " (optimizer.step() updates parameters in place)"
                return (f"The graph being debugged was changed by code run after its forward pass: {what}, which "
                        f"{n.name()} saved for backward, was modified in place{by}{hint}. This backward pass cannot "
                        "run any more; compute the loss again and call wb.viz.debug(loss) on the new one.")
        return None

    def _peek_end(self):
        # the counted total is reached: let the generator finish (runs the engine's epilogue)
        try:
            next(self._backward)
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
        """The node the engine runs next (the run's own answer), or None."""
        return self._backward.peek()

    def restart(self):
        """Back to before the first step: .grad restored, the graph (retained) run again from the start."""
        if self._broken and "closed" in self._broken:
            raise RuntimeError(self._broken)
        changed = self.changed_since_forward()
        if changed is not None:
            self._broken = changed
            raise RuntimeError(changed)
        self._backward.close()
        self._restore_grads()
        self.total = len(self.builder.main)
        self._start()

    def close(self):
        """End the session: the generator is closed and the graph's saved tensors are freed."""
        self._backward.close()
        for n in self.builder.main:
            self._backward.free(n)
        self.done = True
        self._broken = "this debugger session was closed (dbg.close()); start another with wb.viz.debug(...)"
