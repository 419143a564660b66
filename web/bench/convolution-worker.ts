// The convolution benchmark's worker: loads Python as the playground's workers do, then runs
// tests/bench/convolution.py's device_report() on the page's WebGPU. Python is entered through
// runPythonAsync, so that topos.webgpu may wait for the page's WebGPU (run_sync).
import type { ConvolutionBenchReply, ConvolutionBenchRequest } from "./convolution-messages";
import { loadPython } from "../src/python-loader";
import benchSource from "../../tests/bench/convolution.py?raw";

function post(message: ConvolutionBenchReply): void {
  self.postMessage(message);
}

const pythonReady = loadPython(post, "topos");

self.addEventListener("message", async (event: MessageEvent<ConvolutionBenchRequest>) => {
  try {
    const pyodide = await pythonReady;
    pyodide.FS.mkdirTree("/bench");
    pyodide.FS.writeFile("/bench/convolution.py", benchSource);
    pyodide.globals.set("REQUEST_JSON", JSON.stringify(event.data));
    const json = (await pyodide.runPythonAsync(`
import json, sys
sys.path.insert(0, "/bench")
import convolution
request = json.loads(REQUEST_JSON)
json.dumps(convolution.device_report(request["rounds"], request["shapes"] or None))
`)) as string;
    post({ type: "report", json });
  } catch (error) {
    post({ type: "failed", error: String(error) });
  }
});
