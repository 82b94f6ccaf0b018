import { afterEach, describe, expect, it } from "vitest";
import { fixture } from "./fixtures";
import { syntheticTape } from "./synthetic";
import { item, key, mount } from "./helpers";

afterEach(() => document.body.replaceChildren());

describe("viewer", () => {
  it("draws the scalar tape with micrograd-style data/grad numbers, scalar edges unlabelled", async () => {
    const { root } = await mount(fixture("scalar"));
    expect(root.querySelectorAll(".wb-node")).toHaveLength(7);
    expect(item(root, "a")!.textContent).toContain("data 2 | grad 6");
    expect(item(root, "L")!.textContent).toContain("data -8 | grad 1");
    expect(root.querySelectorAll("path.wb-edge")).toHaveLength(6);
    expect(root.querySelectorAll(".wb-edge-label")).toHaveLength(0);
  });

  it("labels tensor edges with their shape, and merged edges with a count", async () => {
    const { root, v } = await mount(fixture("mlp"));
    const labels = () => [...root.querySelectorAll(".wb-edge-label")].map((t) => t.textContent);
    expect(labels()).toEqual(expect.arrayContaining(["8×3", "8×4", "8×1"]));
    await v.toggle("m:encoder");
    await v.toggle("m:encoder.0");
    expect(labels()).toEqual(expect.arrayContaining(["4×3", "4"]));
  });

  it("is a focusable root that tells JupyterLab to leave its keys alone", async () => {
    const { root } = await mount(fixture("scalar"));
    expect(root.getAttribute("tabindex")).toBe("0");
    expect(root.getAttribute("data-lm-suppress-shortcuts")).toBe("true");
    expect(root.querySelector('[aria-live="polite"]')).not.toBeNull();
  });

  it("starts with modules collapsed and opens one on click", async () => {
    const { root, v } = await mount(fixture("mlp"));
    expect(item(root, "m:encoder")!.classList.contains("wb-box")).toBe(true);
    expect(item(root, "mm1")).toBeNull();
    (item(root, "m:encoder")!.querySelector("rect") as SVGElement).dispatchEvent(new MouseEvent("click", { bubbles: true }));
    await v.ready();
    expect(item(root, "m:encoder")!.classList.contains("wb-cluster-head")).toBe(true);
    expect(item(root, "m:encoder.0")!.classList.contains("wb-box")).toBe(true);
    await v.toggle("m:encoder");
    expect(item(root, "m:encoder")!.classList.contains("wb-box")).toBe(true);
  });

  it("moves roving focus to the nearest node in the arrow's direction", async () => {
    const { root } = await mount(fixture("scalar"));
    const a = item(root, "a") as SVGGElement;
    a.dispatchEvent(new MouseEvent("click", { bubbles: true }));
    expect(document.activeElement).toBe(a);
    expect(a.getAttribute("tabindex")).toBe("0");
    key(root, "ArrowDown");
    // a feeds e (a*b), drawn right below it; only the focused item is in the tab order.
    expect(document.activeElement!.getAttribute("data-id")).toBe("e");
    expect(a.getAttribute("tabindex")).toBe("-1");
    expect(root.querySelectorAll('.wb-graph [tabindex="0"]')).toHaveLength(1);
    key(root, "ArrowUp");
    expect(["a", "b"]).toContain(document.activeElement!.getAttribute("data-id"));
    key(root, "Enter");
    expect(root.querySelector(".wb-panel h3")!.textContent).toMatch(/^[ab] leaf/);
  });

  it("opens and closes with Enter on the focused box, and moves focus with arrows", async () => {
    const { root, v } = await mount(fixture("mlp"));
    const box = item(root, "m:encoder") as SVGGElement;
    box.focus();
    box.dispatchEvent(new MouseEvent("click", { bubbles: true }));
    await v.ready();
    expect(item(root, "m:encoder.1")).not.toBeNull();
    key(root, "ArrowDown");
    expect(root.querySelectorAll('[tabindex="0"]').length).toBeGreaterThanOrEqual(1);
    key(root, "Enter");
    await v.ready();
  });

  it("searches by op, scope or param, and reveals the hit inside its module", async () => {
    const { root, v } = await mount(fixture("mlp"));
    const input = root.querySelector<HTMLInputElement>(".wb-search")!;
    key(root, "/");
    expect(document.activeElement).toBe(input);
    input.value = "head.weight";
    input.dispatchEvent(new Event("input", { bubbles: true }));
    const results = root.querySelectorAll(".wb-results li");
    expect(results).toHaveLength(1);
    expect(item(root, "m:head")!.classList.contains("wb-match")).toBe(true);
    key(input, "Enter");
    await v.ready();
    await new Promise((r) => setTimeout(r, 0));
    expect(item(root, "head.weight")!.classList.contains("wb-selected")).toBe(true);
    expect(root.querySelector(".wb-panel")!.textContent).toContain("head.weight");
  });

  it("shows the details panel with source line, saved tensors and summaries", async () => {
    const { root, v } = await mount(fixture("scalar"));
    v.select("e");
    const panel = root.querySelector(".wb-panel")!;
    expect(panel.textContent).toContain("MulBackward0");
    expect(panel.textContent).toContain("<ipython-input-1>:4 in <module>");
    expect(panel.textContent).toContain("self: scalar float32");
    expect(panel.textContent).toMatch(/value.*-6/s);
  });

  it("puts hostile module and node names into the page as text only", async () => {
    const snap = fixture("mlp");
    const evil = "<img src=x onerror=alert(1)>";
    snap.modules[0].type = evil;
    snap.nodes.find((n) => n.id === "mm1")!.name = evil;
    snap.title = evil;
    const { root, v } = await mount(snap);
    await v.reveal("mm1");
    v.select("m:encoder");
    expect(root.querySelector("img")).toBeNull();
    expect(root.textContent).toContain(evil);
    v.select("mm1");
    expect(root.querySelector("img")).toBeNull();
    expect(root.querySelector(".wb-panel h3")!.textContent).toContain(evil);
  });

  it("marks NaN/Inf with colour and an icon, and cut nodes and edges", async () => {
    const { root } = await mount(fixture("nan_cut"));
    const w = item(root, "w")!;
    expect(w.textContent).toContain("⚠NaN");
    expect(w.querySelector(".wb-badge-nan")).not.toBeNull();
    expect(w.classList.contains("wb-health-nan")).toBe(true);
    const ref = item(root, "ref")!;
    expect(ref.classList.contains("wb-cut")).toBe(true);
    expect(ref.textContent).toContain("✂");
    expect(root.querySelectorAll("path.wb-edge-cut")).toHaveLength(1);
    expect([...root.querySelectorAll(".wb-edge-label")].some((t) => t.textContent!.startsWith("✂"))).toBe(true);
  });
});

describe("viewer: big graphs", () => {
  it("fits thousands of items at a readable scale with a minimap, shows a canvas overview zoomed out, SVG again at a node", async () => {
    const { root, v } = await mount(syntheticTape(2000));
    expect(root.querySelectorAll(".wb-box")).toHaveLength(1);
    [...root.querySelectorAll("button")].find((b) => b.textContent === "Expand all")!.click();
    await v.ready();
    const overview = root.querySelector<HTMLCanvasElement>(".wb-overview")!;
    // Fit stops at a readable scale (titles 12 px * k >= 10 px); the minimap shows the rest.
    const k = Number(/scale\(([\d.]+)\)/.exec(root.querySelector(".wb-viewport")!.getAttribute("transform")!)![1]);
    expect(12 * k).toBeGreaterThanOrEqual(10);
    expect(overview.hidden).toBe(true);
    expect(root.querySelector<HTMLCanvasElement>(".wb-minimap")!.hidden).toBe(false);
    expect(root.querySelectorAll(".wb-node").length).toBeLessThan(200);
    expect(root.querySelector(".wb-status")!.textContent).toMatch(/^\d+ items shown of 2\d{3} nodes/);
    const canvas = root.querySelector(".wb-canvas")!;
    for (let i = 0; i < 12; i++) canvas.dispatchEvent(new WheelEvent("wheel", { deltaY: 400, ctrlKey: true, bubbles: true, cancelable: true }));
    await new Promise((r) => setTimeout(r, 40));
    expect(overview.hidden).toBe(false);
    expect(root.querySelectorAll(".wb-node")).toHaveLength(0);
    await v.reveal("layers.7.mlp.weight");
    expect(overview.hidden).toBe(true);
    const drawn = root.querySelectorAll(".wb-node").length;
    expect(drawn).toBeGreaterThan(0);
    expect(drawn).toBeLessThan(200);
    expect(item(root, "layers.7.mlp.weight")!.classList.contains("wb-selected")).toBe(true);
  });
});

describe("viewer: module details", () => {
  afterEach(() => document.body.replaceChildren());
  it("lists the NaN/Inf nodes inside a closed module and jumps to one", async () => {
    const snap = fixture("mlp");
    const relu = snap.nodes.find((n) => n.id === "relu")!;
    relu.grad = { ...relu.grad!, nan: 3 };
    const { root, v } = await mount(snap);
    expect(item(root, "m:encoder")!.textContent).toContain("⚠NaN");
    v.select("m:encoder");
    const link = root.querySelector<HTMLButtonElement>(".wb-panel .wb-link")!;
    expect(link.textContent).toContain("ReluBackward0");
    link.click();
    await v.ready();
    await new Promise((r) => setTimeout(r, 0));
    expect(item(root, "relu")!.classList.contains("wb-selected")).toBe(true);
  });
});
