// The cards in a real JupyterLab: the test environment's JupyterLab (.venv) with the prebuilt
// extension that web/scripts/build-labextension.sh links into it opens docs/notebooks/cards.ipynb,
// runs every cell (Run > Run All Cells) and saves it. The saved outputs are the oracle: every
// output that carries a card (application/vnd.topos.card+json) is drawn by the extension, the
// graph card as one element a node with the node labels as text, the plot card by uPlot with all
// its points, an image card on a canvas whose pixels are the card's, and a card with rows highlights
// the rows about the same nodes on a click.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { openBrowser } from "./harness.mjs";

const ROOT = new URL("../../", import.meta.url).pathname;
const NOTEBOOK = join(ROOT, "docs/notebooks/cards.ipynb");
const CARD_MIME_TYPE = "application/vnd.topos.card+json";
const STDERR = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']";
// JupyterLab's first start, the kernel's and the whole notebook's run take their time on a busy machine.
const LAB_TIMEOUT = 180_000;

/** A port nobody listens on now. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Settings that keep the test's JupyterLab quiet and whole: no news or update checks, every cell in the page. */
function writeSettings(settingsDir) {
  const write = (plugin, file, settings) => {
    mkdirSync(join(settingsDir, plugin), { recursive: true });
    writeFileSync(join(settingsDir, plugin, file), JSON.stringify(settings));
  };
  write("@jupyterlab/apputils-extension", "notification.jupyterlab-settings", { fetchNews: "false", checkForUpdates: false });
  // Cells out of view stay in the page (the default leaves them out of the layout), so every output can be asserted.
  write("@jupyterlab/notebook-extension", "tracker.jupyterlab-settings", { windowingMode: "none" });
}

async function waitForServer(url, server, log) {
  const started = Date.now();
  while (Date.now() - started < LAB_TIMEOUT) {
    if (server.exitCode !== null) throw new Error(`jupyter lab exited (${server.exitCode}):\n${log()}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`jupyter lab did not answer ${url} within ${LAB_TIMEOUT} ms:\n${log()}`);
}

/** The notebook as saved: the outputs of its code cells that carry a card, as the cards' JSON. */
function savedCards(path) {
  const notebook = JSON.parse(readFileSync(path, "utf8"));
  return notebook.cells
    .filter((cell) => cell.cell_type === "code")
    .flatMap((cell) => cell.outputs)
    .filter((output) => output.data && CARD_MIME_TYPE in output.data)
    .map((output) => output.data[CARD_MIME_TYPE]);
}

describe("the cards in JupyterLab", () => {
  let directory;
  let server;
  let output = "";
  let browser;
  let page;
  let cards;
  const errors = [];

  before(async () => {
    directory = mkdtempSync(join(tmpdir(), "topos-jupyterlab-"));
    const notebooks = join(directory, "notebooks");
    mkdirSync(notebooks);
    copyFileSync(NOTEBOOK, join(notebooks, "cards.ipynb"));
    const settings = join(directory, "settings");
    writeSettings(settings);
    const token = randomBytes(16).toString("hex");
    const port = await freePort();
    server = spawn(
      join(ROOT, ".venv/bin/jupyter"),
      [
        "lab",
        "--no-browser",
        `--port=${port}`,
        "--ip=127.0.0.1",
        // CI's containers run everything as root.
        "--allow-root",
        `--IdentityProvider.token=${token}`,
        // Nothing asks PyPI for extensions.
        "--LabApp.extension_manager=readonly",
        `--ServerApp.root_dir=${notebooks}`,
        `--LabApp.user_settings_dir=${settings}`,
        `--LabApp.workspaces_dir=${join(directory, "workspaces")}`,
      ],
      // Its own Jupyter runtime and config folders: nothing of the machine's or of another run's.
      {
        cwd: directory,
        env: { ...process.env, JUPYTER_CONFIG_DIR: join(directory, "config"), JUPYTER_RUNTIME_DIR: join(directory, "runtime") },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    server.stdout.on("data", (chunk) => (output += chunk));
    server.stderr.on("data", (chunk) => (output += chunk));
    const base = `http://127.0.0.1:${port}/`;
    await waitForServer(`${base}api/status?token=${token}`, server, () => output);

    browser = await openBrowser({ baseUrl: base });
    page = await browser.context.newPage();
    page.on("pageerror", (error) => errors.push(String(error)));
    await page.goto(`${base}lab/tree/cards.ipynb?token=${token}`);
    await page.waitForSelector(".jp-Notebook .jp-Cell", { timeout: LAB_TIMEOUT });
    // The kernel named in the notebook's metadata starts by itself; the status bar says when it is ready.
    await page.waitForSelector('.jp-StatusBar-Widget :text("Python 3 (ipykernel) | Idle")', { timeout: LAB_TIMEOUT });
    await page.click('.lm-MenuBar-item:has-text("Run")');
    await page.click('.lm-Menu-item:not(.lm-mod-disabled):has-text("Run All Cells")');
    // Every code cell has run when every input prompt shows its execution count; an error stops the run.
    await page.waitForFunction(
      (stderr) => {
        const prompts = [...document.querySelectorAll(".jp-CodeCell .jp-InputPrompt")];
        const ran = prompts.length > 0 && prompts.every((prompt) => /\[\d+\]/.test(prompt.textContent));
        return ran || document.querySelector(stderr) !== null;
      },
      STDERR,
      { timeout: LAB_TIMEOUT },
    );
    await page.keyboard.press("ControlOrMeta+S");
    const saved = join(notebooks, "cards.ipynb");
    // JupyterLab writes the file in place: a read that catches it half-written (no JSON yet) is not the save.
    const cardsSoFar = () => {
      try {
        return savedCards(saved);
      } catch (error) {
        if (error instanceof SyntaxError) return [];
        throw error;
      }
    };
    const started = Date.now();
    while (Date.now() - started < LAB_TIMEOUT && !(cards = cardsSoFar()).length) await new Promise((resolve) => setTimeout(resolve, 250));
  });

  after(async () => {
    await browser?.close();
    if (server && server.exitCode === null) {
      const exited = new Promise((resolve) => server.once("exit", resolve));
      server.kill("SIGTERM");
      await exited;
    }
    if (directory) rmSync(directory, { recursive: true, force: true });
  });

  test("ran the notebook without errors, and every card output is drawn by the extension", async () => {
    // An error's traceback, and any warning, is an output on stderr.
    assert.deepEqual(await page.$$eval(STDERR, (elements) => elements.map((element) => element.textContent)), []);
    assert.ok(cards.length > 0, `the saved notebook has no card outputs; jupyter lab said:\n${output}`);
    // One renderer's widget a card output, and none of the card's other faces (text/html, image/svg+xml) drawn for it.
    const drawn = await page.$$eval(".jp-OutputArea-output.jp-ToposCard", (elements) => elements.map((element) => element.dataset.mimeType));
    assert.deepEqual(drawn, cards.map(() => CARD_MIME_TYPE));
    assert.equal(await page.$$eval(".jp-OutputArea-output pre[class^='topos-']", (elements) => elements.length), 0);
    assert.deepEqual(errors, []);
  });

  test("the graph card: one element a node, each with its label as text", async () => {
    const graph = cards.find((card) => card.kind === "graph").graph;
    const labels = graph.nodes.map((node) => `${node.index} ${node.opcode} ${node.shape}`);
    await page.waitForSelector(".jp-ToposCard .card-graph svg", { timeout: LAB_TIMEOUT });
    const drawn = await page.$eval(".jp-ToposCard .card-graph svg", (svg) => ({
      nodes: [...svg.querySelectorAll("g.node")].map((group) => group.textContent),
      edges: svg.querySelectorAll(".edges path").length,
    }));
    assert.deepEqual(drawn.nodes, labels);
    assert.ok(drawn.edges > 0 && drawn.edges <= graph.edges.length);
  });

  test("the plot cards: drawn by uPlot, with every point", async () => {
    const plots = cards.filter((card) => card.kind === "plot");
    assert.ok(plots.length > 0);
    const drawn = await page.$$eval(".jp-ToposCard .card-plot", (figures) =>
      figures.map((figure) => ({
        points: Number(figure.dataset.points),
        canvas: Boolean(figure.querySelector(".uplot canvas")),
        title: figure.querySelector(".u-title")?.textContent ?? "",
        legend: [...figure.querySelectorAll(".u-legend .u-series .u-label")].map((label) => label.textContent),
      })),
    );
    assert.deepEqual(
      drawn,
      plots.map((plot) => ({
        points: Math.max(...plot.layers.map((layer) => layer.x.length)),
        canvas: true,
        title: plot.title,
        legend: [plot.x_label, ...plot.layers.map((layer) => layer.label)],
      })),
    );
  });

  test("the image card: drawn on a canvas, the ramp's pixel v gray 17 v", async () => {
    const image = cards.find((card) => card.kind === "image");
    assert.ok(image, "no image card in the notebook");
    await page.waitForSelector(".jp-ToposCard .card-image canvas", { timeout: LAB_TIMEOUT });
    const pixels = await page.$eval(".jp-ToposCard .card-image canvas", (canvas) => {
      const { data } = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height);
      return Array.from({ length: canvas.width * canvas.height }, (_, i) => [data[4 * i], data[4 * i + 1], data[4 * i + 2]]);
    });
    assert.deepEqual(pixels, Array.from({ length: 16 }, (_, v) => [17 * v, 17 * v, 17 * v]));
    assert.equal(await page.$eval(".jp-ToposCard .card-image", (figure) => figure.dataset.title), image.title);
  });

  test("a card with rows highlights the rows about the same nodes on a click", async () => {
    const index = cards.findIndex((card) => card.kind !== "graph" && card.rows?.some((row) => row.nodes.length));
    assert.ok(index >= 0, "no text card with rows in the notebook");
    const card = cards[index];
    const selector = `.jp-OutputArea-output.jp-ToposCard >> nth=${index}`;
    const rows = page.locator(selector).locator(".line");
    assert.deepEqual(await rows.allTextContents(), card.rows.map((row) => row.text));
    const clicked = card.rows.findIndex((row) => row.nodes.length);
    await rows.nth(clicked).click();
    const nodes = new Set(card.rows[clicked].nodes);
    const expected = card.rows.map((row) => row.nodes.some((node) => nodes.has(node)));
    const linked = await rows.evaluateAll((elements) => elements.map((element) => element.classList.contains("linked")));
    assert.deepEqual(linked, expected);
    assert.ok(expected.filter(Boolean).length >= 1);
  });
});
