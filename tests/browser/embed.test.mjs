// The embeddable playground (embed.html) inside a page of another origin: a host page
// served here on another port embeds two playgrounds (one read-only, one editable),
// sets their code through postMessage and reads their readings back, which must be
// exactly what CPython's topos.playground computes for the same code. Messages from an
// origin not on an embed's allow-list are ignored, and an embed says nothing to a
// parent whose origin is not on its list. Both embeds share one Python.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";
import LZString from "lz-string";
import { BASE_URL, cpythonRun, READING_NAMES, useBrowser } from "./harness.mjs";
import { SEED_DESCRIBE, SEED_RECORDING } from "./seed.mjs";

const ROOT = new URL("../../", import.meta.url);
const MATMUL = readFileSync(new URL("docs/examples/03_matmul.py", ROOT), "utf8");
// The readings whose pane is text (the graph is a picture).
const TEXT_READINGS = READING_NAMES.filter((name) => name !== "graph");

function embedSrc(id, params, origins) {
  const query = new URLSearchParams({ id, ...params, origins });
  return new URL(`embed.html?${query}`, BASE_URL).href;
}

/**
 * The host page on 127.0.0.1:<port>, and a "foreign" page on localhost:<port> (another
 * origin) that the host page frames and that posts a message of its own to embed A.
 */
async function startHost() {
  let port;
  const server = createServer((request, response) => {
    const url = new URL(request.url, `http://${request.headers.host}`);
    const host = `http://127.0.0.1:${port}`;
    const foreign = `http://localhost:${port}`;
    let body;
    if (url.pathname === "/host.html") {
      const frames = [
        ["A", embedSrc("A", { mode: "readonly", readings: "spec,plan,hlo", show: "plan" }, host)],
        ["B", embedSrc("B", { example: "01_scalar_chain", timeLimit: "3000" }, `${foreign},${host}`)],
        // C lists only the foreign origin: the host page may not talk to it, and hears nothing from it.
        ["C", embedSrc("C", { readings: "spec" }, foreign)],
      ];
      body = `<!doctype html><meta charset="utf-8"><title>host</title>
<style>body { display: flex; gap: 8px; align-items: start; margin: 0 } iframe { width: 420px; height: 200px; border: 1px solid #888 }</style>
${frames.map(([name, src]) => `<iframe id="${name}" src="${src.replaceAll("&", "&amp;")}"></iframe>`).join("\n")}
<iframe id="foreign" src="${foreign}/foreign.html" style="width: 60px; height: 60px"></iframe>
<script>
  window.received = [];
  const named = ["A", "B", "C", "foreign"].map((id) => [id, document.getElementById(id)]);
  addEventListener("message", (event) => {
    const from = (named.find(([, frame]) => frame.contentWindow === event.source) ?? ["unknown"])[0];
    received.push({ from, origin: event.origin, data: event.data });
    if (event.data && event.data.type === "topos:height") document.getElementById(from).style.height = event.data.height + "px";
  });
  window.send = (id, message) => document.getElementById(id).contentWindow.postMessage(message, new URL(document.getElementById(id).src).origin);
</script>`;
    } else if (url.pathname === "/foreign.html") {
      body = `<!doctype html><meta charset="utf-8"><title>foreign</title><script>
  window.sendToA = (code) => parent.frames[0].postMessage({ type: "topos:set-code", code }, "*");
</script>`;
    } else {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(body);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = server.address().port;
  return { server, port, hostUrl: `http://127.0.0.1:${port}/host.html` };
}

describe("the embed", () => {
  let host;
  let browser;
  let page;
  const pageErrors = [];
  const requests = [];

  /** Messages the host page received from embed `from` (optionally of one type), oldest first. */
  const received = (from, type) =>
    page.evaluate(([from, type]) => window.received.filter((m) => m.from === from && (!type || m.data.type === type)), [from, type]);

  async function waitForMessage(from, predicate, what, timeout = 150_000) {
    const started = Date.now();
    while (Date.now() - started < timeout) {
      const match = (await received(from)).find((message) => predicate(message.data));
      if (match) return match;
      await page.waitForTimeout(100);
    }
    const seen = (await received(from)).map((m) => `${m.data.type} ${m.data.status ?? ""}`);
    throw new Error(`embed ${from}: no ${what} within ${timeout} ms; it sent: ${seen.join(", ")}`);
  }

  const frame = (id) => page.frames().find((candidate) => candidate.url().includes(`id=${id}&`));

  before(async () => {
    host = await startHost();
  });
  useBrowser(
    {
      prepare: async (opened) => {
        // The harness aborts every request off the playground's origin; the host page's two origins are ours too.
        for (const origin of [`http://127.0.0.1:${host.port}`, `http://localhost:${host.port}`]) {
          await opened.context.route(`${origin}/**`, (route) => route.continue());
        }
        opened.context.on("request", (request) => requests.push(request.url()));
      },
    },
    (opened) => ({ browser } = opened),
  );
  before(async () => {
    page = await browser.context.newPage();
    page.on("pageerror", (error) => pageErrors.push(String(error)));
    await page.goto(host.hostUrl);
  });
  after(() => host?.server.close());

  test("two embeds load, run their first code on one shared Python, and report their height", async () => {
    const ready = await waitForMessage("A", (m) => m.type === "topos:ready", "ready message");
    assert.deepEqual(ready.data.readings, ["spec", "plan", "hlo"]);
    assert.equal(ready.data.editable, false);
    assert.equal(ready.origin, new URL(BASE_URL).origin);
    // B's code came from the gallery (?example=); A has none until the host sends it.
    const gallery = readFileSync(new URL("docs/examples/01_scalar_chain.py", ROOT), "utf8");
    const first = await waitForMessage("B", (m) => m.type === "topos:readings-changed" && m.status === "ok", "first readings");
    assert.equal(first.data.code, gallery);
    assert.equal(first.data.readings.spec.text, cpythonRun(gallery).readings.spec.text);

    // One Pyodide for both: the wasm was fetched once, and one embed leads while the other follows.
    // (C, in view too, takes part: it has no code, but starts Python to be ready for some.)
    const roles = [];
    for (const id of ["A", "B", "C"]) roles.push(await frame(id).evaluate(() => document.body.dataset.python));
    assert.deepEqual(roles.sort(), ["follower", "follower", "leader"]);
    assert.equal(requests.filter((url) => url.endsWith("/pyodide/pyodide.asm.wasm")).length, 1);

    // The host sized B's iframe from B's last height message: exactly its content.
    const heights = await received("B", "topos:height");
    const reported = heights.at(-1).data.height;
    assert.equal(reported, await frame("B").evaluate(() => Math.ceil(document.body.getBoundingClientRect().height)));
    assert.equal(await page.$eval("#B", (iframe) => iframe.getBoundingClientRect().height), reported + 2); // + its border
  });

  test("set-code runs the code, and the readings that come back are CPython's for it", async () => {
    const oracleA = cpythonRun(SEED_RECORDING);
    const oracleB = cpythonRun(MATMUL);
    assert.equal(oracleA.readings.spec.text, SEED_DESCRIBE); // the contract's text: a check of the oracle itself
    await page.evaluate(([a, b]) => {
      window.send("A", { type: "topos:set-code", code: a });
      window.send("B", { type: "topos:set-code", code: b });
    }, [SEED_RECORDING, MATMUL]);
    const changed = (code) => (m) => m.type === "topos:readings-changed" && m.code === code && m.status !== "loading";
    const a = (await waitForMessage("A", changed(SEED_RECORDING), "readings of the seed")).data;
    const b = (await waitForMessage("B", changed(MATMUL), "readings of the matmul example")).data;
    for (const [got, oracle] of [[a, oracleA], [b, oracleB]]) {
      assert.equal(got.status, "ok");
      assert.equal(got.error, null);
      for (const name of TEXT_READINGS) assert.equal(got.readings[name].text, oracle.readings[name].text, name);
      assert.deepEqual(got.readings.graph.graph, oracle.readings.graph.graph);
      assert.equal(got.outputText, oracle.output_text);
      assert.deepEqual(got.output, oracle.output);
    }

    // What the read-only embed shows: its three tabs, the plan open, the code as text with no editor.
    const frameA = frame("A");
    assert.deepEqual(await frameA.$$eval("[data-tab]", (tabs) => tabs.map((t) => t.dataset.tab)), ["spec", "plan", "hlo"]);
    assert.equal(await frameA.$eval('[data-reading="plan"]', (pane) => pane.textContent), oracleA.readings.plan.text);
    assert.equal(await frameA.$eval('[data-reading="plan"]', (pane) => pane.hidden), false);
    assert.equal(await frameA.$("textarea"), null);
    assert.equal(await frameA.$eval(".embed-readonly-code", (pre) => pre.textContent), SEED_RECORDING);
    // "open in the playground" carries the code in the playground's share format.
    const href = await frameA.$eval("#embed-open", (link) => link.href);
    assert.ok(href.startsWith(new URL("#code=v1:", BASE_URL).href), href);
    assert.equal(LZString.decompressFromEncodedURIComponent(href.split("#code=v1:")[1]), SEED_RECORDING);
  });

  test("get-readings is answered with the newest readings, and a malformed message is rejected", async () => {
    await page.evaluate(() => window.send("B", { type: "topos:get-readings", request: "r-1" }));
    const answer = (await waitForMessage("B", (m) => m.type === "topos:readings" && m.request === "r-1", "answer")).data;
    assert.equal(answer.code, MATMUL);
    assert.equal(answer.readings.hlo.text, cpythonRun(MATMUL).readings.hlo.text);
    await page.evaluate(() => window.send("B", { type: "topos:set-code", code: 42 }));
    const rejected = (await waitForMessage("B", (m) => m.type === "topos:rejected", "rejection")).data;
    assert.match(rejected.reason, /code, a string/);
  });

  test("messages from an origin that is not on the allow-list are ignored", async () => {
    const runsBefore = await frame("A").evaluate(() => window.embed.state().runs);
    // From the foreign origin (localhost:<port>), a frame of the host page: not on A's list.
    const foreign = page.frames().find((candidate) => candidate.url().endsWith("/foreign.html"));
    await foreign.evaluate(() => window.sendToA("print('owned')"));
    // From the host page itself to C, whose list names only the foreign origin.
    await page.evaluate(() => window.send("C", { type: "topos:set-code", code: "print('owned')" }));
    // Then an allowed message to A: it is answered, and A's code and runs are as they were.
    await page.waitForTimeout(1500);
    await page.evaluate(() => window.send("A", { type: "topos:get-readings", request: "after" }));
    const answer = (await waitForMessage("A", (m) => m.type === "topos:readings" && m.request === "after", "answer")).data;
    assert.equal(answer.code, SEED_RECORDING);
    assert.equal(answer.runs, runsBefore);
    assert.equal(await frame("C").evaluate(() => window.embed.getCode()), "");
    // C posts only to its allowed origin, which is not its parent's: the host page heard nothing from it.
    assert.deepEqual(await received("C"), []);
    assert.equal(await frame("C").evaluate(() => document.body.dataset.state), "loaded");
  });

  test("an endless loop is stopped by its embed's time limit; the shared Python restarts and serves both", async () => {
    await page.evaluate(() => window.send("B", { type: "topos:set-code", code: "while True:\n    pass\n" }));
    const stopped = (await waitForMessage("B", (m) => m.type === "topos:readings-changed" && m.status === "stopped", "stop")).data;
    assert.match(stopped.stopped, /longer than 3 s/);
    await page.evaluate(([a, b]) => {
      window.send("A", { type: "topos:set-code", code: a + "print('again')\n" });
      window.send("B", { type: "topos:set-code", code: b });
    }, [SEED_RECORDING, MATMUL]);
    const again = (m) => m.type === "topos:readings-changed" && m.status === "ok" && m.code.endsWith("print('again')\n");
    assert.match((await waitForMessage("A", again, "readings after the restart")).data.outputText, /again\n$/);
    const b = await waitForMessage("B", (m) => m.type === "topos:readings-changed" && m.status === "ok" && m.runs > stopped.runs, "readings");
    assert.equal(b.data.readings.plan.text, cpythonRun(MATMUL).readings.plan.text);
  });

  test("when the leading embed goes away, another is elected and starts Python", async () => {
    const roles = {};
    for (const id of ["A", "B", "C"]) roles[id] = await frame(id).evaluate(() => document.body.dataset.python);
    const leader = Object.keys(roles).find((id) => roles[id] === "leader");
    const survivor = ["A", "B"].find((id) => id !== leader);
    await page.evaluate((id) => document.getElementById(id).remove(), leader);
    const code = "from topos import Tape\ntape = Tape()\nw = tape.parameter(2.0)\nprint((w * w).exp().shape)\n";
    await page.evaluate(([id, text]) => window.send(id, { type: "topos:set-code", code: text }), [survivor, code]);
    const result = (await waitForMessage(survivor, (m) => m.type === "topos:readings-changed" && m.code === code, "readings")).data;
    assert.equal(result.status, "ok");
    assert.equal(result.readings.spec.text, cpythonRun(code).readings.spec.text);
    const after = [];
    for (const id of ["A", "B", "C"].filter((id) => id !== leader)) after.push(await frame(id).evaluate(() => document.body.dataset.python));
    assert.deepEqual(after.sort(), ["follower", "leader"]);
  });

  test("nothing left the local servers and no page raised", () => {
    assert.deepEqual(browser.foreign, []);
    assert.deepEqual(pageErrors, []);
  });
});
