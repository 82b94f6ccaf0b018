import { describe, expect, it } from "vitest";
import { TapeModel } from "../src/core/graph-model";
import { DAGRE_LIMIT, type LayoutInput, computeLayout } from "../src/core/layout";
import { fixture } from "./fixtures";
import { syntheticTape } from "./synthetic";

function input(model: TapeModel, expanded: Set<string>): LayoutInput {
  const v = model.visible(expanded);
  return {
    nodes: v.items.map((i) => ({ id: i.id, width: 120, height: 40, cluster: i.cluster })),
    clusters: v.clusters,
    edges: v.edges.map((e) => ({ source: e.source, target: e.target, label: e.label })),
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

  it("lays out the 2,000-node tape within a second with its block list opened", () => {
    const m = new TapeModel(syntheticTape(2000));
    // Collapsed it is three items (x, the "layers" box, loss); one click shows its 111 blocks.
    expect(m.visible(new Set()).items).toHaveLength(3);
    const t0 = performance.now();
    const r = computeLayout(input(m, new Set(["m:layers"])));
    const ms = performance.now() - t0;
    expect(Object.keys(r.boxes).length).toBeGreaterThan(100);
    expect(ms).toBeLessThan(1000);
  });

  it("lays out the fully expanded 2,000-node tape with the linear layout within a second", () => {
    const m = new TapeModel(syntheticTape(2000));
    const r = computeLayout(input(m, new Set(m.containers.keys())));
    expect(r.engine).toBe("layered");
    expect(r.ms).toBeLessThan(1000);
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
