// A small multi-series line chart in SVG that grows by appending points. Appending only rewrites
// the polylines' `points` and the axis labels; nothing is rebuilt.
import { h, s } from "../core/dom";
import { fmt } from "../core/format";

// style.ts aligns the heatmap under the plot area (LEFT..W); change both together.
const W = 260, H = 90, LEFT = 52, BOTTOM = 12, TOP = 4;

export class LineChart {
  readonly el: HTMLElement;
  private readonly series: number[][];
  private readonly lines: SVGPolylineElement[];
  private readonly yTop: SVGTextElement;
  private readonly yBottom: SVGTextElement;
  private readonly xRight: SVGTextElement;
  private start = 0;
  private every = 1;

  constructor(title: string, names: string[], private readonly log: boolean) {
    this.series = names.map(() => []);
    this.lines = names.map((_, i) => s("polyline", { class: `wb-line wb-s${i}`, points: "" }));
    this.yTop = s("text", { x: LEFT - 3, y: TOP + 8, "text-anchor": "end" });
    this.yBottom = s("text", { x: LEFT - 3, y: H - BOTTOM, "text-anchor": "end" });
    this.xRight = s("text", { x: W, y: H, "text-anchor": "end" });
    const svg = s("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `${title}: ${names.join(", ")} over steps${log ? " (log scale)" : ""}` },
      s("line", { x1: LEFT, x2: LEFT, y1: TOP, y2: H - BOTTOM, class: "wb-axis" }),
      s("line", { x1: LEFT, x2: W, y1: H - BOTTOM, y2: H - BOTTOM, class: "wb-axis" }),
      this.yTop, this.yBottom, this.xRight, ...this.lines);
    const legend = names.length > 1 ? h("div", { class: "wb-muted" }, ...names.flatMap((n, i) => [h("span", { class: `wb-swatch wb-sw${i}` }), n])) : null;
    this.el = h("div", { class: "wb-chart" }, h("h4", { title }, title), svg, legend);
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

  private redraw() {
    const tf = (v: number) => (this.log ? (v > 0 ? Math.log10(v) : NaN) : v);
    let lo = Infinity, hi = -Infinity;
    for (const ser of this.series) for (const v of ser) {
      const t = tf(v);
      if (Number.isFinite(t)) {
        if (t < lo) lo = t;
        if (t > hi) hi = t;
      }
    }
    if (lo === Infinity) return;
    if (hi - lo < 1e-9) (hi += 0.5), (lo -= 0.5);
    const n = this.length;
    // At most ~2 points per pixel column: long runs stay cheap to redraw at 10 Hz.
    const stride = Math.max(1, Math.floor(n / ((W - LEFT) * 2)));
    const x = (i: number) => LEFT + ((W - LEFT) * i) / Math.max(1, n - 1);
    const y = (t: number) => TOP + (H - BOTTOM - TOP) * (1 - (t - lo) / (hi - lo));
    this.series.forEach((ser, k) => {
      const pts: string[] = [];
      for (let i = 0; i < n; i += stride) {
        const t = tf(ser[i]);
        if (Number.isFinite(t)) pts.push(`${x(i).toFixed(1)},${y(t).toFixed(1)}`);
      }
      this.lines[k].setAttribute("points", pts.join(" "));
    });
    const label = (t: number) => fmt(this.log ? 10 ** t : t);
    this.yTop.textContent = label(hi);
    this.yBottom.textContent = label(lo);
    this.xRight.textContent = `step ${this.start + (n - 1) * this.every}`;
  }
}
