"""SoftmaxGrad, LogSoftmaxGrad and LayerNormGrad's numpy forwards in Pyodide: the row-wise derivatives.

The same steps as the forwards of ``topos.ops.rows``, with their broadcast binary ops (a row's scalar ``[..., 1]``
against the rows) and full ones through the SIMD kernels of wasm_binary.py
(``binary.into``: numpy's results bit for bit, numpy's own call where a kernel does not
fit), and the row sums through the SIMD row sums of wasm_sum.py (``kernels.sum_matrix``,
within ``SUM_TOLERANCE``, as natively the product with a vector of ones rounds otherwise than
numpy's sum). numpy in Pyodide runs these loops as scalar wasm, 3-5 times slower than natively.
routing.py puts these in place of those forwards where the runtime is installed; natively nothing changes.
"""

import struct

import numpy as np

from ..ops.reduce import ones_of
from . import binary, kernels
from .binary import into

_FLOAT32 = np.dtype(np.float32)
_KERNELS = kernels.KERNELS  # the same table: blas.suspended and uninstall clear it
_kept_address = kernels.kept_address
# One binary kernel call's arguments (wasm_binary.py: outer, rows, cols, then address and
# outer, row, col byte strides for out, x and y), written in one C call: the general route
# (``binary.into``) works out a call layout from shapes and strides each call, about 6 us in
# Pyodide, where here every operand is a whole C-contiguous [rows, cols] or a row's scalar.
_ARGUMENTS = np.zeros(15, np.intp)
_ARGUMENTS_ADDRESS = _ARGUMENTS.__array_interface__["data"][0]
_SLOTS = memoryview(_ARGUMENTS)
_PACK = struct.Struct("15n")


def _fits(out, *operands):
    """Whether the direct route takes these: float32 ndarrays, C-contiguous, out of at least
    ``binary.MIN_ELEMENTS`` elements, the operands of out's shape or its rows' ``[..., 1]``,
    the kernels installed. The forwards below check once, then call the kernels straight."""
    if "rowsum" not in _KERNELS or "mul" not in _KERNELS or out.size < binary.MIN_ELEMENTS:
        return False
    rows = out.shape[:-1] + (1,)
    for array in (out,) + operands:
        if type(array) is not np.ndarray or array.dtype is not _FLOAT32 or not array.flags.c_contiguous:
            return False
        if array.shape != out.shape and array.shape != rows:
            return False
    return True


class _RowCalls:
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
        kernels.call("rowsum", x, address, self.count, self.columns)
        return out, address


def row_sums(a):
    """The sum of each row (the last axis) of ``a``, keeping that axis: shape ``[..., 1]``;
    float32 C-contiguous through the SIMD row sums, else the product with ones (``topos.ops.rows.row_sums``)."""
    columns = a.shape[-1]
    if a.dtype is _FLOAT32 and a.flags.c_contiguous and columns:
        out = np.empty(a.shape[:-1] + (1,), _FLOAT32)
        if kernels.sum_matrix(a, out, (a.size // columns, columns), True):
            return out
    return np.matmul(a, ones_of(columns, a.dtype))[..., None]


def softmax_grad(g, y, out):
    """``y (g - sum(g y))`` into ``out``, as ``SoftmaxGrad.forward_into``."""
    if _fits(out, g, y) and g.shape == y.shape == out.shape:
        calls = _RowCalls(out)
        o, a, b = _kept_address(out), _kept_address(g), _kept_address(y)
        calls.binary("mul", o, a, False, b, False)
        sums, total = calls.sums(o, out)  # sums kept alive while its address is in use
        calls.binary("sub", o, a, False, total, True)
        calls.binary("mul", o, o, False, b, False)
        return out
    into(np.multiply, g, y, out)
    total = row_sums(out)
    into(np.subtract, g, total, out)
    return into(np.multiply, out, y, out)


def log_softmax_grad(g, y, out):
    """``g - exp(y) sum(g)`` into ``out``, as ``LogSoftmaxGrad.forward_into``."""
    if _fits(out, g, y) and g.shape == y.shape == out.shape:
        calls = _RowCalls(out)
        o, a = _kept_address(out), _kept_address(g)
        sums, total = calls.sums(a, out)  # sums kept alive while its address is in use
        kernels.exp(y, out=out)
        calls.binary("mul", o, o, False, total, True)
        calls.binary("sub", o, a, False, o, False)
        return out
    total = row_sums(g)
    kernels.exp(y, out=out)
    into(np.multiply, out, total, out)
    return into(np.subtract, g, out, out)


def layer_norm_grad(g, normed, scale, out):
    """``r (g - mean(g) - n mean(g n))`` into ``out``, as ``LayerNormGrad.forward_into``."""
    count = normed.dtype.type(normed.shape[-1])
    if _fits(out, g, normed, scale) and g.shape == normed.shape == out.shape:
        calls = _RowCalls(out)
        o, a, n, r = _kept_address(out), _kept_address(g), _kept_address(normed), _kept_address(scale)
        mean_g, m = calls.sums(a, out)
        np.divide(mean_g, count, out=mean_g)
        calls.binary("mul", o, a, False, n, False)
        mean_gn, mn = calls.sums(o, out)
        np.divide(mean_gn, count, out=mean_gn)
        calls.binary("mul", o, n, False, mn, True)
        calls.binary("sub", o, a, False, o, False)
        calls.binary("sub", o, o, False, m, True)
        calls.binary("mul", o, o, False, r, True)
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
