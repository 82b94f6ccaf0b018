// Gradient-histogram heatmap over time for one layer: x = step, y = log10|grad| bin, shade = count.
// Drawn on a canvas one column per step; only new columns are painted, and the backing store doubles
// (one full repaint) when it runs out of columns.
import { h } from "../core/dom";

export class Heatmap {
  readonly el: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly cols: Uint32Array[] = [];
  private capacity = 256;
  private start = 0;

  constructor(title: string, private readonly bins: number, lo: number, hi: number) {
    this.canvas = h("canvas", { class: "wb-heat", width: this.capacity, height: bins, role: "img",
      "aria-label": `${title}: histogram of log10 |gradient| from ${lo} to ${hi} over steps` });
    this.el = h("div", {}, this.canvas, h("div", { class: "wb-muted" }, `log10|grad| ${lo} … ${hi}`));
  }

  append(step: number, counts: Uint32Array[]) {
    if (this.cols.length === 0) this.start = step;
    const skip = Math.max(0, this.start + this.cols.length - step);
    const from = this.cols.length;
    this.cols.push(...counts.slice(skip));
    if (this.cols.length > this.capacity) {
      while (this.cols.length > this.capacity) this.capacity *= 2;
      this.canvas.width = this.capacity;
      this.paint(0);
    } else this.paint(from);
  }

  private paint(from: number) {
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    const color = getComputedStyle(this.canvas).getPropertyValue("--wb-brand").trim() || "#1976d2";
    ctx.fillStyle = color;
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
  }
}
