// A small SVG bar chart of a Summary's histogram, with the value range under it.
import { s } from "./dom";
import { fmt } from "./format";
import type { Summary } from "./types";

export function histogram(sum: Summary, width = 220, height = 48): SVGSVGElement {
  const svg = s("svg", { class: "wb-hist", width, height: height + 14, viewBox: `0 0 ${width} ${height + 14}`, role: "img" });
  const h = sum.hist;
  if (!h) {
    svg.setAttribute("aria-label", "no finite values to plot");
    svg.append(s("text", { x: 0, y: 12, class: "wb-muted" }, "no finite values"));
    return svg;
  }
  const max = Math.max(1, ...h.counts);
  const bw = width / h.counts.length;
  h.counts.forEach((c, i) => {
    const bh = c === 0 ? 0 : Math.max(1, (c / max) * height);
    svg.append(s("rect", { x: i * bw + 0.5, y: height - bh, width: Math.max(1, bw - 1), height: bh, class: "wb-hist-bar" }, s("title", {}, `${c}`)));
  });
  // Zero marker helps read sign at a glance when the range spans it.
  if (h.lo < 0 && h.hi > 0) {
    const x = ((0 - h.lo) / (h.hi - h.lo)) * width;
    svg.append(s("line", { x1: x, x2: x, y1: 0, y2: height, class: "wb-hist-zero" }));
  }
  svg.append(
    s("text", { x: 0, y: height + 12, class: "wb-muted" }, fmt(h.lo)),
    s("text", { x: width, y: height + 12, "text-anchor": "end", class: "wb-muted" }, fmt(h.hi)),
  );
  svg.setAttribute("aria-label", `histogram from ${fmt(h.lo)} to ${fmt(h.hi)}, ${h.counts.length} bins`);
  return svg;
}
