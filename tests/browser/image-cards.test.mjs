// Image and heatmap cards in the page (web/src/cards/draw-image.ts), read back from their canvases.
//
// A known image: a 4x4 ramp 0..15 on the gray scale is byte 17 v (v / 15 * 255), so the canvas's
// pixel (row, column) is gray 17 (4 row + column), read pixel by pixel; a signed image's canvas is the
// colours that Python's own palette blend (topos.show.pictures.colours, what the PNG in a notebook holds)
// gives, printed by the same run. Then the gallery's spiral (21_spiral.py) in Run mode: its heatmap is
// one card redrawn while the run goes (its title names the step), and once trained the values' canvas
// puts the training points on their class's side (blue below 0.5, red above) and agrees with the
// heatmap the docs built, a byte at most apart (another CPU's last bits).
//
// Run it alone: bash tests/run-browser.sh tests/browser/image-cards.test.mjs

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { useBrowser } from "./harness.mjs";

const RUN_TIMEOUT = 300_000;

const gallery = JSON.parse(readFileSync(new URL("../../docs/generated/gallery.json", import.meta.url), "utf8"));
const spiral = gallery.parts.find((part) => part.example === "examples/21_spiral.py");

const KNOWN = `
import json
import numpy as np
from topos import show
from topos.show.pictures import rgb_of

ramp = show.image(np.arange(16.0).reshape(4, 4), title="ramp")
signed = show.image(np.array([[-2.0, -1.0, 0.0], [0.5, 1.0, 2.0]]), title="signed")
print(json.dumps(rgb_of(signed.data["images"][0], signed.data["palette"]).tolist()))
`;

/** The RGB of every pixel of the canvas `selector` picks (the n-th one), at the canvas's own size, as rows. */
const canvasPixels = (page, selector, index = 0) =>
  page.evaluate(
    ([selector, index]) => {
      const canvas = document.querySelectorAll(selector)[index];
      const { data } = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height);
      return Array.from({ length: canvas.height }, (_, row) =>
        Array.from({ length: canvas.width }, (_, column) => Array.from(data.slice(4 * (row * canvas.width + column), 4 * (row * canvas.width + column) + 3))),
      );
    },
    [selector, index],
  );

async function runCode(page, code) {
  await page.evaluate((code) => window.playground.setCode(code), code);
  await page.click("#run");
  await page.waitForFunction(() => ["finished", "failed"].includes(document.body.dataset.run), null, { timeout: RUN_TIMEOUT });
  const printed = await page.$eval("[data-run-output]", (element) => element.textContent);
  assert.equal(await page.evaluate(() => document.body.dataset.run), "finished", printed.slice(-2000));
  return printed;
}

/** A byte through a palette, as pictures.py's colours and draw-image.ts's colourOf blend it. */
function colourOf(level, palette) {
  const where = (level * (palette.length - 1)) / 255;
  const below = Math.min(Math.floor(where), palette.length - 2);
  const part = where - below;
  return [0, 1, 2].map((c) => Math.floor(palette[below][c] * (1 - part) + palette[below + 1][c] * part + 0.5));
}

describe("image and heatmap cards in the page", () => {
  let browser;
  let page;
  let pageErrors;

  useBrowser({ playground: "" }, (opened) => ({ browser, page, errors: pageErrors } = opened));

  test("a known image reads back pixel by pixel, gray and diverging", async () => {
    await runCode(page, KNOWN);
    const titles = await page.$$eval("[data-run-output] .card-image", (cards) => cards.map((card) => card.dataset.title));
    assert.deepEqual(titles, ["ramp", "signed"]);
    const ramp = await canvasPixels(page, "[data-run-output] .card-image canvas", 0);
    const expected = Array.from({ length: 4 }, (_, row) => Array.from({ length: 4 }, (_, column) => Array(3).fill(17 * (4 * row + column))));
    assert.deepEqual(ramp, expected);
    // The signed image: the colours Python gives it (the notebook's PNG), printed by the run.
    const blocks = await page.$$eval("[data-run-output] > .card-print", (found) => found.map((block) => block.textContent).join(""));
    const python = JSON.parse(blocks.trim());
    const signed = await canvasPixels(page, "[data-run-output] .card-image canvas", 1);
    assert.deepEqual(signed, python);
    // Its ends are the palette's ends: -2 the blue, 2 the red (range [-2, 2]).
    assert.deepEqual(signed[0][0], [33, 102, 172]);
    assert.deepEqual(signed[1][2], [178, 24, 43]);
    // Drawn larger than its pixels, squares kept; the scale stated under it.
    const size = await page.$eval("[data-run-output] .card-image canvas", (canvas) => canvas.getBoundingClientRect().width);
    assert.equal(size, 4 * 24);
    const scales = await page.$$eval("[data-run-output] .card-image .picture-scale", (found) => found.map((line) => line.textContent));
    assert.deepEqual(scales, ["gray: black 0, white 15", "diverging: blue -2, white 0, red 2"]);
  });

  test("the spiral's boundary is redrawn while it trains and ends with the points on their side", async () => {
    assert.ok(spiral, "docs/generated/gallery.json has no part for examples/21_spiral.py");
    await page.evaluate((code) => window.playground.setCode(code), spiral.code);
    await page.click("#run");
    const title = () => page.$eval("[data-run-output] .card-heatmap", (card) => card.dataset.title).catch(() => null);
    // Seen redrawn during the run: a step past 0, the run still going.
    await page.waitForFunction(
      () => /after step [1-9]/.test(document.querySelector("[data-run-output] .card-heatmap")?.dataset.title ?? ""),
      null,
      { timeout: RUN_TIMEOUT },
    );
    const during = await title();
    assert.equal(await page.evaluate(() => document.body.dataset.run), "running", `the run ended before its boundary was seen redrawn (${during})`);
    await page.waitForFunction(() => ["finished", "failed"].includes(document.body.dataset.run), null, { timeout: RUN_TIMEOUT });
    assert.equal(await page.evaluate(() => document.body.dataset.run), "finished");
    assert.equal(await page.$$eval("[data-run-output] .card-heatmap", (cards) => cards.length), 1, "one heatmap card, redrawn in place");
    assert.equal(await title(), "decision boundary after step 300");

    const built = spiral.output.find((item) => item.kind === "heatmap");
    const drawn = await canvasPixels(page, "[data-run-output] .heatmap-values");
    const { width, height } = built.image;
    assert.equal(drawn.length, height);
    assert.equal(drawn[0].length, width);
    // The docs' heatmap, through its palette: each channel within the colour of a byte either side.
    const bytes = Buffer.from(built.image.pixels, "base64");
    let furthest = 0;
    for (let row = 0; row < height; row++) {
      for (let column = 0; column < width; column++) {
        const level = bytes[row * width + column];
        const near = [Math.max(level - 1, 0), level, Math.min(level + 1, 255)].map((l) => colourOf(l, built.palette));
        const distance = Math.min(...near.map((colour) => Math.max(...colour.map((c, i) => Math.abs(c - drawn[row][column][i])))));
        furthest = Math.max(furthest, distance);
      }
    }
    assert.equal(furthest, 0, "the page's heatmap is the docs' but for a byte at most");
    // Each training point's cell: red (more red than blue) for class 1, blue for class 0.
    const [[x0, x1], [y0, y1]] = [built.x_range, built.y_range];
    const { x, y, class: classes } = built.points;
    let right = 0;
    for (let i = 0; i < x.length; i++) {
      const column = Math.min(width - 1, Math.floor(((x[i] - x0) / (x1 - x0)) * width));
      const row = Math.min(height - 1, Math.floor(((y1 - y[i]) / (y1 - y0)) * height));
      const [red, , blue] = drawn[row][column];
      if ((red > blue) === (classes[i] === 1)) right++;
    }
    // A cell's centre is up to half a cell from its point: nearly all, not all, share the point's side.
    assert.ok(right >= 0.95 * x.length, `${right} of ${x.length} points on their side`);
    // The points are drawn over the values, on a canvas of their own.
    assert.equal(await page.$$eval("[data-run-output] .heatmap-points", (found) => found.length), 1);
  });

  test("nothing left the origin and no script error happened", () => {
    assert.deepEqual(browser.foreign, []);
    assert.deepEqual(pageErrors, []);
  });
});
