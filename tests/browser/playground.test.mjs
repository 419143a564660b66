// The playground in headless Chromium: offline loading, the seed's readings, live
// updates, errors on the user's line, stopping an endless loop, share links, and
// user output shown as text. (WebGPU has its own file: webgpu.test.mjs.)

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { BASE_URL, cpythonRun, openPlayground, paneText, pasteCode, READING_NAMES, useBrowser, waitForPane } from "./harness.mjs";
import { SEED_DESCRIBE, SEED_HLO, SEED_PLAN, SEED_RECORDING, SEED_SEALED } from "./seed.mjs";

const READINGS = [...READING_NAMES, "output"];
// The readings whose pane is text (the graph is a picture).
const TEXT_READINGS = READING_NAMES.filter((name) => name !== "graph");
const MARKUP = '<img src=x onerror="window.__owned = 1">';
const FIRST_EXAMPLE = readFileSync(new URL("../../docs/examples/01_scalar_chain.py", import.meta.url), "utf8");

describe("the playground", () => {
  let browser;
  let page;
  let pageErrors;
  const requests = [];

  useBrowser(
    { playground: "", prepare: (opened) => opened.context.on("request", (request) => requests.push(request.url())) },
    (opened) => ({ browser, page, errors: pageErrors } = opened),
  );

  test("loads with every request on its own origin, and shows readings of the first example", async () => {
    const origin = new URL(BASE_URL).origin;
    assert.deepEqual(browser.foreign, [], "requests left the origin");
    assert.ok(requests.length > 5);
    for (const url of requests) assert.ok(url.startsWith(origin) || url.startsWith("blob:") || url.startsWith("data:"), url);
    // Pyodide, numpy and the topos wheel came from the site itself.
    for (const file of ["pyodide.asm.wasm", "numpy-2.0.2", "topos_autodiff-"]) {
      assert.ok(requests.some((url) => url.includes(`/pyodide/${file}`)), `${file} was not loaded from /pyodide/`);
    }
    // The page unpacks the topos wheel itself: no installer is loaded for it.
    for (const file of ["micropip", "packaging"]) assert.ok(!requests.some((url) => url.includes(`/pyodide/${file}`)), `${file} was loaded`);
    for (const name of READINGS) {
      const element = await page.$(`[data-reading="${name}"]`);
      assert.ok(element, `no pane for ${name}`);
    }
    assert.match(await paneText(page, "spec"), /^ {3}0 {2}Parameter/);
    // The first example's text was shown at once, and Monaco took it over after the first readings.
    await page.waitForSelector('#editor[data-editor="monaco"] .monaco-editor');
    assert.equal(await page.evaluate(() => window.playground.getCode()), FIRST_EXAMPLE);
    assert.equal(await page.$eval("#loading", (e) => e.hidden), true, "the load indicator outlived the first readings");
    const stages = await page.$$eval("#loading li", (rows) => Object.fromEntries(rows.map((r) => [r.dataset.stage, r.dataset.state])));
    assert.deepEqual(stages, { webgpu: "done", pyodide: "done", numpy: "done", topos: "done", readings: "started" });
  });

  test("the seed's first example shows its exact describe, plan and HLO", async () => {
    await pasteCode(page, SEED_RECORDING);
    assert.equal(await waitForPane(page, "spec", (text) => text === SEED_DESCRIBE), SEED_DESCRIBE);
    assert.equal(await paneText(page, "hlo"), SEED_HLO);
    assert.equal(await paneText(page, "plan"), SEED_PLAN);
    assert.equal(await page.evaluate(() => window.playground.getCode()), SEED_RECORDING);
    // The graph pane's text is its node labels, one a node.
    assert.deepEqual((await paneText(page, "graph")).split("\n"), [
      "0 Parameter []", "1 Input []", "2 Input []", "3 Mul []", "4 Sub []", "5 Mul []",
    ]);
  });

  test("topos is imported from bytecode compiled for the page's Python (web/scripts/compile_wheel.mjs)", async () => {
    await pasteCode(
      page,
      [
        "import importlib.util",
        "import topos.compiler.plan",
        "import topos.show",
        "for module in (topos.show, topos.compiler.plan):",
        '    with open(module.__cached__, "rb") as file:',
        "        header = file.read(8)",
        '    flags = int.from_bytes(header[4:8], "little")',
        '    print(module.__name__, "magic", header[:4] == importlib.util.MAGIC_NUMBER, "flags", flags)',
      ].join("\n"),
    );
    // The magic number is this Python's, and the flags say an unchecked hash-based .pyc: used as it is.
    const output = await waitForPane(page, "output", (text) => text.includes("topos.compiler.plan"));
    assert.equal(output, "topos.show magic True flags 1\ntopos.compiler.plan magic True flags 1\n");
  });

  test("the sealed seed reads the same, and prints the seed's numbers", async () => {
    await pasteCode(page, SEED_SEALED);
    await waitForPane(page, "output", (text) => text.includes("9.0 -12.0 -3.0 6.0"));
    assert.equal(await paneText(page, "spec"), SEED_DESCRIBE);
    assert.equal(await paneText(page, "hlo"), SEED_HLO);
    assert.match(await paneText(page, "gradient"), /plan: forward\+backward; \d+ of \d+ nodes evaluated, 1 readable, 1 gradient/);
  });

  test("an edit that adds a node updates every pane", async () => {
    await pasteCode(page, SEED_RECORDING);
    await waitForPane(page, "spec", (text) => text === SEED_DESCRIBE);
    const before = Object.fromEntries(await Promise.all(READINGS.map(async (name) => [name, await paneText(page, name)])));
    // Type a new last line, as a user would: it records node 6.
    await page.click("#editor .view-lines");
    await page.keyboard.press("ControlOrMeta+End");
    for (const line of ["out = loss.exp()", "print(tape.describe())"]) {
      await page.keyboard.type(line);
      await page.keyboard.press("Escape"); // close any suggestion, so that Enter starts a new line
      await page.keyboard.press("Enter");
    }
    const spec = await waitForPane(page, "spec", (text) => text.includes("   6  Exp            5"));
    assert.match(spec, /tape: 7 nodes, 1 parameter, 2 inputs$/);
    // The spec may be of the first typed line alone (a busy machine runs the edit between the lines), and
    // the readings stream in pane by pane: wait for the second line's print, then for every pane to change.
    await waitForPane(page, "output", (text) => /6 {2}Exp/.test(text));
    for (const name of READINGS) await waitForPane(page, name, (text) => text !== before[name]);
    const after = Object.fromEntries(await Promise.all(READINGS.map(async (name) => [name, await paneText(page, name)])));
    for (const name of READINGS) assert.notEqual(after[name], before[name], `the ${name} pane did not change`);
    assert.match(after.graph, /^6 Exp \[\]$/m);
    assert.match(after.plan, /^ {3}6 {2}Exp {12}5 .* kept$/m);
    assert.match(after.plan, /plan: forward; 7 of 7 nodes evaluated, 1 readable/);
    assert.match(after.gradient, /^ {3}6 {2}Exp/m);
    assert.match(after.hlo, /%v6 = stablehlo.exponential %v5 : tensor<f64>/);
    assert.match(after.kernels, /\bExp\b.*\b6\b/);
    assert.match(after.output, /6 {2}Exp/);
  });

  test("selecting a node links it across the readings and to its source line", async () => {
    await pasteCode(page, SEED_RECORDING);
    await waitForPane(page, "spec", (text) => text === SEED_DESCRIBE);
    // Node 4 (Sub) was recorded by line 7, `error = w * x - y`.
    await page.click('[data-reading="spec"] [data-nodes="4"]');
    assert.equal(await page.$eval("#editor", (e) => e.dataset.linkedLines), "7");
    for (const name of ["spec", "plan", "gradient", "hlo"]) {
      const linked = await page.$$eval(`[data-reading="${name}"] .linked`, (lines) => lines.map((l) => l.textContent));
      assert.ok(linked.length >= 1 && linked.every((l) => /^\s*(%v)?4\b/.test(l)), `${name}: ${JSON.stringify(linked)}`);
    }
    assert.equal(await page.$eval('[data-reading="graph"] .linked', (g) => g.textContent), "4 Sub []");
    // And the reverse: the cursor on line 8 (`loss = error * error`) selects node 5.
    await page.click("#editor .view-lines");
    await page.keyboard.press("ControlOrMeta+Home");
    for (let i = 0; i < 7; i++) await page.keyboard.press("ArrowDown");
    await page.waitForFunction(() => document.querySelector('[data-reading="graph"] .linked')?.textContent === "5 Mul []");
    assert.equal(await page.$eval("#editor", (e) => e.dataset.linkedLines), "8");
  });

  test("copying a text pane gives the reading's text exactly, as CPython's topos.playground makes it", async () => {
    // float32 (the kernels reading has launches) and a Sum (the HLO holds a reduce region over several rows).
    const code = [
      "import topos",
      "from topos import Tape",
      "",
      "def build(tape):",
      "    w = tape.parameter([[1.0, -2.0], [3.0, 0.5]], name='w')",
      "    x = tape.input([1.0, -1.0], name='x')",
      "    return [topos.softmax(w @ x).sum()]",
      "",
      "network, (loss,) = Tape.record(build, dtype='float32')",
      "",
    ].join("\n");
    const oracle = cpythonRun(code);
    assert.equal(oracle.error, null);
    await browser.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(BASE_URL).origin });
    await pasteCode(page, code);
    await waitForPane(page, "spec", (text) => text === oracle.readings.spec.text);
    for (const name of TEXT_READINGS) {
      const expected = oracle.readings[name].text;
      assert.ok(expected.split("\n").length > 3, `${name}: ${expected}`);
      await page.click(`#tab-${name}`);
      await page.evaluate(() => navigator.clipboard.writeText("(nothing copied)"));
      await page.$eval(`[data-reading="${name}"]`, (pane) => window.getSelection().selectAllChildren(pane));
      await page.keyboard.press("ControlOrMeta+C");
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), expected, `the ${name} pane copied otherwise`);
      // Each row is one element that names the nodes Python said it is about.
      const rows = await page.$$eval(`[data-reading="${name}"] .line`, (lines) => lines.map((line) => line.dataset.nodes ?? ""));
      assert.deepEqual(rows, oracle.readings[name].rows.map((row) => row.nodes.join(" ")), name);
    }
    await page.evaluate(() => window.getSelection().removeAllRanges());
    await page.click("#tab-spec");
  });

  test("a shape error marks the user's line and keeps the last good readings", async () => {
    await pasteCode(page, SEED_RECORDING);
    await waitForPane(page, "spec", (text) => text === SEED_DESCRIBE);
    const good = Object.fromEntries(await Promise.all(READINGS.map(async (name) => [name, await paneText(page, name)])));
    const broken = SEED_RECORDING.replace("loss = error * error", "loss = error * error\nbad = error + tape.parameter([1.0, 2.0]) @ tape.parameter([1.0, 2.0, 3.0])");
    await pasteCode(page, broken);
    await page.waitForSelector('#editor[data-error-line="9"]', { timeout: 30_000 });
    assert.match(await page.$eval("#error", (e) => e.textContent), /ShapeError on line 9: MatMul/);
    for (const name of READINGS) assert.equal(await paneText(page, name), good[name], `the ${name} pane changed`);
    // A syntax error is marked on its line too, and fixing the code clears the mark.
    await pasteCode(page, "from topos import Tape\ntape = Tape()\nw = tape.parameter(1.0\n");
    await page.waitForSelector('#editor[data-error-line="3"]', { timeout: 30_000 });
    await pasteCode(page, SEED_RECORDING);
    await page.waitForFunction(() => !document.querySelector("#editor").dataset.errorLine);
    assert.equal(await page.$eval("#error", (e) => e.hidden), true);
  });

  test("printed markup is shown as text, never as HTML", async () => {
    const attack = MARKUP;
    await pasteCode(page, `from topos import show\nprint(${JSON.stringify(attack)})\nshow.lines([${JSON.stringify(attack)}])\n`);
    const output = await waitForPane(page, "output", (text) => text.includes(attack));
    assert.equal(output.split(attack).length - 1, 2);
    assert.equal(await page.$$eval('[data-reading="output"] img', (images) => images.length), 0);
    assert.equal(await page.evaluate(() => window.__owned), undefined);
  });

  test("plot and graph cards are drawn by uPlot and dagre, their labels as text", async () => {
    const code = [
      "from topos import Tape, show",
      "from topos.show import Line, Plot",
      "tape = Tape()",
      "w = tape.parameter(2.0)",
      "loss = w * w",
      "show.graph(tape)",
      `show.plot(Plot().layer(Line.y([4.0, 2.0, 1.0, 0.5]).label(${JSON.stringify(MARKUP)})).title("training").x_label("step").y_label("loss").log_y())`,
    ].join("\n");
    await pasteCode(page, code + "\n");
    await page.waitForSelector('[data-reading="output"] .card-plot .uplot canvas', { timeout: 30_000 });
    await page.waitForSelector('[data-reading="output"] .card-graph svg text');
    const output = await paneText(page, "output");
    assert.match(output, /0 Parameter \[\]\n1 Mul \[\]/);
    assert.match(output, /training/);
    assert.ok(output.includes(MARKUP), "the plot's label is shown as text");
    assert.equal(await page.$$eval('[data-reading="output"] img', (images) => images.length), 0);
  });

  test("a share link carries the code and opens it again", async () => {
    const code = SEED_SEALED.replace("0.5", "0.25") + "# shared: ünïcode, \"quotes\" & <markup>\n";
    await pasteCode(page, code);
    await waitForPane(page, "output", (text) => text.includes("12.25 -14.0 -1.75 7.0"));
    await page.click("#share");
    const link = await page.$eval("#share-link", (e) => e.value);
    assert.match(link, /#code=v1:/);
    const { page: opened } = await openPlayground(browser.context, new URL(link).hash);
    assert.equal(await opened.evaluate(() => window.playground.getCode()), code);
    await waitForPane(opened, "output", (text) => text.includes("12.25 -14.0 -1.75 7.0"));
    await opened.close();
  });

  test("a newer edit cancels an older run's results", async () => {
    // Record every text the output pane ever shows, to prove the older run's never appeared.
    await page.evaluate(() => {
      window.__outputs = [];
      const pane = document.querySelector('[data-reading="output"]');
      new MutationObserver(() => window.__outputs.push(pane.textContent)).observe(pane, { childList: true, subtree: true });
    });
    // The older run lasts long enough for the newer paste to land while it runs, on a busy machine too.
    const slow = "import time\nstarted = time.time()\nwhile time.time() - started < 3:\n    pass\nprint('the older run')\n";
    await pasteCode(page, slow);
    await page.waitForFunction(() => document.querySelector("#status").textContent === "running…");
    await pasteCode(page, "print('the newer run')\n");
    await waitForPane(page, "output", (text) => text.includes("the newer run"));
    const seen = await page.evaluate(() => window.__outputs);
    assert.ok(!seen.some((text) => text.includes("the older run")), "the older run's output was shown");
  });

  test("the gallery picker and the keyboard shortcuts", async () => {
    // The first option stands for the user's own code; the examples follow.
    const [own, ...examples] = await page.$$eval("#gallery option", (options) => options.map((o) => o.value));
    assert.equal(own, "");
    assert.ok(examples.length >= 6 && examples[0] === "01_scalar_chain.py", examples.join());
    await page.selectOption("#gallery", "03_matmul.py");
    await waitForPane(page, "spec", (text) => /MatMul/.test(text) && /Broadcast/.test(text));
    assert.match(await page.evaluate(() => window.playground.getCode()), /A matrix product and its gradient/);
    // Alt+PageDown and Alt+PageUp step through the readings; Ctrl+Enter runs the script (Run mode).
    const shown = () => page.$eval("#tabs [aria-selected=true]", (tab) => tab.dataset.tab);
    await page.click("#editor .view-lines");
    const first = await shown();
    await page.keyboard.press("Alt+PageDown");
    assert.notEqual(await shown(), first);
    await page.keyboard.press("Alt+PageUp");
    assert.equal(await shown(), first);
    await page.keyboard.press("ControlOrMeta+Enter");
    await page.waitForFunction(() => document.body.dataset.run === "finished", null, { timeout: 120_000 });
  });

  test("light and dark themes follow the system", async () => {
    await page.emulateMedia({ colorScheme: "dark" });
    await page.waitForSelector("#editor .monaco-editor.vs-dark");
    const dark = await page.$eval("body", (body) => getComputedStyle(body).backgroundColor);
    await page.emulateMedia({ colorScheme: "light" });
    await page.waitForSelector("#editor .monaco-editor.vs");
    const light = await page.$eval("body", (body) => getComputedStyle(body).backgroundColor);
    assert.equal(light, "rgb(255, 255, 255)");
    assert.notEqual(dark, light);
  });

  test("nothing left the origin and no script error happened during the whole suite", () => {
    assert.deepEqual(browser.foreign, []);
    assert.deepEqual(pageErrors, []);
  });
});

describe("a run that never ends, or runs out of memory", () => {
  let opened;

  useBrowser({ playground: "?timeLimit=3000" }, (value) => (opened = value));

  test("is stopped, the worker restarts, and the next edit runs", async () => {
    const { browser, page, errors } = opened;
    await pasteCode(page, "n = 0\nwhile True:\n    n += 1\n");
    await page.waitForFunction(() => /ran longer than 3 s/.test(document.querySelector("#status").textContent), null, { timeout: 30_000 });
    assert.match(await page.$eval("#error", (e) => e.textContent), /restarted/);
    // A fresh worker loads Python again and answers the next edit.
    await pasteCode(page, SEED_RECORDING + 'print("after the restart")\n');
    await waitForPane(page, "output", (text) => text.includes("after the restart"), 60_000);
    assert.equal(await paneText(page, "spec"), SEED_DESCRIBE);
    assert.equal(await page.$eval("#error", (e) => e.hidden), true);
    // Running out of memory also restarts Python (its heap is not trusted afterwards), and says why.
    await pasteCode(page, 'raise MemoryError("the model did not fit")\n');
    await page.waitForFunction(() => /ran out of memory/.test(document.querySelector("#status").textContent), null, { timeout: 30_000 });
    await pasteCode(page, 'print("after the memory error")\n');
    await waitForPane(page, "output", (text) => text.includes("after the memory error"), 60_000);
    assert.deepEqual(browser.foreign, []);
    assert.deepEqual(errors, []);
  });
});
