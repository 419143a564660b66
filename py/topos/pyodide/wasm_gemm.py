"""Matrix products in WebAssembly SIMD, written here as bytes: the page's own kernels.

Pyodide's OpenBLAS is a generic build without wasm SIMD. This module writes a small
WebAssembly module (no toolchain: the bytes are assembled below) with two functions,
``sgemm`` (float32) and ``dgemm`` (float64), each computing ``C = A @ B`` with 128-bit
vectors, four rows by two vectors of columns at a time (eight accumulators: 4 x 8 for
float32, 4 x 4 for float64), summing each element over the contracting axis in order
p = 0, 1, ... (a plain loop's order: the tolerance of blas.py holds).
The module imports the memory it works in (``env.memory``) and declares itself a dynamic
library (a ``dylink.0`` section with no memory or table of its own), so that Pyodide's
loader instantiates it over Pyodide's own memory (web/src/blas-loader.ts): numpy arrays'
data pointers are then addresses the kernel reads and writes directly. The same module holds
the float32 elementwise kernels ``gelu_f32``, ``gelu_grad_f32`` (wasm_gelu.py) and
``exp_f32``, ``tanh_f32`` (wasm_exp.py) and the float32 sums ``colsum_f32``,
``rowsum_f32`` and maxima ``rowmax_f32`` (wasm_sum.py), and the float32 binary ops
``add_f32``, ``sub_f32``, ``mul_f32``, ``div_f32`` and ``where_f32`` over broadcast operands
(wasm_binary.py).

    sgemm(arguments)   (and dgemm alike): ``arguments`` is the address of eighteen int32 values,
    a, b, c, m, n, k, a_row, a_col, b_row, c_row,
    outer, a_outer, b_outer, c_outer, inner, a_inner, b_inner, c_inner

Addresses and strides are in bytes. A[i, p] is at ``a + i*a_row + p*a_col`` (any layout:
A is read one element at a time), B[p, j] at ``b + p*b_row + j*size`` and C[i, j] at
``c + i*c_row + j*size`` (rows of B and C contiguous; size 4 or 8). The product is done for
``outer`` x ``inner`` matrices, the (x0, x1)-th at a + x0*a_outer + x1*a_inner (and b, c
alike): two batch axes in one call (a 2-D product passes 1 and 1). ``m`` must be a
multiple of ``M_BLOCK`` and ``n`` of ``N_BLOCK[dtype]``; blas.py multiplies the rest
of a product's rows and columns in numpy.
"""

from . import wasm_binary, wasm_exp, wasm_gelu, wasm_sum
from .wasm_assembler import I32, V128, Code, function_body, name, section, uleb, vector

M_BLOCK = 4
# Columns a block: two vectors of 4 float32 or of 2 float64.
N_BLOCK = {"float32": 8, "float64": 4}
# Per dtype: element size, the load-and-splat opcode and its alignment (log2), add, mul.
_KINDS = {
    "float32": (4, 0x09, 2, 0xE4, 0xE6),
    "float64": (8, 0x0A, 3, 0xF0, 0xF2),
}


# The function's one parameter: the address of eighteen int32 values, the arguments in this order
# (one argument, because every argument of a call from Python to JavaScript costs a conversion).
ARGUMENTS = (
    "a", "b", "c", "m", "n", "k", "a_row", "a_col", "b_row", "c_row",
    "outer", "a_outer", "b_outer", "c_outer", "inner", "a_inner", "b_inner", "c_inner",
)  # fmt: skip
I32_LOCALS = ARGUMENTS + ("i", "j", "p", "pa", "pb", "pc", "row1", "row2", "row3", "x0", "x1", "A", "B", "C")
V128_LOCALS = ("acc0", "acc1", "acc2", "acc3", "acc4", "acc5", "acc6", "acc7", "b0", "b1", "av")
INDEX = {name: index for index, name in enumerate(("arguments",) + I32_LOCALS + V128_LOCALS)}


def _body(dtype):
    size, load_splat, align, add, mul = _KINDS[dtype]
    code = Code(INDEX)
    get, set_, op, simd = code.get, code.set, code.op, code.simd
    for index, argument in enumerate(ARGUMENTS):
        get("arguments"), op(0x28, 2, *uleb(4 * index)), set_(argument)  # i32.load offset 4 index
    # row1..row3: the byte offsets of A's next three rows.
    get("a_row")
    set_("row1")
    code.add_into("row2", "a_row", "a_row")
    code.add_into("row3", "row2", "a_row")
    # Two batch axes: x0 over `outer` matrices, x1 over `inner`; A, B, C the matrices' addresses.
    code.const(0)
    set_("x0")
    op(0x02, 0x40, 0x03, 0x40)
    get("x0"), get("outer"), op(0x4F), op(0x0D, 1)
    code.const(0)
    set_("x1")
    op(0x02, 0x40, 0x03, 0x40)
    get("x1"), get("inner"), op(0x4F), op(0x0D, 1)
    for base, outer, inner in (("A", "a_outer", "a_inner"), ("B", "b_outer", "b_inner"), ("C", "c_outer", "c_inner")):
        (
            get(base.lower()),
            get("x0"),
            get(outer),
            op(0x6C),
            op(0x6A),
            get("x1"),
            get(inner),
            op(0x6C),
            op(0x6A),
            set_(base),
        )
    code.const(0)
    set_("i")
    op(0x02, 0x40, 0x03, 0x40)  # block, loop: over row blocks
    get("i"), get("m"), op(0x4F), op(0x0D, 1)  # i >= m: done
    code.const(0)
    set_("j")
    op(0x02, 0x40, 0x03, 0x40)  # block, loop: over column blocks
    get("j"), get("n"), op(0x4F), op(0x0D, 1)
    for index in range(8):
        simd(0x0C, *bytes(16))  # v128.const 0
        set_(f"acc{index}")
    # pa = a + i * a_row; pb = b + 4 j; p = k
    get("A"), get("i"), get("a_row"), op(0x6C), op(0x6A), set_("pa")
    get("B"), get("j"), code.const(size), op(0x6C), op(0x6A), set_("pb")
    get("k"), set_("p")
    op(0x02, 0x40, 0x03, 0x40)  # block, loop: over the contracting axis
    get("p"), op(0x45), op(0x0D, 1)  # p == 0: done
    get("pb"), simd(0x00, 4, 0), set_("b0")  # v128.load align 2^4, offset 0
    get("pb"), simd(0x00, 4, 16), set_("b1")
    for row, offset in enumerate((None, "row1", "row2", "row3")):
        get("pa")
        if offset:
            get(offset), op(0x6A)
        simd(load_splat, align, 0)  # v128.load32_splat / v128.load64_splat: A[i, p] in every lane
        set_("av")
        for half, operand in enumerate(("b0", "b1")):
            accumulator = f"acc{2 * row + half}"
            get(accumulator), get("av"), get(operand), simd(mul), simd(add)  # acc + av * b
            set_(accumulator)
    code.add_into("pa", "pa", "a_col")
    code.add_into("pb", "pb", "b_row")
    get("p"), code.const(1), op(0x6B), set_("p")
    op(0x0C, 0)  # br loop
    op(0x0B, 0x0B)  # end loop, end block
    # pc = c + i * c_row + 4 j; four rows of two vectors each
    get("C"), get("i"), get("c_row"), op(0x6C), op(0x6A), get("j"), code.const(size), op(0x6C), op(0x6A), set_("pc")
    for row in range(4):
        for half in range(2):
            get("pc"), get(f"acc{2 * row + half}"), simd(0x0B, 4, 16 * half)  # v128.store
        code.add_into("pc", "pc", "c_row")
    code.add_into("j", "j", N_BLOCK[dtype])
    op(0x0C, 0)
    op(0x0B, 0x0B)
    code.add_into("i", "i", M_BLOCK)
    op(0x0C, 0)
    op(0x0B, 0x0B)
    code.add_into("x1", "x1", 1)
    op(0x0C, 0)
    op(0x0B, 0x0B)
    code.add_into("x0", "x0", 1)
    op(0x0C, 0)
    op(0x0B, 0x0B)
    op(0x0B)  # end of the function
    return function_body(code, (I32_LOCALS, I32), (V128_LOCALS, V128))


def module_bytes():
    """The WebAssembly module, as bytes."""
    # dylink.0 first: a dynamic library with no memory, table or needed libraries of its own.
    mem_info = uleb(0) * 4
    dylink = name("dylink.0") + bytes([1]) + uleb(len(mem_info)) + mem_info
    types = vector([bytes([0x60]) + vector([bytes([I32])]) + vector([])])
    imports = vector([name("env") + name("memory") + bytes([0x02, 0x00]) + uleb(0)])
    bodies = [("sgemm", _body("float32")), ("dgemm", _body("float64"))]
    bodies += [("gelu_f32", wasm_gelu.body(grad=False)), ("gelu_grad_f32", wasm_gelu.body(grad=True))]
    bodies += [("exp_f32", wasm_exp.body()), ("tanh_f32", wasm_exp.body(tanh=True))]
    bodies += [("colsum_f32", wasm_sum.colsum_body()), ("rowsum_f32", wasm_sum.rowsum_body())]
    bodies += [("rowmax_f32", wasm_sum.rowsum_body(maximum=True))]
    bodies += [(label, wasm_binary.body(op)) for op, label in wasm_binary.KERNELS.items()]
    functions = vector([uleb(0)] * len(bodies))
    exports = vector([name(label) + bytes([0x00]) + uleb(index) for index, (label, _) in enumerate(bodies)])
    code = vector([body for _, body in bodies])
    return (
        b"\x00asm\x01\x00\x00\x00"
        + section(0, dylink)
        + section(1, types)
        + section(2, imports)
        + section(3, functions)
        + section(7, exports)
        + section(10, code)
    )
