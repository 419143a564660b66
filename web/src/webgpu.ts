// Python drives the browser's WebGPU itself: topos.webgpu's runner over its browser device
// (py/topos/webgpu/browser_device.py), which waits for WebGPU's promises with
// pyodide.ffi.run_sync. What Python cannot do is choose how JavaScript enters it, and
// run_sync works only in Python entered with stack switching (JavaScript Promise
// Integration, JSPI): through callPromising, as callPython does. In a browser without
// JSPI it calls Python plainly; Python then says that it cannot wait for WebGPU, and
// the numpy interpreter runs.

import type { PyodideInterface } from "pyodide";
import type { PyCallable } from "pyodide/ffi";
import type { WebGpuStatus } from "../protocol";

const canWait = new WeakMap<PyodideInterface, Promise<boolean>>();

/** Whether Python entered with stack switching may wait for promises (false in a browser without JSPI). */
function pythonCanWait(pyodide: PyodideInterface): Promise<boolean> {
  let answer = canWait.get(pyodide);
  if (answer === undefined) {
    // runPythonAsync enters Python with stack switching wherever the browser has it.
    answer = pyodide.runPythonAsync("from pyodide.ffi import can_run_sync\ncan_run_sync()") as Promise<boolean>;
    canWait.set(pyodide, answer);
  }
  return answer;
}

/** Call a Python function so that it may wait for WebGPU (pyodide.ffi.run_sync); plainly where there is no JSPI. */
export async function callPython(pyodide: PyodideInterface, fn: PyCallable, ...args: unknown[]): Promise<unknown> {
  return (await pythonCanWait(pyodide)) ? await fn.callPromising(...args) : fn(...args);
}

/** Call `module.name(...args)` as callPython does, where the function returns JSON text; returns it parsed. */
export async function callPythonJson<T>(pyodide: PyodideInterface, module: string, name: string, ...args: unknown[]): Promise<T> {
  const imported = pyodide.pyimport(module);
  try {
    // An attribute's proxy is the module proxy's to destroy.
    return JSON.parse((await callPython(pyodide, imported[name] as PyCallable, ...args)) as string) as T;
  } finally {
    imported.destroy();
  }
}

/** The page's WebGPU adapter as Python's device finds it (requested here, once), or why there is none. */
export function webGpuStatus(pyodide: PyodideInterface): Promise<WebGpuStatus> {
  return callPythonJson<WebGpuStatus>(pyodide, "topos.playground", "status_json");
}
