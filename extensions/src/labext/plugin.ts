// JupyterLab plugin (no UI): hands the application shell to the MIME renderer (see app.ts).
import { setAppShell, type ShellLike } from "./app";

const plugin = {
  id: "workbench:shell",
  description: "Lets workbench's renderer find the notebook of an output (to show a live widget or its saved view).",
  autoStart: true,
  activate: (app: { shell: ShellLike }) => setAppShell(app.shell),
};

export default plugin;
