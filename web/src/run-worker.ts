// The run worker: Run mode's Python. It loads Python as the readings worker does
// (python-loader.ts), then runs one script at a time as a program
// (topos.playground.run_main: as __main__, for as long as it takes), posting its output
// in batches while it runs. Nothing stops a run from in here: the page terminates this
// worker (a script in a tight loop never yields), and starts a fresh one for the next run.

import type { PyodideInterface } from "pyodide";
import type { HostToRunWorker, RunWorkerToHost, UserError } from "../protocol";
import { installBlas, kernelsInstalled } from "./blas-loader";
import { WorkerFiles } from "./files/worker-files";
import { crashReason, loadPython } from "./python-loader";

function post(message: RunWorkerToHost): void {
  self.postMessage(message);
}

/** What topos.playground.run_main returns, as JSON: how the run ended. */
interface RunEnd {
  error: UserError | null;
  seconds: number;
}

/**
 * The timer topos.playground.program asks for: it raises a signal in Python once held
 * output is due, while the script is busy elsewhere. Python's eval loop reads Pyodide's
 * interrupt buffer every few dozen checks of its eval breaker (that is how Pyodide delivers
 * KeyboardInterrupt), and CPython runs the handler of the signal whose number it finds
 * there. No other thread writes the buffer (that would take a SharedArrayBuffer, which a
 * page without COOP/COEP headers lacks), so a plain object serves: its element reads as
 * the signal once the time is due. It is installed only while output is held, so that
 * a script pays for the reads only then.
 */
function wakeTimer(pyodide: PyodideInterface, signal: number) {
  let due = Infinity;
  const buffer = {
    get 0(): number {
      if (performance.now() < due) return 0;
      due = Infinity;
      return signal;
    },
    // Pyodide clears the element after reading it; the getter has done that already.
    set 0(_cleared: number) {},
  };
  return {
    signal,
    start(milliseconds: number): void {
      due = performance.now() + milliseconds;
      pyodide.setInterruptBuffer(buffer as unknown as Int32Array);
    },
    stop(): void {
      due = Infinity;
      pyodide.setInterruptBuffer(undefined as unknown as Int32Array);
    },
  };
}

const pythonReady = loadPython(post, "topos.playground");
// A program is what trains: where the SIMD kernels could not be installed (no WebAssembly
// SIMD), its worker loads OpenBLAS (blas-loader.ts) before the first run. Without either,
// products stay in numpy.
const blasReady = pythonReady
  .then((pyodide) => (kernelsInstalled(pyodide) ? undefined : installBlas(pyodide)))
  .catch((error) => console.warn(`the BLAS did not load (products stay in numpy): ${error}`));
/** The user's files: every run starts in a working directory that holds them (files/worker-files.ts). */
const files = new WorkerFiles(pythonReady);

async function start(): Promise<void> {
  try {
    await pythonReady;
    post({ type: "run-ready" });
  } catch (error) {
    post({ type: "crashed", id: null, reason: "fatal", message: `start-up failed: ${error}` });
  }
}

async function runMain(id: number, code: string): Promise<void> {
  const pyodide = await pythonReady;
  await blasReady;
  const timer = wakeTimer(pyodide, pyodide.runPython("import signal; int(signal.SIGUSR1)") as number);
  const playground = pyodide.pyimport("topos.playground");
  const run = playground.run_main;
  const send = (batch: string) => post({ type: "run-output", id, ...JSON.parse(batch) });
  post({ type: "run-started", id });
  try {
    await files.prepare();
    // Entered through callPromising, so that the script may wait on the browser's promises
    // (WebGPU's, through pyodide.ffi.run_sync): a plain call would not let it.
    const end = JSON.parse((await run.callPromising(code, send, timer)) as string) as RunEnd;
    const written = await files.written(id);
    self.postMessage(written.message, written.transfer);
    post({ type: "run-end", id, error: end.error, seconds: end.seconds });
  } catch (error) {
    post({ type: "crashed", id, reason: crashReason(error), message: String(error) });
  } finally {
    timer.stop();
    run.destroy();
    playground.destroy();
  }
}

// One run at a time: the page sends the next only after this one ended (or replaces this worker).
let queue: Promise<void> = Promise.resolve();
self.addEventListener("message", (event: MessageEvent<HostToRunWorker>) => {
  const request = event.data;
  if (request.type === "run-main") queue = queue.then(() => runMain(request.id, request.code));
  else if (request.type === "files") queue = queue.then(() => files.replace(request.files));
});

void start();
