// The user's own files in, results out, in headless Chromium (web/src/files/): a file dropped on
// the page (a synthesised drop on the editor) or picked (the file input) is in the script's
// working directory in both Pythons, listed in the Files panel, and still there after a reload;
// a run changes only its own copy; a file a run writes downloads with the bytes CPython writes;
// the script downloads as .py and as a notebook that runs under nbclient; and an edit to the
// gallery's MLP makes its readings without training it.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { paneText, useBrowser, waitForPane } from "./harness.mjs";

const RUN_TIMEOUT = 180_000;
const ROOT = new URL("../../", import.meta.url);
const PYTHON = new URL(".venv/bin/python", ROOT).pathname;
const CSV = "1,2\n3,4\n";

/** Run Python (CPython, this checkout's topos) in `folder` with `input` on stdin; returns what it printed. */
function python(code, folder = "/tmp", input = undefined) {
  return execFileSync(PYTHON, ["-c", code], { cwd: folder, input, env: { ...process.env, PYTHONPATH: new URL("py", ROOT).pathname } });
}

const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");
const setCode = (page, code) => page.evaluate((text) => window.playground.setCode(text), code);
const runState = (page) => page.evaluate(() => document.body.dataset.run ?? null);
const listed = (page, group) => page.$$eval(`[data-files="${group}"] li[data-file]`, (items) => items.map((item) => item.dataset.file));

/** Drop files on the editor as a user's drag does: dragenter, dragover and drop with a DataTransfer that holds them. */
async function dropFiles(page, files) {
  await page.evaluate((files) => {
    const data = new DataTransfer();
    for (const { name, text } of files) data.items.add(new File([text], name, { type: "text/plain" }));
    const target = document.querySelector("#editor");
    for (const type of ["dragenter", "dragover", "drop"]) {
      target.dispatchEvent(new DragEvent(type, { dataTransfer: data, bubbles: true, cancelable: true }));
    }
  }, files);
}

async function download(page, selector) {
  const [file] = await Promise.all([page.waitForEvent("download"), page.click(selector)]);
  const folder = mkdtempSync(join(tmpdir(), "topos-download-"));
  const path = join(folder, file.suggestedFilename());
  await file.saveAs(path);
  return { name: file.suggestedFilename(), path, bytes: readFileSync(path) };
}

const READS_BOTH = `import numpy as np

values = np.loadtxt("data.csv", delimiter=",")
weights = np.load("weights.npy")
print("sum", values.sum(), "weights", weights.tolist())
`;

// Appends to the user's file: each run must find the file as stored, not as the last run left it.
const APPENDS = `with open("data.csv", "a") as file:
    file.write("5,6\\n")
print(repr(open("data.csv").read()), "edit", EDIT)
`;

// Trains a little with exact arithmetic (so that Pyodide's numpy and CPython's agree to the bit),
// then writes a checkpoint, an array and a log: in Run mode only.
const WRITES = `import numpy as np
from topos import Tape

points = np.loadtxt("data.csv", delimiter=",")


def build(tape):
    w = tape.parameter(0.5, name="w")
    error = w * tape.input(points[:, 0]) - tape.input(points[:, 1])
    return [w, (error * error).sum()]


network, (w, loss) = Tape.record(build)
if __name__ == "__main__":
    parameters = network.parameters()
    for step in range(4):
        gradients = network.forward(parameters, {}).backward(loss).parameters(parameters)
        parameters = parameters.step(gradients, lambda w, g: w - g * 0.0625)
    parameters.save("model.safetensors")
    np.save("points.npy", points * 2)
    with open("log.txt", "w") as log:
        log.write(f"w = {parameters.of(w).scalar()!r}\\n")
    print("saved")
`;

describe("the user's files", () => {
  let browser;
  let page;
  let pageErrors;

  useBrowser({ playground: "" }, (opened) => ({ browser, page, errors: pageErrors } = opened));

  test("a dropped file and a picked one are read by the script, listed, and still there after a reload", async () => {
    await dropFiles(page, [{ name: "data.csv", text: CSV }]);
    await page.waitForSelector('[data-files="yours"] li[data-file="data.csv"]');
    assert.equal(await page.$eval("#files-panel", (panel) => panel.hidden), false, "a drop opens the panel");
    // A .npy made by CPython's numpy, picked with the file input.
    const npy = python("import io, sys, numpy as np\nb = io.BytesIO(); np.save(b, np.array([0.5, 1.5])); sys.stdout.buffer.write(b.getvalue())");
    await page.setInputFiles("#files-panel input[type=file]", { name: "weights.npy", mimeType: "application/octet-stream", buffer: npy });
    await page.waitForSelector('[data-files="yours"] li[data-file="weights.npy"]');
    assert.deepEqual(await listed(page, "yours"), ["data.csv", "weights.npy"]);
    assert.match(await page.textContent("#files"), /^Files \(2\)$/);
    await setCode(page, READS_BOTH);
    const expected = "sum 10.0 weights [0.5, 1.5]\n";
    await waitForPane(page, "output", (text) => text === expected);
    await page.reload();
    await page.waitForSelector('body[data-state="ready"]', { timeout: RUN_TIMEOUT });
    assert.equal(await paneText(page, "output"), expected, "the first readings after a reload read the stored files");
    assert.deepEqual(await listed(page, "yours"), ["data.csv", "weights.npy"]);
  });

  test("each run starts from the user's file as stored: a run's change is its own, and listed as written", async () => {
    await page.click("#files"); // the reload closed the panel
    assert.equal(await page.$eval("#files", (button) => button.getAttribute("aria-expanded")), "true");
    await setCode(page, `EDIT = 1\n${APPENDS}`);
    await waitForPane(page, "output", (text) => text.endsWith("edit 1\n"));
    await setCode(page, `EDIT = 2\n${APPENDS}`);
    const text = await waitForPane(page, "output", (text) => text.endsWith("edit 2\n"));
    assert.equal(text, `'1,2\\n3,4\\n5,6\\n' edit 2\n`, "the second edit found the file as stored");
    await page.waitForSelector('[data-files="typing"] li[data-file="data.csv"]');
    // Run mode's Python gets the same files, and the same fresh copy.
    await page.click("#run");
    await page.waitForFunction(() => ["finished", "failed"].includes(document.body.dataset.run), null, { timeout: RUN_TIMEOUT });
    assert.equal(await page.$eval("[data-run-output]", (element) => element.textContent), `'1,2\\n3,4\\n5,6\\n' edit 2\n`);
    const stored = await download(page, '[data-files="yours"] li[data-file="data.csv"] button:has-text("Download")');
    assert.equal(stored.bytes.toString(), CSV, "the stored file is as it was dropped");
  });

  test("the files a run writes download with the bytes CPython writes", async () => {
    await setCode(page, WRITES);
    await page.click("#run");
    await page.waitForFunction(() => ["finished", "failed"].includes(document.body.dataset.run), null, { timeout: RUN_TIMEOUT });
    assert.equal(await runState(page), "finished", await page.$eval("[data-run-output]", (element) => element.textContent));
    await page.waitForSelector('[data-files="run"] li[data-file="model.safetensors"]');
    assert.deepEqual(await listed(page, "run"), ["log.txt", "model.safetensors", "points.npy"]);
    // CPython runs the same script as a program in a folder holding the same data.csv.
    const folder = mkdtempSync(join(tmpdir(), "topos-cpython-"));
    writeFileSync(join(folder, "data.csv"), CSV);
    writeFileSync(join(folder, "main.py"), WRITES);
    python("import runpy\nrunpy.run_path('main.py', run_name='__main__')", folder);
    for (const name of ["model.safetensors", "points.npy", "log.txt"]) {
      const file = await download(page, `[data-files="run"] li[data-file="${name}"] button:has-text("Download")`);
      assert.equal(file.name, name);
      assert.equal(sha256(file.bytes), sha256(readFileSync(join(folder, name))), name);
    }
    // The readings run wrote nothing: the training and its files are the program's.
    assert.deepEqual(await listed(page, "typing"), []);
    if (process.env.FILES_SCREENSHOT) await page.screenshot({ path: process.env.FILES_SCREENSHOT });
  });

  test("the script downloads as .py and as a notebook that nbclient executes", async () => {
    const script = await download(page, 'button:has-text("Download .py")');
    assert.equal(script.name, "main.py");
    assert.equal(script.bytes.toString(), WRITES);
    const notebook = await download(page, 'button:has-text("Download .ipynb")');
    assert.equal(notebook.name, "main.ipynb");
    const expected = python("import sys\nfrom topos.playground.notebook import notebook_json\nsys.stdout.write(notebook_json(sys.stdin.read()))", "/tmp", WRITES);
    assert.equal(notebook.bytes.toString(), expected.toString(), "the page's notebook is topos.playground.notebook's");
    // It runs in a Jupyter kernel, in a folder holding the data it reads, and writes the checkpoint there.
    const folder = mkdtempSync(join(tmpdir(), "topos-notebook-"));
    writeFileSync(join(folder, "data.csv"), CSV);
    const printed = python(
      `import nbformat\nfrom nbclient import NotebookClient\nnb = nbformat.read(${JSON.stringify(notebook.path)}, as_version=4)\n` +
        `NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": "."}}).execute()\n` +
        `print("".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs))`,
      folder,
    );
    assert.equal(printed.toString(), "saved\n\n");
    assert.equal(sha256(readFileSync(join(folder, "model.safetensors"))).length, 64);
  });

  test("a written file can be kept with the user's files, and a file removed is gone from the next run", async () => {
    await page.click('[data-files="run"] li[data-file="log.txt"] button:has-text("Keep")');
    await page.waitForSelector('[data-files="yours"] li[data-file="log.txt"]');
    await setCode(page, 'import os\nprint(sorted(os.listdir(".")), open("log.txt").read().startswith("w = "))\n');
    await waitForPane(page, "output", (text) => text === "['data.csv', 'log.txt', 'weights.npy'] True\n");
    await page.click('[data-files="yours"] li[data-file="log.txt"] button:has-text("Remove")');
    await page.waitForFunction(() => !document.querySelector('[data-files="yours"] li[data-file="log.txt"]'));
    await page.waitForFunction(() => document.querySelector("#error-summary")?.textContent.startsWith("FileNotFoundError"), null, {
      timeout: 30_000,
    });
  });

  test("a file past the size limit is refused with the reason, and nothing is stored", async () => {
    const folder = mkdtempSync(join(tmpdir(), "topos-big-"));
    const big = join(folder, "big.npy");
    writeFileSync(big, Buffer.alloc(60_000_000));
    await page.setInputFiles("#files-panel input[type=file]", big);
    await page.waitForFunction(() => document.querySelector(".files-message")?.textContent.startsWith("Not added"));
    assert.equal(
      await page.textContent(".files-message"),
      "Not added: big.npy is 60 MB: a file may be at most 50 MB (each run holds a copy in each of the page's two Pythons).",
    );
    assert.deepEqual(await listed(page, "yours"), ["data.csv", "weights.npy"]);
  });

  test("with the panel open, every reading tab is in sight and a click on it shows its reading", async () => {
    if (await page.$eval("#files-panel", (panel) => panel.hidden)) await page.click("#files");
    for (const name of await page.$$eval("#tabs [role=tab]", (tabs) => tabs.map((tab) => tab.dataset.tab))) {
      // The tab itself is what the point at its centre hits: nothing (the panel) lies over it.
      const hit = await page.$eval(`#tab-${name}`, (tab) => {
        const { left, top, width, height } = tab.getBoundingClientRect();
        return document.elementFromPoint(left + width / 2, top + height / 2) === tab;
      });
      assert.ok(hit, `the ${name} tab is covered while the Files panel is open`);
      await page.click(`#tab-${name}`);
      assert.equal(await page.$eval(`#tab-${name}`, (tab) => tab.ariaSelected), "true");
      assert.equal(await page.$eval(`#panel-${name}`, (panel) => panel.hidden), false, `the ${name} reading is shown`);
    }
    assert.equal(await page.$eval("#files-panel", (panel) => panel.hidden), false, "the panel stays open");
    if (process.env.FILES_SCREENSHOT) await page.screenshot({ path: process.env.FILES_SCREENSHOT.replace(/(\.png)?$/, "-tabs.png") });
  });

  test("nothing left the origin and no script error happened", () => {
    assert.deepEqual(browser.foreign, []);
    assert.deepEqual(pageErrors, []);
  });
});

describe("a keystroke never waits for training", () => {
  let browser;
  let page;

  useBrowser({ playground: "" }, (opened) => ({ browser, page } = opened));

  test("an edit to the gallery MLP makes its readings without training; Run trains it", async () => {
    const mlp = readFileSync(new URL("docs/examples/04_mlp.py", ROOT), "utf8");
    await page.selectOption("#gallery", "04_mlp.py");
    await waitForPane(page, "spec", (text) => text.includes("[240, 3]"));
    const shown = await page.evaluate(() => Number(document.body.dataset.readingsShown));
    await setCode(page, `${mlp}\n# an edit\n`);
    await page.waitForFunction((count) => Number(document.body.dataset.readingsShown) > count, shown, { timeout: 30_000 });
    // The training prints a line every 50 steps and reports each step: none of it in the readings run.
    const output = await paneText(page, "output");
    assert.doesNotMatch(output, /step +\d+ +loss/);
    assert.doesNotMatch(output, /held-out points/);
    await page.click("#run");
    await page.waitForFunction(() => ["finished", "failed"].includes(document.body.dataset.run), null, { timeout: RUN_TIMEOUT });
    const ran = await page.$eval("[data-run-output]", (element) => element.textContent);
    assert.match(ran, /step 300 +loss/);
    assert.match(ran, /held-out points: 60/);
  });
});
