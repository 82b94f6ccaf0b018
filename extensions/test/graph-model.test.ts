import { describe, expect, it } from "vitest";
import { TapeModel, moduleId } from "../src/core/graph-model";
import { fixture } from "./fixtures";
import { syntheticTape } from "./synthetic";

describe("TapeModel: collapsing and expanding", () => {
  const model = new TapeModel(fixture("mlp"));

  it("collapses every module and composite by default", () => {
    const v = model.visible(new Set());
    const boxes = v.items.filter((i) => i.type === "box").map((i) => i.id).sort();
    expect(boxes).toEqual(["g:\u0000mse_loss#1", "m:encoder", "m:head"]);
    // x and y stay visible at top level; everything else sits inside a box.
    expect(v.items.filter((i) => i.type === "node").map((i) => i.id).sort()).toEqual(["x", "y"]);
    // Edges between boxes are merged and self-loops inside a box dropped.
    expect(v.edges.find((e) => e.source === "m:encoder" && e.target === "m:head")).toMatchObject({ count: 1, label: "8×4" });
    expect(v.edges.every((e) => e.source !== e.target)).toBe(true);
  });

  it("opens nested scopes one level at a time", () => {
    const open1 = model.visible(new Set([moduleId("encoder")]));
    expect(open1.clusters).toEqual([{ id: "m:encoder", parent: null }]);
    expect(open1.items.find((i) => i.id === "m:encoder.0")).toMatchObject({ type: "box", cluster: "m:encoder" });
    const open2 = model.visible(new Set(["m:encoder", "m:encoder.0"]));
    expect(open2.items.find((i) => i.id === "mm1")).toMatchObject({ type: "node", cluster: "m:encoder.0" });
    expect(open2.clusters.map((c) => c.id)).toEqual(["m:encoder", "m:encoder.0"]);
    expect(open2.repOf("relu")).toBe("m:encoder.1");
    expect(open2.repOf("encoder.0.weight")).toBe("encoder.0.weight");
  });

  it("knows each node's chain of containers", () => {
    expect(model.ancestors("mm1")).toEqual(["m:encoder", "m:encoder.0"]);
    expect(model.ancestors("m:encoder.1")).toEqual(["m:encoder"]);
    expect(model.containers.get("m:encoder")!.members).toHaveLength(5);
  });

  it("nests scopes missing from `modules` by their dotted path", () => {
    const snap = fixture("mlp");
    snap.modules = [];
    const m = new TapeModel(snap);
    expect(m.containers.get("m:encoder.0")!.parent).toBe("m:encoder");
    expect(m.containers.get("m:encoder")!.type).toBe("Module");
  });

  it("keeps a 20,000-node tape to a handful of boxes until opened", () => {
    const big = new TapeModel(syntheticTape(20_000));
    expect(big.snapshot.nodes).toHaveLength(20_000);
    const v = big.visible(new Set());
    expect(v.items.length).toBeLessThan(1200);
  });
});

describe("TapeModel: search", () => {
  const model = new TapeModel(fixture("mlp"));
  it("matches op, name, scope and parameter path, case-insensitively", () => {
    expect(model.search("ADDMM").map((n) => n.id)).toEqual(["mm1", "mm2"]);
    expect(model.search("head.w").map((n) => n.id)).toEqual(["head.weight"]);
    expect(model.search("encoder.1").map((n) => n.id)).toEqual(["relu"]);
    expect(model.search("mse").map((n) => n.id)).toEqual(["sub", "pow", "loss"]);
    expect(model.search("  ")).toEqual([]);
  });
});
