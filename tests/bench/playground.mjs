// The playground's benchmark, in headless Chromium (not part of `npm test`):
//
// 1. Cold start: a fresh browser profile (empty cache) opens the bare page, which only
//    loads Pyodide and numpy in a module worker, then another fresh profile opens the
//    playground until its first readings are shown; ROUNDS rounds, alternating, and
//    the ratio of the medians. Both times are measured from navigation start.
// 2. Edit to readings: with the transformer example recorded in the editor, EDITS edits,
//    each timed from the paste event to the moment every pane shows the new readings
//    (the graph drawn included); median and p95, for two kinds of edit:
//    - edits that change the model (its width is new every time: 32, 36, 40, ...) with the
//      page's graph layout cache switched off (?layoutCache=0): every edit lays out again;
//    - the same edits with the cache on, as the page runs normally (a graph whose boxes keep
//      their sizes keeps its layout);
//    - edits that keep the model (a comment changes): the readings are all recomputed.
// 3. Edit to readings per gallery example (docs/examples/*.py), as the file stands: EDITS edits
//    of a comment each, one page for all of them (the first two edits of each warm up). A
//    script that trained at the top level would pay its training here at every edit
//    (docs/playground.md, "Training and the readings"). The load average is printed with it:
//    measure a peer in the same run (SERIES=keep,gallery) to compare with the numbers above.
//
// SERIES picks what to measure (a comma list of cold, off, on, keep, gallery; all five unless given).
//
// Usage: npm run bench:playground   (builds the site with the benchmark's bare page into a
// folder of its own, and serves it itself), or with PLAYGROUND_URL=http://127.0.0.1:5173/ to
// measure a server that is already running a build made with TOPOS_BENCH_PAGES=1.

import { readdirSync, readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { serveBenchSite } from "./bench-site.mjs";

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const EDITS = Number(process.env.EDITS ?? 20);
const SERIES = (process.env.SERIES ?? "cold,off,on,keep,gallery").split(",");

const serve = serveBenchSite;

const median = (values) => quantile(values, 0.5);
function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  return sorted[low] + (sorted[Math.ceil(at)] - sorted[low]) * (at - low);
}

/** Milliseconds from navigation to the page's first readings (data-readings-at), in a fresh profile. */
async function coldStart(harness, path) {
  const browser = await harness.openBrowser();
  try {
    const page = await browser.context.newPage();
    await page.goto(new URL(path, process.env.PLAYGROUND_URL).href);
    await page.waitForSelector('body[data-state="ready"]', { timeout: 120_000 });
    if (browser.foreign.length) throw new Error(`requests left the origin: ${browser.foreign.join(", ")}`);
    return Number(await page.$eval("body", (body) => body.dataset.readingsAt));
  } finally {
    await browser.close();
  }
}

const TRANSFORMER = readFileSync(new URL("../../docs/examples/06_char_transformer.py", import.meta.url), "utf8");
const record = (embed, comment = "") =>
  `${TRANSFORMER}\nnetwork, (tokens, targets, logits, loss) = Tape.record(lambda tape: build(tape, Config(embed=${embed})))\n${comment}`;
const changingTheModel = (edit) => ({ code: record(32 + 4 * (edit + 2)), width: 32 + 4 * (edit + 2) });
const keepingTheModel = (edit) => ({ code: record(32, `# edit ${edit}\n`), width: 32 });

async function editToReadings(harness, makeEdit, query) {
  const browser = await harness.openBrowser();
  try {
    const { page } = await harness.openPlayground(browser.context, query);
    return await timeEdits(harness, page, makeEdit);
  } finally {
    await browser.close();
  }
}

/** EDITS edits (after two that warm up) on an open page, each timed from its paste to every pane updated. */
async function timeEdits(harness, page, makeEdit) {
  const shown = () => page.$eval("body", (body) => Number(body.dataset.readingsShown));
  const times = [];
  let warmSpec = null;
  for (let edit = -2; edit < EDITS; edit++) {
    const before = await shown();
    await page.click("#editor .view-lines");
    await page.keyboard.press("ControlOrMeta+A");
    // The paste is the edit; its time is taken in the page, on the clock the page stamps readings with.
    const { code, width } = makeEdit(edit);
    const pastedAt = await page.evaluate((code) => {
      const data = new DataTransfer();
      data.setData("text/plain", code);
      const startedAt = performance.now();
      document.activeElement.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
      return startedAt;
    }, code);
    await page.waitForFunction((count) => Number(document.body.dataset.readingsShown) > count, before, { timeout: 60_000 });
    const readingsAt = Number(await page.$eval("body", (body) => body.dataset.readingsAt));
    const spec = await harness.paneText(page, "spec");
    // A width to look for (the transformer's edits), else the same spec as the warm-up's (a comment changed).
    if (edit === -2) warmSpec = spec;
    const same = width === undefined ? spec === warmSpec && spec.trim() !== "" : spec.includes(`[16, 16, ${width}]`);
    if (!same) throw new Error(`edit ${edit}: the spec pane shows another model:\n${spec.slice(0, 400)}\nnot:\n${(warmSpec ?? "").slice(0, 400)}`);
    if (edit >= 0) times.push(readingsAt - pastedAt); // the first two edits warm up
  }
  const status = await page.$eval("#status", (element) => element.textContent);
  return { times, status };
}

/** Each gallery example's edits to readings, on one page: { file: { times, status } }. */
async function galleryEdits(harness) {
  const folder = new URL("../../docs/examples/", import.meta.url);
  const files = readdirSync(folder).filter((name) => name.endsWith(".py")).sort();
  const browser = await harness.openBrowser();
  try {
    const { page } = await harness.openPlayground(browser.context);
    const results = {};
    for (const file of files) {
      const code = readFileSync(new URL(file, folder), "utf8");
      results[file] = await timeEdits(harness, page, (edit) => ({ code: `${code}\n# edit ${edit}\n` })).catch((error) => {
        throw new Error(`${file}: ${error.message}`);
      });
    }
    return results;
  } finally {
    await browser.close();
  }
}

const server = await serve();
process.env.PLAYGROUND_URL = server.url;
const harness = await import("../browser/harness.mjs");
try {
  const bare = [];
  const playground = [];
  for (let round = 0; round < (SERIES.includes("cold") ? ROUNDS : 0); round++) {
    bare.push(await coldStart(harness, "bench/bare.html"));
    playground.push(await coldStart(harness, ""));
  }
  const ratio = median(playground) / median(bare);
  if (SERIES.includes("cold")) console.log(`cold start, ${ROUNDS} rounds, fresh profile each (ms from navigation):`);
  if (SERIES.includes("cold")) console.log(`  bare Pyodide + numpy   median ${median(bare).toFixed(0)}  [${bare.map((t) => t.toFixed(0)).join(", ")}]`);
  if (SERIES.includes("cold")) console.log(`  playground (readings)  median ${median(playground).toFixed(0)}  [${playground.map((t) => t.toFixed(0)).join(", ")}]`);
  if (SERIES.includes("cold")) console.log(`  ratio ${ratio.toFixed(3)} (aim: at most 1.2)`);

  const series = [
    ["off", "edits that change the model, every graph laid out again", changingTheModel, "?layoutCache=0"],
    ["on", "edits that change the model, layout cache on", changingTheModel, ""],
    ["keep", "edits that keep the model", keepingTheModel, ""],
  ];
  for (const [name, title, makeEdit, query] of series) {
    if (!SERIES.includes(name)) continue;
    const { times, status } = await editToReadings(harness, makeEdit, query);
    console.log(`edit to all readings updated, transformer example, ${times.length} ${title} (ms):`);
    console.log(`  median ${median(times).toFixed(1)}  p95 ${quantile(times, 0.95).toFixed(1)}  (aim: median under 150)`);
    console.log(`  [${times.map((t) => t.toFixed(0)).join(", ")}]`);
    console.log(`  last status: ${status}`);
  }
  if (SERIES.includes("gallery")) {
    const before = loadavg()[0];
    const results = await galleryEdits(harness);
    console.log(`edit to all readings updated, each gallery example, ${EDITS} edits of a comment (ms):`);
    for (const [file, { times, status }] of Object.entries(results)) {
      console.log(`  ${file.padEnd(28)} median ${median(times).toFixed(1).padStart(6)}  p95 ${quantile(times, 0.95).toFixed(1).padStart(6)}  (aim: median under 150)  last status: ${status}`);
    }
    console.log(`  load average (1 min) ${before.toFixed(2)} before, ${loadavg()[0].toFixed(2)} after`);
  }
} finally {
  await server.stop();
}
