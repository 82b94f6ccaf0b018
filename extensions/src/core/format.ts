// Number and summary formatting shared by the graph, the details panel and the debugger.
import type { JsonNumber, Summary } from "./types";

export function toNumber(v: JsonNumber): number {
  return v === "NaN" ? NaN : v === "Infinity" ? Infinity : v === "-Infinity" ? -Infinity : v;
}

/** Four significant digits, like micrograd's "%.4f" but readable for 1e-7 and 1e9 too. */
export function fmt(v: JsonNumber | null | undefined): string {
  if (v === null || v === undefined) return "–";
  const x = toNumber(v);
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "Inf" : "-Inf";
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (a >= 1e5 || a < 1e-3) return x.toExponential(2);
  return String(Number(x.toPrecision(4)));
}

export type Health = "ok" | "nan" | "inf";

/** NaN outranks Inf: a NaN is never the intended result, an Inf sometimes is (masking). */
export function health(...sums: (Summary | null | undefined)[]): Health {
  let h: Health = "ok";
  for (const s of sums) {
    if (!s) continue;
    if (s.nan > 0) return "nan";
    if (s.inf > 0) h = "inf";
  }
  return h;
}

/** "2.0" for a scalar, "[1, 2, 3]" for up to four elements, null when too big to show inline. */
export function inlineValues(s: Summary | null | undefined, max = 4): string | null {
  if (!s || !s.values || s.values.length > max) return null;
  if (s.shape.length === 0) return fmt(s.values[0]);
  return `[${s.values.map(fmt).join(", ")}]`;
}

/**
 * The axis range for data from `lo` to `hi` (log10 values on a log axis). A constant series (equal to
 * float32 precision) gets room both ways, 10% of its value (1 at zero) or half a decade, so it is drawn
 * mid-plot between round ticks, as TensorBoard draws it, not on the edge of a one-sided axis.
 */
export function axisRange(lo: number, hi: number, log = false): [number, number] {
  const flat = log ? hi - lo <= 5e-7 : hi - lo <= 1e-6 * Math.max(Math.abs(lo), Math.abs(hi));
  if (!flat) return [lo, hi];
  const pad = log ? 0.5 : Math.abs(lo) * 0.1 || 1;
  return [lo - pad, hi + pad];
}

/**
 * About `n` round tick values covering [lo, hi] (1, 2, 2.5 or 5 times a power of ten apart; `whole`:
 * whole numbers only, for step axes: never 2.5 nor less than 1 apart).
 */
export function niceTicks(lo: number, hi: number, n = 5, whole = false): number[] {
  if (!(hi > lo)) return [lo];
  const raw = whole ? Math.max(1, (hi - lo) / n) : (hi - lo) / n, mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((v) => v >= raw && (!whole || Number.isInteger(v)))!;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** A source site as IPython writes it: "Cell In[3], line 10" for a notebook cell, else "train.py:10 in step". */
export function siteLine(site: { file: string; line: number; function?: string }): string {
  if (site.file.startsWith("Cell In[")) return `${site.file}, line ${site.line}`;
  return `${site.file}:${site.line}` + (site.function ? ` in ${site.function}` : "");
}
