// The gallery's digits CNN trains in the page: picked from the gallery, run in Run mode (as
// __main__, in the run worker), its one plot card grows while it trains (the training loss a
// point a step, the held-out accuracy beside it), and it prints a held-out accuracy of at
// least 0.95. The digits come from the topos wheel the page installed (topos.datasets), so
// nothing is fetched for them: the run makes no request outside the site. Headless Chromium's
// adapter is SwiftShader, a software fallback, so "auto" trains on numpy, float64, and the
// printed lines are the docs' (by the docs' output-agreement rule). Once trained it shows two image
// cards: its first-layer kernels and the held-out digits it reads wrong, captioned.
//
// Run it alone: bash tests/run-browser.sh tests/browser/digits-cnn.test.mjs

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import ts from "typescript";
import { useBrowser } from "./harness.mjs";

// 200 float64 steps of two convolution blocks on numpy-in-Pyodide; a busy machine is slower.
const RUN_TIMEOUT = 300_000;
const FILE = "07_digits_cnn.py";
const STEPS = 200;

const source = readFileSync(new URL("../../web/docs-site/output-agreement.ts", import.meta.url), "utf8");
const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 } });
const agreement = await import(`data:text/javascript;base64,${Buffer.from(outputText).toString("base64")}`);

const gallery = JSON.parse(readFileSync(new URL("../../docs/generated/gallery.json", import.meta.url), "utf8"));
const built = gallery.parts.find((part) => part.example === `examples/${FILE}`);

const points = (page) =>
  page.$eval("[data-run-output] .card-plot", (card) => Number(card.dataset.points)).catch(() => 0);
const runState = (page) => page.evaluate(() => document.body.dataset.run ?? null);

describe("the digits CNN in Run mode", () => {
  let browser;
  let page;
  let pageErrors;

  useBrowser({ playground: "" }, (opened) => ({ browser, page, errors: pageErrors } = opened));

  test("the gallery has it and the docs show it", () => {
    assert.ok(built, `docs/generated/gallery.json has no part for examples/${FILE}`);
  });

  test(`${FILE} trains in the page: its plot grows while it runs and it reads >= 95% of the held-out digits`, async () => {
    await page.selectOption("#gallery", FILE);
    await page.click("#run");
    // The plot card grows while the run goes: seen with a few points, then with more, still running.
    await page.waitForFunction(() => Number(document.querySelector("[data-run-output] .card-plot")?.dataset.points) > 2, null, {
      timeout: RUN_TIMEOUT,
    });
    const early = await points(page);
    assert.equal(await runState(page), "running", "the run ended before its plot was seen growing");
    await page.waitForFunction(
      (seen) => Number(document.querySelector("[data-run-output] .card-plot")?.dataset.points) > seen,
      early,
      { timeout: RUN_TIMEOUT },
    );
    assert.ok(early < STEPS);
    await page.waitForFunction(() => ["finished", "failed"].includes(document.body.dataset.run), null, { timeout: RUN_TIMEOUT });
    const printed = await page.$eval("[data-run-output]", (element) => element.textContent);
    assert.equal(await runState(page), "finished", printed.slice(-2000));

    // One card, redrawn: the loss has a point a step; the held-out accuracy is its second line.
    const cards = await page.$$eval("[data-run-output] .card-plot", (found) => found.map((card) => Number(card.dataset.points)));
    assert.deepEqual(cards, [STEPS], "one plot card, with a point a step");
    assert.match(await page.textContent("#run-progress"), new RegExp(`step ${STEPS} of ${STEPS}`));
    const cardText = await page.textContent("[data-run-output] .card-plot");
    assert.match(cardText, /held-out accuracy/);

    // Where it trained: SwiftShader is a software adapter, left to numpy.
    assert.match(printed, /^training on numpy, float64$/m);
    const found = printed.match(/^held out: (\d+) of 297 images read right, accuracy ([0-9.]+), cross-entropy ([0-9.]+)$/m);
    assert.ok(found, printed.slice(-2000));
    assert.ok(Number(found[2]) >= 0.95, `held-out accuracy ${found[2]}`);
    assert.equal(Number(found[1]), Math.round(Number(found[2]) * 297));

    // The printed lines are the docs' (the docs are built natively, in float64): the print blocks alone,
    // the image cards after them aside.
    const docsPrinted = built.output.filter((item) => item.kind === "print").map((item) => item.text).join("");
    const blocks = await page.$$eval("[data-run-output] > .card-print", (found) => found.map((block) => block.textContent).join(""));
    const pagePrinted = blocks.slice(blocks.indexOf(docsPrinted.split("\n")[0]));
    const problem = agreement.firstDisagreement(docsPrinted.trimEnd(), pagePrinted.trimEnd());
    assert.equal(problem, null, `${FILE}: ${problem}`);

    // Once trained, two image cards: the 16 first-layer kernels (3x3, signed: a diverging scale), then the
    // misread held-out digits (8x8) captioned with guess and label, as many as it read wrong, the docs' captions.
    const images = await page.$$eval("[data-run-output] .card-image", (found) =>
      found.map((card) => ({
        title: card.dataset.title,
        sizes: [...card.querySelectorAll("canvas")].map((canvas) => `${canvas.width}x${canvas.height}`),
        captions: [...card.querySelectorAll(".picture figcaption")].map((caption) => caption.textContent),
        scale: card.querySelector(".picture-scale").textContent,
      })),
    );
    assert.equal(images.length, 2, JSON.stringify(images));
    assert.equal(images[0].title, "the first convolution's 3x3 kernels");
    assert.deepEqual(images[0].sizes, Array(16).fill("3x3"));
    assert.match(images[0].scale, /^diverging: blue -[0-9.]+, white 0, red [0-9.]+$/);
    const misread = 297 - Number(found[1]);
    assert.deepEqual(images[1].sizes, Array(misread).fill("8x8"));
    const docsCaptions = built.output.filter((item) => item.kind === "image")[1].images.map((image) => image.caption);
    assert.deepEqual(images[1].captions, docsCaptions);
    for (const caption of images[1].captions) assert.match(caption, /^read \d, is \d$/);
  });

  test("nothing left the origin and no script error happened", () => {
    assert.deepEqual(browser.foreign, []);
    assert.deepEqual(pageErrors, []);
  });
});
