// anywidget entry, built to workbench/static/widget.js. The `view` trait picks the view: "tape"
// (snapshot, replay stepping if it has a trace), "debugger" (live stepping through the kernel) or
// "monitor" (gradient monitor fed by custom messages). See PROTOCOL.md.
import { parseSnapshot } from "../core/types";
import { render as renderTape, type ViewerHandle } from "../core/viewer";
import { h } from "../core/dom";
import { ensureStyle } from "../core/style";
import { type MonitorMessage, renderMonitor } from "../monitor/monitor";
import type { BufferLike } from "../monitor/buffers";
import { scopeKey } from "../core/graph-model";
import { LiveController } from "./live-debugger";
import type { WidgetModel } from "./model";

function renderGraph(model: WidgetModel, el: HTMLElement, live: boolean): () => void {
  let viewer: ViewerHandle | null = null;
  let ctrl: LiveController | null = null;
  const onMsg = (msg: { type?: string }) => void ctrl?.receive(msg);
  const onClose = () => ctrl?.kernelGone();
  const onLive = () => ctrl?.recheck();
  const draw = () => {
    viewer?.destroy();
    ctrl?.dispose();
    viewer = ctrl = null;
    let snap;
    try {
      snap = parseSnapshot(model.get("snapshot"));
    } catch (err) {
      ensureStyle(el.ownerDocument);
      el.replaceChildren(h("div", { class: "wb-root wb-banner", role: "alert" }, `workbench viewer: ${(err as Error).message}`));
      return;
    }
    if (live) {
      const scopes = new Map(snap.nodes.map((n) => [n.id, scopeKey(n)]));
      ctrl = new LiveController(model, snap.trace?.steps ?? [], (id) => scopes.get(id) ?? "");
    }
    viewer = renderTape(el, snap, { controller: live ? ctrl : undefined, height: (model.get("height") as number) || undefined,
      classroom: live ? Boolean(model.get("classroom")) : undefined });
  };
  model.on("msg:custom", onMsg);
  model.on("comm:close", onClose);
  model.on("comm_live_update", onLive);
  model.on("change:snapshot", draw);
  draw();
  return () => {
    model.off("msg:custom", onMsg);
    model.off("comm:close", onClose);
    model.off("comm_live_update", onLive);
    model.off("change:snapshot", draw);
    ctrl?.dispose();
    viewer?.destroy();
  };
}

function renderMonitorView(model: WidgetModel, el: HTMLElement): () => void {
  const mon = renderMonitor(el, { title: (model.get("title") as string) || undefined });
  const onMsg = (msg: MonitorMessage, buffers: BufferLike[]) => mon.append(msg, buffers);
  const onClose = () => mon.notice("The kernel connection closed; the charts show everything received until then.");
  // JupyterLab flips the comm's liveness when the kernel restarts; a send on a dead comm throws.
  const onLive = () => {
    try {
      model.send({ type: "monitor_sync" });
    } catch {
      onClose();
    }
  };
  model.on("msg:custom", onMsg);
  model.on("comm:close", onClose);
  model.on("comm_live_update", onLive);
  // A view created after training started (a second output, a page reload) asks for the history.
  model.send({ type: "monitor_sync" });
  return () => {
    model.off("msg:custom", onMsg);
    model.off("comm:close", onClose);
    model.off("comm_live_update", onLive);
    mon.destroy();
  };
}

export default {
  render({ model, el }: { model: WidgetModel; el: HTMLElement }) {
    const view = model.get("view");
    if (view === "monitor") return renderMonitorView(model, el);
    return renderGraph(model, el, view === "debugger");
  },
};
