// Wheel zoom and drag pan for the graph canvas, by a transform on one <g>. The wheel only zooms
// while the viewer has focus (or with Ctrl/Cmd), so scrolling a notebook past a graph stays scrolling.
export interface Transform { x: number; y: number; k: number }
/** A box in graph coordinates: its centre and size (a layout's). */
export interface Box { x: number; y: number; width: number; height: number }

/**
 * The smallest scale "Fit" and the debugger use: node titles are 12 px in the stylesheet, so this
 * keeps them at 10 px on screen or more. Bigger graphs get the minimap instead of a smaller zoom.
 */
export const READABLE_K = 0.84;

export class PanZoom {
  t: Transform = { x: 0, y: 0, k: 1 };
  /** True right after a drag, so the click that ends it does not also select a node. */
  dragged = false;

  constructor(
    private readonly canvas: HTMLElement,
    private readonly viewport: SVGGElement,
    private readonly focusOwner: HTMLElement,
    /** Called after every change of the transform (the viewer repaints culled graphs). */
    private readonly onChange: () => void = () => {},
  ) {
    canvas.addEventListener("wheel", this.onWheel, { passive: false });
    canvas.addEventListener("pointerdown", this.onDown);
  }

  set(t: Transform, animate = false) {
    this.t = { x: t.x, y: t.y, k: Math.min(4, Math.max(0.02, t.k)) };
    this.viewport.classList.toggle("wb-animate", animate);
    this.viewport.setAttribute("transform", `translate(${this.t.x.toFixed(1)},${this.t.y.toFixed(1)}) scale(${this.t.k.toFixed(4)})`);
    this.onChange();
  }

  size(): { w: number; h: number } {
    const r = this.canvas.getBoundingClientRect();
    // jsdom and hidden (display:none) outputs report 0; assume a typical output size.
    return { w: r.width || 800, h: r.height || 480 };
  }

  /**
   * Scales a width×height drawing to fit, never enlarging past 1.5× (tiny graphs stay crisp, not
   * huge) nor shrinking below READABLE_K. A drawing that does not fit at that scale is shown from
   * its anchor (graph coordinates, by default its top centre) and the rest is reached by panning
   * or through the minimap. Returns whether the whole drawing fits.
   */
  fit(width: number, height: number, animate = false, anchor?: { x: number; y: number }): boolean {
    const { w, h } = this.size();
    const want = Math.min(1.5, (w - 24) / Math.max(1, width), (h - 24) / Math.max(1, height));
    const k = Math.max(READABLE_K, want);
    if (want >= READABLE_K) {
      this.set({ k, x: (w - width * k) / 2, y: Math.max(12, (h - height * k) / 2) }, animate);
      return true;
    }
    const ax = anchor?.x ?? width / 2, ay = anchor?.y;
    const x = width * k <= w ? (w - width * k) / 2 : Math.min(12, Math.max(w - 12 - width * k, w / 2 - ax * k));
    const y = ay === undefined ? 12 : Math.min(12, Math.max(h - 12 - height * k, h / 2 - ay * k));
    this.set({ k, x, y }, animate);
    return false;
  }

  /** Centres (x, y) at a readable scale at least (the debugger's current node). */
  focus(x: number, y: number, animate = true) {
    if (this.t.k >= READABLE_K) return this.reveal(x, y, animate);
    const { w, h } = this.size();
    this.set({ k: READABLE_K, x: w / 2 - x * READABLE_K, y: h / 2 - y * READABLE_K }, animate);
  }

  /** A corner of the canvas something sits over (the minimap), in canvas pixels; reveal keeps points out of it. */
  covered: () => { x0: number; y0: number; x1: number; y1: number } | null = () => null;

  /**
   * Pans the least, up or left, so that none of `boxes` (graph coordinates: centre and size) sits under
   * the covered corner (the minimap). A pan may not push out of view any of `keep` that is in view now
   * (a selected node and its neighbours). Stays put when no box is under the corner, or when no pan
   * clears them all; returns whether none is under it now.
   */
  uncover(boxes: readonly Box[], animate = false, keep: readonly Box[] = []): boolean {
    const c = this.covered();
    if (!c) return true;
    const m = 8, { k, x, y } = this.t, { w, h } = this.size();
    const at = (b: Box, dx: number, dy: number) => {
      const x0 = (b.x - b.width / 2) * k + x - dx, y0 = (b.y - b.height / 2) * k + y - dy;
      return { x0, y0, x1: x0 + b.width * k, y1: y0 + b.height * k };
    };
    const under = (dx: number, dy: number) => boxes.filter((b) => {
      const r = at(b, dx, dy);
      return r.x0 < c.x1 + m && r.x1 > c.x0 - m && r.y0 < c.y1 + m && r.y1 > c.y0 - m;
    });
    const inView = (b: Box, dx: number, dy: number) => {
      const r = at(b, dx, dy);
      return r.x0 >= 0 && r.y0 >= 0 && r.x1 <= w && r.y1 <= h;
    };
    const hit = under(0, 0);
    if (!hit.length) return true;
    const up = Math.max(...hit.map((b) => (b.y + b.height / 2) * k + y - (c.y0 - m)));
    const left = Math.max(...hit.map((b) => (b.x + b.width / 2) * k + x - (c.x0 - m)));
    const tries: [number, number][] = up <= left ? [[0, up], [left, 0]] : [[left, 0], [0, up]];
    const shown = keep.filter((b) => inView(b, 0, 0));
    const clear = tries.find(([dx, dy]) => under(dx, dy).length === 0 && shown.every((b) => inView(b, dx, dy)));
    if (clear) this.set({ k, x: x - clear[0], y: y - clear[1] }, animate);
    return clear !== undefined;
  }

  /**
   * Pans the least so a box (graph coordinates: its centre and size) is in view at this scale. Too tall
   * to fit: its top goes to the top (where an opened module's inputs come in); too wide: its left edge
   * goes to the left unless it already spans the whole width.
   */
  showBox(b: Box, animate = true) {
    const { w, h } = this.size(), k = this.t.k, m = 12;
    const pan = (c: number, len: number, off: number, view: number, spanOk: boolean) => {
      const lo = (c - len / 2) * k + off, hi = (c + len / 2) * k + off;
      if (len * k > view - 2 * m) return spanOk && lo <= 0 && hi >= view ? off : off + m - lo;
      if (lo >= 0 && hi <= view) return off;
      return lo < 0 ? off + m - lo : off - (hi - (view - m));
    };
    const x = pan(b.x, b.width, this.t.x, w, true), y = pan(b.y, b.height, this.t.y, h, false);
    if (x !== this.t.x || y !== this.t.y) this.set({ k, x, y }, animate);
  }

  /** Pans so (x, y) in graph coordinates is centred, unless it is already comfortably in view. */
  reveal(x: number, y: number, animate = true) {
    const { w, h } = this.size();
    const sx = x * this.t.k + this.t.x, sy = y * this.t.k + this.t.y;
    const c = this.covered();
    // a node's box reaches ~150 px right of and ~30 px around its centre
    const hidden = c !== null && sx + 150 > c.x0 && sx - 150 < c.x1 && sy + 30 > c.y0 && sy - 30 < c.y1;
    if (!hidden && sx > w * 0.1 && sx < w * 0.9 && sy > h * 0.1 && sy < h * 0.9) return;
    this.set({ k: this.t.k, x: w / 2 - x * this.t.k, y: h / 2 - y * this.t.k }, animate);
  }

  zoomBy(factor: number, cx?: number, cy?: number) {
    const { w, h } = this.size();
    const px = cx ?? w / 2, py = cy ?? h / 2;
    const k = Math.min(4, Math.max(0.02, this.t.k * factor));
    const f = k / this.t.k;
    this.set({ k, x: px - (px - this.t.x) * f, y: py - (py - this.t.y) * f });
  }

  private onWheel = (e: WheelEvent) => {
    if (!(e.ctrlKey || e.metaKey) && !this.focusOwner.contains(document.activeElement)) return;
    e.preventDefault();
    const r = this.canvas.getBoundingClientRect();
    this.zoomBy(Math.exp(-e.deltaY * (e.deltaMode === 1 ? 0.05 : 0.0015)), e.clientX - r.left, e.clientY - r.top);
  };

  private onDown = (e: PointerEvent) => {
    if (e.button !== 0) return;
    const start = { x: e.clientX, y: e.clientY, tx: this.t.x, ty: this.t.y };
    this.dragged = false;
    const move = (m: PointerEvent) => {
      const dx = m.clientX - start.x, dy = m.clientY - start.y;
      if (!this.dragged && Math.hypot(dx, dy) < 4) return;
      if (!this.dragged) {
        this.dragged = true;
        this.canvas.classList.add("wb-panning");
        this.canvas.setPointerCapture?.(e.pointerId);
      }
      this.set({ k: this.t.k, x: start.tx + dx, y: start.ty + dy });
    };
    const up = () => {
      this.canvas.classList.remove("wb-panning");
      this.canvas.removeEventListener("pointermove", move);
      this.canvas.removeEventListener("pointerup", up);
      this.canvas.removeEventListener("pointercancel", up);
      // Cleared after the click event that follows pointerup has been seen.
      setTimeout(() => (this.dragged = false), 0);
    };
    this.canvas.addEventListener("pointermove", move);
    this.canvas.addEventListener("pointerup", up);
    this.canvas.addEventListener("pointercancel", up);
  };
}
