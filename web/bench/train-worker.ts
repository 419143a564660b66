// The training benchmark's worker: loads Python as the playground's workers do, then runs
// tests/bench/train_webgpu.py's measure() on the gallery transformer. Python is entered
// through runPythonAsync, so that topos.webgpu may wait for the page's WebGPU (run_sync).
// After the report, "chunk" requests train one more numpy model a chunk of steps at a time, so
// that tests/bench/browser_train.mjs can take turns with a native process (CHUNKS).
import type { TrainBenchReply, TrainBenchRequest, TrainChunkRequest } from "./train-messages";
import { installBlas } from "../src/blas-loader";
import { loadPython } from "../src/python-loader";
import benchSource from "../../tests/bench/train_webgpu.py?raw";
import exampleSource from "../../docs/examples/06_char_transformer.py?raw";

function post(message: TrainBenchReply): void {
  self.postMessage(message);
}

const pythonReady = loadPython(post, "topos");

async function chunk({ steps, warmup }: TrainChunkRequest): Promise<void> {
  const pyodide = await pythonReady;
  pyodide.globals.set("CHUNK_STEPS", steps);
  pyodide.globals.set("CHUNK_WARMUP", warmup);
  const ms = (await pyodide.runPythonAsync(`
import time
if "chunk_run" not in globals():
    chunk_run = train_webgpu.step_runner(example)
    chunk_run(CHUNK_WARMUP)
started = time.perf_counter()
chunk_run(CHUNK_STEPS)
(time.perf_counter() - started) / CHUNK_STEPS * 1e3
`)) as number;
  post({ type: "chunk", ms });
}

self.addEventListener("message", async (event: MessageEvent<TrainBenchRequest | TrainChunkRequest>) => {
  if (event.data.type === "chunk") {
    chunk(event.data).catch((error) => post({ type: "failed", error: String(error) }));
    return;
  }
  const { steps, warmup, backends, blas } = event.data;
  try {
    const pyodide = await pythonReady;
    // The SIMD kernels are in (python-loader.ts); OpenBLAS too unless blas=0, for numpy-openblas.
    const blasDetail = blas ? await installBlas(pyodide) : "off";
    pyodide.FS.mkdirTree("/bench");
    pyodide.FS.writeFile("/bench/train_webgpu.py", benchSource);
    pyodide.globals.set("EXAMPLE_SOURCE", exampleSource);
    pyodide.globals.set("BLAS_DETAIL", blasDetail);
    pyodide.globals.set("REQUEST_JSON", JSON.stringify({ steps, warmup, backends }));
    const json = (await pyodide.runPythonAsync(`
import json, sys
sys.path.insert(0, "/bench")
import train_webgpu
request = json.loads(REQUEST_JSON)
example = train_webgpu.load_example(EXAMPLE_SOURCE)
report = train_webgpu.measure(example, tuple(request["backends"]), request["steps"], request["warmup"])
from topos.pyodide import blas
report["blas"] = {"loaded": BLAS_DETAIL, "installed": blas.installed(), "counts": blas.counts()}
json.dumps(report)
`)) as string;
    post({ type: "report", json });
  } catch (error) {
    post({ type: "failed", error: String(error) });
  }
});
