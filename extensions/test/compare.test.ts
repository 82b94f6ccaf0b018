import { afterEach, describe, expect, it } from "vitest";
import { ratioText } from "../src/core/compare";
import type { Snapshot, Summary } from "../src/core/types";
import { fixture } from "./fixtures";
import { item, mount } from "./helpers";

afterEach(() => document.body.replaceChildren());

/** The mlp fixture as wb.viz.compare would write it: relu removed, pow added, head.weight's gradient 3x. */
function compared(): Snapshot {
  const snap = fixture("mlp");
  const side = (scale: number) => Object.fromEntries(snap.nodes.map((n) => [n.id, {
    id: n.id, shape: n.shape, dtype: n.dtype, value: n.value,
    grad: n.grad && n.id === "head.weight" ? { ...n.grad, norm: n.grad.norm! * scale } : n.grad,
  }]));
  const a = side(1), b = side(3);
  delete a.pow;
  delete b.relu;
  for (const n of snap.nodes) n.diff = n.id === "relu" ? "removed" : n.id === "pow" ? "added" : null;
  const values: Record<string, number | null> = Object.fromEntries(snap.nodes.map((n) => [n.id, n.diff ? null : 1]));
  values["head.weight"] = 3;
  Object.assign(snap, {
    title: "a: step 0 vs b: step 1",
    measures: { grad_norm_ratio: { label: "gradient norm ratio (b/a)", unit: "", scale: "ratio", values } },
    compare: { a: { title: "step 0", nodes: a }, b: { title: "step 1", nodes: b }, counts: { added: 1, removed: 1, changed: 1 }, factor: 2 },
  });
  return snap;
}

describe("compare view", () => {
  it("says what is compared, the counts, and what the marks mean", async () => {
    const { root } = await mount(compared());
    const bar = root.querySelector(".wb-compare-bar")!;
    expect(bar.textContent).toContain("a: step 0");
    expect(bar.textContent).toContain("b: step 1");
    expect(bar.textContent).toMatch(/1 added.*1 removed.*1 changed by > 2×/);
    expect(bar.textContent).toContain("+ added only in b");
    expect(bar.textContent).toContain("− removed only in a");
  });

  it("marks added and removed nodes with an icon and an outline class, and their modules with counts", async () => {
    const { root, v } = await mount(compared());
    // collapsed: the module box of the removed relu says so
    expect(item(root, "m:encoder")!.textContent).toContain("−1");
    await v.reveal("relu");
    await v.reveal("pow");
    const relu = item(root, "relu")!, pow = item(root, "pow")!;
    expect(relu.classList.contains("wb-diff-removed")).toBe(true);
    expect(relu.textContent).toContain("− removed");
    expect(relu.getAttribute("aria-label")).toContain("removed: only in a");
    expect(pow.classList.contains("wb-diff-added")).toBe(true);
    expect(pow.textContent).toContain("+ added");
    expect(item(root, "sub")!.getAttribute("class")).not.toContain("wb-diff");
  });

  it("opens with the top-N table closed, so the a | b table of a selection is in view", async () => {
    const snap = compared();
    snap.overlay = "grad_norm_ratio";
    const { root, v } = await mount(snap);
    await v.reveal("head.weight");
    const top = root.querySelector<HTMLDetailsElement>(".wb-panel .wb-top")!;
    expect(top.open).toBe(false);
    expect(top.querySelector(".wb-top-head")!.textContent).toBe("Top 10 by gradient norm ratio (b/a)");
    expect(top.querySelector(".wb-top-count")!.textContent).toBe("of 12 nodes with a value, 2 n/a");
    expect(root.querySelector(".wb-cmp-panel")).not.toBeNull();
  });

  it("shows both sides of the selected node with the ratio, and walks the added nodes from the header", async () => {
    const { root, v } = await mount(compared());
    await v.reveal("head.weight");
    const panel = root.querySelector(".wb-cmp-panel")!;
    expect(panel.textContent).toContain("a | b");
    const rows = [...panel.querySelectorAll("tr")].map((r) => [...r.children].map((c) => c.textContent));
    expect(rows[0]).toEqual(["", "a", "b", "b/a"]);
    const grad = rows.find((r) => r[0] === "‖grad‖")!;
    expect(Number(grad[2]) / Number(grad[1])).toBeCloseTo(3, 2);
    expect(grad[3]).toBe("3×");
    // the node details below are still there
    expect(root.querySelector('.wb-panel [aria-label="selected node"]')).not.toBeNull();
    (root.querySelector(".wb-cmp-added") as HTMLButtonElement).click();
    await v.ready();
    await new Promise((r) => setTimeout(r, 0));
    expect(root.querySelector(".wb-cmp-panel")!.textContent).toContain("+ added: only in b");
    expect([...root.querySelectorAll(".wb-cmp-panel td")].some((td) => td.textContent === "—")).toBe(true); // no a side
  });

  it("says why a ratio is 0, infinite or missing", () => {
    const s = (norm: number | null, nan = 0): Summary => ({ shape: [2], dtype: "float32", numel: 2, min: 0, max: 0, mean: 0, std: 0, norm, nan, inf: 0, hist: null, values: null });
    expect(ratioText(null, s(0), s(2))).toBe("∞ (0 in a)");
    expect(ratioText(0, s(2), s(0))).toBe("0 (0 in b)");
    expect(ratioText(null, s(0), s(0))).toBe("– (0 in both)");
    expect(ratioText(null, s(1), s(1, 1))).toBe("– (NaN in b)");
    expect(ratioText(null, null, s(1))).toBe("– (not recorded in a)");
    expect(ratioText(1.5, s(2), s(3))).toBe("1.5×");
  });

  it("outlines a collapsed module whose nodes were all added, and marks diffs in the canvas overview", async () => {
    const snap = compared();
    for (const n of snap.nodes) if (n.scope === "head") n.diff = "added";
    const { root } = await mount(snap);
    expect(item(root, "m:head")!.classList.contains("wb-diff-added")).toBe(true);
    expect(item(root, "m:encoder")!.classList.contains("wb-diff-removed")).toBe(false); // only one of its nodes
    const { paintOverview } = await import("../src/core/overview");
    const rects: number[][] = [];  // the dash pattern of each stroked box
    const ctx = { dash: [] as number[], lineWidth: 1, strokeStyle: "", fillStyle: "",
      setLineDash(d: number[]) { this.dash = d; }, strokeRect() { rects.push(this.dash); },
      setTransform() {}, clearRect() {}, fillRect() {}, beginPath() {}, moveTo() {}, lineTo() {}, stroke() {} };
    const canvas = document.createElement("canvas");
    canvas.getContext = (() => ctx) as never;
    const L = { boxes: { p: { x: 0, y: 0, width: 4, height: 4 }, q: { x: 9, y: 0, width: 4, height: 4 } }, edges: [], width: 20, height: 5, ms: 0 };
    paintOverview(canvas, L as never, [{ id: "p", mark: null, diff: "added" }, { id: "q", mark: null, diff: "removed" }], [], [], { k: 1, x: 0, y: 0 });
    expect(rects.slice(-2).map((d) => d.length)).toEqual([0, 2]); // added solid, removed dashed
  });

  it("leaves an ordinary snapshot as it was", async () => {
    const { root } = await mount(fixture("mlp"));
    expect(root.querySelector(".wb-compare-bar")).toBeNull();
    expect(root.querySelector(".wb-diff-added, .wb-diff-removed")).toBeNull();
  });
});
