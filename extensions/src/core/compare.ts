// Two tapes in one view (wb.viz.compare): the marks of added and removed nodes, the header with the
// counts, and the a | b table of the selected node. The colouring by ratio is the overlay's.
import { h } from "./dom";
import { fmt } from "./format";
import { shapeText } from "./graph-model";
import type { Comparison, Snapshot, Summary, TapeNode } from "./types";

export interface DiffBadge { text: string; cls: string; say: string }

type Side = Comparison["a"]["nodes"][string] | undefined;

/** Why a ratio b/a is what it is, in words: "∞ (0 in a)", "– (NaN in b)". */
export function ratioText(r: number | null | undefined, a: Summary | null | undefined, b: Summary | null | undefined): string {
  const why = (s: Summary | null | undefined, side: string) =>
    !s ? `not recorded in ${side}` : s.nan || s.inf ? `${s.nan ? "NaN" : "Inf"} in ${side}` : s.norm === null ? `no norm in ${side}` : null;
  if (r === null || r === undefined) {
    const w = why(a, "a") ?? why(b, "b");
    if (w) return `– (${w})`;
    // measure values are JSON numbers, so an infinite ratio arrives as null: the norms tell
    if (a!.norm === 0) return b!.norm === 0 ? "– (0 in both)" : "∞ (0 in a)";
    return "–";
  }
  if (r === 0) return "0 (0 in b)";
  return `${fmt(r)}×`;
}

export class CompareView {
  readonly cmp: Comparison;
  readonly #nodes: Map<string, TapeNode>;

  constructor(readonly snapshot: Snapshot & { compare: Comparison }) {
    this.cmp = snapshot.compare;
    this.#nodes = new Map(snapshot.nodes.map((n) => [n.id, n]));
  }

  /** The marks of a drawn item: its own diff, or for a collapsed box how many of its nodes were added/removed. */
  badges(id: string, members: string[] | null): DiffBadge[] {
    if (!members) {
      const d = this.#nodes.get(id)?.diff;
      return d === "added" ? [{ text: "+ added", cls: "wb-badge-added", say: "added: only in b" }]
        : d === "removed" ? [{ text: "− removed", cls: "wb-badge-removed", say: "removed: only in a" }] : [];
    }
    let added = 0, removed = 0;
    for (const m of members) {
      const d = this.#nodes.get(m)?.diff;
      if (d === "added") added++;
      else if (d === "removed") removed++;
    }
    const out: DiffBadge[] = [];
    if (added) out.push({ text: `+${added}`, cls: "wb-badge-added", say: `${added} added inside` });
    if (removed) out.push({ text: `−${removed}`, cls: "wb-badge-removed", say: `${removed} removed inside` });
    return out;
  }

  /** A drawn item's diff: the node's own, or a box's when every node inside was added (or removed). */
  diffOf(id: string, members: string[] | null): "added" | "removed" | null {
    if (!members) return this.#nodes.get(id)?.diff ?? null;
    const first = members.length ? this.#nodes.get(members[0])?.diff ?? null : null;
    return first && members.every((m) => this.#nodes.get(m)?.diff === first) ? first : null;
  }

  /** The class a drawn item gets: its outline style (bold for added, dashed and faded for removed). */
  nodeClass(id: string, members: string[] | null): string {
    const d = this.diffOf(id, members);
    return d ? ` wb-diff-${d}` : "";
  }

  /**
   * "a: <title> vs b: <title>", the counts (each a button that walks through its nodes) and what the
   * marks mean, said in words.
   */
  header(reveal: (id: string) => void): HTMLElement {
    const { a, b, counts, factor } = this.cmp;
    const walker = (label: string, ids: string[], cls: string) => {
      const btn = h("button", { type: "button", class: `wb-link ${cls}`, disabled: ids.length === 0,
        title: ids.length ? `Show the next of them (${ids.length})` : "none" }, label);
      let next = 0;
      btn.addEventListener("click", () => {
        if (!ids.length) return;
        reveal(ids[next % ids.length]);
        next++;
      });
      return btn;
    };
    const of = (d: string) => this.snapshot.nodes.filter((n) => n.diff === d).map((n) => n.id);
    const changed = this.snapshot.nodes.filter((n) => !n.diff && this.#changed(n.id)).map((n) => n.id);
    return h("div", { class: "wb-bar wb-compare-bar", role: "note", "aria-label": "comparison" },
      h("span", { class: "wb-cmp-side" }, h("strong", {}, "a: "), a.title), h("span", { class: "wb-muted" }, "vs"),
      h("span", { class: "wb-cmp-side" }, h("strong", {}, "b: "), b.title), h("span", { class: "wb-muted" }, "·"),
      walker(`${counts.added} added`, of("added"), "wb-cmp-added"), h("span", { class: "wb-muted" }, "·"),
      walker(`${counts.removed} removed`, of("removed"), "wb-cmp-removed"), h("span", { class: "wb-muted" }, "·"),
      walker(`${counts.changed} changed by > ${factor}×`, changed, "wb-cmp-changed"),
      h("span", { class: "wb-cmp-legend wb-muted" },
        h("span", { class: "wb-cmp-key wb-cmp-key-added" }, "+ added"), " only in b (bold outline) ",
        h("span", { class: "wb-cmp-key wb-cmp-key-removed" }, "− removed"), " only in a (dashed, faded)"),
    );
  }

  #ratio(key: string, id: string): number | null {
    return this.snapshot.measures?.[key]?.values[id] ?? null;
  }

  /** What Python counted as changed: the gradient ratio (else the value ratio) beyond the factor, ∞ included. */
  #changed(id: string): boolean {
    const A = this.cmp.a.nodes[id], B = this.cmp.b.nodes[id];
    if (!A || !B) return false;
    const inf = (w: "grad" | "value") => A[w]?.norm === 0 && (B[w]?.norm ?? 0) > 0 && !B[w]!.nan && !B[w]!.inf;
    const g = this.#ratio("grad_norm_ratio", id), v = this.#ratio("value_norm_ratio", id);
    const x = g ?? (inf("grad") ? Infinity : null) ?? v ?? (inf("value") ? Infinity : null);
    return x !== null && (x > this.cmp.factor || x < 1 / this.cmp.factor);
  }

  /** The selected node on both sides: shape, the norms and statistics of value and gradient, and b/a. */
  panel(id: string): HTMLElement | null {
    const node = this.#nodes.get(id);
    if (!node) return null;
    const A: Side = this.cmp.a.nodes[id], B: Side = this.cmp.b.nodes[id];
    const cell = (side: Side, f: (s: NonNullable<Side>) => string) => h("td", {}, side ? f(side) : "—");
    const stat = (which: "value" | "grad", k: "norm" | "mean" | "std" | "min" | "max") => (s: NonNullable<Side>) => fmt(s[which]?.[k]);
    const bad = (which: "value" | "grad") => (s: NonNullable<Side>) => {
      const x = s[which];
      return !x ? "–" : x.nan || x.inf ? `⚠ ${x.nan} NaN, ${x.inf} Inf` : "0";
    };
    const row = (label: string, f: (s: NonNullable<Side>) => string, ratio: string | null = null) =>
      h("tr", {}, h("th", {}, label), cell(A, f), cell(B, f), h("td", { class: "wb-cmp-ratio" }, ratio ?? ""));
    const say = node.diff === "added" ? "+ added: only in b" : node.diff === "removed" ? "− removed: only in a" : "in a and b";
    return h("section", { class: "wb-cmp-panel", "aria-label": "a | b" },
      h("h4", {}, "a | b ", h("span", { class: `wb-cmp-tag${node.diff ? ` wb-cmp-tag-${node.diff}` : ""}` }, say)),
      h("table", { class: "wb-stats wb-cmp-table" },
        h("tr", {}, h("th", {}, ""), h("th", { title: this.cmp.a.title }, "a"), h("th", { title: this.cmp.b.title }, "b"), h("th", {}, "b/a")),
        row("shape", (s) => `${shapeText(s.shape)} ${s.dtype}`),
        row("‖value‖", stat("value", "norm"), A && B ? ratioText(this.#ratio("value_norm_ratio", id), A.value, B.value) : null),
        row("mean", stat("value", "mean")),
        row("std", stat("value", "std")),
        row("NaN/Inf", bad("value")),
        row("‖grad‖", stat("grad", "norm"), A && B ? ratioText(this.#ratio("grad_norm_ratio", id), A.grad, B.grad) : null),
        row("grad mean", stat("grad", "mean")),
        row("grad max", stat("grad", "max")),
        row("NaN/Inf", bad("grad")),
      ),
      h("p", { class: "wb-muted" }, node.diff === "removed" ? "Below: the node as a recorded it." : "Below: the node as b recorded it."),
    );
  }
}

/** The comparison of a snapshot made by wb.viz.compare, or null for an ordinary snapshot. */
export function compareView(snapshot: Snapshot): CompareView | null {
  return snapshot.compare ? new CompareView(snapshot as Snapshot & { compare: Comparison }) : null;
}
