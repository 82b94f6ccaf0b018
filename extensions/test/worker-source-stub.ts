// Stands in for build.mjs's generated worker source; unit tests lay out on the main thread.
export default "";
