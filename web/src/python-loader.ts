// Loading Python in a worker: Pyodide, numpy and topos in awaited stages that report
// progress. Both workers load Python this way: the readings worker (worker.ts) and the
// run worker (run-worker.ts). Everything comes from the site's own pyodide/ folder,
// wherever the site lives.

import type { PyodideInterface } from "pyodide";
import type { StageMessage, StageName } from "../protocol";

// The site may be served under any path (docs/deploy.md), so the folder is found from this
// script's own URL: it lies one folder below the site's root (assets/ in the build, src/ on
// the dev server), and pyodide/ beside that folder.
export const PYODIDE_URL = new URL("../pyodide/", self.location.href).href;
const started = performance.now();

/** Where a worker sends its stage messages (to the page). */
export type PostStage = (message: StageMessage) => void;

/** Run one start-up stage, reporting "started", then "done" with the time since the worker started, or "failed". */
export async function stage<T>(post: PostStage, name: StageName, work: () => Promise<T>, detail?: (value: T) => string): Promise<T> {
  post({ type: "stage", stage: name, state: "started" });
  try {
    const value = await work();
    post({ type: "stage", stage: name, state: "done", ms: Math.round(performance.now() - started), detail: detail?.(value) });
    return value;
  } catch (error) {
    post({ type: "stage", stage: name, state: "failed", detail: String(error) });
    throw error;
  }
}

async function loadPyodide(): Promise<PyodideInterface> {
  // Pyodide's own loader is served next to its files, so it is imported at run time rather than bundled.
  const module = (await import(/* @vite-ignore */ `${PYODIDE_URL}pyodide.mjs`)) as typeof import("pyodide");
  return module.loadPyodide({ indexURL: PYODIDE_URL });
}

/** The topos wheel, fetched while Pyodide starts (its manifest names the file and its sha256). */
async function fetchToposWheel(): Promise<{ file: string; bytes: Uint8Array }> {
  const manifest = (await (await fetch(`${PYODIDE_URL}topos-wheel.json`, { cache: "no-cache" })).json()) as { file: string; sha256: string };
  // The sha256 in the query makes a rebuilt wheel a new URL for the browser's cache.
  const response = await fetch(`${PYODIDE_URL}${manifest.file}?sha256=${manifest.sha256}`);
  if (!response.ok) throw new Error(`${manifest.file}: HTTP ${response.status}`);
  return { file: manifest.file, bytes: new Uint8Array(await response.arrayBuffer()) };
}

/**
 * The wheel unpacked straight into site-packages: it is pure Python with no dependencies to
 * resolve, so what an installer would add (micropip, and the packaging it needs, loaded and
 * imported on every start) is time the page does not spend.
 */
function installTopos(pyodide: PyodideInterface, wheel: { file: string; bytes: Uint8Array }): void {
  const sitePackages = pyodide.runPython("import sysconfig; sysconfig.get_paths()['purelib']") as string;
  pyodide.unpackArchive(wheel.bytes, "wheel", { extractDir: sitePackages });
  pyodide.runPython("import importlib; importlib.invalidate_caches()");
}

/**
 * Python with numpy and topos, `module` imported. The stages overlap where they can: the
 * wheel downloads while Pyodide starts, and is unpacked while numpy's files are still
 * arriving; `module` is imported once both are in.
 */
export function loadPython(post: PostStage, module: string): Promise<PyodideInterface> {
  const toposWheel = fetchToposWheel();
  return (async () => {
    const pyodide = await stage(post, "pyodide", loadPyodide);
    const numpyLoaded = stage(post, "numpy", async () => {
      await pyodide.loadPackage(["numpy"], { messageCallback: () => {} });
      pyodide.runPython("import numpy");
    });
    await stage(post, "topos", async () => {
      installTopos(pyodide, await toposWheel);
      await numpyLoaded;
      pyodide.runPython(`import ${module}`);
      // The SIMD kernels: no download; installing runs each a while (about 30-70 ms under Node)
      // so that V8 has optimized them before the first training step.
      try {
        loadKernels(pyodide);
      } catch (error) {
        console.warn(`the SIMD kernels did not install (products stay in numpy): ${error}`);
      }
    });
    return pyodide;
  })();
}

/**
 * The in-page CPU runtime and its WebAssembly SIMD kernels, loaded where every Pyodide of the
 * project loads them: topos.pyodide.load_kernels (also called by tests/pyodide/load.mjs and
 * tests/browser/cases-page.mjs). Returns what was done, or why not.
 */
export function loadKernels(pyodide: PyodideInterface): string {
  return pyodide.runPython("import topos.pyodide; topos.pyodide.load_kernels()") as string;
}

/**
 * Why Python failed during a run: "memory" for a Python MemoryError (or a subclass: numpy's
 * _ArrayMemoryError) or WebAssembly failing to grow its heap, else "fatal". Either way
 * Python's state is not to be trusted, and the page replaces the worker.
 */
export function crashReason(error: unknown): "memory" | "fatal" {
  const type = (error as { type?: string }).type ?? "";
  return type.endsWith("MemoryError") || /out of memory|\bOOM\b|allocation failed/i.test(String(error)) ? "memory" : "fatal";
}
