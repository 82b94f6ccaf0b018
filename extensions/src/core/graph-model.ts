// Turns a snapshot plus the set of expanded containers into the graph that is actually drawn.
// Containers are module scopes ("m:encoder.0") and composite-op calls ("g:encoder.0\0softmax#1");
// a collapsed container stands in for everything inside it, so a 20,000-node tape usually shows a
// few dozen boxes until the user opens one.
import type { Snapshot, TapeNode } from "./types";

export interface Container {
  id: string;
  /** module: one call of a module; series: repeated calls of one module ("step ×200"); group: a composite op. */
  kind: "module" | "series" | "group";
  /** Module path, or the scope of a group. */
  path: string;
  /** What the box says: "encoder.0", "rnn.layer0.step · call 3/200", "step ×200", "softmax". */
  label: string;
  /** What it is: the module's class, "composite op", or "GRU · series of 200 calls". */
  type: string;
  parent: string | null;
  /** Every tape node inside, at any depth. */
  members: string[];
}

export interface VisibleItem {
  id: string;
  /** "node": a tape node; "box": a collapsed container. */
  type: "node" | "box";
  /** Innermost expanded container that draws around this item, if any (never a series: see `visible`). */
  cluster: string | null;
}

export interface VisibleEdge {
  source: string;
  target: string;
  /** Shape text of the first tape edge merged into this one, e.g. "8×3"; "" for scalars (noise in micrograd-size graphs). */
  label: string;
  /** Argument position at the target of the first tape edge merged into this one (0: the first). */
  index: number;
  /** Number of tape edges merged into this one (edges collapse when their ends do). */
  count: number;
  /** The edge enters a cut node: gradient does not flow back along it. */
  cut: boolean;
}

export interface VisibleGraph {
  items: VisibleItem[];
  edges: VisibleEdge[];
  /** Expanded containers that are drawn as clusters, parent before child; `series`: the series a call belongs to. */
  clusters: { id: string; parent: string | null; series?: string }[];
  /** Tape node id, or container id, to the item drawn for it. */
  repOf: (id: string) => string;
}

export const moduleId = (path: string) => `m:${path}`;
const groupId = (scope: string, group: string) => `g:${scope}\u0000${group}`;

export const shapeText = (shape: number[]) => (shape.length ? shape.join("×") : "scalar");

/**
 * A node's module scope with the call of each part, "cell#5.lin#6" (a part without a call record is
 * bare): one call of a module is one scope, so step over runs through the rest of this call, not into
 * the next call of the same module (workbench/viz/align.py `scope_key`).
 */
export const scopeKey = (n: TapeNode) => {
  if (!n.scope || !n.calls) return n.scope;
  return n.scope.split(".").map((p, k) => (n.calls![k] ?? null) === null ? p : `${p}#${n.calls![k]}`).join(".");
};

/** The static part of the model: containers and each node's chain of containers (outermost first). */
export class TapeModel {
  readonly nodes = new Map<string, TapeNode>();
  readonly containers = new Map<string, Container>();
  /** Node id -> container ids from outermost to innermost. */
  readonly chain = new Map<string, string[]>();

  constructor(readonly snapshot: Snapshot) {
    for (const n of snapshot.nodes) this.nodes.set(n.id, n);
    const types = new Map(snapshot.modules.map((m) => [m.path, m.type]));
    const last = (p: string) => p.slice(p.lastIndexOf(".") + 1);
    // First pass: the distinct calls of every scope part under each parent call. A part called
    // more than once there becomes a series of calls; called once, it is a plain module box.
    const callsUnder = new Map<string, Set<number>>();
    const rawChain = (n: TapeNode) => {
      const parts = n.scope ? n.scope.split(".") : [];
      let raw = "";
      return parts.map((_, k) => {
        const p = parts.slice(0, k + 1).join("."), cid = n.calls?.[k] ?? null;
        const under = `${raw}/${p}`;
        raw = `${under}@${cid ?? "*"}`;
        return { p, cid, under };
      });
    };
    for (const n of snapshot.nodes) for (const lv of rawChain(n)) {
      if (lv.cid === null) continue;
      let set = callsUnder.get(lv.under);
      if (!set) callsUnder.set(lv.under, (set = new Set()));
      set.add(lv.cid);
    }
    const add = (id: string, kind: Container["kind"], path: string, label: string, type: string, parent: string | null) => {
      if (!this.containers.has(id)) this.containers.set(id, { id, kind, path, label, type, parent, members: [] });
    };
    // Second pass: each node's containers, outermost first.
    for (const n of snapshot.nodes) {
      const c: string[] = [];
      let ctx = "";
      for (const { p, cid, under } of rawChain(n)) {
        const parent = c.length ? c[c.length - 1] : null;
        const calls = callsUnder.get(under);
        // A named part of a module that is not a module itself (an RNN's "layer0", "step"): "GRU step".
        const owner = c.length ? this.containers.get(c[c.length - 1])?.type : undefined;
        const type = types.get(p) ?? (owner && owner !== "Module" ? `${owner.split(" ")[0]} ${last(p).replace(/\d+$/, "")}` : "Module");
        if (calls && calls.size > 1) {
          const sid = `s:${p}${ctx}`;
          add(sid, "series", p, `${last(p)} ×${calls.size}`, `${type} · series of ${calls.size} calls`, parent);
          c.push(sid);
          if (cid === null) break; // a parameter of the repeated module: shared by every call
          const order = [...calls].sort((a, b) => a - b).indexOf(cid);
          ctx = `${ctx}|${p}#${cid}`;
          const mid = `m:${p}${ctx}`;
          add(mid, "module", p, `${p} · call ${order + 1}/${calls.size}`, type, sid);
          c.push(mid);
        } else {
          const mid = moduleId(p) + ctx;
          add(mid, "module", p, p, type, parent);
          c.push(mid);
        }
      }
      if (n.group !== null) {
        const gid = groupId(n.scope, n.group) + ctx;
        const label = n.group.split("#")[0];
        add(gid, "group", n.scope, label, "composite op", c.length ? c[c.length - 1] : null);
        c.push(gid);
      }
      this.chain.set(n.id, c);
      for (const cid of c) this.containers.get(cid)!.members.push(n.id);
    }
    // Modules that recorded no node (e.g. a Dropout in eval mode) would only draw empty boxes.
    for (const [id, c] of this.containers) if (c.members.length === 0) this.containers.delete(id);
  }

  /** Where a node ran, as its box says: "cell · call 3/8" inside one call of a repeated module, else its scope. */
  where(id: string): string {
    const n = this.nodes.get(id);
    if (!n) return "";
    const box = [...(this.chain.get(id) ?? [])].reverse().map((c) => this.containers.get(c)!).find((c) => c.kind !== "group");
    return box && box.kind === "module" && box.path === n.scope ? box.label : n.scope;
  }

  /** Container ids from outermost to innermost that hold `id` (a node or a container). */
  ancestors(id: string): string[] {
    const c = this.chain.get(id);
    if (c) return c;
    const out: string[] = [];
    for (let p = this.containers.get(id)?.parent ?? null; p; p = this.containers.get(p)?.parent ?? null) out.unshift(p);
    return out;
  }

  /**
   * What is drawn when exactly the containers in `expanded` are open. An open series draws no box of
   * its own: its calls are boxes beside whatever runs between them in the parent (one box around them
   * all would have to hold those nodes too, and the second call's input would run back up into it), and
   * the parameters its calls share are drawn once, in the parent.
   */
  visible(expanded: ReadonlySet<string>): VisibleGraph {
    const rep = new Map<string, string>();
    const items: VisibleItem[] = [];
    const clusters: VisibleGraph["clusters"] = [];
    const seen = new Set<string>();
    const place = (id: string, chain: string[], type: "node" | "box") => {
      let cluster: string | null = null, series: string | undefined;
      for (const cid of chain) {
        if (!expanded.has(cid)) {
          rep.set(id, cid);
          if (!seen.has(cid)) {
            seen.add(cid);
            items.push({ id: cid, type: "box", cluster });
          }
          return;
        }
        if (this.containers.get(cid)!.kind === "series") {
          series = cid;
          continue;
        }
        if (!seen.has(cid)) {
          seen.add(cid);
          clusters.push(series ? { id: cid, parent: cluster, series } : { id: cid, parent: cluster });
        }
        cluster = cid;
        series = undefined;
      }
      rep.set(id, id);
      items.push({ id, type, cluster });
    };
    for (const n of this.snapshot.nodes) place(n.id, this.chain.get(n.id)!, "node");

    const edges: VisibleEdge[] = [];
    const byPair = new Map<string, VisibleEdge>();
    for (const e of this.snapshot.edges) {
      const s = rep.get(e.source), t = rep.get(e.target);
      if (s === undefined || t === undefined || s === t) continue;
      const key = `${s}\u0000${t}`;
      const cut = this.nodes.get(e.target)?.kind === "cut";
      const known = byPair.get(key);
      if (known) {
        known.count++;
        known.cut = known.cut || cut;
        continue;
      }
      const ve: VisibleEdge = { source: s, target: t, label: e.shape.length ? shapeText(e.shape) : "", index: e.index, count: 1, cut };
      byPair.set(key, ve);
      edges.push(ve);
    }
    const repOf = (id: string) => {
      const r = rep.get(id);
      if (r !== undefined) return r;
      // A container: its own box if visible, else the box of its outermost collapsed ancestor.
      for (const a of [...this.ancestors(id), id]) if (!expanded.has(a)) return a;
      return id;
    };
    return { items, edges, clusters, repOf };
  }

  /** Case-insensitive substring search over name, op, scope and parameter path. */
  search(query: string, limit = 50): TapeNode[] {
    const q = query.trim().toLowerCase();
    if (!q) return [];
    const out: TapeNode[] = [];
    for (const n of this.snapshot.nodes) {
      const hay = `${n.name}\u0000${n.op}\u0000${n.scope}\u0000${n.param ?? ""}\u0000${n.group ?? ""}`.toLowerCase();
      if (hay.includes(q)) {
        out.push(n);
        if (out.length >= limit) break;
      }
    }
    return out;
  }
}
