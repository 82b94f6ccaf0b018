import { describe, expect, it } from "vitest";
import { TapeModel, moduleId, scopeKey } from "../src/core/graph-model";
import { fixture } from "./fixtures";
import { syntheticTape } from "./synthetic";
import type { Snapshot } from "../src/core/types";

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

describe("graph model: calls and series", () => {
  // An RNN-like tape: module "rnn" called once, its part "layer0" once, "layer0.step" three times;
  // a parameter of "rnn" shared by every step; a loop calling "cell" twice at top level.
  const node = (id: string, scope: string, calls: (number | null)[] | undefined, kind = "op") => ({
    id, kind, op: "mul", name: "MulBackward0", scope, calls, group: null, site: null, shape: [2], dtype: "float32", device: "cpu",
    param: kind === "param" ? `${scope}.w` : null, saved: [], value: null, grad: null, cut: null,
  });
  const snap = {
    format: "workbench.tape", version: 1, title: "t", roots: ["o"], trace: null,
    modules: [{ path: "rnn", type: "GRU", parent: null }, { path: "cell", type: "Cell", parent: null }],
    nodes: [
      node("w", "rnn", undefined, "param"),
      node("a", "rnn.layer0.step", [0, 1, 2]), node("b", "rnn.layer0.step", [0, 1, 3]), node("c", "rnn.layer0.step", [0, 1, 4]),
      node("d", "cell", [5]), node("e", "cell", [6]), node("o", "", undefined, "output"),
    ],
    edges: [{ source: "a", target: "b", index: 0, shape: [2], dtype: "float32" }, { source: "b", target: "c", index: 0, shape: [2], dtype: "float32" },
      { source: "c", target: "d", index: 0, shape: [2], dtype: "float32" }, { source: "d", target: "e", index: 0, shape: [2], dtype: "float32" },
      { source: "e", target: "o", index: 0, shape: [2], dtype: "float32" }],
  } as unknown as Snapshot;

  it("makes each call its own group and repeated calls a series, RNN parts by layer then step", () => {
    const m = new TapeModel(snap);
    expect(m.ancestors("a")).toEqual(["m:rnn", "m:rnn.layer0", "s:rnn.layer0.step", "m:rnn.layer0.step|rnn.layer0.step#2"]);
    expect(m.containers.get("s:rnn.layer0.step")!.label).toBe("step ×3");
    expect(m.containers.get("s:rnn.layer0.step")!.type).toBe("GRU step · series of 3 calls");
    expect(m.containers.get("m:rnn.layer0.step|rnn.layer0.step#3")!.label).toBe("rnn.layer0.step · call 2/3");
    expect(m.ancestors("d")).toEqual(["s:cell", "m:cell|cell#5"]);
    expect(m.containers.get("s:cell")!.label).toBe("cell ×2");
    // The parameter is not inside any one call.
    expect(m.ancestors("w")).toEqual(["m:rnn"]);
    // Collapsed: one box per series; opened: one box per call.
    const closed = m.visible(new Set(["m:rnn", "m:rnn.layer0"]));
    expect(closed.items.map((i) => i.id)).toEqual(["w", "s:rnn.layer0.step", "s:cell", "o"]);
    const open = m.visible(new Set(["m:rnn", "m:rnn.layer0", "s:rnn.layer0.step"]));
    expect(open.items.filter((i) => i.type === "box").map((i) => i.id)).toHaveLength(4);
  });

  it("draws an open series as its calls side by side in the parent, with the shared parameters once", () => {
    // cell called twice at top level with a tanh between the calls, its weight shared by both
    const tied = { ...snap, nodes: [node("w", "cell", undefined, "param"), node("d", "cell", [5]), node("t", "", undefined),
      node("e", "cell", [6]), node("o", "", undefined, "output")],
    edges: [["w", "d"], ["d", "t"], ["t", "e"], ["w", "e"], ["e", "o"]].map(([source, target]) => ({ source, target, index: 0, shape: [2], dtype: "float32" })),
    } as unknown as Snapshot;
    const m = new TapeModel(tied);
    expect(m.ancestors("w")).toEqual(["s:cell"]);
    const v = m.visible(new Set(["s:cell", "m:cell|cell#5", "m:cell|cell#6"]));
    // no cluster around both calls (it would have to hold the tanh between them); each says its series
    expect(v.clusters).toEqual([{ id: "m:cell|cell#5", parent: null, series: "s:cell" }, { id: "m:cell|cell#6", parent: null, series: "s:cell" }]);
    expect(Object.fromEntries(v.items.map((i) => [i.id, i.cluster]))).toEqual({ w: null, d: "m:cell|cell#5", t: null, e: "m:cell|cell#6", o: null });
    // one parameter node feeds both calls: the same id, drawn once
    expect(v.edges.filter((e) => e.source === "w").map((e) => e.target)).toEqual(["d", "e"]);
    expect(m.where("e")).toBe("cell · call 2/2");
    expect(m.where("w")).toBe("cell");
    expect(scopeKey(m.nodes.get("e")!)).toBe("cell#6");
    expect(scopeKey(m.nodes.get("w")!)).toBe("cell");
    // collapsed, the series is one box again
    expect(m.visible(new Set()).items.map((i) => i.id)).toEqual(["s:cell", "t", "o"]);
  });
});
