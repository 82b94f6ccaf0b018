"""The anywidget classes: the tape viewer, the live debugger and the gradient monitor's widget.

Traits and messages follow extensions/PROTOCOL.md. The front-end bundle is
``workbench/static/widget.js`` (built by ``pip install -e .``).
"""
import anywidget
import traitlets

from . import _assets
from .snapshot import MIME, to_json


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

    def show(self):
        """Display the widget in the notebook (no-op outside IPython)."""
        try:
            from IPython import get_ipython
            from IPython.display import display
        except ImportError:
            return
        if get_ipython() is not None:  # a plain script has nowhere to draw a widget
            display(self)


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


class DebuggerWidget(_Base):
    """``wb.viz.debug(...)``: the view "debugger", driven by a ``Stepper`` in this kernel.

    Every control from the browser is answered by one ``state`` (or ``error``) message. While the
    debugger is paused the kernel is free: run cells and read ``dbg.current``.
    """

    snapshot = traitlets.Dict().tag(sync=True)

    def __init__(self, stepper, height=0):
        super().__init__(snapshot=stepper.snapshot, view="debugger", height=height,
                         title=stepper.snapshot["title"])
        self.stepper = stepper
        self.on_msg(self._on_msg)

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


def tape_widget(snap):
    """The widget form of a snapshot (for hosts that show widgets but not custom MIME types).

    >>> import workbench as wb
    >>> w = wb.ones(2, requires_grad=True)
    >>> tape_widget(wb.viz.snapshot(w.sum())).view
    'tape'
    """
    return TapeWidget(snap)


__all__ = ["TapeWidget", "DebuggerWidget", "tape_widget", "MIME"]
