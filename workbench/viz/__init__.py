"""See the tape: snapshots of the recorded graph, a backward debugger, and a live gradient monitor.

>>> import workbench as wb
>>> w = wb.tensor([1.0, 2.0], requires_grad=True)
>>> with wb.viz.record():
...     loss = (w * w).sum()
>>> snap = wb.viz.snapshot(loss)          # wb.viz.show(loss) displays it in a notebook
>>> snap.save("tape.html")                # doctest: +SKIP
"""
from .debugger import Step, Stepper, debug, grad_norm_above, on_nan
from .monitor import Monitor, watch
from .recorder import Recorder, record, trace
from .snapshot import MIME, Snapshot, show, snapshot

__all__ = ["record", "trace", "snapshot", "show", "Snapshot", "MIME", "debug", "on_nan", "grad_norm_above",
           "Stepper", "Step", "watch", "Monitor", "Recorder"]
