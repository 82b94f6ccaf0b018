"""Which node of one tape.v1 snapshot is which node of another: the alignment rule of compare and watch.

Node ids (``n0``, ``n1``...) are positions in one snapshot and mean nothing in another, so two
snapshots (two steps, two runs, before and after a code change) are matched by a *key* that each
node gets from what it is, not where it sits in the list:

``param|<path>|<k>``
    a parameter, by its path from ``named_parameters`` (``encoder.0.weight``).
``<scope>|<op>|<k>``
    an op (also the root, the loss). ``<scope>`` is the module path with the call of each part,
    ``encoder#0.0#1`` = the 2nd call of ``encoder.0`` inside the 1st call of ``encoder`` (calls
    counted from 0 per parent call, in forward order; a part with no call record has no ``#``),
    followed by ``/<group>#<j>`` when the node is inside a composite op (the j-th softmax call in
    that scope, from 0), so ops inside one softmax call never shift the ops outside it. ``<op>`` is the forward op name (``mm``).
``leaf|<scope>|<name>|<k>``, ``input|<scope>|<name>|<k>``, ``cut|<scope>|<reason>|<k>``
    a user leaf, a data input (by the variable name the snapshot found; an unnamed one has
    ``<name>`` empty rather than the snapshot's positional ``leaf7``), a graph cut.

``<k>`` is the occurrence index: the node is the k-th (from 0, in the snapshot's forward order) with
that same prefix. So the same model at two steps matches node for node; an extra layer adds the
nodes of its own scope and nothing else; an extra op in a scope shifts only the later ops of the
same name in that scope. Keys are unique within a snapshot.

>>> import workbench as wb
>>> w = wb.tensor([1.0, 2.0], requires_grad=True)
>>> a = wb.viz.snapshot((w * w).sum()).to_dict()
>>> b = wb.viz.snapshot((w * w * w).sum()).to_dict()
>>> node_keys(a)
['leaf||w|0', '|mul|0', '|sum|0']
>>> match(a, b)
{'n0': 'n0', 'n1': 'n1', 'n2': 'n3'}
"""
import re

__all__ = ["node_keys", "match", "scopes", "boxes", "scope_key"]

_POSITIONAL = re.compile(r"leaf\d+")  # the snapshot's name for a leaf no variable holds


def _chain(node, counter):
    # the call-qualified key of each dotted prefix of the scope ("enc#0", "enc#0.0#1"); the
    # snapshot's `calls` are snapshot-wide call ids, renumbered here per part within its parent call
    scope = node.get("scope") or ""
    if not scope:
        return []
    calls = node.get("calls") or ()
    out, parent = [], ""
    for k, part in enumerate(scope.split(".")):
        key = f"{parent}.{part}" if parent else part
        cid = calls[k] if k < len(calls) else None
        if cid is not None:
            seen = counter.setdefault((parent, part), {})
            key += f"#{seen.setdefault(cid, len(seen))}"
        out.append(key)
        parent = key
    return out


def scopes(snap):
    """Per node of a tape.v1 dict: its call-qualified scope chain and its composite-op key (or None).

    ``(["enc#0", "enc#0.0#1"], "enc#0.0#1/softmax#0")`` for a node in the first softmax call of the
    2nd call of ``enc.0``; the parts of the keys ``node_keys`` builds.

    >>> scopes({"nodes": [{"kind": "op", "scope": "fc", "calls": [7], "group": "softmax#31"}]})
    [(['fc#0'], 'fc#0/softmax#0')]
    """
    counter, out = {}, []
    for n in snap["nodes"]:
        chain = _chain(n, counter)
        group = n.get("group")
        if group:
            # the group's "#k" is a process-wide counter: renumber per scope and op, in forward order
            scope = chain[-1] if chain else ""
            name, _, gid = group.partition("#")
            seen = counter.setdefault((scope, "/" + name), {})
            group = f"{scope}/{name}#{seen.setdefault(gid, len(seen))}"
        out.append((chain, group))
    return out


def scope_key(node):
    """A node's module scope with the call of each part (the snapshot's call ids), ``"cell#5.lin#6"``;
    a part without a call record is bare. One call of a module is one scope: the debugger's step over
    runs through the rest of this call, not into the next call of the same module.

    >>> scope_key({"scope": "cell.lin", "calls": [5, 6]}), scope_key({"scope": "cell", "calls": None})
    ('cell#5.lin#6', 'cell')
    """
    scope = node.get("scope") or ""
    calls = node.get("calls") or ()
    if not scope or not calls:
        return scope
    return ".".join(p if k >= len(calls) or calls[k] is None else f"{p}#{calls[k]}" for k, p in enumerate(scope.split(".")))


def boxes(snap):
    """Per node of a tape.v1 dict: the module boxes drawn around it, outermost first, as
    ``(id, kind, path, label)``; the rule of the viewer's graph model (``graph-model.ts``), same ids.

    Every call of a module is a box of its own (kind ``"module"``). A module called more than once
    within one call of its parent (an RNN cell in a loop, a block applied twice, a shared embedding)
    gets a ``"series"`` box holding its calls, ``cell ×5``, each labelled with its path and index,
    ``cell · call 3/5``; its parameters, shared by every call, sit in the series box once. A node
    inside a composite op (softmax) ends with that call's box, kind ``"group"``.

    >>> n = lambda calls: {"kind": "op", "scope": "cell", "calls": calls}
    >>> [b[-1][3] for b in boxes({"nodes": [n([4]), n([9]), {"kind": "param", "scope": "cell"}]})]
    ['cell · call 1/2', 'cell · call 2/2', 'cell ×2']
    """
    def raw_chain(n):
        parts = n["scope"].split(".") if n.get("scope") else []
        calls = n.get("calls") or ()
        raw, out = "", []
        for k in range(len(parts)):
            p = ".".join(parts[:k + 1])
            cid = calls[k] if k < len(calls) else None
            under = f"{raw}/{p}"
            raw = f"{under}@{'*' if cid is None else cid}"
            out.append((p, cid, under))
        return out

    chains = [raw_chain(n) for n in snap["nodes"]]
    calls_under = {}
    for chain in chains:
        for _, cid, under in chain:
            if cid is not None:
                calls_under.setdefault(under, set()).add(cid)
    out = []
    for n, chain in zip(snap["nodes"], chains):
        c, ctx = [], ""
        for p, cid, under in chain:
            calls = sorted(calls_under.get(under, ()))
            last = p.rsplit(".", 1)[-1]
            if len(calls) > 1:
                c.append((f"s:{p}{ctx}", "series", p, f"{last} ×{len(calls)}"))
                if cid is None:  # a parameter of the repeated module: shared by every call
                    break
                ctx += f"|{p}#{cid}"
                c.append((f"m:{p}{ctx}", "module", p, f"{p} · call {calls.index(cid) + 1}/{len(calls)}"))
            else:
                c.append((f"m:{p}{ctx}", "module", p, p))
        if n.get("group"):  # the composite op's call, innermost
            c.append((f"g:{n['scope']}\0{n['group']}{ctx}", "group", n["scope"], n["group"].split("#")[0]))
        out.append(c)
    return out


def _prefix(node, chain, group):
    kind = node["kind"]
    if kind == "param" and node.get("param"):
        return f"param|{node['param']}"
    scope = group or (chain[-1] if chain else "")
    if kind in ("leaf", "param"):
        name = node["name"]
        return f"leaf|{scope}|{'' if _POSITIONAL.fullmatch(name) else name}"
    if kind == "input":
        return f"input|{scope}|{node['name']}"
    if kind == "cut":
        return f"cut|{scope}|{node['op']}"
    return f"{scope}|{node['op']}"


def node_keys(snap):
    """The alignment key of every node of a tape.v1 dict, in node order (rule: the module docstring).

    >>> node_keys({"nodes": [{"kind": "param", "param": "fc.weight", "name": "weight", "scope": "fc"}]})
    ['param|fc.weight|0']
    """
    seen, out = {}, []
    for n, (chain, group) in zip(snap["nodes"], scopes(snap)):
        p = _prefix(n, chain, group)
        k = seen.get(p, 0)
        seen[p] = k + 1
        out.append(f"{p}|{k}")
    return out


def match(a, b):
    """``{a_node_id: b_node_id}`` for every node of tape.v1 dict ``a`` whose key is also in ``b``.

    Nodes of ``a`` missing from the result were removed in ``b``; nodes of ``b`` no value names were
    added. ``wb.viz.compare`` draws the union; the step slider maps later steps onto the first.

    >>> import workbench as wb
    >>> x = wb.ones(3, requires_grad=True)
    >>> a = wb.viz.snapshot(x.sum()).to_dict()
    >>> match(a, wb.viz.snapshot(x.exp().sum()).to_dict())   # the sum is still there, now fed by exp
    {'n0': 'n0', 'n1': 'n2'}
    """
    kb = dict(zip(node_keys(b), (n["id"] for n in b["nodes"])))
    out = {}
    for key, n in zip(node_keys(a), a["nodes"]):
        j = kb.get(key)
        if j is not None:
            out[n["id"]] = j
    return out
