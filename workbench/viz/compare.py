"""Two tapes in one view: ``compare(a, b)`` matches the nodes of two snapshots and draws their union.

Nodes are matched by ``align.node_keys`` (module scope with call indices, composite op, op,
occurrence; parameters by path). The result is a tape.v1 snapshot: the nodes of b, plus a's nodes
that b lacks (``diff: "removed"``, placed where a had them), each b node a lacks marked
``diff: "added"``; edges are b's, plus a's edges that touch a removed node. Per node, b's norm over
a's of the gradient and of the value are the measures ``grad_norm_ratio`` and ``value_norm_ratio``
(scale "ratio", coloured by the viewer); ``compare`` holds both sides of every node for the panel.
"""
import heapq
import math

from .align import node_keys, scopes
from .views import Snapshot

__all__ = ["compare"]

FACTOR = 2.0  # a ratio beyond this (or below its inverse) counts as "changed" in the header
RATIOS = {"grad_norm_ratio": ("grad", "gradient norm ratio (b/a)"), "value_norm_ratio": ("value", "value norm ratio (b/a)")}


def _tape(x, side):
    if isinstance(x, Snapshot):
        x = x.to_dict()
    if not isinstance(x, dict):
        hint = (" (a tensor: take a snapshot first, wb.viz.snapshot(loss, model))"
                if type(x).__name__ == "Tensor" else "")
        raise TypeError(f"compare(): {side} must be a Snapshot (what wb.viz.snapshot returns) or a tape.v1 dict, "
                        f"got {type(x).__name__}{hint}")
    if x.get("format") != "workbench.tape" or not isinstance(x.get("nodes"), list):
        raise ValueError(f"compare(): {side} is a dict but not a tape.v1 snapshot (format {x.get('format')!r}, "
                         "expected 'workbench.tape'); pass wb.viz.snapshot(...) or Snapshot.to_dict()")
    if x.get("version") != 1:
        raise ValueError(f"compare(): {side} is tape version {x.get('version')!r}; this workbench reads version 1")
    steps = (x.get("series") or {}).get("steps") or ()
    if len(steps) > 1:
        raise ValueError(f"compare(): {side} holds {len(steps)} kept steps (mon.snapshots); compare two of them, "
                         "e.g. wb.viz.compare(mon.snapshots[0], mon.snapshots[-1])")
    if x.get("compare") is not None:
        raise ValueError(f"compare(): {side} is already a comparison ({x.get('title')!r}); compare two snapshots")
    return x


def _norm(summary):
    # the norm a ratio can use: None when unknown or when NaN/Inf make the finite-element norm misleading
    if not summary or summary.get("nan") or summary.get("inf"):
        return None
    v = summary.get("norm")
    return None if v is None else float(v)


def ratio(na, nb):
    """b/a of two norms: 0 where only a's is non-zero, infinity where only b's is, None for 0/0.

    >>> ratio(2.0, 3.0), ratio(0.0, 1.0), ratio(1.0, 0.0), ratio(0.0, 0.0), ratio(None, 1.0)
    (1.5, inf, 0.0, None, None)
    """
    if na is None or nb is None or (na == 0 and nb == 0):
        return None
    if na == 0:
        return math.inf
    return nb / na


def _changed(r):
    if r is None:
        return False
    return r > FACTOR or r < 1 / FACTOR


def _side(node):
    return {"id": node["id"], "shape": node["shape"], "dtype": node["dtype"], "value": node["value"], "grad": node["grad"]}


def _order(items, edges):
    # a topological order of the union (edges: pairs of item indices), ties broken by each item's
    # place (b's order, a removed node right after the a node before it)
    succ = [[] for _ in items]
    deg = [0] * len(items)
    for s, t in edges:
        succ[s].append(t)
        deg[t] += 1
    heap = [(items[i][0], i) for i in range(len(items)) if deg[i] == 0]
    heapq.heapify(heap)
    out = []
    while heap:
        _, i = heapq.heappop(heap)
        out.append(i)
        for t in succ[i]:
            deg[t] -= 1
            if deg[t] == 0:
                heapq.heappush(heap, (items[t][0], t))
    return out


def compare(a, b, *, title=None):
    """A ``Snapshot`` of the union of two tapes, coloured by how the gradient norm changed from a to b.

    ``a``, ``b``: what ``wb.viz.snapshot`` returns, or tape.v1 dicts. Added nodes (only in b) and
    removed ones (only in a) are marked; the side panel shows a | b of the selected node; the header
    counts the added, removed and changed (ratio beyond 2x either way) nodes. Colour by
    ``grad_norm_ratio`` (the default) or ``value_norm_ratio``: b's norm over a's, where 0 in a
    gives infinity and 0 in both gives no ratio.

    >>> import workbench as wb
    >>> w = wb.tensor([1.0, 2.0], requires_grad=True)
    >>> (w * w).sum().backward()
    >>> a = wb.viz.snapshot((w * w).sum())
    >>> w.grad = None
    >>> (w * w * 3).sum().backward()
    >>> cmp = wb.viz.compare(a, wb.viz.snapshot((w * w * 3).sum()))
    >>> cmp.to_dict()["compare"]["counts"]   # the new "* 3"; w's gradient and the loss grew 3x
    {'added': 1, 'removed': 0, 'changed': 2}
    >>> cmp.to_dict()["measures"]["grad_norm_ratio"]["values"]["n0"]   # w's gradient: 6w over 2w
    3.0
    """
    da, db = _tape(a, "a"), _tape(b, "b")
    ka, kb = node_keys(da), node_keys(db)
    in_a = dict(zip(ka, range(len(ka))))
    in_b = dict(zip(kb, range(len(kb))))
    # items: (place, side, index in that side); b's nodes at their place, a's removed ones after the
    # last a node before them that b has
    items, where = [], {}
    for j, k in enumerate(kb):
        where[("b", j)] = len(items)
        items.append(((j, 0), "b", j))
    place, sub = (-1, 0), 0
    for i, k in enumerate(ka):
        j = in_b.get(k)
        if j is not None:
            where[("a", i)] = where[("b", j)]
            place, sub = (j, 0), 0
        else:
            sub += 1
            where[("a", i)] = len(items)
            items.append(((place[0], sub), "a", i))
    a_ids = {n["id"]: i for i, n in enumerate(da["nodes"])}
    b_ids = {n["id"]: j for j, n in enumerate(db["nodes"])}
    edges, seen = [], set()
    for e in db["edges"]:
        s, t = where[("b", b_ids[e["source"]])], where[("b", b_ids[e["target"]])]
        seen.add((s, t, e["index"]))
        edges.append((s, t, e))
    for e in da["edges"]:
        i, k = a_ids[e["source"]], a_ids[e["target"]]
        if ka[i] in in_b and ka[k] in in_b:
            continue  # between two nodes b has: b's wiring is the one drawn
        s, t = where[("a", i)], where[("a", k)]
        if (s, t, e["index"]) not in seen:
            seen.add((s, t, e["index"]))
            edges.append((s, t, e))
    order = _order(items, [(s, t) for s, t, _ in edges])
    if len(order) < len(items):  # a's removed wiring runs against b's order: keep b's, drop a's edges
        edges = edges[:len(db["edges"])]
        order = _order(items, [(s, t) for s, t, _ in edges])
    new_id = {old: f"n{k}" for k, old in enumerate(order)}
    a_of = {where[("a", i)]: i for i in range(len(ka))}
    b_of = {where[("b", j)]: j for j in range(len(kb))}
    calls, groups = _remap_scopes(da, db)
    nodes, side_a, side_b = [], {}, {}
    values = {key: {} for key in RATIOS}
    counts = {"added": 0, "removed": 0, "changed": 0}
    for old in order:
        nid = new_id[old]
        i, j = a_of.get(old), b_of.get(old)
        na = da["nodes"][i] if i is not None else None
        nb = db["nodes"][j] if j is not None else None
        if nb is not None:
            node = dict(nb, id=nid, diff=None if na is not None else "added")
            side_b[nid] = _side(nb)
        else:
            node = dict(na, id=nid, diff="removed")
            if node.get("calls") is not None:
                node["calls"] = calls[i]
            if node.get("group") is not None:
                node["group"] = groups[i]
        if na is not None:
            side_a[nid] = _side(na)
        if na is not None and nb is not None:
            rs = {key: ratio(_norm(na[f]), _norm(nb[f])) for key, (f, _) in RATIOS.items()}
            for key, r in rs.items():
                # a measure value is a JSON number: infinity (0 in a) is left to the panel, which says it
                values[key][nid] = r if r != math.inf else None
            main = rs["grad_norm_ratio"] if rs["grad_norm_ratio"] is not None else rs["value_norm_ratio"]
            counts["changed"] += _changed(main)
        else:
            counts[node["diff"]] += 1
            for key in RATIOS:
                values[key][nid] = None
        nodes.append(node)
    out_edges = sorted(({**e, "source": new_id[s], "target": new_id[t]} for s, t, e in edges),
                       key=lambda e: (int(e["target"][1:]), e["index"]))
    b_paths = {m["path"] for m in db.get("modules", ())}
    modules = list(db.get("modules", ())) + [m for m in da.get("modules", ()) if m["path"] not in b_paths]
    measures = {key: {"label": label, "unit": "", "scale": "ratio", "values": values[key]}
                for key, (_, label) in RATIOS.items()}
    overlay = next((key for key in RATIOS if any(v is not None for v in values[key].values())), None)
    ta, tb = da.get("title") or "a", db.get("title") or "b"
    roots = [new_id[where[("b", b_ids[r])]] for r in db["roots"]] or \
        [new_id[where[("a", a_ids[r])]] for r in da["roots"]]
    notes = []
    for side, d, ids, tag in (("a", da, a_ids, "a"), ("b", db, b_ids, "b")):
        for note in d.get("notes") or ():
            target = note.get("node")
            notes.append({**note, "text": f"{tag}: {note['text']}",
                          "node": new_id[where[(side, ids[target])]] if target in ids else None})
    snap = {"format": "workbench.tape", "version": 1, "title": title or f"a: {ta} vs b: {tb}", "nodes": nodes,
            "edges": out_edges, "modules": modules, "roots": roots, "trace": None,
            "measures": measures, "overlay": overlay,
            "compare": {"a": {"title": ta, "nodes": side_a}, "b": {"title": tb, "nodes": side_b},
                        "counts": counts, "factor": FACTOR}}
    if notes:
        snap["notes"] = notes
    return Snapshot(snap)


def _remap_scopes(da, db):
    """For each node of a: its ``calls`` and ``group`` in b's numbering (where b has that call or group)."""
    b_calls, b_groups = {}, {}
    for n, (chain, group) in zip(db["nodes"], scopes(db)):
        for key, cid in zip(chain, n.get("calls") or ()):
            if cid is not None:
                b_calls.setdefault(key, cid)
        if group is not None:
            b_groups.setdefault(group, n["group"])
    fresh = max(b_calls.values(), default=-1) + 1
    mine, calls, groups = {}, [], []
    for n, (chain, group) in zip(da["nodes"], scopes(da)):
        out = []
        for key, cid in zip(chain, n.get("calls") or ()):
            if cid is None:
                out.append(None)
            elif key in b_calls:
                out.append(b_calls[key])
            else:  # a call b does not have: a new number, shared by a's nodes of that call
                if key not in mine:
                    mine[key] = fresh
                    fresh += 1
                out.append(mine[key])
        calls.append(out)
        # a group b lacks keeps a's text, marked so it never merges with a group of b by accident
        groups.append(b_groups.get(group, f"{n['group']}:a") if group is not None else None)
    return calls, groups
