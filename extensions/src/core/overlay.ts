// Colouring the tape by a measure (one number per node): the measure list, the value lookup with
// the aggregate a collapsed box shows, the colour scales, and the legend and "top N" DOM. The viewer
// calls it from setOverlay(); compare and watch only hand it values (OVERLAY_CONTRACT.md).
import { h } from "./dom";
import { fmt } from "./format";
import type { MeasureScale, Snapshot, TapeNode } from "./types";

export interface Measure {
  key: string;
  label: string;
  unit: string;
  scale: MeasureScale;
  /** What a collapsed box shows: the sum of its nodes (costs) or the max (norms; ratios: farthest from 1). */
  aggregate: "sum" | "max";
  values: Map<string, number | null>;
  /** Why every value may be missing, said in the legend ("n/a"). */
  hint?: string;
  /** A fixed colour domain (the step slider's: one over every kept step), else the scale spans what is drawn. */
  domain?: Domain;
}

/** The values a colour scale spans whatever is drawn, and what the legend says of it ("same at every step"). */
export interface Domain { lo: number; hi: number; note?: string }

interface Builtin { key: string; label: string; unit: string; aggregate: "sum" | "max"; get: (n: TapeNode) => number | null | undefined; hint: string }

/** The built-in measures, read from node fields that every workbench snapshot writes. */
export const BUILTIN: readonly Builtin[] = [
  { key: "grad_norm", label: "gradient norm", unit: "", aggregate: "max", get: (n) => n.grad?.norm,
    hint: "no gradients recorded: call loss.backward() first, or wb.viz.show(loss, trace=True)" },
  { key: "value_norm", label: "value norm", unit: "", aggregate: "max", get: (n) => n.value?.norm,
    hint: "no values recorded: run the forward pass under `with wb.viz.record():`" },
  { key: "flops", label: "FLOPs", unit: "FLOP", aggregate: "sum", get: (n) => n.flops, hint: "no FLOP formula for these ops" },
  { key: "saved_bytes", label: "saved for backward", unit: "B", aggregate: "sum", get: (n) => n.saved_bytes, hint: "" },
  { key: "forward_us", label: "forward time", unit: "us", aggregate: "sum", get: (n) => n.forward_us,
    hint: "not timed: run the forward pass under workbench.profiler.profile()" },
  { key: "backward_us", label: "backward time", unit: "us", aggregate: "sum", get: (n) => n.backward_us,
    hint: "not timed: run backward under workbench.profiler.profile()" },
];

const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

function builtinMeasure(b: Builtin, nodes: TapeNode[]): Measure {
  const values = new Map<string, number | null>();
  for (const n of nodes) {
    const v = b.get(n);
    values.set(n.id, finite(v) ? v : null);
  }
  return { key: b.key, label: b.label, unit: b.unit, scale: "log", aggregate: b.aggregate, values, hint: b.hint || undefined };
}

/**
 * Every measure of a snapshot by key: the built-in ones that have a value on at least one node (and
 * the snapshot's `overlay`, even without any), then the snapshot's extra `measures`.
 */
export function measuresOf(snap: Snapshot): Map<string, Measure> {
  const out = new Map<string, Measure>();
  for (const b of BUILTIN) {
    const m = builtinMeasure(b, snap.nodes);
    if (snap.overlay === b.key || [...m.values.values()].some((v) => v !== null)) out.set(b.key, m);
  }
  for (const [key, spec] of Object.entries(snap.measures ?? {})) {
    const values = new Map<string, number | null>();
    for (const n of snap.nodes) {
      const v = spec.values[n.id];
      values.set(n.id, finite(v) ? v : null);
    }
    out.set(key, { key, label: spec.label || key, unit: spec.unit ?? "", scale: spec.scale ?? "log",
      aggregate: spec.aggregate ?? "max", values });
  }
  return out;
}

/** A measure for a key the snapshot does not carry (a watch series of a new key): the built-in's words, else the key. */
export function measureFor(key: string, snap: Snapshot): Measure {
  const b = BUILTIN.find((x) => x.key === key);
  if (b) return builtinMeasure(b, snap.nodes);
  return { key, label: key, unit: "", scale: "log", aggregate: "max", values: new Map() };
}

/** The value a collapsed box shows: the aggregate of its members' values (null when none is known). */
export function aggregate(m: Measure, members: readonly string[]): number | null {
  let out: number | null = null;
  for (const id of members) {
    const v = m.values.get(id);
    if (v === null || v === undefined) continue;
    if (out === null) out = v;
    else if (m.aggregate === "sum") out += v;
    else if (m.scale === "ratio" ? Math.abs(Math.log2(v)) > Math.abs(Math.log2(out)) : v > out) out = v;
  }
  return out;
}

// ---- formatting -------------------------------------------------------------------------------

const scaled = (v: number, base: number, units: string[]) => {
  let i = 0, x = Math.abs(v);
  while (x >= base && i < units.length - 1) {
    x /= base;
    i++;
  }
  const digits = x >= 100 ? 0 : x >= 10 ? 1 : 2;
  return `${v < 0 ? "-" : ""}${i === 0 && Number.isInteger(x) ? x : x.toFixed(digits)} ${units[i]}`;
};

/** A measure's value as the legend and the top-N table write it: 1.5 MiB, 3.2 GFLOP, 840 µs, 1.25 ms, 2.1×. */
export function formatValue(v: number | null | undefined, unit: string, scale?: MeasureScale): string {
  if (v === null || v === undefined || Number.isNaN(v)) return "n/a";
  if (scale === "ratio") return `${fmt(v)}×`;
  if (unit === "B") return scaled(v, 1024, ["B", "KiB", "MiB", "GiB", "TiB"]);
  if (unit === "FLOP") return scaled(v, 1000, ["FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"]);
  if (unit === "us") {
    const a = Math.abs(v);
    return a >= 1e6 ? `${fmt(v / 1e6)} s` : a >= 1e3 ? `${fmt(v / 1e3)} ms` : `${fmt(v)} µs`;
  }
  return unit ? `${fmt(v)} ${unit}` : fmt(v);
}

// ---- colour scales ----------------------------------------------------------------------------

type RGB = [number, number, number];
/** Sequential ramp (ColorBrewer YlOrRd without its extremes): light to strong in either theme. */
const RAMP: RGB[] = [[254, 217, 118], [254, 178, 76], [253, 141, 60], [252, 78, 42], [227, 26, 28]];
const BLUE: RGB = [44, 123, 182], RED: RGB = [215, 25, 28];
/**
 * Colours are mixed into the theme's background (so low values fade into it in light and dark
 * themes alike): from MIX_LO% at the bottom of the scale to MIX_HI% at the top, where the theme's
 * text colour still reads on them (contrast >= 4.5 for both JupyterLab themes).
 */
const MIX_LO = 28, MIX_HI = 62, MIX_ZERO = 12, MIX_NEUTRAL = 8;
/** A ratio scale spans at least 1.1× either way, so noise around 1 stays pale. */
const MIN_LOG2_SPAN = Math.log2(1.1);

export interface Tint { rgb: RGB; mix: number }

const lerp = (a: RGB, b: RGB, t: number): RGB => [0, 1, 2].map((i) => Math.round(a[i] + (b[i] - a[i]) * t)) as RGB;

function ramp(t: number): RGB {
  const x = Math.min(1, Math.max(0, t)) * (RAMP.length - 1), i = Math.min(RAMP.length - 2, Math.floor(x));
  return lerp(RAMP[i], RAMP[i + 1], x - i);
}

/** CSS colour of a tint: mixed with the viewer's background variable (SVG and HTML). */
export const tintCss = (c: Tint) => `color-mix(in srgb, rgb(${c.rgb.join(" ")}) ${c.mix}%, var(--wb-bg))`;
/** The same tint as a translucent colour, for canvases painted over the background. */
export const tintRgba = (c: Tint) => `rgba(${c.rgb.join(",")},${c.mix / 100})`;

export interface ColourScale {
  scale: MeasureScale;
  /** Lowest and highest value shown (positive ones for log; for ratio, 2^-span and 2^span). */
  lo: number;
  hi: number;
  /** Any value at or below zero on a log scale (own swatch), any value not known. */
  zeros: number;
  missing: number;
  /** Said in the legend when the scale is a fixed domain, not what is drawn. */
  note?: string;
  tint(v: number | null): Tint | null;
}

/**
 * The scale that spans `values` (what is drawn), for a measure of the given kind; with `domain`, the
 * scale spans the domain instead (values outside it take the end colours), so a colour means the same
 * value wherever the values come from (each step of a watched run).
 */
export function colourScale(scale: MeasureScale, values: Iterable<number | null>, domain?: Domain): ColourScale {
  let lo = Infinity, hi = -Infinity, zeros = 0, missing = 0, span = 0;
  for (const v of values) {
    if (v === null || !Number.isFinite(v)) missing++;
    else if (scale === "ratio") {
      if (v > 0) span = Math.max(span, Math.abs(Math.log2(v)));
      else missing++;
    } else if (scale === "log" && v <= 0) zeros++;
    else {
      lo = Math.min(lo, v);
      hi = Math.max(hi, v);
    }
  }
  const note = domain?.note;
  if (domain && scale === "ratio") span = Math.max(Math.abs(Math.log2(domain.lo)), Math.abs(Math.log2(domain.hi))) || 0;
  else if (domain && domain.hi >= domain.lo) [lo, hi] = [domain.lo, domain.hi];
  if (scale === "ratio") {
    span = Math.max(span, MIN_LOG2_SPAN);
    return { scale, lo: 2 ** -span, hi: 2 ** span, zeros: 0, missing, note, tint: (v) => {
      if (v === null || !(v > 0) || !Number.isFinite(v)) return null;
      const u = Math.max(-1, Math.min(1, Math.log2(v) / span));
      return { rgb: u < 0 ? BLUE : RED, mix: Math.round(MIX_NEUTRAL + (MIX_HI - MIX_NEUTRAL) * Math.abs(u)) };
    } };
  }
  if (lo > hi) lo = hi = NaN;
  const pos = (v: number) => {
    if (!(hi > lo)) return 1;
    return scale === "log" ? (Math.log10(v) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)) : (v - lo) / (hi - lo);
  };
  return { scale, lo, hi, zeros, missing, note, tint: (v) => {
    if (v === null || !Number.isFinite(v)) return null;
    if (scale === "log" && v <= 0) return { rgb: RAMP[0], mix: MIX_ZERO };
    const t = Math.max(0, Math.min(1, pos(v)));
    return { rgb: ramp(t), mix: Math.round(MIX_LO + (MIX_HI - MIX_LO) * t) };
  } };
}

// ---- legend and top N -------------------------------------------------------------------------

const swatch = (css: string | null, cls = "") => h("span", { class: `wb-swatch-box ${cls}`, style: css ? `background: ${css}` : null, "aria-hidden": "true" });

/** The domain a scale of `scale` takes over every row of values (all kept steps), or null when no value is known. */
export function domainOver(scale: MeasureScale, rows: Iterable<Iterable<number | null>>, note?: string): Domain | null {
  const all: (number | null)[] = [];
  for (const r of rows) for (const v of r) all.push(v);
  const sc = colourScale(scale, all);
  return Number.isFinite(sc.lo) && Number.isFinite(sc.hi) ? { lo: sc.lo, hi: sc.hi, note } : null;
}

/** The colour bar with its end values, a "0" and an "n/a" swatch when there are such items. */
export function legend(m: Measure, sc: ColourScale, shown: number): HTMLElement {
  const parts: (Node | string | null)[] = [h("span", { class: "wb-legend-name" }, m.label,
    h("span", { class: "wb-muted" }, m.scale === "ratio" ? " (log₂ scale)" : m.scale === "log" ? " (log scale)" : ""))];
  const stops = m.scale === "ratio"
    ? [sc.tint(sc.lo)!, { rgb: RED, mix: 0 }, sc.tint(sc.hi)!].map((t, i) => (i === 1 ? "var(--wb-bg)" : tintCss(t)))
    : [0, 0.25, 0.5, 0.75, 1].map((t) => tintCss({ rgb: ramp(t), mix: Math.round(MIX_LO + (MIX_HI - MIX_LO) * t) }));
  const known = m.scale === "ratio" || Number.isFinite(sc.lo);
  if (known) {
    const lo = formatValue(sc.lo, m.unit, m.scale), hi = formatValue(sc.hi, m.unit, m.scale);
    const mid = m.scale === "ratio" ? "1×" : null;
    parts.push(h("span", { class: "wb-legend-tick" }, lo),
      h("span", { class: "wb-ramp", style: `background: linear-gradient(to right, ${stops.join(", ")})`, role: "img",
        "aria-label": `colour scale from ${lo} (light) to ${hi} (strong)${mid ? ", neutral at 1×" : ""}` },
      mid ? h("span", { class: "wb-ramp-mid" }, mid) : null),
      h("span", { class: "wb-legend-tick" }, hi));
  }
  if (known && sc.note) parts.push(h("span", { class: "wb-legend-note wb-muted", title: "the colours mean the same values at every step" }, sc.note));
  if (sc.zeros) parts.push(h("span", { class: "wb-legend-item" }, swatch(tintCss({ rgb: RAMP[0], mix: MIX_ZERO })), `0 (${sc.zeros})`));
  if (sc.missing) {
    parts.push(h("span", { class: "wb-legend-item", title: sc.missing === shown && m.hint ? m.hint : "not known or not applicable" },
      swatch(null, "wb-swatch-na"), sc.missing === shown ? `n/a: all ${shown}${m.hint ? ` (${m.hint})` : ""}` : `n/a (${sc.missing})`));
  }
  return h("div", { class: "wb-legend", role: "group", "aria-label": `colour legend: ${m.label}` }, ...parts);
}

export interface TopRow { id: string; value: number }

/** The `n` nodes with the largest values (ratios: farthest from 1), and how many have one at all. */
export function topN(m: Measure, n = 10): { rows: TopRow[]; known: number; total: number } {
  const rows: TopRow[] = [];
  for (const [id, v] of m.values) if (v !== null && (m.scale !== "ratio" || v > 0)) rows.push({ id, value: v });
  const key = (v: number) => (m.scale === "ratio" ? Math.abs(Math.log2(v)) : v);
  rows.sort((a, b) => key(b.value) - key(a.value));
  return { rows: rows.slice(0, n), known: rows.length, total: m.values.size };
}

/**
 * The top-N table: one button per row (name, where it is, value, its colour), `jump` on click.
 * Rows name nodes inside collapsed modules too; jumping opens what holds them.
 */
export function topTable(m: Measure, top: ReturnType<typeof topN>, sc: ColourScale, describe: (id: string) => { name: string; where: string },
  jump: (id: string) => void, open = true): HTMLElement {
  const list = h("ol", { class: "wb-topn" });
  for (const r of top.rows) {
    const d = describe(r.id), tint = sc.tint(r.value);
    const b = h("button", { type: "button", class: "wb-topn-row", "data-id": r.id, title: `${d.name}${d.where ? ` in ${d.where}` : ""}: show it` },
      swatch(tint ? tintCss(tint) : null, tint ? "" : "wb-swatch-na"),
      h("span", { class: "wb-topn-name" }, d.name), h("span", { class: "wb-topn-where wb-muted" }, d.where),
      h("span", { class: "wb-topn-value" }, formatValue(r.value, m.unit, m.scale)));
    b.addEventListener("click", () => jump(r.id));
    list.append(h("li", {}, b));
  }
  const missing = top.total - top.known;
  const head = `Top ${top.rows.length} by ${m.label}`;
  const count = `of ${top.known} nodes with a value` + (missing ? `, ${missing} n/a` : "");
  // the count on a line of its own under the title, so neither wraps mid-phrase in the 300 px panel
  return h("details", { class: "wb-top", open },
    h("summary", { title: `${head}, ${count}` }, h("strong", { class: "wb-top-head" }, head), h("span", { class: "wb-muted wb-top-count" }, count)),
    top.rows.length ? list : h("p", { class: "wb-muted" }, m.hint || "no node has a value"));
}
