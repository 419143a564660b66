import { readFileSync } from "node:fs";
import { loadPyodide } from "pyodide";
const dir = "/work/wt/blas/public/pyodide/";
const py = await loadPyodide({ packageCacheDir: dir });
await py.loadPackage(["numpy", "openblas"], { messageCallback: () => {} });
py.FS.mkdirTree("/lib/topos_blas");
const path = "/lib/topos_blas/_fblas.cpython-312-wasm32-emscripten.so";
py.FS.writeFile(path, readFileSync(dir + "scipy-1.14.1-_fblas.cpython-312-wasm32-emscripten.so"));
let t = performance.now();
await py._api.loadDynlib(path, false);
console.log("loadDynlib ms", performance.now() - t);
console.log(py.runPython(`
import sys, time
sys.path.insert(0, "/lib/topos_blas")
t=time.perf_counter()
import _fblas
print("import", time.perf_counter()-t)
import numpy as np
a=np.ones((2,2),np.float32)
for f in (lambda: _fblas.sgemm(1.0,a,a), lambda: a@a, lambda: np.matmul(a,a)):
  t=time.perf_counter()
  for _ in range(2000): f()
  print("call us", (time.perf_counter()-t)*1e6/2000)
"done"
`));
