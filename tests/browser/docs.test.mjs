// The docs as the built site shows them (dist/docs/<page>.html, rendered from
// docs/generated/<page>.json): every page shows every block's code and exactly the
// output in the JSON. Then the blocks go live: on a page, each block's embed runs
// its code in the browser's Python and prints exactly what the page shows; an edit
// shows the edit's output, and putting the code back shows the built output again.
// That a fresh run of every block still prints the JSON's output (the builder's --check)
// is tests/python/test_docs.py's check, on this CPU and on another's, in the same `npm test`:
// this suite ran the same check a third time, the longest process of its run.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { before, describe, test } from "node:test";
import { BASE_URL, useBrowser } from "./harness.mjs";

const ROOT = new URL("../../", import.meta.url);
const GENERATED = new URL("docs/generated/", ROOT);
const PAGES = JSON.parse(readFileSync(new URL("pages.json", GENERATED), "utf8")).pages;
const pageJson = (entry) => JSON.parse(readFileSync(new URL(entry.file, GENERATED), "utf8"));
const docsUrl = (name) => new URL(`docs/${name}.html`, BASE_URL).href;

describe("the docs", () => {
  let browser;
  let page;
  const pageErrors = [];
  const requests = [];

  useBrowser({}, (opened) => ({ browser } = opened));
  before(async () => {
    browser.context.on("request", (request) => requests.push(request.url()));
    page = await browser.context.newPage();
    page.on("pageerror", (error) => pageErrors.push(String(error)));
  });

  test("every page shows each block's code and exactly the built output, as text", async () => {
    // The embeds are kept out here (their requests fail): this reads the page as built, before any run.
    await page.route("**/embed.html?*", (route) => route.abort("blockedbyclient"));
    let blocks = 0;
    let withoutEmbed = 0;
    let notebookLinks = 0;
    for (const entry of PAGES) {
      const built = pageJson(entry);
      await page.goto(docsUrl(entry.name));
      const shown = await page.evaluate(() => ({
        title: document.querySelector("main h1")?.textContent,
        live: [...document.querySelectorAll("figure.docs-live")].map((figure) => ({
          id: figure.dataset.block,
          code: figure.querySelector(".docs-code").textContent,
          output: figure.querySelector(".docs-output-text").textContent,
          outputHidden: figure.querySelector(".docs-output").hidden,
        })),
        static: [...document.querySelectorAll("pre.docs-static")].map((pre) => pre.textContent),
        pageLinks: [...document.querySelectorAll("main a[href]")].map((a) => a.getAttribute("href")).filter((href) => !/^[a-z]+:/.test(href)),
        // A link within the page names a heading of the page.
        missingAnchors: [...document.querySelectorAll("main a[href^='#']")]
          .map((a) => a.getAttribute("href").slice(1))
          .filter((id) => !document.getElementById(decodeURIComponent(id))),
        playground: document.querySelector("a.docs-playground").href,
        embeds: [...document.querySelectorAll("figure.docs-live[data-embed]")].map((figure) => new URL(figure.dataset.embed, location.href).href),
        withoutEmbed: [...document.querySelectorAll("figure.docs-live:not([data-embed])")].map((figure) => figure.dataset.block),
      }));
      // The playground and the embeds are the site's own, wherever it is served (here, under a sub-path).
      assert.equal(shown.playground, BASE_URL, `${entry.name}: the playground link`);
      for (const embed of shown.embeds) assert.ok(embed.startsWith(`${BASE_URL}embed.html?`), embed);
      const live = built.parts.filter((part) => part.kind === "code" && part.live);
      // A block marked nobrowser (it needs jax) has no embed; every other live block has one.
      const noBrowser = live.filter((part) => part.browser === false).map((part) => part.id);
      assert.deepEqual(shown.withoutEmbed, noBrowser, `${entry.name}: the blocks without an embed`);
      assert.equal(shown.embeds.length, live.length - noBrowser.length, `${entry.name}: the embeds`);
      assert.equal(shown.title, built.title, entry.name);
      assert.deepEqual(shown.live.map((block) => block.id), live.map((part) => part.id), `${entry.name}: the live blocks`);
      live.forEach((part, i) => {
        assert.equal(shown.live[i].code, part.code, `${part.id}: code`);
        assert.equal(shown.live[i].output, part.output_text, `${part.id}: output`);
        assert.equal(shown.live[i].outputHidden, part.output_text === "", `${part.id}: an output box only where something was printed`);
      });
      const fixed = built.parts.filter((part) => part.kind === "code" && !part.live).map((part) => part.code);
      assert.deepEqual(shown.static, fixed, `${entry.name}: the code shown as it is`);
      // Links between pages point at built pages; a link to a notebook (docs/notebooks.md) at the file the site serves.
      assert.deepEqual(shown.missingAnchors, [], `${entry.name}: links to headings the page does not have`);
      for (const href of shown.pageLinks) {
        if (href.startsWith("#")) continue; // checked above
        if (/^notebooks\/[\w-]+\.ipynb$/.test(href)) {
          const response = await fetch(new URL(href, docsUrl(entry.name)));
          assert.equal(response.status, 200, `${entry.name}: link ${href}`);
          const notebook = await response.json();
          assert.equal(notebook.nbformat, 4, `${entry.name}: ${href} is a notebook`);
          notebookLinks += 1;
          continue;
        }
        const target = /^\.\/([\w-]+)\.html(#[\w-]*)?$/.exec(href);
        assert.ok(target && PAGES.some((other) => other.name === target[1]), `${entry.name}: link ${href}`);
      }
      blocks += live.length;
      withoutEmbed += noBrowser.length;
    }
    assert.ok(blocks > 30, `only ${blocks} live blocks`);
    assert.ok(withoutEmbed > 0, "no nobrowser block was checked (docs/scaling.md has some)");
    assert.ok(notebookLinks > 0, "no link to a notebook was checked (docs/notebooks.md has one)");
    await page.unroute("**/embed.html?*");
  });

  /** Scroll each block into view and wait until its embed has run the code; returns the figures' states. */
  async function runEveryBlock(name) {
    await page.goto(docsUrl(name));
    const ids = await page.$$eval("figure.docs-live", (figures) => figures.map((figure) => figure.dataset.block));
    for (const id of ids) {
      const figure = page.locator(`figure[data-block="${id}"]`);
      await figure.scrollIntoViewIfNeeded();
      await page.waitForFunction((id) => ["true", "false"].includes(document.querySelector(`figure[data-block="${id}"]`).dataset.reproduced), id, {
        timeout: 150_000,
      });
    }
    return page.$$eval("figure.docs-live", (figures) => figures.map((f) => ({ id: f.dataset.block, reproduced: f.dataset.reproduced })));
  }

  test("each block's embed prints in the browser exactly the output the page shows", async () => {
    const before = requests.length;
    const states = await runEveryBlock("getting-started");
    assert.deepEqual(states.filter((state) => state.reproduced !== "true"), []);
    assert.equal(states.length, 8);
    // Eight embeds, one Python.
    assert.equal(requests.slice(before).filter((url) => url.endsWith("/pyodide/pyodide.asm.wasm")).length, 1);
    // A page whose first block registers a primitive: in one Python, both blocks still print what the page shows.
    const extending = await runEveryBlock("extending");
    assert.deepEqual(extending.map((state) => state.reproduced), ["true", "true"]);
  });

  test("an edit shows the edit's output, and putting the code back shows the built output", async () => {
    await page.goto(docsUrl("getting-started"));
    const id = "getting-started-1";
    const figure = `figure[data-block="${id}"]`;
    await page.waitForFunction((f) => document.querySelector(f).dataset.reproduced === "true", figure, { timeout: 150_000 });
    const built = pageJson(PAGES.find((entry) => entry.name === "getting-started")).parts.find((part) => part.id === id).output_text;
    const embed = page.frames().find((frame) => frame.url().includes(`id=${id}&`));
    // Focusing the code loads the full editor (Monaco); the edit is pasted at the end, as a user would.
    await embed.click("textarea");
    await embed.waitForSelector('#embed-code[data-editor="monaco"] .view-lines');
    await embed.click("#embed-code .view-lines");
    await page.keyboard.press("ControlOrMeta+End");
    await embed.evaluate((text) => {
      const data = new DataTransfer();
      data.setData("text/plain", text);
      document.activeElement.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
    }, '\nprint("<b>edited</b>", len(tape.nodes()))');
    const output = page.locator(`${figure} .docs-output`);
    await page.waitForFunction((f) => document.querySelector(`${f} .docs-output`).dataset.state === "edited", figure, { timeout: 30_000 });
    assert.equal(await output.locator(".docs-output-text").textContent(), `${built}<b>edited</b> 6\n`);
    assert.equal(await output.locator(".docs-output-text b").count(), 0, "program output is text, never HTML");
    await output.locator(".docs-restore").click();
    await page.waitForFunction((f) => document.querySelector(f).dataset.reproduced === "true" && document.querySelector(`${f} .docs-output`).dataset.state === "built", figure, {
      timeout: 30_000,
    });
    assert.equal(await output.locator(".docs-output-text").textContent(), built);
  });

  test("nothing left the site and no page raised", () => {
    assert.deepEqual(browser.foreign, []);
    assert.deepEqual(pageErrors, []);
  });
});
