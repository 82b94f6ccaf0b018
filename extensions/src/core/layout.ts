// Pure layout: plain data in, coordinates out, so it runs unchanged in a Web Worker or in tests.
import dagre from "@dagrejs/dagre";

export interface LayoutInput {
  nodes: { id: string; width: number; height: number; cluster: string | null }[];
  clusters: { id: string; parent: string | null }[];
  edges: { source: string; target: string; label: string }[];
}

export interface Box { x: number; y: number; width: number; height: number }

export interface LayoutResult {
  /** Centre and size of every node and cluster. */
  boxes: Record<string, Box>;
  /** Polyline per edge, same order as the input edges. */
  edges: { points: { x: number; y: number }[] }[];
  width: number;
  height: number;
  engine: "dagre" | "layered";
  ms: number;
}

/**
 * Above this many drawn nodes use the linear layout: dagre's ordering recurses once per rank (a
 * 2,000-op chain overflows the stack) and its crossing minimisation takes seconds.
 */
export const DAGRE_LIMIT = 800;

const LABEL_W = 7, LABEL_H = 14;

export function computeLayout(input: LayoutInput): LayoutResult {
  const t0 = Date.now();
  let r: LayoutResult;
  try {
    r = input.nodes.length > DAGRE_LIMIT ? layered(input) : withDagre(input);
  } catch {
    // A deep chain under the limit can still exhaust a worker's smaller stack.
    r = layered(input);
  }
  r.ms = Date.now() - t0;
  return r;
}

function withDagre(input: LayoutInput): LayoutResult {
  const g = new dagre.graphlib.Graph({ compound: true, multigraph: false });
  // Top to bottom: inputs at the top, the loss at the bottom, the way the forward code reads.
  g.setGraph({ rankdir: "TB", nodesep: 24, ranksep: 36, edgesep: 12, marginx: 16, marginy: 16 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const c of input.clusters) g.setNode(c.id, { clusterLabelPos: "top", paddingTop: 24 });
  for (const c of input.clusters) if (c.parent) g.setParent(c.id, c.parent);
  for (const n of input.nodes) {
    g.setNode(n.id, { width: n.width, height: n.height });
    if (n.cluster) g.setParent(n.id, n.cluster);
  }
  input.edges.forEach((e) => {
    // dagre rejects edges that touch a cluster; the caller only sends edges between drawn items.
    g.setEdge(e.source, e.target, { width: e.label.length * LABEL_W, height: LABEL_H, labelpos: "c" });
  });
  dagre.layout(g);
  const boxes: Record<string, Box> = {};
  for (const id of g.nodes()) {
    const n = g.node(id) as unknown as Box;
    boxes[id] = { x: n.x, y: n.y, width: n.width, height: n.height };
  }
  const edges = input.edges.map((e) => ({ points: (g.edge(e.source, e.target) as unknown as { points: { x: number; y: number }[] }).points }));
  const gr = g.graph() as { width?: number; height?: number };
  return { boxes, edges, width: gr.width ?? 0, height: gr.height ?? 0, engine: "dagre", ms: 0 };
}

/**
 * Linear-time fallback for huge graphs: longest-path ranks, one barycentre pass to order each rank,
 * straight edges. Clusters become the bounding boxes of their members (they may overlap; at this
 * size the user is expected to search or collapse rather than read every box).
 */
function layered(input: LayoutInput): LayoutResult {
  const index = new Map(input.nodes.map((n, i) => [n.id, i]));
  const preds: number[][] = input.nodes.map(() => []);
  for (const e of input.edges) {
    const s = index.get(e.source), t = index.get(e.target);
    if (s !== undefined && t !== undefined && s !== t) preds[t].push(s);
  }
  // Snapshot nodes come in recording order, which is topological for a tape, so one pass suffices;
  // a back edge (never produced by a tape) is simply ignored.
  const rank = new Array<number>(input.nodes.length).fill(0);
  for (let i = 0; i < rank.length; i++) for (const p of preds[i]) if (p < i) rank[i] = Math.max(rank[i], rank[p] + 1);
  // Sources (parameters, inputs) move down to just above their first consumer instead of all
  // sitting in rank 0 with edges running the length of the graph.
  const firstUse = new Array<number>(input.nodes.length).fill(Infinity);
  for (let i = 0; i < rank.length; i++) for (const p of preds[i]) firstUse[p] = Math.min(firstUse[p], rank[i]);
  for (let i = 0; i < rank.length; i++) if (!preds[i].length && firstUse[i] !== Infinity) rank[i] = Math.max(0, firstUse[i] - 1);
  const ranks: number[][] = [];
  rank.forEach((r, i) => (ranks[r] ??= []).push(i));
  const pos = new Array<number>(input.nodes.length).fill(0);
  const boxes: Record<string, Box> = {};
  const gapAcross = 24, gapAlong = 48;
  let along = 16, maxAcross = 0;
  for (const members of ranks) {
    if (!members) continue;
    members.sort((a, b) => bary(a) - bary(b));
    let across = 16, thick = 0;
    for (const i of members) {
      const n = input.nodes[i];
      pos[i] = across + n.width / 2;
      boxes[n.id] = { x: pos[i], y: along + n.height / 2, width: n.width, height: n.height };
      across += n.width + gapAcross;
      thick = Math.max(thick, n.height);
    }
    maxAcross = Math.max(maxAcross, across);
    along += thick + gapAlong;
  }
  function bary(i: number) {
    const p = preds[i];
    return p.length ? p.reduce((s, j) => s + pos[j], 0) / p.length : i;
  }
  // Children before parents, so a parent's box includes its sub-clusters' boxes.
  const inside = new Map<string, Box[]>(input.clusters.map((c) => [c.id, []]));
  for (const n of input.nodes) if (n.cluster) inside.get(n.cluster)?.push(boxes[n.id]);
  for (const c of [...input.clusters].reverse()) {
    const members = inside.get(c.id)!;
    if (!members.length) continue;
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const b of members) {
      x0 = Math.min(x0, b.x - b.width / 2);
      x1 = Math.max(x1, b.x + b.width / 2);
      y0 = Math.min(y0, b.y - b.height / 2);
      y1 = Math.max(y1, b.y + b.height / 2);
    }
    x0 -= 8, x1 += 8, y0 -= 24, y1 += 8;
    boxes[c.id] = { x: (x0 + x1) / 2, y: (y0 + y1) / 2, width: x1 - x0, height: y1 - y0 };
    if (c.parent) inside.get(c.parent)?.push(boxes[c.id]);
  }
  const edges = input.edges.map((e) => {
    const a = boxes[e.source], b = boxes[e.target];
    return { points: a && b ? [{ x: a.x, y: a.y }, { x: b.x, y: b.y }] : [] };
  });
  return { boxes, edges, width: maxAcross, height: along, engine: "layered", ms: 0 };
}

/**
 * How many pairs of drawn edges cross (segment by segment; edges sharing an end do not count).
 * The layout's quality figure for tests and benchmarks: O(segments²), so for graphs of a few
 * thousand edges at most.
 */
export function countCrossings(r: LayoutResult, input: LayoutInput): number {
  const segs: { a: { x: number; y: number }; b: { x: number; y: number }; e: number }[] = [];
  r.edges.forEach((e, i) => {
    for (let j = 1; j < e.points.length; j++) segs.push({ a: e.points[j - 1], b: e.points[j], e: i });
  });
  const cross = (p: { x: number; y: number }, q: { x: number; y: number }, r2: { x: number; y: number }) =>
    (q.x - p.x) * (r2.y - p.y) - (q.y - p.y) * (r2.x - p.x);
  const seen = new Set<string>();
  for (let i = 0; i < segs.length; i++) for (let j = i + 1; j < segs.length; j++) {
    const s1 = segs[i], s2 = segs[j];
    if (s1.e === s2.e) continue;
    const e1 = input.edges[s1.e], e2 = input.edges[s2.e];
    if (e1.source === e2.source || e1.target === e2.target || e1.source === e2.target || e1.target === e2.source) continue;
    const d1 = cross(s2.a, s2.b, s1.a), d2 = cross(s2.a, s2.b, s1.b), d3 = cross(s1.a, s1.b, s2.a), d4 = cross(s1.a, s1.b, s2.b);
    if (d1 * d2 < 0 && d3 * d4 < 0) seen.add(s1.e < s2.e ? `${s1.e},${s2.e}` : `${s2.e},${s1.e}`);
  }
  return seen.size;
}
