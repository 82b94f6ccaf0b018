// Canvas overview for graphs too big to draw as SVG at once: boxes and edge lines only, no text.
// 20,000 boxes paint in a few milliseconds, where the same number of SVG groups takes Chromium
// seconds to style and lay out. The viewer switches to it when more than LOD items are in view.
import type { Transform } from "./panzoom";
import type { LayoutResult } from "./layout";

/** Most items drawn as SVG at once; beyond this the canvas overview is shown. */
export const LOD = 1500;

/**
 * `fill`: the overlay's colour of the item (a translucent CSS colour), drawn when it has no mark;
 * `diff`: compare's outline, as in the SVG (added: bold, removed: dashed).
 */
export interface OverviewItem { id: string; mark: "nan" | "inf" | "current" | "selected" | null; fill?: string | null; diff?: "added" | "removed" | null }

export function paintOverview(canvas: HTMLCanvasElement, L: LayoutResult, items: OverviewItem[], clusters: string[], edges: number[], t: Transform) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, h = canvas.clientHeight;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  const css = getComputedStyle(canvas);
  const color = (v: string, fallback: string) => css.getPropertyValue(v).trim() || fallback;
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.setTransform(dpr * t.k, 0, 0, dpr * t.k, dpr * t.x, dpr * t.y);
  ctx.lineWidth = 1 / t.k;
  ctx.strokeStyle = color("--wb-border", "#c8c8c8");
  for (const id of clusters) {
    const b = L.boxes[id];
    if (b) ctx.strokeRect(b.x - b.width / 2, b.y - b.height / 2, b.width, b.height);
  }
  ctx.beginPath();
  for (const i of edges) {
    const pts = L.edges[i]?.points ?? [];
    pts.forEach((p, j) => (j ? ctx.lineTo(p.x, p.y) : ctx.moveTo(p.x, p.y)));
  }
  ctx.strokeStyle = color("--wb-fg2", "#888");
  ctx.stroke();
  const fill: Record<string, string> = {
    nan: color("--wb-error", "#d32f2f"), inf: color("--wb-warn", "#e68a00"),
    current: color("--wb-accent", "#f57c00"), selected: color("--wb-brand", "#1976d2"),
  };
  const plain = color("--wb-bg2", "#eee");
  ctx.strokeStyle = color("--wb-border", "#c8c8c8");
  for (const it of items) {
    const b = L.boxes[it.id];
    if (!b) continue;
    ctx.fillStyle = it.mark ? fill[it.mark] : it.fill ?? plain;
    ctx.fillRect(b.x - b.width / 2, b.y - b.height / 2, b.width, b.height);
    ctx.strokeRect(b.x - b.width / 2, b.y - b.height / 2, b.width, b.height);
  }
  // compare's outlines last, at least 2 screen pixels wide, so they read at any zoom
  const diffs = items.filter((it) => it.diff);
  if (!diffs.length) return;
  ctx.lineWidth = 2.5 / t.k;
  for (const d of ["added", "removed"] as const) {
    ctx.strokeStyle = d === "added" ? color("--wb-ok", "#2e7d32") : color("--wb-fg2", "#888");
    ctx.setLineDash(d === "removed" ? [5 / t.k, 3 / t.k] : []);
    for (const it of diffs) {
      const b = L.boxes[it.id];
      if (b && it.diff === d) ctx.strokeRect(b.x - b.width / 2, b.y - b.height / 2, b.width, b.height);
    }
  }
  ctx.setLineDash([]);
}
