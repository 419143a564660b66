// Loads Pyodide and numpy from the site's own pyodide/ folder (as the playground's first stages do), then says so.
export {};

// This script lies in the site's assets/ folder (bench/ on the dev server), one below the root.
const PYODIDE_URL = new URL("../pyodide/", self.location.href).href;

const pyodideModule = (await import(/* @vite-ignore */ `${PYODIDE_URL}pyodide.mjs`)) as typeof import("pyodide");
const pyodide = await pyodideModule.loadPyodide({ indexURL: PYODIDE_URL });
await pyodide.loadPackage(["numpy"], { messageCallback: () => {} });
pyodide.runPython("import numpy");
self.postMessage("ready");
