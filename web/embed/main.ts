// The embeddable playground: the code, the readings the embedding page chose, and a
// link that opens the code in the full playground. It reuses the playground's
// modules (the worker, the panes, the links, the code input, the share format); what
// is its own is the layout, the options (options.ts), one Python shared by the
// page's embeds (shared-python.ts), and the postMessage API (messages.ts).
//
// Python starts when the embed is first scrolled into view (or at once with
// ?start=now, or when the embedding page sends code or asks for readings). With
// ?run=allow, a Run button runs the code as a program, as the playground's does.

import "../src/style.css";
import "./embed.css";
import type { ReadingName, RunResult, StageMessage } from "../protocol";
import { CodeInput } from "../src/code-input";
import { examples } from "../src/gallery";
import { Links } from "../src/links";
import { RunOutputPane } from "../src/panes/output-pane";
import { createPanes } from "../src/panes/registry";
import { ReadingTabs } from "../src/reading-tabs";
import { RunDisplay } from "../src/run-display";
import { ProgressLine } from "../src/run-progress";
import { RunSession } from "../src/run-session";
import { STAGE_TITLES } from "../src/session";
import { codeFromFragment, shareLink } from "../src/share";
import { EmbedChannel, type EmbedReadings, type HostMessage } from "./messages";
import { readOptions, type PaneName } from "./options";
import { startPython, type Python } from "./python";
import { ReadOnlyCode, type CodeView } from "./readonly-code";

const DEBOUNCE_MS = 75;
const CODE_LINE_HEIGHT = 19;

const element = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const statusLine = element<HTMLSpanElement>("embed-status");
const errorBanner = element<HTMLPreElement>("embed-error");
const openLink = element<HTMLAnchorElement>("embed-open");
const paneHost = element<HTMLDivElement>("embed-panes");

const { options, problems } = readOptions(new URL(window.location.href));
const channel = new EmbedChannel(options.id, options.origins);

// The code: a share-format fragment, else a gallery example, else none (the embedder sends it).
function initialCode(): string {
  try {
    const shared = codeFromFragment(window.location.hash);
    if (shared !== null) return shared;
  } catch (error) {
    problems.push((error as Error).message);
  }
  if (options.example !== null) {
    const wanted = options.example.endsWith(".py") ? options.example : `${options.example}.py`;
    const example = examples.find((candidate) => candidate.file === wanted);
    if (example) return example.code;
    problems.push(`example=${options.example}: no such example; there are ${examples.map((e) => e.file).join(", ")}`);
  }
  return "";
}

if (problems.length) {
  const list = element<HTMLUListElement>("embed-problems");
  list.hidden = false;
  for (const problem of problems) list.append(Object.assign(document.createElement("li"), { textContent: problem }));
}

// What the embed shows, as data: sent with every readings-changed message ----------------------

const state: EmbedReadings = {
  code: "",
  status: "empty",
  error: null,
  stopped: null,
  output: [],
  outputText: "",
  readings: null,
  runs: 0,
};
/** get-readings requests waiting for the run in progress. */
let waiting: unknown[] = [];

function settle(): void {
  document.body.dataset.status = state.status;
  document.body.dataset.runs = String(state.runs);
  channel.post({ type: "topos:readings-changed", ...state });
  for (const request of waiting) channel.post({ type: "topos:readings", request, ...state });
  waiting = [];
}

// Panes: only the chosen ones, each drawn when its tab is open ----------------------------------

const links = new Links();
const panes = createPanes((nodes) => links.select(nodes));
const paneOf = (name: PaneName) => (name === "output" ? panes.output : panes.readings[name]);
let openPane: PaneName | null = null;
/** The result each pane shows, so that a pane opened later draws the newest one. */
const drawn = new Map<PaneName, RunResult>();
let latest: RunResult | null = null;

links.onChange((selected) => {
  for (const name of options.readings) if (name !== "output") panes.readings[name].highlight(selected);
  code.highlightLines(links.linesOf(selected));
});

// Choosing the open tab closes it: the embed shrinks to its code.
const tabs = new ReadingTabs<PaneName>(element("embed-tabs"), paneHost, (name) => showPane(openPane === name ? null : name));
for (const name of options.readings) tabs.add(name, paneOf(name).element);

function showPane(name: PaneName | null): void {
  openPane = name;
  tabs.show(name);
  paneHost.hidden = name === null;
  void drawOpenPane();
}

function stepPane(step: number): void {
  const name = tabs.step(openPane, step);
  if (name !== null) showPane(name);
}

async function drawOpenPane(): Promise<void> {
  const name = openPane;
  const result = latest;
  if (name === null || result === null || drawn.get(name) === result) return;
  drawn.set(name, result);
  if (name === "output") panes.output.render(result.output);
  else await panes.readings[name].render(result.readings![name as ReadingName], result);
  links.refresh();
}

// The code -----------------------------------------------------------------------------------------

const codeHost = element<HTMLDivElement>("embed-code");
let debounce: ReturnType<typeof setTimeout> | undefined;

function fitCodeHeight(text: string): void {
  // Monaco (once loaded) takes the host's height; the text area takes one row a line.
  const lines = Math.max(3, text.split("\n").length);
  codeHost.style.height = `${lines * CODE_LINE_HEIGHT + 12}px`;
}

const code: CodeView = options.editable
  ? new CodeInput(codeHost, initialCode(), {
      change(text) {
        fitCodeHeight(text);
        clearTimeout(debounce);
        debounce = setTimeout(runNow, DEBOUNCE_MS);
      },
      cursorLine: (line) => links.selectLine(line),
      runNow: () => (options.run ? runProgram() : runNow()),
      nextPane: stepPane,
    })
  : new ReadOnlyCode(codeHost, initialCode());
fitCodeHeight(code.code);

function updateOpenLink(): void {
  openLink.href = shareLink(code.code, new URL("./", window.location.href).href);
}

// Python and runs ------------------------------------------------------------------------------------

let python: Python | null = null;
/** A run of the current code was asked for (the lazy start has happened, or the code changed since). */
let runRequested = false;

function startPythonOnce(): Python {
  python ??= startPython(
    {
      stage: showStage,
      ready: () => {
        if (state.status === "loading") statusLine.textContent = "running…";
      },
      result: (result, _id, ms) => void showResult(result, ms),
      busy: () => {
        statusLine.textContent = "running…";
      },
      stopped: (reason) => {
        state.status = "stopped";
        state.stopped = reason;
        errorBanner.hidden = false;
        errorBanner.textContent = reason;
        statusLine.textContent = reason;
        statusLine.title = reason;
        settle();
      },
    },
    options.timeLimitMs,
    options.sharePython,
    (role) => (document.body.dataset.python = role),
  );
  return python;
}

function showStage(message: StageMessage): void {
  if (state.runs > 0 || message.state !== "started") return;
  statusLine.textContent = `loading ${STAGE_TITLES[message.stage]}…`;
}

function runNow(): void {
  clearTimeout(debounce);
  state.code = code.code;
  updateOpenLink();
  runOutput.setStale(ranCode !== null && state.code !== ranCode);
  if (!state.code.trim()) {
    state.status = "empty";
    statusLine.textContent = "no code yet";
    settle();
    return;
  }
  state.status = "loading";
  document.body.dataset.status = state.status;
  runRequested = true;
  startPythonOnce().run(state.code, options.backend);
}

async function showResult(result: RunResult, ms: number): Promise<void> {
  state.runs += 1;
  state.output = result.output;
  state.outputText = result.output_text;
  if (result.error) {
    const { type, message, line, column, traceback } = result.error;
    code.markError(line, column, `${type}: ${message}`);
    errorBanner.hidden = false;
    errorBanner.textContent = `${type} on line ${line ?? "?"}: ${message}\n\n${traceback}`;
    statusLine.textContent = `error on line ${line ?? "?"}`;
    state.status = "error";
    state.error = result.error;
    settle();
    return;
  }
  code.clearError();
  errorBanner.hidden = true;
  state.status = "ok";
  state.error = null;
  state.stopped = null;
  state.readings = result.readings;
  latest = result;
  links.setNodes(result.nodes);
  statusLine.textContent = `readings in ${ms} ms`;
  settle();
  await drawOpenPane();
}

// Run mode, where the embedder allows it (?run=allow) -------------------------------------------------

const runButton = element<HTMLButtonElement>("embed-run");
const stopButton = element<HTMLButtonElement>("embed-stop");
const runOutput = new RunOutputPane();
element<HTMLDivElement>("embed-run-output").append(runOutput.notice, runOutput.element);
/** The code of the last run (null before the first): the run's output says when the code is no longer it. */
let ranCode: string | null = null;
const progress = new ProgressLine(element("embed-run-progress"));
let runs: RunSession | null = null;

const display = new RunDisplay(runOutput, progress, stopButton);

function runProgram(): void {
  runs ??= new RunSession(display);
  display.begin();
  element("embed-run-area").hidden = false;
  ranCode = code.code;
  runs.run(code.code);
}

if (options.run) {
  runButton.hidden = false;
  stopButton.hidden = false;
  runButton.addEventListener("click", runProgram);
  stopButton.addEventListener("click", () => runs?.stop());
}

// The embedding page's messages, and telling it our height -------------------------------------------

function receive(message: HostMessage): void {
  if (message.type === "topos:set-code") {
    code.setCode(message.code);
    fitCodeHeight(message.code);
    runNow();
  } else if (state.status === "loading") {
    waiting.push(message.request);
    if (!runRequested) runNow(); // the embedder wants readings now, visible or not
  } else {
    channel.post({ type: "topos:readings", request: message.request, ...state });
  }
}
channel.listen(receive);

let reportedHeight = -1;
new ResizeObserver(() => {
  const height = Math.ceil(document.body.getBoundingClientRect().height);
  if (height === reportedHeight) return;
  reportedHeight = height;
  channel.post({ type: "topos:height", height });
}).observe(document.body);

document.addEventListener("keydown", (event) => {
  if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
    event.preventDefault();
    // In the code, the editor's own command runs: once a key press.
    if (!codeHost.contains(event.target as Node)) {
      if (options.run) runProgram();
      else runNow();
    }
  } else if (event.altKey && (event.key === "PageDown" || event.key === "PageUp")) {
    event.preventDefault();
    stepPane(event.key === "PageDown" ? 1 : -1);
  }
});

// Start ---------------------------------------------------------------------------------------------------

showPane(options.show);
state.code = code.code;
updateOpenLink();
if (state.code.trim()) {
  state.status = "loading";
  statusLine.textContent = options.start === "now" ? "starting Python…" : "Python starts when this comes into view";
} else {
  statusLine.textContent = "no code yet";
}
document.body.dataset.status = state.status;
document.body.dataset.state = "loaded";
channel.post({ type: "topos:ready", readings: options.readings, editable: options.editable });

if (options.start === "now") {
  if (state.code.trim()) runNow();
} else {
  // In an iframe, the implicit root is the top-level page's viewport: this fires when the embed is scrolled into view.
  const observer = new IntersectionObserver((entries) => {
    if (!entries.some((entry) => entry.isIntersecting)) return;
    observer.disconnect();
    if (state.code.trim()) runNow();
    else startPythonOnce(); // no code yet: be ready for the embedder's
  });
  observer.observe(document.body);
}

// A small handle for the browser console and the tests.
Object.assign(window, {
  embed: { getCode: () => code.code, state: () => ({ ...state }), options },
});
