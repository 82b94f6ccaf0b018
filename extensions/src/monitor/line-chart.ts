// A multi-series line chart in SVG that grows by appending points, with real axes (round ticks on
// both, decades on a log scale) and a hover read-out (step and every series' value). Appending only
// rewrites the polylines, the ticks and the labels; nothing is rebuilt.
import { h, s } from "../core/dom";
import { axisRange, fmt, niceTicks } from "../core/format";

const LEFT = 56, BOTTOM = 18, TOP = 6, RIGHT = 8;

export class LineChart {
  readonly el: HTMLElement;
  private readonly series: number[][];
  private readonly lines: SVGPolylineElement[];
  private readonly axes: SVGGElement;
  private readonly cross: SVGLineElement;
  private readonly readout: HTMLElement;
  private start = 0;
  private every = 1;
  private lo = 0;
  private hi = 1;

  constructor(title: string, private readonly names: string[], private readonly log: boolean,
    private readonly W = 300, private readonly H = 110) {
    this.series = names.map(() => []);
    this.lines = names.map((_, i) => s("polyline", { class: `wb-line wb-s${i}`, points: "" }));
    this.axes = s("g", { class: "wb-ticks" });
    this.cross = s("line", { class: "wb-cross", y1: TOP, y2: H - BOTTOM, x1: -10, x2: -10 });
    const svg = s("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img",
      "aria-label": `${title}: ${names.join(", ")} over steps${log ? " (log scale)" : ""}` },
      s("line", { x1: LEFT, x2: LEFT, y1: TOP, y2: H - BOTTOM, class: "wb-axis" }),
      s("line", { x1: LEFT, x2: W - RIGHT, y1: H - BOTTOM, y2: H - BOTTOM, class: "wb-axis" }),
      this.axes, ...this.lines, this.cross);
    this.readout = h("span", { class: "wb-readout wb-muted", "aria-live": "off" });
    const legend = names.length > 1 ? h("div", { class: "wb-muted" }, ...names.flatMap((n, i) => [h("span", { class: `wb-swatch wb-sw${i}` }), n])) : null;
    this.el = h("div", { class: "wb-chart" }, h("h4", { title }, title, this.readout), svg, legend);
    svg.addEventListener("mousemove", (e) => this.hover(e, svg));
    svg.addEventListener("mouseleave", () => {
      this.cross.setAttribute("x1", "-10");
      this.cross.setAttribute("x2", "-10");
      this.readout.textContent = "";
    });
  }

  get length() {
    return this.series[0].length;
  }

  /** Appends rows (one value per series) for the steps `step`, `step + every`, `step + 2 * every`, ... */
  append(step: number, rows: number[][], every = 1) {
    if (this.length === 0) {
      this.start = step;
      this.every = every;
    }
    // Replayed history (a re-sync) may overlap what we have; keep only new steps.
    const skip = Math.max(0, Math.round((this.start + this.length * this.every - step) / this.every));
    for (const row of rows.slice(skip)) row.forEach((v, i) => this.series[i].push(v));
    this.redraw();
  }

  private tf(v: number) {
    return this.log ? (v > 0 ? Math.log10(v) : NaN) : v;
  }

  private x(i: number) {
    return LEFT + ((this.W - LEFT - RIGHT) * i) / Math.max(1, this.length - 1);
  }

  private y(t: number) {
    return TOP + (this.H - BOTTOM - TOP) * (1 - (t - this.lo) / (this.hi - this.lo));
  }

  private redraw() {
    let lo = Infinity, hi = -Infinity;
    for (const ser of this.series) for (const v of ser) {
      const t = this.tf(v);
      if (Number.isFinite(t)) {
        if (t < lo) lo = t;
        if (t > hi) hi = t;
      }
    }
    if (lo === Infinity) return;
    [lo, hi] = axisRange(lo, hi, this.log);
    this.lo = lo;
    this.hi = hi;
    const n = this.length;
    // At most ~2 points per pixel column: long runs stay cheap to redraw at 10 Hz.
    const stride = Math.max(1, Math.floor(n / ((this.W - LEFT) * 2)));
    this.series.forEach((ser, k) => {
      const pts: string[] = [];
      for (let i = 0; i < n; i += stride) {
        const t = this.tf(ser[i]);
        if (Number.isFinite(t)) pts.push(`${this.x(i).toFixed(1)},${this.y(t).toFixed(1)}`);
      }
      this.lines[k].setAttribute("points", pts.join(" "));
    });
    const ticks: SVGElement[] = [];
    // y: decades on a log scale (whole powers of ten; half-decades when the range is under one)
    const yt = this.log ? niceTicks(lo, hi, 3).filter((t) => hi - lo < 1 || Number.isInteger(t)) : niceTicks(lo, hi, 3);
    for (const t of yt.length ? yt : [lo]) {
      const y = this.y(t);
      ticks.push(s("line", { x1: LEFT - 4, x2: LEFT, y1: y, y2: y, class: "wb-axis" }),
        s("text", { x: LEFT - 6, y: y + 3, "text-anchor": "end" }, this.log ? `1e${Number(t.toFixed(1))}` : fmt(t)));
    }
    const last = this.start + (n - 1) * this.every;
    for (const st of niceTicks(this.start, Math.max(last, this.start + 1), 4, true)) {
      if (st > last) continue;
      const x = this.x((st - this.start) / this.every);
      ticks.push(s("line", { x1: x, x2: x, y1: this.H - BOTTOM, y2: this.H - BOTTOM + 4, class: "wb-axis" }),
        s("text", { x, y: this.H - 4, "text-anchor": "middle" }, String(st)));
    }
    ticks.push(s("text", { x: this.W - RIGHT, y: this.H - 4, "text-anchor": "end", class: "wb-axis-name" }, `step ${last}`));
    this.axes.replaceChildren(...ticks);
  }

  private hover(e: MouseEvent, svg: SVGSVGElement) {
    const n = this.length;
    if (!n) return;
    const r = svg.getBoundingClientRect();
    const px = ((e.clientX - r.left) / (r.width || this.W)) * this.W;
    const i = Math.max(0, Math.min(n - 1, Math.round(((px - LEFT) / (this.W - LEFT - RIGHT)) * Math.max(1, n - 1))));
    const x = this.x(i);
    this.cross.setAttribute("x1", String(x));
    this.cross.setAttribute("x2", String(x));
    const vals = this.names.map((nm, k) => `${this.names.length > 1 ? `${nm} ` : ""}${fmt(this.series[k][i])}`);
    this.readout.textContent = ` · step ${this.start + i * this.every}: ${vals.join(", ")}`;
  }
}
