import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Snapshot } from "../src/core/types";

// Paths, not URL objects: under jsdom the global URL is jsdom's, which node:fs does not accept.
const here = dirname(fileURLToPath(import.meta.url));

/** gru_loop, tied, resnet, widening, transformer: real models (tests/viz/repeated.py writes them, structure only). */
export const fixture = (name: "scalar" | "mlp" | "nan_cut" | "gru_loop" | "tied" | "resnet" | "widening" | "transformer"): Snapshot =>
  JSON.parse(readFileSync(join(here, "fixtures", `${name}.tape.json`), "utf8"));

export const schema = JSON.parse(readFileSync(join(here, "../../workbench/viz/tape.v1.schema.json"), "utf8"));
