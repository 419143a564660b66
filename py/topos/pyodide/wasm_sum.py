"""Sums of a float32 matrix's columns or rows, and its rows' maxima, in WebAssembly SIMD, for numpy in Pyodide.

numpy in Pyodide reduces a small matrix slowly (a ``Sum``'s ones product there, 15 us for the
bias gradient of [256, 32]; natively 1-3): the training step's Sum row was 9 times native numpy.
Two functions, part of the module wasm_gemm.py writes, each taking the address of four int32
values: x, out, rows and cols (x a C-contiguous [rows, cols] float32 matrix, out contiguous
float32; any rows >= 1, cols >= 1, no multiple of 4 needed):

    colsum_f32(arguments)  out[j] = sum over i of x[i, j]  (cols elements: a Sum over leading axes)
    rowsum_f32(arguments)  out[i] = sum over j of x[i, j]  (rows elements: a Sum over trailing axes)
    rowmax_f32(arguments)  out[i] = max over j of x[i, j]  (rows elements: a Max over the last axis)

``colsum_f32`` adds 32 columns at a time (eight f32x4 sums, independent), then 16, then 4, the rows
in order i = 0, 1, ... (the order of the ones product it replaces), the last cols % 4 columns
one at a time in the same order.
``rowsum_f32`` adds a row's elements j = 4q + l into lane l in order q = 0, 1, ..., then the
lanes as (l0 + l1) + (l2 + l3), then the last cols % 4 elements in order. Either is a sum in
some order of float32 additions: ``kernels.SUM_TOLERANCE`` bounds it (n terms:
n eps sum |x|). NaN and the infinities propagate as in any sum.

``rowmax_f32`` (the same arguments) is ``rowsum_f32`` with f32x4.max and f32.max from -inf:
out[i] = the largest x[i, j], exact, NaN where any term is NaN (as ``np.maximum`` has it; of
+0 and -0 it takes +0, where numpy takes the first: equal values, the sign of a zero may differ).
"""

import math
import struct

from .wasm_assembler import I32, V128, Code, function_body, uleb

F32 = 0x7D
ARGUMENTS = ("x", "out", "rows", "cols")
I32_LOCALS = ARGUMENTS + ("i", "j", "p", "vector_bytes", "wide8_bytes", "wide4_bytes", "col_bytes")
F32_LOCALS = ("s",)
V128_LOCALS = ("acc", *(f"acc{index}" for index in range(8)))
INDEX = {name: index for index, name in enumerate(("arguments",) + I32_LOCALS + F32_LOCALS + V128_LOCALS)}

# Opcodes: SIMD ones after the 0xFD prefix, the rest plain.
LOAD, STORE, ADD, MAX, EXTRACT = 0x00, 0x0B, 0xE4, 0xE9, 0x1F
F32_LOAD, F32_STORE, F32_ADD, F32_MAX, F32_CONST = 0x2A, 0x38, 0x92, 0x97, 0x43
I32_ADD, I32_SUB, I32_MUL, I32_AND, I32_GE_U, I32_EQZ = 0x6A, 0x6B, 0x6C, 0x71, 0x4F, 0x45


def _loop_until(code, counter, limit):
    """block, loop, exit when ``counter >= limit`` (closed by ``_end_loop``)."""
    code.op(0x02, 0x40, 0x03, 0x40)
    code.get(counter), code.get(limit), code.op(I32_GE_U), code.op(0x0D, 1)


def _end_loop(code):
    code.op(0x0C, 0)  # br loop
    code.op(0x0B, 0x0B)  # end loop, end block


def _prologue(code):
    get, set_, op = code.get, code.set, code.op
    for index, argument in enumerate(ARGUMENTS):
        get("arguments"), op(0x28, 2, *uleb(4 * index)), set_(argument)
    get("cols"), code.const(4), op(I32_MUL), set_("col_bytes")  # a row, in bytes
    get("col_bytes"), code.const(-16), op(I32_AND), set_("vector_bytes")  # its whole vectors


def _zero(code, accumulator="acc"):
    code.simd(0x0C, *bytes(16))
    code.set(accumulator)


def _finish(code):
    code.op(0x0B)
    return function_body(code, (I32_LOCALS, I32), (F32_LOCALS, F32), (V128_LOCALS, V128))


def _column_pass(code, width, limit):
    """For each block of columns from byte j until ``limit``: accumulate down the rows, in order.

    ``width`` 8 or 4: that many vectors (32 or 16 columns: independent sums, to hide the add's
    latency, a row's loads together), 1: one vector, 0: one column (f32)."""
    get, set_, op, simd = code.get, code.set, code.op, code.simd
    accumulators = [f"acc{index}" for index in range(width)] or ["s"]
    _loop_until(code, "j", limit)
    for accumulator in accumulators:
        _zero(code, accumulator) if width else (op(F32_CONST, 0, 0, 0, 0), set_(accumulator))
    get("x"), get("j"), op(I32_ADD), set_("p")
    get("rows"), set_("i")
    op(0x02, 0x40, 0x03, 0x40)
    get("i"), op(I32_EQZ), op(0x0D, 1)
    for index, accumulator in enumerate(accumulators):
        get(accumulator), get("p")
        if width:
            simd(LOAD, 0, *uleb(16 * index)), simd(ADD)
        else:
            op(F32_LOAD, 2, 0), op(F32_ADD)
        set_(accumulator)
    code.add_into("p", "p", "col_bytes")
    get("i"), code.const(1), op(I32_SUB), set_("i")
    _end_loop(code)
    for index, accumulator in enumerate(accumulators):
        get("out"), get("j"), op(I32_ADD), get(accumulator)
        simd(STORE, 0, *uleb(16 * index)) if width else op(F32_STORE, 2, 0)
    code.add_into("j", "j", 16 * width or 4)
    _end_loop(code)


def colsum_body():
    code = Code(INDEX)
    _prologue(code)
    for limit, mask in (("wide8_bytes", -128), ("wide4_bytes", -64)):
        code.get("col_bytes"), code.const(mask), code.op(I32_AND), code.set(limit)
    code.const(0), code.set("j")
    _column_pass(code, 8, "wide8_bytes")
    _column_pass(code, 4, "wide4_bytes")
    _column_pass(code, 1, "vector_bytes")
    _column_pass(code, 0, "col_bytes")
    return _finish(code)


def rowsum_body(maximum=False):
    """rowsum_f32 (``maximum``: rowmax_f32, the same with f32x4.max and f32.max from -inf)."""
    code = Code(INDEX)
    _prologue(code)
    get, set_, op, simd = code.get, code.set, code.op, code.simd
    vector_op, scalar_op = (MAX, F32_MAX) if maximum else (ADD, F32_ADD)
    code.const(0), set_("i")
    _loop_until(code, "i", "rows")
    get("x"), get("i"), get("col_bytes"), op(I32_MUL), op(I32_ADD), set_("p")
    if maximum:
        simd(0x0C, *struct.pack("<4f", *(-math.inf,) * 4)), set_("acc")
    else:
        _zero(code)
    code.const(0), set_("j")
    _loop_until(code, "j", "vector_bytes")
    get("acc"), get("p"), get("j"), op(I32_ADD), simd(LOAD, 0, 0), simd(vector_op), set_("acc")
    code.add_into("j", "j", 16)
    _end_loop(code)
    # (l0 + l1) + (l2 + l3)
    get("acc"), simd(EXTRACT, 0), get("acc"), simd(EXTRACT, 1), op(scalar_op)
    get("acc"), simd(EXTRACT, 2), get("acc"), simd(EXTRACT, 3), op(scalar_op), op(scalar_op), set_("s")
    _loop_until(code, "j", "col_bytes")
    get("s"), get("p"), get("j"), op(I32_ADD), op(F32_LOAD, 2, 0), op(scalar_op), set_("s")
    code.add_into("j", "j", 4)
    _end_loop(code)
    get("out"), get("i"), code.const(4), op(I32_MUL), op(I32_ADD), get("s"), op(F32_STORE, 2, 0)
    code.add_into("i", "i", 1)
    _end_loop(code)
    return _finish(code)
