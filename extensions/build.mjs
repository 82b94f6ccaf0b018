// Builds the browser bundles (about a second):
//   ../workbench/static/widget.js      anywidget ESM entry (saved widget state embeds it: keep it small)
//   ../workbench/static/standalone.js  IIFE inlined by Python into single-file HTML exports
//   lib/mime.js                        JupyterLab MIME renderer, then packaged by `jupyter labextension build`
//   lib/plugin.js                      JupyterLab plugin that lends the renderer the application shell
// The layout worker is bundled first and inlined as a string, so every host gets a Blob worker
// without serving a second file.
import * as esbuild from "esbuild";
import { mkdirSync, readFileSync, statSync } from "node:fs";

const here = new URL(".", import.meta.url).pathname;
const staticDir = `${here}../workbench/static`;
mkdirSync(staticDir, { recursive: true });

const worker = await esbuild.build({
  entryPoints: [`${here}src/core/layout-worker.ts`], bundle: true, minify: true, format: "iife", write: false, target: "es2022",
});
const workerSource = worker.outputFiles[0].text;
const inlineWorker = {
  name: "layout-worker-source",
  setup(b) {
    b.onResolve({ filter: /^layout-worker-source$/ }, () => ({ path: "layout-worker-source", namespace: "wb" }));
    b.onLoad({ filter: /.*/, namespace: "wb" }, () => ({ contents: `export default ${JSON.stringify(workerSource)};`, loader: "js" }));
  },
};
// The stylesheet ships as a minified string; the viewer injects it once per document.
const inlineCss = {
  name: "inline-css",
  setup(b) {
    b.onResolve({ filter: /\.css\?inline$/ }, (a) => ({ path: new URL(a.path.replace("?inline", ""), `file://${a.resolveDir}/`).pathname, namespace: "css" }));
    b.onLoad({ filter: /.*/, namespace: "css" }, async (a) => {
      const { code } = await esbuild.transform(readFileSync(a.path, "utf8"), { loader: "css", minify: true });
      return { contents: `export default ${JSON.stringify(code)};`, loader: "js" };
    });
  },
};
const common = { bundle: true, target: "es2022", plugins: [inlineWorker, inlineCss], legalComments: "none", logLevel: "warning" };

await Promise.all([
  // UTF-8 rather than \u escapes for the symbols in the UI (×, ⚠, ✂, ...): anywidget receives the
  // module as a JSON string, so the encoding is never in doubt, and it keeps the bundle under 100 KB.
  esbuild.build({ ...common, entryPoints: [`${here}src/widget/index.ts`], outfile: `${staticDir}/widget.js`, format: "esm", minify: true, charset: "utf8" }),
  esbuild.build({ ...common, entryPoints: [`${here}src/standalone.ts`], outfile: `${staticDir}/standalone.js`, format: "iife", minify: true }),
  // JupyterLab provides these as shared singletons; webpack (labextension build) resolves them.
  esbuild.build({ ...common, entryPoints: [`${here}src/labext/mime.ts`], outfile: `${here}lib/mime.js`, format: "esm",
    external: ["@jupyterlab/*", "@lumino/*"] }),
  esbuild.build({ ...common, entryPoints: [`${here}src/labext/plugin.ts`], outfile: `${here}lib/plugin.js`, format: "esm",
    external: ["@jupyterlab/*", "@lumino/*"] }),
]);

for (const f of [`${staticDir}/widget.js`, `${staticDir}/standalone.js`, `${here}lib/mime.js`, `${here}lib/plugin.js`]) {
  console.log(`${f.replace(here, "")}: ${(statSync(f).size / 1024).toFixed(1)} KB`);
}
console.log(`layout worker (inlined): ${(workerSource.length / 1024).toFixed(1)} KB`);
