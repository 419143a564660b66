// The graph at any size, in headless Chromium: the gallery's transformer opens with its nodes in
// the pane's visible rectangle, folded into the calls that recorded them (layer_norm,
// causal_self_attention, mlp); the wheel zooms at the pointer, a drag pans, the keys zoom, pan
// and fit, the fit control shows the whole; a node selected in the spec pane is brought into
// view; a group expands in place and collapses again. A graph card in the output pane is drawn
// the same way, its wheel zooming only with Ctrl (a plain wheel scrolls the output). A loop
// (topos.scan) is one group, collapsed, as many boxes for 10 steps as for 10,000, that opens into
// its step by a click or the keyboard; a cond inside it opens level by level into its branches.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { before, describe, test } from "node:test";
import { paneText, pasteCode, useBrowser, waitForPane } from "./harness.mjs";

const TRANSFORMER = readFileSync(new URL("../../docs/examples/06_char_transformer.py", import.meta.url), "utf8");
const PANE = '[data-reading="graph"]';
/** An RNN over `steps` rows with topos.scan; `body` is its step's first line (a plain step, or a cond). */
const scanProgram = (steps, body) =>
  `import numpy as np\n\nimport topos\nfrom topos import Tape\n\n\ndef build(tape):\n` +
  `    w = tape.parameter(np.eye(3) * 0.5, name="w")\n    h0 = tape.input(np.zeros(3), name="h0")\n` +
  `    xs = tape.input(np.linspace(-1.0, 1.0, ${steps} * 3).reshape(${steps}, 3), name="xs")\n\n` +
  `    def step(h, x):\n        ${body}\n        return h, (h * h).sum()\n\n` +
  `    h, ys = topos.scan(step, h0, xs)\n    return [ys.sum() + h.sum()]\n\n\nnetwork, (loss,) = Tape.record(build)\n`;
const PLAIN_STEP = "h = topos.tanh(h @ w + x)";
const BRANCHED_STEP = "h = topos.cond(topos.greater(topos.sum(x), 0.0), lambda a: topos.tanh(a @ w + x), lambda a: a * 0.5, h)";
// Every gallery model, the transformer last (the tests after the first view's go on with it).
const GALLERY = readdirSync(new URL("../../docs/examples/", import.meta.url))
  .filter((name) => name.endsWith(".py"))
  .sort((a, b) => (a === "06_char_transformer.py") - (b === "06_char_transformer.py") || a.localeCompare(b));

/** The view of the pane's drawing (its viewBox once a gesture rests), and the canvas's size on screen, once a frame wrote it. */
async function view(page, root = PANE) {
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  return page.$eval(`${root} .graph-canvas`, (canvas) => {
    const [x, y, width, height] = canvas.dataset.view.split(" ").map(Number);
    const { left, top } = canvas.getBoundingClientRect();
    return { x, y, width, height, scale: Number(canvas.dataset.scale), screenWidth: canvas.clientWidth, left, top };
  });
}

/** The labels of the boxes (nodes and groups) whose rectangles lie wholly inside the canvas on screen. */
async function boxesInView(page, root = PANE) {
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  return page.$eval(`${root} .graph-canvas`, (canvas) => {
    const frame = canvas.getBoundingClientRect();
    return [...canvas.querySelectorAll(".node, .group")]
      .filter((box) => {
        const r = box.getBoundingClientRect();
        return r.width > 0 && r.left >= frame.left - 0.5 && r.right <= frame.right + 0.5 && r.top >= frame.top - 0.5 && r.bottom <= frame.bottom + 0.5;
      })
      .map((box) => box.textContent);
  });
}

/** Wait until the pane's drawing is done (its layout arrived and is drawn). */
async function drawn(page, root = PANE) {
  await page.waitForFunction((root) => {
    const view = document.querySelector(`${root} .graph-view`);
    return view && view.ariaBusy === "false" && view.querySelector("svg");
  }, root, { timeout: 60_000 });
}

/** Choose `example` in the gallery and wait until its readings are shown and its graph's first view drawn (no layout under way). */
async function openExample(page, example) {
  const shown = await page.evaluate(() => Number(document.body.dataset.readingsShown));
  await page.selectOption("#gallery", example);
  await page.waitForFunction(
    (shown) => Number(document.body.dataset.readingsShown) > shown && document.querySelector('[data-reading="graph"] .graph-view').ariaBusy === "false",
    shown,
    { timeout: 60_000 },
  );
}

/**
 * The top-level groups drawn (collapsed boxes, and frames of expanded ones: those inside no other
 * frame), each with its box and its label's box on screen and whether the label is drawn; the canvas's box.
 */
async function topGroups(page) {
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  return page.$eval(`${PANE} .graph-canvas`, (canvas) => {
    const rect = (element) => {
      const { left, right, top, bottom } = element.getBoundingClientRect();
      return { left, right, top, bottom };
    };
    const frames = [...canvas.querySelectorAll(".frame")];
    const within = (inner, outer) => {
      const [a, b] = [rect(inner), rect(outer)];
      return inner !== outer && a.left >= b.left && a.right <= b.right && a.top >= b.top && a.bottom <= b.bottom;
    };
    const top = [...canvas.querySelectorAll(".group, .frame")].filter((element) => !frames.some((frame) => within(element, frame)));
    const groups = top.map((element) => {
      const text = element.querySelector(":scope > text");
      return { name: text.textContent, box: rect(element), label: rect(text), drawn: getComputedStyle(text).visibility === "visible" };
    });
    return { canvas: rect(canvas), groups };
  });
}

const inside = (inner, outer) =>
  inner.left >= outer.left - 0.5 && inner.right <= outer.right + 0.5 && inner.top >= outer.top - 0.5 && inner.bottom <= outer.bottom + 0.5;

/** Paste `code` and wait until the spec shows `expected` (not the emptied editor's readings) and the graph is drawn. */
async function record(page, code, expected) {
  await pasteCode(page, code);
  await waitForPane(page, "spec", (text) => text.includes(expected), 120_000);
  await page.waitForFunction(() => {
    const pane = document.querySelector('[data-reading="graph"]');
    return pane.ariaBusy !== "true" && pane.querySelector(".graph-view")?.ariaBusy === "false";
  }, null, { timeout: 60_000 });
}

/** Open or close the group `id` by its toggle (a click, or Enter on the focused toggle) and wait for the new drawing. */
async function toggleGroup(page, id, how = "click") {
  const before = await page.evaluate(() => document.querySelector('[data-reading="graph"] .graph-drawing'));
  if (how === "click") await page.click(`${PANE} [data-group="${id}"] > [data-toggle]`);
  else {
    await page.focus(`${PANE} [data-group="${id}"] > [data-toggle]`);
    await page.keyboard.press(how);
  }
  await page.waitForFunction((old) => document.querySelector('[data-reading="graph"] .graph-drawing') !== old, before);
  await drawn(page);
}

/** Each box drawn (nodes and group boxes) and frame: its class, group, label, the nodes it selects, its rectangle on screen. */
async function drawnBoxes(page) {
  return page.$$eval(`${PANE} .node, ${PANE} .group, ${PANE} .frame`, (all) =>
    all.map((box) => {
      const { left, right, top, bottom } = box.getBoundingClientRect();
      const kind = box.classList.contains("node") ? "node" : box.classList.contains("group") ? "group" : "frame";
      return { kind, group: box.dataset.group, label: box.querySelector(":scope > text").textContent, nodes: box.dataset.nodes, rect: { left, right, top, bottom } };
    }),
  );
}

/** The rows of the spec printed under a node of the top level as its body (or a body's, `depth` 2), each as the graph labels the node: "7 Tanh [3]". */
function bodyRows(spec, depth = 1) {
  const indent = " ".repeat(3 + 6 * depth);
  return spec
    .split("\n")
    .filter((line) => line.startsWith(indent) && /^\d/.test(line.slice(indent.length)))
    .map((line) => {
      const [index, opcode] = line.trim().split(/\s+/);
      return `${index} ${opcode} ${line.match(/\[[\d, ]*\]/)[0]}`;
    });
}

async function canvasCentre(page) {
  const box = await (await page.$(`${PANE} .graph-canvas`)).boundingBox();
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
}

describe("the graph view", () => {
  let browser;
  let page;
  let errors;

  useBrowser({ playground: "" }, (opened) => ({ browser, page, errors } = opened));

  before(async () => {
    await page.selectOption("#gallery", "06_char_transformer.py");
    await page.click("#tab-graph");
    await page.waitForSelector(`${PANE} .group`, { timeout: 60_000 });
    await drawn(page);
  });

  test("every gallery model's graph opens with its top-level groups whole in view, their names drawn readably", async () => {
    const seen = [];
    const frames = () => page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    for (const [index, example] of GALLERY.entries()) {
      await openExample(page, example);
      if (index === 0) {
        // The first model fits: a resize keeps it fitted, and the next model still has its own first view.
        await page.setViewportSize({ width: 1400, height: 860 });
        await frames();
        await page.setViewportSize({ width: 1400, height: 900 });
        await frames();
      }
      const { canvas, groups } = await topGroups(page);
      assert.ok((await boxesInView(page)).length >= 3, `${example}: a first view with nothing in it`);
      for (const group of groups) {
        assert.ok(inside(group.box, canvas), `${example}: the group ${group.name} is cut by the view: ${JSON.stringify(group.box)} in ${JSON.stringify(canvas)}`);
        assert.ok(inside(group.label, canvas), `${example}: the name of ${group.name} is cut by the view`);
        // Drawn, and at least 9 px tall on screen, however far the view had to zoom out to show every group.
        assert.ok(group.drawn && group.label.bottom - group.label.top >= 9, `${example}: the name of ${group.name} is not readable: ${JSON.stringify(group.label)}`);
      }
      seen.push(`${example} ${groups.length}`);
    }
    // Five of the eight models record calls (layers, layer_norm, conv2d, topos.grad): their groups were held to the view.
    assert.ok(seen.filter((line) => !line.endsWith(" 0")).length >= 5, seen.join(", "));
  });

  test("the transformer opens with its nodes in the pane's visible rectangle, folded into its calls", async () => {
    const seen = await boxesInView(page);
    assert.ok(seen.length >= 4, `only ${seen.length} boxes in view: ${JSON.stringify(seen)}`);
    // 249 nodes drawn as a few dozen boxes: the calls of layer_norm, attention and the MLP are one box each.
    const groups = await page.$$eval(`${PANE} .group`, (boxes) => boxes.map((box) => box.textContent));
    const boxes = await page.$$eval(`${PANE} .node, ${PANE} .group`, (all) => all.length);
    assert.ok(boxes < 40, `${boxes} boxes`);
    for (const name of ["layer_norm", "causal_self_attention", "mlp", "cross_entropy", "record_parameters"]) {
      assert.ok(groups.some((label) => label.startsWith(`${name} · `)), `no ${name} group in ${JSON.stringify(groups)}`);
    }
    assert.equal(groups.filter((label) => label.startsWith("causal_self_attention · ")).length, 2, "one attention box a block");
    assert.deepEqual(errors, []);
  });

  test("the wheel zooms at the pointer, a drag pans, and fit shows the whole drawing", async () => {
    const centre = await canvasCentre(page);
    await page.mouse.move(centre.x, centre.y);
    const before = await view(page);
    await page.mouse.wheel(0, -400);
    await page.waitForFunction((scale) => Number(document.querySelector('[data-reading="graph"] .graph-canvas').dataset.scale) > scale, before.scale);
    const zoomed = await view(page);
    assert.ok(zoomed.scale > before.scale * 1.2, `${before.scale} -> ${zoomed.scale}`);
    // The drawing's point under the pointer stayed under it. The point is read from where the canvas
    // lies on screen at each reading: a late layout (the status bar, a pane's text) may resize the
    // canvas between two readings, which moves its centre but not the point under a still pointer.
    const under = (v) => [v.x + ((centre.x - v.left) * v.width) / v.screenWidth, v.y + ((centre.y - v.top) * v.width) / v.screenWidth];
    for (const [a, b] of under(before).map((value, i) => [value, under(zoomed)[i]])) assert.ok(Math.abs(a - b) < 2, `${a} vs ${b}`);

    await page.mouse.move(centre.x, centre.y);
    await page.mouse.down();
    await page.mouse.move(centre.x - 60, centre.y - 40, { steps: 6 });
    await page.mouse.up();
    const panned = await view(page);
    assert.ok(Math.abs(panned.x - zoomed.x - 60 / zoomed.scale) < 1, `x ${zoomed.x} -> ${panned.x}`);
    assert.ok(Math.abs(panned.y - zoomed.y - 40 / zoomed.scale) < 1, `y ${zoomed.y} -> ${panned.y}`);
    assert.equal(panned.scale, zoomed.scale);
    assert.equal(await page.$$eval(`${PANE} .linked`, (lit) => lit.length), 0, "a drag is not a click: it selects nothing");

    await page.click(`${PANE} [data-action="fit"]`);
    const all = await page.$$eval(`${PANE} .node, ${PANE} .group`, (boxes) => boxes.length);
    assert.equal((await boxesInView(page)).length, all, "fit shows every box");
  });

  test("the keys zoom, pan and fit while the pane has focus", async () => {
    await page.focus(PANE);
    const fitted = await view(page);
    await page.keyboard.press("+");
    const zoomed = await view(page);
    assert.ok(Math.abs(zoomed.scale / fitted.scale - 1.25) < 0.01, `${fitted.scale} -> ${zoomed.scale}`);
    await page.keyboard.press("ArrowRight");
    const moved = await view(page);
    assert.ok(moved.x > zoomed.x, `ArrowRight moves the view right: ${zoomed.x} -> ${moved.x}`);
    await page.keyboard.press("-");
    assert.ok(Math.abs((await view(page)).scale - fitted.scale) < 0.001);
    await page.keyboard.press("0");
    const refitted = await view(page);
    await page.click(`${PANE} [data-action="fit"]`);
    assert.deepEqual(refitted, await view(page));
    assert.ok(refitted.scale < zoomed.scale);
  });

  test("two fingers pinch to zoom at their midpoint, one finger pans", async () => {
    const box = await (await page.$(`${PANE} .graph-canvas`)).boundingBox();
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("Emulation.setTouchEmulationEnabled", { enabled: true, maxTouchPoints: 2 });
    const cx = box.x + box.width / 2;
    const cy = box.y + box.height / 2;
    const fingers = (apart) => [{ x: cx - apart, y: cy, id: 1 }, { x: cx + apart, y: cy, id: 2 }];
    const before = await view(page);
    await cdp.send("Input.dispatchTouchEvent", { type: "touchStart", touchPoints: fingers(40) });
    for (let apart = 45; apart <= 100; apart += 5) await cdp.send("Input.dispatchTouchEvent", { type: "touchMove", touchPoints: fingers(apart) });
    await cdp.send("Input.dispatchTouchEvent", { type: "touchEnd", touchPoints: [] });
    const pinched = await view(page);
    // The fingers moved 2.5 times as far apart: the scale grew as much, about the same midpoint.
    assert.ok(Math.abs(pinched.scale / before.scale - 2.5) < 0.05, `${before.scale} -> ${pinched.scale}`);
    const centre = (v) => [v.x + v.width / 2, v.y + v.height / 2];
    for (const [a, b] of centre(before).map((value, i) => [value, centre(pinched)[i]])) assert.ok(Math.abs(a - b) < 2, `${a} vs ${b}`);
    await cdp.send("Input.dispatchTouchEvent", { type: "touchStart", touchPoints: [{ x: cx, y: cy, id: 3 }] });
    for (let moved = 5; moved <= 50; moved += 5) await cdp.send("Input.dispatchTouchEvent", { type: "touchMove", touchPoints: [{ x: cx - moved, y: cy, id: 3 }] });
    await cdp.send("Input.dispatchTouchEvent", { type: "touchEnd", touchPoints: [] });
    const panned = await view(page);
    assert.ok(Math.abs(panned.x - pinched.x - 50 / pinched.scale) < 1, `${pinched.x} -> ${panned.x}`);
    await cdp.send("Emulation.setTouchEmulationEnabled", { enabled: false });
    await cdp.detach();
  });

  test("a node selected in the spec pane is in view in the graph, at a readable scale", async () => {
    // Fitted, the transformer is too small to read; the last node (the loss) sits at the bottom.
    await page.click(`${PANE} [data-action="fit"]`);
    assert.ok((await view(page)).scale < 0.75);
    await page.click("#tab-spec");
    const last = await page.$$eval('[data-reading="spec"] [data-nodes]', (rows) => rows.at(-1).dataset.nodes);
    await page.click(`[data-reading="spec"] [data-nodes="${last}"]`);
    await page.click("#tab-graph");
    await page.waitForFunction(() => document.querySelector('[data-reading="graph"] .linked'));
    const lit = await page.$eval(`${PANE} .linked`, (box) => box.textContent);
    // The loss is recorded inside topos.cross_entropy: its group stands for it while collapsed.
    assert.match(lit, /^cross_entropy · \d+ nodes$/);
    await page.waitForFunction((label) => {
      const canvas = document.querySelector('[data-reading="graph"] .graph-canvas').getBoundingClientRect();
      const r = document.querySelector('[data-reading="graph"] .linked').getBoundingClientRect();
      return r.left >= canvas.left && r.right <= canvas.right && r.top >= canvas.top && r.bottom <= canvas.bottom;
    }, lit);
    assert.ok((await view(page)).scale >= 0.75);
    assert.ok((await boxesInView(page)).includes(lit));
  });

  test("a group expands in place and collapses again", async () => {
    await page.click(`${PANE} [data-action="fit"]`);
    const nodesBefore = await page.$$eval(`${PANE} .node`, (nodes) => nodes.length);
    const group = await page.$eval(`${PANE} .group[data-group]`, (box) => {
      const label = [...document.querySelectorAll('[data-reading="graph"] .group')].find((g) => g.textContent.startsWith("layer_norm"));
      return { id: label.dataset.group, count: label.dataset.nodes.split(" ").length };
    });
    await page.click(`${PANE} .group[data-group="${group.id}"] [data-toggle]`);
    await page.waitForSelector(`${PANE} .frame[data-group="${group.id}"]`);
    await drawn(page);
    assert.equal(await page.$$eval(`${PANE} .node`, (nodes) => nodes.length), nodesBefore + group.count);
    assert.equal(await page.$(`${PANE} .group[data-group="${group.id}"]`), null);
    // The opened group stays in view.
    const frameInView = await page.$eval(`${PANE} .frame[data-group="${group.id}"]`, (frame) => {
      const canvas = document.querySelector('[data-reading="graph"] .graph-canvas').getBoundingClientRect();
      const r = frame.getBoundingClientRect();
      return r.right > canvas.left && r.left < canvas.right && r.bottom > canvas.top && r.top < canvas.bottom;
    });
    assert.ok(frameInView);

    await page.click(`${PANE} .frame[data-group="${group.id}"] [data-toggle]`);
    await page.waitForSelector(`${PANE} .group[data-group="${group.id}"]`);
    await drawn(page);
    assert.equal(await page.$$eval(`${PANE} .node`, (nodes) => nodes.length), nodesBefore);
    assert.equal(await page.$(`${PANE} .frame`), null);
  });

  test("a new recording in a view panned away from every box opens on its nodes", async () => {
    await page.focus(PANE);
    for (let step = 0; step < 40; step++) await page.keyboard.press("ArrowLeft");
    assert.equal((await boxesInView(page)).length, 0, "the view was panned off the drawing");
    await page.selectOption("#gallery", "03_matmul.py");
    await page.waitForFunction(() => !document.querySelector('[data-reading="graph"] .group'), null, { timeout: 60_000 });
    await drawn(page);
    assert.ok((await boxesInView(page)).length >= 3);
  });

  test("a model of more groups than a readable view holds opens on its first, at the smallest opening scale", async () => {
    // Sixty calls of a block, one under the other: whole, they would be a column of dots.
    const blocks = `import numpy as np\nimport topos\nfrom topos import Tape\n\n\ndef block(x, w):\n    return topos.gelu(x @ w) + x\n\n\n` +
      `def build(tape):\n    x = tape.input(np.ones((4, 8)))\n    for _ in range(60):\n        x = block(x, tape.parameter(np.eye(8)))\n    return [x.sum()]\n\n\n` +
      `network, (loss,) = Tape.record(build)\n`;
    const shown = await page.evaluate(() => Number(document.body.dataset.readingsShown));
    await pasteCode(page, blocks);
    await page.waitForFunction((shown) => Number(document.body.dataset.readingsShown) > shown, shown, { timeout: 60_000 });
    await drawn(page);
    assert.equal((await view(page)).scale, 0.2);
    const { canvas, groups } = await topGroups(page);
    assert.equal(groups.length, 60);
    const first = groups.reduce((best, group) => (group.box.top < best.box.top ? group : best));
    assert.ok(inside(first.box, canvas) && inside(first.label, canvas), `the first block is not in view: ${JSON.stringify(first)}`);
    assert.ok(first.drawn && first.label.bottom - first.label.top >= 9, `its name is not readable: ${JSON.stringify(first.label)}`);
  });

  test("a graph card in the output pane opens on its nodes; Ctrl and the wheel zoom it, the plain wheel scrolls the output", async () => {
    await pasteCode(page, `${TRANSFORMER}\nshow.graph(network)\n`);
    const card = '[data-reading="output"] .card-graph';
    await page.waitForSelector(`${card} .group`, { timeout: 60_000 });
    await drawn(page, card);
    assert.ok((await boxesInView(page, card)).length >= 4);
    const box = await (await page.$(`${card} .graph-canvas`)).boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    const before = await view(page, card);
    await page.mouse.wheel(0, -300);
    await page.waitForTimeout(100);
    assert.equal((await view(page, card)).scale, before.scale, "a plain wheel does not zoom a card");
    await page.keyboard.down("Control");
    await page.mouse.wheel(0, -100);
    await page.keyboard.up("Control");
    await page.waitForFunction(
      ([card, scale]) => Number(document.querySelector(`${card} .graph-canvas`).dataset.scale) > scale,
      [card, before.scale],
    );
    assert.deepEqual(errors, []);
  });

  test("a scan is one group, collapsed, whatever its trip count; it opens into its step, wired to the loop's operands and result", async () => {
    await page.click("#tab-graph");
    await record(page, scanProgram(10, PLAIN_STEP), "length=10 ");
    const size = Number((await paneText(page, "spec")).match(/Scan .*body=<(\d+) nodes> length=10 /)[1]);
    const collapsed = await drawnBoxes(page);
    const loop = collapsed.find((box) => box.kind === "group" && box.label.startsWith("scan · "));
    assert.ok(loop, JSON.stringify(collapsed.map((box) => box.label)));
    assert.equal(loop.label, `scan · ${size} nodes a step, 10 steps`);
    assert.ok(!collapsed.some((box) => / Tanh /.test(box.label)), "the step's nodes are not drawn while the loop is collapsed");
    // Ten thousand steps record the same nodes: the same boxes are laid out, only the shapes and the loop's label say so.
    await record(page, scanProgram(10_000, PLAIN_STEP), "length=10000 ");
    const longer = await drawnBoxes(page);
    const opcodes = (boxes) => boxes.map((box) => `${box.kind} ${box.label.replace(/\[[\d, ]*\]/g, "[]").replace(/\d+ steps$/, "")}`);
    assert.deepEqual(opcodes(longer), opcodes(collapsed));
    assert.ok(longer.some((box) => box.label === `scan · ${size} nodes a step, 10000 steps`));
    const boxes = collapsed.filter((box) => box.kind !== "frame").length;
    assert.equal(await page.$eval(`${PANE} .graph-view`, (v) => v.dataset.boxes), String(boxes));
    assert.ok(boxes < 12, `${boxes} boxes for a loop of 10,000 steps`);

    await toggleGroup(page, loop.group);
    const open = await drawnBoxes(page);
    const frame = open.find((box) => box.kind === "frame" && box.group === loop.group);
    assert.equal(frame.label, `scan · ${size} nodes a step, 10000 steps`);
    const inFrame = open.filter((box) => box.kind === "node" && inside(box.rect, frame.rect));
    // The step's nodes, numbered as the spec numbers them under the Scan, and the loop's own nodes (the Scan, its Slices).
    const spec = await paneText(page, "spec");
    const step = inFrame.filter((box) => !/ (Scan|Slice) /.test(box.label));
    assert.deepEqual(step.map((box) => box.label).sort(), bodyRows(spec).sort());
    assert.equal(inFrame.length, size + loop.nodes.split(" ").length);
    // A node of the step selects the Scan (the spec's row of it); the outputs feed the Scan, drawn below the step.
    const scan = inFrame.find((box) => / Scan /.test(box.label));
    assert.ok(step.every((box) => box.nodes === scan.nodes), "a step's node stands for the Scan");
    const tanh = step.find((box) => / Tanh /.test(box.label));
    assert.ok(scan.rect.top > tanh.rect.bottom, "the step's result feeds the Scan");
    // The carry's placeholder is fed by h0 (node 1), drawn above it.
    const h0 = open.find((box) => box.kind === "node" && box.nodes === "1");
    const carry = step.find((box) => box.label === "0 Input [3]");
    assert.ok(carry.rect.top > h0.rect.bottom, "h0 feeds the carry's placeholder");

    // Enter on the focused toggle closes it again, and the keyboard's focus stays on the loop's toggle.
    await toggleGroup(page, loop.group, "Enter");
    assert.deepEqual((await drawnBoxes(page)).map((box) => box.label), longer.map((box) => box.label));
    assert.equal(await page.evaluate(() => document.activeElement.dataset.toggle), loop.group);
    assert.equal(await page.evaluate(() => document.activeElement.getAttribute("aria-expanded")), "false");
    assert.deepEqual(errors, []);
  });

  test("a cond inside a scan opens level by level, into its two branches", async () => {
    await record(page, scanProgram(10, BRANCHED_STEP), "true_body=<");
    const spec = await paneText(page, "spec");
    const [, yes, no] = spec.match(/Cond .*true_body=<(\d+) nodes> false_body=<(\d+) nodes>/).map(Number);
    const top = await drawnBoxes(page);
    assert.ok(!top.some((box) => box.label.startsWith("cond")), "the cond is inside the collapsed scan");
    await toggleGroup(page, top.find((box) => box.label.startsWith("scan · ")).group);
    const step = await drawnBoxes(page);
    const cond = step.find((box) => box.kind === "group" && box.label.startsWith("cond"));
    assert.equal(cond.label, `cond · ${yes} or ${no} nodes`);
    assert.ok(inside(cond.rect, step.find((box) => box.kind === "frame" && box.label.startsWith("scan")).rect), "the cond is drawn in the scan's frame");
    assert.ok(!step.some((box) => box.label === "true_body"), "the branches stay closed until the cond opens");

    await toggleGroup(page, cond.group, "Space");
    const branches = await drawnBoxes(page);
    const condFrame = branches.find((box) => box.kind === "frame" && box.group === cond.group);
    for (const [name, count] of [["true_body", yes], ["false_body", no]]) {
      const frame = branches.find((box) => box.kind === "frame" && box.label === name);
      assert.ok(frame && inside(frame.rect, condFrame.rect), `${name} is drawn in the cond's frame`);
      const nodes = branches.filter((box) => box.kind === "node" && inside(box.rect, frame.rect));
      assert.equal(nodes.length, count, `${name}: ${JSON.stringify(nodes.map((box) => box.label))}`);
    }
    // The branches' nodes are the spec's rows two levels in; the true branch's Tanh among them.
    const drawnLabels = branches.filter((box) => box.kind === "node").map((box) => box.label);
    for (const row of bodyRows(spec, 2)) assert.ok(drawnLabels.includes(row), `${row} is not drawn`);
    assert.deepEqual(errors, []);
  });
});
