// The debugger controller for a live kernel: each control sends a request, the kernel runs the
// engine and answers with a "state" message (PROTOCOL.md). Every step record received is kept, so
// when the kernel stops answering the same controls keep working as a replay of what is known.
import { type DebugController, type DebugView, Listeners } from "../core/debug-controller";
import { Stepper } from "../core/stepper";
import type { StepRecord } from "../core/types";
import type { WidgetModel } from "./model";

export interface StateMessage {
  type: "state";
  position: number;
  total: number;
  step: StepRecord | null;
  steps?: StepRecord[];
  paused_reason: string | null;
  breakpoints: string[];
}

/** How long a request may go unanswered before the kernel is presumed gone. */
export const REPLY_TIMEOUT_MS = 10_000;

export class LiveController implements DebugController {
  private readonly listeners = new Listeners();
  private readonly known: StepRecord[];
  private readonly replay: Stepper;
  private total: number;
  private pausedReason: string | null = null;
  private breakpoints = new Set<string>();
  private busy = false;
  private dead: string | null = null;
  private error: string | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(private readonly model: WidgetModel, initial: StepRecord[], scopeOf: (node: string) => string, private readonly timeoutMs = REPLY_TIMEOUT_MS) {
    this.known = [...initial];
    this.total = initial.length;
    this.replay = new Stepper(this.known, scopeOf);
    this.replay.seek(initial.length);
    this.request({ type: "sync" });
  }

  view(): DebugView {
    if (this.dead) return { ...this.replay.state(), steps: this.known, breakpoints: this.replay.breakpoints, notice: this.dead, error: this.error, busy: false };
    const p = this.replay.position;
    return { position: p, total: this.total, current: p > 0 ? this.known[p - 1] ?? null : null, pausedReason: this.pausedReason,
      steps: this.known, breakpoints: this.breakpoints, notice: null, error: this.error, busy: this.busy };
  }

  step() { this.act("step", () => this.replay.step()); }
  stepOver() { this.act("step_over", () => this.replay.stepOver()); }
  continue() { this.act("continue", () => this.replay.continue()); }
  restart() { this.act("restart", () => this.replay.restart()); }

  toggleBreakpoint(node: string) {
    if (this.dead) {
      this.replay.toggleBreakpoint(node);
      this.listeners.emit();
      return;
    }
    // Shown at once; the kernel's next state message is authoritative.
    const enabled = !this.breakpoints.has(node);
    if (enabled) this.breakpoints.add(node);
    else this.breakpoints.delete(node);
    if (this.trySend({ type: "set_breakpoint", node, enabled })) this.listeners.emit();
  }

  subscribe(fn: () => void) {
    return this.listeners.add(fn);
  }

  /** Handles one custom message from the kernel; returns false if it was not for the debugger. */
  receive(msg: { type?: string; message?: string }): boolean {
    if (msg.type === "error") {
      this.settle();
      this.error = msg.message ?? "error";
      this.listeners.emit();
      return true;
    }
    if (msg.type !== "state") return false;
    const m = msg as StateMessage;
    this.settle();
    // an answer to a new request: an earlier failure is no longer the news (restart cleared it, or it is sent again)
    this.error = null;
    for (const st of m.steps ?? []) this.known[st.index] = st;
    if (m.step) this.known[m.step.index] = m.step;
    this.total = m.total;
    this.replay.seek(m.position);
    this.pausedReason = m.paused_reason;
    this.breakpoints = new Set(m.breakpoints);
    this.replay.breakpoints.clear();
    for (const b of m.breakpoints) this.replay.breakpoints.add(b);
    this.listeners.emit();
    return true;
  }

  /** The comm's liveness changed (JupyterLab flips it on a kernel restart): ask for the state again. */
  recheck() {
    if (!this.dead && !this.busy) this.request({ type: "sync" });
  }

  /** The comm closed (kernel restarted or shut down). */
  kernelGone(why = "The kernel connection closed") {
    this.settle();
    this.dead = `${why}. Replaying the ${this.known.length} step${this.known.length === 1 ? "" : "s"} already received; re-run the cell to debug live again.`;
    this.listeners.emit();
  }

  dispose() {
    this.settle();
  }

  private act(type: string, offline: () => void) {
    if (this.dead) {
      offline();
      this.listeners.emit();
      return;
    }
    if (this.busy) return;
    // A send that fails marks the kernel gone; do what was asked locally instead.
    if (!this.request({ type })) this.act(type, offline);
  }

  private request(msg: { type: string }): boolean {
    this.busy = true;
    this.timer = setTimeout(() => this.kernelGone(`No answer from the kernel for ${Math.round(this.timeoutMs / 1000)} s (it may have restarted or died)`), this.timeoutMs);
    if (!this.trySend(msg)) return false;
    this.listeners.emit();
    return true;
  }

  /** Sending on a closed comm throws (kernel restarted); that is the kernel going away too. */
  private trySend(msg: object): boolean {
    try {
      this.model.send(msg);
      return true;
    } catch {
      this.kernelGone("The kernel connection is closed (the kernel restarted or shut down)");
      return false;
    }
  }

  private settle() {
    this.busy = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
