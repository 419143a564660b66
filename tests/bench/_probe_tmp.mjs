import { pyodideWithBlas } from "/work/wt/reduce/tests/pyodide/load.mjs";
const { pyodide } = await pyodideWithBlas();
console.log(pyodide.runPython(`
import time, collections
import train_webgpu
from topos.ops import registry, reduce as R, elementwise
import numpy as np
seen = collections.Counter(); tt = collections.Counter()
for name in ("Sum", "Max", "Exp"):
    cls = type(registry._REGISTRY[name])
    fi = cls.forward_into
    def f(self, inputs, attrs, out, _fi=fi):
        x = inputs[0]
        key = (self.name, x.shape, str(x.dtype), x.flags.c_contiguous, attrs.get("axes"), attrs.get("keepdims"), out.shape, out.flags.c_contiguous, R.ones_product(x, attrs["axes"]) is not None if "axes" in attrs else None)
        t = time.perf_counter(); r = _fi(self, inputs, attrs, out); tt[key] += time.perf_counter() - t
        seen[key] += 1; return r
    cls.forward_into = f
example = train_webgpu.load_example(open("/checkout/docs/examples/06_char_transformer.py").read())
run = train_webgpu.step_runner(example)
run(2); seen.clear(); tt.clear(); run(5)
"\\n".join(f"{k} {v//5} {tt[k]/5*1e3:.3f}ms" for k, v in sorted(seen.items(), key=lambda kv: -tt[kv[0]]))
`));
