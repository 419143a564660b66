// A script's own WebGPU in the page: Python reaches the browser's WebGPU (SwiftShader in
// headless Chromium) through topos.webgpu's browser device, waiting for its promises with
// pyodide.ffi.run_sync, which JavaScript Promise Integration (JSPI) makes possible. A script's
// plan.run(backend="webgpu") and a DeviceTrainer then agree with numpy within the kernels'
// documented bound (docs/kernels.md, "Agreement with numpy"). The same suite runs again on a page
// whose Python worker has no JSPI, as in a browser without it: the script gets the message that
// says why, "auto" runs numpy, and the kernels pane says that WebGPU did not run and why.
//
// Chromium 156 has no switch that turns JSPI off (the V8 flag went when it shipped; neither
// --js-flags=--no-experimental-wasm-jspi nor --disable-features=WebAssemblyJSPromiseIntegration
// removes it), so the test takes WebAssembly.Suspending out of the worker's global before Pyodide
// loads: Pyodide detects JSPI by that constructor, and a browser without JSPI lacks it.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, describe, test } from "node:test";
import { pasteCode, useBrowser, waitForPane } from "./harness.mjs";

const TRANSFORMER = readFileSync(new URL("../../docs/examples/06_char_transformer.py", import.meta.url), "utf8");
// The page stops a run after 10 s; SwiftShader compiles the transformer's pipelines slowly on a busy machine.
const PAGE = "?timeLimit=120000";
const NO_JSPI_MESSAGE =
  "Python cannot wait for WebGPU here: this browser lacks JavaScript Promise Integration (JSPI), " +
  "which pyodide.ffi.run_sync needs to wait for WebGPU's promises";

// Each script prints its results as one line of JSON, named, for the test to read from the output pane.
const resultLine = (name) => new RegExp(`^RESULT ${name} (.*)$`, "m");

const PLAN_SCRIPT = `import json

import numpy as np

import topos
from topos import Tape


def build(tape):
    x = tape.input(np.linspace(-1.0, 1.0, 48).reshape(6, 8), name="x")
    w = tape.parameter(np.linspace(0.5, 1.5, 8), name="w")
    hidden = topos.layer_norm(x, w) @ np.linspace(-1.0, 1.0, 64).reshape(8, 8)
    return [topos.softmax(topos.tanh(hidden) * 2.0, axis=-1), (hidden * hidden).sum()]


network, (probabilities, total) = Tape.record(build, dtype="float32")
plan = network.entry([probabilities, total]).lower()
parameters = network.parameters()
computed = {node for node in plan.schedule if not plan.nodes[node].is_source}
result = {"numpy": [plan.run(parameters, {}).of(v).numpy().ravel().tolist() for v in (probabilities, total)]}
try:
    on_webgpu = plan.run(parameters, {}, backend="webgpu")
except topos.webgpu.NoAdapterError as error:
    result["error"] = f"{type(error).__name__}: {error}"
else:
    result["webgpu"] = [on_webgpu.of(v).numpy().ravel().tolist() for v in (probabilities, total)]
    result["webgpu backends"] = sorted({on_webgpu.backends[node] for node in computed})
auto = plan.run(parameters, {}, backend="auto")
result["auto"] = [auto.of(v).numpy().ravel().tolist() for v in (probabilities, total)]
result["auto backends"] = sorted({auto.backends[node] for node in computed})
print("RESULT plan " + json.dumps(result))
`;

// The gallery's transformer (its recording at the top level), then three Adam steps on the
// device and the same three on the host.
const TRAINING_SCRIPT = `${TRANSFORMER}

import json

from topos.webgpu import DeviceTrainer, NoAdapterError

rng = np.random.default_rng(1)
batches = [sample_windows(rng, CONFIG) for _ in range(3)]
result = {}
try:
    trainer = DeviceTrainer(network.entry([loss]).backward(loss).lower(), network.parameters(), optim.Adam(lr=1e-2))
except NoAdapterError as error:
    result["error"] = f"{type(error).__name__}: {error}"
else:
    runs = [trainer.step({tokens: inputs, targets: expected}) for inputs, expected in batches]
    result["webgpu"] = [run.of(loss).scalar() for run in runs]
    result["webgpu backends"] = sorted(set(runs[0].backends.values()))
parameters, optimizer = network.parameters(), optim.Adam(lr=1e-2)
state, result["numpy"] = optimizer.init(parameters), []
for inputs, expected in batches:
    run = network.forward(parameters, {tokens: inputs, targets: expected})
    result["numpy"].append(run.of(loss).scalar())
    parameters, state = optimizer.step(parameters, run.backward(loss).parameters(parameters), state)
print("RESULT training " + json.dumps(result))
`;

/** Run `code` in the page and read the JSON line named `name` that it prints. */
async function runScript(page, code, name) {
  await pasteCode(page, code);
  const line = resultLine(name);
  const text = await waitForPane(page, "output", (shown) => line.test(shown), 240_000);
  return JSON.parse(line.exec(text)[1]);
}

/**
 * docs/kernels.md's bound for float32 results against numpy's: 1e-5 relative, plus, for a sum of
 * n terms, 4 sqrt(n) 2^-24 sum(|terms|).
 */
function assertAgree(actual, expected, { terms = 1, scale = 0 } = {}, what = "") {
  assert.equal(actual.length, expected.length, what);
  const sumBound = 4 * Math.sqrt(terms) * 2 ** -24 * scale;
  actual.forEach((value, i) => {
    const bound = 1e-5 * Math.abs(expected[i]) + sumBound;
    assert.ok(Math.abs(value - expected[i]) <= bound, `${what}[${i}]: ${value} against numpy's ${expected[i]} (bound ${bound})`);
  });
}

/**
 * tests/python/tolerances.py's loss_bound, the same rule in JavaScript: a training curve of two runs that
 * round differently (WebGPU's kernels against numpy) differs by the widest reduction's rounding,
 * 8 sqrt(n) 2^-24 of the loss at the first step, and by as much again at each later step.
 */
function assertLossesAgree(actual, expected, terms, what) {
  assert.equal(actual.length, expected.length, what);
  actual.forEach((value, i) => {
    const bound = 8 * Math.sqrt(terms) * 2 ** -24 * (i + 1) * Math.abs(expected[i]);
    assert.ok(Math.abs(value - expected[i]) <= bound, `${what}[${i}]: ${value} against numpy's ${expected[i]} (bound ${bound})`);
  });
}

/** The plan's two outputs: each softmax row normalises a sum of 8 terms; the total sums 48 squares. */
function assertPlanAgrees(actual, expected, what) {
  assertAgree(actual[0], expected[0], { terms: 8, scale: 1 }, `${what}: probabilities`);
  assertAgree(actual[1], expected[1], { terms: 48, scale: Math.abs(expected[1][0]) }, `${what}: total`);
}

/** Take JSPI from the Python worker: registered after the harness's own route, so it is consulted first. */
function withoutJspi(browser) {
  return browser.context.route(/\/assets\/worker-[^/]*\.js$/, async (route) => {
    const response = await route.fetch();
    const script = `delete WebAssembly.Suspending;\n${await response.text()}`;
    await route.fulfill({ response, body: script });
  });
}

/**
 * The scaffold of a block: the playground in a browser whose Python worker has JSPI, or
 * (`jspi: false`) lacks it; after the block, nothing left the site and the page raised nothing.
 */
function usePage(jspi, onOpen) {
  let opened;
  useBrowser({ playground: PAGE, prepare: jspi ? undefined : withoutJspi }, (value) => onOpen((opened = value)));
  after(() => {
    if (!opened) return;
    assert.deepEqual(opened.browser.foreign, []);
    assert.deepEqual(opened.errors, []);
  });
}

describe("with JSPI, a script's Python reaches the page's WebGPU", () => {
  let opened;
  usePage(true, (value) => (opened = value));

  test("plan.run(backend='webgpu') runs on WebGPU and agrees with numpy; auto leaves SwiftShader to numpy", async () => {
    const result = await runScript(opened.page, PLAN_SCRIPT, "plan");
    assert.equal(result.error, undefined, result.error);
    assert.deepEqual(result["webgpu backends"], ["webgpu"], "every computed node ran on WebGPU");
    assertPlanAgrees(result.webgpu, result.numpy, "WebGPU");
    // SwiftShader is a fallback adapter: "auto" runs numpy there, as the backend picker does.
    assert.deepEqual(result["auto backends"], ["numpy"]);
    assertPlanAgrees(result.auto, result.numpy, "auto");
  });

  test("a DeviceTrainer trains the gallery transformer on WebGPU as numpy does", async () => {
    const result = await runScript(opened.page, TRAINING_SCRIPT, "training");
    assert.equal(result.error, undefined, result.error);
    // Every node runs on WebGPU, the embedding's gradient (ScatterAdd, a gather in increasing index order) included.
    assert.deepEqual(result["webgpu backends"], ["webgpu"]);
    assert.equal(result.webgpu.length, 3);
    // The transformer's widest reduction sums its batch of 16 windows of 16 characters.
    assertLossesAgree(result.webgpu, result.numpy, 16 * 16, "losses");
    assert.ok(result.numpy[2] < result.numpy[0], `the loss falls: ${result.numpy}`);
  });
});

describe("without JSPI, the page says why WebGPU cannot run and numpy runs", () => {
  let opened;
  usePage(false, (value) => (opened = value));

  test("plan.run(backend='webgpu') raises the message, and auto gives numpy's results", async () => {
    const result = await runScript(opened.page, PLAN_SCRIPT, "plan");
    assert.equal(result.error, `NoAdapterError: ${NO_JSPI_MESSAGE}`);
    assert.equal(result.webgpu, undefined);
    assert.deepEqual(result["auto backends"], ["numpy"]);
    assert.deepEqual(result.auto, result.numpy, "auto is the numpy interpreter itself");
  });

  test("a DeviceTrainer says why, and the numpy steps train", async () => {
    const result = await runScript(opened.page, TRAINING_SCRIPT, "training");
    assert.equal(result.error, `NoAdapterError: ${NO_JSPI_MESSAGE}`);
    assert.equal(result.numpy.length, 3);
    assert.ok(result.numpy[2] < result.numpy[0], `the loss falls: ${result.numpy}`);
  });

  test("the kernels pane says that WebGPU did not run, and why", async () => {
    await opened.page.selectOption("#backend", "webgpu");
    const kernels = await waitForPane(opened.page, "kernels", (text) => /^WebGPU: /m.test(text), 60_000);
    assert.match(kernels, new RegExp(`^WebGPU: ${NO_JSPI_MESSAGE.replace(/[()]/g, "\\$&")}; the numpy interpreter ran$`, "m"));
    const title = await opened.page.$eval("#backend", (picker) => picker.title);
    assert.equal(title, `no WebGPU: ${NO_JSPI_MESSAGE}`);
  });
});
