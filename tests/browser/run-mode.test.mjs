// Run mode in headless Chromium: Run runs the script as a program (as __main__) in a
// worker of its own, and the page shows its output while it runs: printed lines as they
// are printed, a plot card that grows, a progress line. Stop ends an endless loop at once
// and the next run works; the readings keep following edits during a run; an embed has
// Run only where the embedder allows it.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import LZString from "lz-string";
import { BASE_URL, paneText, pasteCode, useBrowser, waitForPane } from "./harness.mjs";

// A run takes its time: the run worker's Python starts with the first run (seconds on a busy machine).
const RUN_TIMEOUT = 120_000;

// Two lines at once: the second is held back (batches go at most every 50 ms), and only the
// run worker's timer can send it while the loop runs.
const ENDLESS = `print("first line", __name__)
print("second line")
while True:
    pass
`;

const GROWING_PLOT = `import time

from topos import show
from topos.show import Line, Plot

STEPS = 300
losses = []
curve = show.plot(Plot().title("loss"))
if __name__ == "__main__":
    for step in range(STEPS):
        losses.append(1.0 / (step + 1))
        curve.update(Plot().layer(Line.y(losses).label("loss")).title("loss"))
        show.progress(step + 1, total=STEPS)
        began = time.monotonic()
        while time.monotonic() - began < 0.01:
            pass
    print("trained", len(losses), "steps")
`;

// The readings record a tape at the top level; the run computes forever under the main guard.
const recordingThenEndless = (opcode) => `from topos import Tape

tape = Tape()
x = tape.input(2.0)
y = tape.input(3.0)
z = x ${opcode} y
if __name__ == "__main__":
    while True:
        pass
`;

const runState = (page) => page.evaluate(() => document.body.dataset.run ?? null);
const runText = (page) => page.$eval("[data-run-output]", (element) => element.textContent);

async function waitForRunState(page, state) {
  await page.waitForFunction((wanted) => document.body.dataset.run === wanted, state, { timeout: RUN_TIMEOUT });
}

async function setCode(page, code) {
  await page.evaluate((text) => window.playground.setCode(text), code);
}

describe("Run mode", () => {
  let browser;
  let page;
  let pageErrors;

  useBrowser({ playground: "" }, (opened) => ({ browser, page, errors: pageErrors } = opened));

  test("the first printed line shows while the run goes, Stop ends an endless loop at once, and the next run works", async () => {
    assert.equal(await page.$eval("#stop", (button) => button.disabled), true, "Stop is on with no run");
    await setCode(page, ENDLESS);
    await page.click("#run");
    // The script never ends by itself: its lines must come while it runs.
    await page.waitForFunction(() => document.querySelector("[data-run-output]")?.textContent.includes("second line"), null, {
      timeout: RUN_TIMEOUT,
    });
    assert.equal(await runState(page), "running");
    assert.equal(await runText(page), "first line __main__\nsecond line\n");
    assert.match(await page.textContent("#run-progress"), /^running \d+\.\d s$/);
    // The click's handler terminates the worker: the run has ended when the click returns.
    await page.click("#stop");
    assert.equal(await runState(page), "stopped");
    assert.match(await page.textContent("#run-progress"), /^stopped after \d+\.\d s$/);
    assert.equal(await page.$eval("#stop", (button) => button.disabled), true);
    // The page still works: the readings follow an edit, and the next run (on a fresh worker) finishes.
    await setCode(page, 'print("again", __name__)\n');
    await waitForPane(page, "output", (text) => text === "again __playground__\n");
    await page.click("#run");
    await waitForRunState(page, "finished");
    assert.equal(await runText(page), "again __main__\n");
    assert.match(await page.textContent("#run-progress"), /^finished in \d+\.\d s$/);
  });

  test("a plot card grows while the run goes, with the steps and steps per second on the progress line", async () => {
    await setCode(page, GROWING_PLOT);
    await page.keyboard.press("ControlOrMeta+Enter");
    const points = () => page.$eval("[data-run-output] .card-plot", (card) => Number(card.dataset.points)).catch(() => null);
    await page.waitForFunction(() => Number(document.querySelector("[data-run-output] .card-plot")?.dataset.points) > 1, null, {
      timeout: RUN_TIMEOUT,
    });
    const early = await points();
    assert.equal(await runState(page), "running", "the run ended before its plot was seen growing");
    await page.waitForFunction(
      (seen) => Number(document.querySelector("[data-run-output] .card-plot")?.dataset.points) > seen,
      early,
      { timeout: RUN_TIMEOUT },
    );
    assert.equal(await runState(page), "running", "the plot grew only once the run had ended");
    await page.waitForFunction(() => / · step \d+ of 300 · [\d.]+ steps\/s$/.test(document.querySelector("#run-progress").textContent), null, {
      timeout: RUN_TIMEOUT,
    });
    await waitForRunState(page, "finished");
    assert.equal(await points(), 300);
    assert.equal(await page.$$eval("[data-run-output] .card-plot", (cards) => cards.length), 1, "the plot was one card, redrawn");
    assert.match(await runText(page), /trained 300 steps\n$/);
    assert.match(await page.textContent("#run-progress"), /^finished in \d+\.\d s · step 300 of 300 · [\d.]+ steps\/s$/);
  });

  test("editing during a run updates the readings before the run ends", async () => {
    await pasteCode(page, recordingThenEndless("*"));
    await waitForPane(page, "spec", (text) => /\bMul\b/.test(text));
    await page.click("#run");
    await waitForRunState(page, "running");
    await pasteCode(page, recordingThenEndless("-"));
    await waitForPane(page, "spec", (text) => /\bSub\b/.test(text) && !/\bMul\b/.test(text));
    assert.equal(await runState(page), "running", "the readings waited for the run");
    await page.click("#stop");
    assert.equal(await runState(page), "stopped");
  });

  test("the script's error shows as the readings' errors do, after the run's output", async () => {
    await setCode(page, 'print("before")\nif __name__ == "__main__":\n    1 / 0\n');
    // The readings come first: an answer after the run's would clear the error panel, as it should.
    await waitForPane(page, "output", (text) => text === "before\n");
    await page.click("#run");
    await waitForRunState(page, "failed");
    assert.equal(await page.textContent("#error-summary"), "ZeroDivisionError on line 3: division by zero");
    assert.match(await page.textContent("#error-traceback"), /line 3/);
    assert.match(await runText(page), /^before\nZeroDivisionError on line 3: division by zero/);
    assert.match(await page.textContent("#run-progress"), /^failed after \d+\.\d s: ZeroDivisionError on line 3$/);
    // The output of the readings is a click away, and it is the readings' own.
    await page.click("#show-live-output");
    assert.equal(await page.$eval("#output", (element) => element.hidden), false);
    assert.equal(await paneText(page, "output"), "before\n");
  });

  test("nothing left the origin and no script error happened", () => {
    assert.deepEqual(browser.foreign, []);
    assert.deepEqual(pageErrors, []);
  });
});

describe("Run mode in an embed", () => {
  let browser;

  useBrowser({}, (opened) => ({ browser } = opened));

  const embedUrl = (query, code) =>
    new URL(`embed.html?${query}#code=v1:${LZString.compressToEncodedURIComponent(code)}`, BASE_URL).href;

  test("an embed with run=allow has Run, and runs the code as a program", async () => {
    const page = await browser.context.newPage();
    await page.goto(embedUrl("run=allow&start=now&readings=spec,output", 'print("ran as", __name__)\n'));
    await page.waitForSelector("#embed-run:not([hidden])");
    await page.click("#embed-run");
    await waitForRunState(page, "finished");
    assert.equal(await runText(page), "ran as __main__\n");
    assert.match(await page.textContent("#embed-run-progress"), /^finished in \d+\.\d s$/);
    await page.close();
  });

  test("an embed without it has no Run", async () => {
    const page = await browser.context.newPage();
    await page.goto(embedUrl("start=now&readings=spec,output", 'print("ran as", __name__)\n'));
    await page.waitForSelector('body[data-status="ok"]', { timeout: RUN_TIMEOUT });
    assert.equal(await page.$eval("#embed-run", (button) => button.hidden), true);
    assert.equal(await page.$eval("#embed-stop", (button) => button.hidden), true);
    // Ctrl+Enter runs the readings again, as before.
    const runs = Number(await page.evaluate(() => document.body.dataset.runs));
    await page.keyboard.press("ControlOrMeta+Enter");
    await page.waitForFunction((count) => Number(document.body.dataset.runs) > count, runs, { timeout: RUN_TIMEOUT });
    assert.equal(await runState(page), null);
    await page.close();
  });

  test("nothing left the origin", () => {
    assert.deepEqual(browser.foreign, []);
  });
});
