// The gallery transformer's training step (tests/bench/train_webgpu.py's measure(), float32,
// Adam) in Pyodide 0.27.7 under Node on numpy, with the playground's BLAS (topos.ops.blas over
// the OpenBLAS the site serves) and without it, step for step interleaved, and natively on
// numpy (one BLAS thread) in the same run: before and after the page's run, to see the
// machine's drift. The ratios to native numpy are the page's CPU path's measure (issue 22:
// <= 2.5). The browser's own figure: node tests/bench/browser_train.mjs (the same measure() in
// a worker of the built site). Not part of any test run.
//
// Usage: node tests/bench/pyodide_train.mjs   STEPS (default 20), WARMUP (default 3)

import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { pyodideWithBlas, root } from "../pyodide/load.mjs";

const STEPS = Number(process.env.STEPS ?? 20);
const WARMUP = Number(process.env.WARMUP ?? 3);

function native() {
  const args = ["tests/bench/train_webgpu.py", "--json", "--backend", "numpy", "--steps", String(STEPS), "--warmup", String(WARMUP)];
  const env = { ...process.env, PYTHONPATH: join(root, "py"), OMP_NUM_THREADS: "1", OPENBLAS_NUM_THREADS: "1" };
  const report = JSON.parse(execFileSync(join(root, ".venv/bin/python"), args, { cwd: root, encoding: "utf8", env }));
  return report.backends.numpy.median_ms;
}

const before = native();
const { pyodide, blasMs } = await pyodideWithBlas();
pyodide.globals.set("STEPS", STEPS);
pyodide.globals.set("WARMUP", WARMUP);
const page = JSON.parse(pyodide.runPython(`
import json
import train_webgpu
from topos.ops import blas
example = train_webgpu.load_example(open("/checkout/docs/examples/06_char_transformer.py").read())
report = train_webgpu.measure(example, ("numpy", "numpy-no-blas"), STEPS, WARMUP)
report["counts"] = blas.counts()
json.dumps(report)
`));
const after = native();
const nativeMs = (before + after) / 2;
const on = page.backends.numpy.median_ms;
const off = page.backends["numpy-no-blas"].median_ms;
console.log(`the gallery transformer's training step, float32, ${STEPS} timed steps after ${WARMUP}, medians`);
console.log(`  native numpy (one BLAS thread)     ${before.toFixed(2)} ms before, ${after.toFixed(2)} ms after the Pyodide run`);
console.log(`  Pyodide numpy, BLAS on             ${on.toFixed(2)} ms   ${(on / nativeMs).toFixed(2)} x native numpy`);
console.log(`  Pyodide numpy, BLAS off            ${off.toFixed(2)} ms   ${(off / nativeMs).toFixed(2)} x native numpy`);
console.log(`  BLAS on / off ${(on / off).toFixed(2)}; loading the BLAS took ${blasMs.toFixed(0)} ms; products ${JSON.stringify(page.counts)}`);
const drift = Math.max(...page.backends.numpy.losses.map((loss, i) => Math.abs(loss - page.backends["numpy-no-blas"].losses[i])));
console.log(`  largest |loss difference| BLAS on against off: ${drift.toExponential(2)}`);
