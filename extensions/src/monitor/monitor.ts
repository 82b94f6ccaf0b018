// The gradient monitor: loss curve, per-layer norm charts and gradient heatmaps, and an alarm list,
// fed incrementally by "monitor" messages (see PROTOCOL.md). Nothing is redrawn from scratch on append.
import { h } from "../core/dom";
import { fmt } from "../core/format";
import { ensureStyle } from "../core/style";
import { type BufferLike, asFloat32, asUint32 } from "./buffers";
import { Heatmap } from "./heatmap";
import { LineChart } from "./line-chart";

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

interface Layer { chart: LineChart; heat: Heatmap | null; card: HTMLElement }

export function renderMonitor(el: HTMLElement, opts: { title?: string } = {}): MonitorHandle {
  ensureStyle(el.ownerDocument);
  const banner = h("div", { class: "wb-banner", role: "alert", hidden: true });
  let loss = new LineChart("loss", ["loss"], false);
  const grid = h("div", { class: "wb-mon-grid" }, loss.el);
  const alarms = h("ul", { class: "wb-alarms", "aria-label": "alarms" });
  const status = h("div", { class: "wb-status", role: "status", "aria-live": "polite" });
  const root = h("div", { class: "wb-root wb-monitor", tabindex: 0, "data-lm-suppress-shortcuts": "true", role: "region",
    "aria-label": opts.title ?? "gradient monitor" },
    h("div", { class: "wb-bar" }, h("span", { class: "wb-title" }, opts.title ?? "gradient monitor")),
    banner, grid, h("h4", { class: "wb-muted", style: "margin:4px 8px 0" }, "alarms"), alarms, status);
  el.replaceChildren(root);
  const layers = new Map<string, Layer>();
  let alarmCount = 0, steps = 0;

  function layer(name: string, metrics: string[], hist: { bins: number; lo: number; hi: number } | null): Layer {
    let l = layers.get(name);
    if (!l) {
      const chart = new LineChart(name, metrics.map((m) => METRIC_LABEL[m] ?? m), true);
      const heat = hist ? new Heatmap(name, hist.bins, hist.lo, hist.hi) : null;
      if (heat) chart.el.append(heat.el);
      grid.append(chart.el);
      l = { chart, heat, card: chart.el };
      layers.set(name, l);
    }
    return l;
  }

  function steps_(msg: Extract<MonitorMessage, { event: "steps" }>, buffers: BufferLike[]) {
    const { n, start, metrics, hist } = msg;
    const every = msg.every ?? 1;
    const L = msg.layers.length, F = metrics.length, B = hist?.bins ?? 0;
    const lossBuf = asFloat32(buffers[0]);
    loss.append(start, Array.from(lossBuf.subarray(0, n), (v) => [v]), every);
    const m = asFloat32(buffers[1]);
    const counts = hist && buffers[2] ? asUint32(buffers[2]) : null;
    msg.layers.forEach((name, li) => {
      const l = layer(name, metrics, hist);
      const rows: number[][] = [];
      for (let t = 0; t < n; t++) rows.push(Array.from(m.subarray((t * L + li) * F, (t * L + li + 1) * F)));
      l.chart.append(start, rows, every);
      if (counts && l.heat) {
        const cols: Uint32Array[] = [];
        for (let t = 0; t < n; t++) cols.push(counts.subarray((t * L + li) * B, (t * L + li + 1) * B));
        l.heat.append(start, cols, every);
      }
    });
    steps = Math.max(steps, start + (n - 1) * every + 1);
    status.textContent = `${steps} steps · ${L} layers · last loss ${fmt(lossBuf[n - 1] ?? null)}`;
  }

  function alarms_(list: Alarm[]) {
    for (const a of list) {
      alarmCount++;
      const where = [a.op, a.site ? `${a.site.file}:${a.site.line}` : null].filter(Boolean).join(" at ");
      alarms.append(h("li", { class: a.kind === "nan" ? "wb-bad-nan" : a.kind === "inf" || a.kind === "exploding" ? "wb-bad-inf" : "" },
        `${ALARM_ICON[a.kind] ?? a.kind}  step ${a.step} · ${a.layer}`, where ? ` · ${where}` : "", a.detail ? ` — ${a.detail}` : ""));
    }
    // Keep the DOM bounded on a run that alarms every step.
    while (alarms.childElementCount > 500) alarms.firstElementChild!.remove();
    if (list.length) status.textContent = `${alarmCount} alarm${alarmCount === 1 ? "" : "s"}; latest: ${list[list.length - 1].kind} in ${list[list.length - 1].layer}`;
  }

  return {
    root,
    append(msg, buffers = []) {
      if (msg.type !== "monitor") return;
      if (msg.event === "steps") steps_(msg, buffers);
      else if (msg.event === "alarms") alarms_(msg.alarms);
      else if (msg.event === "reset") {
        for (const l of layers.values()) l.card.remove();
        layers.clear();
        alarms.replaceChildren();
        alarmCount = steps = 0;
        const fresh = new LineChart("loss", ["loss"], false);
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
