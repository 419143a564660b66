// The Python worker: loads Pyodide, numpy and topos in awaited stages that report
// progress (python-loader.ts), then answers run requests one at a time with all readings at once.
// Python is entered so that it may wait for WebGPU (webgpu.ts): the kernels pane's WebGPU
// section and a script's own WebGPU runs go through topos.webgpu's runner on the page's WebGPU.

import type {
  Backend,
  HostToWorker,
  RunResult,
  WebGpuReport,
  WebGpuStatus,
  WorkerToHost,
} from "../protocol";
import { loadPython, stage } from "./python-loader";
import { callPythonJson, webGpuStatus } from "./webgpu";

function post(message: WorkerToHost): void {
  self.postMessage(message);
}

const pythonReady = loadPython(post, "topos.playground");

// WebGPU is Python's own (topos.webgpu's browser device): the adapter is requested once topos is in.
const gpuReady = pythonReady
  .then((pyodide) => stage(post, "webgpu", () => webGpuStatus(pyodide), (status) => status.detail))
  .catch((error): WebGpuStatus => ({ available: false, fallback: false, detail: `WebGPU failed to start: ${error}` }));

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

async function run(id: number, code: string, backend: Backend): Promise<void> {
  const pyodide = await pythonReady;
  const status = await gpuReady;
  const begun = performance.now();
  let result: RunResult;
  try {
    // Entered so that the script's own plan.run(backend="webgpu") and DeviceTrainer can wait for WebGPU.
    result = await callPythonJson<RunResult>(pyodide, "topos.playground", "run", code);
    if (result.recording && wantsGpu(backend, status)) {
      result.webgpu = await callPythonJson<WebGpuReport>(pyodide, "topos.playground", "webgpu_report_json");
    }
  } catch (error) {
    // A Python MemoryError (or a subclass: numpy's _ArrayMemoryError), or WebAssembly failing to grow its heap:
    // either way Python's state is not to be trusted.
    const type = (error as { type?: string }).type ?? "";
    const outOfMemory = type.endsWith("MemoryError") || /out of memory|\bOOM\b|allocation failed/i.test(String(error));
    const reason = outOfMemory ? "memory" : "fatal";
    post({ type: "crashed", id, reason, message: String(error) });
    return;
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
