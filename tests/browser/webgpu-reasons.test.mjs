// The page names the reason when its kernels do not run on WebGPU. Each case is a browser played
// by rewriting the Python worker's script before it runs (as webgpu-python.test.mjs does for JSPI):
// no JSPI (WebAssembly.Suspending taken away: Python cannot wait for WebGPU's promises), no WebGPU
// (navigator.gpu taken away), no adapter (requestAdapter answers null); and headless Chromium as it
// is, whose only adapter is SwiftShader, a fallback, which "auto" leaves to numpy. After the first
// readings the status bar says "kernels on numpy: <why>", and the backend picker's tooltip holds
// Python's whole message. Each case is a fresh profile of its own in the file's one browser: the
// rewrite is a route of that profile, so no browser needs flags of its own.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { useBrowser } from "./harness.mjs";

const BROWSERS = {
  "no JSPI": {
    prelude: "delete WebAssembly.Suspending;",
    status: "kernels on numpy: this browser has no JSPI, so Python cannot wait for WebGPU",
    title: /^no WebGPU: Python cannot wait for WebGPU here: this browser lacks JavaScript Promise Integration \(JSPI\)/,
  },
  "no WebGPU": {
    prelude: "delete WorkerNavigator.prototype.gpu;",
    status: "kernels on numpy: this browser has no WebGPU",
    title: /^no WebGPU: this browser has no WebGPU \(navigator\.gpu\)$/,
  },
  "no adapter": {
    prelude: "GPU.prototype.requestAdapter = async () => null;",
    status: "kernels on numpy: WebGPU found no adapter",
    title: /^no WebGPU: WebGPU found no adapter$/,
  },
  "a fallback adapter": {
    prelude: "",
    status: "kernels on numpy: the WebGPU adapter is a software fallback (Backend: WebGPU uses it)",
    title: /^WebGPU: .*\(software fallback\)$/i,
  },
};

for (const [name, { prelude, status, title }] of Object.entries(BROWSERS)) {
  describe(`a browser with ${name}`, () => {
    // The service worker may still be fetching the worker's script (its precache) when the block
    // closes its profile: that fetch then fails with the context ("Response has been disposed"),
    // which says nothing about the page. Any failure before the test ends is the test's.
    let closing = false;
    let opened;
    const rewrite = (browser) =>
      // Registered after the harness's own route, so it is consulted first.
      browser.context.route(/\/assets\/worker-[^/]*\.js$/, async (route) => {
        try {
          const response = await route.fetch();
          await route.fulfill({ response, body: `${prelude}\n${await response.text()}` });
        } catch (error) {
          if (!closing) throw error;
        }
      });
    useBrowser({ playground: "", prepare: prelude ? rewrite : undefined }, (value) => (opened = value));

    test(`with ${name}, the status bar says why the kernels run on numpy`, async () => {
      try {
        const { browser, page, errors } = opened;
        const line = await page.$eval("#status", (element) => element.textContent);
        assert.match(line, /^readings in \d+ ms \(Python \d+ ms\) · /);
        assert.equal(line.split(" · ").slice(1).join(" · "), status);
        assert.match(await page.$eval("#backend", (picker) => picker.title), title);
        assert.deepEqual(browser.foreign, []);
        assert.deepEqual(errors, []);
      } finally {
        closing = true;
      }
    });
  });
}
