import { describe, expect, it } from "vitest";
import { TapeModel } from "../src/core/graph-model";
import { type LayoutInput, computeLayout, countCrossings } from "../src/core/layout";
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

describe("layout quality: edge crossings", () => {
  it("counts crossing edges", () => {
    const inp: LayoutInput = { nodes: ["a", "b", "c", "d"].map((id) => ({ id, width: 10, height: 10, cluster: null })), clusters: [],
      edges: [{ source: "a", target: "d", label: "" }, { source: "b", target: "c", label: "" }] };
    const X = { boxes: {}, width: 0, height: 0, engine: "dagre" as const, ms: 0,
      edges: [{ points: [{ x: 0, y: 0 }, { x: 10, y: 10 }] }, { points: [{ x: 10, y: 0 }, { x: 0, y: 10 }] }] };
    expect(countCrossings(X, inp)).toBe(1);
    expect(countCrossings({ ...X, edges: [X.edges[0], { points: [{ x: 20, y: 0 }, { x: 30, y: 10 }] }] }, inp)).toBe(0);
  });

  it("draws the MLP tape and the 2,000-node tape's block list without crossings", () => {
    const mlp = new TapeModel(fixture("mlp"));
    const a = input(mlp, new Set(mlp.containers.keys()));
    const big = new TapeModel(syntheticTape(2000));
    const b = input(big, new Set(["m:layers"]));
    const ca = countCrossings(computeLayout(a), a), cb = countCrossings(computeLayout(b), b);
    console.log(`crossings: mlp ${ca} of ${a.edges.length} edges; 2000-node block list ${cb} of ${b.edges.length}`);
    expect(ca).toBe(0);
    expect(cb).toBe(0);
  });
});
