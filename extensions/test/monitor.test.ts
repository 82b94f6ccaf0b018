import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { axisRange, niceTicks } from "../src/core/format";
import { type MonitorMessage, renderMonitor } from "../src/monitor/monitor";

const layers = ["encoder.0.weight", "head.weight"];
const metrics = ["grad_norm", "weight_norm", "update_ratio"];
const hist = { bins: 8, lo: -8, hi: 0 };

/** One "steps" message as the kernel would send it: header + loss, metrics and histogram buffers. */
function stepsMessage(start: number, n: number): [MonitorMessage, ArrayBufferView[]] {
  const loss = new Float32Array(n).map((_, i) => 1 / (start + i + 1));
  const m = new Float32Array(n * layers.length * metrics.length).map((_, i) => 0.01 * (i + 1));
  const counts = new Uint32Array(n * layers.length * hist.bins).map((_, i) => i % 5);
  // A DataView at an odd-free offset, as anywidget delivers buffers.
  return [{ type: "monitor", event: "steps", layers, metrics, start, n, hist }, [loss, new DataView(m.buffer), counts]];
}

beforeAll(() => {
  // jsdom has no canvas; the heatmap simply skips painting there.
  vi.spyOn(HTMLCanvasElement.prototype, "getContext").mockReturnValue(null);
});
afterEach(() => document.body.replaceChildren());

describe("gradient monitor", () => {
  it("draws the loss and a layer x step overview, appends without rebuilding, and opens a layer's detail on demand", () => {
    const el = document.createElement("div");
    const mon = renderMonitor(el, { title: "training" });
    mon.append(...stepsMessage(0, 5));
    // One loss chart and one overview row per layer; no per-layer chart until one is asked for.
    expect(el.querySelectorAll(".wb-chart")).toHaveLength(1);
    expect([...el.querySelectorAll(".wb-ov-label")].map((b) => b.textContent)).toEqual(layers);
    const line = el.querySelector("polyline")!;
    expect(line.getAttribute("points")!.split(" ")).toHaveLength(5);
    mon.append(...stepsMessage(5, 3));
    expect(el.querySelector("polyline")).toBe(line);
    expect(line.getAttribute("points")!.split(" ")).toHaveLength(8);
    expect(el.querySelector(".wb-status")!.textContent).toContain("8 steps");
    // A re-sync that replays history does not duplicate points.
    mon.append(...stepsMessage(0, 8));
    expect(line.getAttribute("points")!.split(" ")).toHaveLength(8);
    // Real axes: round step ticks along x.
    expect([...el.querySelectorAll(".wb-chart svg text")].map((t) => t.textContent)).toContain("4");
    (el.querySelectorAll(".wb-ov-label")[1] as HTMLButtonElement).click();
    const detail = el.querySelector(".wb-mon-detail")!;
    expect(detail.textContent).toContain("head.weight");
    expect(detail.querySelectorAll("polyline")).toHaveLength(3);
    expect(detail.querySelectorAll("polyline")[0].getAttribute("points")!.split(" ")).toHaveLength(8);
    expect(detail.querySelectorAll("canvas.wb-heat")).toHaveLength(1);
  });

  it("places rows recorded every k steps at their step numbers", () => {
    const el = document.createElement("div");
    const mon = renderMonitor(el);
    const [head, bufs] = stepsMessage(0, 4);
    mon.append({ ...head, every: 10 } as MonitorMessage, bufs);
    const [head2, bufs2] = stepsMessage(40, 2);
    mon.append({ ...head2, every: 10 } as MonitorMessage, bufs2);
    expect(el.querySelector("polyline")!.getAttribute("points")!.split(" ")).toHaveLength(6);
    expect(el.querySelector(".wb-chart")!.textContent).toContain("step 50");
    // A re-sync resending steps 0..50 adds nothing.
    const [head3, bufs3] = stepsMessage(0, 6);
    mon.append({ ...head3, every: 10 } as MonitorMessage, bufs3);
    expect(el.querySelector("polyline")!.getAttribute("points")!.split(" ")).toHaveLength(6);
  });

  it("lists alarms with layer, op and source line, marked by icon", () => {
    const el = document.createElement("div");
    const mon = renderMonitor(el);
    mon.append({ type: "monitor", event: "alarms", alarms: [
      { step: 12, layer: "head.weight", kind: "nan", op: "log", site: { file: "train.py", line: 40, function: "loss_fn" }, value: null, detail: "3 NaN in grad" },
      { step: 13, layer: "encoder.0", kind: "dead_relu", op: "relu", site: null, value: 0.93, detail: "93% of units never active" },
    ] });
    const items = [...el.querySelectorAll(".wb-alarms li")].map((li) => li.textContent);
    expect(items[0]).toContain("⚠ NaN");
    expect(items[0]).toContain("step 12 · head.weight · log at train.py:40");
    expect(el.querySelectorAll(".wb-alarms li")[0].className).toBe("wb-bad-nan");
    expect(el.querySelectorAll(".wb-alarms li")[1].className).toBe("wb-bad-inf");
    expect(items[1]).toContain("dead ReLU");
    mon.append({ type: "monitor", event: "reset" });
    expect(el.querySelectorAll(".wb-alarms li")).toHaveLength(0);
    expect(el.querySelectorAll(".wb-chart")).toHaveLength(1);
  });
});

describe("axisRange (the y axis of the loss and norm charts)", () => {
  it("pads a constant series both ways so it is drawn mid-plot, and leaves a varying one alone", () => {
    const near = (got: [number, number], want: [number, number]) => got.forEach((v, i) => expect(v).toBeCloseTo(want[i], 7));
    near(axisRange(0.75, 0.75), [0.675, 0.825]);
    near(axisRange(0, 0), [-1, 1]);
    near(axisRange(-3, -3), [-3.3, -2.7]);
    near(axisRange(Math.fround(0.1), 0.1), [0.09, 0.11]); // float32 rounding: still flat
    near(axisRange(-2, -2, true), [-2.5, -1.5]); // half a decade each way on a log axis
    expect(axisRange(1, 2)).toEqual([1, 2]);
  });
});

describe("niceTicks on a step axis", () => {
  it("gives whole steps only: never 2.5 apart, never under 1 apart", () => {
    expect(niceTicks(0, 9, 4)).toEqual([0, 2.5, 5, 7.5]);
    expect(niceTicks(0, 9, 4, true)).toEqual([0, 5]);
    expect(niceTicks(0, 3, 6, true)).toEqual([0, 1, 2, 3]);
    expect(niceTicks(0, 99, 4, true)).toEqual([0, 25, 50, 75]);
  });
});
