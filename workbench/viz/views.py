"""What the notebook displays and what is saved: MIME bundles that need no kernel to be drawn.

``Snapshot`` wraps a tape.v1 dict: in JupyterLab the MIME renderer draws it (also without a kernel,
also untrusted), elsewhere the ``text/html`` SVG stands in; ``save()`` writes .json, .svg or a
standalone .html file. ``monitor_report`` is the same for the gradient monitor: a monitor.v1 dict
(history, downsampled, and alarms) drawn by the renderer, with an SVG for everywhere else.
"""
import html
import math
import os

from . import _assets
from .monitor_svg import render_monitor_svg
from .snapshot import MIME, to_json
from .static_svg import compare_counts, render_svg
from .summary import sig4

MONITOR_MIME = "application/vnd.workbench.monitor.v1+json"


class Snapshot:
    """A tape.v1 snapshot: shown as the interactive viewer in JupyterLab, as an SVG elsewhere.

    >>> import workbench as wb
    >>> x = wb.ones(2, requires_grad=True)
    >>> snap = wb.viz.snapshot((x * 3).sum())
    >>> sorted(snap._repr_mimebundle_())
    ['application/vnd.workbench.tape.v1+json', 'text/html', 'text/plain']
    """

    def __init__(self, data):
        self.data = data

    def to_dict(self):
        """The tape.v1 object (a dict ready for ``json.dumps(allow_nan=False)``)."""
        return self.data

    def to_json(self, indent=None):
        """The snapshot as strict JSON text.  >>> wb.viz.snapshot(wb.ones(1, requires_grad=True).sum()).to_json()[:27]  ->  '{"format": "workbench.tape"'"""
        return to_json(self.data, indent)

    def svg(self, **kw):
        """The static SVG drawing (pure Python layout), in a scroll box unless ``standalone=True``.  >>> wb.viz.snapshot(wb.ones(1, requires_grad=True).sum()).svg(standalone=True)[:4]  ->  '<svg'"""
        return render_svg(self.data, **kw)

    def __repr__(self):
        d = self.data
        kinds = {}
        for n in d["nodes"]:
            kinds[n["kind"]] = kinds.get(n["kind"], 0) + 1
        parts = ", ".join(f"{v} {k}" for k, v in sorted(kinds.items()))
        tr = f", trace of {len(d['trace']['steps'])} steps" if d["trace"] else ""
        notes = "".join(f" {n['level']}: {n['text']}" for n in d.get("notes") or ())  # said in a script too
        cmp = f"; {compare_counts(d['compare'])}" if d.get("compare") else ""
        return f"<workbench tape {d['title']!r}: {len(d['nodes'])} nodes ({parts}), {len(d['edges'])} edges{tr}{cmp}>{notes}"

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {MIME: self.data, "text/html": self.svg(), "text/plain": repr(self)}

    def save(self, path):
        """Write ``.json`` (the snapshot), ``.html`` (standalone offline viewer) or ``.svg``.

        >>> import os, tempfile; folder = tempfile.TemporaryDirectory()
        >>> snap = wb.viz.snapshot((wb.ones(2, requires_grad=True) * 3).sum())
        >>> import json; path = snap.save(os.path.join(folder.name, "tape.json")); json.load(open(path))["format"]
        'workbench.tape'
        >>> folder.cleanup()
        """
        path = os.fspath(path)
        ext = os.path.splitext(path)[1].lower()
        if ext == ".json":
            text = self.to_json(indent=1)
        elif ext in (".html", ".htm"):
            text = standalone_html(self.data)
        elif ext == ".svg":
            text = '<?xml version="1.0" encoding="UTF-8"?>\n' + self.svg(standalone=True)
        else:
            raise ValueError(f"Snapshot.save: unknown file type {ext!r} for {path!r}; use .json, .html or .svg")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def show(self):
        """Display in the notebook (the MIME bundle, raw); outside IPython print the one-line summary.

        >>> wb.viz.snapshot((wb.ones(2, requires_grad=True) * 3).sum()).show()
        <workbench tape 'tensor (SumBackward0, 3 nodes)': 3 nodes (1 leaf, 1 op, 1 output), 2 edges>
        """
        show_bundle(self._repr_mimebundle_())


class Snapshots(Snapshot):
    """The steps a watched run kept (``mon.snapshots``): one tape viewer with a step slider and play.

    ``len()`` is the number of kept steps, ``snaps[i]`` the ``Snapshot`` of one (its nodes' norms and
    NaN/Inf counts; ``wb.viz.compare(snaps[0], snaps[-1])`` compares two), ``snaps.steps`` their step
    numbers; ``save()`` writes .json, .html (the slider works offline) or .svg (the last step). Where
    no viewer runs (nbconvert, GitHub) the drawing shows the last step, and says so.

    >>> import workbench as wb
    >>> model = wb.nn.Linear(3, 1)
    >>> stats = wb.viz.GradStats(model, snapshots_every=1)
    >>> for _ in range(3):
    ...     model.zero_grad(); model(wb.ones(2, 3)).sum().backward()
    >>> stats.detach(); snaps = Snapshots(stats.series)
    >>> len(snaps), snaps.steps, snaps[-1].to_dict()["series"]["steps"]
    (3, [0, 1, 2], [2])
    """

    def __init__(self, series):  # no super().__init__: ``data`` is recomputed, the series keeps growing
        self.series = series

    @property
    def data(self):
        return self.series.to_dict()

    @property
    def steps(self):
        """The kept steps' numbers (the monitor's step counter, from 0)."""
        return list(self.series.steps)

    def __len__(self):
        return len(self.series)

    def __getitem__(self, i):
        return Snapshot(self.series.step_dict(i))

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self):
        if not len(self):
            return ("<workbench tape series: no step kept yet; watch(model, snapshots_every=N) keeps every N-th "
                    "step, mon.snapshot() the next one>")
        return super().__repr__().replace("<workbench tape ", "<workbench tape series ", 1)

    def _repr_mimebundle_(self, include=None, exclude=None):
        if not len(self):
            return {"text/plain": repr(self)}
        d = self.data
        steps = d["series"]["steps"]
        line = (f'<p style="font:13px sans-serif;margin:4px 0">Step {steps[-1]}, the last of {len(steps)} kept '
                f"steps ({steps[0]}–{steps[-1]}). The step slider needs JupyterLab with workbench installed, or "
                "the page that <code>mon.snapshots.save(\"run.html\")</code> writes.</p>")
        return {MIME: d, "text/html": line + render_svg(d), "text/plain": repr(self)}


def standalone_html(snap, height=640):
    """One offline HTML page that renders ``snap`` with the standalone bundle (no server, no network)."""

    js = _assets.standalone_js().replace("</script", "<\\/script")
    payload = to_json(snap).replace("</", "<\\/")
    title = html.escape(snap.get("title") or "workbench tape")
    return (f'<!doctype html>\n<html><head><meta charset="utf-8"><title>{title}</title>\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1"></head>\n'
            f'<body style="margin:0">\n<div id="wb-tape-1" style="height:{int(height)}px"></div>\n'
            f'<script type="application/json" data-workbench-tape="wb-tape-1" data-height="{int(height)}">'
            f'{payload}</script>\n<script>{js}</script>\n</body></html>\n')


def in_ipython():
    """True inside an IPython kernel or shell (where display() draws); False in a plain script."""
    try:
        from IPython import get_ipython  # optional: only notebooks have it
    except ImportError:
        return False
    return get_ipython() is not None


def show_bundle(bundle, display_id=None):
    """Display a MIME bundle raw in IPython; elsewhere print its ``text/plain`` (one line)."""
    if not in_ipython():
        print(bundle.get("text/plain", ""))
        return None
    from IPython.display import display  # optional, as above

    return display(bundle, raw=True, display_id=display_id)


def monitor_report(stats, title="gradient monitor", max_rows=300):
    """The monitor.v1 dict of a ``GradStats``: loss and per-layer metrics (at most ``max_rows`` rows), alarms.

    Rows are every ``every``-th step; a metric not measured at a step (weight norms off detail steps)
    is null; NaN/Inf are the strings "NaN"/"Infinity" as in tape.v1.
    """
    stats.flush()
    n_all = stats._rows.n
    every = max(1, math.ceil(n_all / max_rows))
    loss, metrics, _counts = stats.block(0, n_all)
    idx = range(0, n_all, every)
    # grad_norm is measured every step (NaN there is a NaN gradient); the others only on detail steps
    values = [[[sig4(v) if f == 0 or v == v else None for f, v in enumerate(layer)] for layer in metrics[i].tolist()]
              for i in idx]
    return {"format": "workbench.monitor", "version": 1, "title": title, "layers": list(stats.layers),
            "metrics": ["grad_norm", "weight_norm", "update_ratio"], "start": 0, "every": every, "n": len(values),
            "loss": [None if loss[i] != loss[i] else sig4(loss[i]) for i in idx], "values": values,
            "alarms": list(stats._alarms)}


def monitor_bundle(rep):
    """The MIME bundle of a monitor.v1 report: the report, its SVG, one line of text."""
    steps = rep["start"] + (rep["n"] - 1) * rep["every"] + 1 if rep["n"] else 0
    kinds = sorted({a["kind"] for a in rep["alarms"]})
    text = (f"<workbench gradient monitor {rep['title']!r}: {steps} steps, {len(rep['layers'])} layers, "
            f"{len(rep['alarms'])} alarms{' (' + ', '.join(kinds) + ')' if kinds else ''}>")
    return {MONITOR_MIME: rep, "text/html": render_monitor_svg(rep), "text/plain": text}
