// Runs layouts in one shared Web Worker per page so a 20,000-node tape never blocks the notebook.
import WORKER_SOURCE from "layout-worker-source";
import type { LayoutInput, LayoutResult } from "./layout";

export type LayoutFn = (input: LayoutInput) => Promise<LayoutResult>;

let worker: Worker | null | undefined;
let nextId = 0;
const pending = new Map<number, { resolve: (r: LayoutResult) => void; reject: (e: Error) => void }>();

function startWorker(): Worker | null {
  try {
    const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "text/javascript" }));
    const w = new Worker(url);
    w.onmessage = (e: MessageEvent<{ id: number; result?: LayoutResult; error?: string }>) => {
      const p = pending.get(e.data.id);
      pending.delete(e.data.id);
      if (!p) return;
      if (e.data.result) p.resolve(e.data.result);
      else p.reject(new Error(e.data.error ?? "layout failed"));
    };
    w.onerror = () => {
      // A worker that cannot start (CSP forbids blob: workers) fails here; retry on the main thread.
      worker = null;
      for (const [, p] of pending) p.reject(new Error("worker unavailable"));
      pending.clear();
    };
    return w;
  } catch {
    return null;
  }
}

function mainThread(input: LayoutInput): LayoutResult {
  const g = globalThis as { __workbenchLayout?: (i: LayoutInput) => LayoutResult };
  if (!g.__workbenchLayout) new Function(WORKER_SOURCE)();
  return g.__workbenchLayout!(input);
}

/** Lays out in the worker; falls back to the main thread where workers cannot start. */
export const workerLayout: LayoutFn = (input) => {
  if (worker === undefined) worker = startWorker();
  const w = worker;
  if (!w) return new Promise((resolve) => resolve(mainThread(input)));
  const id = nextId++;
  return new Promise<LayoutResult>((resolve, reject) => {
    pending.set(id, { resolve, reject });
    w.postMessage({ id, input });
  }).catch(() => mainThread(input));
};
