"""GELU and its derivative in WebAssembly SIMD (float32), for numpy in Pyodide: one pass each.

``pyodide_math`` computes GELU through one exp in numpy passes; in Pyodide numpy's exp alone
costs about 12 ns an element. These two functions, part of the module ops/wasm_gemm.py writes,
do the whole of each formula four elements at a time, with exp by Cephes' expf method
(range reduction to r in [-ln2/2, ln2/2], a degree-7 polynomial, 2^n put into the exponent
bits; about 1 ulp), in the order ``pyodide_math`` writes its passes:

    gelu_f32(arguments)       out = x / (1 + exp(-2u))
    gelu_grad_f32(arguments)  out = g s (1 + x (1 - s) (2c + 6ck x^2)),  s = 1 / (1 + exp(-2u))

with u = c (x + k x^3). ``arguments`` is the address of four int32 values: x, g, out and the
count of elements (a multiple of 4; x, g and out contiguous float32; g unused by gelu). exp
of more than 88 is taken as infinity and of less than -87 as zero (where the true value
lies within 3.4e38 and 1.2e-38 of those, results differ from the numpy form's by less than
the smallest normal float32, absolutely): NaN and the infinities come out as the tanh
form's do.
"""

import struct

from .wasm_assembler import I32, V128, Code, uleb, vector

GELU_C = 0.7978845608028654
GELU_K = 0.044715
ARGUMENTS = ("x", "g", "out", "count")
I32_LOCALS = ARGUMENTS + ("offset",)
V128_LOCALS = ("vx", "vx2", "vy", "vq", "vn", "vr", "vp", "vs", "vslope")
INDEX = {name: index for index, name in enumerate(("arguments",) + I32_LOCALS + V128_LOCALS)}

# Cephes expf: exp(y) = 2^n exp(r), n = round(y log2 e), r = y - n (C1 + C2).
LOG2E = 1.44269504088896341
C1, C2 = 0.693359375, -2.12194440e-4
POLYNOMIAL = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
HIGH, LOW = 88.0, -87.0

# SIMD opcodes (after the 0xFD prefix).
LOAD, STORE, CONST, F32_SPLAT = 0x00, 0x0B, 0x0C, 0x13
F32_LT, F32_GT, BITSELECT, NEAREST = 0x43, 0x44, 0x52, 0x6A
ADD, SUB, MUL, DIV, PMIN, PMAX = 0xE4, 0xE5, 0xE6, 0xE7, 0xEA, 0xEB
I32_SHL, I32_ADD, TRUNC_SAT = 0xAB, 0xAE, 0xF8


def body(grad):
    code = Code(INDEX)
    get, set_, op, simd = code.get, code.set, code.op, code.simd

    def f32(value):
        simd(CONST, *struct.pack("<4f", *(value,) * 4))

    def i32(value):
        simd(CONST, *struct.pack("<4i", *(value,) * 4))

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
    # q = exp(y): clamp, reduce, polynomial, scale; then y > HIGH gives inf and y < LOW zero.
    # pmax(y, LOW) is y < LOW ? LOW : y, one instruction, and keeps a NaN y (so does pmin).
    get("vy"), f32(LOW), simd(PMAX), f32(HIGH), simd(PMIN), set_("vr")
    combine(MUL, "vr", LOG2E), simd(NEAREST), set_("vn")
    get("vr"), combine(MUL, "vn", C1), simd(SUB), combine(MUL, "vn", C2), simd(SUB), set_("vr")
    f32(POLYNOMIAL[0]), set_("vp")
    for coefficient in POLYNOMIAL[1:]:
        combine(MUL, "vp", "vr"), f32(coefficient), simd(ADD), set_("vp")
    # p r^2 + r + 1
    combine(MUL, "vp", "vr"), get("vr"), simd(MUL), get("vr"), simd(ADD), f32(1.0), simd(ADD), set_("vp")
    # 2^n: (n + 127) << 23 as float bits
    get("vn"), simd(TRUNC_SAT), i32(127), simd(I32_ADD), code.const(23), simd(I32_SHL)
    get("vp"), simd(MUL), set_("vq")
    f32(float("inf")), get("vq"), combine(F32_GT, "vy", HIGH), simd(BITSELECT), set_("vq")
    f32(0.0), get("vq"), combine(F32_LT, "vy", LOW), simd(BITSELECT), set_("vq")
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
    code.add_into("offset", "offset", 16)
    op(0x0C, 0)
    op(0x0B, 0x0B)
    op(0x0B)
    locals_ = vector([uleb(len(I32_LOCALS)) + bytes([I32]), uleb(len(V128_LOCALS)) + bytes([V128])])
    payload = locals_ + bytes(code.out)
    return uleb(len(payload)) + payload
