// The one thing the MIME renderer cannot get from JupyterLab's renderer API: the application shell,
// to find the notebook (its kernel and its widget renderer) that holds an output. A tiny plugin,
// loaded with the extension, leaves it here.
import type { Widget } from "@lumino/widgets";

export interface ShellLike { widgets(area: string): Iterable<Widget> }

const KEY = "__workbenchJupyterShell";

export function setAppShell(shell: ShellLike) {
  (globalThis as Record<string, unknown>)[KEY] = shell;
}

export function appShell(): ShellLike | null {
  return ((globalThis as Record<string, unknown>)[KEY] as ShellLike | undefined) ?? null;
}
