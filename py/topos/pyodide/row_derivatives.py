"""SoftmaxGrad, LogSoftmaxGrad and LayerNormGrad's numpy forwards in Pyodide (ops/rows.py).

The same steps as rows.py's forwards, with their broadcast binary ops (a row's scalar ``[..., 1]``
against the rows) and full ones through the SIMD kernels of ops/wasm_binary.py
(``pyodide_binary.into``: numpy's results bit for bit, numpy's own call where a kernel does not
fit), and the row sums through the SIMD row sums of ops/wasm_sum.py (``pyodide_math.sum_matrix``,
within ``SUM_TOLERANCE``, as natively the product with a vector of ones rounds otherwise than
numpy's sum). numpy in Pyodide runs these loops as scalar wasm, 3-5 times slower than natively.
rows.py calls these only in Pyodide (``rows.PYODIDE``); natively nothing changes.
"""

import struct

import numpy as np

from . import pyodide_binary, pyodide_math
from .pyodide_binary import into
from .reduce import ones_of

_FLOAT32 = np.dtype(np.float32)
_KERNELS = pyodide_math._kernels  # the same table: blas.suspended and uninstall clear it
_kept_address = pyodide_math._kept_address
# One binary kernel call's arguments (ops/wasm_binary.py: outer, rows, cols, then address and
# outer, row, col byte strides for out, x and y), written in one C call: the general route
# (``pyodide_binary.into``) works out a plan from shapes and strides each call, about 6 us in
# Pyodide, where here every operand is a whole C-contiguous [rows, cols] or a row's scalar.
_ARGUMENTS = np.zeros(15, np.intp)
_ARGUMENTS_ADDRESS = _ARGUMENTS.__array_interface__["data"][0]
_SLOTS = memoryview(_ARGUMENTS)
_PACK = struct.Struct("15n")


def _fits(out, *operands):
    """Whether the direct route takes these: float32 ndarrays, C-contiguous, out of at least
    ``pyodide_binary.MIN_ELEMENTS`` elements, the operands of out's shape or its rows' ``[..., 1]``,
    the kernels installed. The forwards below check once, then call the kernels straight."""
    if "rowsum" not in _KERNELS or "mul" not in _KERNELS or out.size < pyodide_binary.MIN_ELEMENTS:
        return False
    rows = out.shape[:-1] + (1,)
    for array in (out,) + operands:
        if type(array) is not np.ndarray or array.dtype is not _FLOAT32 or not array.flags.c_contiguous:
            return False
        if array.shape != out.shape and array.shape != rows:
            return False
    return True


class _Rows:
    """The kernels over one forward's rows: ``count`` rows of ``columns``, addresses given."""

    __slots__ = ("count", "columns", "row_bytes")

    def __init__(self, out):
        self.columns = out.shape[-1]
        self.count = out.size // self.columns
        self.row_bytes = 4 * self.columns

    def binary(self, name, out, x, x_per_row, y, y_per_row):
        """out = x op y, x and y whole (row stride ``row_bytes``, col 4) or a row's scalar (4, 0)."""
        full = self.row_bytes
        _PACK.pack_into(
            _SLOTS, 0, 1, self.count, self.columns, out, 0, full, 4,
            x, 0, 4 if x_per_row else full, 0 if x_per_row else 4,
            y, 0, 4 if y_per_row else full, 0 if y_per_row else 4,
        )  # fmt: skip
        _KERNELS[name](_ARGUMENTS_ADDRESS)

    def sums(self, x, like):
        """The row sums of ``x`` (an address) as a new ``[..., 1]`` array of ``like``'s rows, and its address."""
        out = np.empty(like.shape[:-1] + (1,), _FLOAT32)
        address = _kept_address(out)
        pyodide_math._PACK.pack_into(pyodide_math._SLOTS, 0, x, address, self.count, self.columns)
        _KERNELS["rowsum"](pyodide_math._ARGUMENTS_ADDRESS)
        return out, address


def row_sums(a):
    """The sum of each row (the last axis) of ``a``, keeping that axis: shape ``[..., 1]``;
    float32 C-contiguous through the SIMD row sums, else the product with ones (rows.row_sums)."""
    columns = a.shape[-1]
    if a.dtype is _FLOAT32 and a.flags.c_contiguous and columns:
        out = np.empty(a.shape[:-1] + (1,), _FLOAT32)
        if pyodide_math.sum_matrix(a, out, (a.size // columns, columns), True):
            return out
    return np.matmul(a, ones_of(columns, a.dtype))[..., None]


def softmax_grad(g, y, out):
    """``y (g - sum(g y))`` into ``out``, as ``SoftmaxGrad.forward_into``."""
    if _fits(out, g, y) and g.shape == y.shape == out.shape:
        rows = _Rows(out)
        o, a, b = _kept_address(out), _kept_address(g), _kept_address(y)
        rows.binary("mul", o, a, False, b, False)
        sums, total = rows.sums(o, out)  # sums kept alive while its address is in use
        rows.binary("sub", o, a, False, total, True)
        rows.binary("mul", o, o, False, b, False)
        return out
    into(np.multiply, g, y, out)
    total = row_sums(out)
    into(np.subtract, g, total, out)
    return into(np.multiply, out, y, out)


def log_softmax_grad(g, y, out):
    """``g - exp(y) sum(g)`` into ``out``, as ``LogSoftmaxGrad.forward_into``."""
    if _fits(out, g, y) and g.shape == y.shape == out.shape:
        rows = _Rows(out)
        o, a = _kept_address(out), _kept_address(g)
        sums, total = rows.sums(a, out)  # sums kept alive while its address is in use
        pyodide_math.EXP(y, out=out)
        rows.binary("mul", o, o, False, total, True)
        rows.binary("sub", o, a, False, o, False)
        return out
    total = row_sums(g)
    pyodide_math.EXP(y, out=out)
    into(np.multiply, out, total, out)
    return into(np.subtract, g, out, out)


def layer_norm_grad(g, normed, scale, out):
    """``r (g - mean(g) - n mean(g n))`` into ``out``, as ``LayerNormGrad.forward_into``."""
    count = normed.dtype.type(normed.shape[-1])
    if _fits(out, g, normed, scale) and g.shape == normed.shape == out.shape:
        rows = _Rows(out)
        o, a, n, r = _kept_address(out), _kept_address(g), _kept_address(normed), _kept_address(scale)
        mean_g, m = rows.sums(a, out)
        np.divide(mean_g, count, out=mean_g)
        rows.binary("mul", o, a, False, n, False)
        mean_gn, mn = rows.sums(o, out)
        np.divide(mean_gn, count, out=mean_gn)
        rows.binary("mul", o, n, False, mn, True)
        rows.binary("sub", o, a, False, o, False)
        rows.binary("sub", o, o, False, m, True)
        rows.binary("mul", o, o, False, r, True)
        return out
    mean_g = row_sums(g)
    np.divide(mean_g, count, out=mean_g)
    into(np.multiply, g, normed, out)
    mean_gn = row_sums(out)
    np.divide(mean_gn, count, out=mean_gn)
    into(np.multiply, normed, mean_gn, out)
    into(np.subtract, g, out, out)
    into(np.subtract, out, mean_g, out)
    return into(np.multiply, out, scale, out)
