// topos.pyodide.blas in Pyodide 0.27.7 under Node, with the BLAS files the site serves
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
import numpy as np
import blas_cases
from topos.ops import hooks
from topos.ops.registry import _REGISTRY
from topos.pyodide import blas, call_layouts
from topos.pyodide import kernels as simd
installed = blas.installed()
failures = blas_cases.check(blas)  # the SIMD kernels take every routed product
layouts = sorted({layout if isinstance(layout, str) else "kernel" for layout in call_layouts.LAYOUTS.values()})
with blas.suspended(("simd",)):
    failures += [f"OpenBLAS: {failure}" for failure in blas_cases.check(blas)]
# In Pyodide the ops themselves take the exp form; the reference is its tanh form, in float64
# (the tanh form as the ops' own classes write it, natively).
def tanh_form(name):
    return lambda *inputs: type(_REGISTRY[name]).forward(_REGISTRY[name], list(inputs), {})
assert ("Gelu", "forward_into") in hooks.HOOKS.overridden
failures += blas_cases.check_gelu(
    lambda x: _REGISTRY["Gelu"].forward([x], {}),
    lambda g, x: _REGISTRY["GeluGrad"].forward([g, x], {}),
    tanh_form("Gelu"), tanh_form("GeluGrad"), simd.GELU_TOLERANCE)
# exp and tanh: the Exp and Tanh rows' forwards themselves (the SIMD kernels where they fit) against
# exp and tanh in float64, and with the kernels suspended (numpy's own) against the same bounds.
exp_row, tanh_row = _REGISTRY["Exp"].numpy_function, _REGISTRY["Tanh"].numpy_function
for suspend in ((), ("simd",)):
    with blas.suspended(suspend):
        failures += [f"{suspend}: {failure}" for failure in blas_cases.check_exp(exp_row, simd.EXP_TOLERANCE)]
        failures += [f"{suspend}: {failure}" for failure in blas_cases.check_tanh(tanh_row, simd.TANH_TOLERANCE)]
# The Sum row: the SIMD sums where they fit, counted, against the sum in float64; suspended, none.
sum_calls = []
for name in ("colsum", "rowsum", "rowmax"):
    simd.KERNELS[name] = (lambda kernel, name: lambda a: (sum_calls.append(name), kernel(a)))(simd.KERNELS[name], name)
failures += blas_cases.check_sum(_REGISTRY, lambda: len(sum_calls))
with blas.suspended(("simd",)):
    failures += [f"suspended: {f}" for f in blas_cases.check_sum(_REGISTRY, lambda: len(sum_calls)) if "kernel calls" not in f]
max_calls = lambda: sum_calls.count("rowmax")
failures += blas_cases.check_max(_REGISTRY, max_calls)
with blas.suspended(("simd",)):
    failures += [f"suspended: {f}" for f in blas_cases.check_max(_REGISTRY, max_calls) if "kernel calls" not in f]
# Add, Sub, Mul, Div and Where: the SIMD kernels where they fit, counted, bit for bit numpy's own
# (the same machine, the same IEEE operations); suspended, numpy's, with no kernel calls.
import binary_cases
from topos.pyodide import binary
binary_calls = []
for name in ("add", "sub", "mul", "div", "where"):
    simd.KERNELS[name] = (lambda kernel, name: lambda a: (binary_calls.append(name), kernel(a)))(simd.KERNELS[name], name)
where_forward = lambda c, x, y, out: _REGISTRY["Where"].forward_into([c, x, y], {}, out)
failures += binary_cases.check_binary(binary, where_forward, lambda: len(binary_calls))
with blas.suspended(("simd",)):
    failures += [f"suspended: {f}" for f in binary_cases.check_binary(binary, where_forward, lambda: len(binary_calls)) if "kernel calls" not in f]
# SoftmaxGrad, LogSoftmaxGrad and LayerNormGrad's forwards (topos/pyodide/row_derivatives.py, in
# place of topos.ops.rows' in Pyodide): the binary kernels and row sums where they fit, against their formulas in float64.
import rows_cases
from topos.pyodide import row_derivatives
row_calls = lambda: len(binary_calls) + sum_calls.count("rowsum")
failures += rows_cases.check_rows(row_derivatives, row_calls)
with blas.suspended(("simd",)):
    failures += [f"suspended: {f}" for f in rows_cases.check_rows(row_derivatives, row_calls, kernels=False)]
# Data addresses read from the arrays' structs (topos/pyodide/wasm_heap.py) against __array_interface__:
# owning arrays, views, slices, broadcasts, dtypes, and arrays made after the memory grew.
from topos.pyodide import wasm_heap
heap_mismatches = []
big = np.zeros(48 << 20, np.uint8)  # 48 MiB: the WebAssembly memory grows past where it was
for x in (np.zeros((5, 7), np.float32), np.ones((3, 4, 6)), big, np.arange(10, dtype=np.int8), np.empty(0)):
    for view in (x, x.T, x[1:], x.reshape(-1)[2::3], np.broadcast_to(x, (2,) + x.shape)):
        if wasm_heap.address(view) != view.__array_interface__["data"][0]:
            heap_mismatches.append(f"{view.shape} {view.strides} {view.dtype}")
del big
json.dumps({
    "binary_kernels": sorted(set(binary_calls)) if np.add in hooks.HOOKS.steps else None,
    "heap_read": wasm_heap._HEAP is not None,
    "rows_pyodide": ("SoftmaxGrad", "forward_into") in hooks.HOOKS.overridden,
    "call_layouts": layouts,
    "heap_mismatches": heap_mismatches,
    "sum_kernels": sorted(set(sum_calls)) if {("Sum", "forward_into"), ("Max", "forward")} <= hooks.HOOKS.overridden else None,
    "installed": installed,
    "gelu_kernels": sorted(simd.KERNELS),
    "exp_row": exp_row is simd.exp and tanh_row is simd.tanh,
    "failures": failures,
    "routes": sorted({case[-1] for case in blas_cases.cases()}),
    "counts": blas.counts(),
    "blas_ms": BLAS_MS,
    "topos": blas.__file__,
})
`);
console.log(report);
