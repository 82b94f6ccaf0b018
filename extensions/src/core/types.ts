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
  trace: { steps: StepRecord[]; classroom?: boolean } | null;
  /** What the user must know before reading the graph (a NaN loss), shown once above it. */
  notes?: Note[];
}

export interface Note {
  level: "error" | "warning";
  text: string;
  node?: string | null;
}

export const TAPE_MIME = "application/vnd.workbench.tape.v1+json";

/** Accepts a snapshot as an object or JSON text and rejects what this viewer cannot read. */
export function parseSnapshot(data: unknown): Snapshot {
  const snap = (typeof data === "string" ? JSON.parse(data) : data) as Snapshot | null;
  if (!snap || snap.format !== "workbench.tape") throw new Error("not a workbench tape snapshot");
  if (snap.version !== 1) throw new Error(`tape format version ${snap.version} is newer than this viewer (1); upgrade workbench`);
  return snap;
}
