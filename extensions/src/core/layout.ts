// Pure layout: plain data in, coordinates out, so it runs unchanged in a Web Worker or in tests.
import dagre from "@dagrejs/dagre";

export interface LayoutInput {
  nodes: { id: string; width: number; height: number; cluster: string | null }[];
  /**
   * `label`: the width of the box's header label at its top left, kept clear of edges entering the box;
   * `series`: the same for every call of one module (a GRU cell in a loop), absent on other boxes.
   */
  clusters: { id: string; parent: string | null; label?: number; series?: string }[];
  /** `index`: the argument position at the target (0: the first), as the tape records it. */
  edges: { source: string; target: string; label: string; index?: number }[];
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

/**
 * Above this cost, (drawn nodes + clusters) x ranks, use the linear layout: dagre's ordering sweeps
 * every rank, and each cluster adds border nodes on every rank it spans, so its time grows with that
 * product rather than with the node count. On the shared 2-core machine (load ~2) a 40-layer MLP
 * (cost 19,844) took ~0.5 s, a 50-layer one (30,804) 0.6-1.2 s, a 170-layer one (349,524, 682 nodes)
 * 5.5 s; a wide graph of 602 nodes and 32 ranks (19,264) 0.2 s (benchmarks/RESULTS.md, 2026-12-04).
 */
export const DAGRE_COST = 25_000;

const LABEL_W = 7, LABEL_H = 14;
/** dagre's layout is dropped for the linear one when it is this many times wider (a staircase). */
const DRIFT = 2;

/**
 * From this many open calls of one module on the main path, dagre is not tried: it draws each call's box
 * a column to the right of the one before, a staircase more than DRIFT times wider than the linear layout,
 * whose result would be dropped. A GRU cell over k time steps, fully open: dagre 1.8x the linear layout's
 * width at k = 2, 2.5x at 3, 3.3x at 4, 4.9x at 6, 6.5x at 8 (one call box wider per call); that pass was
 * 0.45-0.7 s of the 8-step GRU's layout in Node, 1.1-1.3 s in the browser's worker, for nothing.
 */
const SERIES_CALLS = 3;

/**
 * The engine computeLayout uses for `input`: dagre where it is fast (DAGRE_LIMIT, DAGRE_COST) and can
 * hold the main path in one column (SERIES_CALLS).
 */
export function layoutEngine(input: LayoutInput): LayoutResult["engine"] {
  if (input.nodes.length > DAGRE_LIMIT) return "layered";
  const { path } = mainPath(input);
  // the main path is a longest chain: its length is the number of ranks
  if ((input.nodes.length + input.clusters.length) * path.length > DAGRE_COST) return "layered";
  const series = new Map(input.clusters.filter((c) => c.series !== undefined).map((c) => [c.id, c.series!]));
  if (!series.size) return "dagre";
  const boxesOf = boxAncestry(input), calls = new Map<string, Set<string>>();
  for (const v of path) for (const c of boxesOf(v)) {
    const s = series.get(c);
    if (s !== undefined && (calls.get(s) ?? calls.set(s, new Set()).get(s)!).add(c).size >= SERIES_CALLS) return "layered";
  }
  return "dagre";
}

export function computeLayout(input: LayoutInput): LayoutResult {
  const t0 = Date.now();
  let r: LayoutResult;
  try {
    r = layered(input);
    // dagre places each node under its inputs' median, and where it cannot hold the main path in one
    // column, a chain of boxes (a GRU cell applied at each time step) drifts one box-width sideways
    // per box: the linear layout, which cannot drift, is kept when dagre's is far wider
    if (layoutEngine(input) === "dagre") r = withDagre(input, DRIFT * r.width) ?? r;
    // each edge is checked against every node and box: up to DAGRE_LIMIT nodes, ~80 ms at 762 (an MLP)
    if (r.engine === "layered" && input.nodes.length <= DAGRE_LIMIT) routeAround(input, r);
  } catch {
    // A deep chain under the limit can still exhaust a worker's smaller stack.
    r = layered(input);
  }
  r.ms = Date.now() - t0;
  return r;
}

/** dagre's layout, or null where it is wider than `widest`. */
function withDagre(input: LayoutInput, widest = Infinity): LayoutResult | null {
  // dagre's corePath (the main path in one column) can align a path node across another node's
  // alignment: two nodes then overlap, or a node lands outside its box (a GRU cell in a loop, a tied
  // weight). Such a layout is not used; dagre's own placement is.
  const main = mainPath(input);
  let r = dagreOnce(input, main, true);
  if (r.width > widest) return null;
  if (!sound(input, r)) r = dagreOnce(input, main, false);
  if (r.width > widest) return null;
  straightenSkips(input, r);
  clearHeaders(input, r);
  return r;
}

/**
 * dagre brings an edge into a box wherever its virtual nodes are; where that is through the header
 * label at the box's top left, the edge turns at the top edge just right of the label instead, and ends
 * on its target right of the label too where the target reaches that far.
 */
function clearHeaders(input: LayoutInput, r: LayoutResult) {
  const GAP = 6;
  const parent = new Map(input.clusters.map((c) => [c.id, c.parent]));
  const cluster = new Map(input.nodes.map((n) => [n.id, n.cluster]));
  const heads = new Map(input.clusters.map((c) => [c.id, c.label ?? 0]));
  const boxesOf = (id: string) => {
    const out: string[] = [];
    for (let c = cluster.get(id) ?? null; c; c = parent.get(c) ?? null) out.push(c);
    return out;
  };
  input.edges.forEach((e, i) => {
    const from = new Set(boxesOf(e.source));
    let pts = r.edges[i].points;
    for (const c of boxesOf(e.target).reverse()) {  // outer box first: the edge enters it first
      const label = heads.get(c) ?? 0;
      if (from.has(c) || !label) continue;
      const b = r.boxes[c], top = b.y - b.height / 2, left = b.x - b.width / 2, hx = left + label + GAP;
      const j = pts.findIndex((p, k) => k > 0 && pts[k - 1].y < top && p.y >= top);
      if (j < 0) continue;
      const p = pts[j - 1], q = pts[j], x = p.x + ((top - p.y) / (q.y - p.y)) * (q.x - p.x);
      if (x < left || x >= hx - 0.5) continue;
      // the bends after it that are still in the header's rows go
      const rest = pts.slice(j, -1).filter((p) => !(p.y <= top + 20 + GAP && p.x < hx));
      pts = [...pts.slice(0, j), { x: hx, y: top }, ...rest, pts[pts.length - 1]];
      const t = r.boxes[e.target], end = pts[pts.length - 1];
      if (!rest.length && end.x < hx && t.x + t.width / 2 - GAP > hx && end.y <= t.y - t.height / 2 + 1) {
        pts[pts.length - 1] = { x: hx, y: end.y };
      }
    }
    r.edges[i].points = pts;
  });
}

/** For a node id, the set of boxes (clusters) that hold it, its own and every one around that. */
function boxAncestry(input: LayoutInput): (id: string) => Set<string> {
  const parent = new Map(input.clusters.map((c) => [c.id, c.parent]));
  const cluster = new Map(input.nodes.map((n) => [n.id, n.cluster]));
  return (id: string) => {
    const out = new Set<string>();
    for (let c = cluster.get(id) ?? null; c; c = parent.get(c) ?? null) out.add(c);
    return out;
  };
}

function dagreOnce(input: LayoutInput, main: ReturnType<typeof mainPath>, core: boolean): LayoutResult {
  const GAP = 6;
  const heads = new Map(input.clusters.map((c) => [c.id, c.label ?? 0]));
  const boxesOf = boxAncestry(input);
  const g = new dagre.graphlib.Graph({ compound: true, multigraph: false });
  // Top to bottom: inputs at the top, the loss at the bottom, the way the forward code reads.
  g.setGraph({ rankdir: "TB", nodesep: 24, ranksep: 36, edgesep: 12, marginx: 16, marginy: 16 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const c of input.clusters) g.setNode(c.id, { clusterLabelPos: "top", paddingTop: 24 });
  for (const c of input.clusters) if (c.parent) g.setParent(c.id, c.parent);
  // A node that an edge enters its box through is laid out wide enough that the edge, which comes in
  // at its centre, passes right of the headers at the boxes' top left; it is drawn at its own size.
  const wide = new Map<string, number>();
  for (const e of input.edges) {
    const entered = [...boxesOf(e.target)].filter((c) => !boxesOf(e.source).has(c));
    const head = entered.reduce((w, c) => Math.max(w, heads.get(c) ?? 0), 0);
    if (head) wide.set(e.target, Math.max(wide.get(e.target) ?? 0, 2 * (head + GAP)));
  }
  for (const n of input.nodes) {
    g.setNode(n.id, { width: Math.max(n.width, wide.get(n.id) ?? 0), height: n.height });
    if (n.cluster) g.setParent(n.id, n.cluster);
  }
  input.edges.forEach((e) => {
    // dagre rejects edges that touch a cluster; the caller only sends edges between drawn items.
    g.setEdge(e.source, e.target, { width: e.label.length * LABEL_W, height: LABEL_H, labelpos: "c" });
  });
  // an ordering constraint only: weight 0, not drawn, not returned
  for (const [v, leaf] of main.after) g.setEdge(v, leaf, { weight: 0, minlen: 1 });
  dagre.layout(g, core ? { corePath: main.path } : {});
  const boxes: Record<string, Box> = {};
  for (const id of g.nodes()) {
    const n = g.node(id) as unknown as Box;
    boxes[id] = { x: n.x, y: n.y, width: n.width, height: n.height };
  }
  for (const n of input.nodes) boxes[n.id].width = n.width;
  const edges = input.edges.map((e) => {
    const points = [...(g.edge(e.source, e.target) as unknown as { points: Point[] }).points];
    // ends on the drawn box, not on the wider one laid out
    if (wide.has(e.source)) points[0] = border(boxes[e.source], points[1]);
    if (wide.has(e.target)) points[points.length - 1] = border(boxes[e.target], points[points.length - 2]);
    return { points };
  });
  const gr = g.graph() as { width?: number; height?: number };
  return { boxes, edges, width: gr.width ?? 0, height: gr.height ?? 0, engine: "dagre", ms: 0 };
}

const overlap = (a: Box, b: Box, slack = 0.5) =>
  Math.abs(a.x - b.x) * 2 < a.width + b.width - slack && Math.abs(a.y - b.y) * 2 < a.height + b.height - slack;
const contains = (outer: Box, a: Box, slack = 0.5) =>
  a.x - a.width / 2 >= outer.x - outer.width / 2 - slack && a.x + a.width / 2 <= outer.x + outer.width / 2 + slack &&
  a.y - a.height / 2 >= outer.y - outer.height / 2 - slack && a.y + a.height / 2 <= outer.y + outer.height / 2 + slack;

/** No two nodes overlap, and every node is inside its own boxes and outside all others. */
export function sound(input: LayoutInput, r: LayoutResult): boolean {
  const boxesOf = boxAncestry(input);
  const nodes = [...input.nodes].sort((a, b) => r.boxes[a.id].y - r.boxes[b.id].y);
  for (let i = 0; i < nodes.length; i++) {
    const a = r.boxes[nodes[i].id];
    for (let j = i + 1; j < nodes.length && r.boxes[nodes[j].id].y - a.y < a.height; j++) if (overlap(a, r.boxes[nodes[j].id])) return false;
  }
  for (const n of input.nodes) {
    const own = boxesOf(n.id);
    for (const c of input.clusters) {
      const inside = own.has(c.id);
      if (inside ? !contains(r.boxes[c.id], r.boxes[n.id]) : overlap(r.boxes[c.id], r.boxes[n.id])) return false;
    }
  }
  return true;
}

/**
 * A long edge (a residual skip, a weight used further down) runs through dagre's virtual nodes, and
 * these step sideways wherever the edge passes the top or bottom of a box (each box has border nodes
 * on its ranks): the skip of a ResNet block zig-zagged beside every layer of the block. Each such
 * edge is redrawn as one straight vertical run between its first and last bend, at the x of one of
 * its bends, the one nearest their median where the run crosses no node and no box that holds
 * neither end of the edge, so it reads as a column parallel to the main path; where no such x is near
 * it, the nearest column round what its span holds.
 */
function straightenSkips(input: LayoutInput, r: LayoutResult) {
  const boxesOf = boxAncestry(input);
  const GAP = 4;
  input.edges.forEach((e, i) => {
    const pts = r.edges[i].points;
    if (pts.length < 4) return;
    const inner = pts.slice(1, -1), y0 = inner[0].y, y1 = inner[inner.length - 1].y;
    if (y1 - y0 < 1 || inner.every((p) => Math.abs(p.x - inner[0].x) < 0.5)) return;
    const from = boxesOf(e.source), to = boxesOf(e.target), blockers = blockersOf(input, r, boxesOf, e);
    // the boxes the edge enters, outer first: it goes in right of each one's header label
    const entered = input.clusters.filter((c) => to.has(c.id) && !from.has(c.id) && c.label)
      .map((c) => { const b = r.boxes[c.id]; return { top: b.y - b.height / 2, left: b.x - b.width / 2, hx: b.x - b.width / 2 + c.label! + 2 * GAP }; })
      .filter((h) => h.top > y0 && h.top < y1).sort((p, q) => p.top - q.top);
    const across = blockers.filter((b) => b.y + b.height / 2 > y0 && b.y - b.height / 2 < y1);
    // inside every box that holds both ends: the run does not leave the block it belongs to
    const within = [...from].filter((c) => to.has(c)).map((c) => r.boxes[c]);
    const a = pts[0], z = pts[pts.length - 1];
    const clear = (p: Point, q: Point) => !hits(blockers, p, q);
    // the run at x, stepping round the header of each box it enters there
    const route = (x: number): Point[] | null => {
      const out: Point[] = [a, { x, y: y0 }];
      for (const h of entered) if (x >= h.left - GAP && x < h.hx) out.push({ x, y: h.top - 2 * GAP }, { x: h.hx, y: h.top }, { x: h.hx, y: h.top + 20 + GAP }, { x, y: h.top + 20 + 3 * GAP });
      out.push({ x, y: y1 }, z);
      for (let k = 1; k < out.length; k++) if (out[k].x !== out[k - 1].x && !clear(out[k - 1], out[k])) return null;
      return out;
    };
    // the legs no longer sideways than dagre's own (a run moved far out would end in a long crosswise leg)
    const reach0 = Math.max(120, 2 * Math.abs(inner[0].x - a.x)), reach1 = Math.max(120, 2 * Math.abs(inner[inner.length - 1].x - z.x));
    const near = (x: number) => Math.abs(x - a.x) <= reach0 && Math.abs(x - z.x) <= reach1;
    const free = (x: number) => !across.some((b) => Math.abs(b.x - x) * 2 < b.width + 2 * GAP) && within.every((b) => Math.abs(b.x - x) * 2 < b.width - 2 * GAP);
    // where it runs now, or just beside what is in the way; where all of that near it crosses what the
    // span holds (a widening ResNet block: its main branch's boxes fill the width beside both ends of
    // the skip into its 1x1 conv), round all of it, the shortest legs first, where they cross no node and
    // no more edges than dagre's drawing of it
    const xs = inner.map((p) => p.x).sort((p, q) => p - q), mid = xs[Math.floor(xs.length / 2)];
    const beside = [...new Set([...xs, ...across.flatMap((b) => [b.x - b.width / 2 - GAP - 1, b.x + b.width / 2 + GAP + 1])])].filter(free);
    const legs = (x: number) => Math.abs(x - a.x) + Math.abs(x - z.x);
    const candidates = [...beside.filter(near).sort((p, q) => Math.abs(p - mid) - Math.abs(q - mid)),
      ...beside.filter((x) => !near(x)).sort((p, q) => legs(p) - legs(q))];
    // the edges (not meeting this one at an end) that a drawing of it crosses
    const crossed = (line: Point[]) => input.edges.filter((f, j) => j !== i && !touch(e, f) && linesCross(line, r.edges[j].points)).length;
    let before: number | undefined;
    for (const x of candidates) {
      const path = route(x);
      if (!path || (!near(x) && crossed(path) > (before ??= crossed(pts)))) continue;
      // the middle point is where the viewer puts the edge's label: halfway down the run
      const k = path.length - 2;
      r.edges[i].points = [...path.slice(0, k), { x, y: (path[k - 1].y + y1) / 2 }, ...path.slice(k)];
      return;
    }
  });
}

type Point = { x: number; y: number };

/** What an edge's drawing must not cross: every node but its ends, every box holding neither end. */
function blockersOf(input: LayoutInput, r: LayoutResult, boxesOf: (id: string) => Set<string>, e: LayoutInput["edges"][number]): Box[] {
  const ends = new Set([...boxesOf(e.source), ...boxesOf(e.target)]), out: Box[] = [];
  for (const n of input.nodes) if (n.id !== e.source && n.id !== e.target) out.push(r.boxes[n.id]);
  for (const c of input.clusters) if (!ends.has(c.id)) out.push(r.boxes[c.id]);
  return out;
}

/** Whether the segment pq runs through the inside of one of `boxes` (exactly: Liang-Barsky clipping). */
function hits(boxes: Box[], p: Point, q: Point): boolean {
  const dx = q.x - p.x, dy = q.y - p.y;
  return boxes.some((b) => {
    let t0 = 0, t1 = 1;
    const clip = (d: number, lo: number, hi: number, at: number) => {
      if (Math.abs(d) < 1e-9) return at > lo && at < hi;
      const ta = (lo - at) / d, tb = (hi - at) / d;
      t0 = Math.max(t0, Math.min(ta, tb));
      t1 = Math.min(t1, Math.max(ta, tb));
      return t0 < t1;
    };
    return clip(dx, b.x - b.width / 2, b.x + b.width / 2, p.x) && clip(dy, b.y - b.height / 2, b.y + b.height / 2, p.y);
  });
}

/**
 * The linear layout draws each edge straight, and a long one (a ResNet block's skip into its 1x1 conv,
 * a weight shared by a loop's calls) ran across the nodes and boxes between its ends, a shallow one
 * across the nodes beside its ends. Such an edge is redrawn at right angles: down from its source into
 * the gap below its row, across to a column, down it to just above its target, across and down into it,
 * crossing no node, no box holding neither end and no header label of a box it enters; the column
 * nearest its ends is taken, and where there is none the edge stays straight.
 */
function routeAround(input: LayoutInput, r: LayoutResult) {
  const boxesOf = boxAncestry(input), GAP = 12;
  input.edges.forEach((e, i) => {
    const pts = r.edges[i].points, blockers = blockersOf(input, r, boxesOf, e);
    if (!pts.length || !hits(blockers, pts[0], pts[pts.length - 1])) return;
    // from the source's bottom to the target's top, each where the straight edge left it (so that edges
    // into one node come in apart), or as near as that side allows
    const s = r.boxes[e.source], t = r.boxes[e.target], GAP_END = 6;
    const on = (b: Box, x: number) => Math.min(Math.max(x, b.x - b.width / 2 + GAP_END), b.x + b.width / 2 - GAP_END);
    const a = { x: on(s, pts[0].x), y: s.y + s.height / 2 }, z = { x: on(t, pts[pts.length - 1].x), y: t.y - t.height / 2 };
    const y0 = a.y + GAP, y1 = z.y - GAP, from = boxesOf(e.source);
    if (y1 < y0) return;
    const across = blockers.filter((b) => b.y + b.height / 2 > y0 && b.y - b.height / 2 < y1);
    // nor the header labels of the boxes it enters (20 px tall at their top left)
    const heads = input.clusters.filter((c) => c.label && boxesOf(e.target).has(c.id) && !from.has(c.id)).map((c) => {
      const b = r.boxes[c.id];
      return { x: b.x - b.width / 2 + c.label! / 2, y: b.y - b.height / 2 + 10, width: c.label!, height: 20 };
    });
    const xs = [a.x, z.x, ...across.flatMap((b) => [b.x - b.width / 2 - GAP, b.x + b.width / 2 + GAP])];
    const legs = (x: number) => Math.abs(x - a.x) + Math.abs(x - z.x);
    for (const x of [...new Set(xs)].sort((p, q) => legs(p) - legs(q))) {
      const path = [a, { x: a.x, y: y0 }, { x, y: y0 }, { x, y: y1 }, { x: z.x, y: y1 }, z];
      if (path.some((p, k) => k > 0 && (hits(blockers, path[k - 1], p) || hits(heads, path[k - 1], p)))) continue;
      // the middle point is where the viewer puts the edge's label: halfway down the column
      r.edges[i].points = [...path.slice(0, 3), { x, y: (y0 + y1) / 2 }, ...path.slice(3)];
      return;
    }
  });
}

/** Where the line from the centre of `b` towards `p` leaves the box. */
function border(b: Box, p: Point): Point {
  const dx = p.x - b.x, dy = p.y - b.y;
  if (!dx && !dy) return { x: b.x, y: b.y };
  const s = Math.abs(dy) * b.width > Math.abs(dx) * b.height ? b.height / 2 / Math.abs(dy) : b.width / 2 / Math.abs(dx);
  return { x: b.x + dx * s, y: b.y + dy * s };
}

/**
 * The graph's main data path and the leaves beside it, for dagre. Its Brandes-Köpf pass puts a node
 * under the median of its inputs, which for a Linear is its weight; and its ranking pulls a leaf input
 * (a weight, a bias) down to just above its consumer, so the Linear's box starts beside the box of the
 * layer before it and the data edge enters it through its side. Each layer stepped one leaf to the
 * right: a 12-layer MLP drifted 1,900 px across. `path` (dagre's `corePath`) is a longest chain, source
 * to sink, each step back taken to the deepest input, on a tie to the first argument (a Linear's data
 * comes before its weight and bias, as in F.linear(x, w, b)); dagre aligns it in one column. `after`
 * pairs each leaf input of a path node (one feeding nothing else) with the path node before, so the
 * leaf is ranked below it: the box holding the leaf then starts below the box before, and the path runs
 * straight down past the leaves.
 */
export function mainPath(input: LayoutInput): { path: string[]; after: [string, string][] } {
  const preds = new Map<string, string[]>(input.nodes.map((n) => [n.id, []]));
  const arg = new Map<string, number>();
  const succs = new Map<string, string[]>(input.nodes.map((n) => [n.id, []]));
  for (const e of input.edges) if (preds.has(e.source) && preds.has(e.target) && e.source !== e.target) {
    preds.get(e.target)!.push(e.source);
    succs.get(e.source)!.push(e.target);
    arg.set(`${e.source}\u0000${e.target}`, e.index ?? Infinity);
  }
  // the longest chain of inputs above each node, in topological order (Kahn's; a cycle, never produced
  // by a tape, leaves its nodes out)
  const depth = new Map<string, number>(), waiting = new Map([...preds].map(([v, ps]) => [v, ps.length]));
  const ready = [...waiting].filter(([, k]) => k === 0).map(([v]) => v);
  while (ready.length) {
    const v = ready.pop()!;
    depth.set(v, preds.get(v)!.reduce((d, p) => Math.max(d, depth.get(p)! + 1), 0));
    for (const w of succs.get(v)!) if (waiting.set(w, waiting.get(w)! - 1).get(w) === 0) ready.push(w);
  }
  let end: string | undefined;
  for (const [v, d] of depth) if (end === undefined || d > depth.get(end)!) end = v;
  const path: string[] = [];
  for (let v = end; v !== undefined;) {
    path.push(v);
    const at = v, first = (p: string) => arg.get(`${p}\u0000${at}`)!;
    v = preds.get(at)!.reduce<string | undefined>((best, p) => best === undefined || depth.get(p)! > depth.get(best)! ||
      (depth.get(p) === depth.get(best) && first(p) < first(best)) ? p : best, undefined);
  }
  path.reverse();
  const after: [string, string][] = [];
  // only a leaf with no other consumer: that keeps the graph acyclic
  for (let i = 1; i < path.length; i++) {
    for (const p of preds.get(path[i])!) if (p !== path[i - 1] && preds.get(p)!.length === 0 && succs.get(p)!.length === 1) after.push([path[i - 1], p]);
  }
  return { path, after };
}

/**
 * Fallback for huge graphs, near-linear: a compound layered layout. Each cluster's items (its nodes and
 * child clusters) are ranked among themselves by longest path (sources moved down to just above their
 * first consumer), a child cluster taking a band of consecutive ranks, so sibling clusters stack or sit
 * side by side and never overlap, and a cluster's box holds its own members only. Items are placed under
 * the mean of their inputs' ends (sources above their consumers), a call of a module under the call of it
 * that feeds it, right of what their rows already hold; edges are straight.
 */
function layered(input: LayoutInput): LayoutResult {
  const GAP_ACROSS = 24, GAP_ALONG = 48, PAD_X = 8, PAD_TOP = 24, PAD_BOTTOM = 8;
  interface Item {
    id: string; node: number; parent: Group | null; index: number; depth: number;
    r0: number; h: number; rank: number; rx: number; w: number; ht: number;
  }
  interface Group extends Item {
    series?: string; items: Item[]; pairs: [Item, Item][]; segs: [Item, Item, Item, Item][]; entered: [Item, Item][]; kTop: number; kBottom: number;
  }
  const group = (id: string, parent: Group | null): Group => ({
    id, node: -1, parent, index: Infinity, depth: parent ? parent.depth + 1 : 0, r0: 0, h: 1, rank: 0, rx: 0, w: 0, ht: 0,
    items: [], pairs: [], segs: [], entered: [], kTop: 0, kBottom: 0 });
  const root = group("", null);
  const groups = new Map<string, Group>();
  for (const c of input.clusters) {  // parent before child
    const g = group(c.id, c.parent ? groups.get(c.parent) ?? root : root);
    g.series = c.series;
    g.parent!.items.push(g);
    groups.set(c.id, g);
  }
  const units: Item[] = input.nodes.map((n, i) => {
    const parent = (n.cluster && groups.get(n.cluster)) || root;
    const u: Item = { id: n.id, node: i, parent, index: i, depth: parent.depth + 1, r0: 0, h: 1, rank: 0, rx: 0, w: n.width, ht: n.height };
    parent.items.push(u);
    for (let g: Group | null = parent; g && g.index > i; g = g.parent) g.index = i;
    return u;
  });
  const index = new Map(input.nodes.map((n, i) => [n.id, i]));
  const heads = new Map(input.clusters.map((c) => [c.id, c.label ?? 0]));
  // the cluster holding both ends of an edge, and its items that hold each end
  const split = (a: Item, b: Item): [Group, Item, Item] => {
    while (a.depth > b.depth) a = a.parent!;
    while (b.depth > a.depth) b = b.parent!;
    while (a.parent !== b.parent) { a = a.parent!; b = b.parent!; }
    return [a.parent!, a, b];
  };
  for (const e of input.edges) {
    const s = index.get(e.source), t = index.get(e.target);
    if (s === undefined || t === undefined || s === t) continue;
    const [g, a, b] = split(units[s], units[t]);
    g.pairs.push([a, b]);
    g.segs.push([a, units[s], b, units[t]]);
    // each cluster on the way down to the target is entered from above, through the item holding it
    for (let x: Item = units[t]; x.parent !== g; x = x.parent!) x.parent!.entered.push([x, units[t]]);
  }
  const isGroup = (x: Item): x is Group => x.node < 0;
  const postorder: Group[] = [];
  (function walk(g: Group) { for (const c of g.items) if (isGroup(c)) walk(c); postorder.push(g); })(root);
  // ranks within each cluster, inner first; a back edge (never produced by a tape) is ignored
  for (const g of postorder) {
    const items = [...g.items].sort((x, y) => x.index - y.index);
    const preds = new Map<Item, Item[]>(), succs = new Map<Item, Item[]>();
    // forward order is topological for nodes, not for boxes (a box's index is its first member's):
    // a parameter recorded after the first op of the call that uses it still goes above that call.
    // Only an edge from a source can be taken against that order without making a cycle.
    const hasInput = new Set(g.pairs.map(([, b]) => b));
    for (const [a, b] of g.pairs) if (a.index < b.index || (!hasInput.has(a) && a !== b)) {
      (preds.get(b) ?? preds.set(b, []).get(b)!).push(a);
      (succs.get(a) ?? succs.set(a, []).get(a)!).push(b);
    }
    for (const c of items) c.r0 = (preds.get(c) ?? []).reduce((r, p) => Math.max(r, p.r0 + p.h), 0);
    for (const c of items) if (!preds.has(c) && succs.has(c)) c.r0 = Math.max(c.r0, succs.get(c)!.reduce((r, x) => Math.min(r, x.r0), Infinity) - c.h);
    g.h = items.reduce((h, c) => Math.max(h, c.r0 + c.h), 1);
    for (const c of g.items) if (isGroup(c)) {
      if (c.r0 === 0) g.kTop = Math.max(g.kTop, c.kTop + 1);
      if (c.r0 + c.h === g.h) g.kBottom = Math.max(g.kBottom, c.kBottom + 1);
    }
  }
  (function ranks(g: Group, base: number) {
    g.rank = base;
    for (const c of g.items) if (isGroup(c)) ranks(c, base + c.r0); else c.rank = base + c.r0;
  })(root, 0);
  // where unit x starts, from the left edge of the item holding it
  const offset = (item: Item, x: Item) => {
    let pos = 0;
    for (; x !== item; x = x.parent!) pos += x.rx + PAD_X;
    return pos;
  };
  for (const g of postorder) {
    const into = new Map<Item, [Item, Item, Item][]>(), out = new Map<Item, [Item, Item, Item][]>();
    for (const [pi, p, ci, c] of g.segs) {
      (into.get(ci) ?? into.set(ci, []).get(ci)!).push([pi, p, c]);
      (out.get(pi) ?? out.set(pi, []).get(pi)!).push([ci, c, p]);
    }
    const right = new Array<number>(g.h).fill(-Infinity), done = new Set<Item>();
    const put = (c: Item, ends: number[]) => {
      let free = -Infinity;
      for (let r = c.r0; r < c.r0 + c.h; r++) free = Math.max(free, right[r] + GAP_ACROSS);
      const want = ends.length ? ends.reduce((a, b) => a + b, 0) / ends.length : free === -Infinity ? 0 : free;
      c.rx = Math.max(want, free);
      for (let r = c.r0; r < c.r0 + c.h; r++) right[r] = c.rx + c.w;
      done.add(c);
    };
    const byRank = (xs: Item[]) => xs.sort((x, y) => x.r0 - y.r0 || x.index - y.index);
    const fed = byRank(g.items.filter((c) => into.has(c))), sources = byRank(g.items.filter((c) => !into.has(c))).reverse();
    for (const c of fed) {
      const placed = into.get(c)!.filter(([pi]) => done.has(pi));
      // a call of a module fed by an earlier call of it goes right under that one: under the node that
      // feeds it, each call of a GRU cell stepped ~140 px sideways (the new state leaves one call and
      // enters the next at different places in the box), and a loop of 8 wandered across the canvas
      const series = isGroup(c) ? c.series : undefined;
      const calls = placed.map(([pi]) => pi).filter((pi) => series !== undefined && isGroup(pi) && pi.series === series);
      if (calls.length) {
        const last = calls.reduce((a, b) => (b.r0 > a.r0 ? b : a));
        put(c, [last.rx + last.w / 2 - c.w / 2]);
      } else put(c, placed.map(([pi, p, q]) => pi.rx + offset(pi, p) + p.w / 2 - offset(c, q) - q.w / 2));
    }
    // an edge coming in from above runs straight down to its end: sources sit beside it, not on it
    for (const [c, b] of g.entered) {
      const lane = c.rx + offset(c, b) + b.w / 2 + GAP_ACROSS / 2;
      for (let r = 0; r < c.r0; r++) right[r] = Math.max(right[r], lane - GAP_ACROSS);
    }
    for (const c of sources) put(c, (out.get(c) ?? []).filter(([si]) => done.has(si)).map(([si, q, p]) =>
      si.rx + offset(si, q) + q.w / 2 - offset(c, p) - p.w / 2));
    // an edge entering the box runs down right of its header label: the members move right as needed
    const head = (heads.get(g.id) ?? 0) - PAD_X + GAP_ACROSS / 2;
    const left = Math.min(g.items.reduce((l, c) => Math.min(l, c.rx), Infinity),
      g.entered.reduce((l, [c, b]) => Math.min(l, c.rx + offset(c, b) + b.w / 2 - head), Infinity));
    for (const c of g.items) c.rx -= left;
    g.w = g.items.reduce((w, c) => Math.max(w, c.rx + c.w), 0) + (g === root ? 0 : 2 * PAD_X);
  }
  // rows: as thick as their tallest node, further apart where nested boxes start or end
  const thick = new Array<number>(root.h).fill(0), above = new Array<number>(root.h + 1).fill(-1), below = new Array<number>(root.h).fill(-1);
  for (const u of units) thick[u.rank] = Math.max(thick[u.rank], u.ht);
  for (const g of groups.values()) {
    above[g.rank] = Math.max(above[g.rank], g.kTop);
    below[g.rank + g.h - 1] = Math.max(below[g.rank + g.h - 1], g.kBottom);
  }
  const top: number[] = [];
  let along = 16 + (above[0] >= 0 ? PAD_TOP * (above[0] + 1) : 0);
  for (let r = 0; r < root.h; r++) {
    top.push(along);
    along += thick[r] + GAP_ALONG + PAD_TOP * Math.max(0, above[r + 1]) + PAD_BOTTOM * Math.max(0, below[r]);
  }
  const boxes: Record<string, Box> = {};
  let maxAcross = 0;
  (function place(g: Group, x: number) {
    if (g !== root) {
      const r1 = g.rank + g.h - 1;
      const y0 = top[g.rank] - PAD_TOP * (g.kTop + 1), y1 = top[r1] + thick[r1] + PAD_BOTTOM * (g.kBottom + 1);
      boxes[g.id] = { x: x + g.w / 2, y: (y0 + y1) / 2, width: g.w, height: y1 - y0 };
      x += PAD_X;
    }
    for (const c of g.items) {
      if (isGroup(c)) place(c, x + c.rx);
      else boxes[c.id] = { x: x + c.rx + c.w / 2, y: top[c.rank] + c.ht / 2, width: c.w, height: c.ht };
      maxAcross = Math.max(maxAcross, x + c.rx + c.w);
    }
  })(root, 16);
  const edges = input.edges.map((e) => {
    const a = boxes[e.source], b = boxes[e.target];
    // from border to border, so the arrowhead at the target shows (centre to centre, it was under the
    // node), through the middle, where the viewer puts the edge's label
    if (!a || !b) return { points: [] };
    const p = border(a, b), q = border(b, a);
    return { points: [p, { x: (p.x + q.x) / 2, y: (p.y + q.y) / 2 }, q] };
  });
  return { boxes, edges, width: maxAcross + 16, height: along, engine: "layered", ms: 0 };
}

/** Whether segments pq and uv cross (meeting at an end does not count). */
function segmentsCross(p: Point, q: Point, u: Point, v: Point): boolean {
  const side = (a: Point, b: Point, c: Point) => (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x);
  return side(u, v, p) * side(u, v, q) < 0 && side(p, q, u) * side(p, q, v) < 0;
}

/** Whether two polylines cross anywhere. */
function linesCross(a: Point[], b: Point[]): boolean {
  for (let i = 1; i < a.length; i++) for (let j = 1; j < b.length; j++) if (segmentsCross(a[i - 1], a[i], b[j - 1], b[j])) return true;
  return false;
}

/** Edges that share an end meet there by design: their crossing does not count. */
const touch = (e1: LayoutInput["edges"][number], e2: LayoutInput["edges"][number]) =>
  e1.source === e2.source || e1.target === e2.target || e1.source === e2.target || e1.target === e2.source;

/**
 * How many pairs of drawn edges cross (segment by segment; edges sharing an end do not count).
 * The layout's quality figure for tests and benchmarks: O(segments²), so for graphs of a few
 * thousand edges at most.
 */
export function countCrossings(r: LayoutResult, input: LayoutInput): number {
  const segs: { a: Point; b: Point; e: number }[] = [];
  r.edges.forEach((e, i) => {
    for (let j = 1; j < e.points.length; j++) segs.push({ a: e.points[j - 1], b: e.points[j], e: i });
  });
  const seen = new Set<string>();
  for (let i = 0; i < segs.length; i++) for (let j = i + 1; j < segs.length; j++) {
    const s1 = segs[i], s2 = segs[j];
    if (s1.e === s2.e || touch(input.edges[s1.e], input.edges[s2.e])) continue;
    if (segmentsCross(s1.a, s1.b, s2.a, s2.b)) seen.add(s1.e < s2.e ? `${s1.e},${s2.e}` : `${s2.e},${s1.e}`);
  }
  return seen.size;
}
