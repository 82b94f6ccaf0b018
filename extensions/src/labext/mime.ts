// JupyterLab 4 MIME renderer for workbench's kernel-free views: the tape (application/vnd.workbench.tape.v1+json,
// with replay stepping when it has a trace) and the gradient monitor report (…monitor.v1+json).
// Safe: it never evaluates or injects the data as HTML, so it also renders in untrusted notebooks.
//
// The debugger's and the monitor's outputs carry both their widget view and one of these. This
// renderer ranks before the widget renderer; while the widget's model lives (a running kernel that
// made it) it hands the output to the notebook's widget renderer, and otherwise (a saved notebook
// reopened, a new kernel, an untrusted copy) it draws the saved view instead of "Error displaying widget".
import type { IRenderMime } from "@jupyterlab/rendermime-interfaces";
import { PanelLayout, Widget } from "@lumino/widgets";
import { TAPE_MIME } from "../core/types";
import { render } from "../core/viewer";
import { MONITOR_MIME, renderReport } from "../monitor/report";
import { appShell } from "./app";

const WIDGET_MIME = "application/vnd.jupyter.widget-view+json";

interface NotebookLike extends Widget {
  sessionContext?: { session?: { kernel?: unknown } | null };
  content?: { rendermime?: { getFactory(m: string): unknown; createRenderer(m: string): IRenderMime.IRenderer } };
}

/** Waits (a few frames at most) until `node` is in the document, then finds the notebook holding it. */
async function notebookOf(node: HTMLElement): Promise<NotebookLike | null> {
  for (let i = 0; i < 120 && !node.isConnected; i++) await new Promise((r) => requestAnimationFrame(() => r(null)));
  const shell = appShell();
  if (!shell || !node.isConnected) return null;
  for (const w of shell.widgets("main")) if (w.node.contains(node)) return w as NotebookLike;
  return null;
}

class WorkbenchRenderer extends Widget implements IRenderMime.IRenderer {
  private handle: { destroy(): void } | null = null;
  private observer: MutationObserver | null = null;

  constructor(private readonly mimeType: string) {
    super();
    this.addClass("wb-mime-output");
    this.layout = new PanelLayout();
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.clear();
    if (model.data[WIDGET_MIME] && model.trusted && await this.renderWidget(model)) return;
    this.renderSaved(model);
  }

  private renderSaved(model: IRenderMime.IMimeModel) {
    this.clear();
    const data = model.data[this.mimeType];
    try {
      this.handle = this.mimeType === MONITOR_MIME ? renderReport(this.node, data) : render(this.node, data);
    } catch (err) {
      this.node.textContent = `workbench: cannot show this output: ${(err as Error).message}`;
    }
  }

  /** The live widget, when a kernel holds its model; false when the saved view must stand in. */
  private async renderWidget(model: IRenderMime.IMimeModel): Promise<boolean> {
    const panel = await notebookOf(this.node);
    const rm = panel?.content?.rendermime;
    if (!panel?.sessionContext?.session?.kernel || !rm?.getFactory(WIDGET_MIME)) return false;
    const r = rm.createRenderer(WIDGET_MIME);
    (this.layout as PanelLayout).addWidget(r as unknown as Widget);
    const failed = () => /Error displaying widget/.test(r.node.textContent ?? "");
    await r.renderModel(model);
    if (failed()) return false;
    // ipywidgets says "Loading widget..." until the kernel's widget state arrives, then either draws
    // or reports the model missing (a kernel that never made it): watch for the latter.
    this.observer = new MutationObserver(() => {
      if (failed()) this.renderSaved(model);
    });
    this.observer.observe(r.node, { childList: true, characterData: true, subtree: true });
    return true;
  }

  private clear() {
    this.observer?.disconnect();
    this.observer = null;
    this.handle?.destroy();
    this.handle = null;
    for (const w of [...(this.layout as PanelLayout).widgets]) w.dispose();
    this.node.replaceChildren();
  }

  dispose(): void {
    this.clear();
    super.dispose();
  }
}

const extension: IRenderMime.IExtension = {
  id: "workbench:tape",
  description: "Kernel-free views of workbench outputs: the autograd tape viewer and the gradient monitor report.",
  rendererFactory: {
    safe: true,
    mimeTypes: [TAPE_MIME, MONITOR_MIME],
    createRenderer: (options) => new WorkbenchRenderer(options.mimeType),
  },
  // Lower rank = preferred: text/html is 50 and the ipywidgets view -10, so this renderer decides.
  rank: -20,
  dataType: "json",
};

export default extension;
