import { computeLayout } from "../src/core/layout";
import { type ViewerOptions, render } from "../src/core/viewer";

/** Renders into a fresh element with a synchronous layout (jsdom has no Worker). */
export async function mount(snapshot: unknown, opts: ViewerOptions = {}) {
  const el = document.createElement("div");
  document.body.append(el);
  const v = render(el, snapshot, { layout: async (i) => computeLayout(i), ...opts });
  await v.ready();
  return { el, v, root: v.root };
}

export function key(target: Element, k: string) {
  target.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true, cancelable: true }));
}

export const item = (root: Element, id: string) => [...root.querySelectorAll(".wb-graph [data-id]")].find((e) => e.getAttribute("data-id") === id) ?? null;
