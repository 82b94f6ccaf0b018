"""The live gradient monitor: per-layer gradient statistics while a model trains, in the notebook.

``watch(model)`` registers one backward hook (``graph.BACKWARD_HOOKS``): when a backward pass that
accumulates into ``.grad`` ends, it computes, on the parameters' device and without a host sync,

* every layer's (parameter path's) gradient norm, and a histogram of log10|grad| (all layers in one
  vectorised pass over a strided sample of about ``sample`` elements per layer; with
  ``hist_every="auto"`` recomputed only as often as keeps it under ~1% of the step, repeated between),
* every ``detail_every`` steps the weight norm and the update ratio ‖Δw‖/‖w‖ (Δw from a copy of the
  weights taken at the step before),
* the loss: the root of the backward pass when it has one element, or what ``mon.log(loss=...)`` says.

Rows are queued as device arrays and copied to the host together, at most ``rate`` times a second,
then sent to the widget as binary buffers (PROTOCOL.md section 4) and checked for alarms: the first
NaN/Inf gradient (layer, op, forward line), exploding and vanishing gradients, dead ReLU units (a
listener on the tape counts, per ReLU call, the units that are zero for the whole batch, on the
forward pass of every ``detail_every``-th step).
"""
import math
import threading
import time

from .. import _backend
from ..autograd import graph
from ..autograd.graph import AccumulateGrad
from .widgets import _Base

import traitlets  # noqa: E402  (after widgets: anywidget first)

METRICS = ("grad_norm", "weight_norm", "update_ratio")


def _host(arr):
    return _backend.to_device(arr, _backend.CPU)


class Monitor(_Base):
    """``wb.viz.watch(model)``: the gradient monitor widget (view "monitor").

    >>> import workbench as wb
    >>> mon = wb.viz.watch(model, display=False)      # doctest: +SKIP
    >>> for x, y in loader:                           # doctest: +SKIP
    ...     loss = loss_fn(model(x), y); opt.zero_grad(); loss.backward(); opt.step()
    >>> mon.detach(); mon.history["grad_norm/fc1.weight"]   # doctest: +SKIP
    """

    view = traitlets.Unicode("monitor").tag(sync=True)

    def __init__(self, model, every=1, histograms=True, bins=32, hist_range=(-10.0, 2.0), detail_every=10,
                 hist_every="auto", sample=1024, rate=10.0, dead_relu=True, explode_at=1e3, vanish_ratio=1e-3, dead_fraction=0.5,
                 title="", plot_on_detach=True):
        super().__init__(view="monitor", title=title)
        if every < 1 or detail_every < 1:
            raise ValueError(f"watch(): every and detail_every must be >= 1, got {every} and {detail_every}")
        named = [(p_path, p) for p_path, p in model.named_parameters() if p.requires_grad]
        if not named:
            raise ValueError("watch(): the model has no parameters that require grad")
        self.model = model
        self.layers = [p for p, _ in named]
        self._first = next((k for k, name in enumerate(self.layers) if not name.endswith("bias")), 0)
        self._params = [p for _, p in named]
        self.every, self.detail_every = int(every), int(detail_every)
        self.bins = int(bins) if histograms else 0
        self.hist_range = (float(hist_range[0]), float(hist_range[1]))
        self.sample = int(sample)
        self.rate = float(rate)
        self.explode_at, self.vanish_ratio, self.dead_fraction = explode_at, vanish_ratio, dead_fraction
        self.plot_on_detach = plot_on_detach
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._pending = []  # (step, device row) rows not yet on the host
        self._loss_override = {}  # step -> loss given by log()
        self._rows = []  # host rows (numpy float64) in step order
        self._steps = []
        self._alarms = []
        self._alarm_keys = set()
        self._prev_norm = None
        self._dead = {}  # relu scope -> list of (step, dead, units) device pairs (host after flush)
        self._dead_pending = []
        self._n_backward = 0
        self.step = 0
        self._root = None
        self._consumers = None
        self._prev_w = None
        self._last_flush = 0.0
        self._timer = None
        self._wake = threading.Event()
        self._edges = {}
        self._offsets = {}
        if hist_every != "auto" and (not isinstance(hist_every, int) or hist_every < 1):
            raise ValueError(f"watch(): hist_every must be 'auto' or an int >= 1, got {hist_every!r}")
        self.hist_every = hist_every
        self._hist_every = 1 if hist_every == "auto" else hist_every
        self._last_hist = None
        self._hist_step = 0
        self._last_end = None
        self._interval = None
        self._attached = True
        self._trace_prev = graph.TRACE[0]
        graph.TRACE[0] = max(2, graph.TRACE[0])  # the first forward records sites: alarms name the line
        self._site_pending = True
        graph.BACKWARD_HOOKS.append(self._on_backward)
        self._listening = bool(dead_relu)
        if self._listening:
            graph.LISTENERS.append(self._on_op)
        self.on_msg(self._on_msg)

    # --- hooks (the hot path: no host sync here) ------------------------------------------------
    def _on_backward(self, phase, roots):
        try:
            self._hook(phase, roots)
        except Exception as e:  # the monitor must never break the training loop it watches
            import warnings

            self.detach(display=False)
            warnings.warn(f"wb.viz.watch: the gradient monitor stopped after an error and detached itself: "
                          f"{type(e).__name__}: {e}", RuntimeWarning, stacklevel=2)

    def _hook(self, phase, roots):
        if phase == "begin":
            self._root = roots[0] if roots and roots[0]._data.size == 1 else None
            if self._consumers is None:
                self._consumers = _consumers_of(roots, self._params, self.layers)
            if self._site_pending:
                graph.TRACE[0] = self._trace_prev
                self._site_pending = False
            return
        self._n_backward += 1
        if (self._n_backward - 1) % self.every:
            return
        step = self.step
        self.step += 1
        if self._listening:  # dead ReLUs change slowly: count them on the forward of every detail step
            want = self.step % self.detail_every == 0
            if want != (self._on_op in graph.LISTENERS):
                (graph.LISTENERS.append if want else graph.LISTENERS.remove)(self._on_op)
        row = self._device_row(step)
        with self._lock:
            self._pending.append((step, row))
        self._root = None
        now = time.monotonic()
        if now - self._last_flush >= 1.0 / self.rate:
            self.flush()
        else:
            self._schedule()

    def _device_row(self, step):
        params = self._params
        xp = _backend.xp_of(params[0]._data)
        nan = math.nan
        parts = []
        root = self._root
        parts.append(root._data.reshape(1) if root is not None else self._nans(xp, 1))
        grads = [p._grad._data if p._grad is not None else None for p in params]
        stack = _backend.numpy.array if xp is _backend.numpy else xp.stack
        parts.append(stack([xp.vdot(g.ravel(), g.ravel()).real if g is not None else xp.asarray(nan)
                            for g in grads]))
        detail = step % self.detail_every == 0
        if detail and self._prev_w is not None:
            ws = [p._data for p in params]
            wn = [xp.vdot(w.ravel(), w.ravel()).real for w in ws]
            un = []
            for w, prev in zip(ws, self._prev_w):
                d = w - prev
                un.append(xp.vdot(d.ravel(), d.ravel()).real)
            parts.append(stack(wn))
            parts.append(stack(un))
        elif detail:
            ws = [p._data for p in params]
            parts.append(stack([xp.vdot(w.ravel(), w.ravel()).real for w in ws]))
            parts.append(xp.full(len(params), nan))
        else:
            parts.append(self._nans(xp, 2 * len(params)))
        if (step + 1) % self.detail_every == 0:  # the next detail step needs these weights
            if self._prev_w is None:
                self._prev_w = [p._data.copy() for p in params]
            else:
                for prev, p in zip(self._prev_w, params):
                    prev[...] = p._data
        if self.bins:
            parts.append(self._timed_hist(xp, grads, step))
        return xp.concatenate(parts).astype("float64", copy=False)

    def _nans(self, xp, n):
        key = (xp, n)
        a = self._edges.get(key)
        if a is None:
            a = self._edges[key] = xp.full(n, math.nan)
        return a

    def _timed_hist(self, xp, grads, step):
        # histograms are the costly part: with hist_every="auto" they are recomputed only as often as
        # keeps them under ~1% of the training step (the last one is repeated in between)
        now = time.perf_counter()
        interval = now - self._last_end if self._last_end else None
        self._last_end = now
        if interval is not None:
            self._interval = interval if self._interval is None else 0.9 * self._interval + 0.1 * interval
        if self._last_hist is not None and step - self._hist_step < self._hist_every:
            return self._last_hist
        counts = self._hist(xp, grads)
        cost = time.perf_counter() - now
        if self.hist_every == "auto" and self._interval:
            self._hist_every = max(1, math.ceil(cost / (0.01 * self._interval)))
        self._last_hist, self._hist_step = counts, step
        return counts

    def hist_edges(self, xp, dtype):
        """The bin edges on |grad|: [0, 10**(lo+w), ..., 10**(hi-w), max float] (bin b: edge b < |g| <= edge b+1)."""
        key = (xp, dtype)
        e = self._edges.get(key)
        if e is None:
            np = _backend.numpy
            lo, hi = self.hist_range
            w = (hi - lo) / self.bins
            host = np.concatenate([[0.0], 10.0 ** (lo + w * np.arange(1, self.bins)), [np.finfo(dtype).max]])
            e = self._edges[key] = xp.asarray(host.astype(dtype))
        return e

    def _hist(self, xp, grads):
        # one vectorised pass for every layer: a strided sample of each gradient, binned by
        # searchsorted on log-spaced edges (zeros fall below the first edge, Inf/NaN above the last)
        bins = self.bins
        samples, sizes = [], []
        for g in grads:
            if g is None or g.dtype.kind != "f":
                sizes.append(0)
                continue
            flat = g.ravel()
            s = flat[::max(1, flat.size // self.sample)]
            samples.append(s)
            sizes.append(s.size)
        if not samples:
            return xp.zeros(len(grads) * bins)
        key = tuple(sizes)
        offsets = self._offsets.get(key)
        if offsets is None:
            np = _backend.numpy
            host = np.repeat(np.arange(len(grads), dtype="int64") * (bins + 2), sizes)
            offsets = self._offsets[key] = xp.asarray(host)
        a = xp.abs(xp.concatenate(samples) if len(samples) > 1 else samples[0])
        idx = xp.searchsorted(self.hist_edges(xp, a.dtype), a) + offsets
        counts = xp.bincount(idx, minlength=len(grads) * (bins + 2)).reshape(len(grads), bins + 2)
        return counts[:, 1:bins + 1].ravel()

    def _on_op(self, node, args, results):
        if node._op != "relu" or not results:
            return
        out = results[0]._data
        if out.ndim < 2:
            return
        flat = out.reshape(out.shape[0], -1)
        dead = flat.shape[1] - _backend.xp_of(out).count_nonzero(flat.any(axis=0))
        # list.append is atomic under the GIL: no lock on the hot path
        self._dead_pending.append((self.step, node.scope or "relu", dead, flat.shape[1], node.site))

    # --- host side ---------------------------------------------------------------------------------
    def _schedule(self):
        # one flusher thread per monitor sends what is queued once the loop pauses or ends
        if not self._wake.is_set():
            self._wake.set()
        if self._timer is None:
            self._timer = threading.Thread(target=self._flusher, name="wb-monitor-flush", daemon=True)
            self._timer.start()

    def _flusher(self):
        while self._attached:
            self._wake.wait()
            time.sleep(1.0 / self.rate)
            self._wake.clear()
            try:
                self.flush()
            except Exception:  # a late flush from this thread must never raise into the interpreter
                pass

    def flush(self):
        """Copy queued rows to the host, check alarms, and send them to the widget now."""
        # the training thread and the flusher thread both flush: one at a time, so blocks of rows
        # reach the history and the browser in step order
        with self._flush_lock:
            self._flush()

    def _flush(self):
        with self._lock:
            pending, self._pending = self._pending, []
            dead_pending, self._dead_pending = self._dead_pending, []
            self._last_flush = time.monotonic()
        if not pending and not dead_pending:
            return
        np = _backend.numpy
        new_alarms = []
        if pending:
            xp = _backend.xp_of(pending[0][1])
            host = np.asarray(_host(xp.stack([r for _, r in pending])), dtype="float64")
            start = len(self._rows)
            for (step, _), row in zip(pending, host):
                if step in self._loss_override:
                    row[0] = self._loss_override.pop(step)
                self._steps.append(step)
                self._rows.append(row)
            # screen the whole block at once; only rows that may alarm are looked at one by one
            gn = np_sqrt(host[:, 1:1 + len(self.layers)])
            prev = np.vstack([self._prev_norm[None, :] if self._prev_norm is not None else
                              np.full((1, gn.shape[1]), np.nan), gn[:-1]])
            with np.errstate(invalid="ignore", divide="ignore"):
                flag = (~np.isfinite(gn)).any(1) | (gn > self.explode_at).any(1) | \
                    ((prev > 1e-8) & (gn > 10 * prev)).any(1) | \
                    (gn[:, self._first] < self.vanish_ratio * np.nanmax(np.where(np.isfinite(gn), gn, np.nan), 1))
            for k in np.flatnonzero(flag):
                self._prev_norm = prev[k]
                new_alarms += self._check(pending[k][0], host[k])
            self._prev_norm = gn[-1]
            self._send_rows(start, len(self._rows))
        for step, scope, dead, units, site in dead_pending:
            d = int(_host(dead))
            self._dead.setdefault(scope, []).append((step, d, units))
            frac = d / units if units else 0.0
            key = ("dead_relu", scope)
            if frac >= self.dead_fraction and key not in self._alarm_keys:
                self._alarm_keys.add(key)
                new_alarms.append(_alarm(step, scope, "dead_relu", "relu", site, frac,
                                         f"{d} of {units} units are zero for the whole batch"))
        if new_alarms:
            self._alarms += new_alarms
            self._post({"type": "monitor", "event": "alarms", "alarms": new_alarms})

    def _split(self, row):
        L, B = len(self.layers), self.bins
        loss = row[0]
        gn = np_sqrt(row[1:1 + L])
        wn = np_sqrt(row[1 + L:1 + 2 * L])
        un = np_sqrt(row[1 + 2 * L:1 + 3 * L])
        counts = row[1 + 3 * L:1 + 3 * L + L * B].reshape(L, B) if B else None
        return loss, gn, wn, un, counts

    def _metrics(self, rows):
        """[n, L, 3] grad_norm, weight_norm, update_ratio of host rows [n, width]."""
        np = _backend.numpy
        L = len(self.layers)
        gn = np_sqrt(rows[:, 1:1 + L])
        wn = np_sqrt(rows[:, 1 + L:1 + 2 * L])
        un = np_sqrt(rows[:, 1 + 2 * L:1 + 3 * L])
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = un / wn
        return np.stack([gn, wn, ratio], axis=2)

    def _counts(self, rows):
        L, B = len(self.layers), self.bins
        return rows[:, 1 + 3 * L:1 + 3 * L + L * B].reshape(len(rows), L, B)

    def _check(self, step, row):
        np = _backend.numpy
        loss, gn, wn, un, _ = self._split(row)
        out = []
        # the first non-finite gradient, nearest the loss first (backward order)
        for k in reversed(range(len(self.layers))):
            v = gn[k]
            if not math.isfinite(v):
                kind = "nan" if v != v else "inf"
                if ("nonfinite",) in self._alarm_keys:
                    break
                self._alarm_keys.add(("nonfinite",))
                op, site = (self._consumers or {}).get(self.layers[k], (None, None))
                detail = f"{'NaN' if kind == 'nan' else 'Inf'} in the gradient of {self.layers[k]}"
                if loss != loss or loss in (math.inf, -math.inf):
                    detail += f" (the loss itself is {loss})"
                if site is None:
                    detail += "; build the model under `with wb.viz.trace():` for its source line"
                out.append(_alarm(step, self.layers[k], kind, op, site, None, detail))
                break
        fin = np.isfinite(gn)
        for k, v in enumerate(gn):
            key = ("exploding", self.layers[k])
            prev = self._prev_norm[k] if self._prev_norm is not None else None
            grew = prev is not None and math.isfinite(prev) and prev > 1e-8 and math.isfinite(v) and v > 10 * prev
            big = math.isfinite(v) and v > self.explode_at
            if big or grew:
                if key not in self._alarm_keys:
                    self._alarm_keys.add(key)
                    why = f"‖grad‖ = {v:.3g} > {self.explode_at:g}" if big else f"‖grad‖ grew {v / prev:.1f}x in one step"
                    out.append(_alarm(step, self.layers[k], "exploding", None, None, float(v), why))
        # vanishing: the layer nearest the input gets a tiny fraction of the largest layer's gradient
        first = self._first
        last = int(np.argmax(np.where(fin, gn, -1.0))) if fin.any() else first
        if first != last and fin[first] and gn[last] > 0:
            ratio = gn[first] / gn[last]
            key = ("vanishing", self.layers[first])
            if ratio < self.vanish_ratio:
                if key not in self._alarm_keys:
                    self._alarm_keys.add(key)
                    out.append(_alarm(step, self.layers[first], "vanishing", None, None, float(ratio),
                                      f"‖grad‖ of {self.layers[first]} is {ratio:.2g} x that of {self.layers[last]} "
                                      f"(layers {self.layers[first]} … {self.layers[last]})"))
        return out

    def _send_rows(self, a, b):
        np = _backend.numpy
        if b <= a:
            return
        rows = np.stack(self._rows[a:b])
        loss = rows[:, 0].astype("<f4")
        metrics = self._metrics(rows).astype("<f4")
        bufs = [loss.tobytes(), metrics.tobytes()]
        hist = None
        if self.bins:
            counts = self._counts(rows).astype("<u4")
            bufs.append(counts.tobytes())
            hist = {"bins": self.bins, "lo": self.hist_range[0], "hi": self.hist_range[1]}
        header = {"type": "monitor", "event": "steps", "layers": self.layers, "metrics": list(METRICS),
                  "start": int(self._steps[a]), "n": b - a, "hist": hist}
        self._post(header, bufs)

    def _post(self, msg, buffers=None):
        try:
            self.send(msg, buffers)
        except Exception:  # no front-end (a script, a closed comm): the history still has everything
            pass

    def _on_msg(self, _w, content, _buffers):
        if isinstance(content, dict) and content.get("type") == "monitor_sync":
            # a view that (re)connects gets the whole history from a clean slate: live messages it may
            # have caught before asking would otherwise overlap the replay (a lost or doubled step)
            with self._flush_lock:
                self._flush()
                self._post({"type": "monitor", "event": "reset"})
                self._send_rows(0, len(self._rows))
                if self._alarms:
                    self._post({"type": "monitor", "event": "alarms", "alarms": list(self._alarms)})

    # --- public API --------------------------------------------------------------------------------
    def log(self, loss=None):
        """Record the loss of the latest step (a number or a one-element tensor).

        >>> mon.log(loss=loss)     # doctest: +SKIP
        """
        if loss is None:
            return
        if hasattr(loss, "_data"):
            loss = float(_host(loss._data).reshape(-1)[0])
        step = max(self.step - 1, 0)
        with self._lock:
            if self._rows and self._steps[-1] == step and not any(s == step for s, _ in self._pending):
                self._rows[-1][0] = float(loss)
            else:
                self._loss_override[step] = float(loss)

    @property
    def alarms(self):
        """Every alarm raised so far (dicts as sent to the widget)."""
        self.flush()
        return list(self._alarms)

    @property
    def history(self):
        """The numbers so far: {"step", "loss", "<metric>/<layer>", "hist/<layer>", "dead_relu/<scope>"} arrays.

        >>> mon.history["grad_norm/fc1.weight"][:3]     # doctest: +SKIP
        """
        self.flush()
        np = _backend.numpy
        width = 1 + 3 * len(self.layers) + len(self.layers) * self.bins
        rows = np.stack(self._rows) if self._rows else np.zeros((0, width))
        out = {"step": np.array(self._steps, dtype="int64"), "loss": rows[:, 0].copy()}
        mets = self._metrics(rows)
        counts = self._counts(rows).astype("int64") if self.bins else None
        for k, name in enumerate(self.layers):
            for f, m in enumerate(METRICS):
                out[f"{m}/{name}"] = mets[:, k, f]
            if self.bins:
                out[f"hist/{name}"] = counts[:, k, :]
        for scope, vals in self._dead.items():
            out[f"dead_relu/{scope}"] = np.array([d for _, d, _ in vals], dtype="int64")
        return out

    def history_frame(self):
        """``history`` as a pandas DataFrame indexed by step (scalar series only); needs pandas."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("history_frame() needs pandas (pip install pandas); mon.history has the same "
                              "numbers as numpy arrays") from None
        h = self.history
        cols = {k: v for k, v in h.items() if k != "step" and v.ndim == 1 and len(v) == len(h["step"])}
        return pd.DataFrame(cols, index=pd.Index(h["step"], name="step"))

    def plot(self, path=None):
        """A static PNG of the gradient flow (per-layer ‖grad‖ over steps, and the last step by layer).

        Returns an ``IPython.display.Image`` (or writes ``path``); needs matplotlib.
        """
        try:
            import matplotlib
            matplotlib.use("Agg", force=False)
            import matplotlib.pyplot as plt
        except ImportError:
            raise ImportError("plot() needs matplotlib (pip install matplotlib)") from None
        import io

        h = self.history
        steps = h["step"]
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.6), gridspec_kw={"width_ratios": [3, 2]})
        for name in self.layers:
            y = h[f"grad_norm/{name}"]
            ax1.plot(steps, y, label=name, linewidth=1.2)
        ax1.set_yscale("log")
        ax1.set_xlabel("step")
        ax1.set_ylabel("‖grad‖")
        ax1.set_title("gradient norm per layer")
        if len(self.layers) <= 12:
            ax1.legend(fontsize=7, loc="best")
        # the last step whose gradients were all finite (a NaN run would draw nothing)
        gn = _backend.numpy.array([h[f"grad_norm/{n}"] for n in self.layers]).T.reshape(len(steps), -1)
        ok = [k for k in range(len(steps)) if _backend.numpy.isfinite(gn[k]).all()]
        last = gn[ok[-1]] if ok else _backend.numpy.zeros(len(self.layers))
        ax2.bar(range(len(self.layers)), last, color="#4285f4")
        if (last > 0).any():
            ax2.set_yscale("log")
        ax2.set_xticks(range(len(self.layers)))
        ax2.set_xticklabels(self.layers, rotation=60, ha="right", fontsize=7)
        ax2.set_title(f"gradient flow (step {steps[ok[-1]]})" if ok else "gradient flow")
        for a in self._alarms:
            if a["kind"] in ("nan", "inf"):
                ax1.axvline(a["step"], color="#d32f2f", linestyle="--", linewidth=1)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=90)
        plt.close(fig)
        png = buf.getvalue()
        if path is not None:
            with open(path, "wb") as f:
                f.write(png)
            return path
        from IPython.display import Image

        return Image(png)

    def pause(self):
        """Stop watching for a while (e.g. during validation); ``resume()`` picks up at the next step.

        >>> mon.pause(); evaluate(model); mon.resume()     # doctest: +SKIP
        """
        if self._on_backward in graph.BACKWARD_HOOKS:
            graph.BACKWARD_HOOKS.remove(self._on_backward)
        if self._listening and self._on_op in graph.LISTENERS:
            graph.LISTENERS.remove(self._on_op)

    def resume(self):
        """Watch again after ``pause()``."""
        if not self._attached:
            raise RuntimeError("this monitor was detached; attach a new one with wb.viz.watch(model)")
        if self._on_backward not in graph.BACKWARD_HOOKS:
            graph.BACKWARD_HOOKS.append(self._on_backward)
        if self._listening and self._on_op not in graph.LISTENERS and self.step % self.detail_every == 0:
            graph.LISTENERS.append(self._on_op)
        self._last_end = None

    def detach(self, display=None):
        """Remove every hook; flush; show the static gradient-flow picture for readers without a kernel."""
        if not self._attached:
            return
        self._attached = False
        self.pause()
        if self._site_pending:
            graph.TRACE[0] = self._trace_prev
            self._site_pending = False
        self._wake.set()  # the flusher thread sees _attached False and ends
        self.flush()
        show = self.plot_on_detach if display is None else display
        if show and self._rows:
            try:
                from IPython import get_ipython
                from IPython.display import display as ipy_display
            except ImportError:
                return
            if get_ipython() is not None:
                try:
                    ipy_display(self.plot())
                except ImportError:  # no matplotlib: the numbers are still in mon.history
                    pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()
        return False


def np_sqrt(x):
    np = _backend.numpy
    with np.errstate(invalid="ignore"):
        return np.sqrt(x)


def _alarm(step, layer, kind, op, site, value, detail):
    return {"step": int(step), "layer": layer, "kind": kind, "op": op,
            "site": {"file": str(site[0]), "line": int(site[1]), "function": str(site[2])} if site else None,
            "value": value if value is None or math.isfinite(value) else None, "detail": detail}


def _consumers_of(roots, params, layers):
    """parameter path -> (op, site) of the op that consumed it (found once, on the first backward)."""
    from .snapshot import _start, walk

    path_of = {id(p): name for name, p in zip(layers, params)}
    starts = [s for s in (_start(r) for r in roots) if s is not None]
    out = {}
    for n in walk(starts):
        if type(n) is AccumulateGrad:
            continue
        for nxt, _ in n.next_functions:
            if type(nxt) is AccumulateGrad:
                t = nxt.variable
                name = path_of.get(id(t)) if t is not None else None
                if name is not None and name not in out:
                    out[name] = (n._op or n.name(), n.site)
    return out


def watch(model, every=1, histograms=True, *, display=True, **kw):
    """Attach a live gradient monitor to ``model``; it updates while the training loop runs.

    Per layer: gradient norm, weight norm, update/weight ratio, log10|grad| histograms; the loss (the
    backward root, or ``mon.log(loss=...)``); alarms for NaN/Inf (layer, op, source line), exploding
    and vanishing gradients and dead ReLUs. ``mon.detach()`` removes every hook and leaves a PNG.

    >>> import workbench as wb
    >>> mon = wb.viz.watch(model)                       # doctest: +SKIP
    >>> for step in range(100):                         # doctest: +SKIP
    ...     opt.zero_grad(); loss = loss_fn(model(x), y); loss.backward(); opt.step()
    >>> mon.detach()                                    # doctest: +SKIP
    """
    mon = Monitor(model, every=every, histograms=histograms, **kw)
    if display:
        mon.show()
    return mon
