// The training benchmark's page: starts the worker, passes the query's sizes on, logs the
// loading stages, and shows the worker's report. tests/bench/browser_train.mjs reads
// body[data-state] ("done" or "failed") and #result.
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
worker.addEventListener("message", (event: MessageEvent<TrainBenchReply>) => {
  const message = event.data;
  if (message.type === "stage") {
    log.textContent += `${message.stage} ${message.state}${message.detail ? `: ${message.detail}` : ""}\n`;
  } else if (message.type === "report") {
    result.textContent = message.json;
    document.body.dataset.state = "done";
  } else {
    result.textContent = message.error;
    document.body.dataset.state = "failed";
  }
});
worker.addEventListener("error", (event) => {
  result.textContent = `the worker failed: ${event.message}`;
  document.body.dataset.state = "failed";
});
worker.postMessage(request);
