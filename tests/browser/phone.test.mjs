// The site on a phone (390 x 844, Playwright's mobile emulation with touch), a tablet (768 x 1024)
// and a laptop (1280 x 800). On a phone the playground stacks into one column (editor, then the tabs
// and a reading, then the output: web/src/style.css, "Phones and narrow windows"), the page is no
// wider than the screen and nothing shown runs off its edges; an edit updates the readings and the
// output, Run runs, and a swipe scrolls the editor and the panes. The embed and every docs page hold
// at that width too. A tablet and a laptop keep the editor and the readings side by side.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { BASE_URL, paneText, pasteCode, useBrowser, waitForPane } from "./harness.mjs";

const PHONE = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 3 };
const TABLET = { viewport: { width: 768, height: 1024 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };
const LAPTOP = { viewport: { width: 1280, height: 800 } };
const DOCS_PAGES = ["index", "getting-started", "readings", "playground", "kernels", "api"];

// A script long enough to scroll everywhere: 46 lines in the editor, 81 rows in the spec, 60 printed lines.
const LONG_SCRIPT = `from topos import Tape

tape = Tape()
x = tape.input(1.0)
${Array.from({ length: 40 }, (_, i) => `x = x * ${(1 + i / 100).toFixed(2)}`).join("\n")}
print(tape.describe())
for line in range(60):
    print("printed line", line)
`;

/**
 * What of the page is outside [0, the screen's width]: the page's own width (scrollWidth), and each
 * element whose visible part (its box cut by every ancestor that clips or scrolls it) reaches beyond
 * either edge. An element wholly scrolled out of view inside its own pane is not shown, so not counted;
 * a 1 px element is the visually hidden kind (screen-reader text).
 */
function offScreen(page) {
  return page.evaluate(() => {
    const width = window.innerWidth;
    const outside = [];
    for (const element of document.querySelectorAll("body *")) {
      const style = getComputedStyle(element);
      if (style.visibility === "hidden" || style.display === "contents") continue;
      const box = element.getBoundingClientRect();
      if (box.width < 2 || box.height < 2) continue;
      let { left, right, top, bottom } = box;
      for (let above = element.parentElement; above && above !== document.documentElement; above = above.parentElement) {
        const clip = getComputedStyle(above);
        const edges = above.getBoundingClientRect();
        if (clip.overflowX !== "visible") [left, right] = [Math.max(left, edges.left), Math.min(right, edges.right)];
        if (clip.overflowY !== "visible") [top, bottom] = [Math.max(top, edges.top), Math.min(bottom, edges.bottom)];
        if (clip.position === "fixed") break;
      }
      if (right - left < 1 || bottom - top < 1) continue;
      if (left < -0.5 || right > width + 0.5) {
        const name = `${element.tagName.toLowerCase()}${element.id ? `#${element.id}` : ""}.${element.getAttribute("class") ?? ""}`;
        outside.push(`${name} ${Math.round(left)}..${Math.round(right)}`);
      }
    }
    return { width, scrollWidth: document.documentElement.scrollWidth, outside };
  });
}

async function assertFits(page, what) {
  const { width, scrollWidth, outside } = await offScreen(page);
  assert.equal(width, page.viewportSize().width, `${what}: the page is laid out at the screen's width`);
  assert.ok(scrollWidth <= width, `${what}: the page is ${scrollWidth} px wide on a ${width} px screen`);
  assert.deepEqual(outside, [], `${what}: shown outside the screen`);
}

const box = (page, selector) => page.locator(selector).first().boundingBox();

/** A finger's swipe up the middle of `selector`'s box, through the DevTools protocol's touch events. */
async function swipeUp(page, selector) {
  const { x, y, width, height } = await box(page, selector);
  const cdp = await page.context().newCDPSession(page);
  const at = (step) => [{ x: x + width / 2, y: y + height * (0.8 - (0.6 * step) / 12) }];
  await cdp.send("Input.dispatchTouchEvent", { type: "touchStart", touchPoints: at(0) });
  for (let step = 1; step <= 12; step++) await cdp.send("Input.dispatchTouchEvent", { type: "touchMove", touchPoints: at(step) });
  await cdp.send("Input.dispatchTouchEvent", { type: "touchEnd", touchPoints: [] });
  await cdp.detach();
  await page.waitForTimeout(300);
}

describe("the playground on a phone", () => {
  let browser;
  let page;
  let errors;

  useBrowser({ device: PHONE, playground: "" }, (opened) => ({ browser, page, errors } = opened));
  before(() => page.waitForSelector('#editor[data-editor="monaco"] .monaco-editor'));
  after(() => {
    assert.deepEqual(browser.foreign, []);
    assert.deepEqual(errors, []);
  });

  test("fits the screen: one column of editor, tabs and reading, output; the toolbar and the footer fit", async () => {
    await assertFits(page, "the playground");
    const editor = await box(page, "#editor");
    const tabs = await box(page, "#tabs");
    const panes = await box(page, "#panes");
    const output = await box(page, ".output-head");
    const footer = await box(page, "footer");
    assert.ok(editor.y + editor.height <= tabs.y + 1, "the tabs come under the editor");
    assert.ok(panes.y + panes.height <= output.y + 1, "the output comes under the reading");
    for (const part of [editor, panes]) assert.ok(part.width >= 380, `each part takes the screen's width: ${part.width} px`);
    assert.ok(editor.height >= 200 && panes.height >= 150, `room for code and a reading: ${editor.height}, ${panes.height} px`);
    assert.ok(footer.height <= 30, `the footer is one line, not ${footer.height} px`);
    assert.ok(footer.y + footer.height <= 844 + 0.5, "the footer ends at the screen's bottom: the page does not scroll");
    for (const tab of await page.$$("#tabs button")) {
      const { x, width } = await tab.boundingBox();
      assert.ok(x >= 0 && x + width <= 390, `every tab is in view: ${await tab.textContent()} at ${x}..${x + width}`);
    }
    for (const control of ["#gallery", "#backend", "#run", "#stop", "#share", "#status"]) {
      const { x, width } = await box(page, control);
      assert.ok(x >= 0 && x + width <= 390, `${control} is in the toolbar's width: ${x}..${x + width}`);
    }
  });

  test("an edit typed in the editor updates the output and the readings", async () => {
    await page.tap("#editor .view-lines");
    await page.keyboard.press("ControlOrMeta+End");
    await page.keyboard.type('\nprint("typed on a phone")\n');
    await waitForPane(page, "output", (text) => text.includes("typed on a phone"));
    await pasteCode(page, LONG_SCRIPT);
    await waitForPane(page, "spec", (text) => text.includes("tape: 81 nodes"));
    await waitForPane(page, "output", (text) => text.includes("printed line 59"));
    await assertFits(page, "the playground with a long script");
  });

  test("Run runs the script and shows its output", async () => {
    const editor = (await box(page, "#editor")).height;
    const output = (await box(page, "#output")).height;
    await page.tap("#run");
    await page.waitForFunction(() => document.body.dataset.run === "finished", null, { timeout: 60_000 });
    const printed = await page.$eval("[data-run-output]", (element) => element.textContent);
    assert.match(printed, /printed line 59/);
    await assertFits(page, "the playground after a run");
    // The run's output takes room from the editor while it is shown, and gives it back after.
    assert.ok((await box(page, "#run-output")).height > output + 40, "the run's output is given more room");
    await page.tap("#show-live-output");
    await page.waitForFunction((height) => {
      const shown = (selector) => document.querySelector(selector).getBoundingClientRect().height;
      return Math.abs(shown("#editor") - height) < 1 && Math.abs(shown("#editor .monaco-editor") - height) < 1;
    }, editor);
  });

  test("a swipe scrolls the editor, the reading and the output", async () => {
    // Monaco scrolls itself (its own touch gestures): its scroll position is the lines' offset.
    const editorTop = () => page.$eval("#editor .lines-content", (element) => element.style.top);
    await page.tap("#editor .view-lines");
    await page.keyboard.press("ControlOrMeta+Home");
    await page.waitForFunction(() => document.querySelector("#editor .lines-content").style.top === "0px");
    const before = await editorTop();
    await swipeUp(page, "#editor");
    assert.notEqual(await editorTop(), before, "the editor scrolled");

    // The spec's tab panel and the output scroll natively.
    for (const selector of ["#panel-spec", "#output"]) {
      const scrolled = () => page.$eval(selector, (element) => element.scrollTop);
      // (A line picked in the editor may have scrolled its row into view: start from the top.)
      await page.$eval(selector, (element) => element.scrollTo(0, 0));
      await swipeUp(page, selector);
      assert.ok((await scrolled()) > 0, `${selector} scrolled`);
    }
    assert.equal(await page.evaluate(() => document.scrollingElement.scrollTop), 0, "the page itself did not scroll");
    assert.match(await paneText(page, "spec"), /tape: 81 nodes/);
  });

  test("after a Run of the digits CNN, its plot is seen whole with its axis label, and the status line whole", async () => {
    await page.selectOption("#gallery", "07_digits_cnn.py");
    await waitForPane(page, "spec", (text) => text.includes("Convolution"), 60_000);
    await page.tap("#run");
    await page.waitForFunction(() => document.body.dataset.run === "finished", null, { timeout: 180_000 });
    const plot = "#run-output .card-plot";
    // The output pane has room for the whole plot: once scrolled to it, all of it is in the pane's visible box.
    await page.$eval(plot, (card) => card.scrollIntoView({ block: "nearest" }));
    const seen = await page.evaluate((plot) => {
      const rect = (element) => element.getBoundingClientRect().toJSON();
      const card = document.querySelector(plot);
      const pane = document.querySelector("#run-output");
      const label = [...card.querySelectorAll("*")].find((element) => element.children.length === 0 && element.textContent.trim() === "cross-entropy / accuracy");
      const status = document.querySelector("#status");
      return {
        card: rect(card),
        pane: rect(pane),
        label: label && { ...rect(label), cut: label.scrollWidth > label.clientWidth || label.scrollHeight > label.clientHeight },
        status: { text: status.textContent, cut: status.scrollWidth > status.clientWidth || status.scrollHeight > status.clientHeight, ...rect(status) },
      };
    }, plot);
    const within = (inner, outer) => inner.left >= outer.left - 0.5 && inner.right <= outer.right + 0.5 && inner.top >= outer.top - 0.5 && inner.bottom <= outer.bottom + 0.5;
    assert.ok(within(seen.card, seen.pane), `the plot (${seen.card.height} px tall) is not whole in the output pane (${seen.pane.height} px)`);
    // The y axis's label is text on the page, whole and inside the card (uPlot's rotated canvas label was cut to "entropy / accurac").
    assert.ok(seen.label, "the y axis's label is not shown as text");
    assert.ok(!seen.label.cut && within(seen.label, seen.card), `the y axis's label is cut: ${JSON.stringify(seen.label)}`);
    assert.match(seen.status.text, /\S/);
    assert.ok(!seen.status.cut && seen.status.right <= 390 + 0.5, `the status line is cut: ${JSON.stringify(seen.status)}`);
    await assertFits(page, "the playground after the CNN's run");
    if (process.env.PHONE_SCREENSHOT) await page.screenshot({ path: process.env.PHONE_SCREENSHOT });
    await page.tap("#show-live-output");
  });

  test("a pinned plot hides the printed lines scrolling under it across the pane's whole width, scrolled sideways too", async () => {
    // Lines wider than the pane, under a live plot: the pane scrolls them sideways, and the plot card
    // is only as wide as the pane's content box.
    const script = `from topos import show
from topos.show import Line, Plot

curve = show.plot(Plot().title("loss"))
if __name__ == "__main__":
    losses = []
    for step in range(80):
        losses.append(1.0 / (step + 1))
        curve.update(Plot().layer(Line.y(losses).label("loss")).title("loss"))
        print(f"step {step:3d} " + "#" * 120)
`;
    await page.evaluate((code) => window.playground.setCode(code), script);
    await page.tap("#run");
    await page.waitForFunction(() => document.body.dataset.run === "finished", null, { timeout: 60_000 });
    for (const side of ["start", "end"]) {
      // The text scrolled under the card (the end of the output), and to either end sideways.
      await page.$eval("#run-output", (pane, side) => pane.scrollTo(side === "end" ? pane.scrollWidth : 0, pane.scrollHeight), side);
      await page.waitForTimeout(200);
      const { pane, card } = await page.evaluate(() => ({
        pane: document.querySelector("#run-output").getBoundingClientRect().toJSON(),
        card: document.querySelector("#run-output .card-plot.pinned").getBoundingClientRect().toJSON(),
      }));
      // The strips of the pane beside the card (its top and bottom 2 px aside: the line under it).
      const strips = [
        { x: pane.left, width: Math.max(0, card.left) - pane.left },
        { x: Math.max(card.right, pane.left), width: pane.right - Math.max(card.right, pane.left) },
      ].filter((strip) => strip.width >= 1);
      assert.ok(strips.length > 0, `the card leaves no strip of the pane beside it: ${JSON.stringify({ pane, card })}`);
      for (const strip of strips) {
        const clip = { x: strip.x, y: card.top + 2, width: strip.width, height: card.height - 4 };
        const png = (await page.screenshot({ clip })).toString("base64");
        const colours = await page.evaluate(async (png) => {
          const bitmap = await createImageBitmap(await (await fetch(`data:image/png;base64,${png}`)).blob());
          const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
          const context = canvas.getContext("2d");
          context.drawImage(bitmap, 0, 0);
          const data = context.getImageData(0, 0, bitmap.width, bitmap.height).data;
          const seen = new Set();
          for (let i = 0; i < data.length; i += 4) seen.add(`${data[i]},${data[i + 1]},${data[i + 2]}`);
          return [...seen];
        }, png);
        assert.equal(colours.length, 1, `scrolled to the ${side}, text shows beside the pinned plot at x ${strip.x}..${strip.x + strip.width}: colours ${colours.slice(0, 5)}`);
      }
    }
    await page.tap("#show-live-output");
  });
});

describe("the embed and the docs on a phone", () => {
  let browser;

  useBrowser({ device: PHONE }, (opened) => ({ browser } = opened));
  after(() => assert.deepEqual(browser.foreign, []));

  test("the embed fits the screen, its tabs included", async () => {
    const page = await browser.context.newPage();
    await page.goto(new URL("embed.html?example=01_scalar_chain", BASE_URL).href);
    await page.waitForSelector('body[data-status="ok"]', { timeout: 120_000 });
    await assertFits(page, "the embed");
    for (const tab of await page.$$("#embed-tabs button")) {
      const { x, width } = await tab.boundingBox();
      assert.ok(x >= 0 && x + width <= 390, `every tab is in view: ${await tab.textContent()}`);
    }
    await page.close();
  });

  test("every docs page fits the screen, its tables and code included", async () => {
    const page = await browser.context.newPage();
    // The pages' embeds are kept out: this is the page's own layout (the embed is tested above).
    await page.route("**/embed.html?*", (route) => route.abort("blockedbyclient"));
    for (const name of DOCS_PAGES) {
      await page.goto(new URL(`docs/${name}.html`, BASE_URL).href);
      await assertFits(page, `docs/${name}.html`);
      const list = await box(page, ".docs-nav");
      assert.ok(list && list.height > 0, `docs/${name}.html lists the pages`);
    }
    await page.close();
  });
});

for (const [name, device] of [
  ["a tablet", TABLET],
  ["a laptop", LAPTOP],
]) {
  describe(`the playground on ${name}`, () => {
    let opened;

    useBrowser({ device, playground: "" }, (value) => (opened = value));

    test(`on ${name}, the editor and the readings stand side by side, and nothing runs off the screen`, async () => {
      const { browser, page, errors } = opened;
      await page.waitForSelector('#editor[data-editor="monaco"] .monaco-editor');
      await assertFits(page, `the playground on ${name}`);
      const editor = await box(page, "#editor");
      const panes = await box(page, "#panes");
      assert.ok(editor.x + editor.width <= panes.x + 1 && Math.abs(editor.y - panes.y) < 40, "two columns");
      const docs = await browser.context.newPage();
      await docs.route("**/embed.html?*", (route) => route.abort("blockedbyclient"));
      await docs.goto(new URL("docs/readings.html", BASE_URL).href);
      await assertFits(docs, `docs/readings.html on ${name}`);
      assert.deepEqual(errors, []);
    });
  });
}
