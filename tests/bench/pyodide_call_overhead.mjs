// The Python around a SIMD product in Pyodide 0.27.7 under Node (tests/pyodide/load.mjs): what
// topos.pyodide.blas.matmul_into costs a call beside the kernel call alone (the same call layout's kernel
// and arguments, topos/pyodide/call_layouts.py), for layouts of the gallery transformer's step (a product
// whose layout was seen before; out given and out None), medians of interleaved calls, in us.
// Not part of any test run.
//
// Usage: node tests/bench/pyodide_call_overhead.mjs

import { pyodideWithBlas } from "../pyodide/load.mjs";

const { pyodide } = await pyodideWithBlas({ blas: false });
console.log(pyodide.runPython(`
import numpy as np
from topos.pyodide import blas, call_layouts
from interleaved import interleaved  # tests/bench/interleaved.py: medians in seconds

blas.MIN_2D_WORK = blas.MIN_BATCHED_WORK = 0  # the tiny product through the kernel too
call_layouts.clear()
rng = np.random.default_rng(0)
r = lambda *shape: rng.standard_normal(shape).astype(np.float32)
cases = [
    ("tiny 4 x 8 x 8", r(4, 8), r(8, 8)),
    ("256 x 32 x 32", r(256, 32), r(32, 32)),
    ("256 x 96 x 32, b transposed", r(256, 96), r(32, 96).T),
    ("attention [16,4,16,8] @ [16,4,8,16]", r(16, 4, 16, 8), r(16, 4, 8, 16)),
]
rows = [f"  {'product':<38} {'kernel':>8} {'call':>8} {'out None':>9} {'Python':>8}"]
for name, a, b in cases:
    out = np.empty(a.shape[:-1] + b.shape[-1:], np.float32)
    blas.matmul_into(a, b, out)
    (layout,) = [layout for layout in call_layouts.LAYOUTS.values() if not isinstance(layout, str) and layout.shape == out.shape]
    kernel, address = layout.kernel, layout.address
    functions = [lambda: kernel(address), lambda: blas.matmul_into(a, b, out), lambda: blas.matmul_into(a, b)]
    alone, call, new = (seconds * 1e6 for seconds in interleaved(functions, 3000))
    call_layouts.clear()
    rows.append(f"  {name:<38} {alone:8.2f} {call:8.2f} {new:9.2f} {call - alone:8.2f}")
"\\n".join(rows)
`));
