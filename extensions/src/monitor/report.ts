// A monitor.v1 report (what the Python side saves: history downsampled, alarms) drawn by the same
// monitor view the live widget uses, fed as if the kernel had sent it. No kernel needed.
import type { JsonNumber } from "../core/types";
import { type Alarm, type MonitorHandle, renderMonitor } from "./monitor";

export const MONITOR_MIME = "application/vnd.workbench.monitor.v1+json";

export interface MonitorReport {
  format: "workbench.monitor";
  version: 1;
  title: string;
  layers: string[];
  metrics: string[];
  start: number;
  every: number;
  n: number;
  loss: (JsonNumber | null)[];
  /** [n][layers][metrics]; null: not measured at that step. */
  values: (JsonNumber | null)[][][];
  alarms: Alarm[];
}

const num = (v: JsonNumber | null) => (v === null ? NaN : typeof v === "number" ? v : v === "NaN" ? NaN : v === "Infinity" ? Infinity : -Infinity);

export function parseReport(data: unknown): MonitorReport {
  const r = (typeof data === "string" ? JSON.parse(data) : data) as MonitorReport | null;
  if (!r || r.format !== "workbench.monitor") throw new Error("not a workbench monitor report");
  if (r.version !== 1) throw new Error(`monitor report version ${r.version} is newer than this viewer (1); upgrade workbench`);
  return r;
}

export function renderReport(el: HTMLElement, data: unknown): MonitorHandle {
  const r = parseReport(data);
  const mon = renderMonitor(el, { title: r.title, saved: true });
  const L = r.layers.length, F = r.metrics.length;
  const loss = new Float32Array(r.n), metrics = new Float32Array(r.n * L * F);
  for (let t = 0; t < r.n; t++) {
    loss[t] = num(r.loss[t]);
    for (let k = 0; k < L; k++) for (let f = 0; f < F; f++) metrics[(t * L + k) * F + f] = num(r.values[t][k][f]);
  }
  mon.append({ type: "monitor", event: "steps", layers: r.layers, metrics: r.metrics, start: r.start, n: r.n, every: r.every, hist: null },
    [loss, metrics]);
  mon.append({ type: "monitor", event: "alarms", alarms: r.alarms });
  return mon;
}
