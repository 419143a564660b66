// Which products pay for a BLAS call in Pyodide (topos.ops.blas's MIN_2D_WORK and
// MIN_BATCHED_WORK): numpy-in-Pyodide's own matmul against ?gemm through topos.ops.blas
// (Pyodide 0.27.7's OpenBLAS, the files the site serves), float32, medians of interleaved
// repeats, for 2-D products from tiny to the gallery transformer's and batched ones.
// Not part of any test run.
//
// Usage: node tests/bench/pyodide_matmul.mjs

import { pyodideWithBlas } from "../pyodide/load.mjs";

const { pyodide } = await pyodideWithBlas();
console.log(pyodide.runPython(`
import statistics, time
import numpy as np
from topos.ops import blas

def timed(f, repeats):
    f()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        f()
        times.append(time.perf_counter() - started)
    return statistics.median(times)

rng = np.random.default_rng(0)
rows = ["float32, median of interleaved repeats: numpy-in-Pyodide vs ?gemm through topos.ops.blas"]
shapes = [((), m, k, n) for m, k, n in [(4, 4, 4), (8, 8, 8), (16, 16, 16), (16, 16, 32), (32, 32, 32), (64, 64, 64),
          (256, 32, 32), (256, 32, 96), (256, 32, 128), (256, 128, 32), (32, 256, 128), (128, 128, 128), (256, 256, 256)]]
shapes += [((64,), 16, 16, 8), ((64,), 16, 8, 16), ((8,), 32, 32, 32), ((4,), 64, 64, 64), ((2,), 128, 128, 128)]
for batch, m, k, n in shapes:
    a = rng.standard_normal(batch + (m, k)).astype(np.float32)
    b = rng.standard_normal(batch + (k, n)).astype(np.float32)
    out = np.empty(batch + (m, n), np.float32)
    repeats = max(5, min(200, int(2e7 / (m * n * k * max(1, int(np.prod(batch)))))))
    plain = timed(lambda: np.matmul(a, b, out=out), repeats)
    way = blas.route(a, b)
    if batch:
        routed = timed(lambda: [blas._gemm_into(blas._routines[a.dtype], a[i], b[i], out[i]) for i in np.ndindex(*batch)], repeats)
    else:
        routed = timed(lambda: blas._gemm_into(blas._routines[a.dtype], a, b, out), repeats)
    work = m * n * k
    rows.append(f"  {str(batch + (m, k, n)):<22} work {work:>9}  numpy {plain * 1e6:9.1f} us  gemm {routed * 1e6:9.1f} us  "
                f"gemm/numpy {routed / plain:5.2f}  routed: {way}")
"\\n".join(rows)
`));
