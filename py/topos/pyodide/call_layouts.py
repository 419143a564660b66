"""The SIMD kernel's call layouts: each product's call worked out once a layout (blas.py, in Pyodide).

How a product goes (numpy or one kernel call) and the kernel's eighteen arguments but three
(wasm_gemm.py: the addresses of a, b and c) depend only on the operands' shapes, strides
and dtypes and on out's layout; a training step makes the same few dozen layouts step after
step. Routing a product and writing all its arguments cost about 6 us in Pyodide 0.27.7 under
Node (a small kernel call about 1.3, a 256 x 32 x 32 product's 13), so ``make`` does that once
a layout, keyed by it (``blas.matmul_into`` builds the key), and ``run`` writes the three
addresses into the layout's own row of ``_BLOCKS`` and calls the kernel with its address.

A call layout is ``NUMPY`` (np.matmul: ``route`` said so), ``GENERAL`` (blas's own path, each
call: rows or columns past the last whole tile, an out with strided rows, a batch looped
matrix by matrix, a large right operand whose rows are not contiguous) or one kernel call.
A right operand whose rows are not contiguous (a transposed weight: the kernel reads B's
rows as vectors) is copied into the layout's own buffer (at most ``SCRATCH_LIMIT`` bytes),
whose address stays in the layout's arguments. A layout keeps the routing thresholds' decision
(blas.MIN_2D_WORK): ``clear`` after changing them.
"""

import numpy as np

from . import kernels, wasm_gemm, wasm_heap

LAYOUTS_KEPT = 256
SCRATCH_LIMIT = 1 << 20
NUMPY = "numpy"
GENERAL = "general"

LAYOUTS = {}  # key (blas.matmul_into) -> NUMPY, GENERAL or a CallLayout
_BLOCKS = np.zeros((LAYOUTS_KEPT, len(wasm_gemm.ARGUMENTS)), np.intp)
_BLOCKS_ADDRESS = _BLOCKS.__array_interface__["data"][0]
_WORDS = memoryview(_BLOCKS.reshape(-1))  # item writes: a third of an ndarray's setitem in Pyodide
_WRAP = 1 << (8 * _BLOCKS.itemsize - 1)
_N_BLOCK = {np.dtype(name): columns for name, columns in wasm_gemm.N_BLOCK.items()}


class CallLayout:
    """One kernel call's layout: the kernel, the index of its arguments' first word in ``_BLOCKS``
    (the three addresses go there), those arguments' address, the right operand's scratch copy
    (or None) and the result's shape."""

    __slots__ = ("kernel", "word", "address", "scratch", "shape")

    def __init__(self, kernel, word, address, scratch, shape):
        self.kernel, self.word, self.address, self.scratch, self.shape = kernel, word, address, scratch, shape


class _BlockRows:
    """How many rows of ``_BLOCKS`` the layouts made since the last ``clear`` hold."""

    __slots__ = ("used",)

    def __init__(self):
        self.used = 0


_BLOCK_ROWS = _BlockRows()


def clear():
    LAYOUTS.clear()
    _BLOCK_ROWS.used = 0


def make(key, kernel, a, b, out, way):
    """The call layout of ``key`` (``a @ b`` into ``out`` or a new array), remembered under ``key``."""
    if len(LAYOUTS) >= LAYOUTS_KEPT:  # a step makes a few dozen layouts: a full table is stale
        clear()
    LAYOUTS[key] = layout = NUMPY if way == "numpy" else _kernel_layout(kernel, a, b, out, way)
    return layout


def _kernel_layout(kernel, a, b, out, way):
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
    # Two batch axes (wasm_gemm.py): each an extent and a, b and c's strides; 1 and 0s where there are fewer.
    axes = a.ndim - 2
    extents = (1,) * (2 - axes) + a.shape[:-2]
    strides = [(0,) * (2 - axes) + array.strides[:-2] for array in (a, b, out)]
    batch = tuple(value for axis in (0, 1) for value in (extents[axis], *(s[axis] for s in strides)))
    row = _BLOCK_ROWS.used
    _BLOCK_ROWS.used = row + 1
    arguments = (0, 0 if scratch is None else _argument(scratch), 0, m, n, k)
    _BLOCKS[row] = arguments + (a.strides[-2], a.strides[-1], b.strides[-2], out.strides[-2]) + batch
    word = row * _BLOCKS.shape[1]
    return CallLayout(kernel, word, _BLOCKS_ADDRESS + row * _BLOCKS.strides[0], scratch, shape)


def run(layout, a, b, out):
    """``a @ b`` into ``out`` (a new array if None) by ``layout``'s one kernel call."""
    word, scratch = layout.word, layout.scratch
    if out is None:
        out = np.empty(layout.shape, a.dtype)
    _WORDS[word] = _argument(a)
    if scratch is None:
        _WORDS[word + 1] = _argument(b)
    else:
        np.copyto(scratch, b)
    _WORDS[word + 2] = _argument(out)
    layout.kernel(layout.address)
    return out


def _argument(array):
    """``array``'s data address as the kernel reads it, signed (past 2 GiB it wraps, as i32 does): from its struct in Pyodide
    (wasm_heap.py), else as ``kernels.remembered_address`` gives it."""
    address = wasm_heap.address(array)
    if address is None:
        address = kernels.remembered_address(array)
    return address - 2 * _WRAP if address >= _WRAP else address
