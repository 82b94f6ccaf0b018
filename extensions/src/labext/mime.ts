// JupyterLab 4 MIME renderer for application/vnd.workbench.tape.v1+json: saved notebooks show the
// interactive viewer (with replay stepping) even with no kernel. Safe: it never evaluates or
// injects the data as HTML, so it also renders in untrusted notebooks.
import type { IRenderMime } from "@jupyterlab/rendermime-interfaces";
import { Widget } from "@lumino/widgets";
import { TAPE_MIME } from "../core/types";
import { render, type ViewerHandle } from "../core/viewer";

class TapeRenderer extends Widget implements IRenderMime.IRenderer {
  private viewer: ViewerHandle | null = null;

  constructor() {
    super();
    this.addClass("wb-mime-output");
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.viewer?.destroy();
    const data = model.data[TAPE_MIME];
    try {
      this.viewer = render(this.node, data);
      await this.viewer.ready();
    } catch (err) {
      this.node.textContent = `workbench: cannot show this tape snapshot: ${(err as Error).message}`;
    }
  }

  dispose(): void {
    this.viewer?.destroy();
    this.viewer = null;
    super.dispose();
  }
}

const extension: IRenderMime.IExtension = {
  id: "workbench:tape",
  description: "Interactive autograd tape viewer for workbench snapshots.",
  rendererFactory: {
    safe: true,
    mimeTypes: [TAPE_MIME],
    createRenderer: () => new TapeRenderer(),
  },
  // Lower rank = preferred; text/html is 50, so the viewer wins over the bundle's inline-SVG fallback.
  rank: 0,
  dataType: "json",
};

export default extension;
