"""Matrix products through a real kernel where numpy has none (numpy in Pyodide), and nowhere else.

Natively numpy's matmul already calls a BLAS, and this module changes nothing: no kernels
are installed, and ``matmul_into(a, b, out)`` is ``np.matmul(a, b, out=out)``. numpy in
Pyodide is built without one, and multiplies at 1-2 GFLOP/s. There the playground's workers
install one of two kinds (``topos.pyodide.load_kernels``, web/src/blas-loader.ts), measured
(tests/bench/pyodide_matmul.mjs, tests/bench/pyodide_train.mjs):

- the project's own WebAssembly SIMD kernels (``install_kernels``; wasm_gemm.py writes
  them), 2-4x OpenBLAS's speed here, installed by every worker at start with no download;
  whole 4-row tiles go through them and the few rows and columns past the last tile through
  numpy;
- where the browser lacks WebAssembly SIMD: Pyodide's OpenBLAS, through scipy's ``_fblas``
  wrappers of it (only that extension, out of the scipy wheel), loaded once the page trains
  and handed to ``install``.

The products routed (``route``): a 2-D product of two float32 (or two float64) operands
with at least ``MIN_2D_WORK`` multiply-adds; a batched one whose right operand is one
matrix broadcast over the batch (zero batch strides), folded into one 2-D product of
``a``'s rows when those collapse; a batched one whose every matrix has at least
``MIN_BATCHED_WORK`` multiply-adds (one call a matrix); and, with the SIMD kernels, a
batch of whole tiles over at most two batch axes in one call (attention's products).
Everything else stays in numpy: a call from Python costs more than a small product.
With the SIMD kernels each layout's route and kernel arguments are worked out once
(call_layouts.py): a product of a layout seen before costs a lookup, three addresses
written and the kernel call.

Transposed operands cost nothing (``?gemm`` is told to transpose a Fortran-ordered matrix;
the SIMD kernel reads the left operand at any strides). Other strided right operands are
copied once (O(kn) beside the O(mnk) product). Empty products, integer or mixed dtypes stay
in numpy.

A kernel may sum each result element in another order than numpy's own loop: results agree
with ``np.matmul`` to within ``k * eps * (|a| @ |b|)`` elementwise (k the contracting length,
eps the dtype's machine epsilon; the SIMD kernel sums in numpy's order, p = 0, 1, ...); the
tests (tests/python/test_blas.py natively and, in Pyodide, tests/pyodide/blas.mjs and
tests/browser/cpu-path.test.mjs) hold every routing decision to that.
"""

import contextlib
import struct
import sys

import numpy as np

from . import binary, call_layouts, kernels, wasm_binary, wasm_gemm, wasm_heap

# Measured in Pyodide 0.27.7 (Node, tests/bench/pyodide_matmul.mjs): at 32^3 multiply-adds
# numpy's own loop is faster than a kernel called from Python (OpenBLAS 1.3x, SIMD 1.6x its
# time), at 64^3 (and the transformer's 256 x 32 x 32) both kernels are faster (0.7x, 0.5x).
MIN_2D_WORK = 65536
# A batched product goes through one call a matrix only when each is this large (one call a
# matrix: 0.95 of numpy at 8 x 32^3, 0.79 at 4 x 64^3, 10x slower at attention's 64 x 16x16x8).
MIN_BATCHED_WORK = 65536
# (The call layouts of call_layouts.py keep the decisions made under these: after changing either, call_layouts.clear().)

# Every export of wasm_gemm.py's module that ``install_kernels`` takes.
KERNEL_EXPORTS = ("sgemm", "dgemm", "gelu_f32", "gelu_grad_f32", "exp_f32", "tanh_f32", "colsum_f32", "rowsum_f32")
KERNEL_EXPORTS += ("rowmax_f32", *wasm_binary.KERNELS.values())
_routines = {}  # numpy dtype -> the f2py ?gemm wrapper (OpenBLAS)
_kernels = {}  # numpy dtype -> the WebAssembly SIMD kernel (wasm_gemm.py), preferred where installed
_counts = {"blas": 0, "numpy": 0, "wanted": 0}
# Only where numpy lacks a BLAS is it worth a look at each product while none is installed.
_COUNTING = sys.platform == "emscripten"


def install(module):
    """Route products through ``module``'s ``sgemm`` and ``dgemm`` (scipy's ``_fblas`` interface)."""
    _routines.clear()
    _routines[np.dtype(np.float32)] = module.sgemm
    _routines[np.dtype(np.float64)] = module.dgemm


def install_kernels(exports):
    """Route products through the WebAssembly SIMD kernels of wasm_gemm.py: ``exports`` maps
    the module's export names to callables taking the address of their int32 arguments
    (addresses in the memory numpy's arrays live in, sizes, byte strides). ``sgemm`` and
    ``dgemm`` take the products; the float32 kernels named ``*_f32`` (GELU, exp, tanh, the sums
    and maxima, the binary ops: wasm_gelu.py, wasm_exp.py, wasm_sum.py, wasm_binary.py) go to
    ``kernels`` under their names less "_f32". Names it does not know are ignored."""
    exports = {name: exports[name] for name in KERNEL_EXPORTS if name in exports}
    _kernels.clear()
    _kernels[np.dtype(np.float32)] = exports["sgemm"]
    _kernels[np.dtype(np.float64)] = exports["dgemm"]
    elementwise = {name.removesuffix("_f32"): kernel for name, kernel in exports.items() if name.endswith("_f32")}
    if elementwise:
        kernels.install(elementwise)
        kernels.warm_up()
        binary.warm_up()


def uninstall():
    """Back to numpy alone (the benchmark's BLAS-off side, and the tests)."""
    _routines.clear()
    _kernels.clear()
    call_layouts.clear()
    kernels.uninstall()


@contextlib.contextmanager
def suspended(names=("simd", "openblas")):
    """Inside the block products (and GELU) do without the named kernels ("simd", "openblas"), after it with them again."""
    named = (("simd", _kernels), ("simd", kernels.KERNELS), ("openblas", _routines))
    tables = [table for name, table in named if name in names]
    saved = [dict(table) for table in tables]
    for table in tables:
        table.clear()
    try:
        yield
    finally:
        for table, entries in zip(tables, saved):
            table.update(entries)


def installed():
    """Which kernels products are routed through: "simd", "openblas", both joined by "+", or "" (none)."""
    return "+".join(name for name, table in (("simd", _kernels), ("openblas", _routines)) if table)


def counts():
    """How many products went through the BLAS and through numpy since start (while one was
    installed), and ``wanted``: the multiply-adds numpy did, with none installed, in products
    a BLAS would have taken (the playground's worker loads the BLAS once that grows)."""
    return dict(_counts)


def load_extension(path):
    """Import the ``_fblas`` extension module from ``path`` (its libopenblas already loaded) and install it."""
    import importlib.machinery
    import importlib.util

    loader = importlib.machinery.ExtensionFileLoader("_fblas", path)
    spec = importlib.util.spec_from_file_location("_fblas", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    install(module)
    return module


def route(a, b):
    """Which way ``a @ b`` goes: "blas-2d", "blas-folded", "blas-batched" or "numpy" (ignores whether one is installed)."""
    if a.dtype != b.dtype or a.dtype not in (np.float32, np.float64) or a.ndim < 2 or a.ndim != b.ndim:
        return "numpy"
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if a.size == 0 or b.size == 0 or a.shape[:-2] != b.shape[:-2] or b.shape[-2] != k:
        return "numpy"
    work = m * n * k
    if a.ndim == 2:
        return "blas-2d" if work >= MIN_2D_WORK else "numpy"
    if all(stride == 0 for stride in b.strides[:-2]) and _rows_collapse(a):
        return "blas-folded" if work * _batch_size(a) >= MIN_2D_WORK else "numpy"
    if work >= MIN_BATCHED_WORK:
        return "blas-batched"
    # The SIMD kernels take a whole batch in one call: then the total decides, as for a 2-D product.
    return "blas-batched" if _tiles_fit(a, b) and work * _batch_size(a) >= MIN_2D_WORK else "numpy"


def matmul_into(a, b, out=None):
    """``np.matmul(a, b, out=out)``, through the installed kernels where ``route`` says so."""
    if not (_kernels or _routines):
        if _COUNTING and route(a, b) != "numpy":
            _counts["wanted"] += a.size // a.shape[-1] * b.shape[-1] * a.shape[-1]
        return np.matmul(a, b, out=out)
    kernel = _kernels.get(a.dtype)
    if kernel is not None:
        # The SIMD kernels: one call layout a layout of operands (call_layouts.py), made the first time it is seen.
        target = None if out is None else (out.shape, out.strides)
        key = (id(kernel), a.dtype, a.shape, a.strides, b.dtype, b.shape, b.strides, target)
        layout = call_layouts.LAYOUTS.get(key)
        if layout is None:
            layout = call_layouts.make(key, kernel, a, b, out, route(a, b))
        if layout is call_layouts.NUMPY:
            _counts["numpy"] += 1
            return np.matmul(a, b, out=out)
        if layout is not call_layouts.GENERAL:
            _counts["blas"] += 1
            return call_layouts.run(layout, a, b, out)
    way = route(a, b)
    # The SIMD kernel where there is one for the dtype, else OpenBLAS's ?gemm.
    routine = _kernels.get(a.dtype) if way != "numpy" else None
    gemm = _kernel_into
    if routine is None and way != "numpy":
        routine, gemm = _routines.get(a.dtype), _gemm_into
    if routine is None:
        _counts["numpy"] += 1
        return np.matmul(a, b, out=out)
    _counts["blas"] += 1
    if out is None:
        out = np.empty(a.shape[:-1] + b.shape[-1:], a.dtype)
    if way == "blas-2d":
        gemm(routine, a, b, out)
    elif way == "blas-folded":
        k, n = b.shape[-2:]
        rows, matrix = a.reshape(-1, k), b[(0,) * (b.ndim - 2)]
        if out.flags.c_contiguous:
            gemm(routine, rows, matrix, out.reshape(-1, n))  # a view of out
        else:
            out[...] = gemm(routine, rows, matrix, np.empty((rows.shape[0], n), a.dtype)).reshape(out.shape)
    elif gemm is _kernel_into and _tiles_fit(a, b):
        _kernel_batched(routine, a, b, out)
    else:
        for index in np.ndindex(*a.shape[:-2]):
            gemm(routine, a[index], b[index], out[index])
    return out


def _batch_size(a):
    size = 1
    for extent in a.shape[:-2]:
        size *= extent
    return size


def _rows_collapse(a):
    """Whether ``a``'s batch axes and rows reshape into one axis of rows without a copy."""
    expected = a.strides[-2]
    for extent, stride in zip(reversed(a.shape[:-1]), reversed(a.strides[:-1])):
        if extent != 1 and stride != expected:
            return False
        expected = stride * extent if extent != 1 else expected
    return True


def _fortran_operand(matrix):
    """``matrix`` (an m x k operand of the row-major product) as ``?gemm`` reads it: the
    Fortran-ordered array to pass and whether to transpose it, so that the routine sees its
    transpose (k x m) without a copy when ``matrix`` is C- or Fortran-ordered."""
    if matrix.flags.c_contiguous:
        return matrix.T, 0
    if matrix.flags.f_contiguous:
        return matrix, 1
    return np.ascontiguousarray(matrix).T, 0


def _gemm_into(gemm, a, b, out):
    """out[m, n] = a[m, k] @ b[k, n]: in Fortran's terms out^T = b^T a^T, so the routine gets b first."""
    left, trans_left = _fortran_operand(b)
    right, trans_right = _fortran_operand(a)
    if out.flags.c_contiguous:
        # out^T is Fortran-ordered: the routine writes it in place (beta 0: out is not read).
        result = gemm(1.0, left, right, beta=0.0, c=out.T, trans_a=trans_left, trans_b=trans_right, overwrite_c=1)
        if np.shares_memory(result, out):
            return out
        out[...] = result.T
        return out
    out[...] = gemm(1.0, left, right, trans_a=trans_left, trans_b=trans_right).T
    return out


def _address(array, keep=True):
    """``array``'s data address; remembered (``kernels.remembered_address``) unless ``keep`` is
    false (a copy made for this call, which no later call passes)."""
    if not keep:
        address = wasm_heap.address(array)
        return array.__array_interface__["data"][0] if address is None else address
    return kernels.remembered_address(array)


# The kernels' ten arguments, written here and passed by address (wasm_gemm.py): pointer-sized
# integers, which in Pyodide (wasm32) are the int32 the kernels read.
_ARGUMENTS = np.zeros(len(wasm_gemm.ARGUMENTS), np.intp)
_ARGUMENTS_ADDRESS = _ARGUMENTS.__array_interface__["data"][0]
_WRAP = 1 << (8 * _ARGUMENTS.itemsize - 1)
# Written through these in one C call (about 1 us in Pyodide, where ``_ARGUMENTS[:] = (...)``
# converts the tuple through numpy, 3-4 us); ``n`` is ssize_t, intp's size.
_SLOTS = memoryview(_ARGUMENTS)
_PACK = struct.Struct(f"{len(wasm_gemm.ARGUMENTS)}n")
# wasm_gemm.N_BLOCK by dtype: ``dtype.name`` is computed in Python by numpy (5 us a time in Pyodide).
_N_BLOCK = {np.dtype(name): columns for name, columns in wasm_gemm.N_BLOCK.items()}


def _int32(value):
    """An address as the signed pointer-sized integer (in wasm32, addresses past 2 GiB wrap, as i32 does)."""
    return value - 2 * _WRAP if value >= _WRAP else value


def _kernel_into(kernel, a, b, out):
    """out[m, n] = a[m, k] @ b[k, n] through a SIMD kernel: its blocks of whole 4-row by
    N_BLOCK-column tiles, and the rest of the rows and columns (fewer than a tile) in numpy."""
    size = a.itemsize
    m, k = a.shape
    n = b.shape[1]
    tile_rows = m - m % wasm_gemm.M_BLOCK
    tile_columns = n - n % _N_BLOCK[a.dtype]
    copied = b.strides[1] != size
    if copied:
        b = np.ascontiguousarray(b)
    target = out if out.strides[1] == size else np.empty((m, n), a.dtype)
    if tile_rows and tile_columns:
        _PACK.pack_into(
            _SLOTS, 0,
            _int32(_address(a)), _int32(_address(b, not copied)), _int32(_address(target, target is out)),
            tile_rows, tile_columns, k,
            a.strides[0], a.strides[1], b.strides[0], target.strides[0], 1, 0, 0, 0, 1, 0, 0, 0,
        )  # fmt: skip
        kernel(_ARGUMENTS_ADDRESS)
    if tile_columns < n:
        np.matmul(a, b[:, tile_columns:], out=target[:, tile_columns:])
    if tile_rows < m and tile_columns:
        np.matmul(a[tile_rows:], b[:, :tile_columns], out=target[tile_rows:, :tile_columns])
    if target is not out:
        out[...] = target
    return out


def _tiles_fit(a, b):
    """Whether a batched product goes to a SIMD kernel whole: whole tiles, at most two batch axes."""
    return (
        a.ndim <= 4
        and a.dtype in _kernels
        and a.shape[-2] % wasm_gemm.M_BLOCK == 0
        and b.shape[-1] % _N_BLOCK[a.dtype] == 0
    )


def _kernel_batched(kernel, a, b, out):
    """out[..., m, n] = a @ b over one or two batch axes, in one call of a SIMD kernel."""
    size = a.itemsize
    copied = b.strides[-1] != size
    if copied:
        b = np.ascontiguousarray(b)
    target = out if out.strides[-1] == size else np.empty(out.shape, a.dtype)
    m, k = a.shape[-2:]
    if a.ndim == 3:
        batch = [(1, 0, 0, 0), (a.shape[0], a.strides[0], b.strides[0], target.strides[0])]
    else:
        batch = [(a.shape[axis], a.strides[axis], b.strides[axis], target.strides[axis]) for axis in (0, 1)]
    _PACK.pack_into(
        _SLOTS, 0,
        _int32(_address(a)), _int32(_address(b, not copied)), _int32(_address(target, target is out)),
        m, b.shape[-1], k,
        a.strides[-2], a.strides[-1], b.strides[-2], target.strides[-2], *batch[0], *batch[1],
    )  # fmt: skip
    kernel(_ARGUMENTS_ADDRESS)
    if target is not out:
        out[...] = target
    return out
