"""The tape over time: a watched run's graph structure once, and per kept step one norm per node.

``TapeSeries`` is driven by the gradient-statistics collector (``GradStats(model, snapshots_every=N)``
and ``stats.snapshot()``), which tells it where a training step's backward pass begins and ends
(``graph.BACKWARD_HOOKS``). At the beginning the graph is still whole, so it is read then, with no
second forward pass: the structure (``snapshot.build`` without summaries), each node's value norm
(the output the graph saved for backward, a parameter's data), and a pre-hook on every op node that
takes the norm of the gradient arriving there while the real backward runs. At the end it reads the
leaves' ``.grad`` and removes the hooks. Only numbers are kept: no tensor, array or node outlives its
step, so the graph is freed as usual.

The first kept step's structure is the series' structure; a later step is mapped onto it with
``align.match`` (the rule ``wb.viz.compare`` aligns by). A node missing at a step is null there, and
a step whose graph differs says so in a note instead of dropping anything silently.
"""
import math

from ..autograd.graph import AccumulateGrad, Node
from .align import match
from .snapshot import as_roots, build
from .summary import device_stats, sig4

MEASURES = ("grad_norm", "value_norm")


def _norm(arr):
    """(L2 norm of the finite elements, NaN count, Inf count) of an array, on its device.

    The common case is one dot product and one number to the host; only a tensor with a non-finite
    (or overflowing) square sum pays for the full count.
    """
    if arr.dtype.kind == "f" and arr.dtype.itemsize >= 4:
        r = arr.reshape(-1)
        sq = float(r.dot(r))
        if math.isfinite(sq):
            return (math.sqrt(sq), 0, 0)
    h = device_stats(arr, bins=1)[:8].tolist()
    return (h[7], int(h[0]), int(h[1]))


def _json(m):
    # a series value: the norm over every element, so a NaN element makes it "NaN" (as the monitor's ‖grad‖)
    if m is None:
        return None
    norm, nan, inf = m
    return "NaN" if nan else "Infinity" if inf else sig4(norm)


def norm_summary(node, m):
    """A tape.v1 summary that knows only the norm and the NaN/Inf counts (what a series keeps per step)."""
    if m is None:
        return None
    norm, nan, inf = m
    numel = math.prod(node["shape"])
    return {"shape": list(node["shape"]), "dtype": node["dtype"], "numel": numel, "min": None, "max": None,
            "mean": None, "std": None, "norm": sig4(norm) if nan + inf < numel else None, "nan": nan, "inf": inf,
            "hist": None, "values": None}


class _Capture:
    """One kept step while its backward pass runs: the structure, value norms, and the gradient hooks."""

    def __init__(self, step, roots, model):
        self.step = step
        snap, b = build(as_roots(roots), model, values=False, grads=False, frames=False)
        snap["title"] = type(model).__name__  # the steps follow it: "Sequential · steps 0–90 (10 kept)"
        self.snap = snap
        ids = b.ids
        pos = {n["id"]: j for j, n in enumerate(snap["nodes"])}
        self.value = [None] * len(pos)
        self.grad = [None] * len(pos)
        self.handles = []
        self.leaves = []  # (position, AccumulateGrad) whose .grad is read at the end
        for obj, nid in ids.items():
            j = pos[nid]
            arr = b.value_of(obj)
            if arr is not None and arr.size:
                self.value[j] = _norm(arr)
            if type(obj) is AccumulateGrad:
                self.leaves.append((j, obj))
            elif isinstance(obj, Node):
                self.handles.append(obj.register_prehook(self._hook(j)))

    def _hook(self, j):
        grad = self.grad

        def take(grads):  # the gradient arriving at output 0 (what a snapshot shows as the node's grad)
            g = grads[0] if grads else None
            if g is not None:
                grad[j] = _norm(g._data)

        return take

    def finish(self):
        for j, acc in self.leaves:
            t = acc.variable
            if t is not None and t._grad is not None:
                self.grad[j] = _norm(t._grad._data)
        self.close()

    def close(self):
        for h in self.handles:
            h.remove()
        self.handles = []
        self.leaves = []


class TapeSeries:
    """The kept steps of a watched run: structure once, ``grad_norm`` and ``value_norm`` per node per step.

    ``every``: keep steps 0, every, 2*every... (None: only the steps ``arm()`` asks for). ``to_dict()``
    is the tape.v1 snapshot with ``series`` (the nodes' ``grad`` summaries are the last step's norms),
    ``step_dict(i)`` the one of the i-th kept step (``value`` and ``grad`` norms).

    >>> import workbench as wb
    >>> model = wb.nn.Linear(3, 1)
    >>> stats = wb.viz.GradStats(model, snapshots_every=2)
    >>> for _ in range(5):
    ...     model.zero_grad(); model(wb.ones(2, 3)).sum().backward()
    >>> stats.detach(); stats.series.steps
    [0, 2, 4]
    """

    def __init__(self, model, every=None):
        if every is not None and (isinstance(every, bool) or not isinstance(every, int) or every < 1):
            raise ValueError(f"watch(): snapshots_every must be None or an int >= 1 (keep every N-th step's tape), "
                             f"got {every!r}")
        self.model = model
        self.every = every
        self.armed = False
        self.steps = []
        self._structure = None  # the first kept step's tape.v1 dict, without summaries
        self._value = []  # per kept step: one (norm, nan, inf) or None per structure node
        self._grad = []
        self._notes = []  # per kept step: what differed from the structure (text), or None
        self._own = {}  # kept step index -> (its own structure, value, grad) where its graph differed
        self._capture = None

    @property
    def pending(self):
        """A kept step's backward pass is running (``end()`` has work to do)."""
        return self._capture is not None

    def __len__(self):
        return len(self.steps)

    def arm(self):
        """Keep the next step (the next backward pass the collector counts)."""
        self.armed = True

    def wants(self, step):
        return self.armed or (self.every is not None and step % self.every == 0)

    def begin(self, step, roots):
        """The step's backward pass is about to run: read the graph and hook its op nodes."""
        self.drop()
        self.armed = False
        self._capture = _Capture(step, roots, self.model)

    def drop(self):
        """Forget a kept step whose backward pass raised before its end (its hooks go too)."""
        if self._capture is not None:
            self._capture.close()
            self._capture = None

    def end(self):
        """The step's backward pass has ended: read the leaves' gradients, remove the hooks, keep numbers."""
        cap, self._capture = self._capture, None
        if cap is None:
            return
        cap.finish()
        if self._structure is None:
            self._structure = cap.snap
            value, grad, note = cap.value, cap.grad, None
        else:
            value, grad, note = self._map(cap)
            if note is not None:
                self._own[len(self.steps)] = (cap.snap, cap.value, cap.grad)
        self.steps.append(cap.step)
        self._value.append(value)
        self._grad.append(grad)
        self._notes.append(note)

    def _map(self, cap):
        base, snap = self._structure, cap.snap
        pairs = match(base, snap)
        pos = {n["id"]: j for j, n in enumerate(snap["nodes"])}
        value, grad = [], []
        for n in base["nodes"]:
            j = pos.get(pairs.get(n["id"]))
            value.append(None if j is None else cap.value[j])
            grad.append(None if j is None else cap.grad[j])
        missing = [n for n in base["nodes"] if n["id"] not in pairs]
        mapped = set(pairs.values())
        extra = [n for n in snap["nodes"] if n["id"] not in mapped]
        if not missing and not extra:
            return value, grad, None
        parts = []
        if missing:
            parts.append(f"{len(missing)} node{'s' * (len(missing) != 1)} of the step-{self.steps[0]} graph "
                         f"{'were' if len(missing) != 1 else 'was'} not there ({_names(missing)}; no value at this step)")
        if extra:
            parts.append(f"{len(extra)} new node{'s' * (len(extra) != 1)} {'are' if len(extra) != 1 else 'is'} not "
                         f"shown here ({_names(extra)}; snapshots[{len(self.steps)}] is that step's own graph, "
                         f"wb.viz.compare(snapshots[0], snapshots[{len(self.steps)}]) marks what changed)")
        return value, grad, f"The graph changed at step {cap.step}: " + "; ".join(parts) + "."

    # --- the tape.v1 dicts ---------------------------------------------------------------------
    def _dict(self, base, steps, values, grads, title, notes):
        # the nodes carry the last row's norms; for the whole series only its gradient norms (the
        # static picture's colours): the values of every step are in `series` (half the bytes)
        grad = grads[-1]
        value = values[-1] if len(steps) == 1 else [None] * len(grad)
        nodes = [{**n, "value": norm_summary(n, v), "grad": norm_summary(n, g)}
                 for n, v, g in zip(base["nodes"], value, grad)]
        out = {**base, "title": title, "nodes": nodes}
        kept = list(base.get("notes") or ()) + [{"level": "warning", "text": t, "node": None} for t in notes if t]
        if kept:
            out["notes"] = kept
        else:
            out.pop("notes", None)
        out["overlay"] = "grad_norm"  # the slider's measure when the view opens (the static picture's too)
        out["series"] = {"steps": list(steps), "measures": {"grad_norm": [[_json(m) for m in row] for row in grads],
                                                            "value_norm": [[_json(m) for m in row] for row in values]}}
        return out

    def to_dict(self):
        """The whole series as one tape.v1 dict (``series`` holds every kept step; summaries: the last)."""
        if not self.steps:
            raise IndexError("no step kept yet: watch(model, snapshots_every=N) keeps every N-th step, "
                             "mon.snapshot() the next one; then run a backward pass")
        steps = self.steps
        span = f"step {steps[0]}" if len(steps) == 1 else f"steps {steps[0]}–{steps[-1]} ({len(steps)} kept)"
        return self._dict(self._structure, steps, self._value, self._grad, f"{self._structure['title']} · {span}",
                          self._notes)

    def step_dict(self, i):
        """The tape.v1 dict of the i-th kept step alone (negative i counts from the end)."""
        n = len(self.steps)
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"snapshots[i]: i must be an int, got {type(i).__name__}")
        if not -n <= i < n:
            raise IndexError(f"snapshots[{i}]: {n} step{'s' * (n != 1)} kept")
        i %= n
        # a step whose graph differed is shown as its own graph (compare() with another step marks
        # what was added and removed); the others on the first step's structure
        base, value, grad = self._own.get(i) or (self._structure, self._value[i], self._grad[i])
        return self._dict(base, [self.steps[i]], [value], [grad], f"{self._structure['title']} · step {self.steps[i]}",
                          [self._notes[i]])


def _names(nodes, k=3):
    names = [n.get("param") or (f"{n['scope']}.{n['op']}" if n["scope"] else n["op"]) or n["name"] for n in nodes[:k]]
    return ", ".join(names) + (f" and {len(nodes) - k} more" if len(nodes) > k else "")
