"""An ndarray's data address read straight from the array's C struct, in Pyodide.

The kernels (blas.py, kernels.py) take the data addresses of the arrays they
read and write. ``array.__array_interface__["data"][0]`` gives one, but builds a dict: about
2.5 us in Pyodide 0.27.7 under Node, as much as a small kernel call; the weak table of
``kernels.remembered_address`` saves that for arrays seen before, and a training step
passes a few dozen fresh views (transposes, reshapes) each step, which miss it.

In CPython ``id(array)`` is the address of the array's struct, and numpy's ``PyArrayObject``
begins with the object header (a reference count and a type pointer) followed by the data
pointer (numpy/ndarraytypes.h, ``PyArrayObject_fields``). In Pyodide the WebAssembly memory
is the process's whole address space, so an array of pointer-sized integers over it (``_HEAP``,
made from an ``__array_interface__``, no copy) reads that pointer in one index: about 0.8 us.
``address`` does, where a check at import found it agrees with ``__array_interface__`` on
owning arrays, views and slices; natively (not emscripten) and where the check failed it
answers None and the caller asks ``__array_interface__``.
"""

import sys

import numpy as np

_POINTER = np.dtype(np.uintp)
_START = _POINTER.itemsize  # not 0: numpy would take a null data pointer for no buffer
_DATA_OFFSET = 2 * _POINTER.itemsize  # PyObject_HEAD: ob_refcnt, ob_type
_SHIFT = _POINTER.itemsize.bit_length() - 1
_LENGTH = ((1 << 31) - 2 * _START) >> _SHIFT  # wasm32: addresses below 2 GiB (Py_ssize_t's limit)


class _Memory:
    """The address space from ``_START`` as numpy's array interface describes it."""

    __array_interface__ = {"data": (_START, True), "shape": (_LENGTH,), "typestr": _POINTER.str, "version": 3}


def _heap():
    """A memoryview of the pointer-sized integers from ``_START`` up, or None where reading the
    struct does not give what ``__array_interface__`` does (or natively, where it is not needed)."""
    if sys.platform != "emscripten" or _POINTER.itemsize != 4:
        return None
    heap = memoryview(np.asarray(_Memory()))
    base = np.arange(64, dtype=np.float32).reshape(8, 8)
    for array in (base, base.T, base[3:], base[:, 5:], base.reshape(4, 16)[1::2], np.empty(0)):
        index = (id(array) + _DATA_OFFSET - _START) >> _SHIFT
        if index >= _LENGTH or heap[index] != array.__array_interface__["data"][0]:
            return None
    return heap


_HEAP = _heap()


def address(array):
    """``array``'s data address, or None where only ``__array_interface__`` can tell it (see above;
    and for anything but an ndarray itself: the struct read is numpy's)."""
    if _HEAP is None or type(array) is not np.ndarray:
        return None
    index = (id(array) + _DATA_OFFSET - _START) >> _SHIFT
    return _HEAP[index] if index < _LENGTH else None
