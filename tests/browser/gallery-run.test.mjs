// The gallery trains in the page: each example that trains, run in Run mode (as __main__,
// in the run worker), prints what the docs show (by the docs' output-agreement rule: the
// docs are built natively, in float64, so numpy-in-Pyodide prints the same to the last
// printed digit or so) and draws its loss on one plot card with a point a step. The
// transformer says where it trained: headless Chromium's adapter is SwiftShader, a
// software fallback, so "auto" leaves the training to numpy, as the docs show it.
// The PCA and the Mandelbrot set, which do not train, run once: their cards and printed lines are the docs', in order.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import ts from "typescript";
import { useBrowser } from "./harness.mjs";

// The transformer's 300 float64 steps on numpy-in-Pyodide take a while on a busy machine.
const RUN_TIMEOUT = 300_000;

const source = readFileSync(new URL("../../web/docs-site/output-agreement.ts", import.meta.url), "utf8");
const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 } });
const agreement = await import(`data:text/javascript;base64,${Buffer.from(outputText).toString("base64")}`);

const gallery = JSON.parse(readFileSync(new URL("../../docs/generated/gallery.json", import.meta.url), "utf8"));
const built = new Map(
  gallery.parts.filter((part) => part.example).map((part) => [part.example.replace("examples/", ""), part]),
);

// Each example that trains, and the points its loss curve ends with (one a step).
const TRAINING = [
  ["02_linear_fit.py", 100],
  ["04_mlp.py", 301],
  ["05_softmax_regression.py", 201],
  ["06_char_transformer.py", 300],
  // The PINN draws two cards: the learned and exact solution (100 points each), then its loss.
  ["08_pinn.py", 3001, [100, 3001]],
  // The Gaussian process draws the fit (the samples, then its posterior mean and the ridge cubic on
  // 61 points once trained), then its loss.
  ["09_gaussian_process.py", 150, [61, 150]],
  // The spectral filter draws its 65 gains (learned once trained), then its loss.
  ["10_spectral_filter.py", 200, [65, 200]],
  // The ranking loss, the mixture density network and the einsum attention draw their loss alone.
  ["12_ranking_loss.py", 200],
  ["13_mixture_density.py", 400],
  ["14_einsum_attention.py", 150],
  // The blur learns its kernel in 200 Adam steps; k-means draws its inertia, a point a Lloyd step;
  // the character model draws its loss, then prints its samples.
  ["15_image_blur.py", 200],
  ["16_kmeans.py", 10],
  ["17_char_sampler.py", 300],
  // The character RNN (one scan) draws its loss, then prints what it writes; the heat equation (one
  // fori_loop) draws the ring's field (observed and simulated, a point a cell), then its loss.
  ["18_char_rnn.py", 150],
  ["19_heat_equation.py", 80, [64, 80]],
  // The spiral draws its loss and redraws its decision boundary (a heatmap card: image-cards.test.mjs reads it).
  ["21_spiral.py", 301],
];

describe("the gallery in Run mode", () => {
  let browser;
  let page;
  let pageErrors;

  useBrowser({ playground: "" }, (opened) => ({ browser, page, errors: pageErrors } = opened));

  for (const [file, steps, points = [steps]] of TRAINING) {
    test(`${file} trains in the page, plots its loss and prints what the docs show`, async () => {
      const part = built.get(file);
      await page.evaluate((code) => window.playground.setCode(code), part.code);
      await page.click("#run");
      await page.waitForFunction(() => ["finished", "failed"].includes(document.body.dataset.run), null, { timeout: RUN_TIMEOUT });
      const printed = await page.$eval("[data-run-output]", (element) => element.textContent);
      assert.equal(await page.evaluate(() => document.body.dataset.run), "finished", printed.slice(-2000));
      const cards = await page.$$eval("[data-run-output] .card-plot", (found) => found.map((card) => Number(card.dataset.points)));
      assert.deepEqual(cards, points, "its plot cards, the loss with a point a step");
      assert.match(await page.textContent("#run-progress"), new RegExp(`step ${steps} of ${steps}`));
      // The printed lines, card text aside: the docs' output is the card's text, then the printed lines.
      const docsPrinted = part.output.filter((item) => item.kind === "print").map((item) => item.text).join("");
      const pagePrinted = printed.slice(printed.indexOf(docsPrinted.split("\n")[0]));
      const problem = agreement.firstDisagreement(docsPrinted.trimEnd(), pagePrinted.trimEnd());
      assert.equal(problem, null, `${file}: ${problem}`);
      // The transformer says where it trained: SwiftShader is a software adapter, left to numpy.
      if (file === "06_char_transformer.py") assert.match(printed, /^training on numpy, float64$/m);
    });
  }

  // The PCA has no training loop: it runs once, draws the spectrum the docs show (30 variances,
  // largest first, a log y axis) and prints the explained share, the eigh/svd agreement and where
  // three digits sit on the first two components. The page's output, card by card and in order
  // (the print blocks included, and an error's card should the script raise), is the docs' output.
  // The Mandelbrot set (one while_loop) runs once too: a heatmap and a printed line a view, its trip count
  // the loop's own (60 steps over the set, fewer beside it), the page's as the docs'.
  for (const file of ["11_digits_pca.py", "20_mandelbrot.py"]) test(`${file} runs in the page, draws the cards and prints what the docs show`, async () => {
    const part = built.get(file);
    await page.evaluate((code) => window.playground.setCode(code), part.code);
    await page.click("#run");
    await page.waitForFunction(() => ["finished", "failed"].includes(document.body.dataset.run), null, { timeout: RUN_TIMEOUT });
    const printed = await page.$eval("[data-run-output]", (element) => element.textContent);
    assert.equal(await page.evaluate(() => document.body.dataset.run), "finished", printed.slice(-2000));
    // What the docs build recorded: each item's kind, and a plot's points as the page counts them (its longest line).
    const docsCards = part.output.map((item) => ({
      kind: item.kind,
      points: item.kind === "plot" ? Math.max(...item.layers.map((layer) => layer.x.length)) : null,
      title: item.kind === "plot" ? item.title : null,
    }));
    const pageCards = await page.$$eval("[data-run-output] > .card", (found) =>
      found.map((card) => {
        const kind = [...card.classList].find((name) => name.startsWith("card-")).slice("card-".length);
        return {
          kind,
          points: kind === "plot" ? Number(card.dataset.points) : null,
          title: kind === "plot" ? (card.querySelector(".u-title")?.textContent ?? null) : null,
        };
      }),
    );
    assert.deepEqual(pageCards, docsCards, `${file}: the page's cards (kind, points, title) are not the docs'`);
    const docsPrinted = part.output.filter((item) => item.kind === "print").map((item) => item.text).join("");
    const pagePrinted = await page.$$eval("[data-run-output] > .card-print", (found) => found.map((block) => block.textContent).join(""));
    const problem = agreement.firstDisagreement(docsPrinted.trimEnd(), pagePrinted.trimEnd());
    assert.equal(problem, null, `${file}: ${problem}`);
  });

  test("nothing left the origin and no script error happened", () => {
    assert.deepEqual(browser.foreign, []);
    assert.deepEqual(pageErrors, []);
  });
});
