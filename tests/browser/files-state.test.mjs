// The Files panel offers an optimizer's state beside its parameters (issue 35, Deliver 3), in headless
// Chromium: a Run that saves `ckpt.safetensors` and `ckpt.state.safetensors` (state.save, named as
// docs/training.md's "Resuming" names it) lists the state right under its parameters, said to be
// their optimizer's state, though a file between them sorts first; the state file downloads and
// CPython's topos loads it (optimizer.load_state) at the step count the page's run reached;
// "Keep both" keeps the pair with the user's files, paired there too; and the next Run resumes
// from them.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { useBrowser } from "./harness.mjs";

const RUN_TIMEOUT = 180_000;
const ROOT = new URL("../../", import.meta.url);
const PYTHON = new URL(".venv/bin/python", ROOT).pathname;

const setCode = (page, code) => page.evaluate((text) => window.playground.setCode(text), code);
const listed = (page, group) => page.$$eval(`[data-files="${group}"] li[data-file]`, (items) => items.map((item) => item.dataset.file));
const output = (page) => page.$eval("[data-run-output]", (element) => element.textContent);

async function run(page) {
  await page.click("#run");
  await page.waitForFunction(() => ["finished", "failed"].includes(document.body.dataset.run), null, { timeout: RUN_TIMEOUT });
  assert.equal(await page.evaluate(() => document.body.dataset.run), "finished", await output(page));
}

// The model both scripts share; the first trains 20 steps and saves, the second resumes from the files.
const MODEL = `import numpy as np
from topos import Tape
from topos.model import optim, schedules

points = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])


def build(tape):
    w = tape.parameter(0.5, name="w")
    error = w * tape.input(points[:, 0]) - tape.input(points[:, 1])
    return [w, (error * error).sum()]


network, (w, loss) = Tape.record(build)
optimizer = optim.Adam(lr=schedules.cosine_decay_schedule(0.1, decay_steps=40))


def train(parameters, state, steps):
    for _ in range(steps):
        gradients = network.forward(parameters).backward(loss).parameters(parameters)
        parameters, state = optimizer.step(parameters, gradients, state)
    return parameters, state
`;

const SAVES = `${MODEL}
if __name__ == "__main__":
    parameters, state = train(network.parameters(), optimizer.init(network.parameters()), 20)
    parameters.save("ckpt.safetensors")
    state.save("ckpt.state.safetensors")
    with open("ckpt.seed.txt", "w") as note:  # sorts between the two: the panel pairs them anyway
        note.write("0\\n")
    print("saved at", state.steps)
`;

const RESUMES = `${MODEL}
if __name__ == "__main__":
    parameters = network.load_parameters("ckpt.safetensors")
    state = optimizer.load_state("ckpt.state.safetensors", parameters)
    parameters, state = train(parameters, state, 20)
    print("resumed to", state.steps)
`;

describe("the optimizer's state beside its parameters", () => {
  let page;

  useBrowser({ playground: "" }, (opened) => ({ page } = opened));

  test("a run's state file is listed under its parameters, said to be their state, and loads in CPython", async () => {
    await setCode(page, SAVES);
    await run(page);
    assert.equal(await output(page), "saved at 20\n");
    await page.click("#files");
    await page.waitForSelector('[data-files="run"] li[data-file="ckpt.state.safetensors"]');
    assert.deepEqual(await listed(page, "run"), ["ckpt.safetensors", "ckpt.state.safetensors", "ckpt.seed.txt"]);
    const state = '[data-files="run"] li[data-file="ckpt.state.safetensors"]';
    assert.equal(await page.$eval(state, (item) => item.dataset.stateOf), "ckpt.safetensors");
    assert.match(await page.$eval(state, (item) => item.textContent), /the optimizer's state of ckpt\.safetensors/);
    assert.equal(await page.$$eval('[data-files="run"] li[data-file="ckpt.seed.txt"][data-state-of]', (items) => items.length), 0);
    // The bytes the page wrote are a state CPython's topos loads for the same network, at step 20.
    const folder = mkdtempSync(join(tmpdir(), "topos-state-"));
    for (const name of ["ckpt.safetensors", "ckpt.state.safetensors"]) {
      const [file] = await Promise.all([
        page.waitForEvent("download"),
        page.click(`[data-files="run"] li[data-file="${name}"] button:has-text("Download")`),
      ]);
      assert.equal(file.suggestedFilename(), name);
      await file.saveAs(join(folder, name));
    }
    writeFileSync(join(folder, "main.py"), `${MODEL}\nparameters = network.load_parameters("ckpt.safetensors")\nprint(optimizer.load_state("ckpt.state.safetensors", parameters))\n`);
    const printed = execFileSync(PYTHON, ["main.py"], { cwd: folder, env: { ...process.env, PYTHONPATH: new URL("py", ROOT).pathname } });
    assert.equal(printed.toString(), "<OptimizerState of Adam: 1 slot, 20 steps>\n");
    assert.ok(readFileSync(join(folder, "ckpt.state.safetensors")).length > 8);
  });

  test("Keep both keeps the pair with the user's files, and the next run resumes from them", async () => {
    await page.click('[data-files="run"] li[data-file="ckpt.safetensors"] button:has-text("Keep both")');
    await page.waitForSelector('[data-files="yours"] li[data-file="ckpt.state.safetensors"]');
    assert.deepEqual(await listed(page, "yours"), ["ckpt.safetensors", "ckpt.state.safetensors"]);
    assert.equal(await page.$eval('[data-files="yours"] li[data-file="ckpt.state.safetensors"]', (item) => item.dataset.stateOf), "ckpt.safetensors");
    assert.match(await page.$eval(".files-message", (element) => element.textContent), /^Kept ckpt\.safetensors and ckpt\.state\.safetensors/);
    if (process.env.FILES_STATE_SCREENSHOT) await page.screenshot({ path: process.env.FILES_STATE_SCREENSHOT });
    await setCode(page, RESUMES);
    await run(page);
    assert.equal(await output(page), "resumed to 40\n");
  });
});
