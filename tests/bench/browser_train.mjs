// The gallery transformer's training step in four places, the same run (not part of `npm test`):
//
//   natively   numpy            tests/bench/train_webgpu.py, one BLAS thread
//   natively   wgpu-py          the same file's DeviceTrainer run (lavapipe, a CPU, on the project's machines)
//   in the page numpy-in-Pyodide  the same file's measure(), run in a worker of web/bench/train.html
//   in the page WebGPU            the same, on the page's WebGPU through run_sync (SwiftShader in headless Chromium)
//
// Each side trains one float32 model per backend from the same parameters on the same batches,
// step for step interleaved; the medians are printed with their ratios to native numpy, and how far
// each place's WebGPU losses drift from its numpy losses.
//
// Usage: node tests/bench/browser_train.mjs   (builds the site with the benchmark's pages into a
// folder of its own and serves it itself), or with PLAYGROUND_URL=http://127.0.0.1:5173/ to use a
// server that is already running a build made with TOPOS_BENCH_PAGES=1.
// STEPS (default 10) and WARMUP (default 2, or 10 when no side is webgpu) size the page's run;
// NATIVE_STEPS (default 30) the native one. BACKENDS (default numpy,webgpu) names the page's sides:
// numpy (with the page's SIMD kernels), numpy-openblas (OpenBLAS instead), numpy-no-blas (products
// in numpy alone), webgpu; natively numpy runs, and webgpu if the page runs it.
// ROUNDS (default 1): how many times the whole comparison runs (native, page, native again); each
// round's page/native ratio is printed and their median is the figure. The page and the native
// process cannot be interleaved step for step, and on a shared machine one round's ratio can be
// off by a third, so rounds are the way to a steady figure: ROUNDS=3 BACKENDS=numpy STEPS=40.
//
// CHUNKS (default 0): after the report, the page's numpy and a native process take turns, CHUNKS
// chunks of CHUNK steps (default 5) each, a fresh model on each side warmed up WARMUP steps; the
// median of the chunks' ratios is printed. Turns a few hundred milliseconds long share the
// machine's moods far better than whole runs do: CHUNKS=15 BACKENDS=numpy.
//
// The warm-up matters for numpy in the page: V8 runs a WebAssembly function in its baseline tier
// until it has run a while, and the first few steps are slower than the hundreds a user trains
// for; with WebGPU in the run (SwiftShader: seconds a step) the short warm-up is kept.

import { execFileSync, spawn } from "node:child_process";
import { join } from "node:path";
import { serveBenchSite } from "./bench-site.mjs";
import { lines } from "./child-lines.mjs";

const STEPS = Number(process.env.STEPS ?? 10);
const BACKENDS = (process.env.BACKENDS ?? "numpy,webgpu").split(",");
const WARMUP = Number(process.env.WARMUP ?? (BACKENDS.includes("webgpu") ? 2 : 10));
const NATIVE_STEPS = Number(process.env.NATIVE_STEPS ?? 30);
const ROUNDS = Number(process.env.ROUNDS ?? 1);
const CHUNKS = Number(process.env.CHUNKS ?? 0);
const CHUNK = Number(process.env.CHUNK ?? 5);
const root = new URL("../..", import.meta.url).pathname;

const serve = serveBenchSite;

function nativeReport() {
  const python = join(root, ".venv/bin/python");
  // The same warm-up as the page's, so that both read the same batches at the same timed step.
  const args = ["tests/bench/train_webgpu.py", "--json", "--steps", String(NATIVE_STEPS), "--warmup", String(WARMUP)];
  for (const backend of ["numpy", "webgpu"].filter((name) => name === "numpy" || BACKENDS.includes(name))) args.push("--backend", backend);
  return JSON.parse(execFileSync(python, args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }));
}

async function pageReport(harness) {
  const browser = await harness.openBrowser();
  try {
    const page = await browser.context.newPage();
    const errors = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    await page.goto(new URL(`bench/train.html?steps=${STEPS}&warmup=${WARMUP}&backends=${BACKENDS.join(",")}`, process.env.PLAYGROUND_URL).href);
    // SwiftShader runs every kernel on the CPU: a step takes seconds there.
    await page.waitForSelector('body[data-state="done"], body[data-state="failed"]', { timeout: 30 * 60_000 });
    const state = await page.$eval("body", (body) => body.dataset.state);
    const text = await page.$eval("#result", (element) => element.textContent);
    if (state !== "done") throw new Error(`the page's run failed:\n${text}\n${errors.join("\n")}`);
    if (browser.foreign.length) throw new Error(`requests left the origin: ${browser.foreign.join(", ")}`);
    const report = JSON.parse(text);
    if (CHUNKS > 0) report.chunks = await takeTurns(page);
    return report;
  } finally {
    await browser.close();
  }
}

// One native process trains, a chunk each time it reads a line, so that its chunks take turns with the page's.
const nativeChunks = `
import sys, time
sys.path.insert(0, "tests/bench")
import train_webgpu
run = train_webgpu.step_runner(train_webgpu.load_example())
run(${WARMUP})
for line in sys.stdin:
    started = time.perf_counter()
    run(int(line))
    print((time.perf_counter() - started) / int(line) * 1e3, flush=True)
`;

/** The page's numpy and native numpy, CHUNKS chunks of CHUNK steps each, taking turns: their ms a step. */
async function takeTurns(page) {
  const env = { ...process.env, OMP_NUM_THREADS: "1", OPENBLAS_NUM_THREADS: "1", MKL_NUM_THREADS: "1" };
  const child = spawn(join(root, ".venv/bin/python"), ["-c", nativeChunks], { cwd: root, env, stdio: ["pipe", "pipe", "inherit"] });
  const childLines = lines(child.stdout);
  const turns = { page: [], native: [] };
  try {
    for (let chunk = 0; chunk < CHUNKS; chunk++) {
      const ms = await page.evaluate(([steps, warmup]) => window.trainChunk(steps, warmup), [CHUNK, WARMUP]);
      if (!Number.isFinite(ms)) throw new Error(`the page's chunk failed:\n${await page.$eval("#result", (element) => element.textContent)}`);
      turns.page.push(ms);
      child.stdin.write(`${CHUNK}\n`);
      const { value, done } = await childLines.next();
      if (done) throw new Error("the native process ended before its chunk");
      turns.native.push(Number(value));
    }
  } finally {
    child.stdin.end();
  }
  return turns;
}

function rows(report, where) {
  const found = [];
  for (const [backend, result] of Object.entries(report.backends)) {
    const page = { numpy: "numpy-in-Pyodide, SIMD kernels", "numpy-openblas": "numpy-in-Pyodide, OpenBLAS", "numpy-no-blas": "numpy-in-Pyodide, no kernel" };
    const name = backend === "webgpu" ? `WebGPU (${report.adapter})` : where === "natively" ? "numpy" : page[backend];
    found.push({ where, name, median: result.median_ms, losses: result.losses });
  }
  return found;
}

// Native numpy before and after the page's run (the machine may be busier during one than the
// other): the ratios are to the mean of the two medians. The first round's reports are printed in
// full; each further round adds its ratios.
const server = await serve();
process.env.PLAYGROUND_URL = server.url;
const harness = await import("../browser/harness.mjs");
const rounds = [];
try {
  for (let round = 0; round < ROUNDS; round++) {
    const before = nativeReport();
    const page = await pageReport(harness);
    const after = nativeReport();
    rounds.push({ before: before.backends.numpy.median_ms, after: after.backends.numpy.median_ms, native: before, page });
  }
} finally {
  await server.stop();
}
const { native, page: inPage } = rounds[0];
const nativeBefore = rounds[0].before;
const nativeAfter = { backends: { numpy: { median_ms: rounds[0].after } } };
for (const round of rounds) round.native.backends.numpy.median_ms = (round.before + round.after) / 2;

const all = [...rows(native, "natively"), ...rows(inPage, "in the page")];
const baseline = all[0].median;
console.log(`the gallery transformer's training step (float32, Adam), the same run in each place`);
console.log(`  natively ${native.steps} timed steps after ${native.warmup}; in the page ${inPage.steps} after ${inPage.warmup}`);
console.log(`  native numpy's median ${nativeBefore.toFixed(1)} ms before the page's run, ${nativeAfter.backends.numpy.median_ms.toFixed(1)} ms after: their mean below`);
const width = Math.max(...all.map((row) => row.name.length));
for (const row of all) {
  console.log(`  ${row.where.padEnd(12)} ${row.name.padEnd(width)}  median ${row.median.toFixed(1).padStart(9)} ms   ` +
    `${(row.median / baseline).toFixed(2).padStart(7)} x native numpy`);
}
for (const [where, report] of [["natively", native], ["in the page", inPage]]) {
  if (report.webgpu_refused) console.log(`  ${where}, WebGPU did not run: ${report.webgpu_refused}`);
  const counts = report.counts;
  if (counts) {
    console.log(`  ${where}, a WebGPU step: ${counts.dispatches} dispatches, ${counts.submits} submit(s), ` +
      `${counts.readbacks} read-back(s), ${counts.uploaded_bytes} bytes up, ${counts.read_bytes} down`);
  }
  const { numpy, webgpu } = report.backends;
  if (numpy && webgpu) {
    console.log(`  ${where}: WebGPU / numpy ${(webgpu.median_ms / numpy.median_ms).toFixed(2)}, ` +
      `largest |loss difference| ${report.largest_loss_difference.toExponential(2)}`);
  }
}
if (native.backends.webgpu && inPage.backends.webgpu) {
  console.log(`  page WebGPU / native wgpu-py: ${(inPage.backends.webgpu.median_ms / native.backends.webgpu.median_ms).toFixed(2)}`);
}
const quartile = (values, q) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) * q)];
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
for (const [backend, label] of [["numpy", "SIMD kernels"], ["numpy-openblas", "OpenBLAS"], ["numpy-no-blas", "no kernel"]]) {
  if (inPage.backends[backend]) {
    const ratios = rounds.map((round) => round.page.backends[backend].median_ms / round.native.backends.numpy.median_ms);
    const each = rounds.length > 1 ? ` (median of ${rounds.length} rounds: ${ratios.map((r) => r.toFixed(2)).join(", ")})` : "";
    console.log(`  page numpy (${label}) / native numpy: ${median(ratios).toFixed(2)}${each}`);
  }
}
if (inPage.chunks) {
  const { page: pageTurns, native: nativeTurns } = inPage.chunks;
  const ratios = pageTurns.map((ms, i) => ms / nativeTurns[i]);
  console.log(`  taking turns, ${pageTurns.length} chunks of ${CHUNK} steps: page numpy ${median(pageTurns).toFixed(2)} ms, ` +
    `native ${median(nativeTurns).toFixed(2)} ms a step; page / native, median of the chunks' ratios: ${median(ratios).toFixed(2)} ` +
    `(quartiles ${quartile(ratios, 0.25).toFixed(2)}-${quartile(ratios, 0.75).toFixed(2)})`);
}
if (inPage.blas) console.log(`  the page's kernels: ${inPage.blas.installed} (OpenBLAS ${inPage.blas.loaded}); products ${JSON.stringify(inPage.blas.counts)}`);
// The same run: the page's numpy losses against the native ones, step for step (float32, another numpy build).
const shared = Math.min(inPage.backends.numpy.losses.length, native.backends.numpy.losses.length);
const drift = Math.max(...Array.from({ length: shared }, (_, i) =>
  Math.abs(inPage.backends.numpy.losses[i] - native.backends.numpy.losses[i])));
console.log(`  largest |loss difference|, page numpy against native numpy over ${shared} steps: ${drift.toExponential(2)}`);
