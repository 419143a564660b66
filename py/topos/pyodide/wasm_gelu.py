"""GELU and its derivative in WebAssembly SIMD (float32), for numpy in Pyodide: one pass each.

``kernels`` computes GELU through one exp in numpy passes; in Pyodide numpy's exp alone
costs about 12 ns an element. These two functions, part of the module wasm_gemm.py writes,
do the whole of each formula four elements at a time, with exp by Cephes' expf method as
wasm_exp.py writes it (``emit_exp``: about 1 ulp, overflowing to inf and rounding into
the denormals as exp does), in the order ``kernels`` writes its passes:

    gelu_f32(arguments)       out = x / (1 + exp(-2u))
    gelu_grad_f32(arguments)  out = g s (1 + x (1 - s) (2c + 6ck x^2)),  s = 1 / (1 + exp(-2u))

with u = c (x + k x^3). ``arguments`` is the address of four int32 values: x, g, out and the
count of elements (a multiple of 4; x, g and out contiguous float32; g unused by gelu).
NaN and the infinities come out as the tanh form's do.
"""

import struct

from .wasm_assembler import I32, V128, Code, function_body, uleb
from .wasm_exp import emit_exp

GELU_C = 0.7978845608028654
GELU_K = 0.044715
ARGUMENTS = ("x", "g", "out", "count")
I32_LOCALS = ARGUMENTS + ("offset",)
V128_LOCALS = ("vx", "vx2", "vy", "vq", "vn", "vr", "vp", "vs", "vslope", "vi")
INDEX = {name: index for index, name in enumerate(("arguments",) + I32_LOCALS + V128_LOCALS)}

# SIMD opcodes (after the 0xFD prefix).
LOAD, STORE, CONST = 0x00, 0x0B, 0x0C
ADD, SUB, MUL, DIV = 0xE4, 0xE5, 0xE6, 0xE7


def body(grad):
    code = Code(INDEX)
    get, set_, op, simd = code.get, code.set, code.op, code.simd

    def f32(value):
        simd(CONST, *struct.pack("<4f", *(value,) * 4))

    def combine(opcode, left, right):
        """Push left OP right (local names or floats)."""
        for operand in (left, right):
            get(operand) if isinstance(operand, str) else f32(operand)
        simd(opcode)

    for index, name in enumerate(ARGUMENTS):
        get("arguments"), op(0x28, 2, *uleb(4 * index)), set_(name)
    code.const(0)
    set_("offset")
    # count: in bytes from here on.
    get("count"), code.const(4), op(0x6C), set_("count")
    op(0x02, 0x40, 0x03, 0x40)
    get("offset"), get("count"), op(0x4F), op(0x0D, 1)
    get("x"), get("offset"), op(0x6A), simd(LOAD, 4, 0), set_("vx")
    combine(MUL, "vx", "vx"), set_("vx2")
    # y = -2u = (x^2 (-2ck) + (-2c)) x
    combine(MUL, "vx2", -2.0 * GELU_C * GELU_K), f32(-2.0 * GELU_C), simd(ADD), get("vx"), simd(MUL), set_("vy")
    emit_exp(code)  # q = exp(y), in vq (wasm_exp.py)
    # w = 1 + q (in vq)
    combine(ADD, "vq", 1.0), set_("vq")
    if not grad:
        get("out"), get("offset"), op(0x6A), combine(DIV, "vx", "vq"), simd(STORE, 4, 0)
    else:
        combine(DIV, 1.0, "vq"), set_("vs")
        # slope = (x^2 (6ck) + 2c) x; slope -= slope s; slope += 1; slope *= s; out = slope g
        combine(MUL, "vx2", 6.0 * GELU_C * GELU_K), f32(2.0 * GELU_C), simd(ADD), get("vx"), simd(MUL), set_("vslope")
        (
            get("vslope"),
            combine(MUL, "vslope", "vs"),
            simd(SUB),
            f32(1.0),
            simd(ADD),
            get("vs"),
            simd(MUL),
            set_("vslope"),
        )
        get("out"), get("offset"), op(0x6A)
        get("vslope"), get("g"), get("offset"), op(0x6A), simd(LOAD, 4, 0), simd(MUL), simd(STORE, 4, 0)
    code.next_vector_and_loop()
    return function_body(code, (I32_LOCALS, I32), (V128_LOCALS, V128))
