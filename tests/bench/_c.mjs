import { pyodideWithBlas } from "../pyodide/load.mjs";
const { pyodide } = await pyodideWithBlas({ blas: false });
console.log(pyodide.runPython(`
import time
from topos.ops import blas
import numpy as np
rng = np.random.default_rng(0)
out = []
a3 = rng.standard_normal((2,128,128)).astype(np.float32); b3 = rng.standard_normal((2,128,128)).astype(np.float32); o3 = np.empty((2,128,128), np.float32)
a2 = a3[0].copy(); b2 = b3[0].copy(); o2 = np.empty((128,128), np.float32)
z2 = np.zeros((128,128), np.float32)
def t(name, f, r=20):
    f(); s = time.perf_counter()
    for _ in range(r): f()
    out.append(f"{name}: {(time.perf_counter()-s)/r*1e6:.0f} us")
t("2d random", lambda: blas.matmul_into(a2, b2, o2))
t("2d view of 3d", lambda: blas.matmul_into(a3[0], b3[0], o3[0]))
t("batched", lambda: blas.matmul_into(a3, b3, o3))
t("2d zeros", lambda: blas.matmul_into(z2, z2, o2))
t("2d ones", lambda: blas.matmul_into(np.ones((128,128), np.float32), b2, o2))
"\\n".join(out)
`));
