// Shared set-up of the browser tests and the benchmark: Debian's Chromium driven by
// playwright-core, with WebGPU on and no way to reach anything but the local server.

import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import { chromium } from "playwright-core";

export const BASE_URL = process.env.PLAYGROUND_URL ?? "http://127.0.0.1:5173/";
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

// DESIGN.md's flags: WebGPU (SwiftShader in headless Chromium), no outside name lookups, no background traffic.
const FLAGS = [
  "--no-sandbox",
  "--enable-unsafe-webgpu",
  "--enable-features=Vulkan",
  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-default-apps",
  "--disable-sync",
  "--no-first-run",
  "--metrics-recording-only",
];

/**
 * A fresh browser profile, in a Chromium of its own. Every request is recorded; `foreign` lists those
 * that tried to leave the site, its origin or its sub-path (they are aborted, and the tests fail on
 * any: a request for `/assets/...` from a site served under `/deploy/topos/` is one). `baseUrl` names
 * another local server; `intercept: false` only watches requests instead of routing them,
 * because Playwright's routing turns the HTTP cache off (the offline app's tests need it;
 * the host-resolver rule still leaves every outside name unresolvable). `device` replaces the
 * desktop window with Playwright's emulation of another screen (`viewport`, `isMobile`,
 * `hasTouch`, `deviceScaleFactor`). The tests' blocks take a context in the file's one browser
 * instead (useBrowser): this is for a profile kept on disk (the offline app's HTTP cache) and for
 * scripts outside the test runner.
 */
export async function openBrowser({ baseUrl = BASE_URL, intercept = true, device = {} } = {}) {
  const profile = mkdtempSync(join(tmpdir(), "topos-browser-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1400, height: 900 },
    ...device,
  });
  return watched(context, { baseUrl, intercept }, () => rmSync(profile, { recursive: true, force: true }));
}

/** `{ context, foreign, close }` of openBrowser: the context's requests kept to the site (or watched). */
async function watched(context, { baseUrl = BASE_URL, intercept = true }, cleanUp = () => {}) {
  const site = new URL("./", baseUrl).href;
  const foreign = [];
  const allowed = (url) => url.startsWith(site) || url.startsWith("data:") || url.startsWith("blob:");
  if (intercept) {
    await context.route("**/*", (route) => {
      const url = route.request().url();
      if (allowed(url)) return route.continue();
      foreign.push(url);
      return route.abort("blockedbyclient");
    });
  } else {
    context.on("request", (request) => {
      if (!allowed(request.url())) foreign.push(request.url());
    });
  }
  const close = async () => {
    await context.close();
    cleanUp();
  };
  return { context, foreign, close };
}

// The file's one Chromium (under node --test each file is a process of its own): launched by the first
// describe block that asks for it, closed after the last. Blocks register when the file is loaded
// (node:test runs describe bodies at once), so `users` is the whole count before any block's `before`
// runs. Each block takes a context of its own in it: a fresh profile (nothing stored, no service worker,
// no cache) without a browser's start (a second or two) of its own.
const fileBrowser = { users: 0, launched: null };

/** A fresh profile in the file's browser: openBrowser's `{ context, foreign, close }` and options. */
async function openContext({ baseUrl, intercept, device = {} } = {}) {
  fileBrowser.launched ??= chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
  const browser = await fileBrowser.launched;
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, ...device });
  return watched(context, { baseUrl, intercept });
}

/**
 * The scaffold of a describe block: a fresh profile (a context in the file's browser, openContext)
 * opened before its tests and closed after them. `options` are openBrowser's, and
 * - `prepare(browser)` runs on the new profile before any page (routes, request listeners, init scripts);
 * - `playground` (a fragment or query, "" for none) opens the playground on it (openPlayground).
 * `onOpen({ browser, page, errors })` hands the block what it opened, once, before its tests.
 */
export function useBrowser({ playground, prepare, ...options } = {}, onOpen = () => {}) {
  let opened = {};
  fileBrowser.users += 1;
  before(async () => {
    opened = { browser: await openContext(options) };
    await prepare?.(opened.browser);
    if (playground !== undefined) Object.assign(opened, await openPlayground(opened.browser.context, playground));
    onOpen(opened);
  });
  after(async () => {
    await opened.browser?.close();
    fileBrowser.users -= 1;
    if (fileBrowser.users === 0 && fileBrowser.launched) {
      const browser = await fileBrowser.launched;
      fileBrowser.launched = null;
      await browser.close();
    }
  });
}

/**
 * What a fresh profile has of a site, in a profile that has been used: no page open, nothing
 * stored for the site's origin (local and session storage, IndexedDB, service workers, Cache
 * Storage, cookies). Closing the pages first keeps a page of an earlier test from writing its
 * autosave again.
 */
export async function clearSiteData(context, url = BASE_URL) {
  const blank = await context.newPage();
  for (const page of context.pages()) if (page !== blank) await page.close();
  const session = await context.newCDPSession(blank);
  await session.send("Storage.clearDataForOrigin", { origin: new URL(url).origin, storageTypes: "all" });
  await session.detach();
  await blank.close();
}

/** Open the playground (optionally with a fragment or query) and wait for its first readings. */
export async function openPlayground(context, suffix = "", timeout = 120_000) {
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  await page.goto(new URL(suffix, BASE_URL).href);
  await page.waitForSelector('body[data-state="ready"]', { timeout });
  return { page, errors };
}

/**
 * The readings in the page's order, read from the one list the page itself uses
 * (READING_NAMES in web/protocol.ts; tests/python/test_playground_rows.py holds it to
 * topos.playground.READINGS), so no test types the order again.
 */
export const READING_NAMES = (() => {
  const protocol = readFileSync(new URL("../../web/protocol.ts", import.meta.url), "utf8");
  const list = protocol.match(/export const READING_NAMES: ReadingName\[\] = \[([^\]]+)\]/);
  if (!list) throw new Error("web/protocol.ts no longer declares READING_NAMES as a list of names");
  return [...list[1].matchAll(/"([a-z]+)"/g)].map((match) => match[1]);
})();

/** The text content of a pane (data-reading="spec|graph|plan|gradient|hlo|kernels|output"). */
export function paneText(page, name) {
  return page.$eval(`[data-reading="${name}"]`, (element) => element.textContent);
}

/** Replace the editor's code the way a user pastes it, and let the debounced run happen. */
export async function pasteCode(page, code) {
  await page.click("#editor .view-lines");
  await page.keyboard.press("ControlOrMeta+A");
  await page.keyboard.press("Delete");
  await page.evaluate((text) => {
    const data = new DataTransfer();
    data.setData("text/plain", text);
    // Monaco listens for paste on its focused input element (an EditContext element in Chromium).
    document.activeElement.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
  }, code);
}

/** Wait until a pane's text satisfies `predicate` (the readings update asynchronously). */
export async function waitForPane(page, name, predicate, timeout = 30_000) {
  const started = Date.now();
  let text = null;
  while (Date.now() - started < timeout) {
    text = await paneText(page, name);
    if (predicate(text)) return text;
    await page.waitForTimeout(50);
  }
  throw new Error(`pane ${name} did not reach the expected text within ${timeout} ms; it shows:\n${text}`);
}

const ROOT = new URL("../../", import.meta.url);

/** The oracle: CPython's topos.playground.run on the same code (the page runs the same package in Pyodide). */
export function cpythonRun(code) {
  const script = "import json, sys\nfrom topos import playground\nprint(playground.run(sys.stdin.read()))";
  const text = execFileSync(new URL(".venv/bin/python", ROOT).pathname, ["-c", script], {
    input: code,
    env: { ...process.env, PYTHONPATH: new URL("py", ROOT).pathname },
    cwd: "/tmp",
  });
  return JSON.parse(text);
}
