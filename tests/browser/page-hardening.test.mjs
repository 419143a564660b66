// The playground page as a person uses it: edits survive share links, reloads and the
// history; a damaged share link says so; the keyboard can leave the editor and reach
// every reading; wide rows scroll sideways; notices cover nothing; the example picker
// names only what is shown; and a failure of Python reads as one plain line, with its
// traceback behind "details", after which the page goes on working.

import assert from "node:assert/strict";
import { before, beforeEach, describe, test } from "node:test";
import LZString from "lz-string";
import { BASE_URL, clearSiteData, openPlayground, paneText, pasteCode, READING_NAMES, useBrowser, waitForPane } from "./harness.mjs";
import { SEED_DESCRIBE, SEED_RECORDING } from "./seed.mjs";

/** A share link's fragment for `code`, in the format docs/playground.md gives. */
const linkTo = (code) => `#code=v1:${LZString.compressToEncodedURIComponent(code)}`;
const codeOf = (page) => page.evaluate(() => window.playground.getCode());
const waitForCode = (page, code) => page.waitForFunction((wanted) => window.playground?.getCode() === wanted, code, { timeout: 60_000 });

async function reload(page) {
  await page.reload();
  await page.waitForSelector('body[data-state="ready"]', { timeout: 120_000 });
}

/** Type a new last line into the editor as a user does; returns the code it makes. */
async function typeAtEnd(page, line) {
  await page.waitForSelector('#editor[data-editor="monaco"] .monaco-editor');
  const before = await codeOf(page);
  await page.click("#editor .view-lines");
  await page.keyboard.press("ControlOrMeta+End");
  await page.keyboard.type(line);
  const code = before + line;
  await waitForCode(page, code);
  return code;
}

const statusText = (page) => page.$eval("#status", (e) => e.textContent);
const heights = (page) =>
  page.evaluate(() => ({
    status: document.querySelector("#status").getBoundingClientRect().height,
    toolbar: document.querySelector(".toolbar").getBoundingClientRect().height,
  }));

describe("edits are never lost", () => {
  // One profile for the three tests; each test starts as in a fresh one, with no page open and
  // nothing stored for the site (clearSiteData).
  let browser;
  useBrowser({}, (opened) => ({ browser } = opened));
  beforeEach(() => clearSiteData(browser.context));

  test("to a share link, a reload, another link, Back and Forward", async () => {
    const shared = 'print("the shared code")\n';
    const { page, errors } = await openPlayground(browser.context, linkTo(shared));
    assert.equal(await codeOf(page), shared);
    const edited = await typeAtEnd(page, "# my edit of the shared code");
    await reload(page);
    assert.equal(await codeOf(page), edited, "a reload after opening a share link lost the edit");

    await page.click("#share");
    assert.match(page.url(), /#code=v1:/);
    const editedAfterSharing = await typeAtEnd(page, " and one after sharing");
    await reload(page);
    assert.equal(await codeOf(page), editedAfterSharing, "a reload after Share lost the edit");

    // Another link opened in this tab is a new history entry; Back and Forward bring each entry's code back.
    const other = 'print("another link")\n';
    await page.evaluate((url) => window.location.assign(url), new URL(linkTo(other), BASE_URL).href);
    await waitForCode(page, other);
    const otherEdited = await typeAtEnd(page, "# edited too");
    await page.goBack();
    await waitForCode(page, editedAfterSharing);
    await page.goForward();
    await waitForCode(page, otherEdited);
    await reload(page);
    assert.equal(await codeOf(page), otherEdited);
    await waitForPane(page, "output", (text) => text.includes("another link"));

    // A visit with no link starts from the last edit.
    const { page: fresh } = await openPlayground(browser.context);
    assert.equal(await codeOf(fresh), otherEdited);
    assert.deepEqual(errors, []);
  });

  test("to the example picker, which names an example only while the code is that example's", async () => {
    const { page } = await openPlayground(browser.context);
    const pickerShows = () => page.$eval("#gallery", (picker) => ({ value: picker.value, text: picker.selectedOptions[0].textContent }));
    assert.equal((await pickerShows()).value, "01_scalar_chain.py");
    const mine = await typeAtEnd(page, "# my change");
    assert.deepEqual(await pickerShows(), { value: "", text: "your code" });

    await page.selectOption("#gallery", "03_matmul.py");
    await waitForPane(page, "spec", (text) => /MatMul/.test(text));
    assert.equal((await pickerShows()).value, "03_matmul.py");
    // Picking an example opened a new history entry: Back returns to the code it replaced.
    await page.goBack();
    await waitForCode(page, mine);
    assert.deepEqual(await pickerShows(), { value: "", text: "your code" });
    // And "your code" brings back the last code edited.
    await page.selectOption("#gallery", "02_linear_fit.py");
    await page.selectOption("#gallery", "");
    await waitForCode(page, mine);
  });

  test("to a damaged share link, which says so until dismissed and keeps the autosaved code", async () => {
    const { page } = await openPlayground(browser.context);
    const mine = await typeAtEnd(page, "# my own code");
    const sound = linkTo('print("never shown")\n');
    // The two damaged links open side by side, each in a tab of its own.
    const damagedLinks = [
      [sound.slice(0, -6), /share link is damaged/],
      ["#code=v9:AAAA", /format v9/],
    ];
    const openedLinks = await Promise.all(damagedLinks.map(([damaged]) => openPlayground(browser.context, damaged)));
    for (const [index, [damaged, says]] of damagedLinks.entries()) {
      const opened = openedLinks[index].page;
      assert.equal(await codeOf(opened), mine, `${damaged}: the autosaved code was not kept`);
      assert.equal(await opened.$eval("#notice", (e) => e.hidden), false, `${damaged}: no notice`);
      assert.match(await opened.textContent("#notice-text"), says);
      assert.match(await opened.textContent("#notice-text"), /autosaved code/);
      // The notice outlives the next readings: it goes only when dismissed.
      const shown = await opened.evaluate(() => Number(document.body.dataset.readingsShown));
      await opened.evaluate(() => window.playground.setCode(window.playground.getCode()));
      await opened.waitForFunction((count) => Number(document.body.dataset.readingsShown) > count, shown);
      assert.equal(await opened.$eval("#notice", (e) => e.hidden), false);
      await opened.click("#notice-dismiss");
      assert.equal(await opened.$eval("#notice", (e) => e.hidden), true);
      assert.equal(new URL(opened.url()).hash, "", "the damaged link stayed in the address");
      await opened.close();
    }
    const { page: again } = await openPlayground(browser.context);
    assert.equal(await codeOf(again), mine);
  });
});

describe("the keyboard and the layout", () => {
  let browser;
  let page;
  let pageErrors;

  useBrowser(
    {
      playground: "",
      // The offline notice may come and go before its test runs: record where it was when it came, and that it went.
      prepare: (opened) =>
        opened.context.addInitScript(() => {
          new MutationObserver(() => {
            const note = document.getElementById("pwa-offline");
            if (note && !window.__offlineNote) {
              const box = note.getBoundingClientRect();
              const covered = (selector) => {
                const other = document.querySelector(selector).getBoundingClientRect();
                const width = Math.max(0, Math.min(box.right, other.right) - Math.max(box.left, other.left));
                return width * Math.max(0, Math.min(box.bottom, other.bottom) - Math.max(box.top, other.top));
              };
              window.__offlineNote = { text: note.textContent, output: covered("#output"), panes: covered("#panes"), editor: covered("#editor"), toolbar: covered(".toolbar") };
            }
            if (!note && window.__offlineNote) window.__offlineNote.gone = true;
          }).observe(document, { childList: true, subtree: true });
        }),
    },
    (opened) => ({ browser, page, errors: pageErrors } = opened),
  );
  before(() => page.waitForSelector('#editor[data-editor="monaco"] .monaco-editor'));

  const focused = () =>
    page.evaluate(() => {
      const at = document.activeElement;
      return { inEditor: Boolean(at.closest("#editor")), id: at.id, role: at.getAttribute("role") };
    });

  test("Tab indents in the editor; Escape then Tab, or Tab after Ctrl+M, leaves it; the footer says so", async () => {
    await page.click("#editor .view-lines");
    const before = await codeOf(page);
    await page.keyboard.press("Tab");
    assert.notEqual(await codeOf(page), before, "Tab did not indent");
    assert.equal((await focused()).inEditor, true);

    const indented = await codeOf(page);
    await page.keyboard.press("Escape");
    await page.keyboard.press("Tab");
    assert.deepEqual(await focused(), { inEditor: false, id: "tab-spec", role: "tab" });
    assert.equal(await codeOf(page), indented, "the Tab that left the editor also typed");
    await page.keyboard.press("Shift+Tab");
    assert.equal((await focused()).inEditor, true, "Shift+Tab from the tabs did not return to the editor");

    // Ctrl+M: Tab (and Shift+Tab) move the focus until Ctrl+M again.
    await page.keyboard.press("Control+m");
    await page.keyboard.press("Tab");
    assert.equal((await focused()).id, "tab-spec");
    await page.click("#editor .view-lines");
    await page.keyboard.press("Shift+Tab");
    assert.equal((await focused()).inEditor, false);
    await page.click("#editor .view-lines");
    await page.keyboard.press("Control+m");
    await page.keyboard.press("Tab");
    assert.equal((await focused()).inEditor, true);
    assert.notEqual(await codeOf(page), indented, "Tab no longer indents after Ctrl+M twice");

    const footer = await page.textContent("footer");
    assert.match(footer, /Esc then Tab leaves the editor/);
    assert.match(footer, /Ctrl\+M/);
  });

  test("the reading tabs are a WAI-ARIA tab list: panels, aria-controls, roving focus and arrow keys", async () => {
    const tabs = await page.$$eval('#tabs [role="tab"]', (found) =>
      found.map((tab) => {
        const panel = document.getElementById(tab.getAttribute("aria-controls"));
        return {
          name: tab.dataset.tab,
          panelRole: panel?.getAttribute("role"),
          labelledBy: panel?.getAttribute("aria-labelledby") === tab.id,
          panelTabIndex: panel?.tabIndex,
        };
      }),
    );
    assert.deepEqual(tabs.map((tab) => tab.name), READING_NAMES);
    for (const tab of tabs) assert.deepEqual(tab, { name: tab.name, panelRole: "tabpanel", labelledBy: true, panelTabIndex: 0 });
    assert.equal(await page.getAttribute("#tabs", "role"), "tablist");

    const state = () =>
      page.evaluate(() => ({
        focused: document.activeElement.dataset.tab,
        selected: [...document.querySelectorAll('#tabs [aria-selected="true"]')].map((tab) => tab.dataset.tab),
        inTabOrder: [...document.querySelectorAll('#tabs [role="tab"]')].filter((tab) => tab.tabIndex === 0).map((tab) => tab.dataset.tab),
        shown: [...document.querySelectorAll('#panes [role="tabpanel"]')].filter((panel) => !panel.hidden).map((panel) => panel.id),
      }));
    await page.focus("#tab-spec");
    await page.keyboard.press("ArrowRight");
    assert.deepEqual(await state(), { focused: "graph", selected: ["graph"], inTabOrder: ["graph"], shown: ["panel-graph"] });
    await page.keyboard.press("End");
    assert.deepEqual(await state(), { focused: "kernels", selected: ["kernels"], inTabOrder: ["kernels"], shown: ["panel-kernels"] });
    await page.keyboard.press("ArrowRight");
    assert.equal((await state()).focused, "spec", "ArrowRight from the last tab wraps to the first");
    await page.keyboard.press("ArrowLeft");
    assert.equal((await state()).focused, "kernels");
    await page.keyboard.press("Home");
    assert.deepEqual(await state(), { focused: "spec", selected: ["spec"], inTabOrder: ["spec"], shown: ["panel-spec"] });
  });

  test("a wide row scrolls sideways, by keyboard too, and printed tables keep their rows", async () => {
    await page.setViewportSize({ width: 1000, height: 900 }); // the reading pane is 500 pixels wide
    await page.selectOption("#gallery", "04_mlp.py");
    await waitForPane(page, "plan", (text) => text.includes("keepdims=True"));
    await page.click('#tabs [data-tab="plan"]');
    await page.keyboard.press("Tab");
    assert.equal((await focused()).id, "panel-plan");
    // The widest row's end is out of view, and ArrowRight on the focused panel brings it in.
    const rowEndInView = () =>
      page.$eval("#panel-plan", (panel) => {
        const right = Math.max(...[...panel.querySelectorAll(".line")].map((line) => line.getBoundingClientRect().right));
        return right <= panel.getBoundingClientRect().left + panel.clientWidth;
      });
    assert.equal(await rowEndInView(), false, "this test needs a row wider than the pane");
    for (let presses = 0; presses < 60 && !(await rowEndInView()); presses++) {
      await page.keyboard.press("ArrowRight");
      await page.waitForTimeout(50);
    }
    assert.equal(await rowEndInView(), true, "the end of the widest plan row cannot be scrolled into view");

    // A printed row wider than the output pane stays one row (the pane scrolls sideways).
    const wide = "x".repeat(400);
    // Set directly: the point is the printed row's layout, not the paste (other tests paste).
    await page.evaluate((code) => window.playground.setCode(code), `print(${JSON.stringify(wide)})\nprint("short")\n`);
    await waitForPane(page, "output", (text) => text.includes(wide));
    const printed = await page.$eval('[data-reading="output"]', (pane, text) => {
      const block = [...pane.querySelectorAll(".card-print")].find((card) => card.textContent.includes(text));
      const node = block.firstChild;
      const range = document.createRange();
      range.setStart(node, node.textContent.indexOf(text));
      range.setEnd(node, node.textContent.indexOf(text) + text.length);
      const output = document.querySelector("#output");
      return { rows: range.getClientRects().length, scrollsSideways: output.scrollWidth > output.clientWidth };
    }, wide);
    assert.deepEqual(printed, { rows: 1, scrollsSideways: true }, "the wide printed row was wrapped");
    await page.setViewportSize({ width: 1400, height: 900 });
  });

  test('"Ready to work offline" covers none of the page, and goes by itself', async () => {
    await page.waitForSelector('body[data-offline="ready"]', { timeout: 120_000 });
    await page.waitForFunction(() => window.__offlineNote?.gone, null, { timeout: 60_000 });
    const note = await page.evaluate(() => window.__offlineNote);
    assert.match(note.text, /Ready to work offline/);
    assert.deepEqual(note, { text: note.text, output: 0, panes: 0, editor: 0, toolbar: 0, gone: true });
  });

  test("no script error happened", () => {
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(browser.foreign, []);
  });
});

describe("when Python fails", () => {
  let opened;

  useBrowser({ playground: "?timeLimit=60000" }, (value) => (opened = value));

  test("the status bar says one plain line; the traceback is behind details; the next run works", async () => {
    const { browser, page, errors } = opened;
    await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("readings in"));
    const normal = await heights(page);

    // A script that grows memory until numpy cannot allocate (numpy's _ArrayMemoryError, a MemoryError).
    await pasteCode(page, "import numpy as np\nchunks = []\nwhile True:\n    chunks.append(np.empty(2**26))\n");
    await page.waitForFunction(() => /restarted/.test(document.querySelector("#status").textContent), null, { timeout: 60_000 });
    const status = await statusText(page);
    assert.equal(status, "your code ran out of memory on line 4; Python has been restarted");
    assert.deepEqual(await heights(page), normal, "the status bar grew");
    assert.match(await page.textContent("#error-summary"), /^Your code ran out of memory on line 4.*\n.*Unable to allocate/);
    assert.equal(await page.$eval("#error-details", (details) => details.open), false);
    assert.match(await page.textContent("#error-traceback"), /Traceback[\s\S]*File "main.py", line 4[\s\S]*_ArrayMemoryError/);
    await page.waitForSelector('#editor[data-error-line="4"]');

    // A failure after the script ran, with a 5,000-character message: the script breaks json.dumps, with
    // which the playground writes its result.
    const message = "internal ".repeat(600);
    await pasteCode(page, `import json\n\ndef broken(*args, **kwargs):\n    raise RuntimeError(${JSON.stringify(message)})\n\njson.dumps = broken\n`);
    await page.waitForFunction(() => /failed.*restarted/.test(document.querySelector("#status").textContent), null, { timeout: 60_000 });
    assert.equal(await statusText(page), "Python failed on line 4 (RuntimeError); it has been restarted");
    assert.deepEqual(await heights(page), normal, "the status bar grew");
    await page.click("#error-details summary");
    assert.ok((await page.textContent("#error-traceback")).includes(message.trim()));
    const panel = await page.$eval("#error", (e) => e.getBoundingClientRect().height);
    assert.ok(panel <= 0.3 * (await page.$eval(".editor-column", (e) => e.getBoundingClientRect().height)) + 1, "the error panel outgrew its space");

    // A user's exception with a 5,000-character name is still one line.
    await pasteCode(page, `raise type(${JSON.stringify("E".repeat(5000))}, (Exception,), {})("too long to read")\n`);
    await page.waitForFunction(() => /^E{100}/.test(document.querySelector("#status").textContent), null, { timeout: 60_000 });
    assert.deepEqual(await heights(page), normal, "the status bar grew");

    // The page goes on: Python was restarted, and the next edit runs.
    await pasteCode(page, SEED_RECORDING + 'print("after the failures")\n');
    await waitForPane(page, "output", (text) => text.includes("after the failures"), 60_000);
    assert.equal(await paneText(page, "spec"), SEED_DESCRIBE);
    assert.equal(await page.$eval("#error", (e) => e.hidden), true);
    assert.equal(await page.$eval("#editor", (e) => e.dataset.errorLine), undefined);
    assert.deepEqual(errors, []);
    assert.deepEqual(browser.foreign, []);
  });
});
