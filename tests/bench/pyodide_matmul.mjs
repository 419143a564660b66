// Which kernel multiplies in the page, and which products pay for a call (topos.pyodide.blas's
// MIN_2D_WORK and MIN_BATCHED_WORK): numpy-in-Pyodide's own matmul, OpenBLAS's ?gemm
// (Pyodide 0.27.7's, the files the site serves) and the project's WebAssembly SIMD kernels
// (topos.pyodide.wasm_gemm), each through topos.pyodide.blas, float32 and float64, medians of
// interleaved repeats, for 2-D products from tiny to the gallery transformer's and batched ones;
// then GELU and its gradient per element: the tanh form (what natively runs), the exp form in
// numpy (topos.pyodide.kernels), the SIMD pass (topos.pyodide.wasm_gelu), beside np.tanh and np.exp
// and their SIMD passes (topos.pyodide.wasm_exp).
// Not part of any test run.
//
// Usage: node tests/bench/pyodide_matmul.mjs

import { pyodideWithBlas } from "../pyodide/load.mjs";

const { pyodide } = await pyodideWithBlas();
console.log(pyodide.runPython(`
import numpy as np
from topos.pyodide import blas
from interleaved import interleaved as timed  # tests/bench/interleaved.py: medians in seconds

def through(a, b, out, kernels):
    def run():
        with blas.suspended(kernels):
            blas.matmul_into(a, b, out)
    return run

rng = np.random.default_rng(0)
rows = ["medians of interleaved repeats, microseconds a product; GFLOP/s in brackets"]
rows.append(f"  {'shape':<24} {'dtype':<8} {'numpy':>16} {'OpenBLAS':>16} {"SIMD":>16}")
shapes = [((), m, k, n) for m, k, n in [(4, 4, 8), (8, 8, 8), (16, 16, 16), (16, 16, 32), (32, 32, 32), (64, 64, 64),
          (256, 32, 32), (256, 32, 96), (256, 32, 128), (256, 128, 32), (32, 256, 128), (256, 40, 32), (128, 128, 128), (256, 256, 256)]]
shapes += [((64,), 16, 16, 8), ((64,), 16, 8, 16), ((8,), 32, 32, 32), ((4,), 64, 64, 64), ((2,), 128, 128, 128)]
# Every product through the kernel timed (the thresholds are what this measures).
blas.MIN_2D_WORK = blas.MIN_BATCHED_WORK = 0
from topos.pyodide import call_layouts
call_layouts.clear()  # decisions made under the old thresholds (none yet, but the call layouts would keep them)
for dtype in (np.float32, np.float64):
    for batch, m, k, n in shapes:
        a = rng.standard_normal(batch + (m, k)).astype(dtype)
        b = rng.standard_normal(batch + (k, n)).astype(dtype)
        out = np.empty(batch + (m, n), dtype)
        work = m * n * k * max(1, int(np.prod(batch)))
        repeats = max(5, min(300, int(3e7 / work)))
        plain, openblas, simd = timed([lambda: np.matmul(a, b, out=out), through(a, b, out, ("simd",)), through(a, b, out, ("openblas",))], repeats)
        cells = [f"{t * 1e6:9.1f} ({2 * work / t / 1e9:4.1f})" for t in (plain, openblas, simd)]
        rows.append(f"  {str(batch + (m, k, n)):<24} {np.dtype(dtype).name:<8} " + " ".join(f"{c:>16}" for c in cells))

from topos.pyodide import kernels as simd
from topos.ops.registry import _REGISTRY
x = rng.standard_normal((256, 128)).astype(np.float32)
g = rng.standard_normal((256, 128)).astype(np.float32)
o = np.empty_like(x)

def tanh_form(name, *inputs):
    def run():  # the op's own class: the tanh form, as natively
        type(_REGISTRY[name]).forward_into(_REGISTRY[name], list(inputs), {}, o)
    return run

def numpy_form(function, *inputs):
    def run():
        with blas.suspended(("simd",)):
            function(*inputs, o)
    return run

rows.append("")
rows.append("float32 [256, 128], nanoseconds an element, medians of interleaved repeats")
cases = [("np.tanh", lambda: np.tanh(x, out=o)), ("tanh, SIMD pass", lambda: simd.tanh(x, o)),
         ("np.exp", lambda: np.exp(x, out=o)), ("exp, SIMD pass", lambda: simd.exp(x, o)),
         ("GELU, tanh form", tanh_form("Gelu", x)), ("GELU, exp form (numpy)", numpy_form(simd.gelu_into, x)),
         ("GELU, SIMD pass", lambda: simd.gelu_into(x, o)),
         ("GELU grad, tanh form", tanh_form("GeluGrad", g, x)), ("GELU grad, exp form (numpy)", numpy_form(simd.gelu_grad_into, g, x)),
         ("GELU grad, SIMD pass", lambda: simd.gelu_grad_into(g, x, o))]
for (label, _), seconds in zip(cases, timed([f for _, f in cases], 50)):
    rows.append(f"  {label:<30} {seconds / x.size * 1e9:7.2f}")
"\\n".join(rows)
`));
