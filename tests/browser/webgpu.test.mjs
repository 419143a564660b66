// The kernels reading executed on the browser's WebGPU (SwiftShader in headless
// Chromium): the gallery's transformer, recorded in float32, runs every launch on
// the device, and each launch and each readable matches the numpy interpreter.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { openBrowser, openPlayground, pasteCode, waitForPane } from "./harness.mjs";

const TRANSFORMER = readFileSync(new URL("../../docs/examples/06_char_transformer.py", import.meta.url), "utf8");
// float32 kernels against the float32 interpreter: sums of a few hundred terms in another order.
const TOLERANCE = 1e-4;

test("the transformer runs on the WebGPU backend and matches numpy", async () => {
  const browser = await openBrowser();
  try {
    const { page, errors } = await openPlayground(browser.context);
    await page.selectOption("#backend", "webgpu");
    await pasteCode(page, TRANSFORMER);
    // The backend switch ran the first example already; wait for the transformer's own launches.
    const kernels = await waitForPane(page, "kernels", (text) => /^WebGPU/m.test(text) && text.includes("matmul:"), 240_000);
    assert.match(kernels, /^WebGPU \(.*swiftshader.*\): \d+ launches/im, kernels.slice(-2000));

    const rows = kernels.split("\n").filter((line) => /^\d+\s+\w+:\w+\s/.test(line));
    const launches = Number(/kernels: (\d+) launch/.exec(kernels)[1]);
    assert.ok(launches > 30, `only ${launches} launches`);
    assert.equal(rows.length, 2 * launches, "every launch is listed in the reading and in the timings");
    const timed = rows.slice(launches);
    let compared = 0;
    for (const row of timed) {
      const [, ms, difference] = /(\d+\.\d+) ms\s+(\S+)$/.exec(row);
      assert.ok(Number(ms) >= 0, row);
      if (difference === "-") continue;
      compared += 1;
      assert.ok(Number(difference) <= TOLERANCE, `launch differs from numpy: ${row}`);
    }
    assert.ok(compared > launches / 2, `only ${compared} of ${launches} launches were compared`);
    const readables = [...kernels.matchAll(/^readable (\d+): max \|WebGPU - numpy\| = (\S+)$/gm)];
    assert.equal(readables.length, 2, "logits and loss are both held against numpy");
    for (const [row, , difference] of readables) assert.ok(Number(difference) <= TOLERANCE, row);
    // Every node ran on the device: the program has no host (numpy) step.
    assert.match(kernels, /^kernels: \d+ launches for \d+ nodes, 0 host steps,/m);
    assert.deepEqual(browser.foreign, []);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
  }
});
