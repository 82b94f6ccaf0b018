// TypeScript mirror of workbench/viz/tape.v1.schema.json (the schema is the source of truth).

/** A number as JSON carries it: non-finite values arrive as strings. */
export type JsonNumber = number | "NaN" | "Infinity" | "-Infinity";

export interface Summary {
  shape: number[];
  dtype: string;
  numel: number;
  min: number | null;
  max: number | null;
  mean: number | null;
  std: number | null;
  norm: number | null;
  nan: number;
  inf: number;
  hist: { lo: number; hi: number; counts: number[] } | null;
  values: JsonNumber[] | null;
}

export type NodeKind = "op" | "leaf" | "param" | "input" | "output" | "cut";

export interface TapeNode {
  id: string;
  kind: NodeKind;
  op: string;
  name: string;
  scope: string;
  /** Per dotted part of `scope`, which call of it the node ran in (optional; null: not known). */
  calls?: (number | null)[];
  /** Set by wb.viz.compare: only in b (added), only in a (removed; the fields are a's), in both (null). */
  diff?: "added" | "removed" | null;
  group: string | null;
  site: { file: string; line: number; function: string } | null;
  shape: number[];
  dtype: string;
  device: string;
  param: string | null;
  saved: { name: string; shape: number[]; dtype: string }[];
  value: Summary | null;
  grad: Summary | null;
  cut: { reason: "no_grad" | "detach" | "numpy" | "not_requires_grad"; detail: string } | null;
  /** Cost fields (docs/cost.md); optional so that older snapshots still read. */
  flops?: number | null;
  saved_bytes?: number;
  saved_tensors?: { name: string; shape: number[]; dtype: string; bytes: number }[];
  forward_us?: number | null;
  backward_us?: number | null;
}

export interface TapeEdge {
  source: string;
  target: string;
  index: number;
  shape: number[];
  dtype: string;
}

export interface ModuleInfo {
  path: string;
  type: string;
  parent: string | null;
  /** Sums over the module's nodes (null: no node's value known). */
  flops?: number | null;
  saved_bytes?: number | null;
  forward_us?: number | null;
  backward_us?: number | null;
}

/** How a measure's numbers are drawn: log and linear on a sequential ramp, ratio (b/a) diverging around 1 on log2. */
export type MeasureScale = "log" | "linear" | "ratio";

/** One number per node (null: not known or not applicable), beyond the built-in measures read from node fields. */
export interface MeasureSpec {
  label: string;
  unit: string;
  scale: MeasureScale;
  /** How a collapsed module box combines its nodes: "sum" (costs) or "max" (default; ratios: the farthest from 1). */
  aggregate?: "sum" | "max";
  values: Record<string, number | null>;
}

export interface StepRecord {
  index: number;
  node: string;
  grad_outputs: (Summary | null)[];
  grad_inputs: { target: string; index: number; grad: Summary | null }[];
  leaves: { node: string; before: Summary | null; after: Summary }[];
  derivation: string | null;
  breakpoint: { reason: string } | null;
}

export interface Snapshot {
  format: "workbench.tape";
  version: 1;
  title: string;
  nodes: TapeNode[];
  edges: TapeEdge[];
  modules: ModuleInfo[];
  roots: string[];
  /** Set by wb.viz.compare: both sides of each node, for the side panel (a | b) and the header. */
  compare?: Comparison;
  trace: { steps: StepRecord[]; classroom?: boolean } | null;
  /** What the user must know before reading the graph (a NaN loss), shown once above it. */
  notes?: Note[];
  /** Extra measures by key (compare's grad_norm_ratio...); the built-in ones come from node fields. */
  measures?: Record<string, MeasureSpec>;
  /** The measure the nodes are coloured by when the view opens (null or absent: none). */
  overlay?: string | null;
  /** Per-step measures of a watched training run: the viewer adds a step slider. */
  series?: Series;
}

/**
 * The tape over time (`wb.viz.watch(model, snapshots_every=N)`): the structure once, per kept step one
 * value per node and measure. `measures[key][i][j]` is measure `key` at `steps[i]` for `nodes[j]`;
 * null: the node was absent at that step or its value is not known there.
 */
export interface Series {
  steps: number[];
  measures: Record<string, (JsonNumber | null)[][]>;
}

export interface Note {
  level: "error" | "warning";
  text: string;
  node?: string | null;
}

/** One side of a comparison: what it recorded for each result node present on it. */
export interface CompareSide {
  title: string;
  nodes: Record<string, { id: string; shape: number[]; dtype: string; value: Summary | null; grad: Summary | null }>;
}

export interface Comparison {
  a: CompareSide;
  b: CompareSide;
  counts: { added: number; removed: number; changed: number };
  /** A ratio beyond factor (or below 1/factor) counts as changed. */
  factor: number;
}

export const TAPE_MIME = "application/vnd.workbench.tape.v1+json";

/** Accepts a snapshot as an object or JSON text and rejects what this viewer cannot read. */
export function parseSnapshot(data: unknown): Snapshot {
  const snap = (typeof data === "string" ? JSON.parse(data) : data) as Snapshot | null;
  if (!snap || snap.format !== "workbench.tape") throw new Error("not a workbench tape snapshot");
  if (snap.version !== 1) throw new Error(`tape format version ${snap.version} is newer than this viewer (1); upgrade workbench`);
  return snap;
}
