// The tape over time: a step slider and a play button for a snapshot with `series` (a watched
// training run, wb.viz.watch(model, snapshots_every=N)). The colouring itself is the overlay's: each
// step hands the viewer the step's values through setOverlay(key, values), with no relayout.
import { h } from "./dom";
import { domainOver, type Domain } from "./overlay";
import type { JsonNumber, Series, Snapshot } from "./types";

/** What the timeline needs of the viewer: its root, the overlay entry point and the measure selected now. */
export interface TimelineHost {
  root: HTMLElement;
  setOverlay(key: string | null, values?: Map<string, number | null>, domain?: Domain): void;
  overlayKey(): string | null;
}

/** Milliseconds per step while playing: the whole run in about 6 s, each step at least 250 ms on screen. */
export const playInterval = (steps: number) => Math.max(250, Math.min(1000, Math.round(6000 / Math.max(1, steps))));

const toNumber = (v: JsonNumber | null | undefined): number | null =>
  v === null || v === undefined ? null : typeof v === "number" ? v : v === "NaN" ? NaN : v === "Infinity" ? Infinity : -Infinity;

export class Timeline {
  readonly el: HTMLElement;
  readonly #series: Series;
  readonly #ids: string[];
  readonly #host: TimelineHost;
  /** One map per series measure, refilled in place at each step: the viewer's measure holds the same map. */
  readonly #values = new Map<string, Map<string, number | null>>();
  readonly #slider: HTMLInputElement;
  readonly #play: HTMLButtonElement;
  readonly #label: HTMLElement;
  #index: number;
  #timer: ReturnType<typeof setInterval> | null = null;

  constructor(snapshot: Snapshot, host: TimelineHost) {
    this.#series = snapshot.series!;
    this.#ids = snapshot.nodes.map((n) => n.id);
    this.#host = host;
    const n = this.#series.steps.length;
    this.#index = n - 1; // the nodes' own summaries are the last step's
    this.#slider = h("input", { type: "range", class: "wb-step-slider", min: 0, max: Math.max(0, n - 1), step: 1, value: this.#index,
      "aria-label": "training step (arrow keys, Home, End)", hidden: n < 2 });
    this.#slider.addEventListener("input", () => this.show(Number(this.#slider.value)));
    // the slider keeps its keys (arrows, Home, End, Page Up/Down); the viewer's own would move node focus
    this.#slider.addEventListener("keydown", (e) => e.stopPropagation());
    this.#play = h("button", { class: "wb-btn wb-play", type: "button", "aria-pressed": "false", title: "Play the kept steps in order", hidden: n < 2 }, "▶ Play");
    this.#play.addEventListener("click", () => (this.#timer ? this.pause() : this.play()));
    this.#label = h("span", { class: "wb-step-label", "aria-live": "polite" });
    this.el = h("div", { class: "wb-bar wb-timeline", role: "toolbar", "aria-label": "training steps" },
      h("span", { class: "wb-muted" }, n < 2 ? "kept step:" : "steps:"), this.#play, this.#slider, this.#label);
    const start = snapshot.overlay && snapshot.overlay in this.#series.measures ? snapshot.overlay : null;
    // every series measure gets its map now, so choosing it under "Colour by" shows the current step,
    // and one colour domain over all kept steps, so a colour means the same value at every step
    const domains = new Map<string, Domain | undefined>();
    for (const [key, rows] of Object.entries(this.#series.measures)) {
      const m = new Map<string, number | null>();
      this.#values.set(key, m);
      this.#fill(key, m, this.#index);
      const scale = snapshot.measures?.[key]?.scale ?? "log";
      domains.set(key, domainOver(scale, rows.map((r) => r.map(toNumber)), n > 1 ? `same scale at all ${n} steps` : undefined) ?? undefined);
      if (key !== start) host.setOverlay(key, m, domains.get(key));
    }
    host.setOverlay(start, start ? this.#values.get(start) : undefined, start ? domains.get(start) : undefined);
    this.#sayStep();
    // another measure chosen under "Colour by" (the viewer has coloured by it already): say the step anew
    host.root.addEventListener("change", () => this.#sayStep());
  }

  get index(): number {
    return this.#index;
  }

  #fill(key: string, m: Map<string, number | null>, i: number) {
    const row = this.#series.measures[key][i] ?? [];
    for (let j = 0; j < this.#ids.length; j++) m.set(this.#ids[j], toNumber(row[j]));
  }

  /** Shows kept step `i` (clamped): refills every measure's values, recolours by the one selected. */
  show(i: number) {
    const n = this.#series.steps.length;
    this.#index = Math.max(0, Math.min(n - 1, Math.round(i)));
    this.#slider.value = String(this.#index);
    for (const [key, m] of this.#values) this.#fill(key, m, this.#index);
    const key = this.#host.overlayKey();
    if (key !== null && this.#values.has(key)) this.#host.setOverlay(key, this.#values.get(key));
    this.#sayStep();
  }

  play() {
    const n = this.#series.steps.length;
    if (n < 2) return;
    if (this.#index >= n - 1) this.show(0);
    this.#play.textContent = "❚❚ Pause";
    this.#play.setAttribute("aria-pressed", "true");
    this.#timer = setInterval(() => {
      // a viewer taken off the page (cell cleared, output replaced) stops its own clock
      if (!this.el.isConnected || this.#index >= this.#series.steps.length - 1) this.pause();
      else this.show(this.#index + 1);
    }, playInterval(n));
  }

  pause() {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.#play.textContent = "▶ Play";
    this.#play.setAttribute("aria-pressed", "false");
  }

  #sayStep() {
    const { steps } = this.#series;
    const i = this.#index;
    const key = this.#host.overlayKey();
    const m = key !== null ? this.#values.get(key) : undefined;
    let bad = 0;
    if (m) for (const v of m.values()) if (v !== null && !Number.isFinite(v)) bad++;
    const text = `step ${steps[i]}` + (steps.length > 1 ? ` (${i + 1} of ${steps.length})` : "") +
      (bad ? ` · ${bad} node${bad === 1 ? "" : "s"} NaN/Inf` : "") +
      (key !== null && !m ? ` · the colouring (${key}) is the same at every step` : "") +
      // the side panel's summaries are those the nodes carry: the last step's
      (i < steps.length - 1 ? ` · details: step ${steps[steps.length - 1]}` : "");
    this.#label.textContent = text;
    this.#label.classList.toggle("wb-step-bad", bad > 0);
    this.#slider.setAttribute("aria-valuetext", text);
  }
}
