// topos.ops.blas in Pyodide 0.27.7 (the npm package) under Node, with the BLAS files the site
// serves (public/pyodide/, put there and verified by web/scripts/fetch_pyodide_assets.py):
// every case of tests/python/blas_cases.py through Pyodide's OpenBLAS against numpy-in-Pyodide.
// tests/python/test_blas.py runs it and reads the last line, a JSON report:
//   {"installed", "failures": [...], "routes": [...], "counts": {...}, "import_ms"}
//
// The files are loaded as the playground's worker loads them (web/src/blas-loader.ts): the
// OpenBLAS shared library through loadPackage (its sha256 from Pyodide's lock), the _fblas
// extension written into the file system after its sha256 is checked against blas.json, then
// imported by topos.ops.blas.load_extension. The engine is the checkout's py/ (mounted).
//
// Usage: node tests/pyodide/blas.mjs

import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadPyodide } from "pyodide";

const root = new URL("../..", import.meta.url).pathname;
const served = join(root, "public/pyodide");
const manifest = JSON.parse(readFileSync(join(served, "blas.json"), "utf8"));
const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");

for (const item of [manifest.library, manifest.extension]) {
  const found = sha256(readFileSync(join(served, item.file)));
  if (found !== item.sha256) throw new Error(`${item.file}: sha256 ${found}, blas.json says ${item.sha256}`);
}
const lock = JSON.parse(readFileSync(join(served, "pyodide-lock.json"), "utf8"));
if (lock.packages.openblas.sha256 !== manifest.library.sha256) throw new Error("blas.json's library is not the lock's openblas");

const pyodide = await loadPyodide({ packageCacheDir: served, stdout: (line) => console.error(line) });
await pyodide.loadPackage(["numpy", manifest.library.package], { messageCallback: () => {} });
pyodide.mountNodeFS("/checkout", root);
const folder = "/lib/topos-blas";
pyodide.FS.mkdirTree(folder);
const extension = `${folder}/${manifest.extension.path.split("/").pop()}`;
pyodide.FS.writeFile(extension, readFileSync(join(served, manifest.extension.file)));
pyodide.globals.set("EXTENSION", extension);
const report = pyodide.runPython(`
import json, sys, time
sys.path[:0] = ["/checkout/py", "/checkout/tests/python"]
import numpy as np
from topos.ops import blas
import blas_cases

started = time.perf_counter()
blas.load_extension(EXTENSION)
import_ms = (time.perf_counter() - started) * 1e3
failures = blas_cases.check(blas)
json.dumps({
    "installed": blas.installed(),
    "failures": failures,
    "routes": sorted({case[-1] for case in blas_cases.cases()}),
    "counts": blas.counts(),
    "import_ms": import_ms,
    "topos": blas.__file__,
})
`);
console.log(report);
