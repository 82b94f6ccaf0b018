// Modules build.mjs provides: the layout worker source (a string), and viewer.css minified.
declare module "layout-worker-source" {
  const source: string;
  export default source;
}

// viewer.css as a minified string (build.mjs; Vite's ?inline in tests).
declare module "*.css?inline" {
  const css: string;
  export default css;
}
