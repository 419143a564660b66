"""Add, Sub, Mul, Div and Where of float32 through the SIMD kernels of wasm_binary.py, in Pyodide only.

numpy in Pyodide runs small float32 binary ops 3-5 times slower than natively (its loops are
scalar wasm) and the training step's operands are mostly broadcast views: a bias row (strides
(0, 4)), a per-row scalar ((4, 0)), a [16, 16] mask over attention's [16, 4, 16, 16].
``call_layout`` views the op's operands as at most three axes (outer, rows, cols: the axes of extent 1 dropped,
neighbours merged where every operand's strides allow) and calls the kernel where each
operand's last stride is 0 or one element and out's is one element; every other case (another
dtype, operands of another rank than out's, fewer than ``MIN_ELEMENTS``, no kernel) is numpy's
own call, unchanged; an operand of out's rank with extents of 1 (a row's scalar ``[..., 1]``)
is read broadcast, its stride 0 along those axes. The decision is remembered by shapes and strides
(``_LAYOUTS``), and the interpreter's nodes (``ufunc_step``, ``where_step``) remember their last
call: the step's operands have the same layouts every run. The results are numpy's bit for bit (one IEEE single operation an
element), NaN payloads aside.

routing.py hands these to the interpreter and to Where's forward where the runtime is installed;
natively nothing changes: the interpreter calls the ufuncs themselves.
"""

import weakref

import numpy as np

from . import kernels, wasm_binary

# Below this many elements numpy's own loop costs less than the call from Python (measured in
# Pyodide 0.27.7 under Node: a kernel call about 6 us from Python, numpy's 4 + 0.5-2 ns an element).
MIN_ELEMENTS = 128
_FLOAT32 = np.dtype(np.float32)
_KERNELS = kernels.KERNELS  # the same table: blas.suspended and uninstall clear it
_NAMES = {np.add: "add", np.subtract: "sub", np.multiply: "mul", np.divide: "div"}
_LAYOUTS = {}
_LAYOUTS_KEPT = 1024
_NO = object()


def call_layout(shape, out_strides, *operand_strides):
    """The kernel's arguments for ``shape`` and the strides (out's, then the operands'), their
    addresses left 0 (at 3, 7, 11, ...), as an intp array; None where the kernel does not take them."""
    size = 1
    for extent in shape:
        size *= extent
    if size < MIN_ELEMENTS:
        return None
    everyone = (out_strides,) + operand_strides
    axes = []
    for axis, extent in enumerate(shape):
        if extent == 1:
            continue
        strides = [s[axis] for s in everyone]
        if axes and all(previous == stride * extent for previous, stride in zip(axes[-1][1], strides)):
            axes[-1] = (axes[-1][0] * extent, strides)
        else:
            axes.append((extent, strides))
    if len(axes) > 3:
        return None
    axes = [(1, [0] * len(everyone))] * (3 - len(axes)) + axes
    (outer, outer_strides), (rows, row_strides), (cols, col_strides) = axes
    if cols == 1:  # one element a row: each operand's read as one (splat)
        col_strides = [4] + [0] * len(operand_strides)
    if col_strides[0] != 4 or any(stride not in (0, 4) for stride in col_strides[1:]):
        return None
    if (rows > 1 and row_strides[0] == 0) or (outer > 1 and outer_strides[0] == 0):
        return None  # out written twice over
    arguments = [outer, rows, cols]
    for k in range(len(everyone)):
        arguments += [0, outer_strides[k], row_strides[k], col_strides[k]]
    return np.array(arguments, np.intp)


def broadcast_strides(operand, shape):
    """``operand``'s strides broadcast to ``shape`` (0 along its axes of extent 1), where it has
    ``shape``'s rank and each extent is ``shape``'s or 1 (numpy's broadcasting of the same rank); else None."""
    if operand.shape == shape:
        return operand.strides
    if operand.ndim != len(shape) or any(have not in (want, 1) for have, want in zip(operand.shape, shape)):
        return None
    return tuple(0 if have == 1 else stride for have, stride in zip(operand.shape, operand.strides))


def _arguments(name, out, operands):
    """The kernel ``name`` and its arguments (the call layout's array, out's and the operands' addresses
    written in) for ``operands`` (float32 arrays of out's shape, or of its rank broadcast to it: a
    row's scalar ``[..., 1]``) into ``out``; None where numpy does it."""
    kernel = _KERNELS.get(name)
    if kernel is None or type(out) is not np.ndarray or out.dtype is not _FLOAT32:
        return None
    key = [name, out.shape, out.strides]
    for operand in operands:
        if type(operand) is not np.ndarray or operand.dtype is not _FLOAT32:
            return None
        key += (operand.shape, operand.strides)
    key = tuple(key)
    arguments = _LAYOUTS.get(key, _NO)
    if arguments is _NO:
        strides = [broadcast_strides(operand, out.shape) for operand in operands]
        arguments = None if None in strides else call_layout(out.shape, out.strides, *strides)
        if len(_LAYOUTS) >= _LAYOUTS_KEPT:
            _LAYOUTS.clear()
        _LAYOUTS[key] = arguments
    if arguments is None:
        return None
    arguments[3] = kernels.kept_address(out)
    for position, operand in enumerate(operands):
        arguments[7 + 4 * position] = kernels.kept_address(operand)
    return kernel, arguments


def _run(name, out, operands):
    """Whether the kernel ``name`` wrote ``out`` from ``operands``."""
    found = _arguments(name, out, operands)
    if found is None:
        return False
    kernel, arguments = found
    kernel(kernels.kept_address(arguments))
    return True


class _Call:
    """A step's last kernel call: the kernel, its own arguments, and for out and each operand
    (argument positions 3, 7, 11, ...) a weak reference (it keeps none alive), shape and strides."""

    __slots__ = ("kernel", "arguments", "address", "references", "layouts")

    def __init__(self, kernel, arguments, arrays):
        self.kernel, self.arguments = kernel, arguments
        self.address = kernels.address(arguments)
        self.references = [weakref.ref(array) for array in arrays]
        self.layouts = [(array.shape, array.strides) for array in arrays]

    def takes(self, position, array):
        """Whether ``array`` can stand in position ``position`` (an array of the same layout: its
        address written in; parameters and their views are new arrays each run, at new addresses)."""
        if type(array) is not np.ndarray or array.dtype is not _FLOAT32:
            return False
        if (array.shape, array.strides) != self.layouts[position]:
            return False
        self.arguments[3 + 4 * position] = kernels.address(array)  # from the struct where wasm_heap.py can
        self.references[position] = weakref.ref(array)
        return True


class _LastCall:
    """A step's last kernel call (``_Call``), or None before its first and after a miss."""

    __slots__ = ("call",)

    def __init__(self):
        self.call = None


def ufunc_step(ufunc, a, b, index, fallback):
    """The interpreter's step for ``values[index] = ufunc(values[a], values[b])``, ``fallback(values)``
    where the kernel does not take it (see ``_step``)."""
    return _step(_NAMES[ufunc], (a, b), index, fallback)


def where_step(c, x, y, index, fallback):
    """The interpreter's step for Where (``values[index] = values[c] != 0 ? values[x] : values[y]``),
    ``fallback(values)`` where the kernel does not take it (see ``_step``)."""
    return _step("where", (x, y, c), index, fallback)


def _step(name, operands, index, fallback):
    """A step calling kernel ``name`` over ``values[j] for j in operands`` into ``values[index]``
    (``fallback(values)`` where it does not fit), remembering its last call (``_Call``): the same
    arrays, or new ones of the same layouts (their addresses written in), and the same kernel call
    it again, about 2 us from Python. Pyodide runs the interpreter in one thread: nothing guards
    the remembered call (natively these steps are not made)."""
    last = _LastCall()

    def miss(values, arrays):
        found = _arguments(name, arrays[0], arrays[1:])
        if found is None:
            last.call = None
            fallback(values)
            return
        kernel, arguments = found
        last.call = call = _Call(kernel, arguments.copy(), arrays)
        kernel(call.address)

    # Written out for two operands and for three: this is the per-call path (a Python loop over
    # the arrays measured slower).
    if len(operands) == 2:
        a, b = operands

        def run(values):
            out, x, y = values[index], values[a], values[b]
            call = last.call
            if call is not None and _KERNELS.get(name) is call.kernel:
                seen = call.references
                if (
                    (seen[0]() is out or call.takes(0, out))
                    and (seen[1]() is x or call.takes(1, x))
                    and (seen[2]() is y or call.takes(2, y))
                ):
                    call.kernel(call.address)
                    return
            miss(values, (out, x, y))

    else:
        a, b, c = operands

        def run(values):
            out, x, y, z = values[index], values[a], values[b], values[c]
            call = last.call
            if call is not None and _KERNELS.get(name) is call.kernel:
                seen = call.references
                if (
                    (seen[0]() is out or call.takes(0, out))
                    and (seen[1]() is x or call.takes(1, x))
                    and (seen[2]() is y or call.takes(2, y))
                    and (seen[3]() is z or call.takes(3, z))
                ):
                    call.kernel(call.address)
                    return
            miss(values, (out, x, y, z))

    return run


def into(ufunc, x, y, out):
    """``ufunc(x, y, out=out)`` (np.add, subtract, multiply or divide), through the kernel where it fits."""
    if not _run(_NAMES[ufunc], out, (x, y)):
        ufunc(x, y, out=out)
    return out


def where_into(c, x, y, out):
    """Whether ``out = c != 0 ? x : y`` went through the kernel (Where's forward_into where the runtime is installed, routing.py)."""
    return _run("where", out, (x, y, c))


def warm_up(calls=200):
    """Run each kernel ``calls`` times over [64, 256], a row and a column broadcast, about 30 ms (V8
    optimizes a function once it has run enough, see kernels.warm_up; at 16 calls the
    training step's binary ops ran 1.5-2 times slower, measured)."""
    x = np.zeros((64, 256), np.float32)
    out = np.empty_like(x)
    row, column = np.broadcast_to(x[:1], x.shape), np.broadcast_to(x[:, :1], x.shape)
    for _ in range(calls):
        for ufunc in _NAMES:
            _run(_NAMES[ufunc], out, (x, row))
            _run(_NAMES[ufunc], out, (column, x))
        _run("where", out, (x, row, x))
        _run("where", out, (column, x, row))


# The ufuncs ``ufunc_step`` and ``into`` take.
UFUNCS = tuple(_NAMES)
assert set(_NAMES.values()) | {"where"} == set(wasm_binary.KERNELS)
