// The benchmark's baseline page: a module worker loads Pyodide and imports numpy,
// exactly as the playground's first two stages do, and the page marks itself ready.
import BareWorker from "./bare-worker?worker";

const worker = new BareWorker();
worker.addEventListener("message", () => {
  // Milliseconds since navigation, as the playground's data-readings-at.
  document.body.dataset.readingsAt = performance.now().toFixed(1);
  document.body.dataset.state = "ready";
});
