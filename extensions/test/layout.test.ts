import dagre from "@dagrejs/dagre";
import { describe, expect, it, vi } from "vitest";
import { TapeModel } from "../src/core/graph-model";
import { type Box, DAGRE_COST, DAGRE_LIMIT, type LayoutInput, computeLayout, layoutEngine, sound } from "../src/core/layout";
import { fixture } from "./fixtures";
import { mlpTape, syntheticTape } from "./synthetic";

function input(model: TapeModel, expanded: Set<string>): LayoutInput {
  const v = model.visible(expanded);
  return {
    nodes: v.items.map((i) => ({ id: i.id, width: 120, height: 40, cluster: i.cluster })),
    clusters: v.clusters,
    edges: v.edges.map((e) => ({ source: e.source, target: e.target, label: e.label, index: e.index })),
  };
}

describe("layout", () => {
  it("places producers above consumers and clusters around their members", () => {
    const m = new TapeModel(fixture("mlp"));
    const r = computeLayout(input(m, new Set(m.containers.keys())));
    expect(r.engine).toBe("dagre");
    expect(r.boxes.mm1.y).toBeLessThan(r.boxes.relu.y);
    expect(r.boxes.relu.y).toBeLessThan(r.boxes.loss.y);
    const c = r.boxes["m:encoder"], n = r.boxes.mm1;
    expect(Math.abs(n.x - c.x)).toBeLessThan(c.width / 2);
    expect(Math.abs(n.y - c.y)).toBeLessThan(c.height / 2);
    expect(r.edges.every((e) => e.points.length >= 2)).toBe(true);
  });

  // How fast is benchmarks/viewer_speed.py's (ready, expand and its longest task, in Chromium); here, what
  // the layout of the 2,000-node tape is: every item placed, inputs above their consumers, no two node boxes
  // overlapping, each drawn module's box around its members.
  function checkLayout(inp: LayoutInput, r: ReturnType<typeof computeLayout>) {
    const box = (id: string) => r.boxes[id];
    for (const n of inp.nodes) expect(box(n.id), n.id).toBeDefined();
    for (const c of inp.clusters) expect(box(c.id), c.id).toBeDefined();
    for (const e of inp.edges) expect(box(e.source).y, `${e.source} -> ${e.target}`).toBeLessThan(box(e.target).y);
    expect(r.edges).toHaveLength(inp.edges.length);
    expect(r.edges.every((e) => e.points.length >= 2)).toBe(true);
    const byRow = new Map<number, Box[]>();
    for (const n of inp.nodes) byRow.set(Math.round(box(n.id).y), [...(byRow.get(Math.round(box(n.id).y)) ?? []), box(n.id)]);
    for (const row of byRow.values()) {
      row.sort((a, b) => a.x - b.x);
      for (let i = 1; i < row.length; i++) expect(row[i - 1].x + row[i - 1].width / 2).toBeLessThanOrEqual(row[i].x - row[i].width / 2);
    }
    const inside = (a: Box, b: Box) => a.x - a.width / 2 >= b.x - b.width / 2 - 0.5 && a.x + a.width / 2 <= b.x + b.width / 2 + 0.5 &&
      a.y - a.height / 2 >= b.y - b.height / 2 - 0.5 && a.y + a.height / 2 <= b.y + b.height / 2 + 0.5;
    for (const n of inp.nodes) if (n.cluster) expect(inside(box(n.id), box(n.cluster)), `${n.id} in ${n.cluster}`).toBe(true);
    for (const c of inp.clusters) if (c.parent) expect(inside(box(c.id), box(c.parent)), `${c.id} in ${c.parent}`).toBe(true);
    // and apart from every box that is not its own: no two sibling boxes overlap, none covers a foreign node
    const parent = new Map(inp.clusters.map((c) => [c.id, c.parent]));
    const chain = (c: string | null) => { const out = new Set<string>(); for (; c; c = parent.get(c) ?? null) out.add(c); return out; };
    const apart = (a: Box, b: Box) => Math.abs(a.x - b.x) * 2 >= a.width + b.width - 0.5 || Math.abs(a.y - b.y) * 2 >= a.height + b.height - 0.5;
    const chains = new Map(inp.clusters.map((c) => [c.id, chain(c.id)]));
    const bad: string[] = [];
    for (const a of inp.clusters) for (const b of inp.clusters) {
      if (a.id < b.id && !chains.get(a.id)!.has(b.id) && !chains.get(b.id)!.has(a.id) && !apart(box(a.id), box(b.id))) {
        bad.push(`the boxes of ${a.id} and ${b.id} overlap`);
      }
    }
    for (const n of inp.nodes) {
      const own = chain(n.cluster);
      for (const c of inp.clusters) if (!own.has(c.id) && !apart(box(n.id), box(c.id))) bad.push(`${n.id} inside ${c.id}`);
    }
    expect(bad.slice(0, 5)).toEqual([]);
  }

  // Netron and TensorBoard draw a deep chain as one straight column. dagre's Brandes-Köpf pass sets a
  // node under the median of its inputs, and a Linear's median input is its weight: each layer used to
  // step one leaf to the right (a 12-layer MLP drifted 1,900 px across).
  it("draws the main path of a deep MLP as a straight column", () => {
    const m = new TapeModel(mlpTape(12));
    const inp = input(m, new Set(m.containers.keys()));
    const r = computeLayout(inp);
    expect(r.engine).toBe("dagre");
    checkLayout(inp, r);
    const spine = ["x", ...Array.from({ length: 12 }, (_, k) => [`linear${k}`, `relu${k}`]).flat(), "loss"];
    const xs = spine.map((id) => Math.round(r.boxes[id].x));
    expect(Math.max(...xs) - Math.min(...xs), `x along the chain: ${xs.join(" ")}`).toBeLessThanOrEqual(1);
  });

  /** Edges that run across the header label (100 px wide, 20 tall, at the top left) of a box they enter. */
  function headerCrossings(inp: LayoutInput, r: ReturnType<typeof computeLayout>): string[] {
    const cluster = new Map(inp.nodes.map((n) => [n.id, n.cluster]));
    const crossed: string[] = [];
    inp.edges.forEach((e, i) => {
      const c = cluster.get(e.target);
      if (!c || cluster.get(e.source) === c) return;
      const box = r.boxes[c], left = box.x - box.width / 2, top = box.y - box.height / 2;
      const pts = r.edges[i].points;
      for (let j = 1; j < pts.length; j++) {
        const a = pts[j - 1], b = pts[j];
        // the part of the segment within the header's rows, and where it runs across
        const t0 = Math.max(0, (top - a.y) / (b.y - a.y)), t1 = Math.min(1, (top + 20 - a.y) / (b.y - a.y));
        if (!(t0 <= t1)) continue;
        const x0 = a.x + t0 * (b.x - a.x), x1 = a.x + t1 * (b.x - a.x);
        if (Math.max(x0, x1) >= left && Math.min(x0, x1) <= left + 100) crossed.push(`${e.source} -> ${e.target} across ${c}`);
      }
    });
    return crossed.slice(0, 5);
  }

  // An open box's header label sits at its top left (the viewer draws it there, 20 px tall).
  it.each([[12, "dagre"], [210, "layered"]])("keeps edges entering a box off its header label (%i layers, %s)", (layers, engine) => {
    const m = new TapeModel(mlpTape(layers));
    const inp = input(m, new Set(m.containers.keys()));
    inp.clusters = inp.clusters.map((c) => ({ ...c, label: 100 }));
    const r = computeLayout(inp);
    expect(r.engine).toBe(engine);
    checkLayout(inp, r);
    expect(headerCrossings(inp, r)).toEqual([]);
  });

  // Real models (tests/viz/repeated.py): a GRU cell applied at 8 time steps, a weight-tied model
  // with a layer called twice, two ResNet blocks, a widening one (its skip through a 1x1 conv), a
  // transformer encoder layer; fully expanded, with the header labels the viewer draws.
  const real = (name: "gru_loop" | "tied" | "resnet" | "widening" | "transformer") => {
    const m = new TapeModel(fixture(name));
    const inp = input(m, new Set(m.containers.keys()));
    inp.clusters = inp.clusters.map((c) => ({ ...c, label: 100 }));
    return { m, inp, r: computeLayout(inp) };
  };

  it.each(["gru_loop", "tied", "resnet", "widening", "transformer"] as const)("keeps every node of %s in its own boxes, none overlapping", (name) => {
    const { inp, r } = real(name);
    checkLayout(inp, r);
    expect(sound(inp, r)).toBe(true);
    expect(headerCrossings(inp, r)).toEqual([]);
  });

  it("stacks the calls of a GRU cell in a loop in one column, not a staircase", () => {
    const { inp, r } = real("gru_loop");
    const calls = inp.clusters.filter((c) => c.id.startsWith("m:cell|")).map((c) => r.boxes[c.id]).sort((a, b) => a.y - b.y);
    expect(calls).toHaveLength(8);
    // one vertical line runs through every call's box (dagre's staircase: 8 boxes side by side, 9,200 px)
    const left = Math.max(...calls.map((b) => b.x - b.width / 2)), right = Math.min(...calls.map((b) => b.x + b.width / 2));
    expect(left, calls.map((b) => Math.round(b.x)).join(" ")).toBeLessThan(right);
    expect(r.width).toBeLessThan(3 * Math.max(...calls.map((b) => b.width)));
    // and the calls line up: each one centred under the one before (each stepped ~140 px sideways)
    const xs = calls.map((b) => b.x);
    expect(Math.max(...xs) - Math.min(...xs), xs.map(Math.round).join(" ")).toBeLessThan(1);
  });

  // dagre drew them as a staircase, more than DRIFT times wider than the linear layout, which was kept:
  // dagre's pass (0.45-0.7 s here, 1.1-1.3 s in the worker) went for nothing
  it("does not run dagre on a chain of three or more open calls of one module, only to drop its layout", () => {
    const spy = vi.spyOn(dagre, "layout");
    try {
      expect(real("gru_loop").r.engine).toBe("layered");
      expect(spy).not.toHaveBeenCalled();
      expect(real("tied").r.engine).toBe("dagre");  // two calls of one layer
      expect(spy).toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });

  // widening: the skip runs into the block's 1x1 convolution, and the main branch's boxes fill the width
  // near its ends, so no column next to dagre's zig-zag was free: it goes round them
  // the linear layout draws edges straight: a weight shared by the GRU's calls ran across the nodes of
  // every call before the one using it
  it("routes the linear layout's long edges round the nodes between their ends", () => {
    const { inp, r } = real("gru_loop");
    expect(r.engine).toBe("layered");
    const through: string[] = [];
    inp.edges.forEach((e, i) => {
      const pts = r.edges[i].points;
      for (let k = 1; k < pts.length; k++) for (let t = 0.02; t < 1; t += 0.02) {
        const x = pts[k - 1].x + t * (pts[k].x - pts[k - 1].x), y = pts[k - 1].y + t * (pts[k].y - pts[k - 1].y);
        for (const n of inp.nodes) {
          const b = r.boxes[n.id];
          if (n.id !== e.source && n.id !== e.target && Math.abs(b.x - x) * 2 < b.width - 1 && Math.abs(b.y - y) * 2 < b.height - 1) through.push(`${e.source} -> ${e.target} through ${n.id}`);
        }
      }
    });
    expect([...new Set(through)]).toEqual([]);
  });

  it.each(["resnet", "transformer", "widening"] as const)("runs each residual skip of %s as one straight column beside the main path", (name) => {
    const { m, inp, r } = real(name);
    const skips = inp.edges.map((e, i) => ({ e, pts: r.edges[i].points }))
      .filter(({ e }) => ["add", "convolution"].includes(m.nodes.get(e.target)?.op ?? "") && r.boxes[e.target].y - r.boxes[e.source].y > 300);
    expect(skips.length).toBeGreaterThan(0);
    for (const { e, pts } of skips) {
      // one x from its first bend to its last, but for a step round the header of a box it enters
      const run = pts.slice(1, -1), x = run[0].x, y0 = run[0].y, y1 = run[run.length - 1].y;
      let straight = 0;
      for (let k = 1; k < run.length; k++) if (run[k].x === x && run[k - 1].x === x) straight += run[k].y - run[k - 1].y;
      expect(run[run.length - 1].x, JSON.stringify(run)).toBe(x);
      expect(straight / (y1 - y0), `${e.source} -> ${e.target}: ${JSON.stringify(run)}`).toBeGreaterThan(0.9);
      // beside the nodes it passes, not through them
      for (const n of inp.nodes) {
        const b = r.boxes[n.id];
        if (n.id !== e.source && n.id !== e.target && b.y + b.height / 2 > y0 && b.y - b.height / 2 < y1) {
          expect(Math.abs(b.x - x) * 2, `${e.source} -> ${e.target} through ${n.id}`).toBeGreaterThanOrEqual(b.width);
        }
      }
    }
  });

  it("lays out the 2,000-node tape with its block list opened", () => {
    const m = new TapeModel(syntheticTape(2000));
    // Collapsed it is three items (x, the "layers" box, loss); one click shows its 111 blocks.
    expect(m.visible(new Set()).items).toHaveLength(3);
    const inp = input(m, new Set(["m:layers"]));
    const r = computeLayout(inp);
    expect(r.engine).toBe("dagre");
    expect(Object.keys(r.boxes).length).toBeGreaterThan(100);
    checkLayout(inp, r);
  });

  it("lays out the fully expanded 2,000-node tape with the linear layout", () => {
    const m = new TapeModel(syntheticTape(2000));
    const inp = input(m, new Set(m.containers.keys()));
    const r = computeLayout(inp);
    expect(r.engine).toBe("layered");
    expect(inp.nodes).toHaveLength(2000);
    checkLayout(inp, r);
  });

  // dagre's time grows with (nodes + clusters) x ranks: a 170-layer MLP, 682 nodes (under DAGRE_LIMIT)
  // and 342 ranks, took 5-20 s; the linear layout takes well under one.
  it("routes a deep MLP under DAGRE_LIMIT to the linear layout and a small one to dagre", () => {
    const deep = new TapeModel(mlpTape(170)), small = new TapeModel(mlpTape(12));
    const inp = input(deep, new Set(deep.containers.keys()));
    expect(inp.nodes).toHaveLength(682);
    expect(inp.nodes.length).toBeLessThan(DAGRE_LIMIT);
    expect((inp.nodes.length + inp.clusters.length) * 342).toBeGreaterThan(DAGRE_COST);
    expect(layoutEngine(inp)).toBe("layered");
    const r = computeLayout(inp);
    expect(r.engine).toBe("layered");
    checkLayout(inp, r);
    expect(layoutEngine(input(small, new Set(small.containers.keys())))).toBe("dagre");
    // a wide graph of as many nodes but few ranks stays with dagre
    const nodes = [{ id: "x", width: 120, height: 40, cluster: null }, { id: "y", width: 120, height: 40, cluster: null }];
    const edges: LayoutInput["edges"] = [];
    for (let i = 0; i < 340; i++) {
      nodes.push({ id: `a${i}`, width: 120, height: 40, cluster: null }, { id: `b${i}`, width: 120, height: 40, cluster: null });
      edges.push({ source: "x", target: `a${i}`, label: "" }, { source: `a${i}`, target: `b${i}`, label: "" }, { source: `b${i}`, target: "y", label: "" });
    }
    expect(layoutEngine({ nodes, clusters: [], edges })).toBe("dagre");
  });

  it("switches to the linear layered layout above DAGRE_LIMIT nodes", () => {
    const m = new TapeModel(syntheticTape(20_000));
    const inp = input(m, new Set(m.containers.keys()));
    expect(inp.nodes.length).toBeGreaterThan(DAGRE_LIMIT);
    const r = computeLayout(inp);
    expect(r.engine).toBe("layered");
    expect(r.boxes.loss.y).toBeGreaterThan(r.boxes.x.y);
    expect(Object.keys(r.boxes)).toHaveLength(inp.nodes.length + inp.clusters.length);
  });
});
