"""The measures a tape can be coloured by: one number per node, its units, its colour scale.

The Python twin of ``extensions/src/core/overlay.ts`` (same keys, aggregates, ramps and number
formats), for ``color_by=`` validation and the static SVG that nbconvert and GitHub show. Built-in
measures are read from node fields; a snapshot's ``measures`` adds others (``wb.viz.compare``'s
ratios). A collapsed module box shows the aggregate of its nodes: the sum for costs, the max for
norms, the value farthest from 1 for ratios.

>>> snap = {"nodes": [{"id": "a", "flops": 2000, "value": None, "grad": None}], "measures": {}}
>>> m = measure(snap, "flops")
>>> (m.label, format_value(m.values["a"], m.unit))
('FLOPs', '2.00 KFLOP')
"""
import math

# key -> (label, unit, aggregate, how to read it from a node)
BUILTIN = {
    "grad_norm": ("gradient norm", "", "max", lambda n: (n.get("grad") or {}).get("norm")),
    "value_norm": ("value norm", "", "max", lambda n: (n.get("value") or {}).get("norm")),
    "flops": ("FLOPs", "FLOP", "sum", lambda n: n.get("flops")),
    "saved_bytes": ("saved for backward", "B", "sum", lambda n: n.get("saved_bytes")),
    "forward_us": ("forward time", "us", "sum", lambda n: n.get("forward_us")),
    "backward_us": ("backward time", "us", "sum", lambda n: n.get("backward_us")),
}
# the ramps of overlay.ts: ColorBrewer YlOrRd without its extremes; blue/red around a neutral 1
RAMP = ((254, 217, 118), (254, 178, 76), (253, 141, 60), (252, 78, 42), (227, 26, 28))
BLUE, RED = (44, 123, 182), (215, 25, 28)
MIX_LO, MIX_HI, MIX_ZERO, MIX_NEUTRAL = 28, 62, 12, 8  # % of the colour over the background
MIN_LOG2_SPAN = math.log2(1.1)


class Measure:
    """One measure of one snapshot: ``values`` maps node id -> number or None."""

    __slots__ = ("key", "label", "unit", "scale", "aggregate", "values")

    def __init__(self, key, label, unit, scale, aggregate, values):
        self.key, self.label, self.unit, self.scale, self.aggregate, self.values = \
            key, label, unit, scale, aggregate, values


def _finite(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def known(snap):
    """Every key ``color_by`` accepts for ``snap``: the built-in measures, then the snapshot's own."""
    return list(BUILTIN) + [k for k in snap.get("measures") or {} if k not in BUILTIN]


def check(snap, key, where="snapshot()"):
    """``key`` itself if ``snap`` can be coloured by it (or None); ValueError naming the valid keys otherwise."""
    if key is None:
        return None
    valid = known(snap)
    if not isinstance(key, str) or key not in valid:
        raise ValueError(f"{where}: unknown measure {key!r} for color_by; valid measures: {', '.join(valid)}")
    return key


def measure(snap, key):
    """The ``Measure`` ``key`` of ``snap`` (a key of ``known(snap)``)."""
    spec = (snap.get("measures") or {}).get(key)
    nodes = snap["nodes"]
    if spec is not None:
        vals = spec["values"]
        return Measure(key, spec.get("label") or key, spec.get("unit", ""), spec.get("scale", "log"),
                       spec.get("aggregate", "max"),
                       {n["id"]: vals.get(n["id"]) if _finite(vals.get(n["id"])) else None for n in nodes})
    label, unit, agg, get = BUILTIN[key]
    return Measure(key, label, unit, "log", agg, {n["id"]: get(n) if _finite(get(n)) else None for n in nodes})


def aggregate(m, ids):
    """What a collapsed box of the nodes ``ids`` shows (None when none of them has a value)."""
    out = None
    for i in ids:
        v = m.values.get(i)
        if v is None:
            continue
        if out is None:
            out = v
        elif m.aggregate == "sum":
            out += v
        elif (abs(math.log2(v)) > abs(math.log2(out))) if m.scale == "ratio" else v > out:
            out = v
    return out


def _scaled(v, base, units):
    x, i = abs(v), 0
    while x >= base and i < len(units) - 1:
        x /= base
        i += 1
    text = str(int(x)) if i == 0 and float(x).is_integer() else f"{x:.{0 if x >= 100 else 1 if x >= 10 else 2}f}"
    return f"{'-' if v < 0 else ''}{text} {units[i]}"


def _fmt(x):
    # four significant digits, as the viewer's fmt()
    if x == 0:
        return "0"
    if abs(x) >= 1e5 or abs(x) < 1e-3:
        return f"{x:.2e}".replace("e+0", "e+").replace("e-0", "e-")
    return f"{float(f'{x:.4g}'):g}"


def format_value(v, unit, scale="log"):
    """A value as the legend writes it: 1.50 KiB, 2.50 GFLOP, 840 µs, 1.25 ms, 2×, n/a.

    >>> [format_value(1536, "B"), format_value(2.5e9, "FLOP"), format_value(1250, "us"), format_value(None, "B")]
    ['1.50 KiB', '2.50 GFLOP', '1.25 ms', 'n/a']
    """
    if v is None:
        return "n/a"
    if scale == "ratio":
        return f"{_fmt(v)}×"
    if unit == "B":
        return _scaled(v, 1024, ("B", "KiB", "MiB", "GiB", "TiB"))
    if unit == "FLOP":
        return _scaled(v, 1000, ("FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"))
    if unit == "us":
        a = abs(v)
        return f"{_fmt(v / 1e6)} s" if a >= 1e6 else f"{_fmt(v / 1e3)} ms" if a >= 1e3 else f"{_fmt(v)} µs"
    return f"{_fmt(v)} {unit}" if unit else _fmt(v)


def ramp(t):
    """The sequential ramp's colour at ``t`` in [0, 1]."""
    x = min(1.0, max(0.0, t)) * (len(RAMP) - 1)
    i = min(len(RAMP) - 2, int(x))
    f = x - i
    return tuple(round(a + (b - a) * f) for a, b in zip(RAMP[i], RAMP[i + 1]))


class Scale:
    """The colour scale spanning ``values`` (what is drawn) for a measure of kind ``scale``.

    ``tint(v)`` is ``(rgb, mix%)`` (the colour drawn ``mix``% over the background) or None (n/a).

    >>> sc = Scale("log", [10, 1000, 0, None])
    >>> (sc.lo, sc.hi, sc.zeros, sc.missing, sc.tint(1000)[1], sc.tint(None))
    (10, 1000, 1, 1, 62, None)
    """

    def __init__(self, scale, values):
        self.scale = scale
        lo, hi, zeros, missing, span = math.inf, -math.inf, 0, 0, 0.0
        for v in values:
            if v is None:
                missing += 1
            elif scale == "ratio":
                if v > 0:
                    span = max(span, abs(math.log2(v)))
                else:
                    missing += 1
            elif scale == "log" and v <= 0:
                zeros += 1
            else:
                lo, hi = min(lo, v), max(hi, v)
        self.zeros, self.missing = zeros, missing
        if scale == "ratio":
            self.span = max(span, MIN_LOG2_SPAN)
            lo, hi = 2 ** -self.span, 2 ** self.span
        self.lo, self.hi = (lo, hi) if lo <= hi else (None, None)

    def tint(self, v):
        if v is None:
            return None
        if self.scale == "ratio":
            if v <= 0:
                return None
            u = max(-1.0, min(1.0, math.log2(v) / self.span))
            return (BLUE if u < 0 else RED), round(MIX_NEUTRAL + (MIX_HI - MIX_NEUTRAL) * abs(u))
        if self.scale == "log" and v <= 0:
            return RAMP[0], MIX_ZERO
        if self.lo is None or not self.hi > self.lo:
            t = 1.0
        elif self.scale == "log":
            t = (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            t = (v - self.lo) / (self.hi - self.lo)
        t = min(1.0, max(0.0, t))
        return ramp(t), round(MIX_LO + (MIX_HI - MIX_LO) * t)


def rgba(tint):
    """A tint as a translucent CSS colour (drawn over whatever background the page has)."""
    (r, g, b), mix = tint
    return f"rgba({r},{g},{b},{mix / 100:g})"


def top_n(m, n=10):
    """The ``n`` (id, value) with the largest values (ratios: farthest from 1), and how many have a value."""
    rows = [(i, v) for i, v in m.values.items() if v is not None and (m.scale != "ratio" or v > 0)]
    rows.sort(key=lambda r: -abs(math.log2(r[1])) if m.scale == "ratio" else -r[1])
    return rows[:n], len(rows)
