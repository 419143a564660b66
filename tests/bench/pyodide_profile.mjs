// Where the gallery transformer's training step goes in Pyodide 0.27.7 under Node, with the
// page's kernels installed (tests/pyodide/load.mjs): wall time a step by primitive (each op's
// forward_into timed, MatMul split by topos.pyodide.blas's route; Add, Sub, Mul, Div and Where
// their steps, topos.pyodide.binary's), and the rest (the interpreter's
// and autodiff's Python). Wall clock: on a loaded machine read the shares, not the figures.
// Not part of any test run.
//
// Usage: node tests/bench/pyodide_profile.mjs

import { pyodideWithBlas } from "../pyodide/load.mjs";
const { pyodide } = await pyodideWithBlas();
console.log(pyodide.runPython(`
import json, time, collections
import train_webgpu
from topos.ops import registry
from topos.ops.hooks import HOOKS
from topos.pyodide import blas
import numpy as np
tot = collections.Counter(); cnt = collections.Counter()
def wrap(prim):
    fi = prim.forward_into  # the runtime's override where it made one (topos/pyodide/routing.py), else the class's
    def f(inputs, attrs, out, _fi=fi, _name=prim.name):
        name = _name
        if name == "MatMul": name += ":" + blas.route(*inputs)
        t = time.perf_counter(); r = _fi(inputs, attrs, out); tot[name] += time.perf_counter() - t; cnt[name] += 1; return r
    prim.forward_into = f
# Add, Sub, Mul, Div and Where run as the interpreter's own steps in Pyodide (topos.ops.hooks' steps,
# topos/pyodide/binary.py: the SIMD kernels where they fit, numpy's ufunc elsewhere): those steps are timed instead.
def timed(make, name):
    def made(operands, index, fallback):
        inner = make(operands, index, fallback)
        def run(values, _inner=inner):
            t = time.perf_counter(); _inner(values); tot[name] += time.perf_counter() - t; cnt[name] += 1
        return run
    return made
binary_names = {np.add: "Add", np.subtract: "Sub", np.multiply: "Mul", np.divide: "Div"}
for key, make in list(HOOKS.steps.items()):
    HOOKS.steps[key] = timed(make, binary_names.get(key, "Where"))
for name, prim in list(registry._REGISTRY.items()):
    if getattr(prim, "numpy_function", None) in binary_names or name == "Where": continue
    if "forward_into" in dir(prim): wrap(prim)
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
