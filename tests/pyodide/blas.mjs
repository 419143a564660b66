// topos.ops.blas in Pyodide 0.27.7 under Node, with the BLAS files the site serves
// (tests/pyodide/load.mjs loads them as the playground's worker does): every case of
// tests/python/blas_cases.py through Pyodide's OpenBLAS against numpy-in-Pyodide.
// tests/python/test_blas.py runs it and reads the last line, a JSON report:
//   {"installed", "failures": [...], "routes": [...], "counts": {...}, "blas_ms", "topos"}
//
// Usage: node tests/pyodide/blas.mjs

import { pyodideWithBlas } from "./load.mjs";

const { pyodide, blasMs } = await pyodideWithBlas();
pyodide.globals.set("BLAS_MS", blasMs);
const report = pyodide.runPython(`
import json
from topos.ops import blas
import blas_cases

failures = blas_cases.check(blas)
json.dumps({
    "installed": blas.installed(),
    "failures": failures,
    "routes": sorted({case[-1] for case in blas_cases.cases()}),
    "counts": blas.counts(),
    "blas_ms": BLAS_MS,
    "topos": blas.__file__,
})
`);
console.log(report);
