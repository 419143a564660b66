// Pyodide 0.27.7 (the npm package) under Node with the files the site serves (public/pyodide/,
// put there and verified by web/scripts/fetch_pyodide_assets.py), the kernels installed as the
// playground's workers install them: the SIMD kernels through topos.pyodide.load_kernels (the
// module topos.pyodide.wasm_gemm assembles, instantiated by Pyodide's dynamic-library loader); and
// OpenBLAS, the shared library through loadPackage, the _fblas extension written into the file
// system after its sha256 is checked against blas.json, then imported by
// topos.pyodide.blas.load_extension (web/src/blas-loader.ts, the same steps). The engine is the
// checkout's py/ (mounted at /checkout), ahead of anything else on sys.path.
// Used by tests/pyodide/blas.mjs and the benchmarks tests/bench/pyodide_*.mjs.

import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadPyodide } from "pyodide";

export const root = new URL("../..", import.meta.url).pathname;
const served = join(root, "public/pyodide");

const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");

/** Pyodide with numpy and the checkout's topos; with `kernels`, the SIMD kernels, with `blas`, OpenBLAS. Returns `{pyodide, blasMs}`. */
export async function pyodideWithBlas({ blas = true, kernels = true } = {}) {
  const manifest = JSON.parse(readFileSync(join(served, "blas.json"), "utf8"));
  for (const item of [manifest.library, manifest.extension]) {
    const found = sha256(readFileSync(join(served, item.file)));
    if (found !== item.sha256) throw new Error(`${item.file}: sha256 ${found}, blas.json says ${item.sha256}`);
  }
  const lock = JSON.parse(readFileSync(join(served, "pyodide-lock.json"), "utf8"));
  if (lock.packages[manifest.library.package].sha256 !== manifest.library.sha256) {
    throw new Error("blas.json's library is not the lock's openblas");
  }
  const pyodide = await loadPyodide({ packageCacheDir: served, stdout: (line) => console.error(line) });
  await pyodide.loadPackage(["numpy"], { messageCallback: () => {} });
  pyodide.mountNodeFS("/checkout", root);
  pyodide.runPython(`import sys; sys.path[:0] = ["/checkout/py", "/checkout/tests/python", "/checkout/tests/bench"]; import numpy`);
  if (kernels) {
    // The one place the kernels load, as the playground's workers load them (web/src/python-loader.ts).
    const done = pyodide.runPython("import topos.pyodide; topos.pyodide.load_kernels()");
    if (done !== "WebAssembly SIMD kernels") throw new Error(`topos.pyodide.load_kernels(): ${done}`);
  }
  let blasMs = null;
  if (blas) {
    const started = performance.now();
    await pyodide.loadPackage([manifest.library.package], { messageCallback: () => {} });
    const folder = "/lib/topos-blas";
    pyodide.FS.mkdirTree(folder);
    const extension = `${folder}/${manifest.extension.path.split("/").pop()}`;
    pyodide.FS.writeFile(extension, readFileSync(join(served, manifest.extension.file)));
    const module = pyodide.pyimport("topos.pyodide.blas");
    module.load_extension(extension);
    module.destroy();
    blasMs = performance.now() - started;
  }
  return { pyodide, blasMs };
}
