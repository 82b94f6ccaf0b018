import Ajv2020 from "ajv/dist/2020";
import { afterEach, describe, expect, it, vi } from "vitest";
import { Minimap } from "../src/core/minimap";
import { aggregate, colourScale, domainOver, formatValue, measuresOf, topN } from "../src/core/overlay";
import { computeLayout } from "../src/core/layout";
import type { Snapshot } from "../src/core/types";
import { fixture, schema } from "./fixtures";
import { item, key, mount } from "./helpers";

afterEach(() => {
  vi.restoreAllMocks();
  document.body.replaceChildren();
});

/** The MLP fixture with cost fields as workbench writes them (FLOPs on ops, saved bytes everywhere). */
function costed(): Snapshot {
  const snap = fixture("mlp");
  const flops: Record<string, number | null> = { t1: 0, mm1: 192, relu: 32, t2: 0, mm2: 64, sub: 8, pow: 8, loss: 8 };
  snap.nodes.forEach((n, i) => {
    n.flops = n.kind === "op" || n.kind === "output" ? flops[n.id] ?? null : null;
    n.saved_bytes = n.kind === "op" ? 32 * (i + 1) : 0;
    n.saved_tensors = [];
    n.forward_us = null;
    n.backward_us = null;
  });
  return snap;
}

const fill = (root: Element, id: string) => (item(root, id) as SVGGElement | null)?.style.getPropertyValue("--wb-ov-fill") ?? "";

describe("measures", () => {
  it("offers the built-in measures that have a value, the opening one even without, and the snapshot's extras", () => {
    const snap = costed();
    expect([...measuresOf(snap).keys()]).toEqual(["grad_norm", "value_norm", "flops", "saved_bytes"]);
    snap.overlay = "forward_us";
    snap.measures = { grad_norm_ratio: { label: "gradient norm ratio", unit: "", scale: "ratio", values: { mm1: 2, relu: 0.5, x: null } } };
    const ms = measuresOf(snap);
    expect([...ms.keys()]).toEqual(["grad_norm", "value_norm", "flops", "saved_bytes", "forward_us", "grad_norm_ratio"]);
    expect(ms.get("grad_norm_ratio")!.values.get("relu")).toBe(0.5);
    expect(ms.get("grad_norm_ratio")!.values.get("pow")).toBeNull();
    expect(ms.get("grad_norm")!.values.get("loss")).toBe(1);
  });

  it("formats bytes, FLOPs, times and ratios in their units", () => {
    expect(formatValue(512, "B")).toBe("512 B");
    expect(formatValue(1536, "B")).toBe("1.50 KiB");
    expect(formatValue(3 * 1024 ** 2, "B")).toBe("3.00 MiB");
    expect(formatValue(2.5e9, "FLOP")).toBe("2.50 GFLOP");
    expect(formatValue(192, "FLOP")).toBe("192 FLOP");
    expect(formatValue(840, "us")).toBe("840 µs");
    expect(formatValue(1250, "us")).toBe("1.25 ms");
    expect(formatValue(2, "", "ratio")).toBe("2×");
    expect(formatValue(null, "B")).toBe("n/a");
  });

  it("aggregates a box: sums for costs, the max for norms, the farthest from 1 for ratios", () => {
    const ms = measuresOf(costed());
    expect(aggregate(ms.get("flops")!, ["t1", "mm1", "encoder.0.weight"])).toBe(192);
    expect(aggregate(ms.get("flops")!, ["encoder.0.weight", "x"])).toBeNull();
    expect(aggregate(ms.get("grad_norm")!, ["t1", "mm1", "encoder.0.weight"])).toBe(0.162199);
    const ratio = { key: "r", label: "r", unit: "", scale: "ratio" as const, aggregate: "max" as const, values: new Map([["a", 1.5], ["b", 0.25], ["c", null]]) };
    expect(aggregate(ratio, ["a", "b", "c"])).toBe(0.25);
  });

  it("spans a log scale over the positive values, gives zeros and unknowns their own swatches", () => {
    const sc = colourScale("log", [10, 1000, 0, null, 100]);
    expect([sc.lo, sc.hi, sc.zeros, sc.missing]).toEqual([10, 1000, 1, 1]);
    expect(sc.tint(null)).toBeNull();
    const [lo, mid, hi] = [10, 100, 1000].map((v) => sc.tint(v)!.mix);
    expect(lo).toBeLessThan(mid);
    expect(mid).toBeLessThan(hi);
    expect(sc.tint(0)!.mix).toBeLessThan(lo);
  });

  it("draws ratios diverging on log2: blue below 1, red above, neutral at 1, symmetric", () => {
    const sc = colourScale("ratio", [4, 0.5, 1]);
    expect(sc.hi).toBeCloseTo(4);
    expect(sc.lo).toBeCloseTo(0.25);
    const up = sc.tint(4)!, down = sc.tint(0.25)!, one = sc.tint(1)!;
    expect(up.rgb[0]).toBeGreaterThan(up.rgb[2]);
    expect(down.rgb[2]).toBeGreaterThan(down.rgb[0]);
    expect(up.mix).toBe(down.mix);
    expect(one.mix).toBeLessThan(15);
    // noise around 1 stays pale: the scale spans at least 1.1x
    expect(colourScale("ratio", [1.01]).tint(1.01)!.mix).toBeLessThan(20);
  });

  it("spans a fixed domain when given one (the slider's, over all steps): same value, same colour, whatever is drawn", () => {
    const d = domainOver("log", [[1, 10], [100, 1000, null]], "same scale at all 2 steps")!;
    expect([d.lo, d.hi]).toEqual([1, 1000]);
    const a = colourScale("log", [1, 10], d), b = colourScale("log", [100, 1000], d);
    expect([a.lo, a.hi, b.lo, b.hi]).toEqual([1, 1000, 1, 1000]);
    expect(a.tint(10)).toEqual(b.tint(10));
    expect(a.tint(10)!.mix).toBeLessThan(b.tint(1000)!.mix);
    // outside the domain (a box's sum): the end colour, not past it
    expect(a.tint(1e6)).toEqual(a.tint(1000));
    const r = colourScale("ratio", [1.5], domainOver("ratio", [[4], [0.5]])!);
    expect(r.hi).toBeCloseTo(4);
    expect(r.tint(4)!.mix).toBe(colourScale("ratio", [4]).tint(4)!.mix);
    expect(domainOver("log", [[null, null]])).toBeNull();
  });

  it("ranks the top N by value (ratios by distance from 1) and counts the nodes with one", () => {
    const ms = measuresOf(costed());
    const top = topN(ms.get("flops")!, 3);
    expect(top.rows.map((r) => r.id)).toEqual(["mm1", "mm2", "relu"]);
    expect([top.known, top.total]).toEqual([8, 14]);
  });

  it("validates against the schema with measures and overlay, and rejects a bad scale", () => {
    const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);
    const snap = costed();
    snap.overlay = "grad_norm_ratio";
    snap.measures = { grad_norm_ratio: { label: "ratio", unit: "", scale: "ratio", aggregate: "max", values: { mm1: 2, relu: null } } };
    expect(validate(snap), JSON.stringify(validate.errors)).toBe(true);
    (snap.measures.grad_norm_ratio as { scale: string }).scale = "sqrt";
    expect(validate(snap)).toBe(false);
  });
});

describe("viewer overlay", () => {
  it("colours by the chosen measure from the toolbar, with a legend, and clears again", async () => {
    const { root } = await mount(costed());
    const select = root.querySelector<HTMLSelectElement>(".wb-select")!;
    expect([...select.options].map((o) => o.value)).toEqual(["", "grad_norm", "value_norm", "flops", "saved_bytes"]);
    // "Colour by" sits in the legend's row (the toolbar keeps one row), there before any colouring
    expect(root.querySelector<HTMLElement>(".wb-legend-bar")!.hidden).toBe(false);
    expect(root.querySelector(".wb-legend-bar .wb-select")).toBe(select);
    expect(root.querySelector(".wb-legend")).toBeNull();
    select.value = "saved_bytes";
    select.dispatchEvent(new Event("change"));
    expect(root.querySelector(".wb-legend")!.textContent).toContain("saved for backward");
    expect(root.querySelector(".wb-legend")!.textContent).toMatch(/B/);
    expect(fill(root, "m:head")).toContain("color-mix");
    const before = fill(root, "m:head");
    select.value = "grad_norm";
    select.dispatchEvent(new Event("change"));
    expect(fill(root, "m:head")).not.toBe(before);
    select.value = "";
    select.dispatchEvent(new Event("change"));
    expect(fill(root, "m:head")).toBe("");
    expect(root.querySelector(".wb-topn")).toBeNull();
    expect(root.querySelector(".wb-legend")).toBeNull();
  });

  it("lets the select keep its keys (the viewer's shortcuts do not fire on it)", async () => {
    const { root } = await mount(costed());
    const select = root.querySelector<HTMLSelectElement>(".wb-select")!;
    const ev = new KeyboardEvent("keydown", { key: "ArrowDown", bubbles: true, cancelable: true });
    select.dispatchEvent(ev);
    expect(ev.defaultPrevented).toBe(false);
  });

  it("opens coloured by the snapshot's overlay; a collapsed box shows its module's sum, n/a items are marked", async () => {
    const snap = costed();
    snap.overlay = "flops";
    const { root } = await mount(snap);
    expect(root.querySelector<HTMLSelectElement>(".wb-select")!.value).toBe("flops");
    // the encoder box holds mm1 (192) + relu (32) + t1 (0): the largest drawn value, so the strongest colour
    const mixes = [...root.querySelectorAll<SVGGElement>(".wb-ov-has")].map((g) => Number(/ (\d+)%/.exec(g.style.getPropertyValue("--wb-ov-fill"))![1]));
    expect(Math.max(...mixes)).toBe(Number(/ (\d+)%/.exec(fill(root, "m:encoder"))![1]));
    expect(item(root, "x")!.classList.contains("wb-ov-na")).toBe(true);
    expect(root.querySelector(".wb-legend")!.textContent).toContain("n/a (2)");
    expect(root.querySelector(".wb-legend")!.textContent).toContain("224 FLOP");
  });

  it("setOverlay recolours without a relayout, takes new values, and refuses an unknown key without values", async () => {
    let layouts = 0;
    const { root, v } = await mount(costed(), { layout: async (i) => (layouts++, computeLayout(i)) });
    const n = layouts;
    v.setOverlay("grad_norm");
    const a = fill(root, "m:head");
    expect(item(root, "x")!.classList.contains("wb-ov-na")).toBe(true);
    v.setOverlay("grad_norm", new Map([["x", 5], ["y", 0.001], ["head.weight", 1]]));
    expect(fill(root, "m:head")).not.toBe(a);
    expect(fill(root, "x")).toContain("color-mix");
    expect(item(root, "m:encoder")!.classList.contains("wb-ov-na")).toBe(true);
    v.setOverlay("watch_norm", new Map([["x", 1]]));
    expect(root.querySelector<HTMLSelectElement>(".wb-select")!.value).toBe("watch_norm");
    // closed by the user, the top-N table stays closed while new values come in (the step slider)
    root.querySelector<HTMLDetailsElement>(".wb-top")!.open = false;
    v.setOverlay("watch_norm", new Map([["x", 2]]));
    expect(root.querySelector<HTMLDetailsElement>(".wb-top")!.open).toBe(false);
    expect(() => v.setOverlay("nope")).toThrow(/unknown measure "nope"; known: grad_norm, value_norm, flops, saved_bytes, watch_norm/);
    expect(layouts).toBe(n);
  });

  it("colours the minimap like the graph and rings the top-N rows (as their collapsed module) and the selected node", async () => {
    const spy = vi.spyOn(Minimap.prototype, "setOverlay");
    const snap = costed();
    snap.overlay = "flops";
    const { root, v } = await mount(snap);
    const [fills, rings] = spy.mock.lastCall!;
    // every coloured item has its colour there, the uncoloured (n/a) none
    const tinted = [...root.querySelectorAll(".wb-graph .wb-ov-has")].map((g) => g.getAttribute("data-id")!);
    expect(tinted.length).toBeGreaterThan(1);
    expect([...fills!.keys()].sort()).toEqual(tinted.sort());
    expect([...fills!.values()].every((c) => c.startsWith("rgba("))).toBe(true);
    // mm1 (the top row) is inside the collapsed encoder: its ring is the module's box
    expect(item(root, "mm1")).toBeNull();
    const ringed = rings.map((r) => r.id);
    expect(ringed).toContain("m:encoder");
    expect(ringed.every((id) => item(root, id) !== null)).toBe(true);
    const drawn = root.querySelector(".wb-graph .wb-node[data-id]")!.getAttribute("data-id")!;
    v.select(drawn);
    expect(spy.mock.lastCall![1].at(-1)!.id).toBe(drawn);
    v.setOverlay(null);
    expect(spy.mock.lastCall![0]).toBeNull();
    expect(spy.mock.lastCall![1].map((r) => r.id)).toEqual([drawn]);
  });

  it("lists the top N as buttons; a click opens the collapsed module, selects and centres the node", async () => {
    const snap = costed();
    snap.overlay = "flops";
    const { root, v } = await mount(snap);
    const rows = [...root.querySelectorAll<HTMLButtonElement>(".wb-topn-row")];
    expect(rows.map((r) => r.getAttribute("data-id"))).toEqual(["mm1", "mm2", "relu", "sub", "pow", "loss", "t1", "t2"]);
    expect(root.querySelector(".wb-top summary")!.textContent).toContain("of 8 nodes with a value, 6 n/a");
    expect(item(root, "mm1")).toBeNull();
    rows[0].click();
    await v.ready();
    await new Promise((r) => setTimeout(r, 0));
    expect(item(root, "mm1")).not.toBeNull();
    expect(item(root, "mm1")!.classList.contains("wb-selected")).toBe(true);
    const details = root.querySelector(".wb-panel section[aria-label='selected node']")!;
    expect(details.querySelector("h3")!.textContent).toContain("AddmmBackward0");
    expect(details.textContent).toContain("FLOPs192 FLOP");  // the node's cost in its details
    expect(details.textContent).toContain("saved for backward · 192 B");
    expect(root.querySelector(".wb-topn-row[aria-current='true']")!.getAttribute("data-id")).toBe("mm1");
    // the newly drawn node is coloured too, and the table is still there above the details
    expect(fill(root, "mm1")).toContain("color-mix");
    expect(root.querySelector(".wb-panel")!.firstElementChild!.classList.contains("wb-top")).toBe(true);
    key(root, "f");
  });
});
