// The offline app: one visit installs the service worker, which precaches the whole site
// (each file downloaded once); a revisit fetches only sw.js; with the network cut the
// playground starts and every reading updates on an edit, and a docs page runs its code;
// a new deployment shows the update prompt, and accepting it loads the new build.
//
// Two builds of the site (build ids "pwa-test-a" and "pwa-test-b") are served one after
// the other from the same port by a local server (static-server.mjs), so that the second
// is a new deployment of the same origin. The second is built in the background, right after
// the first, while the first three tests run. They are served under a sub-path of their own
// (not the one the rest of the suite uses), as a static host serves a project page: the
// worker's scope, the precache and the manifest must all live there.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { firstVisitRequests, precacheEntries } from "../../web/scripts/report-size.mjs";
import { openBrowser, paneText, pasteCode, READING_NAMES, waitForPane } from "./harness.mjs";
import { SEED_DESCRIBE, SEED_RECORDING } from "./seed.mjs";
import { startStaticServer } from "./static-server.mjs";

const READINGS = [...READING_NAMES, "output"];
const START_TIMEOUT = 120_000;
const SUB_PATH = "/some/sub/path/";

const NEW_BUILD = "pwa-test-b";

/** A build of the site into `outDir`, named `buildId`; resolves when it is written. */
function build(outDir, buildId) {
  const child = spawn("npx", ["vite", "build", "--logLevel", "warn", "--outDir", outDir, "--emptyOutDir"], {
    env: { ...process.env, TOPOS_BUILD_ID: buildId },
    stdio: ["ignore", "inherit", "inherit"],
  });
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`vite build of ${buildId} exited with ${code}`))));
  });
}

/** The paths served in full (status 200) since log entry `from`, with how many times each. */
function servedInFull(server, from = 0) {
  const counts = new Map();
  for (const entry of server.log.slice(from)) {
    if (entry.status === 200) counts.set(entry.path, (counts.get(entry.path) ?? 0) + 1);
  }
  return counts;
}

async function waitForReadings(page) {
  await page.waitForSelector('body[data-state="ready"]', { timeout: START_TIMEOUT });
}

/** Wait until the service worker of the page's origin is activated (its precache is complete). */
async function waitForActivatedWorker(page) {
  await page.waitForFunction(
    async () => (await navigator.serviceWorker.getRegistration())?.active?.state === "activated",
    null,
    { timeout: START_TIMEOUT, polling: 200 },
  );
}

describe("the offline app", () => {
  const folder = mkdtempSync(join(tmpdir(), "topos-pwa-"));
  const first = join(folder, "a");
  const second = join(folder, "b");
  let secondBuilt;
  let server;
  let browser;
  let page;
  const pageErrors = [];

  before(async () => {
    // The browser starts while the first build is written; nothing asks the server for a page before.
    server = await startStaticServer(first, { base: SUB_PATH });
    const [built, opened] = await Promise.allSettled([build(first, "pwa-test-a"), openBrowser({ baseUrl: server.url, intercept: false })]);
    browser = opened.value;
    for (const outcome of [built, opened]) if (outcome.status === "rejected") throw outcome.reason;
    secondBuilt = build(second, NEW_BUILD);
    secondBuilt.catch(() => {}); // awaited by the last test, where a failed build shows
    page = await browser.context.newPage();
    page.on("pageerror", (error) => pageErrors.push(String(error)));
  });

  after(async () => {
    await secondBuilt?.catch(() => {});
    await browser?.close();
    await server?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  test("a first visit downloads every file of the site once, and installs the service worker", async () => {
    await page.goto(server.url);
    await waitForReadings(page);
    await page.waitForSelector('body[data-offline="ready"]', { timeout: START_TIMEOUT });
    assert.match(await page.textContent("#pwa-offline"), /Ready to work offline/);
    await waitForActivatedWorker(page);
    await page.waitForSelector('#editor[data-editor="monaco"] .monaco-editor');
    assert.equal(await page.evaluate(() => document.documentElement.dataset.build), "pwa-test-a");

    // The worker lives in the site's folder and serves exactly that folder.
    const registration = await page.evaluate(async () => {
      const found = await navigator.serviceWorker.getRegistration();
      return { scope: found.scope, script: found.active.scriptURL };
    });
    assert.deepEqual(registration, { scope: server.url, script: `${server.url}sw.js` });
    // The installed app opens the site where it was deployed.
    const manifestUrl = await page.$eval('link[rel="manifest"]', (link) => link.href);
    assert.equal(manifestUrl, `${server.url}manifest.webmanifest`);
    const manifest = JSON.parse(readFileSync(join(first, "manifest.webmanifest"), "utf8"));
    assert.equal(new URL(manifest.start_url, manifestUrl).href, server.url);
    assert.equal(new URL(manifest.scope, manifestUrl).href, server.url);
    for (const icon of manifest.icons) assert.ok(new URL(icon.src, manifestUrl).href.startsWith(server.url), icon.src);

    const served = servedInFull(server);
    // Exactly the files the size report counts for a first visit (web/scripts/report-size.mjs) ...
    assert.deepEqual([...served.keys()].sort(), firstVisitRequests(first).map(server.pathOf).sort());
    // ... each sent once: the worker's install revalidated what the page had loaded (304s).
    const twice = [...served].filter(([, count]) => count > 1);
    assert.deepEqual(twice, [], "files downloaded more than once");
    assert.deepEqual(server.log.filter((entry) => entry.status === 404), [], "requests for missing files");
    assert.deepEqual(browser.foreign, []);
  });

  test("a revisit with a warm cache fetches only sw.js, under 100 kB", async () => {
    const mark = server.log.length;
    await page.reload();
    await waitForReadings(page);
    assert.ok(await page.evaluate(() => Boolean(navigator.serviceWorker.controller)), "the page is not served by the worker");
    // The update check may land a moment after the page is ready.
    const started = Date.now();
    while (!server.log.slice(mark).some((entry) => entry.path === server.pathOf("sw.js")) && Date.now() - started < 10_000) await page.waitForTimeout(50);
    const requests = server.log.slice(mark);
    assert.deepEqual([...new Set(requests.map((entry) => entry.path))], [server.pathOf("sw.js")], JSON.stringify(requests));
    const bytes = requests.reduce((total, entry) => total + entry.bytes, 0);
    assert.ok(bytes < 100_000, `the revisit transferred ${bytes} bytes`);
  });

  test("with the network cut, the playground starts, an edit updates every reading, and the docs run", async () => {
    const mark = server.log.length;
    server.offline = true;
    await browser.context.setOffline(true);
    try {
      await page.reload();
      await waitForReadings(page);
      await page.waitForSelector('#editor[data-editor="monaco"] .monaco-editor');
      await pasteCode(page, SEED_RECORDING);
      await waitForPane(page, "spec", (text) => text === SEED_DESCRIBE);
      const before = Object.fromEntries(await Promise.all(READINGS.map(async (name) => [name, await paneText(page, name)])));
      await page.click("#editor .view-lines");
      await page.keyboard.press("ControlOrMeta+End");
      for (const line of ["out = loss.exp()", "print(tape.describe())"]) {
        await page.keyboard.type(line);
        await page.keyboard.press("Escape"); // close any suggestion, so that Enter starts a new line
        await page.keyboard.press("Enter");
      }
      const spec = await waitForPane(page, "spec", (text) => text.includes("   6  Exp            5"));
      assert.match(spec, /tape: 7 nodes, 1 parameter, 2 inputs$/);
      // The spec may be of the first typed line alone, and the readings stream in pane by pane
      // (playground.test.mjs waits the same way): the second line's print, then every pane's change.
      await waitForPane(page, "output", (text) => /6 {2}Exp/.test(text));
      for (const name of READINGS) await waitForPane(page, name, (text) => text !== before[name]);
      for (const name of READINGS) {
        assert.notEqual(await paneText(page, name), before[name], `the ${name} pane did not change offline`);
      }
      assert.match(await paneText(page, "hlo"), /%v6 = stablehlo.exponential %v5 : tensor<f64>/);
      // The docs are part of the offline site: a page opens, and its first block's embed runs the code.
      const docs = await browser.context.newPage();
      docs.on("pageerror", (error) => pageErrors.push(String(error)));
      await docs.goto(`${server.url}docs/getting-started.html`);
      await docs.locator("figure.docs-live").first().scrollIntoViewIfNeeded();
      await docs.waitForFunction(() => document.querySelector("figure.docs-live")?.dataset.reproduced === "true", null, {
        timeout: START_TIMEOUT,
      });
      await docs.close();
      // Nothing reached the server but the browser's own update check of sw.js, which went unanswered.
      const attempts = server.log.slice(mark);
      assert.ok(
        attempts.every((entry) => entry.dropped && entry.path === server.pathOf("sw.js")),
        `requests while offline: ${JSON.stringify(attempts)}`,
      );
    } finally {
      await browser.context.setOffline(false);
      server.offline = false;
    }
    assert.deepEqual(pageErrors, []);
  });

  test("a new deployment shows the update prompt, and accepting it loads the new build", async () => {
    await secondBuilt;
    const mark = server.log.length;
    server.root = second;
    await page.reload();
    await waitForReadings(page);
    // The old build keeps running (and working) until the user accepts.
    await page.waitForSelector("#pwa-update", { timeout: START_TIMEOUT });
    assert.match(await page.textContent("#pwa-update"), /new version of the playground is available/);
    assert.equal(await page.evaluate(() => document.documentElement.dataset.build), "pwa-test-a");
    await waitForPane(page, "spec", (text) => text.includes("Parameter"));

    // The new worker downloaded only what the new build changed, and itself.
    const old = new Set(precacheEntries(first).map((entry) => `${entry.url} ${entry.revision}`));
    const changed = precacheEntries(second).filter((entry) => !old.has(`${entry.url} ${entry.revision}`));
    assert.ok(changed.length > 0 && changed.length < 10, JSON.stringify(changed));
    const expected = ["sw.js", ...changed.map((entry) => entry.url.split("?")[0])].map(server.pathOf).sort();
    await page.waitForFunction(async () => Boolean((await navigator.serviceWorker.getRegistration())?.waiting));
    assert.deepEqual([...servedInFull(server, mark).keys()].sort(), expected);

    await Promise.all([page.waitForEvent("load", { timeout: START_TIMEOUT }), page.click("#pwa-update button")]);
    await waitForReadings(page);
    assert.equal(await page.evaluate(() => document.documentElement.dataset.build), NEW_BUILD);
    assert.equal(await page.$("#pwa-update"), null, "the prompt outlived the update");
    // The old build's files are gone from the cache once the new worker has activated.
    const wanted = precacheEntries(second).length;
    await page.waitForFunction(
      async (count) => {
        const names = (await caches.keys()).filter((name) => name.includes("precache"));
        if (names.length !== 1) return false;
        return (await (await caches.open(names[0])).keys()).length === count;
      },
      wanted,
      { timeout: 30_000, polling: 200 },
    );
    assert.deepEqual(pageErrors, []);
  });
});
