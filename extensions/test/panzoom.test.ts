import { describe, expect, it } from "vitest";
import { PanZoom } from "../src/core/panzoom";

/** A PanZoom on a detached canvas: jsdom reports no size, so it assumes 800 x 480 pixels. */
function panzoom(t = { x: 0, y: 0, k: 1 }): PanZoom {
  const canvas = document.createElement("div");
  const g = document.createElementNS("http://www.w3.org/2000/svg", "g");
  const pz = new PanZoom(canvas, g, canvas);
  pz.set(t);
  return pz;
}

describe("PanZoom.showBox (an opened module brought into view)", () => {
  it("leaves a box that is already in view where it is", () => {
    const pz = panzoom({ x: 0, y: 0, k: 1 });
    pz.showBox({ x: 400, y: 240, width: 200, height: 200 }, false);
    expect(pz.t).toEqual({ x: 0, y: 0, k: 1 });
  });

  it("pans the least to show a box that fits, its clipped top edge at the margin", () => {
    const pz = panzoom({ x: 0, y: 0, k: 1 });
    pz.showBox({ x: 400, y: 100, width: 200, height: 300 }, false); // top at -50: clipped above
    expect(pz.t).toEqual({ x: 0, y: 62, k: 1 });
    pz.showBox({ x: 400, y: 500, width: 200, height: 100 }, false); // bottom at 612 (with y 62) of 480
    expect(pz.t.y).toBe(62 - (612 - 468));
  });

  it("puts the top of a box too tall to fit at the top, at the current scale", () => {
    const pz = panzoom({ x: 0, y: -300, k: 2 });
    pz.showBox({ x: 200, y: 400, width: 100, height: 600 }, false); // 1,200 px tall on screen
    expect(pz.t).toEqual({ x: 0, y: 12 - 100 * 2, k: 2 });
  });

  it("keeps a box too wide to fit that already spans the width, else shows its left edge", () => {
    const pz = panzoom({ x: -100, y: 0, k: 1 });
    pz.showBox({ x: 500, y: 200, width: 1200, height: 100 }, false); // -200 .. 1000 of 0 .. 800
    expect(pz.t.x).toBe(-100);
    pz.showBox({ x: 1000, y: 200, width: 1200, height: 100 }, false); // 300 .. 1500: left edge in, right out
    expect(pz.t.x).toBe(-100 + 12 - 300);
  });
});

describe("PanZoom.uncover (the minimap over the bottom right after a fit)", () => {
  // the minimap's place on the 800 x 480 canvas: 200 x 140 in the bottom-right corner, 8 px in
  const corner = { x0: 592, y0: 332, x1: 792, y1: 472 };

  it("pans up when that is the shorter way, so the bottom-right box clears the corner by 8 px", () => {
    const pz = panzoom({ x: 0, y: 0, k: 1 });
    pz.covered = () => corner;
    const loss = { x: 600, y: 440, width: 300, height: 40 }; // 450..750 x 420..460: up 136 px, left 166
    const top = { x: 600, y: 100, width: 160, height: 40 };
    pz.uncover([top, loss]);
    expect(pz.t).toEqual({ x: 0, y: -(460 - (332 - 8)), k: 1 });
  });

  it("pans left instead when going up would bring another box under the corner", () => {
    const pz = panzoom({ x: 0, y: 0, k: 1 });
    pz.covered = () => corner;
    const tall = [0, 1, 2, 3, 4, 5, 6].map((i) => ({ x: 700, y: 60 + i * 70, width: 60, height: 40 })); // a column at the right edge
    const below = { x: 700, y: 560, width: 60, height: 40 }; // out of view below: a pan up shows it under the corner
    pz.uncover([...tall, below]);
    expect(pz.t).toEqual({ x: -(730 - (592 - 8)), y: 0, k: 1 });
  });

  it("stays put with nothing under the corner, or with no corner covered", () => {
    const pz = panzoom({ x: 0, y: 0, k: 1 });
    pz.covered = () => corner;
    pz.uncover([{ x: 300, y: 440, width: 160, height: 40 }]);
    expect(pz.t).toEqual({ x: 0, y: 0, k: 1 });
    pz.covered = () => null;
    pz.uncover([{ x: 700, y: 440, width: 160, height: 40 }]);
    expect(pz.t).toEqual({ x: 0, y: 0, k: 1 });
  });
});

describe("PanZoom.uncover with boxes to keep in view (a selected node and its neighbours)", () => {
  const corner = { x0: 592, y0: 332, x1: 792, y1: 472 };

  it("pans left rather than up when going up would push a kept box out above", () => {
    const pz = panzoom({ x: 0, y: 0, k: 1 });
    pz.covered = () => corner;
    const input = { x: 400, y: 60, width: 160, height: 40 }; // 40..80: a pan up of more than 40 px loses it
    const node = { x: 400, y: 240, width: 160, height: 40 };
    const next = { x: 600, y: 400, width: 160, height: 40 }; // 520..680 x 380..420 under the corner: up 88, left 96
    expect(pz.uncover([input, node, next], false, [input, node, next])).toBe(true);
    expect(pz.t).toEqual({ x: -(680 - (592 - 8)), y: 0, k: 1 });
  });

  it("reports a corner it cannot clear without losing a kept box, and stays put", () => {
    const pz = panzoom({ x: 0, y: 0, k: 1 });
    pz.covered = () => corner;
    const left = { x: 60, y: 240, width: 100, height: 40 }, top = { x: 400, y: 30, width: 100, height: 40 };
    const under = { x: 700, y: 420, width: 100, height: 40 };
    expect(pz.uncover([left, top, under], false, [left, top, under])).toBe(false);
    expect(pz.t).toEqual({ x: 0, y: 0, k: 1 });
    expect(pz.uncover([under], false, [under])).toBe(true); // the node alone: cleared
    expect(pz.t.y).toBe(-(440 - (332 - 8)));
  });
});
