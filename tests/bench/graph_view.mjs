// The graph view with thousands of nodes, in headless Chromium (not part of `npm test`): for each
// recording below, the time from the paste to the graph drawn, what dagre took in its worker, the
// boxes drawn, the longest main-thread task while it was drawn (PerformanceObserver "longtask"),
// and the frames while the wheel zooms and a drag pans it (requestAnimationFrame intervals).
//
// Usage: serve a build (npx vite build; node tests/browser/static-server.mjs dist --base /deploy/topos/ --port N)
// and PLAYGROUND_URL=http://127.0.0.1:N/deploy/topos/ node tests/bench/graph_view.mjs

import { readFileSync } from "node:fs";

const harness = await import("../browser/harness.mjs");
const TRANSFORMER = readFileSync(new URL("../../docs/examples/06_char_transformer.py", import.meta.url), "utf8");

const grouped = (blocks) => `import numpy as np
import topos
from topos import Tape


def block(x, w, b):
    return topos.gelu(x @ w + b) + x


def build(tape):
    x = tape.input(np.ones((4, 8)))
    for _ in range(${blocks}):
        x = block(x, tape.parameter(np.eye(8)), tape.parameter(np.zeros(8)))
    return [x.sum()]


network, (loss,) = Tape.record(build)
`;

const flat = (steps) => `from topos import Tape

tape = Tape()
x = tape.parameter(1.0)
for _ in range(${steps}):
    x = x * 0.5 + x
`;

const CASES = [
  ["the gallery's transformer (249 nodes)", TRANSFORMER],
  ["grouped: 400 calls of a block, parameters at the top level (2,802 nodes)", grouped(400)],
  ["flat: a loop at the top level, one line (3,001 nodes: one group of that line)", flat(1000)],
];

const browser = await harness.openBrowser();
try {
  const { page } = await harness.openPlayground(browser.context);
  await page.waitForSelector('#editor[data-editor="monaco"] .monaco-editor');
  await page.click("#tab-graph");
  await page.evaluate(() => {
    window.__longTasks = [];
    new PerformanceObserver((list) => window.__longTasks.push(...list.getEntries().map((entry) => entry.duration))).observe({ type: "longtask" });
  });
  for (const [name, code] of CASES) {
    const shownBefore = await page.$eval("body", (body) => Number(body.dataset.readingsShown));
    await page.evaluate(() => (window.__longTasks = []));
    const started = Date.now();
    await harness.pasteCode(page, code);
    await page.waitForFunction((count) => Number(document.body.dataset.readingsShown) > count, shownBefore, { timeout: 300_000 });
    await page.waitForFunction(() => document.querySelector('[data-reading="graph"] .graph-view')?.ariaBusy === "false", null, { timeout: 300_000 });
    const drawnMs = Date.now() - started;
    const stats = await page.$eval('[data-reading="graph"] .graph-view', (view) => ({
      boxes: Number(view.dataset.boxes),
      layoutMs: Number(view.dataset.layoutMs),
      drawMs: Number(view.dataset.drawMs),
      nodes: document.querySelector('[data-reading="spec"]').textContent.split("\n").length - 1,
    }));
    const longest = await page.evaluate(() => Math.max(0, ...window.__longTasks));
    // Frames while zooming (30 wheel steps) and panning (30 drag steps), one step a frame.
    const box = await (await page.$('[data-reading="graph"] .graph-canvas')).boundingBox();
    const cx = box.x + box.width / 2;
    const cy = box.y + box.height / 2;
    await page.mouse.move(cx, cy);
    await page.evaluate(() => {
      window.__frames = [];
      let last = performance.now();
      const tick = (now) => {
        window.__frames.push(now - last);
        last = now;
        if (window.__frames.length < 400 && !window.__stop) requestAnimationFrame(tick);
      };
      window.__stop = false;
      requestAnimationFrame(tick);
    });
    for (let step = 0; step < 30; step++) await page.mouse.wheel(0, step < 15 ? -60 : 60);
    await page.mouse.down();
    for (let step = 0; step < 30; step++) await page.mouse.move(cx - step * 8, cy - step * 4);
    await page.mouse.up();
    const frames = await page.evaluate(() => {
      window.__stop = true;
      return window.__frames.slice(1);
    });
    frames.sort((a, b) => a - b);
    const median = frames[Math.floor(frames.length / 2)];
    const p95 = frames[Math.floor(frames.length * 0.95)];
    console.log(`${name}`);
    console.log(`  ${stats.nodes} nodes drawn as ${stats.boxes} boxes; paste to graph drawn ${drawnMs} ms (dagre in its worker ${stats.layoutMs} ms, the drawing built on the page in ${stats.drawMs} ms)`);
    console.log(`  longest main-thread task while it was read and drawn: ${longest.toFixed(0)} ms`);
    console.log(`  zoom and pan: ${frames.length} frames, median ${median.toFixed(1)} ms, p95 ${p95.toFixed(1)} ms, longest ${frames.at(-1).toFixed(1)} ms`);
  }
} finally {
  await browser.close();
}
