// The readings are streamed: each reaches its pane as soon as Python has made it, the
// pane in view first, then the graph, then the rest; a newer edit supersedes an older
// one, none of whose readings is shown after it. The page logs the readings in the order
// they arrive (window.playground.arrivals(): "edit name"), and each pane (its tab panel)
// says which edit its reading is of (data-edit).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { cpythonRun, paneText, READING_NAMES, useBrowser } from "./harness.mjs";

const READINGS = READING_NAMES;
// The readings whose pane is text (the graph is a picture).
const TEXT_READINGS = READINGS.filter((name) => name !== "graph");
const model = (values) => `from topos import Tape\n\ntape = Tape()\nw = tape.parameter(${JSON.stringify(values)})\nloss = (w * w).sum()\n`;

/** The readings that arrived, as [edit, name] pairs in order. */
async function arrivals(page) {
  const log = await page.evaluate(() => window.playground.arrivals());
  return log.map((entry) => {
    const [edit, name] = entry.split(" ");
    return [Number(edit), name];
  });
}

/** Run `codes` one right after the other (as fast edits do); resolves once the page has shown an edit's readings. */
async function edit(page, ...codes) {
  const shown = await page.evaluate(() => Number(document.body.dataset.readingsShown));
  await page.evaluate((codes) => {
    for (const code of codes) window.playground.setCode(code);
  }, codes);
  await page.waitForFunction((count) => Number(document.body.dataset.readingsShown) > count, shown, { timeout: 60_000 });
}

/** The edit each reading's tab panel says its reading is of. */
const paneEdits = (page) =>
  page.$$eval('#panes [role="tabpanel"]', (panels) => Object.fromEntries(panels.map((panel) => [panel.id.replace("panel-", ""), Number(panel.dataset.edit)])));

describe("streamed readings", () => {
  let browser;
  let page;
  let pageErrors;

  useBrowser({ playground: "" }, (opened) => ({ browser, page, errors: pageErrors } = opened));

  test("the pane in view gets its reading first, then the graph, then the others in the page's order", async () => {
    await page.click('[data-tab="plan"]');
    await edit(page, model([1.0, 2.0]));
    const log = await arrivals(page);
    const newest = log.at(-1)[0];
    assert.deepEqual(
      log.filter(([id]) => id === newest).map(([, name]) => name),
      ["plan", "graph", ...READINGS.filter((name) => name !== "plan" && name !== "graph")],
    );
    assert.deepEqual(await paneEdits(page), Object.fromEntries(READINGS.map((name) => [name, newest])));
    assert.equal(await paneText(page, "plan"), cpythonRun(model([1.0, 2.0])).readings.plan.text);
    await page.click('[data-tab="spec"]');
    await edit(page, model([1.0, 2.0, 3.0]));
    const next = (await arrivals(page)).filter(([id]) => id > newest);
    assert.deepEqual(
      next.map(([, name]) => name),
      READINGS,
    );
  });

  test("a newer edit supersedes an older one: no reading of the older is shown, every pane shows the newer's", async () => {
    const older = model([4.0, 5.0]);
    const newer = model([4.0, 5.0, 6.0, 7.0]);
    await page.click('[data-tab="spec"]');
    const before = (await arrivals(page)).at(-1)[0];
    await edit(page, older, newer);
    const log = (await arrivals(page)).filter(([id]) => id > before);
    const newest = log.at(-1)[0];
    assert.equal(newest, before + 2, "the two edits were the page's next two requests");
    assert.deepEqual(log.filter(([id]) => id !== newest), [], "a reading of the superseded edit was shown");
    assert.deepEqual(
      log.map(([, name]) => name),
      READINGS,
    );
    assert.deepEqual(await paneEdits(page), Object.fromEntries(READINGS.map((name) => [name, newest])));
    const expected = cpythonRun(newer).readings;
    for (const name of TEXT_READINGS) assert.equal(await paneText(page, name), expected[name].text, name);
    assert.deepEqual(pageErrors, []);
  });

  test("a reading that raises shows its error in its own pane, and the others still show", async () => {
    // No parameters: the gradient reading has nothing to differentiate with respect to.
    const code = "from topos import Tape\n\ntape = Tape()\nx = tape.input([1.0, 2.0])\ntotal = (x * x).sum()\n";
    await edit(page, code);
    const expected = cpythonRun(code).readings;
    assert.match(expected.gradient.error, /has none/);
    assert.equal(await paneText(page, "gradient"), expected.gradient.error);
    assert.equal(await paneText(page, "spec"), expected.spec.text);
    assert.equal(await page.$eval('[data-reading="gradient"]', (pane) => pane.classList.contains("reading-error")), true);
  });
});
