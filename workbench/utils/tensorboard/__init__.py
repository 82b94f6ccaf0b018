"""``workbench.utils.tensorboard``: PyTorch's ``SummaryWriter``, writing real TensorBoard event files.

The event files are written by the ``tensorboard`` package's own writer and protocol buffers (as
PyTorch does), so ``tensorboard --logdir runs`` shows them. It is an optional dependency:
``pip install tensorboard`` (or the ``tensorboard`` extra). Images are encoded as PNG without an imaging
library. ``add_graph`` draws the model's recorded tape, grouped by module.

While a live gradient monitor (``wb.viz.watch(model)``) is attached, the scalars and histograms logged
here are handed to it too: a scalar whose tag names a loss becomes the monitor's loss curve, and every
scalar and histogram is kept in the collector's ``external`` record by tag.

>>> import tempfile, workbench as wb
>>> from workbench.utils.tensorboard import SummaryWriter
>>> with SummaryWriter(tempfile.mkdtemp()) as w:
...     for step in range(3):
...         w.add_scalar("loss", 1.0 / (step + 1), step)
"""
try:
    from tensorboard.compat.proto.event_pb2 import Event, SessionLog
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
except ImportError:
    raise ImportError("workbench.utils.tensorboard writes TensorBoard event files through the tensorboard "
                      "package, which is not installed: pip install tensorboard (or pip install "
                      "'workbench[tensorboard]')") from None

import os
import socket
import time
from datetime import datetime

from ...autograd import graph as _autograd_graph
from . import _graph, _summary

__all__ = ["SummaryWriter", "FileWriter"]


class FileWriter:
    """One event file in ``log_dir``: adds events, summaries and graphs to it (PyTorch's ``FileWriter``)."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self):
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        self.add_event(Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_def, walltime=None):
        self.add_event(Event(graph_def=graph_def.SerializeToString()), None, walltime)

    def flush(self):
        self.event_writer.flush()

    def close(self):
        self.event_writer.close()

    def reopen(self):
        self.event_writer.reopen()


def _monitors():
    """The gradient collectors attached now (``wb.viz.watch``'s GradStats): the owners of backward hooks
    that take fed values (viz sits above utils, so they are found by what they offer, not by class)."""
    return [h.__self__ for h in _autograd_graph.BACKWARD_HOOKS if hasattr(getattr(h, "__self__", None), "feed")]


class SummaryWriter:
    """Writes scalars, histograms, images, text, hparams and the model graph to event files in ``log_dir``.

    ``log_dir`` defaults to ``runs/<date>_<time>_<host><comment>``, as in PyTorch. Events are queued and
    written by a background thread (at most ``max_queue`` pending, flushed every ``flush_secs``);
    ``flush()`` writes them now and ``close()`` (or leaving a ``with`` block) ends the file.

    >>> import tempfile, workbench as wb
    >>> from workbench.utils.tensorboard import SummaryWriter
    >>> w = SummaryWriter(tempfile.mkdtemp())
    >>> w.add_histogram("weights", wb.randn(100), 0); w.add_text("note", "hello", 0); w.close()
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", stamp + "_" + socket.gethostname() + comment)
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue, self.flush_secs, self.filename_suffix = max_queue, flush_secs, filename_suffix
        self.file_writer = self.all_writers = None
        self.default_bins = _summary.default_bins()
        self._get_file_writer()

    def _get_file_writer(self):
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:  # TensorBoard hides events of this step and later from before
                self.file_writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step, session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        """The directory the event files go to."""
        return self.log_dir

    def _feed(self, kind, tag, value, step):
        if _autograd_graph.BACKWARD_HOOKS:
            for stats in _monitors():
                stats.feed(kind, tag, value, step)

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        """Log one number (a float, or a one-element tensor or array) under ``tag`` at ``global_step``."""
        summary = _summary.scalar(tag, scalar_value, new_style=new_style, double_precision=double_precision)
        self._get_file_writer().add_summary(summary, global_step, walltime)
        self._feed("scalar", tag, summary.value[0].simple_value if not new_style else
                   float(_summary.to_numpy(scalar_value, "add_scalar").reshape(-1)[0]), global_step)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Log several numbers in one chart: each ``tag`` goes to its own run ``<log_dir>/<main_tag>_<tag>``."""
        walltime = time.time() if walltime is None else walltime
        logdir = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            key = logdir + "/" + main_tag.replace("/", "_") + "_" + tag
            fw = self.all_writers.get(key)
            if fw is None:
                fw = self.all_writers[key] = FileWriter(key, self.max_queue, self.flush_secs, self.filename_suffix)
            fw.add_summary(_summary.scalar(main_tag, value), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        """Log the distribution of ``values``; ``bins`` is 'tensorflow' (TensorFlow's buckets) or anything
        ``numpy.histogram`` takes ('auto', 'fd', a count, edges)."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        summary = _summary.histogram(tag, values, bins, max_bins=max_bins)
        self._get_file_writer().add_summary(summary, global_step, walltime)
        histo = summary.value[0].histo
        self._feed("histogram", tag, {"limits": _summary.np.array(histo.bucket_limit),
                                      "counts": _summary.np.array(histo.bucket)}, global_step)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """Log an image: floats in [0, 1] or uint8; ``dataformats`` names the dimensions (CHW, HWC, HW)."""
        self._get_file_writer().add_summary(_summary.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        """Log a batch of images as one grid (8 per row)."""
        self._get_file_writer().add_summary(_summary.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """Log a matplotlib figure (or a list of them, as a grid) as an image; ``close`` closes it."""
        figures = figure if isinstance(figure, list) else [figure]
        imgs = []
        for fig in figures:
            fig.canvas.draw()
            imgs.append(_summary.np.asarray(fig.canvas.buffer_rgba())[..., :3].transpose(2, 0, 1))
            if close:
                import matplotlib.pyplot as plt  # only reached with a figure in hand

                plt.close(fig)
        if isinstance(figure, list):
            self.add_images(tag, _summary.np.stack(imgs), global_step, walltime, dataformats="NCHW")
        else:
            self.add_image(tag, imgs[0], global_step, walltime, dataformats="CHW")

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Log a string (shown as Markdown by TensorBoard's text plugin)."""
        self._get_file_writer().add_summary(_summary.text(tag, text_string), global_step, walltime)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """Log the graph of ``model(*input_to_model)``: the ops its tape records, grouped by module."""
        self._get_file_writer().add_graph(_graph.graph_def(model, input_to_model))

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None, global_step=None):
        """Log hyperparameters and their metrics for TensorBoard's HParams tab (a run under ``run_name``)."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        exp, start, end = _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=logdir) as w:
            for s in (exp, start, end):
                w.file_writer.add_summary(s, global_step)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def flush(self):
        """Write every pending event to disk now."""
        for w in (self.all_writers or {}).values():
            w.flush()

    def close(self):
        """Flush and close every event file (a later ``add_*`` opens a new one)."""
        for w in (self.all_writers or {}).values():
            w.flush()
            w.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
