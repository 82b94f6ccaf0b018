"""The anywidget classes: the tape viewer, the live debugger and the gradient monitor's widget.

Traits and messages follow extensions/PROTOCOL.md. The front-end bundle is
``workbench/static/widget.js`` (built by ``pip install -e .``). The widgets only show and relay:
the debugger drives a ``stepper.Stepper``, the monitor shows what a ``gradstats.GradStats`` collects.
"""
import anywidget
import traitlets

from . import _assets
from .gradstats import METRICS, GradStats
from .snapshot import MIME, to_json
from .views import Snapshot, Snapshots, in_ipython, monitor_bundle, monitor_report


def _esm():
    try:
        return _assets.widget_esm_path()
    except FileNotFoundError as e:  # still usable from Python (tests, scripts); the view says why
        return ("export default { render({ el }) { el.textContent = " + to_json(str(e)) + "; } };")


class _Base(anywidget.AnyWidget):
    _esm = _esm()  # a Path: anywidget reads the file (and follows rebuilds while developing)
    view = traitlets.Unicode("tape").tag(sync=True)
    height = traitlets.Int(0).tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)

    _handle = None  # the IPython DisplayHandle of the last show(), so the saved view can be refreshed

    def show(self):
        """Display the widget in the notebook; a plain script has nowhere to draw one, so it prints one line."""
        if not in_ipython():
            print(self.static_bundle()["text/plain"])
            return
        from IPython.display import display  # optional: only notebooks have it

        self._handle = display(self, display_id=True)

    def _repr_mimebundle_(self, **kwargs):
        # the widget view for a live kernel, and beside it the kernel-free view (each view's
        # static_bundle(), a MIME bundle drawn without Python): JupyterLab's workbench
        # renderer shows the widget while its model lives and the static view otherwise (a saved
        # notebook, an untrusted copy); nbconvert, GitHub and VS Code without a kernel take text/html
        data, metadata = super()._repr_mimebundle_(**kwargs)  # anywidget: (bundle, metadata)
        return {**data, **self.static_bundle()}, metadata


class TapeWidget(_Base):
    """The tape viewer as a widget (replay stepping when the snapshot has a trace).

    >>> import workbench as wb
    >>> w = wb.ones(2, requires_grad=True)
    >>> TapeWidget(wb.viz.snapshot((w * 2).sum())).view
    'tape'
    """

    snapshot = traitlets.Dict().tag(sync=True)

    def __init__(self, snap, **kw):
        super().__init__(snapshot=snap.to_dict() if hasattr(snap, "to_dict") else snap, view="tape", **kw)

    def static_bundle(self):
        return Snapshot(self.snapshot)._repr_mimebundle_()


class DebuggerWidget(_Base):
    """``wb.viz.debug(...)``: the view "debugger", driven by a ``Stepper`` in this kernel.

    Every control from the browser is answered by one ``state`` (or ``error``) message. While the
    debugger is paused the kernel is free: run cells and read ``dbg.current``.
    """

    snapshot = traitlets.Dict().tag(sync=True)
    classroom = traitlets.Bool(False).tag(sync=True)

    def __init__(self, stepper, height=0):
        super().__init__(snapshot=stepper.snapshot, view="debugger", height=height,
                         title=stepper.snapshot["title"], classroom=bool(stepper.classroom))
        self.stepper = stepper
        self._static = None
        self.on_msg(self._on_msg)

    def static_bundle(self):
        """The recorded replay (tape.v1 with every step's summaries): steps through with no kernel."""
        if self._static is None:
            snap = self.stepper.replay_snapshot()
            steps = len(snap["trace"]["steps"]) if snap["trace"] else 0
            self._static = Snapshot(snap)._repr_mimebundle_()
            notes = "".join(f" {n['level']}: {n['text']}" for n in snap.get("notes") or ())  # before any step
            self._static["text/plain"] = (f"<workbench debugger {snap['title']!r}: {len(snap['nodes'])} nodes, "
                                          f"replay of {steps} backward steps>{notes}")
        return self._static

    # --- Python API (the same actions the buttons take) ------------------------------------------
    @property
    def current(self):
        """The step shown: ``node``, ``grad_output``, ``grad_outputs``, ``grad_inputs``, ``leaves``."""
        return self.stepper.current

    @property
    def position(self):
        return self.stepper.position

    @property
    def total(self):
        return self.stepper.total

    @property
    def paused_reason(self):
        return self.stepper.paused_reason

    def step(self):
        """Run one backward node; returns ``dbg.current``."""
        start = self.stepper.position
        self.stepper.step()
        self._push(start)
        return self.current

    def step_over(self):
        """Run the rest of the current module's backward as one step."""
        start = self.stepper.position
        self.stepper.step_over()
        self._push(start)
        return self.current

    def continue_(self):
        """Run to the next breakpoint (node, NaN/Inf, condition) or the end."""
        start = self.stepper.position
        self.stepper.continue_()
        self._push(start)
        return self.current

    def restart(self):
        """Back to before the first step, with every .grad as it was before the session."""
        self.stepper.restart()
        self._push(0)

    def add_breakpoint(self, b):
        """Break on a node id, a Tensor, a Node, or when ``cond(step)`` is true."""
        self.stepper.add_breakpoint(b)
        self._push(self.stepper.position)

    def close(self):
        """Close the widget and free the graph kept for restarting."""
        self.stepper.close()
        super().close()

    # --- protocol ------------------------------------------------------------------------------
    def state_message(self, start):
        st = self.stepper
        return {"type": "state", "position": st.position, "total": st.total,
                "step": st.records[-1] if st.position else None, "steps": st.records[start:],
                "paused_reason": st.paused_reason, "breakpoints": sorted(st.node_breaks)}

    def _push(self, start):
        self._send_json(self.state_message(start))

    def _send_json(self, msg):
        # strict JSON: summaries spell non-finite values as strings, so this never needs NaN literals
        to_json(msg)
        self.send(msg)

    def _on_msg(self, _widget, content, _buffers):
        kind = content.get("type") if isinstance(content, dict) else None
        st = self.stepper
        try:
            if kind == "sync":
                self._push(0)
            elif kind == "step":
                self.step()
            elif kind == "step_over":
                self.step_over()
            elif kind == "continue":
                self.continue_()
            elif kind == "restart":
                self.restart()
            elif kind == "set_breakpoint":
                st.set_breakpoint(str(content.get("node")), bool(content.get("enabled", True)))
        except BaseException as e:  # never leave the browser waiting: every request gets an answer
            self._send_json({"type": "error", "message": f"{type(e).__name__}: {e}"})
            if isinstance(e, KeyboardInterrupt):
                raise


class Monitor(_Base):
    """``wb.viz.watch(model)``: the gradient monitor widget (view "monitor"), showing a ``GradStats``.

    >>> import workbench as wb
    >>> model = wb.nn.Linear(3, 1); opt = wb.optim.SGD(model.parameters(), lr=0.1)
    >>> mon = wb.viz.watch(model, display=False)
    >>> for step in range(3):
    ...     loss = model(wb.ones(2, 3)).pow(2).mean(); opt.zero_grad(); loss.backward(); opt.step()
    >>> mon.detach(); mon.history["grad_norm/weight"].shape
    (3,)
    """

    def __init__(self, model, title="", plot_on_detach=False, **kw):
        super().__init__(view="monitor", title=title)
        self.stats = GradStats(model, **kw)
        self.plot_on_detach = plot_on_detach
        self.stats.listeners.append(self._relay)
        self._shown_rows = 0
        self._ip_events = None
        self.on_msg(self._on_msg)

    def static_bundle(self):
        """The charts and alarms so far as a monitor.v1 report (drawn with no kernel), SVG and a line of text."""
        return monitor_bundle(monitor_report(self.stats, self.title or "gradient monitor"))

    def show(self):
        super().show()
        if self._handle is not None and self._ip_events is None:
            # the saved view follows the run: after each cell that trained, the output is re-published
            # with the charts so far (the widget itself re-syncs; the static part is what a saved
            # notebook keeps)
            from IPython import get_ipython  # optional: show() only gets here inside IPython

            self._ip_events = get_ipython().events
            self._ip_events.register("post_run_cell", self._refresh_saved_view)

    def _refresh_saved_view(self, *_):
        self.stats.flush()
        if self._handle is not None and self.stats._rows.n != self._shown_rows:
            self._shown_rows = self.stats._rows.n
            self._handle.update(self)

    # --- what the collector offers, under the names users know ------------------------------------
    layers = property(lambda self: self.stats.layers, doc="Parameter paths, in model order.")
    step = property(lambda self: self.stats.step, doc="Training steps seen so far.")
    history = property(lambda self: self.stats.history, doc=GradStats.history.__doc__)
    alarms = property(lambda self: self.stats.alarms, doc=GradStats.alarms.__doc__)

    def log(self, loss=None):
        """Record the loss of the latest step (a number or a one-element tensor)."""
        self.stats.log(loss)

    @property
    def snapshots(self):
        """The kept steps' tapes (``snapshots_every=N``, ``snapshot()``): displays as the tape viewer with a
        step slider; ``len()``, ``[i]`` (one step's ``Snapshot``), ``.steps``, ``.save(path)``."""
        return Snapshots(self.stats.series)

    def snapshot(self):
        """Keep the tape of the next step in ``snapshots`` (call it before that step's ``loss.backward()``)."""
        self.stats.snapshot()

    def flush(self):
        """Copy queued rows to the host, check alarms, and send them to the browser now."""
        self.stats.flush()

    def history_frame(self):
        """``history`` as a pandas DataFrame indexed by step (scalar series only); needs pandas."""
        return self.stats.history_frame()

    def plot(self, path=None):
        """A static PNG of the gradient flow; see ``GradStats.plot``."""
        return self.stats.plot(path)

    def pause(self):
        """Stop watching for a while (e.g. during validation); ``resume()`` picks up at the next step."""
        self.stats.pause()

    def resume(self):
        """Watch again after ``pause()``."""
        self.stats.resume()

    def detach(self, display=None):
        """Remove every hook and flush; the output keeps the charts and alarms for readers without a kernel.

        ``display=True`` (or ``watch(..., plot_on_detach=True)``) also shows ``plot()``'s PNG below.
        """
        attached = self.stats._attached
        self.stats.detach()
        if self._ip_events is not None:
            self._ip_events.unregister("post_run_cell", self._refresh_saved_view)
            self._ip_events = None
        if attached:
            self._refresh_saved_view()
        if attached and (self.plot_on_detach if display is None else display) and self.stats._rows.n and in_ipython():
            from IPython.display import display as ipy_display  # optional: only notebooks have it

            try:
                ipy_display(self.plot())
            except ImportError:  # no matplotlib: the numbers are still in mon.history
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()
        return False

    # --- protocol (PROTOCOL.md section 4) ------------------------------------------------------------
    def _relay(self, event, *args):
        if event == "reset":
            self._post({"type": "monitor", "event": "reset"})
        elif event == "alarms":
            self._post({"type": "monitor", "event": "alarms", "alarms": args[0]})
        elif event == "rows":
            a, b, norms = args
            if b <= a:
                return
            loss, metrics, counts = self.stats.block(a, b, norms)
            bufs = [loss.tobytes(), metrics.tobytes()]
            hist = None
            if counts is not None:
                bufs.append(counts.astype("<u4").tobytes())
                lo, hi = self.stats.hist_range
                hist = {"bins": self.stats.bins, "lo": lo, "hi": hi}
            self._post({"type": "monitor", "event": "steps", "layers": self.stats.layers, "metrics": list(METRICS),
                        "start": int(a), "n": b - a, "hist": hist}, bufs)

    def _post(self, msg, buffers=None):
        try:
            self.send(msg, buffers)
        except Exception:  # no front-end (a script, a closed comm): the history still has everything
            pass

    def _on_msg(self, _w, content, _buffers):
        if isinstance(content, dict) and content.get("type") == "monitor_sync":
            self.stats.replay(self._relay)


def tape_widget(snap):
    """The widget form of a snapshot (for hosts that show widgets but not custom MIME types).

    >>> import workbench as wb
    >>> w = wb.ones(2, requires_grad=True)
    >>> tape_widget(wb.viz.snapshot(w.sum())).view
    'tape'
    """
    return TapeWidget(snap)


__all__ = ["TapeWidget", "DebuggerWidget", "Monitor", "tape_widget", "MIME"]
