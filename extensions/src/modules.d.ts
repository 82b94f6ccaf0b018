// Provided by build.mjs: the bundled source of core/layout-worker.ts as a string.
declare module "layout-worker-source" {
  const source: string;
  export default source;
}
