import { describe, expect, it } from "vitest";
import { computeLayout } from "../src/core/layout";
import { fixture } from "./fixtures";

describe("standalone bundle", () => {
  it("renders every embedded snapshot into its target and replays stepping", async () => {
    // What snapshot.save("x.html") writes (PROTOCOL.md section 6), with a title that tries to close the script.
    const snap = { ...fixture("scalar"), title: "</script><img src=x onerror=alert(1)>" };
    document.body.innerHTML = `<div id="wb-1"></div><script type="application/json" data-workbench-tape="wb-1" data-height="300">${
      JSON.stringify(snap).replace(/<\//g, "<\\/")}</script>`;
    // jsdom has no Worker: the main-thread fallback uses what the worker source would define.
    (globalThis as { __workbenchLayout?: unknown }).__workbenchLayout = computeLayout;
    await import("../src/standalone");
    const root = document.querySelector<HTMLElement>("#wb-1 .wb-root")!;
    expect(root.style.height).toBe("300px");
    expect(root.querySelector(".wb-title")!.textContent).toBe(snap.title);
    expect(document.querySelector("img")).toBeNull();
    await new Promise((r) => setTimeout(r, 0));
    expect(root.querySelectorAll(".wb-node")).toHaveLength(7);
    root.dispatchEvent(new KeyboardEvent("keydown", { key: "n", bubbles: true }));
    expect(root.querySelector(".wb-counter")!.textContent).toBe("1 / 7");
    expect((globalThis as { workbench?: { render?: unknown } }).workbench?.render).toBeTypeOf("function");
  });
});
