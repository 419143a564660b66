// The training benchmark's page: starts the worker, passes the query's sizes on, logs the
// loading stages, and shows the worker's report. tests/bench/browser_train.mjs reads
// body[data-state] ("done" or "failed") and #result, then may call window.trainChunk(steps, warmup):
// the worker trains a numpy model that many more steps and it resolves with the ms a step.
import type { TrainBenchReply, TrainBenchRequest } from "./train-messages";
import TrainWorker from "./train-worker?worker";

const query = new URLSearchParams(window.location.search);
const request: TrainBenchRequest = {
  steps: Number(query.get("steps") ?? 10),
  warmup: Number(query.get("warmup") ?? 2),
  backends: (query.get("backends") ?? "numpy,webgpu").split(","),
  // The playground's BLAS (web/src/blas-loader.ts): loaded unless blas=0; the backend
  // "numpy-no-blas" times numpy alone beside it, step for step.
  blas: query.get("blas") !== "0",
};
const log = document.getElementById("log")!;
const result = document.getElementById("result")!;

const worker = new TrainWorker();
let chunkDone: ((ms: number) => void) | null = null;
(window as unknown as { trainChunk: (steps: number, warmup: number) => Promise<number> }).trainChunk = (steps, warmup) =>
  new Promise((resolve) => {
    chunkDone = resolve;
    worker.postMessage({ type: "chunk", steps, warmup });
  });
worker.addEventListener("message", (event: MessageEvent<TrainBenchReply>) => {
  const message = event.data;
  if (message.type === "chunk") {
    chunkDone?.(message.ms);
    chunkDone = null;
  } else if (message.type === "stage") {
    log.textContent += `${message.stage} ${message.state}${message.detail ? `: ${message.detail}` : ""}\n`;
  } else if (message.type === "report") {
    result.textContent = message.json;
    document.body.dataset.state = "done";
  } else {
    result.textContent = message.error;
    document.body.dataset.state = "failed";
    chunkDone?.(Number.NaN);
    chunkDone = null;
  }
});
worker.addEventListener("error", (event) => {
  result.textContent = `the worker failed: ${event.message}`;
  document.body.dataset.state = "failed";
});
worker.postMessage(request);
