// One stylesheet for every view, injected once per document. Colours come from JupyterLab's --jp-*
// variables, then VS Code's --vscode-*, then a built-in palette that follows the OS theme (the
// standalone HTML file has neither host), so light and dark work everywhere without JS detection.
import CSS from "./viewer.css?inline";

export function ensureStyle(doc: Document = document) {
  if (doc.getElementById("wb-viewer-style")) return;
  const el = doc.createElement("style");
  el.id = "wb-viewer-style";
  el.textContent = CSS;
  doc.head.append(el);
}
