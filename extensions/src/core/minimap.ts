// The minimap: the whole layout in a corner at a glance, the visible window outlined. Shown only
// when the graph is bigger than the view at the current zoom; click or drag in it to move there.
// The boxes are painted once per layout (and per recolouring: the overlay's colours, rings around the
// selected node and the top-N rows) into an offscreen bitmap; a pan only redraws the outline.
import { h } from "./dom";
import type { LayoutResult } from "./layout";
import type { Transform } from "./panzoom";

const MW = 200, MH = 140;

export class Minimap {
  readonly el: HTMLCanvasElement;
  private bitmap: HTMLCanvasElement | null = null;
  private scale = 1;
  private ox = 0;
  private oy = 0;
  private layout: LayoutResult | null = null;
  private ids: string[] = [];
  private marks = new Map<string, string>();
  private fills: Map<string, string> | null = null;
  private rings: { id: string; css: string }[] = [];
  /** The last view() call, to outline the window again after a repaint. */
  private last: [Transform, number, number] | null = null;

  constructor(private readonly jump: (x: number, y: number) => void) {
    this.el = h("canvas", { class: "wb-minimap", width: MW, height: MH, hidden: true, role: "img",
      "aria-label": "minimap of the whole graph; the outlined part is in view. Click to move there." });
    const go = (e: PointerEvent) => {
      const r = this.el.getBoundingClientRect();
      // the stylesheet may draw it smaller than MW×MH on a small canvas
      const sx = MW / (r.width || MW), sy = MH / (r.height || MH);
      this.jump(((e.clientX - r.left) * sx - this.ox) / this.scale, ((e.clientY - r.top) * sy - this.oy) / this.scale);
    };
    this.el.addEventListener("pointerdown", (e) => {
      e.stopPropagation();
      this.el.setPointerCapture?.(e.pointerId);
      go(e);
      const move = (m: PointerEvent) => go(m);
      const up = () => {
        this.el.removeEventListener("pointermove", move);
        this.el.removeEventListener("pointerup", up);
      };
      this.el.addEventListener("pointermove", move);
      this.el.addEventListener("pointerup", up);
    });
    this.el.addEventListener("click", (e) => e.stopPropagation());
  }

  /** A new layout: repaint the boxes (marks: item id -> CSS colour for NaN/Inf/current). */
  setLayout(L: LayoutResult, ids: string[], marks: Map<string, string>) {
    this.layout = L;
    this.ids = ids;
    this.marks = marks;
    this.scale = Math.min((MW - 8) / Math.max(1, L.width), (MH - 8) / Math.max(1, L.height));
    this.ox = (MW - L.width * this.scale) / 2;
    this.oy = (MH - L.height * this.scale) / 2;
    this.repaint();
  }

  /**
   * The overlay's colours (item id -> CSS colour; null: none) and the items to ring (the selected
   * node, the top-N rows), so the corner says where the costly and the chosen parts are.
   */
  setOverlay(fills: Map<string, string> | null, rings: { id: string; css: string }[]) {
    this.fills = fills;
    this.rings = rings;
    this.repaint();
    if (this.last) this.view(...this.last);
  }

  private repaint() {
    const L = this.layout;
    if (!L) return;
    const dpr = window.devicePixelRatio || 1;
    this.el.width = MW * dpr;
    this.el.height = MH * dpr;
    const bm = h("canvas", { width: MW * dpr, height: MH * dpr });
    const ctx = bm.getContext("2d");
    this.bitmap = ctx ? bm : null;
    if (!ctx) return;
    const css = getComputedStyle(this.el);
    const plain = css.getPropertyValue("--wb-fg2").trim() || "#888";
    ctx.setTransform(dpr * this.scale, 0, 0, dpr * this.scale, dpr * this.ox, dpr * this.oy);
    // At least a pixel, so a 20,000-node graph still shows where its nodes are.
    const min = 1 / this.scale;
    for (const id of this.ids) {
      const b = L.boxes[id];
      if (!b) continue;
      // NaN/Inf marks win over the overlay: they are what the user must not miss
      ctx.fillStyle = this.marks.get(id) ?? this.fills?.get(id) ?? plain;
      ctx.fillRect(b.x - b.width / 2, b.y - b.height / 2, Math.max(min, b.width), Math.max(min, b.height));
    }
    // rings in screen pixels (at least 6 px across), drawn last so no box covers them
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.lineWidth = 1.5;
    for (const r of this.rings) {
      const b = L.boxes[r.id];
      if (!b) continue;
      const w = Math.max(6, b.width * this.scale), hgt = Math.max(6, b.height * this.scale);
      ctx.strokeStyle = r.css;
      ctx.strokeRect(this.ox + b.x * this.scale - w / 2, this.oy + b.y * this.scale - hgt / 2, w, hgt);
    }
  }

  /** Outline the part of the graph in view; hidden when all of it is. */
  view(t: Transform, w: number, h: number) {
    const L = this.layout;
    this.last = [t, w, h];
    const x0 = -t.x / t.k, y0 = -t.y / t.k, x1 = (w - t.x) / t.k, y1 = (h - t.y) / t.k;
    const all = !L || (x0 <= 0 && y0 <= 0 && x1 >= L.width && y1 >= L.height);
    this.el.hidden = all;
    const ctx = this.el.getContext("2d");
    if (all || !ctx || !this.bitmap) return;
    const dpr = window.devicePixelRatio || 1;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, this.el.width, this.el.height);
    ctx.drawImage(this.bitmap, 0, 0);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.strokeStyle = getComputedStyle(this.el).getPropertyValue("--wb-brand").trim() || "#1976d2";
    ctx.lineWidth = 2;
    const rx = this.ox + x0 * this.scale, ry = this.oy + y0 * this.scale;
    ctx.strokeRect(rx, ry, (x1 - x0) * this.scale, (y1 - y0) * this.scale);
  }
}
