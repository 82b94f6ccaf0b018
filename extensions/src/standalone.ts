// Bundle for the single offline HTML file that snapshot.save("x.html") writes (PROTOCOL.md,
// "Standalone HTML"): renders every embedded snapshot, replay stepping included, with no server.
import { render } from "./core/viewer";
import { renderMonitor } from "./monitor/monitor";
import { renderReport } from "./monitor/report";

function mountAll(doc: Document) {
  for (const script of doc.querySelectorAll<HTMLScriptElement>('script[type="application/json"][data-workbench-tape]')) {
    const target = doc.getElementById(script.dataset.workbenchTape!) ?? script.parentElement!;
    try {
      render(target, JSON.parse(script.textContent ?? "null"), { height: Number(script.dataset.height) || undefined });
    } catch (err) {
      target.textContent = `workbench: cannot show this snapshot: ${(err as Error).message}`;
    }
  }
}

(globalThis as { workbench?: object }).workbench = { render, renderMonitor, renderReport };
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => mountAll(document));
else mountAll(document);
