// What ran the kernels reading, and why not WebGPU when it was not: the status bar's last part.
// The worker decides (web/src/worker.ts: "auto" takes WebGPU only when Python's device found an
// adapter that is no fallback) from Python's status (topos.playground.status: its `reason`); this
// says it in a few words, so that the line fits a phone's status bar. The whole of Python's own
// message stays in the backend picker's tooltip.

import type { Backend, WebGpuReason, WebGpuReport, WebGpuStatus } from "../protocol";

const WHY_NOT: Record<WebGpuReason, string> = {
  "no-webgpu": "this browser has no WebGPU",
  "no-adapter": "WebGPU found no adapter",
  "no-jspi": "this browser has no JSPI, so Python cannot wait for WebGPU",
  "synchronous-entry": "Python was entered synchronously and cannot wait for WebGPU",
  "no-wgpu": "wgpu-py is not installed",
  failed: "the WebGPU adapter failed to start",
  fallback: "the WebGPU adapter is a software fallback (Backend: WebGPU uses it)",
};

/** The line: "kernels on WebGPU (adapter)", or "kernels on numpy: why"; empty before Python has looked. */
export function kernelsLine(backend: Backend, status: WebGpuStatus | null, report: WebGpuReport | undefined): string {
  if (report?.ran) return `kernels on WebGPU (${report.detail})`;
  if (backend === "numpy") return "kernels on numpy (the backend chosen)";
  if (!status) return "";
  const why = status.reason ? WHY_NOT[status.reason] : status.detail;
  if (!status.available) return `kernels on numpy: ${why}`;
  // An adapter the worker asked to run them, on which they failed: the report says how.
  if (report) return `kernels on numpy: ${report.detail}`;
  // A fallback adapter, which "auto" leaves to numpy (else "auto" took WebGPU and a report came).
  return status.reason ? `kernels on numpy: ${why}` : "";
}
