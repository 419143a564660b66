// The playground page: the editor on the left, the six readings and the output on
// the right, a Python worker behind them. Readings update while typing (debounced);
// a broken edit keeps the last good readings and marks the user's line.

import "./style.css";
import type { Backend, ReadingName, RunResult, StageMessage } from "../protocol";
import { CodeInput } from "./code-input";
import { examples } from "./gallery";
import { Links } from "./links";
import { createPanes, READING_NAMES } from "./panes/registry";
import { PythonSession } from "./session";
import { startOfflineApp } from "./pwa";
import { autosave, codeFromFragment, shareLink } from "./share";

// Short, because only one run is ever in flight: edits made meanwhile wait as one pending run.
const DEBOUNCE_MS = 75;
const params = new URLSearchParams(window.location.search);
const TIME_LIMIT_MS = Number(params.get("timeLimit") ?? 10_000);

const element = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const statusLine = element<HTMLSpanElement>("status");
const errorBanner = element<HTMLPreElement>("error");
const loading = element<HTMLOListElement>("loading");
const backendPicker = element<HTMLSelectElement>("backend");
const galleryPicker = element<HTMLSelectElement>("gallery");

// Loading: one row a start-up stage, kept until the first readings are shown ----------------

const STAGE_TITLES: Record<StageMessage["stage"], string> = {
  pyodide: "Python (Pyodide)",
  numpy: "numpy",
  topos: "topos",
  webgpu: "WebGPU adapter",
};

function showStage(message: StageMessage): void {
  let row = loading.querySelector<HTMLLIElement>(`[data-stage="${message.stage}"]`);
  if (!row) {
    row = document.createElement("li");
    row.dataset.stage = message.stage;
    loading.append(row);
  }
  row.dataset.state = message.state;
  const seconds = message.ms !== undefined ? ` (${(message.ms / 1000).toFixed(1)} s)` : "";
  const detail = message.state !== "started" && message.detail ? `: ${message.detail}` : "";
  row.textContent = `${STAGE_TITLES[message.stage]} ${message.state === "started" ? "loading…" : message.state}${seconds}${detail}`;
}

/** The last row: the first readings, waiting (or failed: the first code raised, see the error). */
function showReadingsStage(state: "started" | "failed"): void {
  let row = loading.querySelector<HTMLLIElement>('[data-stage="readings"]');
  if (!row) {
    row = document.createElement("li");
    row.dataset.stage = "readings";
    loading.append(row);
  }
  row.dataset.state = state;
  row.textContent = state === "started" ? "first readings…" : "first readings: waiting for code that runs (see the error)";
}

let firstReadingsShown = false;
let shownGeneration = 0;

// Python starts first; Monaco, the largest part of the page, loads after the first
// readings (see code-input.ts), so that the two do not compete for the processor.
const session = new PythonSession(
  {
    stage: showStage,
    ready: (webgpu) => {
      showReadingsStage("started");
      backendPicker.title = webgpu.available ? `WebGPU: ${webgpu.detail}` : `no WebGPU: ${webgpu.detail}`;
      // The service worker registers now, so that its downloads never compete with the first start.
      startOfflineApp();
    },
    result: (result, _id, ms) => void showResult(result, ms),
    busy: () => {
      statusLine.textContent = "running…";
    },
    stopped: (reason) => {
      void editor.load();
      statusLine.textContent = reason;
      errorBanner.hidden = false;
      errorBanner.textContent = reason;
      loading.hidden = firstReadingsShown;
    },
  },
  TIME_LIMIT_MS,
);

// The code to start with: a share link, else the autosaved code, else the gallery's first example.
function initialCode(): string {
  try {
    const shared = codeFromFragment(window.location.hash);
    if (shared !== null) return shared;
  } catch (error) {
    statusLine.textContent = String((error as Error).message);
  }
  return autosave.load() ?? examples[0]?.code ?? "";
}

// Panes and the links between them ------------------------------------------------------

const links = new Links();
const panes = createPanes((nodes) => links.select(nodes));
links.onChange((selected) => {
  for (const pane of Object.values(panes.readings)) pane.highlight(selected);
  editor.highlightLines(links.linesOf(selected));
});

const tabs = element<HTMLElement>("tabs");
const paneHost = element<HTMLDivElement>("panes");
let activePane: ReadingName = "spec";
for (const name of READING_NAMES) {
  const tab = document.createElement("button");
  tab.type = "button";
  tab.role = "tab";
  tab.textContent = name === "hlo" ? "HLO" : name;
  tab.dataset.tab = name;
  tab.addEventListener("click", () => showPane(name));
  tabs.append(tab);
  paneHost.append(panes.readings[name].element);
}
element<HTMLDivElement>("output").append(panes.output.element);

function showPane(name: ReadingName): void {
  activePane = name;
  for (const tab of tabs.querySelectorAll<HTMLButtonElement>("[data-tab]")) tab.ariaSelected = String(tab.dataset.tab === name);
  for (const reading of READING_NAMES) panes.readings[reading].element.hidden = reading !== name;
}

function stepPane(step: number): void {
  const at = READING_NAMES.indexOf(activePane);
  showPane(READING_NAMES[(at + step + READING_NAMES.length) % READING_NAMES.length]);
}
showPane("spec");

// The editor ---------------------------------------------------------------------------------

let debounce: ReturnType<typeof setTimeout> | undefined;
const editor = new CodeInput(element("editor"), initialCode(), {
  change(code) {
    autosave.save(code);
    clearTimeout(debounce);
    debounce = setTimeout(runNow, DEBOUNCE_MS);
  },
  cursorLine: (line) => links.selectLine(line),
  runNow,
  nextPane: stepPane,
});

function runNow(): void {
  clearTimeout(debounce);
  session.run(editor.code, backendPicker.value as Backend);
}

// Results ----------------------------------------------------------------------------------------

async function showResult(result: RunResult, ms: number): Promise<void> {
  const generation = ++shownGeneration;
  if (result.error) {
    const { type, message, line, column, traceback } = result.error;
    editor.markError(line, column, `${type}: ${message}`);
    errorBanner.hidden = false;
    errorBanner.textContent = `${type} on line ${line ?? "?"}: ${message}\n\n${traceback}`;
    statusLine.textContent = `error on line ${line ?? "?"}; the readings are the last good ones`;
    if (!firstReadingsShown) {
      showReadingsStage("failed");
      void editor.load(); // the code needs fixing: the user wants the full editor now
    }
    return;
  }
  editor.clearError();
  errorBanner.hidden = true;
  links.setNodes(result.nodes);
  panes.output.render(result.output);
  await Promise.all(READING_NAMES.map((name) => panes.readings[name].render(result.readings![name], result)));
  if (generation !== shownGeneration) return; // newer readings arrived while the graph was laid out
  links.refresh();
  const gpu = result.webgpu ? ` · kernels: ${result.webgpu.ran ? "WebGPU" : result.webgpu.detail}` : "";
  statusLine.textContent = `readings in ${ms} ms (Python ${result.timings.total?.toFixed(0) ?? "?"} ms)${gpu}`;
  // When (since navigation) and how many times the readings were shown: the benchmark reads these.
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
galleryPicker.addEventListener("change", () => {
  const example = examples.find((e) => e.file === galleryPicker.value);
  if (!example) return;
  editor.setCode(example.code);
  autosave.save(example.code);
  history.replaceState(null, "", window.location.pathname + window.location.search);
  runNow();
});

backendPicker.value = autosave.loadBackend() ?? "auto";
backendPicker.addEventListener("change", () => {
  autosave.saveBackend(backendPicker.value);
  runNow();
});

element<HTMLButtonElement>("run").addEventListener("click", runNow);
element<HTMLButtonElement>("share").addEventListener("click", () => {
  const link = shareLink(editor.code);
  history.replaceState(null, "", link);
  const field = element<HTMLInputElement>("share-link");
  field.hidden = false;
  field.value = link;
  field.select();
  navigator.clipboard?.writeText(link).then(
    () => (statusLine.textContent = "share link copied"),
    () => (statusLine.textContent = "share link ready to copy"),
  );
});

document.addEventListener("keydown", (event) => {
  if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
    event.preventDefault();
    runNow();
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
      autosave.save(code);
      runNow();
    },
    select: (nodes: number[]) => links.select(nodes),
  },
});
