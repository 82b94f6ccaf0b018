"""A profile's kernel-free picture: a timeline drawn as inline SVG, plus the key_averages table.

What a notebook shows for a ``profile`` object in every front-end (JupyterLab, VS Code, Colab,
nbviewer, GitHub), saved or live: two lanes, forward (ops nested in module calls and record_function
ranges) and backward (the engine's steps nested in the module scopes of their nodes), on one time
axis; hovering a box shows its name, duration, module and input shapes. The text/plain part is the
table.
"""
import math
from html import escape

from .chrome_trace import backward_scopes
from .events import _format_time

# box fills dark enough for their white labels (4.5:1 or more), and apart from a light or a dark page
COLOURS = {"op": "#3e6896", "backward": "#b8383b", "module": "#6e6e6e", "user": "#3d7a35", "step": "#8a5a80"}
ROW, WIDTH, LEFT, MAX_BOXES = 16, 960, 86, 3000


def _x(s):
    return escape(str(s), quote=True)


def time_ticks(total_us, n=6):
    """Round tick times (us) over [0, total_us], about ``n`` of them.

    >>> time_ticks(950)
    [0, 200, 400, 600, 800]
    """
    if total_us <= 0:
        return [0]
    raw = total_us / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    return [round(k * step, 9) for k in range(int(total_us // step) + 1)]


def _label(e):
    # what fits in a box: a module call by its path (and class), a backward step by its node
    if e.kind == "module":
        cls = e.name.split(": ", 1)[-1]
        return f"{e.scope} ({cls})" if e.scope else cls
    if e.kind == "backward":
        return e.name.split(": ", 1)[-1]
    return e.name


def _tick_text(us):
    if us == 0:
        return "0"
    if us >= 1e6:
        return f"{us / 1e6:g} s"
    if us >= 1e3:
        return f"{us / 1e3:g} ms"
    return f"{us:g} us"


def _boxes(events):
    # (lane, depth, start, dur, kind, name, title) for the events and the backward module ranges
    out = []
    depth = {}
    for e in sorted(events, key=lambda e: (e.start_us, -e.cpu_time_total)):
        p = e.range_parent
        d = depth[id(p)] + 1 if p is not None and p.lane == e.lane and id(p) in depth else 0
        depth[id(e)] = d
        title = [e.name, _format_time(e.cpu_time_total)]
        if e.scope:
            title.append(f"module {e.scope}")
        if e.input_shapes:
            title.append(f"inputs {e.input_shapes}")
        if e.device_time_total:
            title.append(f"device {_format_time(e.device_time_total)}")
        out.append([e.lane, d, e.start_us, e.cpu_time_total, e.kind, _label(e), "\n".join(title)])
    scopes = backward_scopes(events)
    if scopes:
        levels = 1 + max(level for _, level, _, _ in scopes)
        for b in out:
            if b[0] == 1:
                b[1] += levels
        for scope, level, start, end in scopes:
            out.append([1, level, start, end - start, "module", scope,
                        f"{scope} (backward)\n{_format_time(end - start)}"])
    return out


def svg(events):
    """The timeline of an EventList as an SVG string (no scripts, styled with --jp-* variables).

    >>> import workbench as wb
    >>> with wb.profiler.profile() as prof:
    ...     _ = wb.ones(2) * 3
    >>> svg(prof.events()).startswith("<svg")
    True
    """
    boxes = _boxes(events)
    if not boxes:
        return '<svg xmlns="http://www.w3.org/2000/svg" width="300" height="20"><text x="4" y="14">empty profile</text></svg>'
    t0 = min(b[2] for b in boxes)
    total = max(b[2] + b[3] for b in boxes) - t0
    scale = (WIDTH - LEFT - 10) / total if total > 0 else 1.0
    dropped = 0
    if len(boxes) > MAX_BOXES:  # the narrowest boxes go first: they would be slivers anyway
        boxes.sort(key=lambda b: -b[3])
        dropped = len(boxes) - MAX_BOXES
        boxes = boxes[:MAX_BOXES]
    depth = {lane: 1 + max((b[1] for b in boxes if b[0] == lane), default=-1) for lane in (0, 1)}
    top = {0: 24, 1: 24 + max(depth[0], 1) * ROW + 14}
    height = top[1] + max(depth[1], 1) * ROW + 22
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-size="10" '
             'font-family="var(--jp-ui-font-family, sans-serif)" role="img" aria-label="profile timeline">',
             f'<rect width="{WIDTH}" height="{height}" fill="var(--jp-layout-color0, white)"/>']
    fg = "var(--jp-ui-font-color1, #222)"
    for t in time_ticks(total):
        x = LEFT + t * scale
        parts.append(f'<line x1="{x:.1f}" y1="14" x2="{x:.1f}" y2="{height - 18}" stroke="{fg}" stroke-opacity="0.15"/>')
        parts.append(f'<text x="{x:.1f}" y="11" fill="{fg}" text-anchor="middle">{_x(_tick_text(t))}</text>')
    for lane, label in ((0, "forward"), (1, "backward")):
        parts.append(f'<text x="4" y="{top[lane] + 12}" fill="{fg}" font-weight="bold">{label}</text>')
    for lane, d, start, dur, kind, name, title in sorted(boxes, key=lambda b: (b[0], b[1], b[2])):
        x = LEFT + (start - t0) * scale
        w = max(dur * scale, 0.5)
        y = top[lane] + d * ROW
        parts.append(f'<g><title>{_x(title)}</title><rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{ROW - 2}" '
                     f'fill="{COLOURS[kind]}" rx="2"/>')
        if w > 30:
            chars = int((w - 4) / 6)
            text = name if len(name) <= chars else name[:max(chars - 1, 1)] + "…"
            parts.append(f'<text x="{x + 2:.2f}" y="{y + 11}" fill="white">{_x(text)}</text>')
        parts.append("</g>")
    note = f"{len(boxes)} ranges over {_format_time(total)}" + (
        f"; {dropped} shortest not drawn" if dropped else "")
    parts.append(f'<text x="4" y="{height - 6}" fill="{fg}" fill-opacity="0.7">{_x(note)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def bundle(events, row_limit=20):
    """The MIME bundle a notebook shows for a profile: text/html (timeline SVG + table), text/plain (table).

    >>> import workbench as wb
    >>> with wb.profiler.profile() as prof:
    ...     _ = wb.ones(2) * 3
    >>> sorted(bundle(prof.events()))
    ['text/html', 'text/plain']
    """
    table = events.key_averages().table(sort_by="cpu_time_total", row_limit=row_limit)
    # the table's columns line up only in a monospace font: nbconvert's HTML sets none on a <pre> in an output
    html = (f'<div class="wb-profile" style="overflow-x:auto">{svg(events)}'
            f'<pre style="font-size:11px; white-space:pre; font-family:var(--jp-code-font-family, monospace), '
            f'monospace">{_x(table)}</pre></div>')
    return {"text/html": html, "text/plain": table}
