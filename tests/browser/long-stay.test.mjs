// A long stay in the playground is as light and as clear as its first minute: run after run and
// edit after edit, what each made (plot charts, graph cards, listeners, observers, workers) is
// released when it is replaced, so the page's counters stay flat; a finished run keeps its plot in
// view while the text scrolls; and the output of a run says so once the code is no longer the run's.

import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { before, describe, test } from "node:test";
import { pasteCode, useBrowser, waitForPane } from "./harness.mjs";

const RUN_TIMEOUT = 120_000;
/** How many runs the counters are held flat over (the issue asks for 20); LONG_STAY_RUNS makes a quicker pass. */
const RUNS = Number(process.env.LONG_STAY_RUNS ?? 20);
/** Runs before the counters are first read: the first runs load code and fill caches once. */
const WARM_UP = 2;
const SHOTS = process.env.LONG_STAY_SHOTS ?? null;

// One run draws a plot 60 times (a card updated at each step, as the gallery's training loops
// do), a graph card once, and prints; its readings draw the same two cards in the live output.
const program = (number) => `print("run", ${number})
from topos import Tape, show
from topos.show import Line, Plot


def build(tape):
    w = tape.parameter(0.5, name="w")
    x = tape.input(2.0)
    return [w, x, (w * x - 1.0) * (w * x - 1.0)]


network, _ = Tape.record(build)
show.graph(network)
curve = show.plot(Plot().title("loss"))
if __name__ == "__main__":
    losses = []
    for step in range(60):
        losses.append(1.0 / (step + 1))
        curve.update(Plot().layer(Line.y(losses).label("loss")).title("loss"))
        show.progress(step + 1, total=60)
    print("steps", len(losses))
`;

const runState = (page) => page.evaluate(() => document.body.dataset.run ?? null);

async function runAndWait(page) {
  await page.click("#run");
  await page.waitForFunction(() => ["finished", "failed", "stopped"].includes(document.body.dataset.run), null, { timeout: RUN_TIMEOUT });
  assert.equal(await runState(page), "finished", await page.$eval("[data-run-output]", (element) => element.textContent));
}

/** How many objects with this prototype are alive in the page's heap (DevTools' queryObjects; it collects garbage first). */
async function alive(cdp, prototype) {
  const { result } = await cdp.send("Runtime.evaluate", { expression: `${prototype}.prototype` });
  const { objects } = await cdp.send("Runtime.queryObjects", { prototypeObjectId: result.objectId });
  const { result: count } = await cdp.send("Runtime.callFunctionOn", {
    objectId: objects.objectId,
    functionDeclaration: "function () { return this.length; }",
    returnByValue: true,
  });
  await cdp.send("Runtime.releaseObject", { objectId: objects.objectId });
  await cdp.send("Runtime.releaseObject", { objectId: result.objectId });
  return count.value;
}

/** The page's counters after a forced garbage collection. */
async function counters(page, cdp) {
  await cdp.send("HeapProfiler.collectGarbage");
  await cdp.send("HeapProfiler.collectGarbage");
  const { metrics } = await cdp.send("Performance.getMetrics");
  const metric = (name) => metrics.find((entry) => entry.name === name).value;
  return {
    canvasesInDocument: await page.evaluate(() => document.querySelectorAll("canvas").length),
    canvasesAlive: await alive(cdp, "HTMLCanvasElement"),
    resizeObservers: await alive(cdp, "ResizeObserver"),
    workers: await alive(cdp, "Worker"),
    nodes: metric("Nodes"),
    listeners: metric("JSEventListeners"),
    heapMB: metric("JSHeapUsedSize") / 2 ** 20,
  };
}

// What the counters may grow by between run WARM_UP + 1 and the last, and why. The page's own canvases and
// its workers are counted exactly. Canvases and ResizeObservers alive in the heap are collected on the
// browser's schedule (an observer let go still counts until its next rendering step), so one or two may
// linger; one left behind a run is RUNS - WARM_UP - 1 (17) more. DOM nodes move by a dozen or two with
// what the page shows (the status line, Monaco's view of the edited line); one plot left behind a run
// adds ~26 nodes and ~8 listeners a run, hundreds over the runs. The heap grows by under a megabyte as V8
// compiles and caches, then levels off; the counters above are what catch a leak, the heap a large one.
const MARGINS = { canvasesInDocument: 0, canvasesAlive: 2, resizeObservers: 2, workers: 0, nodes: 60, listeners: 20, heapMB: 2 };

describe("a long stay in the playground", () => {
  let browser;
  let page;
  let pageErrors;

  useBrowser({ playground: "" }, (opened) => ({ browser, page, errors: pageErrors } = opened));
  before(() => {
    if (SHOTS) mkdirSync(SHOTS, { recursive: true });
  });

  test(`${RUNS} runs and edits leave the page's counters where they were after the warm-up`, async (t) => {
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("Performance.enable");
    const seen = [];
    for (let number = 1; number <= RUNS; number++) {
      // An edit (its readings draw the graph and the plot in the live output), then a run of it.
      const shown = await page.evaluate(() => Number(document.body.dataset.readingsShown));
      await page.evaluate((code) => window.playground.setCode(code), program(number));
      await waitForPane(page, "output", (text) => text.startsWith(`run ${number}\n`));
      await page.waitForFunction((count) => Number(document.body.dataset.readingsShown) > count, shown, { timeout: RUN_TIMEOUT });
      await runAndWait(page);
      assert.equal(await page.$$eval("[data-run-output] .card-plot", (cards) => cards.length), 1, "the run's plot is one card, redrawn");
      if (number > WARM_UP) seen.push({ run: number, ...(await counters(page, cdp)) });
    }
    const [first, last] = [seen[0], seen.at(-1)];
    t.diagnostic(`after run ${first.run}: ${JSON.stringify(first)}`);
    t.diagnostic(`after run ${last.run}: ${JSON.stringify(last)}`);
    const grown = Object.keys(MARGINS).filter((name) => last[name] - first[name] > MARGINS[name]);
    assert.deepEqual(grown, [], `counters grew past their margins:\n${seen.map((entry) => JSON.stringify(entry)).join("\n")}`);
    await cdp.detach();
  });

  test("a finished run that printed many lines keeps its plot wholly in view, and its last line", async () => {
    const lines = `from topos import show
from topos.show import Line, Plot

curve = show.plot(Plot().title("loss"))
if __name__ == "__main__":
    losses = []
    for step in range(120):
        losses.append(1.0 / (step + 1))
        curve.update(Plot().layer(Line.y(losses).label("loss")).title("loss"))
        print(f"step {step:3d}  loss {losses[-1]:.4f}")
    print("the last line")
`;
    await page.evaluate((code) => window.playground.setCode(code), lines);
    await runAndWait(page);
    const boxes = await page.evaluate(() => {
      const pane = document.querySelector("#run-output").getBoundingClientRect();
      const plot = document.querySelector("[data-run-output] .card-plot").getBoundingClientRect();
      const range = document.createRange();
      const text = [...document.querySelectorAll("[data-run-output] .card-print")].at(-1);
      range.selectNodeContents(text);
      const rects = [...range.getClientRects()];
      return { pane: pane.toJSON(), plot: plot.toJSON(), lastLine: rects.at(-1).toJSON() };
    });
    if (SHOTS) await page.screenshot({ path: `${SHOTS}/finished-run.png` });
    const within = (box) => box.top >= boxes.pane.top - 0.5 && box.bottom <= boxes.pane.bottom + 0.5 && box.height > 0;
    assert.ok(within(boxes.plot), `the plot is not wholly in the output pane: ${JSON.stringify(boxes)}`);
    assert.ok(within(boxes.lastLine), `the last printed line is out of view: ${JSON.stringify(boxes)}`);
    // The pinned plot covers none of the last lines: what is under it is above them.
    assert.ok(boxes.lastLine.top >= boxes.plot.bottom, `the plot covers the last line: ${JSON.stringify(boxes)}`);
  });

  test("code pasted after a run says that the run's output is of earlier code, until the next run", async () => {
    const stale = () => page.$eval("#run-output .run-stale", (notice) => !notice.hidden && notice.getBoundingClientRect().height > 0);
    await page.evaluate((code) => window.playground.setCode(code), 'print("the first program")\n');
    await runAndWait(page);
    assert.equal(await stale(), false, "the run's output is of the code shown");
    await pasteCode(page, 'print("a pasted program")\n');
    await page.waitForFunction(() => window.playground.getCode() === 'print("a pasted program")\n');
    // The output pane shows the run's output with a notice in view, or the pasted code's own output.
    const answered = () =>
      page.waitForFunction(() => {
        const notice = document.querySelector("#run-output .run-stale");
        const live = document.querySelector("#output");
        return (notice && !notice.hidden) || (!live.hidden && live.textContent === "a pasted program\n");
      }, null, { timeout: 10_000 });
    await answered().catch(() => {});
    if (await page.$eval("#run-output", (pane) => pane.hidden)) {
      await waitForPane(page, "output", (text) => text === "a pasted program\n");
    } else {
      assert.equal(await stale(), true, "the earlier run's output is shown as the pasted code's");
      const notice = await page.$eval("#run-output .run-stale", (element) => {
        const box = element.getBoundingClientRect();
        const pane = document.querySelector("#run-output").getBoundingClientRect();
        return { text: element.textContent, inView: box.top >= pane.top - 0.5 && box.bottom <= pane.bottom + 0.5 };
      });
      assert.match(notice.text, /earlier/);
      assert.equal(notice.inView, true, "the notice is out of the output pane's view");
      if (SHOTS) await page.screenshot({ path: `${SHOTS}/stale-run-output.png` });
    }
    // Editing the code back to the run's takes the notice away; so does a run of the new code.
    await page.evaluate(() => window.playground.setCode('print("the first program")\n'));
    await page.waitForFunction(() => document.querySelector("#run-output .run-stale").hidden);
    await page.evaluate(() => window.playground.setCode('print("a pasted program")\n'));
    await page.waitForFunction(() => !document.querySelector("#run-output .run-stale").hidden);
    await runAndWait(page);
    assert.equal(await stale(), false);
    assert.equal(await page.$eval("[data-run-output]", (element) => element.textContent), "a pasted program\n");
  });

  test("no script error happened", () => {
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(browser.foreign, []);
  });
});
