// (root) => the text inside `root` whose WCAG contrast against what it is drawn on is lowest: [{ratio, text, where}],
// lowest first. HTML text: its colour on the first opaque background up its ancestors (translucent ones
// composited on the way). SVG text: its fill (times fill-opacity and the group opacities) on the box of its
// group (the nearest filled rect before it that it lies in) over the page behind the SVG. Hidden, empty and aria-hidden text is skipped.
(root) => {
  const parse = (c) => {
    let m = c.match(/^rgba?\(([^)]+)\)$/);
    if (m) {
      const p = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
      return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    }
    m = c.match(/^color\(srgb ([^)]+)\)$/);
    if (m) {
      const p = m[1].split(/[\s/]+/).filter(Boolean).map(Number);
      return [p[0] * 255, p[1] * 255, p[2] * 255, p.length > 3 ? p[3] : 1];
    }
    return null; // none, url(...), a gradient: not a plain colour
  };
  const over = (top, under) => {
    const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat(1);
  };
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const htmlBg = (el) => {
    const layers = [];
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      if (e instanceof SVGElement && !(e instanceof SVGSVGElement)) continue;
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let bg = [255, 255, 255, 1];
    for (const c of layers.reverse()) bg = over(c, bg);
    return bg;
  };
  const opacity = (el, stop) => {
    let o = 1;
    for (let e = el; e && e !== stop; e = e.parentElement) o *= Number(getComputedStyle(e).opacity);
    return o;
  };
  const out = [];
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && !el.closest("[aria-hidden=true], [hidden]");
  };
  for (const t of root.querySelectorAll("svg text")) {
    if (!t.textContent.trim() || !visible(t)) continue;
    const svg = t.ownerSVGElement;
    let bg = htmlBg(svg.parentElement);
    const g = t.parentElement;
    // the box drawn under the text: the nearest filled rect before it in its group (a badge's own, or the
    // node's) that the text's centre lies in
    const tr = t.getBoundingClientRect(), cx = tr.x + tr.width / 2, cy = tr.y + tr.height / 2;
    for (let e = t.previousElementSibling; e; e = e.previousElementSibling) {
      if (e.tagName !== "rect") continue;
      const s = getComputedStyle(e), f = parse(s.fill), r = e.getBoundingClientRect();
      if (!f || f[3] * Number(s.fillOpacity) === 0 || cx < r.left || cx > r.right || cy < r.top || cy > r.bottom) continue;
      bg = over([f[0], f[1], f[2], f[3] * Number(s.fillOpacity) * opacity(e, svg)], bg);
      break;
    }
    const s = getComputedStyle(t), f = parse(s.fill);
    if (!f) continue;
    const fg = over([f[0], f[1], f[2], f[3] * Number(s.fillOpacity) * opacity(t, svg)], bg);
    out.push({ ratio: ratio(fg, bg), text: t.textContent.trim().slice(0, 40), where: `svg ${g.getAttribute("class") || g.tagName}` });
  }
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const seen = new Set();
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || seen.has(el) || !n.textContent.trim() || el.closest("svg") || ["SCRIPT", "STYLE", "OPTION"].includes(el.tagName)) continue;
    seen.add(el);
    if (!visible(el)) continue;
    const bg = htmlBg(el), c = parse(getComputedStyle(el).color);
    if (!c) continue;
    const fg = over([c[0], c[1], c[2], c[3] * opacity(el, root.parentElement)], bg);
    out.push({ ratio: ratio(fg, bg), text: n.textContent.trim().slice(0, 40), where: `${el.tagName.toLowerCase()}.${el.className}` });
  }
  return out.sort((a, b) => a.ratio - b.ratio);
}
