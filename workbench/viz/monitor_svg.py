"""The monitor's kernel-free picture: a monitor.v1 report drawn as inline SVG (with one embedded PNG).

What VS Code, GitHub, nbviewer and nbconvert show for a gradient monitor, and what JupyterLab shows
before its renderer loads: the loss with real axes, the layer x step overview of gradient norms (a
heatmap with a colour bar in log10 units; each pixel row is one parameter), and the alarms, each with
an icon in the error or warning colour and its text in the page's. The heatmap is a PNG made here with zlib, so a 44-layer, 300-step run is
a few kilobytes instead of 13,000 SVG rectangles.
"""
import base64
import math
import struct
import zlib
from html import escape

ERROR = "#d32f2f"
WARN = "#e68a00"
# a perceptually ordered ramp (viridis stops): low gradients dark blue, high yellow; reads on light and dark
RAMP = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)]
# RGBA: a step without a positive norm (zero, or not computed) is a faint grey over the page, as in the
# live view, not a light block that glares on a dark theme
MISSING = (128, 128, 128, 60)
NONFINITE = (211, 47, 47, 255)


ALARM_CHAR_W = 6.7  # 11 px monospace


def _fit(text, px):
    """``text`` cut with an ellipsis to what ``px`` pixels of 11 px monospace hold.

    >>> _fit("abcdef", 4 * ALARM_CHAR_W)
    'abc…'
    """
    n = int(px // ALARM_CHAR_W)
    return text if len(text) <= n else text[:n - 1] + "…"


def _x(s):
    return escape(str(s), quote=True)


def ramp(t):
    """RGB of ``t`` in [0, 1] on the heatmap's colour ramp.

    >>> ramp(0.0), ramp(1.0)
    ((68, 1, 84), (253, 231, 37))
    """
    t = min(1.0, max(0.0, t)) * (len(RAMP) - 1)
    i = min(int(t), len(RAMP) - 2)
    f = t - i
    a, b = RAMP[i], RAMP[i + 1]
    return tuple(round(a[k] + (b[k] - a[k]) * f) for k in range(3))


def png(pixels, width, height):
    """A PNG (bytes) of ``height`` rows of ``width`` RGBA tuples.

    >>> png([[(0, 0, 0, 255)]], 1, 1)[:8]
    b'\\x89PNG\\r\\n\\x1a\\n'
    """
    raw = b"".join(b"\x00" + bytes(c for px in row for c in px) for row in pixels)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def nice_ticks(lo, hi, n=5):
    """Round tick values covering [lo, hi] (about ``n`` of them).

    >>> nice_ticks(0, 97)
    [0, 20, 40, 60, 80]
    """
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    out = []
    v = first
    while v <= hi + 1e-9 * step:
        out.append(int(v) if float(v).is_integer() else round(v, 10))
        v += step
    return out


def axis_range(lo, hi, log=False):
    """The axis range for data from ``lo`` to ``hi`` (log10 values on a log axis), as the live charts'
    (format.ts): a constant series (equal to float32 precision) gets 10% of its value (1 at zero), or half
    a decade, of room both ways, so it is drawn mid-plot, not on the edge of a one-sided axis.

    >>> axis_range(0.75, 0.75), axis_range(0.0, 0.0), axis_range(-2.0, -2.0, log=True), axis_range(1.0, 2.0)
    ((0.675, 0.825), (-1.0, 1.0), (-2.5, -1.5), (1.0, 2.0))
    """
    flat = hi - lo <= 5e-7 if log else hi - lo <= 1e-6 * max(abs(lo), abs(hi))
    if not flat:
        return lo, hi
    pad = 0.5 if log else abs(lo) * 0.1 or 1.0
    return lo - pad, hi + pad


def _fmt(v):
    a = abs(v)
    return f"{v:.2e}" if a and (a >= 1e4 or a < 1e-2) else f"{v:.3g}"


def _loss_chart(rep, x0, y0, w, h):
    steps = [rep["start"] + i * rep["every"] for i in range(rep["n"])]
    pts = [(s, v) for s, v in zip(steps, rep["loss"]) if v is not None]
    out = [f'<text x="{x0}" y="{y0 - 6}" font-weight="bold" fill="currentColor">loss</text>',
           f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="currentColor" stroke-opacity="0.3"/>']
    if not pts:
        out.append(f'<text x="{x0 + 8}" y="{y0 + h / 2}" fill="currentColor" fill-opacity="0.7">no loss recorded '
                   '(the backward root had more than one element; use mon.log(loss=...))</text>')
        return out
    s0, s1 = steps[0], max(steps[-1], steps[0] + 1)
    lo, hi = axis_range(min(v for _, v in pts), max(v for _, v in pts))
    sx = lambda s: x0 + (s - s0) / (s1 - s0) * w  # noqa: E731
    sy = lambda v: y0 + h - (v - lo) / (hi - lo) * h  # noqa: E731
    d = " ".join(f"{'M' if i == 0 else 'L'}{sx(s):.1f},{sy(v):.1f}" for i, (s, v) in enumerate(pts))
    out.append(f'<path d="{d}" fill="none" stroke="#1976d2" stroke-width="1.5"/>')
    for t in nice_ticks(lo, hi, 4):
        out.append(f'<line x1="{x0 - 4}" x2="{x0}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" stroke="currentColor"/>'
                   f'<text x="{x0 - 6}" y="{sy(t) + 3:.1f}" text-anchor="end" font-size="10" fill="currentColor">'
                   f'{_x(_fmt(t))}</text>')
    out += _x_axis(s0, s1, sx, y0 + h)
    return out


def _x_axis(s0, s1, sx, y):
    out = []
    for t in nice_ticks(s0, s1, 6):
        out.append(f'<line x1="{sx(t):.1f}" x2="{sx(t):.1f}" y1="{y}" y2="{y + 4}" stroke="currentColor"/>'
                   f'<text x="{sx(t):.1f}" y="{y + 14}" text-anchor="middle" font-size="10" fill="currentColor">{t}</text>')
    return out


def _overview(rep, x0, y0, w, row_h):
    """Layer x step heatmap of log10 ‖grad‖, with layer labels, a step axis and a colour bar."""
    L, n = len(rep["layers"]), rep["n"]
    f = rep["metrics"].index("grad_norm")
    logs = [[None] * n for _ in range(L)]
    bad = [[False] * n for _ in range(L)]
    finite = []
    for i, row in enumerate(rep["values"]):
        for k in range(L):
            v = row[k][f]
            if v == "NaN" or v == "Infinity":
                bad[k][i] = True
            elif v is not None and v > 0:
                logs[k][i] = math.log10(v)
                finite.append(logs[k][i])
    lo, hi = axis_range(min(finite), max(finite), log=True) if finite else (0.0, 1.0)
    pixels = [[NONFINITE if bad[k][i] else MISSING if logs[k][i] is None else (*ramp((logs[k][i] - lo) / (hi - lo)), 255)
               for i in range(n)] for k in range(L)]
    img = base64.b64encode(png(pixels, n, L)).decode()
    h = L * row_h
    out = [f'<text x="{x0}" y="{y0 - 6}" font-weight="bold" fill="currentColor">‖grad‖ by layer and step '
           '(log scale; red: NaN/Inf; grey: 0 or no gradient)</text>',
           f'<image x="{x0}" y="{y0}" width="{w}" height="{h}" preserveAspectRatio="none" '
           f'style="image-rendering: pixelated" href="data:image/png;base64,{img}"/>',
           f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="currentColor" stroke-opacity="0.3"/>']
    label_every = max(1, math.ceil(11 / row_h))
    for k, name in enumerate(rep["layers"]):
        if k % label_every:
            continue
        short = name if len(name) <= 30 else "…" + name[-29:]
        out.append(f'<text x="{x0 - 6}" y="{y0 + k * row_h + row_h / 2 + 3.5:.1f}" text-anchor="end" font-size="10" '
                   f'fill="currentColor"><title>{_x(name)}</title>{_x(short)}</text>')
    s0 = rep["start"]
    s1 = max(s0 + (n - 1) * rep["every"], s0 + 1)
    out += _x_axis(s0, s1, lambda s: x0 + (s - s0) / (s1 - s0) * w, y0 + h)
    out.append(f'<text x="{x0 + w / 2}" y="{y0 + h + 28}" text-anchor="middle" font-size="10" fill="currentColor">step</text>')
    # colour bar: 10^lo .. 10^hi
    bx, by, bw = x0 + w + 16, y0, 12
    bar = base64.b64encode(png([[(*ramp(1 - j / 63), 255)] for j in range(64)], 1, 64)).decode()
    out.append(f'<image x="{bx}" y="{by}" width="{bw}" height="{min(h, 160)}" preserveAspectRatio="none" '
               f'href="data:image/png;base64,{bar}"/>')
    bh = min(h, 160)
    for t in nice_ticks(lo, hi, 4):
        ty = by + bh - (t - lo) / (hi - lo) * bh
        out.append(f'<text x="{bx + bw + 4}" y="{ty + 3:.1f}" font-size="10" fill="currentColor">1e{t:g}</text>')
    return out, h


def render_monitor_svg(rep):
    """The inline-SVG ``text/html`` of a monitor.v1 report.

    >>> rep = {"title": "t", "layers": ["w"], "metrics": ["grad_norm"], "start": 0, "every": 1, "n": 2,
    ...        "loss": [1.0, 0.5], "values": [[[1.0]], [[0.1]]], "alarms": []}
    >>> render_monitor_svg(rep).count("<svg")
    1
    """
    L = len(rep["layers"])
    left = 200
    w = 560
    row_h = max(3, min(14, 440 // max(L, 1)))
    out = []
    y = 26
    out += _loss_chart(rep, left, y + 14, w, 110)
    y += 14 + 110 + 36
    ov, h = _overview(rep, left, y + 14, w, row_h)
    out += ov
    y += 14 + h + 40
    alarms = rep["alarms"]
    width = left + w + 90
    out.append(f'<text x="16" y="{y}" font-weight="bold" fill="currentColor">alarms ({len(alarms)})</text>')
    for a in alarms[:12]:
        color = ERROR if a["kind"] in ("nan", "inf") else WARN
        where = f" at {a['site']['file']}, line {a['site']['line']}" if a.get("site") else ""
        head = f'step {a["step"]} · {a["kind"]} · {a["layer"]}{where}'
        # where, then what, on a line each, each cut to the drawing's width (the whole alarm in its tooltip)
        out.append(f'<g><title>{_x(head)} — {_x(a["detail"])}</title>'
                   f'<text x="16" y="{y + 16}" font-size="11" fill="currentColor"><tspan fill="{color}">⚠</tspan> '
                   f'{_x(_fit(head, width - 32 - ALARM_CHAR_W * 2))}</text>'
                   f'<text x="30" y="{y + 30}" font-size="11" fill="currentColor">{_x(_fit(a["detail"], width - 46))}</text></g>')
        y += 30
    if len(alarms) > 12:
        y += 16
        out.append(f'<text x="16" y="{y}" font-size="11" fill="currentColor">… {len(alarms) - 12} more</text>')
    if not alarms:
        y += 16
        out.append(f'<text x="16" y="{y}" font-size="11" fill="currentColor" fill-opacity="0.7">none</text>')
    height = y + 16
    steps = rep["start"] + (rep["n"] - 1) * rep["every"] + 1 if rep["n"] else 0
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="{_x(rep["title"])}: {steps} steps, {L} layers, {len(alarms)} alarms" '
            'font-family="ui-monospace, SFMono-Regular, Menlo, Consolas, monospace" font-size="12" '
            'style="color: inherit; max-width: 100%; height: auto">'
            f'<text x="16" y="16" font-weight="bold" fill="currentColor">{_x(rep["title"])} · {steps} steps · '
            f'{L} layers</text>')
    return f'<div class="wb-static-monitor">{head}{"".join(out)}</svg></div>'
