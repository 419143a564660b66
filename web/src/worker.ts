// The Python worker: loads Pyodide, numpy and topos in awaited stages that report
// progress (python-loader.ts), then answers run requests one at a time. A run's result is
// streamed: the code's output (or error) first, then each reading as soon as Python has made
// it (the pane in view first, then the graph, so that the page lays the graph out while
// Python makes the rest), then the end of the run. A newer request supersedes a run: it
// sends no more readings and ends.
// Python is entered so that it may wait for WebGPU (webgpu.ts): the kernels pane's WebGPU
// section and a script's own WebGPU runs go through topos.webgpu's runner on the page's WebGPU.

import type { PyCallable } from "pyodide/ffi";
import {
  READING_NAMES,
  type Backend,
  type HostToWorker,
  type Reading,
  type ReadingName,
  type RunRequest,
  type RunResult,
  type WebGpuReport,
  type WebGpuStatus,
  type WorkerToHost,
} from "../protocol";
import { blasWanted, installBlas } from "./blas-loader";
import { notebookText, WorkerFiles } from "./files/worker-files";
import { crashReason, loadPython, stage } from "./python-loader";
import { callPython, callPythonJson, webGpuStatus } from "./webgpu";

function post(message: WorkerToHost): void {
  self.postMessage(message);
}

const pythonReady = loadPython(post, "topos.playground");
/** The user's files: every run starts in a working directory that holds them (files/worker-files.ts). */
const files = new WorkerFiles(pythonReady);

// WebGPU is Python's own (topos.webgpu's browser device): the adapter is requested once topos is in.
const gpuReady = pythonReady
  .then((pyodide) => stage(post, "webgpu", () => webGpuStatus(pyodide), (status) => status.detail))
  .catch((error): WebGpuStatus => ({ available: false, fallback: false, reason: "failed", detail: `WebGPU failed to start: ${error}` }));

async function start(): Promise<void> {
  try {
    const [, status] = await Promise.all([pythonReady, gpuReady]);
    post({ type: "ready", webgpu: status });
  } catch (error) {
    post({ type: "crashed", id: null, reason: "fatal", message: `start-up failed: ${error}` });
  }
}

function wantsGpu(backend: Backend, status: WebGpuStatus): boolean {
  return backend === "webgpu" || (backend === "auto" && status.available && !status.fallback);
}

/** The order a run's readings are made and sent in: the pane in view, the graph (its layout takes longest), the rest. */
function readingOrder(first: ReadingName | undefined): ReadingName[] {
  return [...new Set<ReadingName>([...(first ? [first] : []), "graph", ...READING_NAMES])];
}

// The streamed run's Python functions, taken once: a script cannot rebind what the worker calls.
const streamed = pythonReady.then((pyodide) => {
  const playground = pyodide.pyimport("topos.playground");
  return {
    start: playground.start_run as PyCallable,
    read: playground.read_reading as PyCallable,
    finish: playground.finish_run as PyCallable,
  };
});
streamed.catch(() => undefined); // start() reports a Python that failed to load

async function callJson<T>(fn: PyCallable, ...args: unknown[]): Promise<T> {
  return JSON.parse((await callPython(await pythonReady, fn, ...args)) as string) as T;
}

/** Resolves once the messages that came meanwhile (a "supersede") have been handled. */
function nextTask(): Promise<void> {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => resolve();
    channel.port2.postMessage(null);
  });
}

/** The newest run a newer request superseded (the page's ids increase with every request). */
let supersededUpTo = 0;

async function run({ id, code, backend, first }: RunRequest): Promise<void> {
  const pyodide = await pythonReady;
  const status = await gpuReady;
  const python = await streamed;
  const begun = performance.now();
  try {
    await files.prepare();
    // Entered so that the script's own plan.run(backend="webgpu") and DeviceTrainer can wait for WebGPU.
    const head = await callJson<RunResult>(python.start, code);
    post({ type: "ran", id, result: head });
    let complete = true;
    for (const name of head.error ? [] : readingOrder(first)) {
      await nextTask();
      if (id <= supersededUpTo) {
        complete = false;
        break;
      }
      const { reading } = await callJson<{ reading: Reading }>(python.read, name);
      post({ type: "reading", id, name, reading });
    }
    const { timings } = await callJson<{ timings: Record<string, number> }>(python.finish);
    const written = await files.written(id);
    self.postMessage(written.message, written.transfer);
    let webgpu: WebGpuReport | undefined;
    if (complete && head.recording && wantsGpu(backend, status)) {
      webgpu = await callPythonJson<WebGpuReport>(pyodide, "topos.playground", "webgpu_report_json");
    }
    post({ type: "done", id, complete, timings, webgpu, ms: Math.round(performance.now() - begun) });
  } catch (error) {
    // A Python MemoryError (or a subclass: numpy's _ArrayMemoryError), or WebAssembly failing to grow its heap:
    // either way Python's state is not to be trusted.
    post({ type: "crashed", id, reason: crashReason(error), message: String(error) });
  }
}

async function exportNotebook(id: number, code: string, title: string | null): Promise<void> {
  try {
    post({ type: "notebook", id, text: await notebookText(pythonReady, code, title) });
  } catch (error) {
    post({ type: "notebook", id, error: String(error) });
  }
}

/**
 * The BLAS (blas-loader.ts), loaded once the runs so far multiplied enough without one that a
 * run that trains would pay for it; queued like a request, so never in the middle of a run.
 */
let blasLoading = false;
function loadBlasIfWanted(): void {
  queue = queue.then(async () => {
    const pyodide = await pythonReady;
    if (blasLoading || !blasWanted(pyodide)) return;
    blasLoading = true;
    await installBlas(pyodide).catch((error) => console.warn(`the BLAS did not load (products stay in numpy): ${error}`));
  });
}

// Requests run one after another: a run is never interleaved with another one.
let queue: Promise<void> = Promise.resolve();
self.addEventListener("message", (event: MessageEvent<HostToWorker>) => {
  const request = event.data;
  if (request.type === "run") {
    queue = queue.then(() => run(request));
    if (!blasLoading) loadBlasIfWanted();
  }
  else if (request.type === "supersede") supersededUpTo = Math.max(supersededUpTo, request.id);
  else if (request.type === "files") queue = queue.then(() => files.replace(request.files));
  else if (request.type === "notebook") queue = queue.then(() => exportNotebook(request.id, request.code, request.title));
});

void start();
