"""The backward recorder: engine steps -> tape.v1 step records, the replay the viewer steps through.

The forward recorder (``recorder.py``) notes what the graph cannot tell while the forward pass runs;
this one turns each ``BackwardStep`` of the engine's generator into the summary record that
``trace.steps`` holds: the incoming gradient, what went to each input, the leaves' ``.grad`` before
and after, the classroom derivation, and a breakpoint where NaN/Inf first appears. The live
debugger (``stepper.py``) and ``snapshot(trace=True)`` both record through it.
"""
from ..autograd import _make_grads, engine
from ..autograd.graph import AccumulateGrad
from . import classroom
from .recorder import site_text
from .snapshot import as_roots
from .summary import summarize


def _label(snap_nodes, nid, labels=None):
    n = snap_nodes.get(nid)
    if n is None:
        return str(nid)
    if n["kind"] in ("leaf", "param", "input", "cut"):
        return n.get("param") or n["name"]
    # an op's own name plus its node number: two "mul"s stay apart in every step's text
    return (labels or {}).get(nid) or (n["op"] or "op") + classroom.subscript(nid)


def make_record(bstep, ids, snap_nodes, classroom_text=True, labels=None):
    """The tape.v1 step record of an engine ``BackwardStep`` (summaries computed on the device)."""
    node = bstep.node
    nid = ids[node]
    rec = {"index": bstep.index, "node": nid,
           "grad_outputs": [summarize(g) for g in bstep.grad_outputs],
           "grad_inputs": [], "leaves": [], "derivation": None, "breakpoint": None}
    tpos = getattr(node, "_tensor_pos", ())
    input_labels = []
    for k, ((nxt, _), g) in enumerate(zip(node.next_functions, bstep.grad_inputs)):
        input_labels.append(_label(snap_nodes, ids.get(nxt), labels) if nxt is not None else f"input{k}")
        if nxt is None or nxt not in ids:
            continue
        rec["grad_inputs"].append({"target": ids[nxt], "index": int(tpos[k]) if k < len(tpos) else k,
                                   "grad": summarize(g)})
    for _t, before, after in bstep.leaves:
        rec["leaves"].append({"node": nid, "before": summarize(before), "after": summarize(after)})
    if classroom_text:
        leaf = type(node) is AccumulateGrad
        if leaf:
            names, out = [_label(snap_nodes, nid)], "out"
        else:
            names = _distinct([*input_labels, _label(snap_nodes, nid, labels)],
                              [ids.get(nxt) for nxt, _ in node.next_functions] + [nid])
            names, out = names[:-1], names[-1]
        shapes = [snap_nodes[ids[nxt]]["shape"] if nxt in ids else None for nxt, _ in node.next_functions]
        rec["derivation"] = classroom.derivation(node, bstep.grad_outputs, bstep.grad_inputs, names, out, shapes)
    return rec


def _distinct(names, node_ids):
    # "add = mul + mul" says nothing: a name used twice gets its node's number ("mul₄ + mul₇")
    seen = {}
    for n in names:
        seen[n] = seen.get(n, 0) + 1
    return [n + classroom.subscript(i) if seen[n] > 1 and i is not None else n for n, i in zip(names, node_ids)]


def nonfinite(rec, snap_nodes=None):
    """'NaN in the gradient sent to SubBackward0 (input 0)'-style text when the step record holds
    NaN/Inf, else None; ``snap_nodes`` (id -> node dict) names the nodes, else their ids do."""

    def name(nid):
        n = (snap_nodes or {}).get(nid)
        return (n.get("param") or n["name"]) if n else nid

    for gi in rec["grad_inputs"]:
        g = gi["grad"]
        if g is not None and (g["nan"] or g["inf"]):
            return f"{'NaN' if g['nan'] else 'Inf'} in the gradient sent to {name(gi['target'])} (input {gi['index']})"
    for leaf in rec["leaves"]:
        a = leaf["after"]
        if a["nan"] or a["inf"]:
            return f"{'NaN' if a['nan'] else 'Inf'} in the .grad of {name(leaf['node'])}"
    return None


def flag_first_nonfinite(rec, node, seen_bad, snap_nodes=None):
    """Set ``rec["breakpoint"]`` on the first step that produces NaN/Inf; returns whether this one holds any.

    ``continue`` stops there by itself; the reason names the op and, when recorded, its forward line.
    """
    reason = nonfinite(rec, snap_nodes)
    if reason is None:
        return False
    incoming = any(g is not None and (g["nan"] or g["inf"]) for g in rec["grad_outputs"])
    if not incoming and not seen_bad:
        where = f"; forward: {site_text(node.site)}" if node.site else \
            "; record the forward pass under `with wb.viz.trace():` to see its source line"
        rec["breakpoint"] = {"reason": f"{reason} by {node.name()}{where}"}
    return True


def default_grads(roots, gradient):
    """The gradients a backward from ``roots`` starts with (ones for scalars), as ``backward()`` makes them."""
    grads = None if gradient is None else ([gradient] if len(roots) == 1 else list(gradient))
    return _make_grads(roots, grads, False)


def record_backward(roots, builder, gradient=None, retain_graph=False):
    """Run the backward pass through ``iter_backward`` and return the tape.v1 step records."""
    roots = as_roots(roots)
    for r in roots:
        if not r._rg:
            raise engine.no_grad_error(r, "tensors")
    grads = default_grads(roots, gradient)
    nodes = {n["id"]: n for n in builder.nodes}
    steps = []
    bad = False
    # the engine frees each node's saved tensors (retain_graph=False) once its record is made
    for bstep in engine.iter_backward(roots, grads, retain_graph=retain_graph, keep_before=True, free_after_step=True):
        rec = make_record(bstep, builder.ids, nodes, True, builder.labels)
        bad = flag_first_nonfinite(rec, bstep.node, bad, nodes) or bad
        steps.append(rec)
    return steps


def fill_grads(snap):
    """Give every node of a traced snapshot its final gradient (from the step records)."""
    by_id = {n["id"]: n for n in snap["nodes"]}
    for st in snap["trace"]["steps"]:
        n = by_id[st["node"]]
        if n["kind"] in ("op", "output") and st["grad_outputs"]:  # output 0's; a split's first piece that got one
            n["grad"] = next((g for g in st["grad_outputs"] if g is not None), None)
        for leaf in st["leaves"]:
            by_id[leaf["node"]]["grad"] = leaf["after"]
