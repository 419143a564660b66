// The shared test vectors (tests/cases/primitives.json) replayed in the browser: each case is
// recorded by topos.playground in Pyodide, and its kernels run on the browser's WebGPU
// (SwiftShader in headless Chromium) by topos.webgpu's runner over its browser device, as in the
// playground, on a page of their own (cases-page.mjs). Every case must agree with its expected values within its
// stored tolerance (tests/cases/README.md), on Pyodide's numpy interpreter and on WebGPU, as
// tests/python/test_kernels_cases.py asks of numpy and wgpu-py.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { build } from "vite";
import { BASE_URL, openBrowser } from "./harness.mjs";

const ROOT = new URL("../../", import.meta.url);
const CASES = readFileSync(new URL("tests/cases/primitives.json", ROOT), "utf8");
const KERNEL_CASES = readFileSync(new URL("tests/python/kernel_cases.py", ROOT), "utf8");

/** cases-page.mjs bundled with what it imports from the site (callPython) into one ES module, in memory. */
async function buildPageScript() {
  const built = await build({
    configFile: false,
    root: fileURLToPath(ROOT),
    publicDir: false,
    logLevel: "warn",
    build: {
      write: false,
      target: "es2022",
      minify: false,
      rolldownOptions: { input: fileURLToPath(new URL("tests/browser/cases-page.mjs", ROOT)) },
    },
  });
  const chunks = [built].flat().flatMap((result) => result.output).filter((file) => file.type === "chunk");
  assert.equal(chunks.length, 1, `the page's script should be one module: ${chunks.map((chunk) => chunk.fileName)}`);
  return chunks[0].code;
}

test("every shared test vector agrees on the browser's WebGPU and on Pyodide's numpy", async () => {
  // The browser starts (in its own processes) while Vite bundles the page's script.
  const launching = openBrowser();
  const script = await buildPageScript().catch(async (error) => {
    await (await launching).close();
    throw error;
  });
  const browser = await launching;
  try {
    const page = await browser.context.newPage();
    const errors = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    // The page lies beside the built site, whose pyodide/ folder it loads Python from.
    const pageUrl = new URL("cases-replay.html", BASE_URL).href;
    const html = '<!doctype html><meta charset="utf-8"><title>cases</title><script type="module" src="cases-replay.js"></script>';
    await page.route(pageUrl, (route) => route.fulfill({ contentType: "text/html", body: html }));
    await page.route(new URL("cases-replay.js", BASE_URL).href, (route) => route.fulfill({ contentType: "text/javascript", body: script }));
    await page.goto(pageUrl);
    await page.waitForFunction(() => typeof window.replayCases === "function");

    const { adapter, results } = await page.evaluate(([kernelCases, cases]) => window.replayCases(kernelCases, cases), [KERNEL_CASES, CASES]);
    const names = JSON.parse(CASES).cases.map((c) => c.name);
    assert.deepEqual(results.map((result) => result.name), names, "every case was replayed, in order");
    const failures = results.filter((result) => result.problem !== null).map((result) => `${result.name}: ${result.problem}`);
    assert.deepEqual(failures, [], `on ${adapter}`);
    assert.deepEqual(browser.foreign, []);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
  }
});
