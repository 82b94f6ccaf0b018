"""The static drawing of a tape: a pure-Python layered layout emitted as inline SVG.

It is the ``text/html`` of every snapshot bundle, what VS Code, Colab, nbviewer and GitHub show, and
``snapshot.save("tape.svg")``. Layout: nodes (or collapsed module boxes) are ranked by longest path
in forward order, module scopes as nested blocks of ranks (so their dashed boxes nest and never
overlap), each node placed under the mean of its inputs, and drawn top (inputs) to bottom (the loss). Beyond ``budget`` drawn boxes, module scopes collapse level by level into one box each;
what still does not fit is cut off with an "N more nodes" note, so the drawing stays bounded. Colours
are ``currentColor`` plus a neutral palette that reads on light and dark themes; every user string is
XML-escaped. A snapshot with an ``overlay`` has its boxes coloured by that measure (a collapsed box by
its nodes' aggregate), a legend under the title and, in the HTML form, a top-N table under the drawing.
"""
import hashlib
from html import escape

from . import align, measures

NODE_H = 38
RANK_GAP = 46
NODE_GAP = 18
CHAR_W = 6.6
EDGE_CHAR_W = 5.5  # 9 px monospace
VIRTUAL_W = 10  # the lane of a long edge through a rank
PAD = 16
# Outlines, icons and the fills of badges, whose text is white (at least 4.5:1 on each): one colour has to
# read on a light and a dark page alike, so text itself is drawn in currentColor
NAN_COLOR = "#d32f2f"
INF_COLOR = "#b85000"
ADDED_COLOR = "#2e7d32"  # compare: green and grey, clear of a ratio colouring's blue-white-red
NA_DIM = 0.7  # the text of a box without a value for the overlay: muted, yet 3:1 or more
FILL = {"param": "rgba(66,133,244,0.14)", "leaf": "rgba(66,133,244,0.14)", "input": "rgba(128,128,128,0.10)",
        "output": "rgba(52,168,83,0.16)", "op": "rgba(128,128,128,0.06)", "cut": "none",
        "module": "rgba(171,71,188,0.10)", "group": "rgba(255,193,7,0.12)"}


def _x(s):
    return escape(str(s), quote=True)


def _fmt(v):
    if isinstance(v, str):
        return v
    if v is None:
        return "–"
    a = abs(v)
    if a != 0 and (a >= 1e4 or a < 1e-3):
        return f"{v:.2e}"
    return f"{v:.4g}"


def _shape(s):
    """A shape as the interactive viewer writes it: "8×3", "scalar"."""
    return "×".join(str(d) for d in s) if len(s) else "scalar"


def _wrap(text, chars):
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > chars:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + ([line] if line else [])


def _bad(summary):
    if not summary:
        return 0, 0
    return summary["nan"], summary["inf"]


class _Unit:
    __slots__ = ("key", "boxes", "label", "sub", "kind", "members", "index", "rank", "x", "y", "w", "nan", "inf",
                 "cut", "tip", "value", "added", "removed", "badges", "parent", "r0", "h", "rx")

    def __init__(self, key, index):
        self.key = key
        self.members = []
        self.index = index
        self.rank = 0
        self.nan = self.inf = self.added = self.removed = 0
        self.cut = None
        self.tip = ""
        self.value = None


def _unit_key(node, chain, depth):
    """The unit a node is drawn in when module boxes collapse at ``depth`` (0: none, the node itself).

    ``chain`` is the node's boxes (``align.boxes``): it goes into its box at that depth, or its innermost
    one when it is not as deep, except a series box (a parameter shared by a module's calls stays a node,
    fed to every call's box)."""
    if not depth:
        return node["id"]
    if chain:
        box = chain[min(depth, len(chain)) - 1]
        if len(chain) >= depth or box[1] != "series":
            return box[0]
    if node["group"]:
        return "g:" + node["group"]
    return node["id"]


def _choose_units(nodes, chains, budget):
    if len(nodes) <= budget:
        return 0
    max_depth = max(map(len, chains), default=0)
    best, count = 1, 0
    for depth in range(max_depth, 0, -1):
        count = len({_unit_key(n, c, depth) for n, c in zip(nodes, chains)})
        if count <= budget:
            best = depth
            break
    if count < 8 and best < max_depth:  # one or two giant boxes say little: show the next level, cut off
        best += 1
    return best


def layout(snap, budget=60, top=22):
    """Units (nodes or collapsed boxes) with rank/x/y, the unit edges, how many nodes were left out, and the
    dashed boxes of the module scopes (``(label, x0, y0, x1, y1, id)``, outer before inner; ``id`` as in
    ``align.boxes``, one box per call of a module).

    Module scopes are laid out as nested blocks (a compound layered layout): a scope's nodes are ranked
    among themselves, and a scope takes a band of consecutive ranks in its parent, so sibling scopes stack
    or sit side by side and never overlap, and a scope's box holds its own nodes only.

    >>> snap = {"nodes": [{"id": "a", "kind": "leaf", "scope": "", "group": None, "op": "", "name": "a",
    ...   "shape": [], "dtype": "float32", "value": None, "grad": None, "cut": None, "site": None}], "edges": [], "modules": []}
    >>> units, edges, hidden, boxes = layout(snap)
    >>> (len(units), hidden, boxes)
    (1, 0, [])
    """
    nodes = snap["nodes"]
    chains = [[b for b in c if b[1] != "group"] for c in align.boxes(snap)]  # composite ops: collapsed only
    depth = _choose_units(nodes, chains, budget)
    types = {m["path"]: m["type"] for m in snap.get("modules", ())}
    info = {b[0]: b for c in chains for b in c}
    noted = {n.get("node") for n in snap.get("notes") or ()}
    units = {}
    owner = {}
    for i, (n, chain) in enumerate(zip(nodes, chains)):
        k = _unit_key(n, chain, depth)
        u = units.get(k)
        if u is None:
            u = units[k] = _Unit(k, i)
            u.boxes = chain
        u.members.append(n)
        owner[n["id"]] = u
    ordered = sorted(units.values(), key=lambda u: u.index)
    hidden = 0
    if len(ordered) > budget:
        keep = ordered[:budget]
        hidden = sum(len(u.members) for u in ordered[budget:])
        ordered = keep
    drawn = {id(u) for u in ordered}
    for u in ordered:
        _describe(u, types, noted, info)
    # unit edges, first shape label wins; edges to hidden units are dropped
    edges = {}
    for e in snap["edges"]:
        a, b = owner.get(e["source"]), owner.get(e["target"])
        if a is None or b is None or a is b or id(a) not in drawn or id(b) not in drawn:
            continue
        k = (id(a), id(b))
        if k not in edges:  # scalars carry no edge label, as in the viewer
            edges[k] = (a, b, _shape(e["shape"]) if e["shape"] else "")
    root = _scope_tree(ordered, types, depth > 0)
    for a, b, _label in edges.values():
        level, pa, pb = _split(a, b)
        level.pairs.append((pa, pb))
    _rank(root)
    _place_ranks(root, 0)
    # an edge over several ranks runs through a thin virtual unit on each rank between, held by the scope
    # it passes through there, so placement leaves it a lane of its own instead of drawing it across nodes
    via = {}
    segments = []
    for k, (a, b, _label) in edges.items():
        chain = [_lane(a, b, r) for r in range(a.rank + 1, b.rank)]
        via[k] = chain
        path = [a] + chain + [b]
        segments += zip(path, path[1:])
    for p, q in segments:
        level, pp, qq = _split(p, q)
        level.segs.append((pp, p, qq, q))
    _place(root)
    ys = _rank_ys(root, PAD + top)
    boxes = []
    _absolute(root, PAD, ys, boxes)
    return ordered, [(a, b, label, via[k]) for k, (a, b, label) in edges.items()], hidden, boxes


GPAD = 8  # a scope box's margin around its content
SCOPE_CHAR_W = 5.4  # its 9 px label
NEST_TOP, NEST_BOTTOM = 12, 6  # the extra margin of a box around a box that starts (ends) on its row


class _Group:
    __slots__ = ("path", "label", "parent", "items", "index", "pairs", "segs", "r0", "h", "rx", "w", "k_top",
                 "k_bottom", "r0_abs", "series")

    def __init__(self, path, label, parent, index, series=None):
        self.path, self.label, self.parent, self.index, self.series = path, label, parent, index, series
        self.items, self.pairs, self.segs = [], [], []
        self.r0, self.h, self.rx, self.w = 0, 1, 0.0, 0.0


def _box_label(box, types):
    """What a module box says: its path (a call: path and index; a series: ``cell ×8``) and class."""
    _id, _kind, path, label = box
    return f"{label} ({types[path]})" if path in types else label


def _scope_tree(units, types, collapsed):
    """The module boxes of the drawn nodes as a tree of ``_Group``; collapsed boxes stay at the top.

    A series of calls is no box when open: its calls are boxes side by side with what runs between them
    (a box takes consecutive ranks, so one around every call would force them onto one band), and the
    parameters the calls share are drawn once, in the box around the series."""
    root = _Group("", "", None, 0)
    groups = {"": root}
    for u in units:
        g, series = root, None
        if not collapsed:
            for box in u.boxes:
                if box[1] == "series":
                    series = box[0]
                    continue
                child = groups.get(box[0])
                if child is None:
                    child = groups[box[0]] = _Group(box[0], _box_label(box, types), g, u.index, series)
                    g.items.append(child)
                g, series = child, None
        g.items.append(u)
        u.parent = g
    return root


def _chain(x):
    """``x`` and its scopes, innermost first."""
    out = [x]
    while x.parent is not None:
        x = x.parent
        out.append(x)
    return out


def _split(a, b):
    """The innermost scope holding both ``a`` and ``b``, and its items that hold ``a`` and ``b``."""
    ca, cb = _chain(a)[::-1], _chain(b)[::-1]
    i = 0
    while i + 1 < len(ca) and i + 1 < len(cb) and ca[i + 1] is cb[i + 1]:
        i += 1
    return ca[i], ca[i + 1], cb[i + 1]


def _rank(g):
    """Ranks within each scope, inner scopes first: longest path in forward order over the scope's items
    (a nested scope counts as one item ``h`` ranks tall), then each item as late as its consumers allow
    (leaves and weights sit just above their consumer). Back edges of collapsed cycles are ignored."""
    for c in g.items:
        if isinstance(c, _Group):
            _rank(c)
        else:
            c.r0, c.h = 0, 1
    preds, succs = {id(c): [] for c in g.items}, {id(c): [] for c in g.items}
    # forward order is topological for nodes, not for boxes (a box's index is its first member's): a
    # parameter recorded after the first op of the call using it still goes above that call; only an
    # edge from a source can be taken against that order without making a cycle
    fed = {id(b) for _, b in g.pairs}
    for a, b in g.pairs:
        if a.index < b.index or (id(a) not in fed and a is not b):
            preds[id(b)].append(a)
            succs[id(a)].append(b)
    items = sorted(g.items, key=lambda c: c.index)
    for c in items:
        c.r0 = max((p.r0 + p.h for p in preds[id(c)]), default=0)
    for c in reversed(items):
        later = [s.r0 for s in succs[id(c)]]
        if later:
            c.r0 = max(c.r0, min(later) - c.h)
    g.h = max((c.r0 + c.h for c in items), default=1)
    if g.parent is not None:  # its box's margins, wider around a box that starts or ends on the same row
        inner = [c for c in g.items if isinstance(c, _Group)]
        g.k_top = max((c.k_top + 1 for c in inner if c.r0 == 0), default=0)
        g.k_bottom = max((c.k_bottom + 1 for c in inner if c.r0 + c.h == g.h), default=0)


def _place_ranks(g, base):
    for c in g.items:
        if isinstance(c, _Group):
            _place_ranks(c, base + c.r0)
        else:
            c.rank = base + c.r0
    g.r0_abs = base


def _lane(a, b, r):
    """The virtual unit of edge ``a`` -> ``b`` on rank ``r``, in the innermost scope the edge is in there."""
    level, pa, pb = _split(a, b)
    holder = level
    if isinstance(pa, _Group) and r <= pa.r0_abs + pa.h - 1:  # still inside a's scopes: the innermost that ends below r
        holder = next(s for s in _chain(a)[1:] if r <= s.r0_abs + s.h - 1)
    elif isinstance(pb, _Group) and r >= pb.r0_abs:  # already inside b's: the innermost that starts above r
        holder = next(s for s in _chain(b)[1:] if r >= s.r0_abs)
    v = _Unit(None, a.index)
    v.kind, v.w, v.rank, v.label, v.sub = "virtual", VIRTUAL_W, r, "", ""
    v.parent, v.r0, v.h = holder, r - holder.r0_abs, 1
    holder.items.append(v)
    return v


def _offset(item, x):
    """Where unit ``x`` (inside ``item``) starts, from ``item``'s left edge."""
    pos = 0.0
    while x is not item:
        pos += x.rx
        x = x.parent
        pos += GPAD
    return pos


def _place(g):
    """x of each item in its scope, inner scopes first. Items fed from inside the scope go rank by rank
    under the mean of the ends of their placed inputs; then those fed from outside it (weights, inputs,
    the lanes of edges coming in) go, from the bottom rank up, above the mean of their consumers. Each is
    moved aside as little as the items it would overlap on any of its ranks require."""
    for c in g.items:
        if isinstance(c, _Group):
            _place(c)
    into, out = {}, {}
    for p_item, p, c_item, c in g.segs:
        into.setdefault(id(c_item), []).append((p_item, p, c))
        out.setdefault(id(p_item), []).append((c_item, c, p))
    taken = {}  # rank -> [(x0, x1)]
    done = set()

    def put(batch, ends_of):
        wants = []
        for c in batch:
            ends = [e for e in ends_of(c) if e is not None]
            wants.append((sum(ends) / len(ends) if ends else None, c))
        # a lane first, so that an edge runs straight where it can and the nodes move aside
        wants.sort(key=lambda t: (t[0] is None, getattr(t[1], "kind", "") != "virtual", t[0] or 0.0, t[1].index))
        for want, c in wants:
            spans = [iv for k in range(c.r0, c.r0 + c.h) for iv in taken.get(k, ())]
            if want is None:
                want = max((x1 + NODE_GAP for _, x1 in spans), default=0.0)
            c.rx = min((x for x in [want] + [x1 + NODE_GAP for _, x1 in spans] + [x0 - NODE_GAP - c.w for x0, _ in spans]
                        if all(x + c.w + NODE_GAP <= x0 or x1 + NODE_GAP <= x for x0, x1 in spans)),
                       key=lambda x: abs(x - want))
            for k in range(c.r0, c.r0 + c.h):
                taken.setdefault(k, []).append((c.rx, c.rx + c.w))
            done.add(id(c))

    def below(c):
        # a call of a module fed by an earlier call of it goes right under that one, its box starting
        # where that one's starts: under the node that feeds it, each call of a GRU cell stepped 160 px
        # sideways (the new state leaves one call and enters the next at different places in the box);
        # centred, a first call made wider by its initial state put the rest 20 px in
        series = getattr(c, "series", None)
        calls = [p_item for p_item, _, _ in into[id(c)]
                 if series and id(p_item) in done and getattr(p_item, "series", None) == series]
        if calls:
            return [max(calls, key=lambda p: p.r0).rx]
        # where the ends of c's placed inputs put it, its units' where it has any: the lanes of the edges
        # from sources (the weights a GRU cell's calls share) are placed before their sources, side by
        # side, so their mean pulled the last calls out of the column of the first ones
        ends = [(p.kind == "virtual", p_item.rx + _offset(p_item, p) + p.w / 2 - _offset(c, q) - q.w / 2)
                for p_item, p, q in into[id(c)] if id(p_item) in done]
        return [x for lane, x in ends if not lane] or [x for _, x in ends]

    def above(c):  # where its placed consumers put it
        return [s_item.rx + _offset(s_item, q) + q.w / 2 - _offset(c, p) - p.w / 2 if id(s_item) in done else None
                for s_item, q, p in out.get(id(c), ())]

    fed, sources = {}, {}
    for c in g.items:
        (fed if id(c) in into else sources).setdefault(c.r0, []).append(c)
    for r in sorted(fed):
        put(fed[r], below)
    for r in sorted(sources, reverse=True):
        put(sources[r], above)
    left = min((c.rx for c in g.items), default=0.0)
    for c in g.items:
        c.rx -= left
    inner = max((c.rx + c.w for c in g.items), default=0.0)
    if g.parent is None:
        g.w = inner
        return
    # room for the label on one side of the middle, where an edge into a one-node box runs; content centred
    g.w = max(inner + 2 * GPAD, 2 * (SCOPE_CHAR_W * len(g.label) + 10))
    for c in g.items:
        c.rx += (g.w - 2 * GPAD - inner) / 2


def _rank_ys(root, y0):
    """The y of each rank: RANK_GAP apart, more above (below) a row where nested boxes start (end)."""
    above, below = {}, {}

    def walk(g):
        for c in g.items:
            if isinstance(c, _Group):
                r0, r1 = c.r0_abs, c.r0_abs + c.h - 1
                above[r0] = max(above.get(r0, 0), c.k_top)
                below[r1] = max(below.get(r1, 0), c.k_bottom)
                walk(c)
    walk(root)
    ys, y = [], y0 + NEST_TOP * above.get(0, 0)
    for r in range(root.h):
        ys.append(y)
        y += NODE_H + RANK_GAP + NEST_TOP * above.get(r + 1, 0) + NEST_BOTTOM * below.get(r, 0)
    return ys


def _absolute(g, x, ys, boxes):
    """Page coordinates of every unit, and the scope boxes (outer before inner)."""
    if g.parent is not None:
        r1 = g.r0_abs + g.h - 1
        boxes.append((g.label, x, ys[g.r0_abs] - 14 - NEST_TOP * g.k_top, x + g.w,
                      ys[r1] + NODE_H + 6 + NEST_BOTTOM * g.k_bottom, g.path))
        x += GPAD
    for c in g.items:
        if isinstance(c, _Group):
            _absolute(c, x + c.rx, ys, boxes)
        else:
            c.x, c.y = x + c.rx, ys[c.rank]


def compare_counts(cmp):
    """The header line of a comparison: "2 added, 1 removed, 3 changed by > 2x"."""
    c = cmp["counts"]
    return f"{c['added']} added, {c['removed']} removed, {c['changed']} changed by > {cmp['factor']:g}×"


_BOX_KEYS = ("m:", "s:", "g:")  # a unit that is a collapsed box: a module call, a series of calls, a composite op


def _describe(u, types, noted, info):
    m = u.members
    u.added = sum(n.get("diff") == "added" for n in m)
    u.removed = sum(n.get("diff") == "removed" for n in m)
    if len(m) == 1 and not u.key.startswith(_BOX_KEYS):
        n = m[0]
        u.kind = n["kind"]
        # the viewer's words: the node's name (MulBackward0, a parameter's path), then "mul → 8×3"
        u.label = n.get("param") or n["name"] or n["op"] or n["id"]
        sub = f"{n['op']} → {_shape(n['shape'])}" if n["kind"] in ("op", "output") else \
            f"{n['kind']} {_shape(n['shape'])} {n['dtype']}".strip()
        v, g = n["value"], n["grad"]
        if v and v["values"] is not None and v["numel"] == 1:  # micrograd-style numbers for scalars
            sub += f" · data {_fmt(v['values'][0])}"
            if g and g["values"] is not None:
                sub += f" | grad {_fmt(g['values'][0])}"
        u.sub = sub
        u.cut = n["cut"]
        u.nan, u.inf = map(sum, zip(_bad(v), _bad(g)))
        where = u.boxes[-1][3] if u.boxes and u.boxes[-1][2] == n["scope"] else n["scope"]  # "cell · call 3/8"
        tip = [n["name"], f"op: {n['op']}" if n["op"] else "", f"scope: {where}" if where else ""]
        if n["site"]:
            f = n["site"]["file"]
            tip.append(f"{f}, line {n['site']['line']}" if f.startswith("Cell In[") else
                       f"{f}:{n['site']['line']} in {n['site']['function']}")
        if n["cut"]:
            tip.append("cut: " + n["cut"]["detail"])
        u.tip = "\n".join(t for t in tip if t)
    else:
        box = info.get(u.key)
        if box is not None:
            _id, series, path, label = box
            u.kind = "module"
            u.label = f"▸ {label}"
            kind = types.get(path, "module")
            if series == "series":
                kind += f" · series of {label.rsplit('×', 1)[1]} calls"
        else:
            path = u.key[2:]
            u.kind = "group"
            u.label = "▸ " + path.split("#", 1)[0].rsplit("\0", 1)[-1]
            kind = "composite op"
        u.sub = f"{kind} · {len(m)} node{'' if len(m) == 1 else 's'}"
        for n in m:
            a, b = map(sum, zip(_bad(n["value"]), _bad(n["grad"])))
            u.nan += a
            u.inf += b
            if n["cut"] and u.cut is None:
                u.cut = n["cut"]
        u.tip = f"{u.label}: {len(m)} nodes collapsed"
    # the badges sit on the top edge, right of its middle where the incoming arrows end: a box is
    # wide enough to hold them there
    only = len(m) == 1 and not u.key.startswith(_BOX_KEYS)
    badges = [("⚑ origin", NAN_COLOR)] if any(n["id"] in noted for n in m) else []
    if u.nan:
        badges.append(("NaN", NAN_COLOR))
    if u.inf:
        badges.append(("Inf", INF_COLOR))
    if u.cut:
        badges.append(("✂ " + u.cut["reason"], None))
    if u.added:
        badges.append(("+ added" if only else f"+{u.added}", ADDED_COLOR))
    if u.removed:
        badges.append(("− removed" if only else f"−{u.removed}", None))
    u.badges = badges
    u.w = max(70.0, CHAR_W * max(len(u.label), len(u.sub)) + 20,
              2 * (sum(_badge_w(t) + 3 for t, _ in badges) + BADGE_CLEAR))


BADGE_CLEAR = 10  # between the top edge's middle (where arrows end) and the first badge


def _badge_w(text):
    return CHAR_W * len(text) + 6


def _bezier(x1, y1, x2, y2, t):
    my = (y1 + y2) / 2
    c = 1 - t
    return (c ** 3 * x1 + 3 * c * c * t * x1 + 3 * c * t * t * x2 + t ** 3 * x2,
            c ** 3 * y1 + 3 * c * c * t * my + 3 * c * t * t * my + t ** 3 * y2)


def _pieces(a, b, lanes):
    """An edge as its curves (x1, y1, x2, y2), each leaving and arriving vertically: bottom of ``a`` to the
    top of its first lane, then through each lane (a straight run down it) to the next, to the top of ``b``."""
    stops = [a] + list(lanes) + [b]
    return [(p.x + p.w / 2, p.y + NODE_H, q.x + q.w / 2, q.y - (1 if q is b else 0)) for p, q in zip(stops, stops[1:])]


def _sample(piece, n=16):
    return [_bezier(*piece, k / n) for k in range(n + 1)]


def _overlaps(box, boxes):
    x0, y0, x1, y1 = box
    return any(x0 < b[2] and b[0] < x1 and y0 < b[3] and b[1] < y1 for b in boxes)


def text_boxes(units):
    """The boxes (x0, y0, x1, y1) that node texts and badges take, for placing edge labels around them."""
    boxes = []
    for u in units:
        boxes.append((u.x, u.y - 14, u.x + u.w, u.y + NODE_H))
    return boxes


def render_svg(snap, budget=60, standalone=False):
    """The SVG text of a tape.v1 snapshot (for ``text/html`` or a ``.svg`` file).

    Names and shapes are the interactive viewer's ("MulBackward0", "mul → 8×3"); the snapshot's notes
    (a NaN loss) come first, in the error colour; an edge label that would cover another label or a
    node moves along its edge or, with no room, stays in the edge's tooltip.

    >>> snap = {"title": "t", "nodes": [], "edges": [], "modules": []}
    >>> render_svg(snap, standalone=True).startswith("<svg")
    True
    """
    notes = snap.get("notes") or ()
    note_lines = [(n["level"], line) for n in notes for line in _wrap(("⚠ " if n["level"] == "error" else "ⓘ ") + n["text"], 110)]
    if snap.get("compare"):  # what the marks mean, said in words once (not by colour alone)
        note_lines.insert(0, ("compare", f"{compare_counts(snap['compare'])} · + added: only in b (bold outline) · "
                                         "− removed: only in a (dashed, faded)"))
    notes_h = 15 * len(note_lines) + 10 if note_lines else 0
    key = snap.get("overlay")
    m = measures.measure(snap, key) if key in measures.known(snap) else None
    units, edges, hidden, boxes = layout(snap, budget, top=22 + notes_h + (LEGEND_H if m else 0))
    sc = None
    if m is not None:
        for u in units:
            u.value = measures.aggregate(m, [n["id"] for n in u.members])
        sc = measures.Scale(m.scale, [u.value for u in units])
        legend, legend_w = _legend(m, sc, len(units), PAD, PAD + 12 + notes_h)
    width = max([u.x + u.w for u in units] + [b[3] for b in boxes] + [PAD + CHAR_W * max([len(t) for _, t in note_lines], default=0)]
                + ([PAD + legend_w] if m else []), default=200) + PAD
    height = max([u.y + NODE_H for u in units] + [b[4] for b in boxes], default=40) + PAD + (18 if hidden else 0)
    label = _x(snap.get("title", "tape"))
    # the header (title, notes, legend) above the drawing's top row: the HTML form keeps it out of the scroll box
    cut = PAD + 22 + notes_h + (LEGEND_H if m else 0) - 15
    head = [f'<text x="{PAD}" y="{PAD + 4}" font-size="12" font-weight="bold" fill="currentColor">'
            f'{_x(snap.get("title", ""))}</text>']
    for k, (level, line) in enumerate(note_lines):
        # an error note's ⚠ in the error colour, its words in the page's
        icon, rest = ('<tspan fill="%s" font-weight="bold">⚠</tspan>' % NAN_COLOR, line[1:]) if line.startswith("⚠") else ("", line)
        head.append(f'<text class="wb-note" x="{PAD}" y="{PAD + 21 + 15 * k}" fill="currentColor">{icon}{_x(rest)}</text>')
    if m is not None:
        head.append(legend)
    out = ['<defs><marker id="wb-arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="currentColor" fill-opacity="0.55"/>'
           '</marker></defs>']
    pieces = [_pieces(a, b, lanes) for a, b, _label, lanes in edges]
    points = [p for ps in pieces for piece in ps for p in _sample(piece)]
    taken = text_boxes(units)
    for path, x0, y0, x1, y1, box_id in boxes:
        # the label in the box's top margin, where no edge runs through it (an edge into the box mostly)
        lw = SCOPE_CHAR_W * len(path)
        spots = [x0 + 4, x1 - 4 - lw] + sorted(px + 5 for px, py in points if y0 <= py <= y0 + 13 and x0 < px < x1)
        free = [lx for lx in spots if lx + lw <= x1 - 2 and not any(lx - 2 <= px <= lx + lw + 2 and y0 <= py <= y0 + 13
                                                                      for px, py in points)]
        lx = free[0] if free else x0 + 4
        taken.append((lx, y0 + 1, lx + lw, y0 + 12))
        out.append(f'<g class="wb-scope" data-box="{_x(box_id)}"><rect x="{x0:.1f}" y="{y0:.1f}" width="{x1 - x0:.1f}" height="{y1 - y0:.1f}" '
                   f'rx="8" fill="{FILL["module"]}" fill-opacity="0.5" stroke="currentColor" stroke-opacity="0.25" '
                   f'stroke-dasharray="4 3"/><text x="{lx:.1f}" y="{y0 + 10:.1f}" font-size="9" '
                   f'fill="currentColor" fill-opacity="0.72">{_x(path)}</text></g>')
    for (a, b, label, lanes), ps in zip(edges, pieces):
        d = f"M{ps[0][0]:.1f},{ps[0][1]:.1f}"
        for k, (px1, py1, px2, py2) in enumerate(ps):
            if k:
                d += f" L{px1:.1f},{py1:.1f}"
            pm = (py1 + py2) / 2
            d += f" C{px1:.1f},{pm:.1f} {px2:.1f},{pm:.1f} {px2:.1f},{py2:.1f}"
        spot = None
        if label:
            lw = len(label) * EDGE_CHAR_W
            for t in (0.5, 0.35, 0.65, 0.2, 0.8):
                px, py = _bezier(*ps[0], t)
                box = (px + 3, py - 7, px + 3 + lw, py + 4)
                if not _overlaps(box, taken):
                    spot = box
                    taken.append(box)
                    break
        tip = f"<title>{_x(label)}</title>" if label and spot is None else ""
        out.append(f'<path d="{d}" fill="none" stroke="currentColor" stroke-opacity="0.45" '
                   f'marker-end="url(#wb-arrow)">{tip}</path>')
        if spot is not None:
            out.append(f'<text class="wb-edge-label" x="{spot[0]:.1f}" y="{spot[3] - 1:.1f}" font-size="9" '
                       f'fill="currentColor" fill-opacity="0.72">{_x(label)}</text>')
    noted = {n.get("node") for n in notes}
    roots = set(snap.get("roots", ()))
    # what matters gets an id, and a tall drawing a "jump to" line of links to them (no script needed)
    token = hashlib.sha1("\0".join([snap.get("title", "")] + [n["id"] for n in snap["nodes"]]).encode()).hexdigest()[:8]
    jumps = _jump_targets(units, noted, roots)
    anchor = {id(u): f"wb-{token}-{k}" for k, (u, _) in enumerate(jumps)}
    for u in units:
        origin = any(m["id"] in noted for m in u.members)  # where the note says the NaN started
        bad = u.nan or u.inf or origin
        stroke = NAN_COLOR if u.nan or origin else INF_COLOR if u.inf else "currentColor"
        only = len(u.members) == 1 and not u.key.startswith(_BOX_KEYS)
        added, removed = only and u.added, only and u.removed
        dash = ' stroke-dasharray="5 3"' if u.cut or removed or u.kind in ("module", "group") else ""
        if added and not bad:
            stroke = ADDED_COLOR
        fill, dim, tip = FILL.get(u.kind, "none"), 1.0, u.tip
        if m is not None:  # the measure's colour; n/a keeps the plain box with muted text
            tint = sc.tint(u.value)
            # an added or removed node has no ratio by nature: not muted as n/a (removed is faded once, below)
            fill, dim = (measures.rgba(tint), 1.0) if tint else (FILL["op"], 1.0 if added or removed else NA_DIM)
            tip += f"\n{m.label}: {measures.format_value(u.value, m.unit, m.scale)}"
        diff = " wb-added" if added else " wb-removed" if removed else ""
        diff += " wb-na" if dim < 1 else ""
        fade = ' opacity="0.7"' if removed else ""
        gid = f' id="{anchor[id(u)]}"' if id(u) in anchor else ""
        gid += f' data-node="{_x(u.members[0]["id"])}"' if only else ""
        out.append(f'<g{gid} class="wb-{_x(u.kind)}{diff}"{fade}><title>{_x(tip)}</title>'
                   f'<rect x="{u.x:.1f}" y="{u.y:.1f}" width="{u.w:.1f}" height="{NODE_H}" rx="6" '
                   f'fill="{fill}" stroke="{stroke}" stroke-opacity="{1 if bad or added else 0.6}"'
                   f' stroke-width="{3 if origin or added else 2 if bad or removed else 1}"{dash}/>')
        cx = u.x + u.w / 2
        out.append(f'<text x="{cx:.1f}" y="{u.y + 15:.1f}" text-anchor="middle" fill="currentColor" '
                   f'fill-opacity="{dim:g}" font-weight="{"bold" if u.kind in ("module", "output") else "normal"}">'
                   f'{_x(u.label)}</text>')
        out.append(f'<text x="{cx:.1f}" y="{u.y + 29:.1f}" text-anchor="middle" font-size="9.5" '
                   f'fill="currentColor" fill-opacity="{0.8 * dim:.2g}">{_x(u.sub)}</text>')
        # a coloured badge is a solid pill with white text; a plain one (cut, removed) an outlined pill
        bx = cx + BADGE_CLEAR
        for text, color in u.badges:
            bw = _badge_w(text)
            pill = f'fill="{color}" stroke="{color}"' if color else 'fill="currentColor" fill-opacity="0.12" stroke="currentColor"'
            # a solid pill straddles the box's top edge; a see-through one sits on it, so no line runs through its text
            y = u.y - 7 if color else u.y - 13
            out.append(f'<rect class="wb-badge" x="{bx:.1f}" y="{y:.1f}" width="{bw:.1f}" height="13" rx="3" {pill}/>'
                       f'<text x="{bx + 3:.1f}" y="{y + 10:.1f}" font-size="9" '
                       f'fill="{"white" if color else "currentColor"}">{_x(text)}</text>')
            bx += bw + 3
        out.append("</g>")
    if hidden:
        out.append(f'<text x="{PAD}" y="{height - PAD / 2:.0f}" fill="currentColor" fill-opacity="0.7">'
                   f'… {hidden} more nodes (open the interactive viewer, or save as HTML, to see them)</text>')
    if standalone:
        return _svg(width, height, f"0 0 {width:.0f} {height:.0f}", label, head + out)
    head_svg = _svg(width, cut, f"0 0 {width:.0f} {cut}", label, head)
    k, end = first_screen(units, cut, height, noted, roots)
    graph = _svg(width * k, (height - cut) * k, f"0 {cut} {width:.0f} {height - cut:.0f}", f"{label}: graph", out,
                 "; flex: none")
    # opened at the end that holds what matters: a column-reverse box starts scrolled to its bottom
    box = f"overflow: auto; max-height: {BOX_H}px; width: fit-content; max-width: 100%"
    if end == "bottom":
        box += "; display: flex; flex-direction: column-reverse; align-items: flex-start"
    links = ""
    if (BOX_H - 2) / (height - cut) < READABLE_K and jumps:  # it scrolls: each mark one click away
        # in the page's text colour (underlined), which reads on a light and a dark page alike
        links = " · ".join(f'<a href="#{anchor[id(u)]}" style="color: inherit">{_x(text)}</a>' for u, text in jumps)
        links = f'<div class="wb-static-jump" style="font-size: 12px; margin: 0 0 4px 16px">jump to: {links}</div>'
    drawing = (f'<div class="wb-static-tape">{head_svg}{links}<div class="wb-static-graph" style="{box}">{graph}'
               '</div>')
    # the table under the scrolling drawing, so it is seen without scrolling it
    return drawing + (_top_table(m, snap, sc) if m is not None else "") + "</div>"


def _jump_targets(units, noted, roots, most=12):
    """The units worth a link, top to bottom, with its words: compare's added and removed nodes, where a
    NaN started, and the loss."""
    out = []
    for u in sorted(units, key=lambda u: (u.y, u.x)):
        name = u.label.removeprefix("▸ ")
        if any(n["id"] in noted for n in u.members):
            out.append((u, f"⚑ origin {name}"))
        elif u.added or u.removed:
            out.append((u, " ".join(filter(None, ["+ added" if u.added else "", "− removed" if u.removed else "", name]))))
        elif any(n["id"] in roots for n in u.members):
            out.append((u, f"loss {name}"))
    return out[:most]


def _svg(width, height, view, label, parts, style=""):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" viewBox="{view}" '
            f'role="img" aria-label="{label}" font-family="ui-monospace, SFMono-Regular, Menlo, Consolas, monospace" '
            f'font-size="11" style="color: inherit; max-width: 100%; height: auto{style}">{"".join(parts)}</svg>')


BOX_H = 640  # the HTML form's drawing box, in CSS pixels
READABLE_K = 0.8  # the least it shrinks a drawing to fit that box: 11 px text drawn at 9 px


def first_screen(units, y0, y1, marked, roots):
    """The scale the HTML form draws the graph (``y0``..``y1``) at, and the end its box opens at.

    A graph that fits the box at a readable scale is drawn whole. A taller one opens, as the live viewer
    does, on what matters: the units holding a ``marked`` node (compare's added and removed nodes, where a
    NaN started) or, with none, the loss (a ``roots`` node); at the bottom (where the loss is) unless only
    the top holds them all, shrunk so that all of them are on the first screen where a readable scale allows.

    >>> top, loss = _Unit("a", 0), _Unit("b", 1)
    >>> top.y, loss.y = 40, 900
    >>> first_screen([top, loss], 0, 960, set(), set())  # the loss at the bottom of a 960 px drawing
    (1.0, 'bottom')
    >>> top.added = 1
    >>> first_screen([top, loss], 0, 960, set(), set())  # an added node at the top
    (1.0, 'top')
    """
    view = BOX_H - 2
    if view / (y1 - y0) >= READABLE_K:
        return min(1.0, view / (y1 - y0)), "top"
    marks = [u for u in units if u.added or u.removed or any(n["id"] in marked for n in u.members)] or \
        [u for u in units if any(n["id"] in roots for n in u.members)] or units[-1:]
    lo = min((u.y - 14 for u in marks), default=y1)  # the badges sit above the box
    hi = max((u.y + NODE_H + 6 for u in marks), default=y1)
    k_bottom = max(READABLE_K, min(1.0, view / (y1 - lo)))
    k_top = max(READABLE_K, min(1.0, view / (hi - y0)))
    if y0 + view / k_top >= hi and not (y1 - view / k_bottom <= lo and k_bottom >= k_top):
        return k_top, "top"
    return k_bottom, "bottom"


LEGEND_H = 26
RAMP_W, RAMP_STEPS = 140, 20


def _legend(m, sc, shown, x, y):
    """The legend line of an overlay (name, colour bar with its end values, 0 and n/a swatches) and its width."""
    head = f"colour: {m.label}" + (" (log₂ scale)" if m.scale == "ratio" else " (log scale)" if m.scale == "log" else "")
    parts = [f'<g class="wb-legend"><text x="{x}" y="{y + 10}" fill="currentColor" font-weight="bold">{_x(head)}</text>']
    cx = x + CHAR_W * len(head) + 12
    if sc.lo is not None:
        lo, hi = measures.format_value(sc.lo, m.unit, m.scale), measures.format_value(sc.hi, m.unit, m.scale)
        parts.append(f'<text x="{cx:.1f}" y="{y + 10}" fill="currentColor" fill-opacity="0.75">{_x(lo)}</text>')
        cx += CHAR_W * len(lo) + 6
        step = RAMP_W / RAMP_STEPS
        for i in range(RAMP_STEPS):
            t = (i + 0.5) / RAMP_STEPS
            if m.scale == "ratio":
                tint = sc.tint(2 ** ((2 * t - 1) * sc.span))
            else:
                tint = measures.ramp(t), round(measures.MIX_LO + (measures.MIX_HI - measures.MIX_LO) * t)
            parts.append(f'<rect x="{cx + i * step:.1f}" y="{y + 1}" width="{step + 0.3:.1f}" height="11" '
                         f'fill="{measures.rgba(tint)}"/>')
        parts.append(f'<rect x="{cx:.1f}" y="{y + 1}" width="{RAMP_W}" height="11" fill="none" stroke="currentColor" '
                     'stroke-opacity="0.4"/>')
        if m.scale == "ratio":
            parts.append(f'<line x1="{cx + RAMP_W / 2:.1f}" x2="{cx + RAMP_W / 2:.1f}" y1="{y - 1}" y2="{y + 14}" '
                         'stroke="currentColor" stroke-opacity="0.6"><title>1×: no change</title></line>')
        cx += RAMP_W + 6
        parts.append(f'<text x="{cx:.1f}" y="{y + 10}" fill="currentColor" fill-opacity="0.75">{_x(hi)}</text>')
        cx += CHAR_W * len(hi) + 14
    swatches = []
    if sc.zeros:
        swatches.append((measures.rgba((measures.RAMP[0], measures.MIX_ZERO)), f"0 ({sc.zeros})"))
    if sc.missing:
        swatches.append(("none", f"n/a: all {shown}" if sc.missing == shown else f"n/a ({sc.missing})"))
    for fill, text in swatches:
        parts.append(f'<rect x="{cx:.1f}" y="{y + 1}" width="11" height="11" fill="{fill}" stroke="currentColor" '
                     f'stroke-opacity="0.4"/><text x="{cx + 15:.1f}" y="{y + 10}" fill="currentColor" '
                     f'fill-opacity="0.75">{_x(text)}</text>')
        cx += 15 + CHAR_W * len(text) + 12
    parts.append("</g>")
    return "".join(parts), cx - x


MONO = "font-family: var(--jp-code-font-family, ui-monospace, Menlo, Consolas, monospace)"


def _top_table(m, snap, sc, n=10):
    """The HTML "top N" table of an overlay: the nodes with the largest values, where they are, the value."""
    rows, count = measures.top_n(m, n)
    by_id = {d["id"]: d for d in snap["nodes"]}
    missing = len(m.values) - count
    cell = 'style="padding: 1px 10px 1px 0; text-align: left"'
    mono = f'style="padding: 1px 10px 1px 0; text-align: left; {MONO}"'
    body = []
    for k, (i, v) in enumerate(rows, 1):
        d = by_id[i]
        tint = sc.tint(v)
        sw = (f'<span style="display:inline-block; width:10px; height:10px; margin-right:4px; '
              f'background:{measures.rgba(tint) if tint else "none"}; border:1px solid rgba(128,128,128,.5)"></span>')
        # monospace cells, not <code>: nbconvert and JupyterLab draw each <code> as a grey pill
        body.append(f'<tr><td {cell}>{k}</td><td {mono}>{sw}{_x(d.get("param") or d["name"])}</td>'
                    f'<td {cell}>{_x(d["scope"] or "(top level)")}</td><td {mono}>{_x(d["op"])}</td>'
                    f'<td style="padding: 1px 0; text-align: right; {MONO}">'
                    f'{_x(measures.format_value(v, m.unit, m.scale))}</td></tr>')
    caption = (f"Top {len(rows)} by {m.label}, of {count} nodes with a value" + (f", {missing} n/a" if missing else ""))
    head = "".join(f"<th {cell}>{h}</th>" for h in ("#", "node", "module", "op", m.label))
    return (f'<table class="wb-static-top" style="font-size: 12px; border-collapse: collapse; margin: 6px 0 4px 16px">'
            f'<caption style="text-align: left; font-weight: bold; padding-bottom: 2px">{_x(caption)}</caption>'
            f'<thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>')
