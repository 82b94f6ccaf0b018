// The only way this package builds DOM: elements, attributes and text nodes. User strings (names,
// scopes, file paths) never reach innerHTML, so a module called "<img onerror=...>" stays text.
const SVG_NS = "http://www.w3.org/2000/svg";

type Attrs = Record<string, string | number | boolean | null | undefined>;
type Child = Node | string | null | undefined | false;

function fill<E extends Element>(e: E, attrs: Attrs, children: Child[]): E {
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined && v !== false) e.setAttribute(k, v === true ? "" : String(v));
  for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(typeof c === "string" ? document.createTextNode(c) : c);
  return e;
}

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  return fill(document.createElement(tag), attrs, children);
}

export function s<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): SVGElementTagNameMap[K] {
  return fill(document.createElementNS(SVG_NS, tag) as SVGElementTagNameMap[K], attrs, children);
}
