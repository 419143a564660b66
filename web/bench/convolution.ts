// The convolution benchmark's page: starts the worker, passes the query's rounds and shapes on,
// logs the loading stages, and shows the worker's report. tests/bench/convolution_browser.mjs
// reads body[data-state] ("done" or "failed") and #result.
import type { ConvolutionBenchReply, ConvolutionBenchRequest } from "./convolution-messages";
import ConvolutionWorker from "./convolution-worker?worker";

const query = new URLSearchParams(window.location.search);
const request: ConvolutionBenchRequest = {
  rounds: Number(query.get("rounds") ?? 5),
  shapes: (query.get("shapes") ?? "").split(",").filter((name) => name !== ""),
};
const log = document.getElementById("log")!;
const result = document.getElementById("result")!;

const worker = new ConvolutionWorker();
worker.addEventListener("message", (event: MessageEvent<ConvolutionBenchReply>) => {
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
