// The HLO pane's switch: the plan's module (what the pane shows first, unchanged) or the module
// of a whole training step, as CPython's topos.playground makes it, with lines that select nodes.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { cpythonRun, paneText, pasteCode, useBrowser, waitForPane } from "./harness.mjs";
import { SEED_DESCRIBE, SEED_HLO, SEED_RECORDING } from "./seed.mjs";

describe("the HLO pane's training step", () => {
  let browser;
  let page;

  useBrowser({ playground: "" }, (opened) => ({ browser, page } = opened));

  test("shows the plan's module, then on the switch the training step's, and back", async () => {
    const step = cpythonRun(SEED_RECORDING).readings.hlo.step.text;
    assert.match(step, /%update\d+ = /);
    await pasteCode(page, SEED_RECORDING);
    await waitForPane(page, "spec", (text) => text === SEED_DESCRIBE);
    await page.click('[data-tab="hlo"]');
    assert.equal(await paneText(page, "hlo"), SEED_HLO);
    assert.equal(await page.$eval('[data-module="plan"]', (b) => b.ariaPressed), "true");
    await page.click('[data-module="step"]');
    assert.equal(await paneText(page, "hlo"), step);
    assert.equal(await page.$eval('[data-module="step"]', (b) => b.ariaPressed), "true");
    // A line of the backward pass selects its node in the other readings.
    await page.click('[data-reading="hlo"] [data-nodes="5"]');
    const linked = await page.$$eval('[data-reading="spec"] .linked', (lines) => lines.map((l) => l.textContent));
    assert.ok(linked.length === 1 && /^\s*5\b/.test(linked[0]), JSON.stringify(linked));
    await page.click('[data-module="plan"]');
    assert.equal(await paneText(page, "hlo"), SEED_HLO);
  });
});
