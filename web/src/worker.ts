// The Python worker: loads Pyodide, numpy and topos in awaited stages that report
// progress, then answers run requests one at a time with all readings at once.
// Everything it loads comes from the site's own pyodide/ folder, wherever the site lives.

import type { PyodideInterface } from "pyodide";
import type {
  Backend,
  HostToWorker,
  RunResult,
  StageName,
  WebGpuStatus,
  WorkerToHost,
} from "../protocol";
import { runKernelsOnGpu } from "./webgpu";

// The site may be served under any path (docs/deploy.md), so the folder is found from this
// script's own URL: it lies one folder below the site's root (assets/ in the build, src/ on
// the dev server), and pyodide/ beside that folder.
const PYODIDE_URL = new URL("../pyodide/", self.location.href).href;
const started = performance.now();

function post(message: WorkerToHost): void {
  self.postMessage(message);
}

async function stage<T>(name: StageName, work: () => Promise<T>, detail?: (value: T) => string): Promise<T> {
  post({ type: "stage", stage: name, state: "started" });
  try {
    const value = await work();
    post({ type: "stage", stage: name, state: "done", ms: Math.round(performance.now() - started), detail: detail?.(value) });
    return value;
  } catch (error) {
    post({ type: "stage", stage: name, state: "failed", detail: String(error) });
    throw error;
  }
}

async function loadPython(): Promise<PyodideInterface> {
  // Pyodide's own loader is served next to its files, so it is imported at run time rather than bundled.
  const module = (await import(/* @vite-ignore */ `${PYODIDE_URL}pyodide.mjs`)) as typeof import("pyodide");
  return module.loadPyodide({ indexURL: PYODIDE_URL });
}

/** The topos wheel, fetched while Pyodide starts (its manifest names the file and its sha256). */
async function fetchToposWheel(): Promise<{ file: string; bytes: Uint8Array }> {
  const manifest = (await (await fetch(`${PYODIDE_URL}topos-wheel.json`, { cache: "no-cache" })).json()) as { file: string; sha256: string };
  // The sha256 in the query makes a rebuilt wheel a new URL for the browser's cache.
  const response = await fetch(`${PYODIDE_URL}${manifest.file}?sha256=${manifest.sha256}`);
  if (!response.ok) throw new Error(`${manifest.file}: HTTP ${response.status}`);
  return { file: manifest.file, bytes: new Uint8Array(await response.arrayBuffer()) };
}

/** micropip installs the wheel from Pyodide's file system (it needs no numpy: the wheel is pure Python). */
async function installTopos(pyodide: PyodideInterface, wheel: { file: string; bytes: Uint8Array }): Promise<void> {
  await pyodide.loadPackage(["micropip"], { messageCallback: () => {} });
  const path = `/tmp/${wheel.file}`;
  pyodide.FS.writeFile(path, wheel.bytes);
  const micropip = pyodide.pyimport("micropip");
  try {
    await micropip.install(`emfs:${path}`, { deps: false });
  } finally {
    micropip.destroy();
  }
}

async function probeWebGpu(): Promise<{ status: WebGpuStatus; device: GPUDevice | null }> {
  const gpu = (self.navigator as Navigator & { gpu?: GPU }).gpu;
  if (!gpu) return { status: { available: false, fallback: false, detail: "this browser has no WebGPU (navigator.gpu)" }, device: null };
  const adapter = await gpu.requestAdapter();
  if (!adapter) return { status: { available: false, fallback: false, detail: "WebGPU found no adapter" }, device: null };
  const device = await adapter.requestDevice();
  const info = adapter.info as GPUAdapterInfo & { isFallbackAdapter?: boolean };
  const fallback = Boolean(info.isFallbackAdapter ?? (adapter as GPUAdapter & { isFallbackAdapter?: boolean }).isFallbackAdapter);
  const name = [info.vendor, info.architecture, info.description].filter(Boolean).join(" ") || "unnamed adapter";
  return { status: { available: true, fallback, detail: fallback ? `${name} (software fallback)` : name }, device };
}

const gpuReady = stage("webgpu", probeWebGpu, (gpu) => gpu.status.detail).catch(
  (error): { status: WebGpuStatus; device: GPUDevice | null } => ({
    status: { available: false, fallback: false, detail: `WebGPU failed to start: ${error}` },
    device: null,
  }),
);

// The stages overlap where they can: the wheel downloads while Pyodide starts, and micropip
// installs topos while numpy's files are still arriving; topos is imported once both are in.
const toposWheel = fetchToposWheel();
const pythonReady = (async () => {
  const pyodide = await stage("pyodide", loadPython);
  const numpyLoaded = stage("numpy", async () => {
    await pyodide.loadPackage(["numpy"], { messageCallback: () => {} });
    pyodide.runPython("import numpy");
  });
  await stage("topos", async () => {
    await installTopos(pyodide, await toposWheel);
    await numpyLoaded;
    pyodide.runPython("import topos.playground");
  });
  return pyodide;
})();

async function start(): Promise<void> {
  try {
    const [, gpu] = await Promise.all([pythonReady, gpuReady]);
    post({ type: "ready", webgpu: gpu.status });
  } catch (error) {
    post({ type: "crashed", id: null, reason: "fatal", message: `start-up failed: ${error}` });
  }
}

function wantsGpu(backend: Backend, status: WebGpuStatus): boolean {
  return backend === "webgpu" || (backend === "auto" && status.available && !status.fallback);
}

async function run(id: number, code: string, backend: Backend): Promise<void> {
  const pyodide = await pythonReady;
  const gpu = await gpuReady;
  const begun = performance.now();
  const playground = pyodide.pyimport("topos.playground");
  let result: RunResult;
  try {
    result = JSON.parse(playground.run(code) as string) as RunResult;
    if (result.recording && wantsGpu(backend, gpu.status)) {
      result.webgpu = gpu.device
        ? await runKernelsOnGpu(pyodide, gpu.device, gpu.status.detail)
        : { ran: false, detail: `no WebGPU adapter (${gpu.status.detail}): the numpy interpreter ran`, launches: [] };
    }
  } catch (error) {
    // A Python MemoryError (or a subclass: numpy's _ArrayMemoryError), or WebAssembly failing to grow its heap:
    // either way Python's state is not to be trusted.
    const type = (error as { type?: string }).type ?? "";
    const outOfMemory = type.endsWith("MemoryError") || /out of memory|\bOOM\b|allocation failed/i.test(String(error));
    const reason = outOfMemory ? "memory" : "fatal";
    post({ type: "crashed", id, reason, message: String(error) });
    return;
  } finally {
    playground.destroy();
  }
  post({ type: "result", id, result, ms: Math.round(performance.now() - begun) });
}

// Requests run one after another: a run is never interleaved with another one.
let queue: Promise<void> = Promise.resolve();
self.addEventListener("message", (event: MessageEvent<HostToWorker>) => {
  const request = event.data;
  if (request.type === "run") queue = queue.then(() => run(request.id, request.code, request.backend));
});

void start();
