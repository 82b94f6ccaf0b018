// The side panel: details of the selected node or module, and the current backward step.
import { h } from "./dom";
import { fmt, health, inlineValues, siteLine } from "./format";
import type { Container, TapeModel } from "./graph-model";
import { shapeText } from "./graph-model";
import { histogram } from "./histogram";
import { formatValue } from "./overlay";
import type { StepRecord, Summary, TapeNode } from "./types";

const CUT_TEXT: Record<string, string> = {
  no_grad: "computed under no_grad()",
  detach: "detached with .detach()",
  numpy: "went through NumPy / .item()",
  not_requires_grad: "a tensor without requires_grad",
};

/** A health icon next to the colour, so NaN/Inf never depend on colour alone. */
export function healthMark(s: Summary | null | undefined): HTMLElement | null {
  const hh = health(s);
  if (hh === "ok") return null;
  const text = hh === "nan" ? `⚠ ${s!.nan} NaN` : `⚠ ${s!.inf} Inf`;
  return h("span", { class: `wb-bad-${hh}`, role: "img", "aria-label": text }, ` ${text}`);
}

/** How to get what a summary block shows when the snapshot has none. */
export const HOW_TO_RECORD = {
  value: "not recorded: run the forward pass under `with wb.viz.record():` to keep every op's value",
  gradient: "not recorded: wb.viz.show(loss, trace=True) or wb.viz.debug(loss) records every gradient",
  leafGrad: "no .grad yet: call loss.backward() first, or use wb.viz.show(loss, trace=True)",
};

export function summaryBlock(title: string, sum: Summary | null | undefined, missing = "none"): HTMLElement {
  const box = h("div", { class: "wb-summary" }, h("h4", {}, title, healthMark(sum)));
  if (!sum) {
    box.append(h("div", { class: "wb-muted wb-missing" }, missing));
    return box;
  }
  if (sum.numel === 1 && sum.values?.length === 1) {
    // one number: the number, not a table of its statistics
    box.append(h("div", { class: "wb-scalar" }, h("span", { class: "wb-code" }, fmt(sum.values[0])), h("span", { class: "wb-muted" }, ` ${sum.dtype}`)));
    return box;
  }
  const row = (...cells: [string, string][]) => h("tr", {}, ...cells.flatMap(([k, v]) => [h("th", {}, k), h("td", {}, v)]));
  box.append(
    h("table", { class: "wb-stats" },
      row(["shape", shapeText(sum.shape)], ["dtype", sum.dtype]),
      row(["min", fmt(sum.min)], ["max", fmt(sum.max)]),
      row(["mean", fmt(sum.mean)], ["std", fmt(sum.std)]),
      row(["norm", fmt(sum.norm)], ["numel", String(sum.numel)]),
      row(["NaN", String(sum.nan)], ["Inf", String(sum.inf)]),
    ),
  );
  const inline = inlineValues(sum, 16);
  if (inline) box.append(h("pre", { class: "wb-values" }, inline));
  if (sum.numel > 1 || sum.hist === null) box.append(histogram(sum));
  return box;
}

function dl(rows: [string, string | Node | null][]): HTMLElement {
  const out = h("dl");
  for (const [k, v] of rows) if (v !== null && v !== "") out.append(h("dt", {}, k), h("dd", {}, v));
  return out;
}

export const siteText = (n: TapeNode) => (n.site ? siteLine(n.site) : null);

/**
 * The boxes around a node, outermost first ("cell ×8 › cell · call 3/8"), each a button that closes it
 * (or opens it, when closed): how a series opened into its calls is closed again with the mouse.
 */
export function crumbs(model: TapeModel, id: string, isOpen: (box: string) => boolean, toggle: (box: string) => void): HTMLElement | null {
  const chain = model.ancestors(id);
  if (!chain.length) return null;
  const nav = h("nav", { class: "wb-crumbs", "aria-label": "inside" });
  chain.forEach((c, i) => {
    const box = model.containers.get(c)!, open = isOpen(c);
    const b = h("button", { type: "button", class: "wb-link", title: `${open ? "close" : "open"} ${box.label}` }, box.label);
    b.addEventListener("click", () => toggle(c));
    if (i) nav.append(" › ");
    nav.append(b);
  });
  return nav;
}

/** `where`: the node's module call as its box says ("cell · call 3/8"), its scope by default. */
export function nodeDetails(n: TapeNode, grad: Summary | null, where = n.scope, inside: HTMLElement | null = null): HTMLElement {
  return h("section", { "aria-label": "selected node" },
    h("h3", {}, n.param ?? n.name, " ", h("span", { class: "wb-muted" }, n.kind)),
    inside,
    dl([
      ["op", n.op],
      ["scope", where || "(top level)"],
      ["group", n.group ? n.group.split("#")[0] : null],
      ["param", n.param],
      ["source", siteText(n)],
      ["shape", `${shapeText(n.shape)} ${n.dtype} on ${n.device}`],
      ["cut", n.cut ? `✂ ${CUT_TEXT[n.cut.reason] ?? n.cut.reason}: ${n.cut.detail}` : null],
      // the cost fields (docs/cost.md), when the snapshot has them
      ["FLOPs", n.flops != null ? formatValue(n.flops, "FLOP") : null],
      ["forward", n.forward_us != null ? formatValue(n.forward_us, "us") : null],
      ["backward", n.backward_us != null ? formatValue(n.backward_us, "us") : null],
    ]),
    n.saved.length
      ? h("div", {}, h("h4", {}, "saved for backward", n.saved_bytes ? ` · ${formatValue(n.saved_bytes, "B")}` : ""),
        h("ul", {}, ...n.saved.map((sv, i) => {
          const bytes = n.saved_tensors?.[i]?.bytes;
          return h("li", { class: "wb-code" }, `${sv.name}: ${shapeText(sv.shape)} ${sv.dtype}` + (bytes != null ? ` (${formatValue(bytes, "B")})` : ""));
        })))
      : null,
    summaryBlock("value", n.value, HOW_TO_RECORD.value),
    n.kind === "param" || n.kind === "leaf" ? summaryBlock(".grad", grad, HOW_TO_RECORD.leafGrad)
      : summaryBlock("gradient", grad, n.kind === "op" || n.kind === "output" ? HOW_TO_RECORD.gradient : "no gradient flows to this input"),
  );
}

/**
 * A module or composite box: what it holds, and a link to every node inside with NaN/Inf, so a
 * poisoned module leads straight to the op that went wrong.
 */
export function containerDetails(c: Container, model: TapeModel, reveal: (id: string) => void): HTMLElement {
  const bad = c.members.map((id) => model.nodes.get(id)!).filter((n) => health(n.value, n.grad) !== "ok");
  return h("section", { "aria-label": "selected module" },
    h("h3", {}, c.label, " ", h("span", { class: "wb-muted" }, c.type)),
    dl([
      ["kind", c.kind === "module" ? "module call" : c.kind === "series" ? "repeated calls of one module" : "composite op"],
      ["scope", c.path || "(top level)"],
      ["nodes", String(c.members.length)],
    ]),
    bad.length
      ? h("div", {}, h("h4", {}, `NaN/Inf inside (${bad.length})`), h("ul", {}, ...bad.slice(0, 20).map((n) => {
        const link = h("button", { type: "button", class: "wb-link" }, n.param ?? n.name, healthMark(health(n.value) !== "ok" ? n.value : n.grad));
        link.addEventListener("click", () => reveal(n.id));
        return h("li", {}, link);
      })))
      : null,
    h("p", { class: "wb-muted" }, "Click the box or press Enter to open it."),
  );
}

export function stepDetails(step: StepRecord, total: number, model: TapeModel, classroom: boolean, pausedReason: string | null,
  inside: HTMLElement | null = null): HTMLElement {
  const n = model.nodes.get(step.node);
  const label = (id: string) => {
    const t = model.nodes.get(id);
    return t ? t.param ?? t.name : id;
  };
  const sec = h("section", { class: "wb-step-current", "aria-label": "current backward step" },
    h("h3", {}, `Step ${step.index + 1} / ${total} · ${n ? n.name : step.node}`),
    inside,
  );
  // classroom mode: the chain rule of this step comes first, the numbers below it
  if (classroom && step.derivation) sec.append(h("pre", { class: "wb-derivation", "aria-label": "derivation" }, step.derivation));
  if (pausedReason && pausedReason !== "end") sec.append(h("p", { class: "wb-paused" }, pausedReason === "breakpoint" ? "● paused at your breakpoint" : `‖ paused: ${pausedReason}`));
  const site = n ? siteText(n) : null;
  if (site && !pausedReason?.includes(site)) sec.append(h("div", { class: "wb-muted" }, site));
  step.grad_outputs.forEach((g, i) => sec.append(summaryBlock(step.grad_outputs.length > 1 ? `incoming gradient ${i}` : "incoming gradient", g)));
  for (const gi of step.grad_inputs) sec.append(summaryBlock(`→ input ${gi.index} (${label(gi.target)})`, gi.grad));
  for (const leaf of step.leaves) {
    sec.append(summaryBlock(`${label(leaf.node)}.grad before`, leaf.before), summaryBlock(`${label(leaf.node)}.grad after`, leaf.after));
  }
  return sec;
}
