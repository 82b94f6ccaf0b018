import { afterEach, describe, expect, it } from "vitest";
import { scopeKey } from "../src/core/graph-model";
import { Stepper } from "../src/core/stepper";
import type { StepRecord, TapeNode } from "../src/core/types";
import { fixture } from "./fixtures";
import { item, key, mount } from "./helpers";

const stepperFor = (name: "scalar" | "mlp" | "nan_cut") => {
  const snap = fixture(name);
  const scope = new Map(snap.nodes.map((n) => [n.id, n.scope]));
  return new Stepper(snap.trace!.steps, (id) => scope.get(id) ?? "");
};

describe("Stepper", () => {
  it("steps one node at a time and reports the end", () => {
    const s = stepperFor("scalar");
    expect(s.state()).toMatchObject({ position: 0, total: 7, current: null });
    expect(s.step()).toMatchObject({ position: 1, pausedReason: null });
    expect(s.current!.node).toBe("L");
    for (let i = 0; i < 5; i++) s.step();
    expect(s.step()).toMatchObject({ position: 7, pausedReason: "end" });
    expect(s.step()).toMatchObject({ position: 7, pausedReason: "end" });
  });

  it("steps over one call of a module, not into its next call", () => {
    // backward through two calls of "cell" (ids 7 then 3), each with two ops, then the loss's input
    const node = (id: string, calls: number[] | undefined) => ({ id, scope: calls ? "cell" : "", calls } as unknown as TapeNode);
    const nodes = new Map([node("b2", [7]), node("a2", [7]), node("b1", [3]), node("a1", [3]), node("x", undefined)].map((n) => [n.id, n]));
    const steps = ["b2", "a2", "b1", "a1", "x"].map((id, index) => ({ index, node: id, grad_outputs: [], grad_inputs: [], leaves: [] }) as unknown as StepRecord);
    const s = new Stepper(steps, (id) => scopeKey(nodes.get(id)!));
    s.step();
    expect(s.stepOver().position).toBe(2);  // the rest of call 7 only
    // call 7 is done: the next step (into call 3) runs, and nothing after it (by the path alone, all of call 3 would)
    expect(s.stepOver().position).toBe(3);
    expect(s.stepOver().position).toBe(4);  // inside call 3: the rest of it
  });

  it("steps over a whole module scope at once", () => {
    const s = stepperFor("mlp");
    // loss is top level and so is pow: one step each.
    expect(s.stepOver().position).toBe(1);
    expect(s.stepOver().position).toBe(2);
    s.step();
    // At top level (sub) with head next: head's four steps go as one.
    expect(s.stepOver().position).toBe(7);
    expect(s.current!.node).toBe("head.weight");
    s.restart();
    for (let i = 0; i < 4; i++) s.step();
    // From inside head (mm2), step over finishes head: head.bias, t2, head.weight.
    expect(s.stepOver().position).toBe(7);
    // head is done; relu's own scope (encoder.1) holds only relu.
    expect(s.stepOver().position).toBe(8);
    expect(s.current!.node).toBe("relu");
  });

  it("continues to the next user breakpoint, then to the end", () => {
    const s = stepperFor("mlp");
    s.toggleBreakpoint("relu");
    expect(s.continue()).toMatchObject({ position: 8, pausedReason: "breakpoint" });
    expect(s.continue()).toMatchObject({ position: 12, pausedReason: "end" });
    expect(s.toggleBreakpoint("relu")).toBe(false);
    expect(s.restart()).toMatchObject({ position: 0, pausedReason: null, current: null });
    expect(s.continue().position).toBe(12);
  });

  it("stops by itself where the recorder flagged NaN/Inf", () => {
    const s = stepperFor("nan_cut");
    expect(s.continue()).toMatchObject({ position: 2, pausedReason: "-Infinity in grad_inputs[0] (sent to log)" });
    expect(s.continue()).toMatchObject({ position: 3, pausedReason: "NaN in grad_inputs[0] (sent to mul)" });
    expect(s.continue()).toMatchObject({ position: 5, pausedReason: "end" });
  });
});

describe("debugger controls in the viewer (replay)", () => {
  afterEach(() => document.body.replaceChildren());

  it("drives the stepper from buttons and keys, with a counter and the current node highlighted", async () => {
    const { root } = await mount(fixture("scalar"));
    const counter = root.querySelector(".wb-counter")!;
    expect(counter.textContent).toBe("0 / 7");
    key(root, "n");
    expect(counter.textContent).toBe("1 / 7");
    expect(item(root, "L")!.classList.contains("wb-current")).toBe(true);
    const panel = root.querySelector(".wb-panel")!;
    expect(panel.textContent).toContain("Step 1 / 7 · MulBackward0");
    expect(panel.textContent).toContain("→ input 0 (AddBackward0)");
    // Classroom mode: off unless the trace asks for it; the control shows that and toggles it live,
    // and the derivation is the first thing under the step's title.
    const box = root.querySelector<HTMLInputElement>("input.wb-classroom")!;
    expect(box.checked).toBe(false);
    expect(panel.querySelector(".wb-derivation")).toBeNull();
    box.checked = true;
    box.dispatchEvent(new Event("change"));
    const der = panel.querySelector(".wb-derivation")!;
    expect(der.textContent).toContain("dL/dd = f = -2.0");
    expect(der.previousElementSibling!.tagName).toBe("H3");
    box.checked = false;
    box.dispatchEvent(new Event("change"));
    expect(panel.querySelector(".wb-derivation")).toBeNull();
    // Gradients fill in as steps run: a is not reached yet.
    expect(item(root, "a")!.textContent).toContain("grad –");
    key(root, "c");
    expect(counter.textContent).toBe("7 / 7");
    expect(item(root, "a")!.textContent).toContain("grad 6");
    key(root, "r");
    expect(counter.textContent).toBe("0 / 7");
    [...root.querySelectorAll("button")].find((b) => b.textContent!.startsWith("Step over"))!.click();
    expect(counter.textContent).toBe("1 / 7");
    expect(root.querySelector('[role="status"]')!.textContent).toContain("Step 1 of 7: MulBackward0");
  });

  it("toggles breakpoints from the gutter and with b, and shows leaf .grad before/after", async () => {
    const { root } = await mount(fixture("scalar"));
    const gutter = item(root, "d")!.querySelector("[data-gutter]")!;
    gutter.dispatchEvent(new MouseEvent("click", { bubbles: true }));
    expect(item(root, "d")!.querySelector(".wb-bp")).not.toBeNull();
    key(root, "c");
    expect(root.querySelector(".wb-counter")!.textContent).toBe("3 / 7");
    // the state in the toolbar (warning colour, no reason), the reason once, in the step panel
    expect(root.querySelector(".wb-bar .wb-paused")!.textContent).toBe("‖ paused");
    expect(root.querySelector(".wb-step-current .wb-paused")!.textContent).toContain("breakpoint");
    const saying = [...root.querySelectorAll(".wb-paused, .wb-banner, [role=status], .wb-notes")].filter((e) => e.textContent!.includes("breakpoint"));
    expect(saying.length).toBe(1);
    key(root, "b"); // focus is on d (clicked), so this removes the breakpoint
    expect(item(root, "d")!.querySelector(".wb-bp")).toBeNull();
    key(root, "n");
    const panel = root.querySelector(".wb-panel")!;
    expect(panel.textContent).toContain("c.grad before");
    expect(panel.textContent).toContain("c.grad after");
  });
});

describe("NaN marks while stepping", () => {
  afterEach(() => document.body.replaceChildren());
  it("shows NaN on a leaf only once the step that poisons its gradient has run", async () => {
    const { root } = await mount(fixture("nan_cut"));
    const w = () => item(root, "w")!;
    expect(w().classList.contains("wb-health-nan")).toBe(true); // before stepping: final gradients
    key(root, "n");
    expect(w().classList.contains("wb-health-nan")).toBe(false);
    expect(w().textContent).not.toContain("⚠NaN");
    key(root, "c"); // stops at the Inf step
    key(root, "c"); // stops at the NaN step
    key(root, "c"); // end: w.grad is NaN
    expect(w().classList.contains("wb-health-nan")).toBe(true);
    expect(w().textContent).toContain("⚠NaN");
  });
});

describe("notes, classroom flag and messages", () => {
  afterEach(() => document.body.replaceChildren());

  it("says a note once above the graph, in the error colour, and marks its node", async () => {
    const snap = structuredClone(fixture("scalar"));
    snap.notes = [{ level: "error", text: "The loss (L) is NaN in the forward pass already.", node: "d" }];
    const { root } = await mount(snap);
    const note = root.querySelector(".wb-notes .wb-note-error")!;
    expect(note.getAttribute("role")).toBe("alert");
    expect(root.textContent!.split("is NaN in the forward pass").length - 1).toBe(1);
    expect(item(root, "d")!.classList.contains("wb-origin")).toBe(true);
    expect(item(root, "d")!.textContent).toContain("⚑ origin");
    note.querySelector("button")!.click();
    await new Promise((r) => setTimeout(r, 0));
    expect(root.querySelector(".wb-panel h3")!.textContent).toContain(snap.nodes.find((n) => n.id === "d")!.name);
  });

  it("opens in classroom mode when the trace asks for it, and names notebook cells as IPython does", async () => {
    const snap = structuredClone(fixture("scalar"));
    snap.trace!.classroom = true;
    const d = snap.nodes.find((n) => n.id === "d")!;
    d.site = { file: "Cell In[3]", line: 10, function: "<module>" };
    const { root, v } = await mount(snap);
    expect(root.querySelector<HTMLInputElement>("input.wb-classroom")!.checked).toBe(true);
    key(root, "n");
    expect(root.querySelector(".wb-derivation")).not.toBeNull();
    v.select("d");
    expect(root.querySelector(".wb-panel")!.textContent).toContain("Cell In[3], line 10");
    expect(root.querySelector(".wb-panel")!.textContent).not.toContain("Cell In[3]:10");
  });

  it("tells how to record what is not recorded", async () => {
    const snap = structuredClone(fixture("scalar"));
    const d = snap.nodes.find((n) => n.id === "d")!;
    d.value = null;
    const { root, v } = await mount(snap);
    v.select("d");
    expect(root.querySelector(".wb-panel .wb-missing")!.textContent).toContain("with wb.viz.record():");
  });
});
