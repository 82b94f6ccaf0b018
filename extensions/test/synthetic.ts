// Synthetic tapes of any size for layout and rendering tests: a transformer-like stack where every
// block "layers.i" holds "layers.i.attn" and "layers.i.mlp", each a short chain of ops with a
// parameter, so collapsed views stay small while the full graph has `n` nodes.
import type { Snapshot, TapeNode } from "../src/core/types";

export function syntheticTape(n: number, opsPerModule = 8): Snapshot {
  const nodes: TapeNode[] = [];
  const edges: Snapshot["edges"] = [];
  const modules: Snapshot["modules"] = [];
  const node = (id: string, kind: TapeNode["kind"], op: string, scope: string, param: string | null = null): TapeNode => ({
    id, kind, op, name: kind === "param" ? param!.split(".").pop()! : kind === "input" ? id : `${op[0].toUpperCase()}${op.slice(1)}Backward0`, scope, group: null,
    site: null, shape: [16, 64], dtype: "float32", device: "cpu", param, saved: [], value: null, grad: null, cut: null,
  });
  nodes.push(node("x", "input", "", ""));
  let prev = "x";
  const perBlock = 2 * (opsPerModule + 1);
  const blocks = Math.max(1, Math.floor((n - 2) / perBlock));
  for (let b = 0; b < blocks; b++) {
    modules.push({ path: `layers.${b}`, type: "Block", parent: null });
    for (const sub of ["attn", "mlp"]) {
      const scope = `layers.${b}.${sub}`;
      modules.push({ path: scope, type: sub === "attn" ? "Attention" : "MLP", parent: `layers.${b}` });
      const w = `${scope}.weight`;
      nodes.push(node(w, "param", "AccumulateGrad", scope, w));
      for (let k = 0; k < opsPerModule; k++) {
        const id = `${scope}/${k}`;
        nodes.push(node(id, "op", k === 0 ? "matmul" : k % 2 ? "add" : "relu", scope));
        edges.push({ source: prev, target: id, index: 0, shape: [16, 64], dtype: "float32" });
        if (k === 0) edges.push({ source: w, target: id, index: 1, shape: [64, 64], dtype: "float32" });
        prev = id;
      }
    }
  }
  // Pad with top-level ops to reach exactly n nodes.
  while (nodes.length < n - 1) {
    const id = `pad/${nodes.length}`;
    nodes.push(node(id, "op", "add", ""));
    edges.push({ source: prev, target: id, index: 0, shape: [16, 64], dtype: "float32" });
    prev = id;
  }
  nodes.push({ ...node("loss", "output", "mean", ""), shape: [] });
  edges.push({ source: prev, target: "loss", index: 0, shape: [16, 64], dtype: "float32" });
  return { format: "workbench.tape", version: 1, title: `synthetic ${n}`, nodes, edges, modules, roots: ["loss"], trace: null };
}
