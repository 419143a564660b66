"""The SIMD kernel's calls planned once a layout (ops/blas.py, in Pyodide).

How a product goes (numpy or one kernel call) and the kernel's eighteen arguments but three
(ops/wasm_gemm.py: the addresses of a, b and c) depend only on the operands' shapes, strides
and dtypes and on out's layout; a training step makes the same few dozen layouts step after
step. Routing a product and writing all its arguments cost about 6 us in Pyodide 0.27.7 under
Node (a small kernel call about 1.3, a 256 x 32 x 32 product's 13), so ``make`` does that once
a layout, keyed by it (``blas.matmul_into`` builds the key), and ``run`` writes the three
addresses into the plan's own row of ``_BLOCKS`` and calls the kernel with its address.

A plan is ``NUMPY`` (np.matmul: ``route`` said so), ``GENERAL`` (blas's own path, each
call: rows or columns past the last whole tile, an out with strided rows, a batch looped
matrix by matrix, a large right operand whose rows are not contiguous) or one kernel call.
A right operand whose rows are not contiguous (a transposed weight: the kernel reads B's
rows as vectors) is copied into the plan's own buffer (at most ``SCRATCH_LIMIT`` bytes),
whose address stays in the plan's arguments. A plan keeps the routing thresholds' decision
(blas.MIN_2D_WORK): ``clear`` after changing them.
"""

import numpy as np

from . import pyodide_math, wasm_gemm, wasm_heap

PLANS_KEPT = 256
SCRATCH_LIMIT = 1 << 20
NUMPY = "numpy"
GENERAL = "general"

PLANS = {}  # key (blas.matmul_into) -> NUMPY, GENERAL or (kernel, word, arguments address, scratch, out shape)
_BLOCKS = np.zeros((PLANS_KEPT, len(wasm_gemm.ARGUMENTS)), np.intp)
_BLOCKS_ADDRESS = _BLOCKS.__array_interface__["data"][0]
_WORDS = memoryview(_BLOCKS.reshape(-1))  # item writes: a third of an ndarray's setitem in Pyodide
_WRAP = 1 << (8 * _BLOCKS.itemsize - 1)
_N_BLOCK = {np.dtype(name): columns for name, columns in wasm_gemm.N_BLOCK.items()}
_next_row = [0]


def clear():
    PLANS.clear()
    _next_row[0] = 0


def make(key, kernel, a, b, out, way):
    """The plan of ``key``'s layout (``a @ b`` into ``out`` or a new array), remembered under ``key``."""
    if len(PLANS) >= PLANS_KEPT:  # a step makes a few dozen layouts: a full table is stale
        clear()
    PLANS[key] = plan = NUMPY if way == "numpy" else _kernel_plan(kernel, a, b, out, way)
    return plan


def _kernel_plan(kernel, a, b, out, way):
    size, dtype = a.itemsize, a.dtype
    shape = a.shape[:-1] + b.shape[-1:]
    if out is None:
        out = np.empty(shape, dtype)  # only its strides: those of every new result
    if out.shape != shape or out.dtype != dtype or out.strides[-1] != size:
        return GENERAL
    if way == "blas-folded":
        if not out.flags.c_contiguous or b.strides[-1] != size:
            return GENERAL
        a, b, out = a.reshape(-1, a.shape[-1]), b[(0,) * (b.ndim - 2)], out.reshape(-1, shape[-1])
        way = "blas-2d"
    if way != "blas-2d" and (way != "blas-batched" or a.ndim > 4):
        return GENERAL
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if m % wasm_gemm.M_BLOCK or n % _N_BLOCK[dtype]:
        return GENERAL
    scratch = None
    if b.strides[-1] != size:
        if b.size * size > SCRATCH_LIMIT:
            return GENERAL
        b = scratch = np.empty(b.shape, dtype)
    # Two batch axes (ops/wasm_gemm.py): each an extent and a, b and c's strides; 1 and 0s where there are fewer.
    axes = a.ndim - 2
    extents = (1,) * (2 - axes) + a.shape[:-2]
    strides = [(0,) * (2 - axes) + array.strides[:-2] for array in (a, b, out)]
    batch = tuple(value for axis in (0, 1) for value in (extents[axis], *(s[axis] for s in strides)))
    row = _next_row[0]
    _next_row[0] = row + 1
    arguments = (0, 0 if scratch is None else _argument(scratch), 0, m, n, k)
    _BLOCKS[row] = arguments + (a.strides[-2], a.strides[-1], b.strides[-2], out.strides[-2]) + batch
    word = row * _BLOCKS.shape[1]
    return (kernel, word, _BLOCKS_ADDRESS + row * _BLOCKS.strides[0], scratch, shape)


def run(plan, a, b, out):
    """``a @ b`` into ``out`` (a new array if None) by ``plan``'s one kernel call."""
    kernel, word, address, scratch, shape = plan
    if out is None:
        out = np.empty(shape, a.dtype)
    _WORDS[word] = _argument(a)
    if scratch is None:
        _WORDS[word + 1] = _argument(b)
    else:
        np.copyto(scratch, b)
    _WORDS[word + 2] = _argument(out)
    kernel(address)
    return out


def _argument(array):
    """``array``'s data address as the kernel reads it, signed (past 2 GiB it wraps, as i32 does): from its struct in Pyodide
    (ops/wasm_heap.py), else as ``pyodide_math.remembered_address`` gives it."""
    address = wasm_heap.address(array)
    if address is None:
        address = pyodide_math.remembered_address(array)
    return address - 2 * _WRAP if address >= _WRAP else address
