// The tape viewer: toolbar, SVG graph, details panel, debugger controls, status line.
import { type CompareView, compareView } from "./compare";
import { type DebugController, ReplayController } from "./debug-controller";
import { containerDetails, crumbs, nodeDetails, stepDetails } from "./details";
import { h, s } from "./dom";
import { fmt, health, inlineValues } from "./format";
import { TapeModel, type VisibleGraph, scopeKey, shapeText } from "./graph-model";
import type { Box, LayoutInput, LayoutResult } from "./layout";
import { type LayoutFn, workerLayout } from "./layout-client";
import { Minimap } from "./minimap";
import { type ColourScale, type Domain, type Measure, type Tint, colourScale, legend, measureFor, measuresOf, aggregate, tintCss, tintRgba, topN, topTable } from "./overlay";
import { LOD, paintOverview } from "./overview";
import { PanZoom } from "./panzoom";
import { Stepper } from "./stepper";
import { Timeline } from "./timeline";
import { ensureStyle } from "./style";
import { type Snapshot, type Summary, parseSnapshot } from "./types";

export interface ViewerOptions {
  /** Layout engine; defaults to the shared Web Worker. Tests pass computeLayout directly. */
  layout?: LayoutFn;
  /** Debugger backend; defaults to client-side replay when the snapshot has a trace. */
  controller?: DebugController | null;
  /** Height of the viewer in pixels. */
  height?: number;
  /** Classroom mode at the start (each step's derivation first); defaults to the trace's flag, else off. */
  classroom?: boolean;
}

export interface ViewerHandle {
  root: HTMLElement;
  /** Resolves when the current layout has been drawn. */
  ready(): Promise<void>;
  toggle(containerId: string): Promise<void>;
  reveal(nodeId: string): Promise<void>;
  select(id: string | null): void;
  fit(): void;
  /**
   * Colours the nodes by a measure (null: no colouring), without a relayout; updates the legend and
   * the top-N table. `values`, when given, replace the measure's per-node values (the watch slider).
   */
  setOverlay(key: string | null, values?: Map<string, number | null>, domain?: Domain): void;
  /** The measure the nodes are coloured by now (null: none). */
  overlayKey(): string | null;
  destroy(): void;
}

interface Measured { w: number; h: number; title: string; sub: string; inline: string | null; badges: { text: string; cls: string; say?: string }[]; tip: string }

const CHAR_W = 7.4, SUB_W = 6.7, PAD = 10, GUTTER = 14, LINE = 15;
/** Widest node box; longer text ends in an ellipsis and the whole text is the box's tooltip. */
const MAX_W = 300;
/** Widest open box header; a longer one ends in an ellipsis. */
const HEAD_W = 260;

/** `text` cut to `chars` characters, the last one an ellipsis. */
export function ellipsize(text: string, chars: number): string {
  return text.length <= chars ? text : `${text.slice(0, Math.max(1, chars - 1))}…`;
}
/** Distinguishes the arrow markers of several viewers on one page (ids are document-wide). */
let viewers = 0;

export function render(el: HTMLElement, data: unknown, options: ViewerOptions = {}): ViewerHandle {
  return new Viewer(el, parseSnapshot(data), options).handle;
}

class Viewer {
  readonly model: TapeModel;
  readonly handle: ViewerHandle;
  readonly #root: HTMLElement;
  readonly #canvas: HTMLElement;
  readonly #viewport: SVGGElement;
  readonly #panel: HTMLElement;
  readonly #status: HTMLElement;
  readonly #search: HTMLInputElement;
  readonly #results: HTMLUListElement;
  readonly #pz: PanZoom;
  readonly #layoutFn: LayoutFn;
  readonly #ctrl: DebugController | null;
  readonly #expanded = new Set<string>();
  #visible!: VisibleGraph;
  #layout: LayoutResult | null = null;
  #drawn = Promise.resolve();
  #generation = 0;
  /** Elements currently in the DOM, by item id (all of them unless the graph is culled). */
  #els = new Map<string, SVGGElement>();
  /** Every item element built since the last layout, so panning a culled graph reuses them. */
  readonly #cache = new Map<string, SVGGElement>();
  #measured = new Map<string, Measured>();
  #paintedKey = "";
  #paintQueued = false;
  readonly #overview: HTMLCanvasElement;
  readonly #minimap: Minimap;
  /** Where the root sits in the page while it is maximized on <body>. */
  #home: Comment | null = null;
  readonly #arrow: string;
  #focusId: string | null = null;
  #selected: string | null = null;
  #matches = new Set<string>();
  #resultIds: string[] = [];
  #activeResult = -1;
  #classroom: boolean;
  /** The key and mouse help is open in the panel. */
  #help = false;
  /** Nodes a note is about (where a NaN started): marked on the graph. */
  readonly #noted = new Set<string>();
  #firstLayout = true;
  #dbg: { counter: HTMLElement; paused: HTMLElement; banner: HTMLElement; buttons: HTMLButtonElement[] } | null = null;
  #unsubscribe: (() => void) | null = null;
  /** Set when the snapshot compares two tapes (wb.viz.compare): added/removed marks, header, a | b panel. */
  readonly #cmp: CompareView | null;
  /** Every measure the nodes can be coloured by, and the one they are (with its scale and each drawn item's tint). */
  readonly #measures: Map<string, Measure>;
  #ov: { m: Measure; sc: ColourScale; tints: Map<string, Tint | null> } | null = null;
  #ovKey: string | null = null;
  readonly #ovSelect: HTMLSelectElement | null = null;
  readonly #legendBar: HTMLElement;
  /** The legend's place in its row, after "Colour by". */
  readonly #legend: HTMLElement;
  #topEl: HTMLElement | null = null;

  constructor(host: HTMLElement, readonly snapshot: Snapshot, opts: ViewerOptions) {
    ensureStyle(host.ownerDocument);
    this.model = new TapeModel(snapshot);
    this.#classroom = opts.classroom ?? snapshot.trace?.classroom ?? false;
    for (const n of snapshot.notes ?? []) if (n.node) this.#noted.add(n.node);
    this.#cmp = compareView(snapshot);
    this.#layoutFn = opts.layout ?? workerLayout;
    this.#ctrl = opts.controller !== undefined ? opts.controller
      : snapshot.trace ? new ReplayController(new Stepper(snapshot.trace.steps, (id) => { const n = this.model.nodes.get(id); return n ? scopeKey(n) : ""; })) : null;

    this.#search = h("input", { class: "wb-search", type: "search", placeholder: "Search nodes  ( / )", title: "Search by op, scope or parameter (/)", "aria-label": "Search nodes by op, scope or parameter",
      role: "combobox", "aria-expanded": "false", "aria-autocomplete": "list", spellcheck: "false" });
    this.#results = h("ul", { class: "wb-results", role: "listbox", hidden: true, "aria-label": "matching nodes" });
    const btn = (label: string, key: string | null, title: string, onClick: () => void) => {
      const b = h("button", { class: "wb-btn", type: "button", title: key ? `${title} (${key})` : title, "aria-keyshortcuts": key }, label, key ? h("kbd", {}, key) : null);
      b.addEventListener("click", () => onClick());
      return b;
    };
    this.#measures = measuresOf(snapshot);
    if (this.#measures.size) {
      this.#ovSelect = h("select", { class: "wb-select", "aria-label": "Colour the nodes by", title: "Colour the nodes by a measure" },
        h("option", { value: "" }, "none"), ...[...this.#measures.values()].map((m) => h("option", { value: m.key }, m.label)));
      this.#ovSelect.addEventListener("change", () => this.#setOverlay(this.#ovSelect!.value || null));
    }
    // "Colour by" opens the legend's row, not the toolbar: the toolbar then fits one row at a
    // notebook's width (~900 px); the row is there whenever the snapshot has a measure
    this.#legend = h("span", { class: "wb-legend-slot" });
    this.#legendBar = h("div", { class: "wb-bar wb-legend-bar", hidden: !this.#ovSelect },
      this.#ovSelect ? h("label", { class: "wb-colour-by" }, h("span", { class: "wb-muted" }, "Colour by"), this.#ovSelect) : null, this.#legend);
    const bar = h("div", { class: "wb-bar" },
      h("span", { class: "wb-title", title: snapshot.title }, snapshot.title || "autograd tape"),
      h("span", { class: "wb-search-wrap" }, this.#search, this.#results),
      btn("Fit", "f", "Fit the graph to the view", () => this.#fit(true)),
      btn("Expand all", null, "Open every module", () => this.#setExpanded([...this.model.containers.keys()])),
      btn("Collapse all", null, "Close every module", () => this.#setExpanded([])),
      btn("⤢", "m", "Maximize: the whole window for the graph (again, or Esc, to restore)", () => this.#maximize()),
      btn("?", null, "How to move around", () => {
        this.#help = !this.#help;
        this.#renderPanel();
      }),
    );
    this.#canvas = h("div", { class: "wb-canvas" });
    this.#viewport = s("g", { class: "wb-viewport" });
    const arrow = `wb-arrow-${++viewers}`;
    const svg = s("svg", { class: "wb-graph", role: "tree", "aria-label": "graph of recorded operations" },
      s("defs", {}, s("marker", { id: arrow, viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
        s("path", { d: "M0,0 L10,5 L0,10 z", class: "wb-arrow" }))),
      this.#viewport);
    this.#arrow = `url(#${arrow})`;
    this.#overview = h("canvas", { class: "wb-overview", hidden: true, "aria-hidden": "true" });
    this.#minimap = new Minimap((x, y) => {
      const { w, h } = this.#pz.size(), k = this.#pz.t.k;
      this.#pz.set({ k, x: w / 2 - x * k, y: h / 2 - y * k });
    });
    this.#canvas.append(svg, this.#overview, this.#minimap.el);
    this.#panel = h("aside", { class: "wb-panel", "aria-label": "details" });
    this.#status = h("div", { class: "wb-status", role: "status", "aria-live": "polite" });
    this.#root = h("div", {
      class: "wb-root", tabindex: 0, "data-lm-suppress-shortcuts": "true", role: "application",
      "aria-roledescription": "autograd tape viewer", "aria-label": `Autograd tape: ${snapshot.title}`,
      "aria-keyshortcuts": "/ f m ArrowUp ArrowDown ArrowLeft ArrowRight Enter Escape" + (this.#ctrl ? " n o c r b" : ""),
    });
    this.#root.style.height = `${opts.height ?? 520}px`;
    this.#root.append(bar, this.#legendBar);
    const notes = this.#notes();
    if (notes) this.#root.append(notes);
    if (this.#cmp) this.#root.append(this.#cmp.header((id) => void this.#reveal(id)));
    if (this.#ctrl) this.#root.append(this.#debuggerBar(btn));
    this.#root.append(h("div", { class: "wb-main" }, this.#canvas, this.#panel), this.#status);
    host.replaceChildren(this.#root);
    this.#pz = new PanZoom(this.#canvas, this.#viewport, this.#root, () => {
      const { w, h } = this.#pz.size();
      this.#minimap.view(this.#pz.t, w, h);
      this.#schedulePaint();
    });

    this.#pz.covered = () => {
      if (this.#minimap.el.hidden) return null;
      const c = this.#canvas.getBoundingClientRect(), m = this.#minimap.el.getBoundingClientRect();
      return m.width ? { x0: m.left - c.left, y0: m.top - c.top, x1: m.right - c.left, y1: m.bottom - c.top } : null;
    };
    this.#search.addEventListener("input", () => this.#onSearch());
    this.#canvas.addEventListener("click", (e) => this.#onClick(e));
    this.#root.addEventListener("keydown", (e) => this.#onKey(e));
    this.#results.addEventListener("mousedown", (e) => {
      const li = (e.target as Element).closest("li");
      if (li) {
        e.preventDefault();
        void this.#reveal(li.getAttribute("data-id")!);
      }
    });
    if (this.#ctrl) this.#unsubscribe = this.#ctrl.subscribe(() => this.#onDebug());
    // The root is user-resizable (CSS resize); a culled graph must draw what the new size shows.
    const resize = typeof ResizeObserver === "function" ? new ResizeObserver(() => this.#schedulePaint()) : null;
    resize?.observe(this.#canvas);

    this.handle = {
      root: this.#root,
      ready: () => this.#drawn,
      toggle: (id) => this.#toggle(id),
      reveal: (id) => this.#reveal(id),
      select: (id) => this.#select(id),
      fit: () => this.#fit(false),
      setOverlay: (key, values, domain) => this.#setOverlay(key, values, domain),
      overlayKey: () => this.#ovKey,
      destroy: () => {
        this.#generation++;
        resize?.disconnect();
        this.#home?.remove();
        this.#unsubscribe?.();
        this.#root.remove();
      },
    };
    const start = snapshot.overlay ?? null;
    // a watched run's steps: the slider sets the first colouring (the last step's) and every later one
    if (snapshot.series) this.#canvas.parentElement!.before(new Timeline(snapshot, this.handle).el);
    else if (start && this.#measures.has(start)) this.#setOverlay(start);
    else this.#renderPanel();
    this.#relayout();
  }

  // ---- overlay --------------------------------------------------------------------------------

  #setOverlay(key: string | null, values?: Map<string, number | null>, domain?: Domain) {
    if (key !== null) {
      let m = this.#measures.get(key);
      if (!m) {
        if (!values) throw new Error(`setOverlay: unknown measure ${JSON.stringify(key)}; known: ${[...this.#measures.keys()].join(", ") || "none"}`);
        m = measureFor(key, this.snapshot);
        this.#measures.set(key, m);
        this.#ovSelect?.append(h("option", { value: key }, m.label));
      }
      if (values) m.values = values;
      if (domain) m.domain = domain;
    }
    this.#ovKey = key;
    if (this.#ovSelect && this.#ovSelect.value !== (key ?? "")) this.#ovSelect.value = key ?? "";
    this.#computeOverlay();
    this.#tintAll();
    if (!this.#overview.hidden) this.#paint();
    this.#renderPanel();
    if (this.#ov) {
      const { m, sc } = this.#ov;
      this.#say(`Coloured by ${m.label}` + (sc.missing ? `; ${sc.missing} of ${this.#ov.tints.size} items n/a` : ""));
    } else this.#say("No colouring");
  }

  /** The tints of what is drawn now (a collapsed box shows its nodes' aggregate), the legend and the top N. */
  #computeOverlay() {
    const m = this.#ovKey !== null ? this.#measures.get(this.#ovKey) : undefined;
    if (!m || !this.#visible) {
      this.#ov = null;
      this.#topEl = null;
      this.#legend.replaceChildren();
      this.#root.classList.toggle("wb-ov-on", false);
      return;
    }
    const vals = new Map<string, number | null>();
    for (const it of this.#visible.items) {
      vals.set(it.id, it.type === "box" ? aggregate(m, this.model.containers.get(it.id)?.members ?? []) : m.values.get(it.id) ?? null);
    }
    const sc = colourScale(m.scale, vals.values(), m.domain);
    const tints = new Map<string, Tint | null>();
    for (const [id, v] of vals) tints.set(id, sc.tint(v));
    this.#ov = { m, sc, tints };
    this.#root.classList.toggle("wb-ov-on", true);
    this.#legend.replaceChildren(legend(m, sc, vals.size));
    const describe = (id: string) => {
      const n = this.model.nodes.get(id);
      return { name: n ? n.param ?? n.name : id, where: n ? this.model.where(id) : "" };
    };
    // Closed or opened by the user, it stays so while the step slider recolours; a compare view opens
    // it closed, so the selected node's a | b table below is in view without scrolling.
    const open = this.#topEl instanceof HTMLDetailsElement ? this.#topEl.open : !this.#cmp;
    this.#topEl = topTable(m, topN(m, 10), sc, describe, (id) => void this.#reveal(id, true), open);
    this.#markTopSelected();
  }

  #tint(id: string, g: SVGGElement) {
    const t = this.#ov ? this.#ov.tints.get(id) : undefined;
    g.classList.toggle("wb-ov-has", !!t);
    g.classList.toggle("wb-ov-na", t === null);
    if (t) g.style.setProperty("--wb-ov-fill", tintCss(t));
    else g.style.removeProperty("--wb-ov-fill");
  }

  #tintAll() {
    for (const [id, g] of this.#cache) this.#tint(id, g);
    this.#minimapMarks();
  }

  /** The minimap's colours (the overlay's) and rings: the selected node (brand colour) and the top-N rows, where they are drawn. */
  #minimapMarks() {
    if (!this.#layout || !this.#visible) return;
    const fills = this.#ov ? new Map<string, string>() : null;
    if (this.#ov) for (const [id, t] of this.#ov.tints) if (t) fills!.set(id, tintRgba({ rgb: t.rgb, mix: Math.max(t.mix, 45) }));
    // a node inside a collapsed module is drawn as its module's box
    const drawnAs = (id: string) => {
      if (this.#layout!.boxes[id]) return id;
      for (const it of this.#visible!.items) if (it.type === "box" && this.model.containers.get(it.id)?.members.includes(id)) return it.id;
      return null;
    };
    const css = getComputedStyle(this.#root);
    const rings: { id: string; css: string }[] = [];
    if (this.#ov) {
      const top = css.getPropertyValue("--wb-fg").trim() || "#222";
      for (const b of this.#topEl?.querySelectorAll(".wb-topn-row") ?? []) {
        const at = drawnAs(b.getAttribute("data-id")!);
        if (at) rings.push({ id: at, css: top });
      }
    }
    const sel = this.#selected !== null ? drawnAs(this.#selected) : null;
    if (sel) rings.push({ id: sel, css: css.getPropertyValue("--wb-brand").trim() || "#1976d2" });
    this.#minimap.setOverlay(fills, rings);
  }

  #markTopSelected() {
    this.#topEl?.querySelectorAll(".wb-topn-row").forEach((b) => b.setAttribute("aria-current", String(b.getAttribute("data-id") === this.#selected)));
  }

  /** The snapshot's notes (a NaN loss), each said once above the graph, with a link to its node. */
  #notes(): HTMLElement | null {
    const notes = this.snapshot.notes ?? [];
    if (!notes.length) return null;
    return h("div", { class: "wb-notes" }, ...notes.map((n) => {
      const show = n.node && this.model.nodes.has(n.node) ? h("button", { type: "button", class: "wb-link" }, "show the node") : null;
      show?.addEventListener("click", () => void this.#reveal(n.node!));
      return h("div", { class: `wb-note wb-note-${n.level}`, role: n.level === "error" ? "alert" : "note" },
        h("strong", {}, n.level === "error" ? "⚠ " : "ⓘ "), n.text, show ? " " : null, show);
    }));
  }

  // ---- debugger -------------------------------------------------------------------------------

  #debuggerBar(btn: (l: string, k: string | null, t: string, f: () => void) => HTMLButtonElement): HTMLElement {
    const c = this.#ctrl!;
    const buttons = [
      btn("↺ Restart", "r", "Back to before backward", () => c.restart()),
      btn("Step", "n", "Run the next backward step", () => c.step()),
      btn("Step over", "o", "Run the rest of the current module as one step", () => c.stepOver()),
      btn("Continue", "c", "Run to the next breakpoint, NaN/Inf, or the end", () => c.continue()),
    ];
    const counter = h("span", { class: "wb-counter", "aria-label": "backward step" });
    const paused = h("span", { class: "wb-paused" });
    const classroom = h("input", { type: "checkbox", class: "wb-classroom" });
    classroom.checked = this.#classroom;
    classroom.addEventListener("change", () => {
      this.#classroom = classroom.checked;
      this.#renderPanel();
      this.#say(`Classroom mode ${this.#classroom ? "on: each step shows its derivation first" : "off"}`);
    });
    const banner = h("div", { class: "wb-banner", role: "alert", hidden: true });
    this.#dbg = { counter, paused, banner, buttons };
    this.#updateDebugBar();
    const wrap = h("div", {},
      h("div", { class: "wb-bar", role: "toolbar", "aria-label": "backward debugger" },
        h("span", { class: "wb-muted" }, "backward:"), ...buttons, counter, paused,
        h("label", { class: "wb-muted wb-check", title: "Show the derivative rule applied at each step" }, classroom, "classroom")),
      banner);
    return wrap;
  }

  #updateDebugBar() {
    if (!this.#ctrl || !this.#dbg) return;
    const v = this.#ctrl.view();
    this.#dbg.counter.textContent = `${v.position} / ${v.total}`;
    // The state in a word; the reason is said once, in the step panel (warning colour), an error once in the banner.
    this.#dbg.paused.textContent = v.pausedReason === "end" ? "✓ done" : v.pausedReason ? "‖ paused" : "";
    this.#dbg.paused.classList.toggle("wb-done-label", v.pausedReason === "end");
    const message = v.error ?? v.notice;
    this.#dbg.banner.hidden = !message;
    this.#dbg.banner.textContent = message ? (v.error ? `✖ ${message}` : message) : "";
    this.#dbg.banner.classList.toggle("wb-banner-error", !!v.error);
    for (const b of this.#dbg.buttons) b.disabled = v.busy;
  }

  #onDebug() {
    this.#updateDebugBar();
    this.#refreshNodes();
    this.#renderPanel();
    const v = this.#ctrl!.view();
    if (v.current) {
      const node = this.model.nodes.get(v.current.node);
      const g = this.#gradOf(v.current.node);
      this.#say(`Step ${v.position} of ${v.total}: ${node?.name ?? v.current.node}` + (g?.norm != null ? `, gradient norm ${fmt(g.norm)}` : "") +
        (v.pausedReason && v.pausedReason !== "end" ? ", paused" : ""));
      const box = this.#layout?.boxes[this.#visible.repOf(v.current.node)];
      if (box) {
        this.#pz.focus(box.x, box.y);
        this.#uncoverAround(v.current.node);
      }
    } else this.#say(v.notice ?? `Before backward: ${v.total} steps recorded`);
  }

  /**
   * The gradient to show for a node: the final one, or once stepping has begun only what the steps
   * executed so far have produced, so a classroom watches gradients fill in from the loss backwards.
   */
  #gradOf(id: string): Summary | null {
    const n = this.model.nodes.get(id);
    if (!n) return null;
    const v = this.#ctrl?.view();
    if (!v || v.position === 0) return n.grad;
    let g: Summary | null = null;
    for (let i = 0; i < v.position && i < v.steps.length; i++) {
      const st = v.steps[i];
      if (!st) continue;
      if (st.node === id) g = st.grad_outputs[0] ?? g;
      for (const l of st.leaves) if (l.node === id) g = l.after;
    }
    return g;
  }

  // ---- layout and drawing ---------------------------------------------------------------------

  #measure(id: string, type: "node" | "box"): Measured {
    let title: string, sub: string, inline: string | null = null, bad: ReturnType<typeof health> = "ok", cut = false;
    if (type === "box") {
      const c = this.model.containers.get(id)!;
      title = `▸ ${c.label}`;
      sub = `${c.type} · ${c.members.length} node${c.members.length === 1 ? "" : "s"}`;
      for (const m of c.members) {
        const n = this.model.nodes.get(m)!;
        const hh = health(n.value, n.grad);
        if (hh === "nan" || (hh === "inf" && bad === "ok")) bad = hh;
        cut = cut || n.kind === "cut";
      }
    } else {
      const n = this.model.nodes.get(id)!;
      title = n.param ?? (n.name || n.op || n.id);
      sub = n.kind === "op" || n.kind === "output" ? `${n.op} → ${shapeText(n.shape)}` : `${n.kind} ${shapeText(n.shape)} ${n.dtype}`;
      const g = this.#gradOf(id);
      const data = inlineValues(n.value), grad = inlineValues(g);
      if (data !== null || grad !== null) inline = `data ${data ?? "–"} | grad ${grad ?? "–"}`;
      bad = health(n.value, g);
      cut = n.kind === "cut" || n.cut !== null;
    }
    // Icons as well as colours: NaN/Inf and cuts must not rely on colour alone.
    const badges: { text: string; cls: string }[] = [];
    if (bad !== "ok") badges.push({ text: bad === "nan" ? "⚠NaN" : "⚠Inf", cls: `wb-badge-${bad}` });
    if (type === "node" && this.#noted.has(id)) badges.push({ text: "⚑ origin", cls: "wb-badge-origin" });
    if (cut) badges.push({ text: "✂", cls: "wb-badge-cut" });
    if (this.#cmp) badges.push(...this.#cmp.badges(id, type === "box" ? this.model.containers.get(id)!.members : null));
    const tip = [title, sub, inline].filter(Boolean).join("\n");
    const room = MAX_W - GUTTER - PAD * 2;
    const badgeW = badges.reduce((sum, b) => sum + b.text.length * CHAR_W + 6, 0);
    title = ellipsize(title, Math.floor((room - badgeW) / CHAR_W));
    sub = ellipsize(sub, Math.floor(room / SUB_W));
    if (inline) inline = ellipsize(inline, Math.floor(room / SUB_W));
    const w = Math.ceil(Math.max(title.length * CHAR_W + badgeW, sub.length * SUB_W, (inline?.length ?? 0) * SUB_W) + GUTTER + PAD * 2);
    const hgt = 12 + LINE * (inline ? 3 : 2);
    return { w, h: hgt, title, sub, inline, badges, tip };
  }

  /** What an open box's header says. */
  #headText(id: string): string {
    const info = this.model.containers.get(id)!;
    return `▾ ${info.label} · ${info.type}`;
  }

  /** Lays out what is open and draws it; `fit` fits the result to the view before drawing. */
  #relayout(fit = false): Promise<void> {
    const gen = ++this.#generation;
    this.#visible = this.model.visible(this.#expanded);
    const measured = new Map(this.#visible.items.map((it) => [it.id, this.#measure(it.id, it.type)]));
    const input: LayoutInput = {
      nodes: this.#visible.items.map((it) => ({ id: it.id, width: measured.get(it.id)!.w, height: measured.get(it.id)!.h, cluster: it.cluster })),
      clusters: this.#visible.clusters.map((c) => ({ ...c, label: Math.min(HEAD_W, this.#headText(c.id).length * SUB_W + 16) })),
      edges: this.#visible.edges.map((e) => ({ source: e.source, target: e.target, label: e.count > 1 ? `${e.label} ×${e.count}` : e.label, index: e.index })),
    };
    if (this.#visible.items.length > 300) this.#say(`Laying out ${this.#visible.items.length} items…`);
    this.#drawn = this.#layoutFn(input).then((res) => {
      if (gen !== this.#generation) return;
      this.#layout = res;
      if (this.#ovKey !== null) {
        this.#computeOverlay();
        this.#renderPanel();
      }
      const marks = new Map<string, string>();
      const css = getComputedStyle(this.#root);
      for (const it of this.#visible.items) {
        const b = measured.get(it.id)!.badges;
        if (b.some((x) => x.cls === "wb-badge-nan")) marks.set(it.id, css.getPropertyValue("--wb-error").trim() || "#d32f2f");
        else if (b.some((x) => x.cls === "wb-badge-inf")) marks.set(it.id, css.getPropertyValue("--wb-warn").trim() || "#e68a00");
      }
      this.#minimap.setLayout(res, this.#visible.items.map((it) => it.id), marks);
      this.#minimapMarks();
      if (fit || this.#firstLayout) this.#fit(false);
      this.#firstLayout = false;
      this.#draw(measured);
      this.#say(`${this.#visible.items.length} items shown of ${this.snapshot.nodes.length} nodes; layout ${res.ms} ms`);
    }, (err: unknown) => {
      if (gen === this.#generation) this.#say(`Layout failed: ${String(err)}`);
    });
    return this.#drawn;
  }

  #draw(measured: Map<string, Measured>) {
    this.#measured = measured;
    this.#cache.clear();
    this.#paintedKey = "";
    this.#paint();
  }

  /** The part of the graph in view (plus half a screen around it), in graph coordinates. */
  #viewRect() {
    const { w, h } = this.#pz.size(), t = this.#pz.t;
    const x0 = -t.x / t.k, y0 = -t.y / t.k, x1 = (w - t.x) / t.k, y1 = (h - t.y) / t.k;
    const mx = (x1 - x0) / 2, my = (y1 - y0) / 2;
    return { x0: x0 - mx, y0: y0 - my, x1: x1 + mx, y1: y1 + my };
  }

  #schedulePaint() {
    // Small graphs are drawn whole once; only culled ones depend on the view.
    if (this.#paintQueued || !this.#layout || this.#visible.items.length <= LOD) return;
    this.#paintQueued = true;
    const run = () => {
      this.#paintQueued = false;
      this.#paint();
    };
    if (typeof requestAnimationFrame === "function") requestAnimationFrame(run);
    else setTimeout(run, 16);
  }

  /**
   * Draws what is in view: everything for graphs up to LOD items; for bigger ones only the items
   * near the view as SVG, or, when even those are too many, the canvas overview.
   */
  #paint() {
    const L = this.#layout;
    if (!L) return;
    const all = this.#visible.items;
    const culled = all.length > LOD;
    const r = culled ? this.#viewRect() : null;
    const near = (id: string) => {
      const b = L.boxes[id];
      return !!b && (!r || (b.x + b.width / 2 >= r.x0 && b.x - b.width / 2 <= r.x1 && b.y + b.height / 2 >= r.y0 && b.y - b.height / 2 <= r.y1));
    };
    const items = culled ? all.filter((it) => near(it.id)) : all;
    const clusterIds = this.#visible.clusters.map((c) => c.id).filter(near);
    const ids = new Set(items.map((i) => i.id));
    const edgeIdx: number[] = [];
    this.#visible.edges.forEach((e, i) => (ids.has(e.source) || ids.has(e.target)) && edgeIdx.push(i));
    // Far zoomed out, labels are unreadable and thousands of SVG groups cost seconds per frame.
    const overview = items.length > LOD || (culled && this.#pz.t.k < 0.2);
    this.#overview.hidden = !overview;
    if (overview) {
      this.#paintedKey = "";
      this.#viewport.replaceChildren();
      this.#els.clear();
      const v = this.#ctrl?.view();
      const current = v?.current ? this.#visible.repOf(v.current.node) : null;
      const mark = (id: string) => {
        const b = this.#measured.get(id)?.badges ?? [];
        return id === current ? "current" : id === this.#selected ? "selected"
          : b.some((x) => x.cls === "wb-badge-nan") ? "nan" : b.some((x) => x.cls === "wb-badge-inf") ? "inf" : null;
      };
      const tint = (id: string) => {
        const t = this.#ov?.tints.get(id);
        return t ? tintRgba(t) : null;
      };
      paintOverview(this.#overview, L, items.map((it) => ({ id: it.id, mark: mark(it.id), fill: tint(it.id),
        diff: this.#cmp?.diffOf(it.id, it.type === "box" ? this.model.containers.get(it.id)!.members : null) })), clusterIds, edgeIdx, this.#pz.t);
      this.#say(`${all.length} items shown of ${this.snapshot.nodes.length} nodes, as an overview: zoom in (wheel, or click) to read labels`);
      return;
    }
    const key = `${clusterIds.length}:${items.length}:${items[0]?.id}:${items[items.length - 1]?.id}`;
    if (culled && key === this.#paintedKey) return;
    this.#paintedKey = key;
    const clusters = s("g", { class: "wb-clusters" }), edges = s("g", { class: "wb-edges" }), nodes = s("g", { class: "wb-nodes" });
    this.#els.clear();
    for (const id of clusterIds) {
      const b = L.boxes[id], info = this.model.containers.get(id)!;
      const x = b.x - b.width / 2, y = b.y - b.height / 2;
      const head = s("g", { class: "wb-cluster-head", "data-id": id, tabindex: -1, role: "treeitem", "aria-expanded": "true",
        "aria-label": `${info.path || info.label} ${info.type}, open; Enter closes it` },
        s("rect", { x, y, width: Math.min(b.width, HEAD_W), height: 20, class: "wb-cluster-label" }),
        s("title", {}, `${info.label} · ${info.type}: click to close`),
        s("text", { x: x + 8, y: y + 14, class: "wb-t-sub" }, ellipsize(this.#headText(id), Math.floor((Math.min(b.width, HEAD_W) - 12) / SUB_W))));
      clusters.append(s("rect", { x, y, width: b.width, height: b.height, rx: 6, class: "wb-cluster-rect" }), head);
      this.#els.set(id, head);
    }
    for (const i of edgeIdx) {
      const e = this.#visible.edges[i];
      const pts = L.edges[i]?.points ?? [];
      if (pts.length < 2) continue;
      const d = pts.map((p, j) => `${j ? "L" : "M"}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
      const mid = pts[Math.floor(pts.length / 2)];
      const label = (e.cut ? "✂ " : "") + (e.count > 1 ? `${e.label} ×${e.count}` : e.label);
      edges.append(s("path", { d, class: e.cut ? "wb-edge wb-edge-cut" : "wb-edge", "marker-end": this.#arrow,
        "data-source": e.source, "data-target": e.target },
        s("title", {}, e.cut ? "cut: no gradient flows back along this edge" : label)));
      if (label) edges.append(s("text", { x: mid.x + 4, y: mid.y + 3, class: "wb-edge-label" }, label));
    }
    for (const it of items) {
      let g = this.#cache.get(it.id);
      if (!g) {
        const b = L.boxes[it.id], m = this.#measured.get(it.id)!;
        g = this.#drawItem(it.id, it.type, m);
        g.setAttribute("transform", `translate(${(b.x - m.w / 2).toFixed(1)},${(b.y - m.h / 2).toFixed(1)})`);
        this.#tint(it.id, g);
        this.#cache.set(it.id, g);
      }
      nodes.append(g);
      this.#els.set(it.id, g);
    }
    this.#viewport.replaceChildren(clusters, edges, nodes);
    this.#refreshNodes();
    if (this.#focusId && !this.#els.has(this.#focusId)) this.#focusId = this.#visible.repOf(this.#focusId);
    this.#setRoving(this.#focusId && this.#els.has(this.#focusId) ? this.#focusId : items[0]?.id ?? null, false);
  }

  #drawItem(id: string, type: "node" | "box", m: Measured): SVGGElement {
    const n = type === "node" ? this.model.nodes.get(id)! : null;
    const bad = m.badges.find((b) => b.cls === "wb-badge-nan" || b.cls === "wb-badge-inf")?.cls.replace("wb-badge-", "wb-health-") ?? "";
    const cls = (type === "box" ? "wb-box" : `wb-node wb-kind-${n!.kind}${n!.kind === "cut" || n!.cut ? " wb-cut" : ""}${this.#noted.has(id) ? " wb-origin" : ""}`) +
      (this.#cmp?.nodeClass(id, type === "box" ? this.model.containers.get(id)!.members : null) ?? "") + ` ${bad}`;
    const g = s("g", { class: cls, "data-id": id, tabindex: -1, role: "treeitem", "aria-expanded": type === "box" ? "false" : null,
      "aria-label": this.#itemLabel(id, type, m) });
    if (type === "box") g.append(s("rect", { x: 4, y: 4, width: m.w, height: m.h, rx: 5, class: "wb-box-shadow" }));
    g.append(s("rect", { width: m.w, height: m.h, rx: type === "box" ? 5 : 3, class: "wb-node-box" }));
    const x = (type === "node" ? GUTTER : 0) + PAD;
    g.append(s("title", {}, m.tip), s("text", { x, y: 18, class: "wb-t-title" }, m.title), s("text", { x, y: 18 + LINE, class: "wb-t-sub" }, m.sub));
    if (m.inline) g.append(s("text", { x, y: 18 + LINE * 2, class: "wb-t-sub wb-inline" }, m.inline));
    let bx = m.w - 6;
    for (const b of m.badges) {
      g.append(s("text", { x: bx, y: 16, "text-anchor": "end", class: `wb-badge ${b.cls}`, "data-health": b.cls === "wb-badge-nan" || b.cls === "wb-badge-inf" || null }, b.text));
      bx -= b.text.length * CHAR_W + 6;
    }
    if (type === "node") {
      g.append(s("rect", { class: "wb-gutter", x: 0, y: 0, width: GUTTER, height: m.h, "data-gutter": "1" },
        s("title", {}, "toggle breakpoint (b)")));
    }
    return g;
  }

  #itemLabel(id: string, type: "node" | "box", m: Measured): string {
    if (type === "box") return `${m.title.slice(2)}, ${m.sub}, closed; Enter opens it`;
    const words: Record<string, string> = { "⚠NaN": "contains NaN", "⚠Inf": "contains Inf", "✂": "graph cut here", "⚑ origin": "the NaN or Inf starts here" };
    return [m.title, m.sub, m.inline, ...m.badges.map((b) => words[b.text] ?? b.say)].filter(Boolean).join(", ") + (this.#ctrl?.view().breakpoints.has(id) ? ", breakpoint" : "");
  }

  /** Updates the state-dependent look (selection, search hits, debugger position) without a relayout. */
  #refreshNodes() {
    if (!this.#overview.hidden) {
      this.#paint();
      return;
    }
    const v = this.#ctrl?.view();
    const current = v?.current ? this.#visible.repOf(v.current.node) : null;
    const done = new Set<string>();
    if (v) for (let i = 0; i < v.position - 1 && i < v.steps.length; i++) if (v.steps[i]) done.add(v.steps[i].node);
    for (const [id, g] of this.#els) {
      g.classList.toggle("wb-selected", id === this.#selected);
      g.classList.toggle("wb-match", this.#matches.has(id));
      g.classList.toggle("wb-current", id === current);
      g.classList.toggle("wb-done", done.has(id));
      const n = this.model.nodes.get(id);
      if (!n) continue;
      g.setAttribute("aria-current", id === current ? "step" : "false");
      // Breakpoint dot and inline gradient follow the debugger.
      g.querySelector(".wb-bp")?.remove();
      const gutter = g.querySelector(".wb-gutter");
      if (v?.breakpoints.has(id) && gutter) {
        g.append(s("circle", { class: "wb-bp", cx: GUTTER / 2, cy: Number(gutter.getAttribute("height")) / 2, r: 4 }, s("title", {}, "breakpoint")));
      }
      if (!v) continue;
      const grad = this.#gradOf(id);
      const inline = g.querySelector(".wb-inline");
      if (inline) inline.textContent = `data ${inlineValues(n.value) ?? "–"} | grad ${inlineValues(grad) ?? "–"}`;
      // NaN/Inf marks follow the gradients known at this step (the badge slot exists when the final state has one).
      const hh = health(n.value, grad);
      g.classList.toggle("wb-health-nan", hh === "nan");
      g.classList.toggle("wb-health-inf", hh === "inf");
      const badge = g.querySelector("[data-health]");
      if (badge) {
        badge.textContent = hh === "nan" ? "⚠NaN" : hh === "inf" ? "⚠Inf" : "";
        badge.setAttribute("class", `wb-badge wb-badge-${hh}`);
      }
    }
  }

  // ---- interaction ----------------------------------------------------------------------------

  #setExpanded(ids: string[]) {
    this.#expanded.clear();
    for (const id of ids) this.#expanded.add(id);
    void this.#relayout(true);
  }

  async #toggle(id: string) {
    if (!this.model.containers.has(id)) return;
    const opening = !this.#expanded.has(id);
    if (opening) this.#expanded.add(id);
    else for (const c of [id, ...[...this.#expanded].filter((e) => this.model.ancestors(e).includes(id))]) this.#expanded.delete(c);
    this.#focusId = id;
    const c = this.model.containers.get(id)!;
    await this.#relayout();
    this.#say(`${c.path || c.label} ${opening ? "opened" : "closed"}`);
    const b = this.#layout?.boxes[this.#visible.repOf(id)] ?? this.#around(id);
    // an opened module grows around its old centre: show it whole (or its top, where its inputs come
    // in), not only its centre, or its first nodes stay clipped above the canvas
    if (b && opening) this.#pz.showBox(b);
    else if (b) this.#pz.reveal(b.x, b.y);
  }

  /** The box around what an open series draws (its calls' boxes; it has none of its own). */
  #around(id: string): Box | undefined {
    const L = this.#layout;
    if (!L) return undefined;
    const bs = [...this.model.containers.values()].filter((c) => c.parent === id).map((c) => L.boxes[c.id]).filter((b) => b);
    if (!bs.length) return undefined;
    const x0 = Math.min(...bs.map((b) => b.x - b.width / 2)), x1 = Math.max(...bs.map((b) => b.x + b.width / 2));
    const y0 = Math.min(...bs.map((b) => b.y - b.height / 2)), y1 = Math.max(...bs.map((b) => b.y + b.height / 2));
    return { x: (x0 + x1) / 2, y: (y0 + y1) / 2, width: x1 - x0, height: y1 - y0 };
  }

  /** Opens what holds the node, selects it and brings it into view (`centre`: in the middle, focus stays where it is). */
  async #reveal(nodeId: string, centre = false) {
    this.#closeResults();
    let changed = false;
    for (const a of this.model.ancestors(nodeId)) if (!this.#expanded.has(a)) {
      this.#expanded.add(a);
      changed = true;
    }
    if (changed) await this.#relayout();
    else await this.#drawn;
    const b = this.#layout?.boxes[nodeId];
    if (b && centre) {
      const { w, h } = this.#pz.size(), k = this.#visible.items.length > LOD ? 1 : this.#pz.t.k;
      this.#pz.set({ k, x: w / 2 - b.x * k, y: h / 2 - b.y * k }, true);
    } else if (b && this.#visible.items.length > LOD) {
      // In a culled graph, zoom to reading size so the node is drawn as SVG, not in the overview.
      const { w, h } = this.#pz.size();
      this.#pz.set({ k: 1, x: w / 2 - b.x, y: h / 2 - b.y });
    } else if (b) this.#pz.reveal(b.x, b.y);
    if (b) this.#uncoverAround(nodeId);
    this.#paint();
    this.#select(nodeId);
    this.#setRoving(nodeId, !centre);
  }

  #select(id: string | null) {
    this.#selected = id;
    this.#refreshNodes();
    this.#markTopSelected();
    this.#minimapMarks();
    this.#renderPanel();
  }

  #maximize() {
    const on = !this.#root.classList.contains("wb-max");
    // Fixed positioning is relative to the nearest ancestor with a transform or containment (a
    // notebook cell has them), so the maximized view lives on <body> and goes back after.
    if (on) {
      this.#home = this.#root.ownerDocument.createComment("workbench viewer (maximized)");
      this.#root.replaceWith(this.#home);
      this.#root.ownerDocument.body.append(this.#root);
    } else if (this.#home) {
      this.#home.replaceWith(this.#root);
      this.#home = null;
    }
    this.#root.classList.toggle("wb-max", on);
    this.#root.focus({ preventScroll: true });
    this.#say(on ? "Maximized: press Esc or m to restore" : "Restored");
    // The canvas has its new size on the next frame.
    requestAnimationFrame(() => this.#fit(false));
  }

  /**
   * Pans, the least, so the minimap covers neither the node nor its neighbours (what its details talk
   * about) and keeps in view those of them that are; with no such pan, at least the node itself.
   */
  #uncoverAround(id: string, animate = true) {
    const L = this.#layout;
    const rep = this.#visible.repOf(id);
    const own = L?.boxes[rep];
    if (!L || !own) return;
    const near = [own];
    for (const e of this.#visible.edges) {
      const other = e.source === rep ? e.target : e.target === rep ? e.source : null;
      if (other !== null && L.boxes[other]) near.push(L.boxes[other]);
    }
    if (!this.#pz.uncover(near, animate, near)) this.#pz.uncover([own], animate, [own]);
  }

  #fit(animate: boolean) {
    const L = this.#layout;
    if (!L) return;
    // Too big for a readable scale: start at the loss (where backward starts), the rest via the minimap.
    const root = this.snapshot.roots[0], box = root ? L.boxes[this.#visible.repOf(root)] : undefined;
    this.#pz.fit(L.width, L.height, animate, box ? { x: box.x, y: box.y } : undefined);
    // the minimap, shown when not all fits, must not hide the nodes at the bottom right (the loss)
    this.#pz.uncover(this.#visible.items.map((it) => L.boxes[it.id]).filter((b) => b !== undefined), animate);
  }

  #renderPanel() {
    // The top-N table stays first and keeps its element (open/closed, focus) while the selection below changes.
    const parts: Node[] = this.#topEl ? [this.#topEl] : [];
    const v = this.#ctrl?.view();
    const inside = (id: string) => crumbs(this.model, id, (c) => this.#expanded.has(c), (c) => void this.#toggle(c));
    if (v?.current) parts.push(stepDetails(v.current, v.total, this.model, this.#classroom, v.pausedReason, inside(v.current.node)));
    const sel = this.#selected;
    const node = sel ? this.model.nodes.get(sel) : undefined;
    const cont = sel ? this.model.containers.get(sel) : undefined;
    if (node) parts.push(...[this.#cmp?.panel(node.id), nodeDetails(node, this.#gradOf(node.id), this.model.where(node.id), inside(node.id))].filter((p): p is HTMLElement => !!p));
    else if (cont) parts.push(containerDetails(cont, this.model, (id) => void this.#reveal(id)));
    else if (!v?.current && this.#help) {
      parts.push(h("p", { class: "wb-muted" }, "Select a node to see its values, gradient and source line. ",
        "Arrow keys move between nodes, Enter opens a module, Esc closes the one around the focused node, / searches, f fits. Drag to pan; the wheel zooms once the viewer has focus (or with Ctrl).",
        this.#ctrl ? " Backward: n step, o step over, c continue, r restart, b breakpoint." : ""));
    }
    this.#panel.replaceChildren(...parts);
    // Nothing to show: the graph gets the whole width (a small graph then fits at a readable scale).
    this.#panel.hidden = parts.length === 0;
  }

  #say(text: string) {
    this.#status.textContent = text;
  }

  #setRoving(id: string | null, focus: boolean) {
    if (this.#focusId && this.#els.get(this.#focusId)) this.#els.get(this.#focusId)!.setAttribute("tabindex", "-1");
    this.#focusId = id;
    const g = id ? this.#els.get(id) : undefined;
    if (!g) return;
    g.setAttribute("tabindex", "0");
    if (focus) g.focus({ preventScroll: true });
  }

  #onClick(e: MouseEvent) {
    if (this.#pz.dragged) return;
    if (e.target === this.#overview) {
      const rect = this.#canvas.getBoundingClientRect();
      this.#pz.zoomBy(3, e.clientX - rect.left, e.clientY - rect.top);
      return;
    }
    const target = e.target as Element;
    const g = target.closest("[data-id]");
    if (!g) return;
    const id = g.getAttribute("data-id")!;
    this.#setRoving(id, true);
    if (target.hasAttribute("data-gutter")) {
      this.#ctrl?.toggleBreakpoint(id);
      return;
    }
    if (this.model.containers.has(id)) void this.#toggle(id);
    else {
      this.#select(id);
      this.#uncoverAround(id);
    }
  }

  #onSearch() {
    const q = this.#search.value;
    const hits = this.model.search(q, 500);
    this.#matches = new Set(hits.map((n) => this.#visible.repOf(n.id)));
    this.#refreshNodes();
    this.#resultIds = hits.slice(0, 50).map((n) => n.id);
    this.#activeResult = this.#resultIds.length ? 0 : -1;
    this.#results.replaceChildren(...hits.slice(0, 50).map((n, i) => h("li", { role: "option", "data-id": n.id, "aria-selected": i === 0 ? "true" : "false" },
      n.param ?? n.name, h("span", { class: "wb-muted" }, this.model.where(n.id) || n.op))));
    this.#results.hidden = !q || hits.length === 0;
    this.#search.setAttribute("aria-expanded", String(!this.#results.hidden));
    this.#say(q ? `${hits.length}${hits.length === 500 ? "+" : ""} nodes match “${q}”` : "");
  }

  #closeResults() {
    this.#results.hidden = true;
    this.#search.setAttribute("aria-expanded", "false");
  }

  #moveResult(delta: number) {
    if (!this.#resultIds.length) return;
    this.#activeResult = (this.#activeResult + delta + this.#resultIds.length) % this.#resultIds.length;
    this.#results.querySelectorAll("li").forEach((li, i) => li.setAttribute("aria-selected", String(i === this.#activeResult)));
  }

  #onKey(e: KeyboardEvent) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.target === this.#search) {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") this.#moveResult(e.key === "ArrowDown" ? 1 : -1);
      else if (e.key === "Enter" && this.#activeResult >= 0) void this.#reveal(this.#resultIds[this.#activeResult]);
      else if (e.key === "Escape") {
        this.#closeResults();
        this.#root.focus();
      } else {
        e.stopPropagation();
        return;
      }
      e.preventDefault();
      e.stopPropagation();
      return;
    }
    if (e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement ||
      e.target instanceof HTMLButtonElement && (e.key === "Enter" || e.key === " ")) return;
    const c = this.#ctrl;
    const handled = (() => {
      switch (e.key) {
        case "/": this.#search.focus(); this.#search.select(); return true;
        case "f": this.#fit(true); return true;
        case "m": this.#maximize(); return true;
        case "ArrowUp": case "ArrowDown": case "ArrowLeft": case "ArrowRight": this.#moveFocus(e.key); return true;
        case "Enter": case " ": {
          const id = this.#focusId;
          if (!id) return false;
          if (this.model.containers.has(id)) void this.#toggle(id);
          else this.#select(id);
          return true;
        }
        case "Escape": {
          if (this.#root.classList.contains("wb-max")) {
            this.#maximize();
            return true;
          }
          const chain = this.#focusId ? this.model.ancestors(this.#focusId) : [];
          if (chain.length) void this.#toggle(chain[chain.length - 1]);
          return chain.length > 0;
        }
        case "n": c?.step(); return !!c;
        case "o": c?.stepOver(); return !!c;
        case "c": c?.continue(); return !!c;
        case "r": c?.restart(); return !!c;
        case "b": {
          const id = this.#focusId ?? this.#selected;
          if (!c || !id || !this.model.nodes.has(id)) return false;
          c.toggleBreakpoint(id);
          this.#say(`${c.view().breakpoints.has(id) ? "Breakpoint set on" : "Breakpoint removed from"} ${this.model.nodes.get(id)!.name}`);
          return true;
        }
      }
      return false;
    })();
    if (handled) {
      e.preventDefault();
      e.stopPropagation();
    }
  }

  /**
   * Moves roving focus. Down and up follow the data flow (to the nearest consumer or producer, as
   * drawn), so the keys walk the graph rather than the page; left and right, and up or down where no
   * edge leads, go to the nearest item on screen in that direction.
   */
  #moveFocus(key: string) {
    const L = this.#layout;
    if (!L) return;
    const from = this.#focusId ? L.boxes[this.#focusId] : undefined;
    if (!from) {
      this.#setRoving(this.#visible.items[0]?.id ?? null, true);
      return;
    }
    const [dx, dy] = key === "ArrowUp" ? [0, -1] : key === "ArrowDown" ? [0, 1] : key === "ArrowLeft" ? [-1, 0] : [1, 0];
    const linked = new Set<string>();
    if (dy) {
      for (const e of this.#visible.edges) {
        if (dy > 0 && e.source === this.#focusId) linked.add(e.target);
        if (dy < 0 && e.target === this.#focusId) linked.add(e.source);
      }
    }
    let best: string | null = null, bestScore = Infinity;
    for (const id of linked.size ? linked : this.#els.keys()) {
      const b = L.boxes[id];
      if (!b || id === this.#focusId || !this.#els.has(id)) continue;
      const vx = b.x - from.x, vy = b.y - from.y;
      const along = vx * dx + vy * dy, across = Math.abs(vx * dy - vy * dx);
      if (along <= 1) continue;
      const score = along + across * 2;
      if (score < bestScore) {
        bestScore = score;
        best = id;
      }
    }
    if (!best) return;
    this.#setRoving(best, true);
    const b = L.boxes[best];
    this.#pz.reveal(b.x, b.y);
    this.#uncoverAround(best);
    const g = this.#els.get(best);
    this.#say(g?.getAttribute("aria-label") ?? "");
  }
}

