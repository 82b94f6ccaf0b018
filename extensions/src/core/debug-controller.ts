// What the viewer's debugger controls talk to. Replay drives a Stepper over the snapshot's trace;
// the widget's live controller (widget/live-debugger.ts) implements the same interface with kernel
// messages, so the toolbar, keys and panel are one piece of code for both.
import { Stepper } from "./stepper";
import type { StepRecord } from "./types";

export interface DebugView {
  position: number;
  total: number;
  current: StepRecord | null;
  pausedReason: string | null;
  /** Executed steps known so far, index i = step i. */
  steps: readonly StepRecord[];
  breakpoints: ReadonlySet<string>;
  /** A problem the user must know about (e.g. the kernel is gone), or null. */
  notice: string | null;
  /** The backward pass failed (the kernel's error message), or null. */
  error: string | null;
  /** True while waiting for the kernel; controls are disabled. */
  busy: boolean;
}

export interface DebugController {
  view(): DebugView;
  step(): void;
  stepOver(): void;
  continue(): void;
  restart(): void;
  toggleBreakpoint(node: string): void;
  subscribe(listener: () => void): () => void;
}

export class Listeners {
  private fns = new Set<() => void>();
  add(fn: () => void) {
    this.fns.add(fn);
    return () => void this.fns.delete(fn);
  }
  emit() {
    for (const fn of this.fns) fn();
  }
}

/** Client-side stepping through a recorded trace: works in a saved notebook with no kernel. */
export class ReplayController implements DebugController {
  private listeners = new Listeners();
  constructor(readonly stepper: Stepper) {}
  view(): DebugView {
    const s = this.stepper;
    return { ...s.state(), steps: s.steps, breakpoints: s.breakpoints, notice: null, error: null, busy: false };
  }
  private after<T>(r: T) {
    this.listeners.emit();
    return r;
  }
  step() { this.after(this.stepper.step()); }
  stepOver() { this.after(this.stepper.stepOver()); }
  continue() { this.after(this.stepper.continue()); }
  restart() { this.after(this.stepper.restart()); }
  toggleBreakpoint(node: string) { this.after(this.stepper.toggleBreakpoint(node)); }
  subscribe(fn: () => void) { return this.listeners.add(fn); }
}
