// The matrix product benchmark in headless Chromium (not part of `npm test`): kernels/matmul.wgsl's
// tiled and simple kernels against tfjs-webgpu's tf.matMul, on the same WebGPU adapter (SwiftShader
// in headless Chromium, as tests/browser/harness.mjs launches it) in one page load (web/bench/matmul.ts).
//
// For each square size (256 and 1024 unless SIZES says otherwise) the launches come from Python,
// exactly as topos.compiler.wgsl.launch.matmul builds them (entry point, workgroups, parameter words),
// together with the kernel topos selects (matmul_strategy). Each contender's result is checked against
// a float64 product on the CPU; then ROUNDS rounds, the contenders interleaved, each timing enough
// products back to back to last about TARGET_MS (at least one), until the queue reports them done.
// Printed: the median time a product and its rate, and the ratio of each kernel's rate to tfjs's.
//
// Usage: node tests/bench/matmul_browser.mjs   (builds the site with the benchmark pages into a folder
// of its own, and serves it itself), or with PLAYGROUND_URL=http://127.0.0.1:5173/ to measure a server
// that is already running a build made with TOPOS_BENCH_PAGES=1. SIZES=256,1024 ROUNDS=5 TARGET_MS=1500.

import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { serveBenchSite } from "./bench-site.mjs";

const SIZES = (process.env.SIZES ?? "256,1024").split(",").map(Number);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const TARGET_MS = Number(process.env.TARGET_MS ?? 1500);
const root = new URL("../..", import.meta.url).pathname;
const CONTENDERS = ["tiled", "simple", "tfjs"];

// The launches of a [s, s] @ [s, s], as the kernel selection builds them for each strategy.
const LAUNCHES_PY = `
import json, sys
sys.path.insert(0, "py")
from topos.compiler.wgsl import launch as build
from topos.compiler.wgsl.views import View

problems = []
for size in json.loads(sys.argv[1]):
    m = k = n = size
    launches = {}
    for strategy in ("tiled", "simple"):
        made = build.matmul(View.of_buffer(0, (m, k)), View.of_buffer(1, (k, n)), 2, strategy=strategy)
        # The page binds params, out, a, b at 0..3: the builder must bind out, a, b as buffers 2, 0, 1.
        assert [(b.index, b.buffer) for b in made.bindings] == [(1, 2), (2, 0), (3, 1)], made.bindings
        launches[strategy] = {"entry": made.entry, "workgroups": list(made.workgroups), "params": list(made.params)}
    problems.append({"m": m, "k": k, "n": n, "launches": launches, "selected": build.matmul_strategy(1, m, n, k)})
print(json.dumps(problems))
`;

const serve = serveBenchSite;

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = (sorted.length - 1) / 2;
  return (sorted[Math.floor(middle)] + sorted[Math.ceil(middle)]) / 2;
}

const problems = JSON.parse(execFileSync(join(root, ".venv/bin/python"), ["-c", LAUNCHES_PY, JSON.stringify(SIZES)], { cwd: root, encoding: "utf8" }));
const server = await serve();
process.env.PLAYGROUND_URL = server.url;
const harness = await import("../browser/harness.mjs");
const browser = await harness.openBrowser();
try {
  const page = await browser.context.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  await page.goto(new URL("bench/matmul.html", server.url).href);
  await page.waitForSelector('body[data-state="ready"], body[data-state="failed"]', { timeout: 120_000 });
  const failure = await page.$eval("body", (body) => body.dataset.error ?? null);
  if (failure) throw new Error(`the benchmark page failed: ${failure}`);
  const adapters = await page.evaluate(() => window.matmulBench.adapters());
  console.log(`adapter (topos kernels): ${adapters.ours}`);
  console.log(`adapter (tfjs, backend ${adapters.backend}): ${adapters.tfjs}`);
  console.log(`${ROUNDS} rounds, contenders interleaved; each timing about ${TARGET_MS} ms of products back to back`);

  for (const problem of problems) {
    const { m, k, n, selected } = problem;
    const flops = 2 * m * n * k;
    await page.evaluate((problem) => window.matmulBench.load(problem), problem);
    const runs = {};
    for (const contender of CONTENDERS) {
      const { error, scale } = await page.evaluate((c) => window.matmulBench.check(c), contender);
      if (!(error <= 1e-4 * scale)) throw new Error(`${contender} ${m}x${k}x${n}: off the CPU product by ${error} at scale ${scale}`);
      // One product more to warm up and to size the timings.
      const once = await page.evaluate((c) => window.matmulBench.time(c, 1), contender);
      runs[contender] = Math.max(1, Math.min(50, Math.round(TARGET_MS / Math.max(once, 0.01))));
    }
    const samples = Object.fromEntries(CONTENDERS.map((c) => [c, []]));
    for (let round = 0; round < ROUNDS; round++) {
      // Rotate the order each round so that no contender always runs first.
      for (let i = 0; i < CONTENDERS.length; i++) {
        const contender = CONTENDERS[(i + round) % CONTENDERS.length];
        const ms = await page.evaluate(([c, r]) => window.matmulBench.time(c, r), [contender, runs[contender]]);
        samples[contender].push(ms / runs[contender]);
      }
    }
    const ms = Object.fromEntries(CONTENDERS.map((c) => [c, median(samples[c])]));
    console.log(`\nmatmul ${m}x${k}x${n} (selected: ${selected}); ms a product, median [all]; GFLOP/s; ratio to tfjs's rate`);
    for (const contender of CONTENDERS) {
      const rate = flops / ms[contender] / 1e6;
      const ratio = ms.tfjs / ms[contender];
      const all = samples[contender].map((t) => t.toFixed(1)).join(", ");
      console.log(
        `  ${contender.padEnd(7)} ${ms[contender].toFixed(1).padStart(9)} ms  [${all}]  ${rate.toFixed(3)} GFLOP/s  ${ratio.toFixed(2)}x tfjs  (${runs[contender]} a timing)`,
      );
    }
    console.log(`  selected kernel (${selected}) / tfjs: ${(ms.tfjs / ms[selected]).toFixed(2)}x`);
  }
  if (errors.length) throw new Error(`page errors: ${errors.join("; ")}`);
  if (browser.foreign.length) throw new Error(`requests left the origin: ${browser.foreign.join(", ")}`);
} finally {
  await browser.close();
  await server.stop();
}
