// One stylesheet for every view, injected once per document. Colours come from JupyterLab's --jp-*
// variables, then VS Code's --vscode-*, then a built-in palette that follows the OS theme (the
// standalone HTML file has neither host), so light and dark work everywhere without JS detection.
const CSS = `
.wb-root {
  --wb-pal-bg: #ffffff; --wb-pal-bg2: #f5f5f5; --wb-pal-fg: #1f1f1f; --wb-pal-fg2: #616161; --wb-pal-border: #c8c8c8;
  --wb-pal-brand: #1976d2; --wb-pal-accent: #f57c00; --wb-pal-error: #d32f2f; --wb-pal-warn: #e68a00; --wb-pal-ok: #2e7d32;
  --wb-bg: var(--jp-layout-color0, var(--vscode-editor-background, var(--wb-pal-bg)));
  --wb-bg2: var(--jp-layout-color2, var(--vscode-sideBar-background, var(--wb-pal-bg2)));
  --wb-fg: var(--jp-ui-font-color1, var(--vscode-editor-foreground, var(--wb-pal-fg)));
  --wb-fg2: var(--jp-ui-font-color2, var(--vscode-descriptionForeground, var(--wb-pal-fg2)));
  --wb-border: var(--jp-border-color1, var(--vscode-panel-border, var(--wb-pal-border)));
  --wb-brand: var(--jp-brand-color1, var(--vscode-focusBorder, var(--wb-pal-brand)));
  --wb-accent: var(--jp-accent-color1, var(--vscode-editorWarning-foreground, var(--wb-pal-accent)));
  --wb-error: var(--jp-error-color1, var(--vscode-errorForeground, var(--wb-pal-error)));
  --wb-warn: var(--jp-warn-color1, var(--vscode-editorWarning-foreground, var(--wb-pal-warn)));
  --wb-ok: var(--jp-success-color1, var(--vscode-testing-iconPassed, var(--wb-pal-ok)));
  --wb-font: var(--jp-ui-font-family, var(--vscode-font-family, system-ui, sans-serif));
  --wb-code: var(--jp-code-font-family, var(--vscode-editor-font-family, ui-monospace, Menlo, Consolas, monospace));
  font-family: var(--wb-font); font-size: var(--jp-ui-font-size1, 13px); color: var(--wb-fg); background: var(--wb-bg);
  border: 1px solid var(--wb-border); border-radius: 4px; display: flex; flex-direction: column; outline: none;
  position: relative; box-sizing: border-box;
}
@media (prefers-color-scheme: dark) {
  .wb-root { --wb-pal-bg: #1e1e1e; --wb-pal-bg2: #2a2a2a; --wb-pal-fg: #e0e0e0; --wb-pal-fg2: #a8a8a8; --wb-pal-border: #4a4a4a;
    --wb-pal-brand: #64b5f6; --wb-pal-accent: #ffb74d; --wb-pal-error: #ef5350; --wb-pal-warn: #ffca28; --wb-pal-ok: #81c784; }
}
.wb-root:focus-visible { box-shadow: 0 0 0 2px var(--wb-brand); }
.wb-root * { box-sizing: border-box; }
.wb-bar { display: flex; align-items: center; gap: 6px; padding: 4px 6px; border-bottom: 1px solid var(--wb-border); background: var(--wb-bg2); flex-wrap: wrap; }
.wb-title { font-weight: 600; margin-right: auto; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; max-width: 40%; }
.wb-btn { font: inherit; color: var(--wb-fg); background: var(--wb-bg); border: 1px solid var(--wb-border); border-radius: 3px; padding: 2px 8px; cursor: pointer; }
.wb-btn:hover { border-color: var(--wb-brand); }
.wb-btn:focus-visible, .wb-search:focus-visible { outline: 2px solid var(--wb-brand); outline-offset: 1px; }
.wb-btn:disabled { opacity: .5; cursor: default; }
.wb-btn kbd, .wb-kbd { font-family: var(--wb-code); font-size: 10px; color: var(--wb-fg2); margin-left: 4px; }
.wb-search-wrap { position: relative; }
.wb-search { font: inherit; color: var(--wb-fg); background: var(--wb-bg); border: 1px solid var(--wb-border); border-radius: 3px; padding: 2px 6px; width: 200px; }
.wb-results { position: absolute; z-index: 10; top: 100%; left: 0; min-width: 100%; max-height: 240px; overflow: auto; margin: 2px 0 0; padding: 2px 0;
  list-style: none; background: var(--wb-bg); border: 1px solid var(--wb-border); border-radius: 3px; box-shadow: 0 2px 8px rgba(0,0,0,.2); }
.wb-results li { padding: 2px 8px; cursor: pointer; white-space: nowrap; font-family: var(--wb-code); font-size: 12px; }
.wb-results li[aria-selected="true"], .wb-results li:hover { background: var(--wb-bg2); color: var(--wb-brand); }
.wb-results .wb-muted { margin-left: 8px; }
.wb-main { display: flex; min-height: 0; flex: 1; }
.wb-canvas { flex: 1; position: relative; overflow: hidden; min-width: 0; cursor: grab; touch-action: none; }
.wb-canvas.wb-panning { cursor: grabbing; }
.wb-canvas svg.wb-graph { display: block; width: 100%; height: 100%; user-select: none; }
.wb-panel { width: 300px; flex: none; overflow: auto; border-left: 1px solid var(--wb-border); padding: 6px 8px; background: var(--wb-bg); }
.wb-panel h3 { font-size: 13px; margin: 8px 0 4px; }
.wb-panel h4 { font-size: 12px; margin: 8px 0 2px; color: var(--wb-fg2); font-weight: 600; }
.wb-panel dl { display: grid; grid-template-columns: auto 1fr; gap: 1px 8px; margin: 0; }
.wb-panel dt { color: var(--wb-fg2); }
.wb-panel dd { margin: 0; font-family: var(--wb-code); font-size: 12px; overflow-wrap: anywhere; }
.wb-panel pre { font-family: var(--wb-code); font-size: 12px; background: var(--wb-bg2); padding: 4px 6px; border-radius: 3px; white-space: pre-wrap; margin: 4px 0; }
.wb-panel ul { margin: 0; padding-left: 16px; }
.wb-status { font-size: 11px; color: var(--wb-fg2); padding: 2px 6px; border-top: 1px solid var(--wb-border); min-height: 18px; }
.wb-muted { color: var(--wb-fg2); fill: var(--wb-fg2); font-size: 11px; }
.wb-code { font-family: var(--wb-code); }
.wb-bad-nan { color: var(--wb-error); } .wb-bad-inf { color: var(--wb-warn); }
.wb-counter { font-family: var(--wb-code); min-width: 64px; text-align: center; }
.wb-paused { color: var(--wb-accent); font-size: 12px; }
.wb-banner { padding: 4px 8px; background: var(--wb-bg2); border-bottom: 2px solid var(--wb-warn); }
.wb-step-current { border-left: 3px solid var(--wb-accent); padding-left: 6px; }
/* graph */
.wb-graph text { font-family: var(--wb-code); font-size: 12px; fill: var(--wb-fg); }
.wb-graph .wb-t-title { font-weight: 600; }
.wb-graph .wb-t-sub { fill: var(--wb-fg2); font-size: 11px; }
.wb-node-box { fill: var(--wb-bg); stroke: var(--wb-border); stroke-width: 1.2; }
.wb-kind-param .wb-node-box, .wb-kind-leaf .wb-node-box { fill: var(--wb-bg2); }
.wb-kind-output .wb-node-box { stroke: var(--wb-brand); stroke-width: 2; }
.wb-kind-input .wb-node-box { stroke-dasharray: 2 2; }
.wb-cut .wb-node-box { stroke-dasharray: 6 3; stroke: var(--wb-accent); }
.wb-node, .wb-box, .wb-cluster-head { cursor: pointer; outline: none; }
.wb-node:focus .wb-node-box, .wb-box:focus .wb-node-box, .wb-cluster-head:focus .wb-cluster-label { stroke: var(--wb-brand); stroke-width: 2.5; }
.wb-selected .wb-node-box { stroke: var(--wb-brand); stroke-width: 2.5; }
.wb-match .wb-node-box { fill: color-mix(in srgb, var(--wb-brand) 18%, var(--wb-bg)); }
.wb-current .wb-node-box { stroke: var(--wb-accent); stroke-width: 3; fill: color-mix(in srgb, var(--wb-accent) 16%, var(--wb-bg)); }
/* Executed steps: muted title, so the current node (accent) stands out. */
.wb-done .wb-t-title { fill: var(--wb-fg2); }
.wb-health-nan .wb-node-box { stroke: var(--wb-error); stroke-width: 2.5; }
.wb-health-inf .wb-node-box { stroke: var(--wb-warn); stroke-width: 2.5; }
.wb-badge-nan { fill: var(--wb-error) !important; font-weight: 700; }
.wb-badge-inf { fill: var(--wb-warn) !important; font-weight: 700; }
.wb-badge-cut { fill: var(--wb-accent) !important; }
.wb-gutter { fill: transparent; }
.wb-node:hover .wb-gutter { fill: var(--wb-bg2); }
.wb-bp { fill: var(--wb-error); }
.wb-box .wb-node-box { fill: var(--wb-bg2); stroke-width: 1.5; }
.wb-box .wb-box-shadow { fill: var(--wb-bg2); stroke: var(--wb-border); }
.wb-cluster-rect { fill: color-mix(in srgb, var(--wb-bg2) 50%, transparent); stroke: var(--wb-border); stroke-dasharray: 4 2; }
.wb-cluster-label { fill: transparent; stroke: none; }
.wb-edge { fill: none; stroke: var(--wb-fg2); stroke-width: 1.2; }
.wb-edge-cut { stroke-dasharray: 5 4; stroke: var(--wb-accent); }
.wb-edge-label { font-size: 10px !important; fill: var(--wb-fg2) !important; }
.wb-arrow { fill: var(--wb-fg2); }
.wb-hist-bar { fill: var(--wb-brand); }
.wb-hist-zero { stroke: var(--wb-fg2); stroke-dasharray: 2 2; }
.wb-hist text { font-family: var(--wb-code); font-size: 10px; }
.wb-stats { font-family: var(--wb-code); font-size: 11px; border-collapse: collapse; margin: 2px 0; }
.wb-stats td, .wb-stats th { padding: 0 6px 0 0; text-align: left; font-weight: normal; }
.wb-stats th { color: var(--wb-fg2); }
@media (prefers-reduced-motion: no-preference) { .wb-viewport.wb-animate { transition: transform .25s ease; } }
/* monitor */
.wb-mon-grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(272px, 1fr)); align-items: start; gap: 8px; padding: 8px; overflow: auto; }
.wb-chart { border: 1px solid var(--wb-border); border-radius: 3px; padding: 4px; }
.wb-chart h4 { margin: 0 0 2px; font-size: 12px; font-weight: 600; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.wb-chart svg text { font-family: var(--wb-code); font-size: 10px; fill: var(--wb-fg2); }
.wb-line { fill: none; stroke-width: 1.5; }
/* Series colours: blue, orange, green in every JupyterLab theme (accent and success are both green). */
.wb-s0 { stroke: var(--wb-brand); } .wb-s1 { stroke: var(--wb-warn); } .wb-s2 { stroke: var(--wb-ok); }
.wb-sw0 { background: var(--wb-brand); } .wb-sw1 { background: var(--wb-warn); } .wb-sw2 { background: var(--wb-ok); }
.wb-swatch { display: inline-block; width: 10px; height: 3px; margin: 0 3px 2px 6px; vertical-align: middle; }
.wb-axis { stroke: var(--wb-border); }
/* Under the chart's plot area: line-chart.ts draws it from x = 52 to 260. */
.wb-heat-wrap { margin-left: 52px; width: 208px; }
.wb-heat { width: 100%; height: 48px; image-rendering: pixelated; display: block; border: 1px solid var(--wb-border); }
.wb-alarms { list-style: none; margin: 0; padding: 4px 8px; max-height: 160px; overflow: auto; border-top: 1px solid var(--wb-border); }
.wb-alarms li { font-size: 12px; padding: 1px 0; }
`;

export function ensureStyle(doc: Document = document) {
  if (doc.getElementById("wb-viewer-style")) return;
  const el = doc.createElement("style");
  el.id = "wb-viewer-style";
  el.textContent = CSS;
  doc.head.append(el);
}
