"""The in-page CPU runtime: numpy in Pyodide, with the project's WebAssembly SIMD kernels.

numpy in Pyodide has no BLAS and runs its loops as scalar WebAssembly. This package writes
WebAssembly SIMD kernels (``wasm_assembler`` and the ``wasm_*`` writers: the products, GELU,
exp and tanh, the sums and maxima, the binary ops; ``wasm_gemm`` assembles the module), routes
the numpy forwards through them (``routing``, into ``topos.ops.hooks``; ``blas`` and
``call_layouts`` for the products, ``kernels``, ``binary`` and ``row_derivatives`` for the
rest), and reads array addresses from numpy's structs (``wasm_heap``). ``topos.ops`` and
``topos.model`` never import it: natively nothing here runs, and the forwards are numpy's.

``load_kernels`` is the one place the kernels are loaded: the playground's workers
(web/src/python-loader.ts), the Pyodide tests (tests/pyodide/load.mjs) and the browser cases
page (tests/browser/cases-page.mjs) all call it.
"""

from ..ops import hooks
from . import blas, routing, wasm_gemm


def install_kernels(exports):
    """This runtime's routing (``routing.install``) and the SIMD kernels ``exports`` (export name to
    a callable taking its arguments' address; ``blas.install_kernels``)."""
    routing.install()
    blas.install_kernels(exports)


def uninstall():
    """numpy's forwards alone again (the benchmarks' kernels-off side, and the tests)."""
    blas.uninstall()
    hooks.restore()


def load_kernels():
    """In Pyodide: install the routing and the SIMD kernels, instantiated by Pyodide's own
    dynamic-library loader so that they work in the memory numpy's arrays live in (their data
    pointers are its addresses). Where the browser lacks WebAssembly SIMD, only the routing
    (products then stay in numpy until the page loads OpenBLAS: web/src/blas-loader.ts).
    Returns what was done."""
    import js  # Pyodide's modules: this runs in Pyodide only
    import pyodide_js
    from pyodide.ffi import to_js

    routing.install()
    code = to_js(wasm_gemm.module_bytes())
    if not js.WebAssembly.validate(code):
        return "no WebAssembly SIMD: products stay in numpy until the BLAS loads"
    flags = to_js({"loadAsync": False, "nodelete": True, "allowUndefined": True}, dict_converter=js.Object.fromEntries)
    exports = pyodide_js._module.loadWebAssemblyModule(code, flags, "topos-wasm-gemm.so", js.Object.new(), 0)
    blas.install_kernels({name: getattr(exports, name) for name in blas.KERNEL_EXPORTS if hasattr(exports, name)})
    return "WebAssembly SIMD kernels"
