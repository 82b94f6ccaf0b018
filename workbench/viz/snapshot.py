"""tape -> tape.v1: the snapshot of a recorded graph that every viewer reads.

``build(roots)`` walks ``grad_fn`` / ``next_functions`` iteratively from the roots and writes the
JSON object described by ``tape.v1.schema.json``: one node per backward node (ops and the leaves'
AccumulateGrad), named, scoped and summarised; with ``record()`` active during the forward pass it
also shows data inputs and where the graph was cut. ``replay.py`` adds the backward trace;
``views.Snapshot`` displays and saves the result.
"""
import json
import sys

from .. import _backend
from ..autograd import graph
from ..autograd.function import describe_saved
from ..autograd.graph import AccumulateGrad, _Out, walk
from ..nn.module import CallScope
from ..profiler.flops import node_flops
from ..tensor import Tensor
from . import recorder
from .align import scope_key
from .recorder import site_dict, site_text
from .summary import summarize, summarize_array

MIME = "application/vnd.workbench.tape.v1+json"
_INPUT_NAMES = ("self", "other", "third", "fourth")
COST_FIELDS = ("flops", "saved_bytes", "forward_us", "backward_us")  # per node, summed per module


def as_roots(x):
    """A list of root tensors from a Tensor or a sequence of Tensors (TypeError otherwise)."""
    if isinstance(x, Tensor):
        return [x]
    roots = list(x)
    for r in roots:
        if not isinstance(r, Tensor):
            raise TypeError(f"snapshot() expects a Tensor or a sequence of Tensors, got {type(r).__name__}")
    return roots


def _dtype_name(npd):
    return _backend.dtypes.from_numpy_dtype(npd).name


def _caller_names():
    """id(tensor) -> variable name, from the user's frames (so leaves show as "w", "x")."""
    names = {}
    f = sys._getframe(1)
    while f is not None and "/workbench/" in f.f_code.co_filename.replace("\\", "/") and \
            "/tests/" not in f.f_code.co_filename.replace("\\", "/"):
        f = f.f_back
    if f is None:
        return names
    for scope in (f.f_locals, f.f_globals):
        for k, v in list(scope.items()):
            if isinstance(v, Tensor) and not k.startswith("_"):
                names.setdefault(id(v), k)
                if v.grad_fn is not None and v._output_nr == 0:
                    names.setdefault(id(v.grad_fn), k)
    return names


def _saved_list(entries, names=None):
    """The node's saved tensors ({name, shape, dtype, bytes}) and their bytes, each storage counted once.
    names: the primitive's own names for its saved slots (``Function.saved_names``), PyTorch's where it has
    them (``ThnnFusedLstmCellBackward0``'s ``input_gates``...); else an input's position or ``saved[i]``."""
    out = []
    storages = {}
    for i, where, shape, npd, nbytes, root, root_bytes in entries:
        if names is not None and i < len(names):
            name = names[i]
        elif where is None:
            name = f"saved[{i}]"
        elif where < 0:
            name = "result" if where == -1 else f"result{-1 - where}"
        else:
            name = _INPUT_NAMES[where] if where < len(_INPUT_NAMES) else f"input{where}"
        storages[root] = root_bytes
        out.append({"name": name, "shape": [int(s) for s in shape], "dtype": _dtype_name(npd), "bytes": int(nbytes)})
    return out, int(sum(storages.values()))


class _Builder:
    def __init__(self, roots, model, names, values, grads, frames=True):
        self.roots = roots
        self.values = values
        self.grads = grads
        self.ids = {}  # Node or ConstInput -> id
        self.nodes = []
        self.edges = []
        self.scopes = {}  # id -> call-qualified scope (for step over)
        self.labels = {}  # op id -> the caller's variable name for its output (classroom text)
        self.params = {}
        self.names = _caller_names_safe() if frames else {}
        if model is not None:
            for path, p in model.named_parameters():
                self.params[id(p)] = path
        if names:
            for k, v in names.items():
                self.names[id(v)] = k
        self.model = model
        self.saved_values = {}  # (node, nr) -> array, from consumers' saved tensors
        self._call_ids = {}  # CallScope.call -> its number in this snapshot
        self.main = set()  # the nodes a backward from the roots executes (not the cut-off subgraphs)
        self._cut_edges = set()
        self.finite = {}  # op id -> whether record() saw its output finite (kept when the output is gone)

    # --- values -------------------------------------------------------------------------------
    def _value_array(self, node, nr=0):
        info = recorder.lookup(node)
        if info is not None:
            outs = info[0]
            if nr < len(outs) and outs[nr] is not None:
                t = outs[nr]()
                if t is not None:
                    return t._data
        arr = self.saved_values.get((node, nr))
        if arr is not None:
            return arr
        for entry in node._saved or ():
            e = entry[0] if type(entry) is tuple else entry
            if type(e) is _Out and e.i == nr:
                return e.data
        return None

    def value_of(self, obj):
        """The array a snapshot node stands for, where still known: a leaf's data, a data input's, or
        an op's output (kept by the recorder or saved for backward); None otherwise."""
        if type(obj) is AccumulateGrad:
            t = obj.variable
            return None if t is None else t._data
        if isinstance(obj, recorder.ConstInput):
            t = obj.ref()
            return None if t is None else t._data
        return self._value_array(obj)

    def _index_saved(self, nodes):
        for r in self.roots:  # the roots' own values (the loss), which no consumer saved
            if r.grad_fn is not None:
                self.saved_values.setdefault((r.grad_fn, r._output_nr), r._data)
        for n in nodes:
            for entry in n._saved or ():
                e = entry[0] if type(entry) is tuple else entry
                if isinstance(e, Tensor) and e.grad_fn is not None:
                    self.saved_values.setdefault((e.grad_fn, e._output_nr), e._data)
                elif type(e) is _Out:
                    self.saved_values.setdefault((n, e.i), e.data)

    # --- nodes --------------------------------------------------------------------------------
    def build(self, extra_roots=()):
        starts = graph.roots_of(self.roots)
        if not starts:
            raise RuntimeError(
                "snapshot(): none of the given tensors has a graph (grad_fn is None and requires_grad is "
                "False). Make a leaf with requires_grad=True and compute from it, e.g. "
                "w = wb.randn(3, requires_grad=True); loss = (w * x).sum()")
        nodes = walk(starts)
        self.main = set(nodes)
        # subgraphs the main graph was cut from (detach sources) are shown too, greyed by the viewer
        consts = {}
        for n in nodes:
            info = recorder.lookup(n)
            if info is not None and info[1]:
                consts[n] = info[1]
        extra = []
        for cmap in consts.values():
            for c in cmap.values():
                src = c.cut[2] if c.cut else None
                node = src[0]() if src else None
                if node is not None:
                    extra.append(node)
        if extra:
            known = set(nodes)
            nodes += [n for n in walk(extra) if n not in known]
        self._index_saved(nodes)
        ops = sorted((n for n in nodes if type(n) is not AccumulateGrad), key=lambda n: n._seq)
        root_nodes = {id(s) for s in starts}
        exports = recorder.exports() if consts else []
        for n in ops:
            for k, (nxt, nr) in enumerate(n.next_functions):
                if nxt is not None and nxt not in self.ids:
                    self._add_leaf(nxt)
            for pos, c in sorted((consts.get(n) or {}).items()):
                if c not in self.ids:
                    self._add_const(c, exports, n)
            self._add_op(n, id(n) in root_nodes, consts.get(n))
        for s in starts:  # a leaf given as a root
            if s not in self.ids:
                self._add_leaf(s)
        for n in ops:
            tpos = n._tensor_pos
            for k, (nxt, nr) in enumerate(n.next_functions):
                if nxt is not None:
                    self._edge(nxt, n, tpos[k] if k < len(tpos) else k, self._meta(nxt, nr))
            for pos, c in (consts.get(n) or {}).items():
                self._edge(c, n, pos, (c.shape, c.dtype))
                src = c.cut[2] if c.cut else None
                snode = src[0]() if src else None
                if snode is not None and snode in self.ids and (c, 0) not in self._cut_edges:
                    self._cut_edges.add((c, 0))
                    self._edge(snode, c, 0, (c.shape, c.dtype))
        return self

    def _meta(self, node, nr):
        if type(node) is AccumulateGrad:
            t = node.variable
            return (t._data.shape, t._data.dtype) if t is not None else ((), None)
        m = node._out_meta
        if m and nr < len(m) and m[nr] is not None:
            return m[nr]
        return ((), None)

    def _edge(self, src, dst, index, meta):
        shape, dt = meta
        self.edges.append({"source": self.ids[src], "target": self.ids[dst], "index": int(index),
                           "shape": [int(s) for s in shape], "dtype": _dtype_name(dt) if dt is not None else ""})

    def _new_id(self, obj):
        i = f"n{len(self.nodes)}"
        self.ids[obj] = i
        return i

    def _base(self, i, kind, op, name, scope="", group=None, site=None, shape=(), dtype="", device="cpu"):
        return {"id": i, "kind": kind, "op": op, "name": name, "scope": scope, "group": group, "site": site,
                "shape": [int(s) for s in shape], "dtype": dtype, "device": device, "param": None, "saved": [],
                "value": None, "grad": None, "cut": None, "flops": None, "saved_bytes": 0, "saved_tensors": [],
                "forward_us": None, "backward_us": None}

    def _add_leaf(self, acc):
        i = self._new_id(acc)
        t = acc.variable
        if type(acc) is not AccumulateGrad or t is None:
            self.nodes.append(self._base(i, "leaf", "AccumulateGrad", "(freed leaf)"))
            self.scopes[i] = ""
            return
        path = self.params.get(id(t))
        name = self.names.get(id(t))
        d = self._base(i, "param" if path else "leaf", "AccumulateGrad", path.rsplit(".", 1)[-1] if path else
                       (name or f"leaf{len(self.nodes)}"), shape=t._data.shape, dtype=_dtype_name(t._data.dtype),
                       device=str(t.device))
        if path:
            d["param"] = path
            d["scope"] = path.rsplit(".", 1)[0] if "." in path else ""
        if self.values:
            d["value"] = summarize(t)
        if self.grads and t._grad is not None:
            d["grad"] = summarize(t._grad)
        if acc._times is not None:
            d["backward_us"] = acc._times[1]
        self.scopes[i] = scope_key(d)
        self.nodes.append(d)

    def _add_const(self, c, exports, consumer):
        i = self._new_id(c)
        t = c.ref()
        name = self.names.get(id(t)) if t is not None else None
        kind, op, cut = "input", "", None
        if c.cut:
            reason, site, src = c.cut[:3]
            op_name = c.cut[3] if len(c.cut) > 3 else None
            where = f" at {site_text(site)}" if site else ""
            kind, op = "cut", reason
            snode = src[0]() if src else None
            if snode is not None and type(snode) is AccumulateGrad:
                snode = snode.variable
            src_name = self.names.get(id(snode)) if snode is not None else None
            if reason == "detach":
                cut = {"reason": "detach", "detail": f"{src_name or 'tensor'}.detach(){where}: no gradient flows "
                                                     "back through this value"}
            else:
                what = f"'{op_name}'" if op_name else "this value"
                cut = {"reason": "no_grad", "detail": f"{what} was computed under no_grad(){where}"
                                                      + (f" from {src_name}" if src_name else "")
                                                      + ": no gradient flows back through it"}
        else:
            ex = _match_export(t, exports) if t is not None else None
            if ex is not None:
                c.cut = ("numpy", ex.site, ex.source, None)
                kind, op = "cut", "numpy"
                where = f" at {site_text(ex.site)}" if ex.site else ""
                cut = {"reason": "numpy", "detail": f"values left workbench through .numpy()/.item()/.tolist(){where} "
                                                    "and came back as a new tensor: the graph is cut here"}
        d = self._base(i, kind, op, name or (op or "input"), shape=c.shape, dtype=_dtype_name(c.dtype),
                       device=str(t.device) if t is not None else "cpu")
        d["cut"] = cut
        if t is not None and self.values:
            d["value"] = summarize(t)
        if kind == "input" and name is None and (consumer.scope or consumer.group is not None):
            # made inside a module or composite op (a pooling matrix, a mask): an implementation
            # detail of that call, so it sits inside its box instead of among the user's inputs
            d["name"] = "constant"
            d["scope"] = str(consumer.scope or "")
            d["group"] = None if consumer.group is None else str(consumer.group)
            calls = self._calls(consumer.scope)
            if calls is not None:
                d["calls"] = calls
        self.scopes[i] = scope_key(d)
        self.nodes.append(d)

    def _input_shapes(self, n, consts):
        # what is known of each tensor input's shape: the producer's output meta, or the recorder's
        # note of a data input (the op's own saved tensors fill the rest, in node_flops)
        tpos = n._tensor_pos
        out = []
        for k, (nxt, nr) in enumerate(n.next_functions):
            if nxt is not None:
                shape, dt = self._meta(nxt, nr)
                out.append(tuple(shape) if dt is not None else None)
            else:
                c = consts.get(tpos[k] if k < len(tpos) else k) if consts else None
                out.append(c.shape if c is not None else None)
        return out

    def _add_op(self, n, is_root, consts=None):
        i = self._new_id(n)
        meta = n._out_meta[0] if n._out_meta else None
        shape, dt = meta if meta is not None else ((), None)
        arr = self._value_array(n) if self.values else None
        device = str(_backend.device_of(arr)) if arr is not None else ("cpu" if n.xp is _backend.numpy else "cuda")
        group = n.group
        d = self._base(i, "output" if is_root else "op", n._op or n.name(), n.name(), str(n.scope or ""),
                       None if group is None else str(group), site_dict(n.site), shape,
                       _dtype_name(dt) if dt is not None else "", device)
        calls = self._calls(n.scope)
        if calls is not None:
            d["calls"] = calls
        label = self.names.get(id(n))
        if label:
            self.labels[i] = label
        entries = describe_saved(n)
        d["saved_tensors"], d["saved_bytes"] = _saved_list(entries, getattr(n._fn, "saved_names", None))
        d["saved"] = [{k: e[k] for k in ("name", "shape", "dtype")} for e in d["saved_tensors"]]
        d["flops"] = node_flops(n, self._input_shapes(n, consts), entries)
        if n._times is not None:
            d["forward_us"], d["backward_us"] = n._times
        if arr is not None:
            d["value"] = summarize_array(arr)
        info = recorder.lookup(n)
        if info is not None and info[2] and info[2][0] is not None:
            self.finite[i] = bool(info[2][0])
        if self.grads and n._retain:
            for nr in sorted(n._retain):  # output 0's; of a multi-output node (split), the first that got one
                t = n._retain[nr]()
                if t is not None and t._grad is not None:
                    d["grad"] = summarize(t._grad)
                    break
        self.scopes[i] = scope_key(d)
        self.nodes.append(d)

    def _calls(self, scope):
        # which call of each dotted part of the scope this node ran in, numbered in order of appearance
        if not isinstance(scope, CallScope):
            return None
        chain = {}
        c = scope
        while c is not None:
            chain.setdefault(str(c), c.call)
            c = c.parent
        parts = str(scope).split(".")
        out = []
        for k in range(len(parts)):
            cid = chain.get(".".join(parts[:k + 1]))
            out.append(None if cid is None else self._call_ids.setdefault(cid, len(self._call_ids)))
        return out

    def modules(self):
        if self.model is None or not hasattr(self.model, "named_modules"):
            return []
        sums = self._sums()
        out = []
        paths = set()
        for path, m in self.model.named_modules():
            if not path:
                continue
            parent = path.rsplit(".", 1)[0] if "." in path else None
            while parent is not None and parent not in paths:
                parent = parent.rsplit(".", 1)[0] if "." in parent else None
            out.append({"path": path, "type": type(m).__name__, "parent": parent,
                        **sums.get(path, dict.fromkeys(COST_FIELDS))})
            paths.add(path)
        return out

    def _sums(self):
        # each module's cost: the sum over the nodes in its scope and its children's (None: nothing
        # known), in one pass over the nodes (each adds to every dotted prefix of its scope)
        sums = {}
        for d in self.nodes:
            sc = d["scope"]
            if not sc:
                continue
            vals = [(k, d[k]) for k in COST_FIELDS if d[k] is not None]
            if not vals:
                continue
            parts = sc.split(".")
            for i in range(1, len(parts) + 1):
                acc = sums.get(".".join(parts[:i]))
                if acc is None:
                    acc = sums[".".join(parts[:i])] = dict.fromkeys(COST_FIELDS)
                for k, v in vals:
                    acc[k] = v if acc[k] is None else acc[k] + v
        return sums


def _caller_names_safe():
    try:
        return _caller_names()
    except Exception:  # frames of exotic hosts; names are a nicety
        return {}


def _match_export(t, exports):
    # the best evidence of a NumPy round trip: these exact values left through .numpy()/.item() earlier
    if not exports or t.device.type != "cpu":
        return None
    data = t._data
    for ex in reversed(exports):
        if ex.host is None:
            continue
        if ex.host.size == data.size and ex.host.size and (ex.host.reshape(-1) == data.reshape(-1)).all():
            return ex
    return None


def build(roots, model=None, names=None, title=None, values=True, grads=True, frames=True):
    """The tape.v1 dict of the graph behind ``roots`` and the builder's id map (used by the debugger).

    ``frames=False`` names tensors without reading the caller's variables: on Python < 3.13 reading
    a function frame's locals leaves a copy of them on the frame, which would keep a training loop's
    previous step (its loss and whole graph) alive until that frame ends.
    """
    roots = as_roots(roots)
    b = _Builder(roots, model, names, values, grads, frames)
    b.build()
    root_ids = [b.ids[s] for s in graph.roots_of(roots) if s in b.ids]
    if title is None:
        title = _default_title(b, roots)
    snap = {"format": "workbench.tape", "version": 1, "title": title, "nodes": b.nodes, "edges": b.edges,
            "modules": b.modules(), "roots": root_ids, "trace": None}
    notes = nonfinite_notes(snap, b.labels, b.finite)
    if notes:
        snap["notes"] = notes
    return snap, b


def _bad(summary):
    return summary is not None and bool(summary["nan"] or summary["inf"])


def _where(node):
    s = node["site"]
    if not s:
        return ""
    return f" at {s['file']}, line {s['line']}" if s["file"].startswith("Cell In[") else f" at {s['file']}:{s['line']}"


def nonfinite_notes(snap, labels=None, finite=None):
    """An error note when a root's value (the loss) is NaN/Inf, naming the first op that produced it.

    Under ``record()`` every op's output was checked as it was made (``finite``: op id -> bool), so
    that op is where the NaN started; without it only the values kept for backward are known, and
    the note says how to find the origin. ``labels`` maps node ids to the caller's variable names.

    >>> import workbench as wb
    >>> w = wb.tensor([1.0, 0.0], requires_grad=True)
    >>> with wb.viz.record():
    ...     loss = wb.log(w * w).sum()
    >>> print(wb.viz.snapshot(loss).to_dict()["notes"][0]["text"])  # doctest: +ELLIPSIS
    The loss (loss) is Inf in the forward pass already... The first op that produced NaN or Inf: log at ...
    """
    labels, finite = labels or {}, finite or {}
    by_id = {n["id"]: n for n in snap["nodes"]}
    bad_roots = [by_id[r] for r in snap["roots"] if _bad(by_id[r]["value"])]
    if not bad_roots:
        return []
    root = bad_roots[0]
    what = "NaN" if root["value"]["nan"] else "Inf"

    def bad(n):
        return _bad(n["value"]) or finite.get(n["id"]) is False

    inputs = {}
    for e in snap["edges"]:
        inputs.setdefault(e["target"], []).append(e["source"])
    first = None
    for n in snap["nodes"]:  # forward order: the first op whose value is bad while its inputs are not
        if n["kind"] in ("op", "output") and bad(n) and not any(bad(by_id[i]) for i in inputs.get(n["id"], ())):
            first = n
            break
    text = (f"The loss ({labels.get(root['id'], root['name'])}) is {what} in the forward pass already, so no "
            "gradient of this backward pass can be trusted.")
    recorded = all(n["value"] is not None or n["id"] in finite for n in snap["nodes"] if n["kind"] == "op")
    if first is not None and (first is not root or recorded):
        label = labels.get(first["id"])
        text += f" The first op that produced NaN or Inf: {first['op'] or first['name']}" + \
            (f" ({label})" if label else "") + f"{_where(first)}."
    if not recorded:
        text += " Run the forward pass under `with wb.viz.record():` to see where it started."
    return [{"level": "error", "text": text, "node": first["id"] if first is not None else root["id"]}]


def _default_title(b, roots):
    r = roots[0]
    name = b.names.get(id(r))
    op = r.grad_fn.name() if r.grad_fn is not None else "leaf"
    n = len(b.nodes)
    return f"{name or 'tensor'} ({op}, {n} nodes)"


def to_json(snap, indent=None):
    """Strict JSON text of a tape.v1 dict (no NaN/Infinity literals)."""
    return json.dumps(snap, allow_nan=False, indent=indent)
