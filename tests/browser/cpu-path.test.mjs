// The page's CPU path (topos.pyodide, loaded by topos.pyodide.load_kernels): the readings worker installs the
// project's WebAssembly SIMD matrix kernels as topos is imported, with no download (headless
// Chromium has WebAssembly SIMD, so OpenBLAS is never fetched), and products routed through them
// agree with numpy's own to the documented tolerance, k * eps * (|a| @ |b|): 2-D, odd shapes,
// transposed operands, attention's batches, float32 and float64. GELU takes its exp form there,
// and float32 exp and tanh their SIMD kernels (topos.pyodide.wasm_exp), within their tolerances.

import assert from "node:assert/strict";
import { test } from "node:test";
import { openBrowser, openPlayground, pasteCode, waitForPane } from "./harness.mjs";

const CHECK = `import numpy as np
from topos.ops.hooks import HOOKS
from topos.pyodide import blas
from topos.pyodide import kernels as simd

rng = np.random.default_rng(0)
worst = 0.0
shapes = [((256, 32), (32, 96)), ((67, 31), (31, 53)), ((16, 4, 16, 16), (16, 4, 16, 8)), ((3, 64, 96), (3, 96, 80))]
for dtype in (np.float32, np.float64):
    for left, right in shapes:
        a = rng.standard_normal(left).astype(dtype)
        b = rng.standard_normal(right).astype(dtype)
        for x, y in ((a, b), (np.ascontiguousarray(a.swapaxes(-1, -2)).swapaxes(-1, -2), b)):
            bound = x.shape[-1] * np.finfo(dtype).eps * (np.abs(x).astype(np.float64) @ np.abs(y).astype(np.float64))
            error = np.abs(blas.matmul_into(x, y).astype(np.float64) - np.matmul(x, y).astype(np.float64))
            worst = max(worst, float(np.max(error / (bound + np.finfo(dtype).tiny))))
print("kernels:", blas.installed())
print("products through them:", blas.counts()["blas"] > 0)
print("within tolerance:", worst <= 1.0)
print("elementwise kernels:", sorted(simd.KERNELS))
x = rng.standard_normal(4099).astype(np.float32) * 10
exp_error = np.abs(simd.exp(x).astype(np.float64) - np.exp(x.astype(np.float64))) / np.exp(x.astype(np.float64))
tanh_error = np.abs(simd.tanh(x).astype(np.float64) - np.tanh(x.astype(np.float64)))
tanh_bound = simd.TANH_TOLERANCE[0] * np.finfo(np.float32).eps * np.abs(np.tanh(x.astype(np.float64)))
print("exp and tanh within tolerance:", bool(exp_error.max() <= simd.EXP_TOLERANCE[0] * np.finfo(np.float32).eps), bool(np.all(tanh_error <= tanh_bound)))
print("gelu exp form:", ("Gelu", "forward_into") in HOOKS.overridden)
`;

test("the readings worker multiplies through its SIMD kernels, downloading nothing more, and agrees with numpy", async () => {
  const browser = await openBrowser();
  try {
    const requested = [];
    browser.context.on("request", (request) => requested.push(request.url()));
    const { page, errors } = await openPlayground(browser.context);
    await pasteCode(page, CHECK);
    const text = await waitForPane(page, "output", (shown) => shown.includes("gelu exp form:"), 120_000);
    assert.match(text, /kernels: simd\b/);
    assert.match(text, /products through them: True/);
    assert.match(text, /within tolerance: True/);
    assert.match(text, /gelu exp form: True/);
    assert.match(text, /elementwise kernels: \['add', 'colsum', 'div', 'exp', 'gelu', 'gelu_grad', 'mul', 'rowmax', 'rowsum', 'sub', 'tanh', 'where'\]/);
    assert.match(text, /exp and tanh within tolerance: True True/);
    assert.deepEqual(requested.filter((url) => /openblas|_fblas|blas\.json/.test(url)), []);
    assert.deepEqual(browser.foreign, []);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
  }
});
