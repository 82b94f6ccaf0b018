// The backward debugger's state machine. `position` counts executed steps: 0 is "before backward",
// k shows steps[k-1] as the current one. Replay mode drives it from the snapshot's trace; live mode
// (widget) feeds it step records from the kernel instead and only uses the bookkeeping.
import type { StepRecord } from "./types";

export interface StepperState {
  position: number;
  total: number;
  current: StepRecord | null;
  /** Why the last run stopped: "breakpoint", a step's own breakpoint reason, "end", or null. */
  pausedReason: string | null;
}

export class Stepper {
  position = 0;
  pausedReason: string | null = null;
  readonly breakpoints = new Set<string>();

  constructor(
    readonly steps: StepRecord[],
    /** Node id -> module scope, for step over. */
    private readonly scopeOf: (node: string) => string,
  ) {}

  get total() {
    return this.steps.length;
  }
  get current(): StepRecord | null {
    return this.position > 0 ? this.steps[this.position - 1] : null;
  }
  state(): StepperState {
    return { position: this.position, total: this.total, current: this.current, pausedReason: this.pausedReason };
  }

  step(): StepperState {
    return this.run(() => false);
  }

  /**
   * Runs the next step and every following one that lies in the same module scope (or below it) as
   * the current node, so the rest of a Linear or attention block goes by as one. When the current
   * node is at top level, the scope is the next node's: a whole module is stepped over from outside.
   * Top level on both sides: one step.
   */
  stepOver(): StepperState {
    if (this.position >= this.total) return this.run(() => false);
    const scope = (this.current && this.scopeOf(this.current.node)) || this.scopeOf(this.steps[this.position].node);
    if (!scope) return this.run(() => false);
    return this.run((next) => {
      const s = this.scopeOf(next.node);
      return s === scope || s.startsWith(scope + ".");
    });
  }

  /** Runs to the next breakpoint (a user's, or a step the recorder flagged, e.g. NaN) or the end. */
  continue(): StepperState {
    return this.run(() => true);
  }

  restart(): StepperState {
    this.position = 0;
    this.pausedReason = null;
    return this.state();
  }

  /** Jumps to an absolute position (used when a live kernel reports where it is). */
  seek(position: number): StepperState {
    this.position = Math.max(0, Math.min(this.total, position));
    this.pausedReason = null;
    return this.state();
  }

  toggleBreakpoint(node: string): boolean {
    if (this.breakpoints.delete(node)) return false;
    this.breakpoints.add(node);
    return true;
  }

  /** The reason step `s` stops a multi-step run, or null. */
  stopReason(s: StepRecord): string | null {
    if (s.breakpoint) return s.breakpoint.reason;
    if (this.breakpoints.has(s.node)) return "breakpoint";
    return null;
  }

  /** Executes one step, then more while `keepGoing(next)` holds, stopping at any breakpoint. */
  private run(keepGoing: (next: StepRecord) => boolean): StepperState {
    this.pausedReason = null;
    while (this.position < this.total) {
      const reason = this.stopReason(this.steps[this.position++]);
      if (reason) {
        this.pausedReason = reason;
        return this.state();
      }
      if (this.position < this.total && !keepGoing(this.steps[this.position])) return this.state();
    }
    this.pausedReason = "end";
    return this.state();
  }
}
