// Gradient-histogram heatmap over time for one layer: x = step, y = log10|grad| bin, shade = count.
// Columns are painted once into an offscreen canvas (one pixel per step, doubling its capacity when
// full); each append then scales the filled part onto the visible canvas with one drawImage, so
// the heatmap always spans the same steps as the line chart above it.
import { h } from "../core/dom";

export class Heatmap {
  readonly el: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private store: HTMLCanvasElement;
  private readonly cols: Uint32Array[] = [];
  private start = 0;
  private every = 1;

  constructor(title: string, private readonly bins: number, lo: number, hi: number) {
    this.canvas = h("canvas", { class: "wb-heat", width: 256, height: bins, role: "img",
      "aria-label": `${title}: histogram of log10 |gradient| from ${lo} to ${hi} over steps` });
    this.store = h("canvas", { width: 256, height: bins });
    this.el = h("div", { class: "wb-heat-wrap" }, this.canvas, h("div", { class: "wb-muted" }, `log10|grad| ${lo} … ${hi} (top: large)`));
  }

  /** Appends one column per row, for the steps `step`, `step + every`, ... (see LineChart.append). */
  append(step: number, counts: Uint32Array[], every = 1) {
    if (this.cols.length === 0) {
      this.start = step;
      this.every = every;
    }
    const skip = Math.max(0, Math.round((this.start + this.cols.length * this.every - step) / this.every));
    const from = this.cols.length;
    this.cols.push(...counts.slice(skip));
    if (this.cols.length > this.store.width) {
      const bigger = h("canvas", { width: this.store.width * 2 ** Math.ceil(Math.log2(this.cols.length / this.store.width)), height: this.bins });
      bigger.getContext("2d")?.drawImage(this.store, 0, 0);
      this.store = bigger;
    }
    this.paint(from);
  }

  private paint(from: number) {
    const ctx = this.store.getContext("2d"), out = this.canvas.getContext("2d");
    if (!ctx || !out) return;
    ctx.fillStyle = getComputedStyle(this.canvas).getPropertyValue("--wb-brand").trim() || "#1976d2";
    for (let x = from; x < this.cols.length; x++) {
      const col = this.cols[x];
      let max = 0;
      for (const c of col) if (c > max) max = c;
      if (!max) continue;
      for (let b = 0; b < this.bins; b++) {
        if (!col[b]) continue;
        // sqrt keeps sparse tails visible next to a dominant bin.
        ctx.globalAlpha = Math.sqrt(col[b] / max);
        ctx.fillRect(x, this.bins - 1 - b, 1, 1);
      }
    }
    ctx.globalAlpha = 1;
    out.imageSmoothingEnabled = false;
    out.clearRect(0, 0, this.canvas.width, this.bins);
    out.drawImage(this.store, 0, 0, this.cols.length, this.bins, 0, 0, this.canvas.width, this.bins);
  }
}
