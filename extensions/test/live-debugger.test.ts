import { afterEach, describe, expect, it, vi } from "vitest";
import type { StepRecord } from "../src/core/types";
import { LiveController } from "../src/widget/live-debugger";
import type { Handler, WidgetModel } from "../src/widget/model";
import widget from "../src/widget/index";
import { computeLayout } from "../src/core/layout";
import { fixture } from "./fixtures";

/** A stand-in for anywidget's model: records sent messages, lets the test play the kernel. */
function fakeModel(state: Record<string, unknown>) {
  const handlers = new Map<string, Set<Handler>>();
  const sent: object[] = [];
  const model: WidgetModel = {
    get: (k) => state[k],
    on: (e, fn) => void (handlers.get(e) ?? handlers.set(e, new Set()).get(e)!).add(fn),
    off: (e, fn) => void (e && fn && handlers.get(e)?.delete(fn)),
    send: (c) => void sent.push(c),
  };
  const emit = (e: string, ...args: unknown[]) => handlers.get(e)?.forEach((fn) => fn(...args));
  return { model, sent, emit };
}

const steps = fixture("scalar").trace!.steps;
const state = (position: number, extra: Partial<{ steps: StepRecord[]; paused_reason: string | null; breakpoints: string[] }> = {}) =>
  ({ type: "state", position, total: 7, step: position ? steps[position - 1] : null, paused_reason: null, breakpoints: [], ...extra });

afterEach(() => {
  vi.useRealTimers();
  document.body.replaceChildren();
});

describe("live debugger controller", () => {
  it("asks the kernel for its state, sends controls, and follows the kernel's answers", () => {
    const { model, sent } = fakeModel({});
    const c = new LiveController(model, [], () => "");
    expect(sent).toEqual([{ type: "sync" }]);
    expect(c.view().busy).toBe(true);
    c.receive(state(0));
    c.step();
    expect(sent[1]).toEqual({ type: "step" });
    c.step(); // ignored while waiting for the answer
    expect(sent).toHaveLength(2);
    c.receive(state(1));
    expect(c.view()).toMatchObject({ position: 1, total: 7, busy: false });
    expect(c.view().current!.node).toBe("L");
    c.toggleBreakpoint("a");
    expect(sent[2]).toEqual({ type: "set_breakpoint", node: "a", enabled: true });
    c.continue();
    expect(sent[3]).toEqual({ type: "continue" });
    c.receive(state(6, { steps: steps.slice(1, 6), paused_reason: "breakpoint", breakpoints: ["a"] }));
    expect(c.view()).toMatchObject({ position: 6, pausedReason: "breakpoint" });
    expect(c.view().steps.filter(Boolean)).toHaveLength(6);
  });

  it("falls back to replaying known steps when the kernel stops answering", () => {
    vi.useFakeTimers();
    const { model } = fakeModel({});
    const c = new LiveController(model, [], () => "", 1000);
    c.receive(state(3, { steps: steps.slice(0, 3) }));
    c.step();
    vi.advanceTimersByTime(1001);
    const v = c.view();
    expect(v.notice).toContain("No answer from the kernel");
    expect(v.notice).toContain("Replaying the 3 steps");
    expect(v.busy).toBe(false);
    c.restart();
    expect(c.view().position).toBe(0);
    c.continue();
    expect(c.view()).toMatchObject({ position: 3, pausedReason: "end" });
  });

  it("re-syncs when the comm's liveness changes, and notices a dead comm at once", () => {
    const { model, sent } = fakeModel({});
    const c = new LiveController(model, [], () => "");
    c.receive(state(0));
    c.recheck();
    expect(sent.at(-1)).toEqual({ type: "sync" });
    c.receive(state(0));
    model.send = () => {
      throw new Error("Comm is closed");
    };
    c.recheck();
    expect(c.view().notice).toContain("kernel connection is closed");
  });

  it("treats a send on a closed comm as the kernel going away", () => {
    const { model } = fakeModel({});
    const c = new LiveController(model, steps.slice(0, 2), () => "");
    c.receive(state(2, { steps: steps.slice(0, 2) }));
    model.send = () => {
      throw new Error("Comm is closed");
    };
    c.restart();
    expect(c.view().notice).toContain("kernel connection is closed");
    expect(c.view().position).toBe(0);
    c.step();
    expect(c.view().position).toBe(1);
  });
});

describe("anywidget entry", () => {
  it("renders the tape view from the snapshot trait and re-renders when it changes", async () => {
    const traits: Record<string, unknown> = { view: "tape", snapshot: fixture("scalar") };
    const { model, emit } = fakeModel(traits);
    const el = document.createElement("div");
    document.body.append(el);
    // jsdom has no Worker, so the default layout runs on the main thread; give it the function
    // the bundled worker source would have defined.
    (globalThis as { __workbenchLayout?: unknown }).__workbenchLayout = computeLayout;
    const cleanup = widget.render({ model, el });
    expect(el.querySelector(".wb-root")!.getAttribute("aria-label")).toContain("L = (a*b + c) * f");
    expect(el.querySelector(".wb-counter")!.textContent).toBe("0 / 7");
    await new Promise((r) => setTimeout(r, 0));
    expect(el.querySelectorAll(".wb-node")).toHaveLength(7);
    traits.snapshot = fixture("mlp");
    emit("change:snapshot");
    expect(el.querySelectorAll(".wb-root")).toHaveLength(1);
    expect(el.querySelector(".wb-root")!.getAttribute("aria-label")).toContain("mse_loss");
    cleanup();
    expect(el.querySelector(".wb-root")).toBeNull();
  });

  it("shows a readable error for a snapshot it cannot read", () => {
    const { model } = fakeModel({ view: "tape", snapshot: { format: "workbench.tape", version: 2 } });
    const el = document.createElement("div");
    widget.render({ model, el });
    expect(el.textContent).toContain("version 2 is newer than this viewer");
  });

  it("routes monitor messages and asks for history on render", () => {
    const { model, sent, emit } = fakeModel({ view: "monitor" });
    const el = document.createElement("div");
    widget.render({ model, el });
    expect(sent).toEqual([{ type: "monitor_sync" }]);
    emit("msg:custom", { type: "monitor", event: "alarms", alarms: [{ step: 1, layer: "w", kind: "inf", op: null, site: null, value: null, detail: "" }] });
    expect(el.querySelector(".wb-alarms")!.textContent).toContain("⚠ Inf");
    emit("comm:close");
    expect(el.querySelector(".wb-banner")!.textContent).toContain("kernel connection closed");
  });

  it("tells the monitor's user when a kernel restart kills the comm", () => {
    const { model, emit } = fakeModel({ view: "monitor" });
    const el = document.createElement("div");
    widget.render({ model, el });
    expect(el.querySelector<HTMLElement>(".wb-banner")!.hidden).toBe(true);
    model.send = () => {
      throw new Error("Comm is closed");
    };
    emit("comm_live_update");
    expect(el.querySelector<HTMLElement>(".wb-banner")!.hidden).toBe(false);
  });
});

describe("live debugger errors", () => {
  it("keeps a kernel error apart from the pause reason, and a later state clears it", () => {
    const { model } = fakeModel({});
    const c = new LiveController(model, [], () => "");
    c.receive(state(0));
    c.step();
    c.receive({ type: "error", message: "RuntimeError: The graph being debugged was changed" });
    expect(c.view().error).toContain("graph being debugged was changed");
    expect(c.view().pausedReason).toBeNull();
    expect(c.view().busy).toBe(false);
    c.restart();
    c.receive(state(0));
    expect(c.view().error).toBeNull();
  });
});
