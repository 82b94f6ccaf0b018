// The monitor's first view: every layer's gradient norm on one screen, as a layer x step heatmap of
// log10 ‖grad‖ (one row per parameter, colour bar with decades, NaN/Inf in the error colour), with
// real axes and a hover read-out (step, layer, value). Clicking a row asks for that layer's detail.
// Painted through ImageData: 40 layers x 10,000 steps is one putImageData, not 400,000 shapes.
import { h, s } from "../core/dom";
import { axisRange, fmt, niceTicks } from "../core/format";

const RAMP: [number, number, number][] = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];

export function ramp(t: number): [number, number, number] {
  const x = Math.min(1, Math.max(0, t)) * (RAMP.length - 1);
  const i = Math.min(Math.floor(x), RAMP.length - 2), f = x - i;
  return [0, 1, 2].map((k) => Math.round(RAMP[i][k] + (RAMP[i + 1][k] - RAMP[i][k]) * f)) as [number, number, number];
}

const PLOT_W = 560;

export class Overview {
  readonly el: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly labels: HTMLElement;
  private readonly xAxis: SVGSVGElement;
  /** The colour bar's ramp and decade ticks, as tall as the rows; the NaN/Inf key sits under it, in the flow. */
  private readonly scale: HTMLElement;
  private readonly tip: HTMLElement;
  /** Per layer, ‖grad‖ per received step. */
  private readonly norms: number[][];
  private start = 0;
  private every = 1;
  private rowH: number;
  private selected = -1;

  constructor(readonly layers: string[], private readonly onPick: (layer: number) => void, private readonly say: (t: string) => void) {
    this.norms = layers.map(() => []);
    this.rowH = Math.max(4, Math.min(16, Math.floor(440 / Math.max(1, layers.length))));
    const H = this.rowH * layers.length;
    this.canvas = h("canvas", { class: "wb-ov-canvas", width: PLOT_W, height: H, role: "img", tabindex: 0,
      "aria-label": `gradient norm of ${layers.length} parameters over steps, log scale; arrow keys pick a layer, Enter shows its detail` });
    this.canvas.style.height = `${H}px`;
    this.labels = h("div", { class: "wb-ov-labels" }, ...layers.map((name, k) => {
      const b = h("button", { type: "button", class: "wb-ov-label", title: `${name}: click for its detail`, "data-layer": k }, name);
      b.style.height = `${this.rowH}px`;
      b.style.fontSize = `${Math.min(11, Math.max(8, this.rowH - 2))}px`;
      b.addEventListener("click", () => this.pick(k));
      return b;
    }));
    // Labels shorter than a line of text would overlap: show every k-th, the rest stay in the tooltip.
    const every = Math.ceil(11 / this.rowH);
    if (every > 1) [...this.labels.children].forEach((c, k) => { if (k % every) (c as HTMLElement).style.visibility = "hidden"; });
    this.xAxis = s("svg", { class: "wb-ov-axis", width: PLOT_W, height: 30, viewBox: `0 0 ${PLOT_W} 30` });
    this.scale = h("div", { class: "wb-ov-scale" });
    this.scale.style.height = `${Math.max(80, H)}px`; // the colour ramp as tall as the rows it explains
    this.tip = h("div", { class: "wb-ov-tip", hidden: true });
    const plot = h("div", { class: "wb-ov-plot" }, this.canvas, this.xAxis, this.tip);
    this.el = h("div", { class: "wb-overview-mon" },
      h("h4", {}, "‖grad‖ by layer and step ", h("span", { class: "wb-muted" }, "(log scale; click a layer for its detail)")),
      h("div", { class: "wb-ov-row" }, this.labels, plot,
        h("div", { class: "wb-ov-bar" }, this.scale, h("span", { class: "wb-ov-nan" }, "NaN/Inf"))));
    this.canvas.addEventListener("mousemove", (e) => this.hover(e));
    this.canvas.addEventListener("mouseleave", () => (this.tip.hidden = true));
    this.canvas.addEventListener("click", (e) => this.pick(this.rowAt(e)));
    this.canvas.addEventListener("keydown", (e) => {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        this.selected = Math.max(0, Math.min(layers.length - 1, this.selected + (e.key === "ArrowDown" ? 1 : -1)));
        this.say(`${layers[this.selected]}: last ‖grad‖ ${fmt(this.norms[this.selected].at(-1) ?? null)}`);
        this.paint();
      } else if (e.key === "Enter" && this.selected >= 0) this.pick(this.selected);
      else return;
      e.preventDefault();
      e.stopPropagation();
    });
  }

  get steps() {
    return this.norms[0]?.length ?? 0;
  }

  /** Appends ‖grad‖ rows ([layer] values) for the steps `step`, `step + every`, ... */
  append(step: number, rows: number[][], every = 1) {
    if (this.steps === 0) {
      this.start = step;
      this.every = every;
    }
    const skip = Math.max(0, Math.round((this.start + this.steps * this.every - step) / this.every));
    for (const row of rows.slice(skip)) row.forEach((v, k) => this.norms[k].push(v));
    this.paint();
  }

  private range(): [number, number] {
    let lo = Infinity, hi = -Infinity;
    for (const ser of this.norms) for (const v of ser) if (v > 0 && Number.isFinite(v)) {
      const t = Math.log10(v);
      if (t < lo) lo = t;
      if (t > hi) hi = t;
    }
    if (lo === Infinity) return [0, 1];
    return axisRange(lo, hi, true);
  }

  private paint() {
    const n = this.steps, L = this.layers.length;
    if (!n) return;
    const [lo, hi] = this.range();
    // One image column per bucket of steps; a bucket shows its largest norm, so a spike never hides.
    const bucket = Math.ceil(n / PLOT_W), cols = Math.ceil(n / bucket);
    const ctx = this.canvas.getContext("2d");
    const css = getComputedStyle(this.el);
    const err = css.getPropertyValue("--wb-error").trim() || "#d32f2f";
    if (ctx) {
      const img = ctx.createImageData(cols, L);
      const red = [parseInt(err.slice(1, 3), 16) || 211, parseInt(err.slice(3, 5), 16) || 47, parseInt(err.slice(5, 7), 16) || 47];
      for (let k = 0; k < L; k++) {
        const ser = this.norms[k];
        for (let c = 0; c < cols; c++) {
          let best = -Infinity, bad = false, any = false;
          for (let i = c * bucket; i < Math.min(n, (c + 1) * bucket); i++) {
            const v = ser[i];
            if (Number.isNaN(v) || v === Infinity) bad = true;
            else if (v > 0) {
              any = true;
              best = Math.max(best, Math.log10(v));
            }
          }
          const rgb = bad ? red : any ? ramp((best - lo) / (hi - lo)) : [128, 128, 128];
          const o = (k * cols + c) * 4;
          img.data[o] = rgb[0];
          img.data[o + 1] = rgb[1];
          img.data[o + 2] = rgb[2];
          img.data[o + 3] = any || bad ? 255 : 60;
        }
      }
      const off = h("canvas", { width: cols, height: L });
      off.getContext("2d")?.putImageData(img, 0, 0);
      ctx.imageSmoothingEnabled = false;
      ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
      ctx.drawImage(off, 0, 0, this.canvas.width, this.canvas.height);
      if (this.selected >= 0) {
        ctx.strokeStyle = css.getPropertyValue("--wb-brand").trim() || "#1976d2";
        ctx.lineWidth = 2;
        ctx.strokeRect(1, this.selected * this.rowH + 1, this.canvas.width - 2, this.rowH - 2);
      }
    }
    const last = this.start + (n - 1) * this.every;
    const ticks: SVGElement[] = [];
    for (const st of niceTicks(this.start, Math.max(last, this.start + 1), 6, true)) {
      if (st > last) continue;
      const x = ((st - this.start) / this.every / Math.max(1, n - 1)) * (PLOT_W - 1);
      ticks.push(s("line", { x1: x, x2: x, y1: 0, y2: 4, class: "wb-axis" }), s("text", { x, y: 15, "text-anchor": "middle" }, String(st)));
    }
    ticks.push(s("text", { x: PLOT_W, y: 28, "text-anchor": "end", class: "wb-axis-name" }, "step"));
    this.xAxis.replaceChildren(...ticks);
    const decades = niceTicks(lo, hi, 4).filter((t) => hi - lo < 1 || Number.isInteger(t));
    this.scale.replaceChildren(h("div", { class: "wb-ov-ramp" }),
      ...decades.map((t) => {
        const d = h("span", { class: "wb-ov-tick" }, `1e${Number(t.toFixed(1))}`);
        d.style.bottom = `${((t - lo) / (hi - lo)) * 100}%`;
        return d;
      }));
  }

  private rowAt(e: MouseEvent) {
    const r = this.canvas.getBoundingClientRect();
    return Math.max(0, Math.min(this.layers.length - 1, Math.floor((e.clientY - r.top) / this.rowH)));
  }

  private hover(e: MouseEvent) {
    const n = this.steps;
    if (!n) return;
    const r = this.canvas.getBoundingClientRect();
    const k = this.rowAt(e);
    const i = Math.max(0, Math.min(n - 1, Math.round(((e.clientX - r.left) / (r.width || PLOT_W)) * (n - 1))));
    const text = `step ${this.start + i * this.every} · ${this.layers[k]} · ‖grad‖ ${fmt(this.norms[k][i])}`;
    this.tip.textContent = text;
    this.tip.hidden = false;
    this.tip.style.left = `${Math.min(e.clientX - r.left + 12, PLOT_W - 200)}px`;
    this.tip.style.top = `${e.clientY - r.top + 12}px`;
  }

  private pick(k: number) {
    this.selected = k;
    this.paint();
    this.onPick(k);
  }
}
