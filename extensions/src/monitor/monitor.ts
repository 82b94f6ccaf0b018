// The gradient monitor: loss curve, per-layer norm charts and gradient heatmaps, and an alarm list,
// fed incrementally by "monitor" messages (see PROTOCOL.md). Nothing is redrawn from scratch on append.
import { h } from "../core/dom";
import { fmt, siteLine } from "../core/format";
import { ensureStyle } from "../core/style";
import { type BufferLike, asFloat32, asUint32 } from "./buffers";
import { Heatmap } from "./heatmap";
import { LineChart } from "./line-chart";
import { Overview } from "./overview";

export interface Alarm {
  step: number;
  layer: string;
  kind: "nan" | "inf" | "vanishing" | "exploding" | "dead_relu";
  op: string | null;
  site: { file: string; line: number; function: string } | null;
  value: number | null;
  detail: string;
}

export type MonitorMessage =
  | { type: "monitor"; event: "steps"; layers: string[]; metrics: string[]; start: number; n: number; every?: number;
      hist: { bins: number; lo: number; hi: number } | null }
  | { type: "monitor"; event: "alarms"; alarms: Alarm[] }
  | { type: "monitor"; event: "reset" };

export interface MonitorHandle {
  root: HTMLElement;
  /** Feeds one message from the kernel (with its binary buffers). Unknown events are ignored. */
  append(msg: MonitorMessage, buffers?: BufferLike[]): void;
  /** Shows a message above the charts (e.g. the kernel went away); null hides it. */
  notice(text: string | null): void;
  destroy(): void;
}

const ALARM_ICON: Record<Alarm["kind"], string> = { nan: "⚠ NaN", inf: "⚠ Inf", vanishing: "↓ vanishing", exploding: "↑ exploding", dead_relu: "✕ dead ReLU" };
const METRIC_LABEL: Record<string, string> = { grad_norm: "‖grad‖", weight_norm: "‖w‖", update_ratio: "‖Δw‖/‖w‖" };

/** A layer's history, kept so its detail charts can be drawn whenever the user asks for them. */
interface LayerData { rows: number[][]; cols: Uint32Array[] }

export function renderMonitor(el: HTMLElement, opts: { title?: string; saved?: boolean } = {}): MonitorHandle {
  ensureStyle(el.ownerDocument);
  const banner = h("div", { class: "wb-banner", role: "alert", hidden: !opts.saved },
    opts.saved ? "Saved view: the charts and alarms as they were when the notebook was saved (no kernel needed)." : "");
  let loss = new LineChart("loss", ["loss"], false, 620, 120);
  const overviewSlot = h("div", { class: "wb-mon-overview" });
  const detail = h("div", { class: "wb-mon-detail", "aria-live": "polite" });
  // No alarms, no list: the status line says "no alarms"
  const alarmsHead = h("h4", { class: "wb-muted wb-alarms-head", hidden: true }, "alarms");
  const alarms = h("ul", { class: "wb-alarms", "aria-label": "alarms", hidden: true });
  const status = h("div", { class: "wb-status", role: "status", "aria-live": "polite" });
  const grid = h("div", { class: "wb-mon-grid" }, loss.el, overviewSlot, detail);
  const root = h("div", { class: "wb-root wb-monitor", tabindex: 0, "data-lm-suppress-shortcuts": "true", role: "region",
    "aria-label": opts.title ?? "gradient monitor" },
    h("div", { class: "wb-bar" }, h("span", { class: "wb-title" }, opts.title ?? "gradient monitor")),
    banner, alarmsHead, alarms, grid, status);
  el.replaceChildren(root);
  let overview: Overview | null = null;
  let layerNames: string[] = [], metricNames: string[] = [];
  let data: LayerData[] = [];
  let hist: { bins: number; lo: number; hi: number } | null = null;
  let start = 0, every = 1, shown = -1;
  let alarmCount = 0, steps = 0, lastLoss = NaN, latest = "";

  const say = (text: string) => (status.textContent = text);
  const summary = () => say(`${steps} steps · ${layerNames.length} layers · last loss ${fmt(lastLoss)} · ` +
    (alarmCount ? `${alarmCount} alarm${alarmCount === 1 ? "" : "s"}; latest: ${latest}` : "no alarms"));

  /** The detail of one parameter: its norms and update ratio over steps, and its gradient histogram. */
  function showDetail(k: number) {
    shown = k;
    const d = data[k];
    const chart = new LineChart(layerNames[k], metricNames.map((m) => METRIC_LABEL[m] ?? m), true, 620, 130);
    if (d.rows.length) chart.append(start, d.rows, every);
    const parts: Node[] = [chart.el];
    if (hist && d.cols.length) {
      const heat = new Heatmap(layerNames[k], hist.bins, hist.lo, hist.hi);
      heat.append(start, d.cols, every);
      chart.el.append(heat.el);
    }
    const close = h("button", { type: "button", class: "wb-btn" }, "close detail");
    close.addEventListener("click", () => {
      shown = -1;
      detail.replaceChildren();
    });
    detail.replaceChildren(h("h4", {}, `detail: ${layerNames[k]} `, close), ...parts);
    say(`Detail of ${layerNames[k]}`);
  }

  function steps_(msg: Extract<MonitorMessage, { event: "steps" }>, buffers: BufferLike[]) {
    const { n, metrics } = msg;
    const L = msg.layers.length, F = metrics.length, B = msg.hist?.bins ?? 0;
    if (!overview) {
      layerNames = msg.layers;
      metricNames = metrics;
      hist = msg.hist;
      start = msg.start;
      every = msg.every ?? 1;
      data = layerNames.map(() => ({ rows: [], cols: [] }));
      overview = new Overview(layerNames, showDetail, say);
      overviewSlot.replaceChildren(overview.el);
    }
    const lossBuf = asFloat32(buffers[0]);
    loss.append(msg.start, Array.from(lossBuf.subarray(0, n), (v) => [v]), msg.every ?? 1);
    const m = asFloat32(buffers[1]);
    const counts = msg.hist && buffers[2] ? asUint32(buffers[2]) : null;
    // Replayed history (a re-sync) may overlap what is known: keep only the new rows.
    const have = data[0]?.rows.length ?? 0;
    const skip = Math.max(0, Math.round((start + have * every - msg.start) / (msg.every ?? 1)));
    const gi = Math.max(0, metrics.indexOf("grad_norm"));
    const normRows: number[][] = [];
    for (let t = skip; t < n; t++) {
      const row: number[] = [];
      for (let li = 0; li < L; li++) {
        const r = Array.from(m.subarray((t * L + li) * F, (t * L + li + 1) * F));
        data[li].rows.push(r);
        row.push(r[gi]);
        if (counts) data[li].cols.push(counts.slice((t * L + li) * B, (t * L + li + 1) * B));
      }
      normRows.push(row);
    }
    overview!.append(msg.start + skip * (msg.every ?? 1), normRows, msg.every ?? 1);
    if (shown >= 0 && normRows.length) showDetail(shown);
    steps = Math.max(steps, msg.start + (n - 1) * (msg.every ?? 1) + 1);
    if (n) lastLoss = lossBuf[n - 1];
    summary();
  }

  function alarms_(list: Alarm[]) {
    for (const a of list) {
      alarmCount++;
      const where = [a.op, a.site ? siteLine({ file: a.site.file, line: a.site.line }) : null].filter(Boolean).join(" at ");
      // Errors (NaN/Inf) in the error colour, everything else in the warning colour, each said once.
      alarms.append(h("li", { class: a.kind === "nan" || a.kind === "inf" ? "wb-bad-nan" : "wb-bad-inf" },
        `${ALARM_ICON[a.kind] ?? a.kind}  step ${a.step} · ${a.layer}`, where ? ` · ${where}` : "", a.detail ? ` — ${a.detail}` : ""));
    }
    // Keep the DOM bounded on a run that alarms every step.
    while (alarms.childElementCount > 500) alarms.firstElementChild!.remove();
    if (list.length) latest = `${list[list.length - 1].kind} in ${list[list.length - 1].layer}`;
    alarmsHead.hidden = alarms.hidden = alarmCount === 0;
    summary();
  }

  return {
    root,
    append(msg, buffers = []) {
      if (msg.type !== "monitor") return;
      if (msg.event === "steps") steps_(msg, buffers);
      else if (msg.event === "alarms") alarms_(msg.alarms);
      else if (msg.event === "reset") {
        overview = null;
        overviewSlot.replaceChildren();
        detail.replaceChildren();
        data = [];
        shown = -1;
        alarms.replaceChildren();
        alarmCount = steps = 0;
        alarmsHead.hidden = alarms.hidden = true;
        const fresh = new LineChart("loss", ["loss"], false, 620, 120);
        loss.el.replaceWith(fresh.el);
        loss = fresh;
      }
    },
    notice(text) {
      banner.hidden = !text;
      banner.textContent = text ?? "";
    },
    destroy() {
      root.remove();
    },
  };
}

