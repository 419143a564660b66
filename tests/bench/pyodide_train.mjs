// The gallery transformer's training step (docs/examples/06_char_transformer.py through
// tests/bench/train_webgpu.py, float32, Adam) in Pyodide 0.27.7 under Node on numpy, with the
// playground's SIMD kernels (topos.pyodide.blas over topos.pyodide.wasm_gemm), with OpenBLAS instead (the
// files the site serves) and with products kept in numpy (blas.suspended()), GELU through exp in
// all three, against native numpy (one BLAS thread), the same run. Two measures:
//   - wall-clock medians of single steps, the page's two sides interleaved step for step
//     (train_webgpu.measure), native numpy timed before and after;
//   - CPU time a step, in chunks of CHUNK steps taking turns (each Pyodide side, native), medians:
//     on a shared, loaded machine the CPU time is the steadier figure.
// The ratios to native numpy are the page's CPU path's measure (issue 22 aims at <= 2.5). The
// browser's own figure: node tests/bench/browser_train.mjs. Not part of any test run.
//
// Usage: node tests/bench/pyodide_train.mjs   STEPS (default 20), WARMUP (default 3),
//        CHUNKS (default 5), CHUNK (default 5)

import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { pyodideWithBlas, root } from "../pyodide/load.mjs";
import { lines } from "./child-lines.mjs";

const STEPS = Number(process.env.STEPS ?? 20);
const WARMUP = Number(process.env.WARMUP ?? 3);
const CHUNKS = Number(process.env.CHUNKS ?? 5);
const CHUNK = Number(process.env.CHUNK ?? 5);
const env = { ...process.env, PYTHONPATH: join(root, "py"), OMP_NUM_THREADS: "1", OPENBLAS_NUM_THREADS: "1" };
const python = join(root, ".venv/bin/python");

function nativeWall() {
  const args = ["tests/bench/train_webgpu.py", "--json", "--backend", "numpy", "--steps", String(STEPS), "--warmup", String(WARMUP)];
  return JSON.parse(execFileSync(python, args, { cwd: root, encoding: "utf8", env })).backends.numpy.median_ms;
}

// One native process trains, timing a chunk each time it reads a line (so chunks take turns with Pyodide's).
const nativeChunks = `
import sys
sys.path.insert(0, "tests/bench")
import train_webgpu
run = train_webgpu.step_runner(train_webgpu.load_example())
run(${WARMUP})
for line in sys.stdin:
    print(train_webgpu.cpu_per_step(run, 1, ${CHUNK}) * 1e3, flush=True)
`;

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const cpuMs = (since) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1e3;
};

const wallBefore = nativeWall();
const { pyodide, blasMs } = await pyodideWithBlas();
pyodide.globals.set("STEPS", STEPS);
pyodide.globals.set("WARMUP", WARMUP);
const page = JSON.parse(pyodide.runPython(`
import json
import train_webgpu
from topos.pyodide import blas
example = train_webgpu.load_example(open("/checkout/docs/examples/06_char_transformer.py").read())
report = train_webgpu.measure(example, ("numpy", "numpy-openblas", "numpy-no-blas"), STEPS, WARMUP)
json.dumps(report)
`));
const wallAfter = nativeWall();

pyodide.runPython(`
from topos.pyodide import blas
run_on = train_webgpu.step_runner(example)
run_openblas = train_webgpu.step_runner(example)
run_off = train_webgpu.step_runner(example)
run_on(WARMUP)
with blas.suspended(("simd",)):
    run_openblas(WARMUP)
with blas.suspended():
    run_off(WARMUP)
`);
const runOn = pyodide.globals.get("run_on");
const runOpenblas = pyodide.globals.get("run_openblas");
const runOff = pyodide.globals.get("run_off");
const suspended = pyodide.pyimport("topos.pyodide.blas").suspended;
const { spawn } = await import("node:child_process");
const child = spawn(python, ["-c", nativeChunks], { cwd: root, env, stdio: ["pipe", "pipe", "inherit"] });
const childLines = lines(child.stdout);
const cpu = { on: [], openblas: [], off: [], native: [] };
function timeChunk(run, kernels) {
  const context = kernels ? suspended(kernels) : null;
  context?.__enter__();
  const since = process.cpuUsage();
  run(CHUNK);
  const ms = cpuMs(since) / CHUNK;
  context?.__exit__(null, null, null);
  context?.destroy();
  return ms;
}
for (let chunk = 0; chunk < CHUNKS; chunk++) {
  cpu.on.push(timeChunk(runOn, null));
  cpu.openblas.push(timeChunk(runOpenblas, pyodide.toPy(["simd"])));
  cpu.off.push(timeChunk(runOff, pyodide.toPy(["simd", "openblas"])));
  child.stdin.write("\n");
  cpu.native.push(Number((await childLines.next()).value));
}
child.stdin.end();

const counts = pyodide.runPython("import json; json.dumps(blas.counts())");
const wallNative = (wallBefore + wallAfter) / 2;
const on = page.backends.numpy.median_ms;
const openblas = page.backends["numpy-openblas"].median_ms;
const off = page.backends["numpy-no-blas"].median_ms;
const [cpuOn, cpuOpenblas, cpuOff, cpuNative] = [median(cpu.on), median(cpu.openblas), median(cpu.off), median(cpu.native)];
console.log(`the gallery transformer's training step, float32, Adam`);
console.log(`wall clock, medians of ${STEPS} steps after ${WARMUP} (the page's sides interleaved step for step):`);
console.log(`  native numpy (one BLAS thread)   ${wallBefore.toFixed(2)} ms before, ${wallAfter.toFixed(2)} ms after`);
console.log(`  Pyodide numpy, SIMD kernels      ${on.toFixed(2)} ms   ${(on / wallNative).toFixed(2)} x native numpy`);
console.log(`  Pyodide numpy, OpenBLAS          ${openblas.toFixed(2)} ms   ${(openblas / wallNative).toFixed(2)} x native numpy`);
console.log(`  Pyodide numpy, no kernel         ${off.toFixed(2)} ms   ${(off / wallNative).toFixed(2)} x native numpy`);
console.log(`CPU time a step, medians of ${CHUNKS} chunks of ${CHUNK} steps taking turns:`);
console.log(`  native numpy                     ${cpuNative.toFixed(2)} ms`);
console.log(`  Pyodide numpy, SIMD kernels      ${cpuOn.toFixed(2)} ms   ${(cpuOn / cpuNative).toFixed(2)} x native numpy`);
console.log(`  Pyodide numpy, OpenBLAS          ${cpuOpenblas.toFixed(2)} ms   ${(cpuOpenblas / cpuNative).toFixed(2)} x native numpy`);
console.log(`  Pyodide numpy, no kernel         ${cpuOff.toFixed(2)} ms   ${(cpuOff / cpuNative).toFixed(2)} x native numpy`);
console.log(`SIMD / none: wall ${(on / off).toFixed(2)}, CPU ${(cpuOn / cpuOff).toFixed(2)}; OpenBLAS / none: wall ${(openblas / off).toFixed(2)}, ` +
  `CPU ${(cpuOpenblas / cpuOff).toFixed(2)}; loading OpenBLAS took ${blasMs.toFixed(0)} ms; products ${counts}`);
const drift = Math.max(...page.backends.numpy.losses.map((loss, i) => Math.abs(loss - page.backends["numpy-no-blas"].losses[i])));
console.log(`largest |loss difference|, SIMD kernels against none: ${drift.toExponential(2)}`);
process.exit(0);
