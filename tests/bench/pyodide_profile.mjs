// Where the gallery transformer's training step goes in Pyodide 0.27.7 under Node, with the
// page's kernels installed (tests/pyodide/load.mjs): wall time a step by primitive (each op's
// forward_into timed, MatMul split by topos.ops.blas's route; Add, Sub, Mul, Div and Where
// their steps, topos.ops.pyodide_binary's), and the rest (the interpreter's
// and autodiff's Python). Wall clock: on a loaded machine read the shares, not the figures.
// Not part of any test run.
//
// Usage: node tests/bench/pyodide_profile.mjs

import { pyodideWithBlas } from "../pyodide/load.mjs";
const { pyodide } = await pyodideWithBlas();
console.log(pyodide.runPython(`
import json, time, collections
import train_webgpu
from topos.ops import registry, blas
import numpy as np
tot = collections.Counter(); cnt = collections.Counter()
def wrap(cls):
    fi = cls.forward_into
    def f(self, inputs, attrs, out, _fi=fi):
        name = self.name
        if name == "MatMul": name += ":" + blas.route(*inputs)
        t = time.perf_counter(); r = _fi(self, inputs, attrs, out); tot[name] += time.perf_counter() - t; cnt[name] += 1; return r
    cls.forward_into = f
# Add, Sub, Mul, Div and Where run as the interpreter's own steps in Pyodide (ops/pyodide_binary.py,
# the SIMD kernels where they fit, numpy's ufunc elsewhere): those steps are timed instead.
from topos.ops import pyodide_binary
def timed(make, label):
    def made(*args):
        inner = make(*args)
        name = label(args)
        def run(values, _inner=inner):
            t = time.perf_counter(); _inner(values); tot[name] += time.perf_counter() - t; cnt[name] += 1
        return run
    return made
binary_names = {np.add: "Add", np.subtract: "Sub", np.multiply: "Mul", np.divide: "Div"}
pyodide_binary.UFUNC_STEP = timed(pyodide_binary.step, lambda args: binary_names[args[0]])
pyodide_binary.WHERE_STEP = timed(pyodide_binary.where_step, lambda args: "Where")
seen=set()
for name, prim in list(registry._REGISTRY.items()):
    cls = type(prim)
    if getattr(prim, "numpy_function", None) in pyodide_binary.UFUNCS or name == "Where": continue
    if cls not in seen and "forward_into" in dir(cls): seen.add(cls); wrap(cls)
example = train_webgpu.load_example(open("/checkout/docs/examples/06_char_transformer.py").read())
run = train_webgpu.step_runner(example)  # the profiled forwards are in place before it records
run(3)
tot.clear(); cnt.clear()
steps = 10
t = time.perf_counter(); run(steps); total = (time.perf_counter() - t) / steps
lines = [f"step {total*1e3:.1f} ms; per step by op:"]
for k, v in tot.most_common(22): lines.append(f"  {k:<20} {v/steps*1e3:7.2f} ms  {cnt[k]//steps} calls")
ops = sum(tot.values()) / steps
lines.append(f"  all ops {ops*1e3:.2f} ms; outside the ops (Python) {(total - ops)*1e3:.2f} ms")
"\\n".join(lines)
`));
