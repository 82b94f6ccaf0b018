import Ajv2020 from "ajv/dist/2020";
import { afterEach, describe, expect, it, vi } from "vitest";
import { playInterval } from "../src/core/timeline";
import type { Snapshot } from "../src/core/types";
import { fixture, schema } from "./fixtures";
import { item, mount } from "./helpers";

afterEach(() => {
  vi.useRealTimers();
  document.body.replaceChildren();
});

/** The MLP fixture as a watched run of three kept steps: each node's gradient norm grows 10x a step, at step 20 the head's weight is NaN. */
function watched(): Snapshot {
  const snap = fixture("mlp");
  const ids = snap.nodes.map((n) => n.id);
  const row = (k: number) => ids.map((id, j) => (id === "head.weight" && k === 2 ? "NaN" as const : (j + 1) * 10 ** k));
  snap.series = { steps: [0, 10, 20], measures: { grad_norm: [row(0), row(1), row(2)], value_norm: [row(2), row(1), row(0)] } };
  snap.overlay = "grad_norm";
  snap.nodes.forEach((n, j) => (n.flops = j + 1)); // a measure the steps do not change
  return snap;
}

const fill = (root: Element, id: string) => (item(root, id) as SVGGElement | null)?.style.getPropertyValue("--wb-ov-fill") ?? "";
const slider = (root: Element) => root.querySelector<HTMLInputElement>(".wb-step-slider")!;
const label = (root: Element) => root.querySelector(".wb-step-label")!.textContent;

describe("timeline", () => {
  it("validates with series against the schema, and rejects a row of strings that are not numbers", () => {
    const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);
    const snap = watched();
    expect(validate(snap), JSON.stringify(validate.errors)).toBe(true);
    (snap.series!.measures.grad_norm[0] as unknown[])[0] = "big";
    expect(validate(snap)).toBe(false);
  });

  it("opens at the last step coloured by its values; the slider recolours without a relayout", async () => {
    const { root } = await mount(watched());
    expect(slider(root).value).toBe("2");
    expect(label(root)).toBe("step 20 (3 of 3) · 1 node NaN/Inf");
    expect(item(root, "x")!.classList.contains("wb-ov-has")).toBe(true);
    const last = fill(root, "x");
    slider(root).value = "0";
    slider(root).dispatchEvent(new Event("input"));
    expect(label(root)).toBe("step 0 (1 of 3) · details: step 20");
    expect(fill(root, "x")).not.toBe("");
    const legendAt0 = root.querySelector(".wb-legend")!.textContent!;
    expect(legendAt0).toContain("gradient norm");
    // one scale over every kept step (1 at step 0 .. the largest at step 20), said in the legend: a colour
    // means the same value at every step, so x (the smallest, 1 at step 0) is paler than at step 20 (100)
    expect(legendAt0).toContain("same scale at all 3 steps");
    const ticks = () => [...root.querySelectorAll(".wb-legend-tick")].map((t) => t.textContent);
    const at0 = ticks();
    expect(at0[0]).toBe("1");
    expect(fill(root, "x")).not.toBe(last);
    slider(root).value = "2";
    slider(root).dispatchEvent(new Event("input"));
    expect(ticks()).toEqual(at0);
    expect(fill(root, "x")).toBe(last);
  });

  it("follows the measure chosen under Colour by, and keeps its own keys", async () => {
    const { root } = await mount(watched());
    const select = root.querySelector<HTMLSelectElement>(".wb-select")!;
    expect([...select.options].map((o) => o.value)).toContain("value_norm");
    select.value = "value_norm";
    select.dispatchEvent(new Event("change", { bubbles: true }));
    expect(label(root)).toBe("step 20 (3 of 3)"); // no NaN among the value norms
    select.value = "flops";
    select.dispatchEvent(new Event("change", { bubbles: true }));
    expect(label(root)).toContain("the colouring (flops) is the same at every step");
    select.value = "value_norm";
    select.dispatchEvent(new Event("change", { bubbles: true }));
    slider(root).value = "1";
    slider(root).dispatchEvent(new Event("input"));
    expect(select.value).toBe("value_norm");
    const ev = new KeyboardEvent("keydown", { key: "ArrowLeft", bubbles: true, cancelable: true });
    slider(root).dispatchEvent(ev);
    expect(ev.defaultPrevented).toBe(false); // the range input moves itself; the viewer does not take the key
  });

  it("plays from the start to the end and stops there; pause stops it", async () => {
    const { root } = await mount(watched());
    vi.useFakeTimers();
    const play = root.querySelector<HTMLButtonElement>(".wb-play")!;
    play.click();
    expect(play.getAttribute("aria-pressed")).toBe("true");
    expect(slider(root).value).toBe("0");
    vi.advanceTimersByTime(playInterval(3));
    expect(slider(root).value).toBe("1");
    play.click();
    vi.advanceTimersByTime(10 * playInterval(3));
    expect(slider(root).value).toBe("1");
    play.click();
    vi.advanceTimersByTime(10 * playInterval(3));
    expect(slider(root).value).toBe("2");
    expect(play.getAttribute("aria-pressed")).toBe("false");
    expect(play.textContent).toContain("Play");
  });

  it("shows one kept step without a slider, and nothing without a series", async () => {
    const snap = watched();
    snap.series = { steps: [7], measures: { grad_norm: [snap.series!.measures.grad_norm[0]] } };
    const { root } = await mount(snap);
    expect(slider(root).hidden).toBe(true);
    expect(label(root)).toBe("step 7");
    document.body.replaceChildren();
    const plain = await mount(fixture("mlp"));
    expect(plain.root.querySelector(".wb-timeline")).toBeNull();
  });
});
