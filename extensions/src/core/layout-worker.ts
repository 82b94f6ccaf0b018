// Entry of the layout Web Worker. build.mjs bundles this file (with dagre) into a string that the
// viewer starts from a Blob URL, so every host (anywidget ESM, labextension, single HTML file) gets a
// worker without serving a second file. The same string, evaluated on the main thread, is the fallback
// where workers are blocked; that is why it also publishes computeLayout on globalThis.
import { computeLayout, type LayoutInput } from "./layout";

const g = globalThis as unknown as {
  __workbenchLayout?: typeof computeLayout;
  postMessage?: (m: unknown) => void;
  onmessage?: ((e: MessageEvent) => void) | null;
  document?: unknown;
};
g.__workbenchLayout = computeLayout;
if (typeof g.document === "undefined" && typeof g.postMessage === "function") {
  g.onmessage = (e: MessageEvent<{ id: number; input: LayoutInput }>) => {
    try {
      g.postMessage!({ id: e.data.id, result: computeLayout(e.data.input) });
    } catch (err) {
      g.postMessage!({ id: e.data.id, error: String(err) });
    }
  };
}
