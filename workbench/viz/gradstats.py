"""Gradient statistics while a model trains: the collector under the gradient monitor (no widget, no comm).

``GradStats(model)`` registers one backward hook (``graph.BACKWARD_HOOKS``): when a backward pass that
accumulates into ``.grad`` ends, it computes, on the parameters' device and without a host sync,

* every step, every layer's (parameter path's) gradient norm (one BLAS dot per parameter),
* a histogram of log10|grad| (all layers in one vectorised pass over a strided sample of about
  ``sample`` elements per layer; with ``hist_every="auto"`` recomputed only as often as keeps it under
  ``HIST_BUDGET`` (0.2%) of the step, the last one repeated between),
* on detail steps the weight norm and the update ratio ‖Δw‖/‖w‖ (Δw from a copy of the weights taken
  at the step before): every ``detail_every`` steps; with ``"auto"`` every 10, or a multiple of 10
  when that would take over ``DETAIL_BUDGET`` (0.2%) of the step (a small model's fast steps). Both
  budgets start after ``WARMUP`` (50) steps, so a short run gets the full picture,
* the loss: the root of the backward pass when it has one element, or what ``mon.log(loss=...)`` says,
* with ``snapshots_every=N`` (or ``snapshot()`` for the next step), the tape of every N-th step in
  ``series`` (``series.py``: the structure once, per step one gradient and value norm per node).

Each step's numbers are written straight into a row of a preallocated device block (no stack or
concatenate per step; rows start as NaN, so a step writes only what it has); the blocks are copied to
the host together, at most ``rate`` times a second, handed to the listeners (the monitor widget
sends them to the browser, PROTOCOL.md section 4) and checked for alarms: the first NaN/Inf gradient (layer, op, forward line),
exploding and vanishing gradients, dead ReLU units (a listener on the tape counts, per ReLU call, the
units that are zero for the whole batch, on the forward pass of every detail step).
"""
import io
import math
import threading
import time
import warnings

from .. import _backend
from ..autograd import graph
from ..autograd.graph import AccumulateGrad, walk
from .recorder import site_dict
from .series import TapeSeries

METRICS = ("grad_norm", "weight_norm", "update_ratio")


def _host(arr):
    return _backend.to_device(arr, _backend.CPU)


class GradStats:
    """Per-layer gradient statistics of ``model``, collected at the end of every backward pass.

    ``listeners`` are called on the flushing thread as ``fn("rows", start, end, norms)`` (host rows
    ``start..end-1`` are ready) and ``fn("alarms", alarms)``; ``history`` and ``alarms`` hold
    everything. ``wb.viz.watch`` shows it in a widget; used alone it needs no notebook.

    >>> import workbench as wb
    >>> model = wb.nn.Linear(3, 1)
    >>> stats = GradStats(model)
    >>> model(wb.ones(2, 3)).sum().backward()
    >>> stats.detach(); stats.history["grad_norm/weight"].shape
    (1,)
    """

    def __init__(self, model, every=1, histograms=True, bins=32, hist_range=(-10.0, 2.0), detail_every="auto",
                 hist_every="auto", sample=1024, rate=10.0, dead_relu=True, explode_at=1e3, vanish_ratio=1e-3,
                 dead_fraction=0.5, snapshots_every=None):
        self.series = TapeSeries(model, snapshots_every)  # validates snapshots_every before anything is hooked
        if every < 1 or detail_every != "auto" and (not isinstance(detail_every, int) or detail_every < 1):
            raise ValueError(f"watch(): every must be >= 1 and detail_every 'auto' or an int >= 1, got {every} and "
                             f"{detail_every!r}")
        named = [(p_path, p) for p_path, p in model.named_parameters() if p.requires_grad]
        if not named:
            raise ValueError("watch(): the model has no parameters that require grad")
        self.model = model
        self.layers = [p for p, _ in named]
        self._first = next((k for k, name in enumerate(self.layers) if not name.endswith("bias")), 0)
        self._params = [p for _, p in named]
        self.every, self.detail_every = int(every), detail_every
        self.bins = int(bins) if histograms else 0
        self.hist_range = (float(hist_range[0]), float(hist_range[1]))
        self.sample = int(sample)
        self.rate = float(rate)
        self.explode_at, self.vanish_ratio, self.dead_fraction = explode_at, vanish_ratio, dead_fraction
        self.listeners = []
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        # device side: step k is row k. Rows [loss, |grad|^2 x L, |w|^2 x L, |dw|^2 x L] are written
        # into the current block (rows start NaN); full blocks wait in _full for the next flush
        self._width = 1 + 3 * len(named)
        self._blk = None
        self._blk_n = 0
        self._blk_xp = self._blk_type = None
        self._real = True  # no complex parameters: the plain r.dot(r) norms
        self._full = []  # (device block, rows used)
        self._hist_new = []  # (step, device counts [L * bins]) recomputed since the last flush
        self._loss_override = {}  # step -> loss given by log() before the step reached the host
        # host side (numpy), filled by flushes: row k is step k
        self._rows = _Grow(self._width, "float64")
        # each recomputed histogram once, and its step: a row shows the latest at or before its step
        self._hcounts = _Grow(len(named) * self.bins, "int64")
        self._hsteps = _Grow(None, "int64")
        self._alarms = []
        self._alarm_keys = set()
        self._level = None  # per layer: the running level of log10 ‖grad‖ that alarms are judged against
        self._dead = {}  # relu scope -> list of (step, dead, units) device pairs (host after flush)
        self._dead_pending = []
        self._n_backward = 0
        self.step = 0
        self._consumers = None
        self._prev_w = None
        self._last_flush = 0.0
        self._timer = None
        self._wake = threading.Event()
        self._period = 1.0 / self.rate
        self._edges = {}
        self._offsets = {}
        if hist_every != "auto" and (not isinstance(hist_every, int) or hist_every < 1):
            raise ValueError(f"watch(): hist_every must be 'auto' or an int >= 1, got {hist_every!r}")
        self.hist_every = hist_every
        self._hist_every = 1 if hist_every == "auto" else hist_every
        self._hist_step = -(1 << 62)  # the step of the last histogram
        self._hist_cost = None
        # detail steps (weight and update norms, dead ReLUs): every detail_every steps; "auto": every
        # DETAIL_BASE steps, or a multiple of it if that would take over DETAIL_BUDGET of the step
        self._detail_gap = DETAIL_BASE if detail_every == "auto" else detail_every
        self._next_detail = 0
        self._detail_cost = self._copy_cost = None
        self._tick_t = self._tick_step = None  # the clock: time per training step, from sparse ticks
        self._interval = None
        self._attached = True
        self._trace_prev = graph.TRACE[0]
        graph.TRACE[0] = max(2, graph.TRACE[0])  # the first forward records sites: alarms name the line
        self._site_pending = True
        graph.BACKWARD_HOOKS.append(self._on_backward)
        self._listening = bool(dead_relu)
        self._listener = None  # the tape listener's handle while dead ReLUs are being counted
        if self._listening:
            self._toggle_listener(True)  # step 0 is a detail step

    # --- hooks (the hot path: no host sync here) ------------------------------------------------
    def _on_backward(self, phase, roots):
        # one call per backward, kept short: interpreted code that runs once a step is paid for again
        # in the step around it (the caches it evicts), so the rare work is in other methods
        try:
            series = self.series
            if phase == "begin":
                if self._site_pending:
                    self._first_backward(roots)
                if series.pending:  # a kept step's backward raised: its numbers are not a step's
                    series.drop()
                if series.armed or series.every is not None:
                    self._begin_snapshot(roots)
                return  # the rest is done at the end of the backward, which is shown the roots again
            if series.pending:
                series.end()
            n = self._n_backward = self._n_backward + 1
            if (n - 1) % self.every:
                return
            step = self.step
            self.step = step + 1
            params = self._params
            with self._lock:  # the flusher swaps blocks under this lock: a row is written whole or not at all
                blk, i, xp = self._blk, self._blk_n, self._blk_xp
                if blk is None or i == _BLOCK or type(params[0]._data) is not self._blk_type:
                    blk, i, xp = self._new_block()
                row = blk[i]  # a view: every number below is written into it on the device, no host sync
                if roots and roots[0]._data.size == 1:  # the loss
                    d = roots[0]._data
                    row[0] = d if d.ndim == 0 else d.reshape(())
                if self._real:  # squared norms (roots taken on the host): r.dot(r), one BLAS call each
                    k = 1
                    for p in params:
                        g = p._grad
                        if g is not None:
                            r = g._data.ravel()
                            row[k] = r.dot(r)
                        k += 1
                else:
                    for k, p in enumerate(params, 1):
                        if p._grad is not None:
                            row[k] = _sq(xp, p._grad._data)
                nd = self._next_detail
                if step == nd:
                    self._detail(xp, row, step)
                elif step + 1 == nd:  # the next detail step needs these weights
                    self._copy_weights()
                self._blk_n = i + 1
                if step - self._hist_step >= self._hist_every and self.bins:
                    self._hist_new.append((step, self._timed_hist(xp, step)))
            if self._listening and (self.step == self._next_detail) != (self._listener is not None):
                self._toggle_listener()
            if time.monotonic() - self._last_flush >= self._period:
                self.flush()
            elif not self._wake.is_set():
                self._schedule()
        except Exception as e:  # the monitor must never break the training loop it watches
            self.detach()
            warnings.warn(f"wb.viz.watch: the gradient monitor stopped after an error and detached itself: "
                          f"{type(e).__name__}: {e}", RuntimeWarning, stacklevel=2)

    def _first_backward(self, roots):
        # which op consumed each parameter (for the alarms); the forward before it recorded sites
        self._consumers = _consumers_of(roots, self._params, self.layers)
        graph.TRACE[0] = self._trace_prev
        self._site_pending = False

    def _begin_snapshot(self, roots):
        # a kept step (snapshots_every, snapshot()): the series reads the graph now, while it is whole
        if self._n_backward % self.every == 0 and self.series.wants(self.step):
            self.series.begin(self.step, roots)

    def _new_block(self):
        if self._blk is not None:
            self._full.append((self._blk, self._blk_n))
        data = self._params[0]._data
        xp = _backend.xp_of(data)
        self._blk = xp.full((_BLOCK, self._width), math.nan)
        self._blk_xp, self._blk_type, self._blk_n = xp, type(data), 0
        self._real = all(p._data.dtype.kind != "c" for p in self._params)
        return self._blk, 0, xp

    def _toggle_listener(self, on=None):
        # dead ReLUs change slowly: they are counted on the forward of every detail step
        on = self._listener is None if on is None else on
        if on and self._listener is None:
            self._listener = graph.add_listener(self._on_op)
        elif not on and self._listener is not None:
            self._listener.remove()
            self._listener = None

    def _detail(self, xp, row, step):
        # squared weight norms and |w - w_before|^2 (w_before: copied at the step before)
        t0 = self._tick(step)
        params = self._params
        L = len(params)
        prev = self._prev_w
        for k, p in enumerate(params):
            row[1 + L + k] = _sq(xp, p._data)
            if prev is not None:  # the weights of the step before; refilled before the next detail step
                d = prev[k]
                xp.subtract(p._data, d, out=d)
                row[1 + 2 * L + k] = _sq(xp, d)
        gap = self._detail_gap
        if self.detail_every == "auto":
            self._detail_cost = _low(time.perf_counter() - t0, self._detail_cost)
            if self._interval and self._copy_cost is not None and step >= WARMUP:
                # the gap stays a multiple of DETAIL_BASE, and at most doubles at a time
                per = (self._detail_cost + self._copy_cost) / (DETAIL_BUDGET * self._interval * DETAIL_BASE)
                gap = DETAIL_BASE * max(1, min(2 * gap // DETAIL_BASE, math.ceil(per)))
                self._detail_gap = gap
        self._next_detail = step + gap
        if gap == 1:
            self._copy_weights()

    def _copy_weights(self):
        t0 = time.perf_counter()
        if self._prev_w is None:
            self._prev_w = [p._data.copy() for p in self._params]
        else:
            for prev, p in zip(self._prev_w, self._params):
                prev[...] = p._data
        self._copy_cost = _low(time.perf_counter() - t0, self._copy_cost)

    def _tick(self, step):
        """Update the time-per-step estimate (called on the sparse steps that do timed work); returns now."""
        now = time.perf_counter()
        if self._tick_t is not None and step > self._tick_step:
            self._interval = _low((now - self._tick_t) / (step - self._tick_step), self._interval)
        self._tick_t, self._tick_step = now, step
        return now

    def _timed_hist(self, xp, step):
        # histograms are the costly part: with hist_every="auto" they are recomputed only as often as
        # keeps them under HIST_BUDGET of the training step (steps in between show the last one). The
        # step time comes from _tick (nothing is timed on the other steps). Both estimates follow
        # their lows at once and their highs slowly: wall time on a shared machine includes the
        # neighbours' time slices, which would loosen the budget
        t0 = self._tick(step)
        counts = self._hist(xp, [p._grad._data if p._grad is not None else None for p in self._params])
        t1 = time.perf_counter()
        if self.hist_every == "auto":
            self._hist_cost = _low(t1 - t0, self._hist_cost)
            if self._interval and step >= WARMUP:
                # at most doubled at a time: one histogram slowed by a neighbour must not freeze the heatmap
                want = math.ceil(self._hist_cost / (HIST_BUDGET * self._interval))
                self._hist_every = max(1, min(2 * self._hist_every, want))
        self._hist_step = step
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
        # while the loop runs, the training thread flushes every 1/rate seconds itself and this thread
        # only sleeps; once the loop pauses or ends it sends what is left, 1.5/rate after the last flush
        while self._attached:
            self._wake.wait()
            self._wake.clear()
            while self._attached:
                # a grace period past the training thread's own flush time, so that a running loop
                # always flushes on its own thread (where the rows are in cache) and this one sleeps
                wait = self._last_flush + 1.5 * self._period - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                    continue
                if self._blk_n or self._full or self._dead_pending:
                    try:
                        self.flush()
                    except Exception:  # a late flush from this thread must never raise into the interpreter
                        pass
                break

    def flush(self):
        """Copy queued rows to the host, check alarms, and send them to the widget now."""
        # the training thread and the flusher thread both flush: one at a time, so blocks of rows
        # reach the history and the browser in step order
        with self._flush_lock:
            self._flush()

    def _flush(self):
        with self._lock:
            blocks, self._full = self._full, []
            if self._blk_n:
                blocks.append((self._blk, self._blk_n))
                self._blk, self._blk_n = None, 0
            hists, self._hist_new = self._hist_new, []
            dead_pending, self._dead_pending = self._dead_pending, []
            self._last_flush = time.monotonic()
        if not blocks and not dead_pending:
            return
        np = _backend.numpy
        new_alarms = []
        if blocks:
            parts = [np.asarray(_host(b[:n]), dtype="float64") for b, n in blocks]
            host = parts[0] if len(parts) == 1 else np.concatenate(parts)
            start = self._rows.n  # step `start` is the first of these rows
            end = start + len(host)
            for step in [s for s in self._loss_override if start <= s < end]:
                host[step - start, 0] = self._loss_override.pop(step)
            if hists:
                xp = _backend.xp_of(hists[0][1])
                self._hcounts.extend(np.asarray(_host(xp.stack([c for _, c in hists]))))
                self._hsteps.extend([s for s, _ in hists])
            self._rows.extend(host)
            # screen the whole block at once; only rows that may alarm are looked at one by one
            L = len(self.layers)
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                norms = np.sqrt(host[:, 1:])  # [n, 3L]: grad, weight and update norms
                gn = norms[:, :L]
            for k in range(len(host)):
                new_alarms += self._judge(start + k, host[k, 0], gn[k])
            self._emit("rows", start, end, norms)
        for step, scope, dead, units, site in dead_pending:
            d = dead if type(dead) is int else int(_host(dead))
            self._dead.setdefault(scope, []).append((step, d, units))
            frac = d / units if units else 0.0
            key = ("dead_relu", scope)
            if frac >= self.dead_fraction and key not in self._alarm_keys:
                self._alarm_keys.add(key)
                new_alarms.append(_alarm(step, scope, "dead_relu", "relu", site, frac,
                                         f"{d} of {units} units are zero for the whole batch"))
        if new_alarms:
            self._alarms += new_alarms
            self._emit("alarms", new_alarms)

    def _emit(self, *event):
        for fn in list(self.listeners):
            fn(*event)

    def _metrics(self, rows, norms=None, dtype="float64"):
        """[n, L, 3] grad_norm, weight_norm, update_ratio of host rows [n, width] (norms: their roots)."""
        np = _backend.numpy
        L = len(self.layers)
        out = np.empty((len(rows), L, 3), dtype=dtype)
        with np.errstate(divide="ignore", invalid="ignore"):
            if norms is None:
                norms = np.sqrt(rows[:, 1:])
            out[:, :, 0] = norms[:, :L]
            out[:, :, 1] = norms[:, L:2 * L]
            np.divide(norms[:, 2 * L:], norms[:, L:2 * L], out=out[:, :, 2])
        return out

    def _counts(self, a, b):
        """[b - a, L, bins] histogram counts of steps a..b-1 (int64)."""
        np = _backend.numpy
        L, B = len(self.layers), self.bins
        store = self._hcounts.view()
        if not len(store):
            return np.zeros((b - a, L, B), dtype="int64")
        idx = np.searchsorted(self._hsteps.view(), np.arange(a, b), side="right") - 1
        return store[np.maximum(idx, 0)].reshape(b - a, L, B)

    def _judge(self, step, loss, gn):
        """Alarms for one step's gradient norms, judged against each layer's smoothed level.

        Healthy training wobbles: a bias gradient may dip tenfold and come back. So growth counts
        only when it is sustained (PATIENCE steps in a row) above ten times the layer's running level
        (an average of log10 ‖grad‖ over the first WARMUP_ALARMS steps, then an exponential moving
        average), and only for layers that carry a real share of the gradient; the absolute bound
        ``explode_at`` and the vanishing ratio must hold PATIENCE steps too. NaN/Inf alarm at once.
        """
        np = _backend.numpy
        out = []
        fin = np.isfinite(gn)
        if not fin.all() and ("nonfinite",) not in self._alarm_keys:
            # the first non-finite gradient, nearest the loss first (backward order)
            k = int(np.flatnonzero(~fin)[-1])
            v = gn[k]
            kind = "nan" if v != v else "inf"
            self._alarm_keys.add(("nonfinite",))
            op, site = (self._consumers or {}).get(self.layers[k], (None, None))
            detail = f"{'NaN' if kind == 'nan' else 'Inf'} in the gradient of {self.layers[k]}"
            if loss != loss or loss in (math.inf, -math.inf):
                detail += f" (the loss itself is {loss})"
            if site is None:
                detail += "; build the model under `with wb.viz.trace():` for its source line"
            out.append(_alarm(step, self.layers[k], kind, op, site, None, detail))
        pos = fin & (gn > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            lg = np.where(pos, np.log10(np.where(pos, gn, 1.0)), np.nan)
        if self._level is None:
            self._level = np.full(len(gn), np.nan)
            self._seen = np.zeros(len(gn), dtype="int64")
            self._streaks = {kind: np.zeros(len(gn), dtype="int64") for kind in ("grow", "big", "vanish")}
        level, seen, streaks = self._level, self._seen, self._streaks
        top = np.nanmax(lg) if pos.any() else np.nan
        big = fin & (gn > self.explode_at)
        # growth: ten times the running level, in a layer with at least 1e-3 of the largest gradient
        grow = pos & (seen >= WARMUP_ALARMS) & (lg - level > 1.0) & (lg >= top - 3.0)
        streaks["big"] = np.where(big, streaks["big"] + 1, 0)
        streaks["grow"] = np.where(grow, streaks["grow"] + 1, 0)
        for k in np.flatnonzero((streaks["big"] >= PATIENCE) | (streaks["grow"] >= PATIENCE)):
            key = ("exploding", self.layers[k])
            if key in self._alarm_keys:
                continue
            self._alarm_keys.add(key)
            v = float(gn[k])
            if streaks["big"][k] >= PATIENCE:
                why = f"‖grad‖ = {v:.3g}, above {self.explode_at:g} for {PATIENCE} steps in a row"
            else:
                why = (f"‖grad‖ = {v:.3g}, over 10x its running level ({10 ** level[k]:.3g}) for {PATIENCE} steps "
                       "in a row")
            out.append(_alarm(step, self.layers[k], "exploding", None, None, v, why))
        # the running level: the mean of the first WARMUP_ALARMS steps, then an exponential average
        n = seen + pos
        mean = np.where(seen > 0, level + (lg - level) / np.maximum(n, 1), lg)
        ema = level + LEVEL_RATE * (lg - level)
        self._level = np.where(pos, np.where(seen < WARMUP_ALARMS, mean, ema), level)
        self._seen = n
        # vanishing: the layer nearest the input gets a tiny share of the largest layer's gradient
        first = self._first
        lv = self._level.copy()
        if fin[first] and gn[first] == 0:  # no gradient at all reaches it: as vanished as it gets
            lv[first] = -np.inf
        known = np.isfinite(lv)
        warm = seen[first] >= WARMUP_ALARMS or lv[first] == -np.inf
        if (known[first] or lv[first] == -np.inf) and known.sum() >= 1 and warm:
            last = int(np.nanargmax(np.where(known, lv, np.nan)))
            ratio = 10 ** (lv[first] - lv[last])
            van = first != last and ratio < self.vanish_ratio
            streaks["vanish"][first] = streaks["vanish"][first] + 1 if van else 0
            key = ("vanishing", self.layers[first])
            if streaks["vanish"][first] >= PATIENCE and key not in self._alarm_keys:
                self._alarm_keys.add(key)
                out.append(_alarm(step, self.layers[first], "vanishing", None, None, float(ratio),
                                  f"‖grad‖ of {self.layers[first]} is {ratio:.2g} x that of {self.layers[last]} "
                                  f"(running levels, {PATIENCE} steps in a row)"))
        return out

    def block(self, a, b, norms=None):
        """Host rows ``a..b-1`` as (loss [n] float32, metrics [n, L, 3] float32, hist counts [n, L, bins] or None)."""
        rows = self._rows.view()[a:b]
        counts = self._counts(a, b) if self.bins else None
        return rows[:, 0].astype("<f4"), self._metrics(rows, norms, "<f4"), counts

    def replay(self, fn):
        """Flush, then call ``fn("reset")``, ``fn("rows", 0, n, None)`` and ``fn("alarms", all)`` under the flush lock.

        A view that (re)connects gets the whole history from a clean slate: live events it may have
        caught before asking would otherwise overlap the replay (a lost or doubled step).
        """
        with self._flush_lock:
            self._flush()
            fn("reset")
            if self._rows.n:
                fn("rows", 0, self._rows.n, None)
            if self._alarms:
                fn("alarms", list(self._alarms))

    # --- public API --------------------------------------------------------------------------------
    def log(self, loss=None):
        """Record the loss of the latest step (a number or a one-element tensor).

        >>> model = wb.nn.Linear(3, 1); stats = GradStats(model)
        >>> model(wb.ones(2, 3)).sum().backward(); stats.log(loss=2.5)
        >>> stats.detach(); stats.history["loss"]
        array([2.5])
        """
        if loss is None:
            return
        if hasattr(loss, "_data"):
            loss = float(_host(loss._data).reshape(-1)[0])
        step = max(self.step - 1, 0)
        with self._flush_lock:  # flushes are the only writers of host rows and readers of the overrides
            if step < self._rows.n:
                self._rows.a[step, 0] = float(loss)
            else:
                self._loss_override[step] = float(loss)

    def snapshot(self):
        """Keep the tape of the next step in ``series`` (as ``snapshots_every`` does every N steps).

        Call it before the step's ``loss.backward()``: the graph is read while that backward pass runs.

        >>> model = wb.nn.Linear(3, 1); stats = GradStats(model)
        >>> stats.snapshot(); model(wb.ones(2, 3)).sum().backward(); stats.detach(); stats.series.steps
        [0]
        """
        self.series.arm()

    # --- values other loggers hand over (SummaryWriter) ------------------------------------------------
    def feed(self, kind, tag, value, step):
        """A scalar or histogram logged elsewhere (``SummaryWriter.add_scalar``/``add_histogram`` call this
        while the monitor is attached): a scalar whose tag names a loss becomes the monitor's loss, and
        every value is kept in ``external["<kind>/<tag>"]`` as ``(step, value)`` pairs.

        >>> stats = GradStats(wb.nn.Linear(3, 1))
        >>> stats.feed("scalar", "train/loss", 0.5, 3); stats.detach(); stats.external
        {'scalar/train/loss': [(3, 0.5)]}
        """
        if kind == "scalar" and "loss" in tag.lower():
            self.log(loss=value)
        self.external.setdefault(f"{kind}/{tag}", []).append((step, value))

    @property
    def external(self):
        """What other loggers fed (:meth:`feed`): {"scalar/<tag>" or "histogram/<tag>": [(step, value), ...]}."""
        return self.__dict__.setdefault("_external", {})

    @property
    def alarms(self):
        """Every alarm raised so far (dicts as sent to the widget)."""
        self.flush()
        return list(self._alarms)

    @property
    def history(self):
        """The numbers so far: {"step", "loss", "<metric>/<layer>", "hist/<layer>", "dead_relu/<scope>"} arrays.

        >>> model = wb.nn.Linear(3, 1); stats = GradStats(model)
        >>> for _ in range(3):
        ...     model(wb.ones(2, 3)).sum().backward()
        >>> stats.detach(); stats.history["grad_norm/weight"].shape
        (3,)
        """
        np = _backend.numpy
        with self._flush_lock:
            self._flush()
            rows = self._rows.view().copy()
            counts = self._counts(0, len(rows)) if self.bins else None
        out = {"step": np.arange(len(rows), dtype="int64"), "loss": rows[:, 0].copy()}
        mets = self._metrics(rows)
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

        >>> model = wb.nn.Linear(3, 1); stats = GradStats(model)
        >>> model(wb.ones(2, 3)).sum().backward()
        >>> stats.pause(); model(wb.ones(2, 3)).sum().backward(); stats.resume()   # not counted
        >>> model(wb.ones(2, 3)).sum().backward(); stats.detach(); stats.step
        2
        """
        if self._on_backward in graph.BACKWARD_HOOKS:
            graph.BACKWARD_HOOKS.remove(self._on_backward)
        if self._listening:
            self._toggle_listener(False)

    def resume(self):
        """Watch again after ``pause()``."""
        if not self._attached:
            raise RuntimeError("this monitor was detached; attach a new one with wb.viz.watch(model)")
        if self._on_backward not in graph.BACKWARD_HOOKS:
            graph.BACKWARD_HOOKS.append(self._on_backward)
        if self._listening and self.step == self._next_detail:
            self._toggle_listener(True)
        self._tick_t = None  # the pause is no training step

    def detach(self):
        """Remove every hook and flush what is queued (the statistics stay readable)."""
        if not self._attached:
            return
        self._attached = False
        self.pause()
        if self._site_pending:
            graph.TRACE[0] = self._trace_prev
            self._site_pending = False
        self._wake.set()  # the flusher thread sees _attached False and ends
        self.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()
        return False


_BLOCK = 256  # rows per device block
HIST_BUDGET = 0.002  # hist_every="auto": histograms take at most this fraction of the training step
DETAIL_BASE = 10  # detail_every="auto": detail steps every DETAIL_BASE steps, or a multiple of it if that
DETAIL_BUDGET = 0.002  # would take over DETAIL_BUDGET of the step (weight norms, update copy)
PATIENCE = 3  # an exploding or vanishing condition must hold this many steps in a row to alarm
WARMUP_ALARMS = 10  # steps averaged into a layer's first running level (no growth alarms before)
LEVEL_RATE = 0.1  # then the running level follows log10 ‖grad‖ with this exponential-average rate
WARMUP = 50  # the first steps get every histogram and a detail step every DETAIL_BASE (a short run's
# picture stays full; the budgets are for long runs, where a fixed cost up front does not count)


class _Grow:
    """A host array that grows by doubling: ``extend`` appends rows, ``view()`` is the filled part."""

    def __init__(self, width, dtype):
        self.a = _backend.numpy.empty((64,) if width is None else (64, width), dtype=dtype)
        self.n = 0

    def extend(self, rows):
        n = self.n + len(rows)
        if n > len(self.a):
            a = _backend.numpy.empty((max(n, 2 * len(self.a)),) + self.a.shape[1:], dtype=self.a.dtype)
            a[:self.n] = self.a[:self.n]
            self.a = a
        self.a[self.n:n] = rows
        self.n = n

    def view(self):
        return self.a[:self.n]


def _sq(xp, a):
    """The squared norm of an array (on its device): one BLAS dot."""
    r = a.ravel()
    return r.dot(r) if r.dtype.kind != "c" else xp.vdot(r, r).real


def _low(new, est):
    """A running estimate that takes a lower value at once and a higher one a fifth at a time."""
    return new if est is None or new < est else 0.8 * est + 0.2 * new


def _alarm(step, layer, kind, op, site, value, detail):
    return {"step": int(step), "layer": layer, "kind": kind, "op": op,
            "site": site_dict(site),  # a notebook cell as IPython names it: "Cell In[3]"
            "value": value if value is None or math.isfinite(value) else None, "detail": detail}


def _consumers_of(roots, params, layers):
    """parameter path -> (op, site) of the op that consumed it (found once, on the first backward)."""
    path_of = {id(p): name for name, p in zip(layers, params)}
    starts = graph.roots_of(roots)
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
