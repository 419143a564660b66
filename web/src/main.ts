// The playground page: the editor on the left, the six readings and the output on
// the right, a Python worker behind them. Readings update while typing (at once after a pause, else debounced);
// a broken edit keeps the last good readings and marks the user's line. Run (Ctrl+Enter)
// runs the script as a program in a second worker, its output shown as it comes, while
// the readings keep following the edits.

import "./style.css";
import type { Backend, Reading, ReadingName, RunResult, UserError, WebGpuStatus } from "../protocol";
import { CodeInput } from "./code-input";
import { examples } from "./gallery";
import { kernelsLine } from "./kernels-line";
import { Links } from "./links";
import { LoadingList } from "./loading-list";
import { RunOutputPane } from "./panes/output-pane";
import { createPanes, READING_NAMES } from "./panes/registry";
import { ReadingTabs } from "./reading-tabs";
import { errorSummary, RunDisplay, stopSummary } from "./run-display";
import { ProgressLine } from "./run-progress";
import { RunSession } from "./run-session";
import { PythonSession } from "./session";
import { FilesPanel } from "./files/panel";
import { hideError, showError, showNotice } from "./notices";
import { startOfflineApp } from "./pwa";
import { autosave, codeFromFragment, historyCode, shareLink } from "./share";

// An edit after a quiet spell (a paste, one keystroke) runs at once; edits coming faster than this
// (typing a word) wait until they pause, as does an edit that empties the editor (select all and
// delete: the new code is on its way). Only one run is ever in flight: edits made meanwhile wait
// as one pending run.
const DEBOUNCE_MS = 75;
const params = new URLSearchParams(window.location.search);
const TIME_LIMIT_MS = Number(params.get("timeLimit") ?? 10_000);

const element = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const statusLine = element<HTMLSpanElement>("status");
const loading = new LoadingList(element<HTMLOListElement>("loading"));
const backendPicker = element<HTMLSelectElement>("backend");
const galleryPicker = element<HTMLSelectElement>("gallery");

/** The status bar holds one line: a long text is cut with an ellipsis, and its whole is the tooltip. */
function setStatus(text: string): void {
  const line = text.replace(/\s+/g, " ").trim();
  statusLine.textContent = line;
  statusLine.title = line;
}

let firstReadingsShown = false;
/** The WebGPU adapter Python found, or why there is none (null until Python has looked). */
let webGpu: WebGpuStatus | null = null;

// Python starts first; Monaco, the largest part of the page, loads after the first
// readings (see code-input.ts), so that the two do not compete for the processor.
const session = new PythonSession(
  {
    stage: (message) => loading.showStage(message),
    ready: (webgpu) => {
      webGpu = webgpu;
      loading.showReadingsStage("started");
      backendPicker.title = webgpu.available ? `WebGPU: ${webgpu.detail}` : `no WebGPU: ${webgpu.detail}`;
      // The service worker registers now, so that its downloads never compete with the first start.
      startOfflineApp();
    },
    ran: showRan,
    reading: showReading,
    result: (result, id, ms) => void showResult(result, id, ms),
    busy: () => setStatus("running…"),
    written: (written) => files.showWritten("typing", written),
    stopped: (reason, _id, failure) => {
      void editor.load();
      setStatus(reason);
      showStop(reason, failure ?? null);
      loading.hidden = firstReadingsShown;
    },
  },
  TIME_LIMIT_MS,
);

/** Python was stopped: the reason, the failure's own message, and its whole traceback behind "details". */
function showStop(reason: string, failure: UserError | null): void {
  if (failure?.line) editor.markError(failure.line, undefined, `${reason}\n${failure.type}: ${failure.message}`);
  else editor.clearError();
  showError(stopSummary(reason, failure), failure?.traceback || null);
}

// Which code to show: this history entry's own (its edits survive a reload, Back and Forward),
// else a share link's, else the autosave (the last code edited), else the gallery's first example.

/** The share link's code; a link that cannot be read is said in a notice, naming what is shown `instead`. */
function sharedCode(instead: string): string | null {
  try {
    return codeFromFragment(window.location.hash);
  } catch (error) {
    const said = `${(error as Error).message}; ${instead}.`;
    showNotice(said[0].toUpperCase() + said.slice(1), () =>
      historyCode.setAddress(window.location.pathname + window.location.search),
    );
    return null;
  }
}

function initialCode(): string {
  const kept = historyCode.load();
  const saved = autosave.load();
  const instead = kept !== null ? "the code you had here is shown" : saved !== null ? "your autosaved code is shown instead" : "the first example is shown instead";
  const shared = sharedCode(instead);
  return kept ?? shared ?? saved ?? examples[0]?.code ?? "";
}

/** Back, Forward, or a share link opened in this tab: show that entry's code (a new entry, the link's). */
function followHistory(): void {
  const code = historyCode.load() ?? sharedCode("the code stays as it was");
  if (code === null) return; // an entry with no code of its own and no share link: the code stays
  historyCode.save(code);
  if (code === editor.code) return;
  editor.setCode(code);
  showCodeName(code);
  runNow();
}
window.addEventListener("popstate", followHistory);
window.addEventListener("hashchange", followHistory);

// Panes and the links between them ------------------------------------------------------

const links = new Links();
const panes = createPanes((nodes) => links.select(nodes));
links.onChange((selected) => {
  for (const pane of Object.values(panes.readings)) pane.highlight(selected);
  editor.highlightLines(links.linesOf(selected));
});

const tabs = new ReadingTabs<ReadingName>(element("tabs"), element("panes"), showPane);
let activePane: ReadingName = "spec";
for (const name of READING_NAMES) tabs.add(name, panes.readings[name].element);
element<HTMLDivElement>("output").append(panes.output.element);

function showPane(name: ReadingName): void {
  activePane = name;
  tabs.show(name);
}

function stepPane(step: number): void {
  showPane(tabs.step(activePane, step)!);
}
showPane("spec");

// The editor ---------------------------------------------------------------------------------

let debounce: ReturnType<typeof setTimeout> | undefined;
let lastEditAt = -Infinity;
const editor = new CodeInput(element("editor"), initialCode(), {
  change(code) {
    keepEdit(code);
    clearTimeout(debounce);
    const now = performance.now();
    const afterAPause = now - lastEditAt >= DEBOUNCE_MS;
    lastEditAt = now;
    if (afterAPause && code.trim()) runNow();
    else debounce = setTimeout(runNow, DEBOUNCE_MS);
  },
  cursorLine: (line) => links.selectLine(line),
  runNow: () => runProgram(),
  nextPane: stepPane,
  tabLeaves: (leaves) =>
    setStatus(leaves ? "Tab now leaves the editor (Ctrl+M: Tab indents again)" : "Tab indents again (Esc then Tab leaves the editor)"),
});
historyCode.save(editor.code);

/** An edit is kept as this history entry's code and as the autosave. */
function keepEdit(code: string): void {
  historyCode.save(code);
  autosave.save(code);
  showCodeName(code);
}

function runNow(): void {
  clearTimeout(debounce);
  session.run(editor.code, backendPicker.value as Backend, activePane);
  // The run output stays until the next Run; once the code is no longer the run's, it says so.
  runOutput.setStale(ranCode !== null && editor.code !== ranCode);
}

// Run mode: the script as a program, in a worker of its own ----------------------------------------

const runButton = element<HTMLButtonElement>("run");
const stopButton = element<HTMLButtonElement>("stop");
const runOutput = new RunOutputPane();
element<HTMLDivElement>("run-output").append(runOutput.notice, runOutput.element);
/** The code of the last run (null before the first). */
let ranCode: string | null = null;
const progress = new ProgressLine(element("run-progress"));

const display = new RunDisplay(runOutput, progress, stopButton, {
  failed: (error) => {
    editor.markError(error.line, error.column, `${error.type}: ${error.message}`);
    showError(errorSummary(error), error.traceback);
  },
  stopped: (stop) => {
    if (stop.failure) showStop(stop.reason, stop.failure);
  },
});
const runs = new RunSession(display);

// The user's files in, the files a run writes out (files/panel.ts): both workers get the user's files.
const files = new FilesPanel(
  {
    code: () => editor.code,
    notebook: (code, title) => session.notebook(code, title),
    changed(set) {
      session.setFiles(set);
      runs.setFiles(set);
      runNow();
    },
  },
  element("files"),
  element("tabs"),
);
runs.onWritten = (written) => files.showWritten("run", written);
void files.load();

function runProgram(): void {
  display.begin();
  showOutput("run");
  element("output-choice").hidden = false;
  ranCode = editor.code;
  runs.run(editor.code);
}

/** Show the output of the readings ("live": as you type) or of the last run. */
function showOutput(which: "live" | "run"): void {
  element("output").hidden = which !== "live";
  element("run-output").hidden = which !== "run";
  element("show-live-output").setAttribute("aria-pressed", String(which === "live"));
  element("show-run-output").setAttribute("aria-pressed", String(which === "run"));
}

runButton.addEventListener("click", runProgram);
stopButton.addEventListener("click", () => runs.stop());
element("show-live-output").addEventListener("click", () => showOutput("live"));
element("show-run-output").addEventListener("click", () => showOutput("run"));

// Results ----------------------------------------------------------------------------------------

// A result comes in parts (session.ts): the code's output or error, then each reading as soon as
// Python has made it (the pane in view first), each shown at once, then the end of the run.

/** The edit whose readings are coming in: its request id, its result so far and the panes' renders. */
let streaming: { id: number; result: RunResult; renders: Promise<void>[] } | null = null;
/** The edit each pane was last asked to show: a pane says (data-edit) which edit its reading is of. */
const requested = new Map<ReadingName, number>();
/** The panes still drawing a reading (the graph, while its layout is made). */
const drawing = new Set<ReadingName>();
/** The readings in the order they arrived ("edit name"), the newest 60: the browser tests read it. */
const arrivals: string[] = [];

function showRan(result: RunResult, id: number): void {
  streaming = null;
  if (result.error) {
    // No readings follow: a pane that waited for some keeps what it shows, and waits no more.
    for (const name of READING_NAMES) if (!drawing.has(name)) panes.readings[name].element.ariaBusy = "false";
    const { type, message, line, column, traceback } = result.error;
    const where = line === null ? "" : ` on line ${line}`;
    editor.markError(line, column, `${type}: ${message}`);
    showError(errorSummary(result.error), traceback);
    setStatus(`${type}${where}; the readings are the last good ones`);
    if (!firstReadingsShown) {
      loading.showReadingsStage("failed");
      void editor.load(); // the code needs fixing: the user wants the full editor now
    }
    return;
  }
  editor.clearError();
  hideError();
  links.setNodes(result.nodes);
  panes.output.render(result.output);
  streaming = { id, result, renders: [] };
  // Until its new reading is shown, a pane is busy: what it shows is an older edit's (its data-edit says which).
  for (const name of READING_NAMES) panes.readings[name].element.ariaBusy = "true";
}

function showReading(name: ReadingName, reading: Reading, id: number): void {
  if (streaming?.id !== id) return;
  arrivals.push(`${id} ${name}`);
  arrivals.splice(0, arrivals.length - 60);
  streaming.result.readings = { ...streaming.result.readings!, [name]: reading };
  requested.set(name, id);
  drawing.add(name);
  const pane = panes.readings[name];
  const shown = Promise.resolve(pane.render(reading, streaming.result)).then(() => {
    if (requested.get(name) !== id) return; // a newer edit's reading is on its way to this pane
    drawing.delete(name);
    pane.element.dataset.edit = String(id);
    pane.element.ariaBusy = "false";
  });
  streaming.renders.push(shown);
}

async function showResult(result: RunResult, id: number, ms: number): Promise<void> {
  if (result.error || streaming?.id !== id) return; // an error was shown when the code ran
  const { renders } = streaming;
  // The kernels pane adds what WebGPU made of the launches, which comes with the end of the run.
  if (result.webgpu) renders.push(Promise.resolve(panes.readings.kernels.render(result.readings!.kernels, result)));
  await Promise.all(renders);
  if (streaming?.id !== id) return; // a newer edit's readings arrived while the graph was laid out
  links.refresh();
  const kernels = kernelsLine(backendPicker.value as Backend, webGpu, result.webgpu);
  const gpu = kernels ? ` · ${kernels}` : "";
  setStatus(`readings in ${ms} ms (Python ${result.timings.total?.toFixed(0) ?? "?"} ms)${gpu}`);
  // When (since navigation) every reading of the edit was shown, and how many times: the benchmark reads these.
  document.body.dataset.readingsAt = performance.now().toFixed(1);
  document.body.dataset.readingsShown = String(Number(document.body.dataset.readingsShown ?? 0) + 1);
  if (!firstReadingsShown) {
    firstReadingsShown = true;
    loading.hidden = true;
    document.body.dataset.state = "ready";
    void editor.load();
  }
}

// The toolbar ------------------------------------------------------------------------------------

for (const example of examples) galleryPicker.append(new Option(example.title, example.file));

/** The picker names the example the editor shows, or says that the code is the user's own. */
function showCodeName(code = editor.code): void {
  galleryPicker.value = examples.find((example) => example.code === code)?.file ?? "";
}
showCodeName();

galleryPicker.addEventListener("change", () => {
  // "your code" brings back the last code edited (the autosave); an example opens in a new history entry.
  const example = examples.find((e) => e.file === galleryPicker.value);
  const code = example?.code ?? autosave.load();
  if (code === null || code === editor.code) return showCodeName();
  historyCode.push(window.location.pathname + window.location.search, code);
  editor.setCode(code);
  showCodeName(code);
  runNow();
});

backendPicker.value = autosave.loadBackend() ?? "auto";
backendPicker.addEventListener("change", () => {
  autosave.saveBackend(backendPicker.value);
  runNow();
});

element<HTMLButtonElement>("share").addEventListener("click", () => {
  const link = shareLink(editor.code);
  historyCode.setAddress(link);
  const field = element<HTMLInputElement>("share-link");
  field.hidden = false;
  field.value = link;
  field.select();
  navigator.clipboard?.writeText(link).then(
    () => setStatus("share link copied"),
    () => setStatus("share link ready to copy"),
  );
});

document.addEventListener("keydown", (event) => {
  if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
    event.preventDefault();
    // In the editor, the editor's own command runs (its runNow): once a key press.
    if (!element("editor").contains(event.target as Node)) runProgram();
  } else if (event.altKey && (event.key === "PageDown" || event.key === "PageUp")) {
    event.preventDefault();
    stepPane(event.key === "PageDown" ? 1 : -1);
  }
});

runNow();

// A small handle for the browser console and for the browser tests.
Object.assign(window, {
  playground: {
    getCode: () => editor.code,
    setCode: (code: string) => {
      editor.setCode(code);
      keepEdit(code);
      runNow();
    },
    select: (nodes: number[]) => links.select(nodes),
    arrivals: () => [...arrivals],
  },
});
