// The two WebGPU paths of a convolution, on both CPU adapters in one run (not part of `npm test`):
//
//   natively    lavapipe through wgpu-py      tests/bench/convolution.py's device_report()
//   in the page SwiftShader (headless Chromium) the same function, in a worker of web/bench/convolution.html,
//                                             on the page's WebGPU through run_sync
//
// For each shape of DEVICE_SHAPES (the digits CNN's layers and kernel gradients, the 28x28 batch-64
// layers, depthwise and 2 and 4 output channels a group) a plan of one convolution is lowered twice, with
// each path forced (topos.compiler.wgsl.convolution.FORCED_PATH: im2col into the tiled matmul, or the direct
// kernel), each checked against numpy, then timed over ROUNDS rounds, the two interleaved. Printed: each
// adapter's medians, the ratio direct / im2col, the faster path and the rule's choice, side by side.
//
// Usage: node tests/bench/convolution_browser.mjs   (builds the site with the benchmark pages into a folder
// of its own, and serves it itself), or with PLAYGROUND_URL=http://127.0.0.1:5173/ to measure a server
// that is already running a build made with TOPOS_BENCH_PAGES=1. ROUNDS=5, NATIVE_ROUNDS=ROUNDS,
// SHAPES="digits conv1,depthwise" (names of DEVICE_SHAPES rows; all by default).

import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { serveBenchSite } from "./bench-site.mjs";

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const NATIVE_ROUNDS = Number(process.env.NATIVE_ROUNDS ?? ROUNDS);
const SHAPES = process.env.SHAPES ?? "";
const root = new URL("../..", import.meta.url).pathname;

function nativeReport() {
  const python = join(root, ".venv/bin/python");
  const args = ["tests/bench/convolution.py", "--device", "--json", "--rounds", String(NATIVE_ROUNDS)];
  if (SHAPES) args.push("--shapes", SHAPES);
  const env = { ...process.env, PYTHONPATH: join(root, "py"), OMP_NUM_THREADS: "1", OPENBLAS_NUM_THREADS: "1" };
  return JSON.parse(execFileSync(python, args, { cwd: root, encoding: "utf8", env, stdio: ["ignore", "pipe", "inherit"] }));
}

async function pageReport(harness) {
  const browser = await harness.openBrowser();
  try {
    const page = await browser.context.newPage();
    const errors = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    const query = new URLSearchParams({ rounds: String(ROUNDS), shapes: SHAPES });
    await page.goto(new URL(`bench/convolution.html?${query}`, process.env.PLAYGROUND_URL).href);
    // SwiftShader runs every kernel on the CPU: the largest shapes take seconds a run there.
    await page.waitForSelector('body[data-state="done"], body[data-state="failed"]', { timeout: 30 * 60_000 });
    const state = await page.$eval("body", (body) => body.dataset.state);
    const text = await page.$eval("#result", (element) => element.textContent);
    if (state !== "done") throw new Error(`the page's run failed:\n${text}\n${errors.join("\n")}`);
    if (errors.length) throw new Error(`page errors: ${errors.join("; ")}`);
    if (browser.foreign.length) throw new Error(`requests left the origin: ${browser.foreign.join(", ")}`);
    return JSON.parse(text);
  } finally {
    await browser.close();
  }
}

function table(report, where) {
  console.log(`\n${where}: WebGPU (${report.adapter}), ms a run (upload, launches, read-back), median of ${report.rounds} rounds`);
  for (const row of report.rows) {
    const shape = `${JSON.stringify(row.lhs)} * ${JSON.stringify(row.rhs)}`.replaceAll(",", ", ");
    const faster = row.im2col_ms <= row.direct_ms ? "im2col" : "direct";
    console.log(
      `  ${row.name.padEnd(15)} ${shape.padEnd(38)} g${String(row.groups).padEnd(3)} ` +
        `im2col ${row.im2col_ms.toFixed(1).padStart(8)}  direct ${row.direct_ms.toFixed(1).padStart(8)}  ` +
        `direct/im2col ${(row.direct_ms / row.im2col_ms).toFixed(2).padStart(6)}  faster ${faster.padEnd(6)}  rule ${row.rule}`,
    );
  }
}

const native = nativeReport();
const server = await serveBenchSite();
process.env.PLAYGROUND_URL = server.url;
const harness = await import("../browser/harness.mjs");
let inPage;
try {
  inPage = await pageReport(harness);
} finally {
  await server.stop();
}

table(native, "natively (wgpu-py)");
table(inPage, "in the page (headless Chromium)");
console.log(`\ndirect / im2col on both adapters (below 1: the direct kernel is faster), and the rule's path`);
const pageRows = new Map(inPage.rows.map((row) => [row.name, row]));
for (const row of native.rows) {
  const other = pageRows.get(row.name);
  if (!other) continue;
  const ratios = [row, other].map((r) => (r.direct_ms / r.im2col_ms).toFixed(2).padStart(6));
  const agree = row.direct_ms < row.im2col_ms === other.direct_ms < other.im2col_ms ? "agree" : "DISAGREE";
  console.log(`  ${row.name.padEnd(15)} lavapipe ${ratios[0]}  SwiftShader ${ratios[1]}  ${agree.padEnd(8)}  rule ${row.rule}`);
}
