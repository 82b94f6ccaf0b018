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

/**
 * The tape of nn.Sequential(Linear, ReLU, Linear, ReLU, ...) summed, as the recorder writes it: each
 * Linear "2k" holds its weight and bias leaves and its linear op, each ReLU "2k+1" its relu op; as in a
 * real snapshot the input x is in the first Linear's scope and the parameters come first (nodes, edges).
 */
export function mlpTape(layers: number): Snapshot {
  const nodes: TapeNode[] = [];
  const edges: Snapshot["edges"] = [];
  const modules: Snapshot["modules"] = [];
  const node = (id: string, kind: TapeNode["kind"], op: string, name: string, scope: string, shape: number[], param: string | null = null): TapeNode => ({
    id, kind, op, name, scope, group: null, site: null, shape, dtype: "float32", device: "cpu", param, saved: [], value: null, grad: null, cut: null,
  });
  const edge = (source: string, target: string, index: number, shape: number[]) => edges.push({ source, target, index, shape, dtype: "float32" });
  let prev = "x";
  for (let k = 0; k < layers; k++) {
    const lin = `${2 * k}`, act = `${2 * k + 1}`;
    modules.push({ path: lin, type: "Linear", parent: null }, { path: act, type: "ReLU", parent: null });
    nodes.push(node(`${lin}.weight`, "param", "AccumulateGrad", "weight", lin, [16, 16], `${lin}.weight`));
    nodes.push(node(`${lin}.bias`, "param", "AccumulateGrad", "bias", lin, [16], `${lin}.bias`));
    if (k === 0) nodes.push(node("x", "input", "", "x", lin, [4, 16]));
    nodes.push(node(`linear${k}`, "op", "linear", "LinearBackward0", lin, [4, 16]));
    edge(`${lin}.weight`, `linear${k}`, 1, [16, 16]);
    edge(`${lin}.bias`, `linear${k}`, 2, [16]);
    edge(prev, `linear${k}`, 0, [4, 16]);
    nodes.push(node(`relu${k}`, "op", "relu", "ReluBackward0", act, [4, 16]));
    edge(`linear${k}`, `relu${k}`, 0, [4, 16]);
    prev = `relu${k}`;
  }
  nodes.push(node("loss", "output", "sum", "SumBackward0", "", []));
  edge(prev, "loss", 0, [4, 16]);
  return { format: "workbench.tape", version: 1, title: `${layers}-layer MLP`, nodes, edges, modules, roots: ["loss"], trace: null };
}
