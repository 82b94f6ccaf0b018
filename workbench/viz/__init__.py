"""See the tape: snapshots of the recorded graph, a backward debugger, and a live gradient monitor.

The modules form one stack, each importing only those before it: ``recorder`` (forward recording)
-> ``summary``, ``classroom`` -> ``snapshot`` (tape -> tape.v1) -> ``replay`` (backward recorder) ->
``series`` (the tape over time) ->
``stepper``, ``gradstats`` -> ``static_svg`` -> ``views`` (MIME bundles) -> ``widgets``, ``compare``
(two tapes in one view) -> the factories below; ``align`` (which node is which across snapshots)
imports none of them.

>>> import workbench as wb
>>> w = wb.tensor([1.0, 2.0], requires_grad=True)
>>> with wb.viz.record():
...     loss = (w * w).sum()
>>> snap = wb.viz.snapshot(loss)          # wb.viz.show(loss) displays it in a notebook
>>> import os, tempfile; folder = tempfile.TemporaryDirectory()
>>> snap.save(os.path.join(folder.name, "tape.html")) == os.path.join(folder.name, "tape.html")
True
>>> folder.cleanup()
"""
from . import measures
from .compare import compare
from .gradstats import GradStats
from .recorder import Recorder, record, trace
from .replay import fill_grads, record_backward
from .snapshot import MIME, as_roots, build
from .stepper import Step, Stepper, grad_norm_above, on_nan
from .views import Snapshot, Snapshots
from .widgets import DebuggerWidget, Monitor

__all__ = ["record", "trace", "snapshot", "show", "Snapshot", "Snapshots", "MIME", "debug", "on_nan", "grad_norm_above",
           "Stepper", "Step", "watch", "Monitor", "GradStats", "Recorder", "compare"]


def snapshot(roots, model=None, *, names=None, title=None, trace=False, retain_graph=False, values=True,
             grads=True, gradient=None, color_by=None):
    """A ``Snapshot`` of the tape behind ``roots`` (a loss tensor, or several tensors).

    ``model`` names parameters by their path (``encoder.0.weight``) and supplies the module tree;
    ``names={"x": x}`` names other tensors (variables of the calling frame are found by themselves).
    ``trace=True`` runs the backward pass now (it replaces ``loss.backward()``; pass
    ``retain_graph=True`` to keep the graph) and stores a summary of every engine step so the viewer
    can replay it without a kernel. ``color_by`` opens the view with the nodes coloured by a measure:
    ``"grad_norm"``, ``"value_norm"``, ``"flops"``, ``"saved_bytes"``, ``"forward_us"``,
    ``"backward_us"`` (docs/viz.md, "Colouring the tape by cost"); the viewer's Colour-by control
    switches it.

    >>> import workbench as wb
    >>> w = wb.tensor([2.0, -1.0], requires_grad=True)
    >>> loss = (w * w).sum()
    >>> snap = wb.viz.snapshot(loss, trace=True)
    >>> [s["node"] for s in snap.to_dict()["trace"]["steps"]]
    ['n2', 'n1', 'n0']
    >>> w.grad
    tensor([ 4., -2.])
    """
    snap, b = build(roots, model, names, title, values, grads)
    snap["overlay"] = measures.check(snap, color_by)  # before the backward below: bad input changes nothing
    if trace:
        snap["trace"] = {"steps": record_backward(as_roots(roots), b, gradient, retain_graph)}
        fill_grads(snap)
    return Snapshot(snap)


def show(roots, model=None, **kw):
    """Display the tape behind ``roots`` in the notebook: interactive viewer, SVG elsewhere.

    Takes ``snapshot()``'s arguments (``trace=True`` runs the backward pass for replay stepping,
    ``color_by="flops"`` colours the nodes by a measure);
    ``wb.viz.snapshot(...)`` gives the object itself (to save it). Outside IPython it prints one line.

    >>> import workbench as wb
    >>> w = wb.ones(2, requires_grad=True)
    >>> wb.viz.show((w * 2).sum())   # doctest: +ELLIPSIS
    <workbench tape ...>
    """
    snapshot(roots, model, **kw).show()  # returns None, so a cell ending in show() displays once


def debug(roots, model=None, breakpoints=(), classroom=False, *, gradient=None, names=None, nan_break=True,
          height=0, display=True, color_by=None):
    """Step through the backward pass of ``roots`` in the notebook, node by node.

    Returns the widget; ``dbg.current`` is the step shown (``node``, ``grad_output``, ``grad_inputs``,
    ``leaves`` as workbench tensors); ``dbg.step()``, ``dbg.step_over()``, ``dbg.continue_()`` and
    ``dbg.restart()`` drive it from Python too. Breakpoints: node ids, tensors, or conditions such as
    ``wb.viz.on_nan`` and ``wb.viz.grad_norm_above(1e3)``; NaN/Inf stop ``continue`` by default.
    Build the model and loss under ``with wb.viz.trace():`` so a NaN points at its forward line.
    After the last step every ``.grad`` equals what ``loss.backward()`` gives. ``color_by`` colours
    the nodes by a measure, as in ``snapshot()``.

    >>> import workbench as wb
    >>> a = wb.tensor(2.0, requires_grad=True)
    >>> dbg = wb.viz.debug((a * a).sum(), display=False)
    >>> dbg.step().node.name()
    'SumBackward0'
    """
    st = Stepper(roots, model, breakpoints, gradient, names, nan_break, classroom)
    st.snapshot["overlay"] = measures.check(st.snapshot, color_by, "debug()")
    w = DebuggerWidget(st, height=height)
    if display:
        w.show()
    return w


def watch(model, every=1, histograms=True, *, snapshots_every=None, display=True, **kw):
    """Attach a live gradient monitor to ``model``; it updates while the training loop runs.

    Per layer: gradient norm, weight norm, update/weight ratio, log10|grad| histograms; the loss (the
    backward root, or ``mon.log(loss=...)``); alarms for NaN/Inf (layer, op, source line), exploding
    and vanishing gradients and dead ReLUs. ``mon.detach()`` removes every hook and leaves a PNG.
    ``snapshots_every=N`` keeps the tape of steps 0, N, 2N... in ``mon.snapshots`` (``mon.snapshot()``
    keeps the next one): the structure once, each node's gradient and value norm per step, shown as
    the tape viewer with a step slider.

    >>> import workbench as wb
    >>> model = wb.nn.Linear(3, 1); opt = wb.optim.SGD(model.parameters(), lr=0.1)
    >>> mon = wb.viz.watch(model, display=False)        # display=True (the default) shows it in the notebook
    >>> for step in range(3):
    ...     opt.zero_grad(); loss = model(wb.ones(2, 3)).pow(2).mean(); loss.backward(); opt.step()
    >>> mon.detach(); mon.history["loss"].shape
    (3,)
    """
    mon = Monitor(model, every=every, histograms=histograms, snapshots_every=snapshots_every, **kw)
    if display:
        mon.show()
    return mon
