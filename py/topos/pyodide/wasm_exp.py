"""exp and tanh in WebAssembly SIMD (float32), for numpy in Pyodide: one pass, four elements at a time.

numpy in Pyodide runs ``np.exp`` at about 10-15 ns an float32 element (natively under 0.5):
the softmax's and the cross-entropy's exps were the largest elementwise row of the page's
training step after GELU. ``exp_f32``, part of the module wasm_gemm.py writes, takes the
address of four int32 values, the layout of wasm_gelu.py's kernels: x, (unused), out and
the count of elements (a multiple of 4; x and out contiguous float32, out may be x).

The method is Cephes' expf, as ``emit_exp`` writes it (wasm_gelu.py's GELU shares it):
y clamped to [LOW, HIGH], n = round(y log2 e), r = y - n (C1 + C2) in [-ln2/2, ln2/2], a
degree-7 polynomial for exp(r), then the scale 2^n as two factors 2^(n >> 1) 2^(n - (n >> 1))
(each a normal float32), so that results past the largest float32 overflow to inf and results
below the smallest normal round once into the denormals, as a correctly rounded exp does.
``kernels.EXP_TOLERANCE`` bounds the difference from exp in float64: 2 eps relatively plus
the smallest denormal absolutely (tests/python/test_blas.py in Pyodide checks it at 0, +-tiny,
denormals, +-88.7, -87.3 .. -104, +-inf and NaN). NaN stays NaN, exp(-inf) is 0 and exp(inf)
inf; unlike ``np.exp`` it raises no floating-point warning on overflow.

``tanh_f32`` (the same four arguments) is Cephes' tanhf: for |x| < 0.625 the odd polynomial
x + x^3 P(x^2), elsewhere sign(x) (1 - 2 / (1 + exp(2|x|))) with the exp above (1 for large
|x|, where exp is inf; NaN stays NaN). numpy in Pyodide runs ``np.tanh`` at 18-41 ns an
element. ``kernels.TANH_TOLERANCE`` bounds it against tanh in float64 (checked as exp's).
"""

import struct

from .wasm_assembler import I32, V128, Code, function_body, uleb

# Cephes expf: exp(y) = 2^n exp(r), n = round(y log2 e), r = y - n (C1 + C2).
LOG2E = 1.44269504088896341
C1, C2 = 0.693359375, -2.12194440e-4
POLYNOMIAL = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
# The clamp: exp(89) overflows float32 and exp(-104) is below half the smallest denormal, so the
# clamped values give inf and 0 by the scale's own rounding (-inf gives 0, inf gives inf).
HIGH, LOW = 89.0, -104.0

# SIMD opcodes (after the 0xFD prefix).
LOAD, STORE, CONST, NEAREST = 0x00, 0x0B, 0x0C, 0x6A
F32_LT, AND, OR, BITSELECT, ABS = 0x43, 0x4E, 0x50, 0x52, 0xE0
ADD, SUB, MUL, DIV, PMIN, PMAX = 0xE4, 0xE5, 0xE6, 0xE7, 0xEA, 0xEB
I32_SHL, I32_SHR_S, I32_ADD, I32_SUB, TRUNC_SAT = 0xAB, 0xAC, 0xAE, 0xB1, 0xF8

ARGUMENTS = ("x", "g", "out", "count")
I32_LOCALS = ARGUMENTS + ("offset",)
V128_LOCALS = ("vy", "vq", "vn", "vr", "vp", "vi", "vx", "va", "vz")
# Cephes tanhf: tanh(x) = x + x^3 P(x^2) for |x| < SMALL.
TANH_SMALL = 0.625
TANH_POLYNOMIAL = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1)
INDEX = {name: index for index, name in enumerate(("arguments",) + I32_LOCALS + V128_LOCALS)}


def f32(code, value):
    code.simd(CONST, *struct.pack("<4f", *(value,) * 4))


def i32(code, value):
    code.simd(CONST, *struct.pack("<4i", *(value,) * 4))


def emit_exp(code):
    """vq = exp(vy), four float32 lanes (locals vy, vq, vn, vr, vp, vi of ``code``'s function)."""
    get, set_, simd = code.get, code.set, code.simd

    def combine(opcode, left, right):
        for operand in (left, right):
            get(operand) if isinstance(operand, str) else f32(code, operand)
        simd(opcode)

    # pmax(y, LOW) is y < LOW ? LOW : y, one instruction, and keeps a NaN y (so does pmin).
    get("vy"), f32(code, LOW), simd(PMAX), f32(code, HIGH), simd(PMIN), set_("vr")
    combine(MUL, "vr", LOG2E), simd(NEAREST), set_("vn")
    get("vr"), combine(MUL, "vn", C1), simd(SUB), combine(MUL, "vn", C2), simd(SUB), set_("vr")
    f32(code, POLYNOMIAL[0]), set_("vp")
    for coefficient in POLYNOMIAL[1:]:
        combine(MUL, "vp", "vr"), f32(code, coefficient), simd(ADD), set_("vp")
    # p r^2 + r + 1
    combine(MUL, "vp", "vr"), get("vr"), simd(MUL), get("vr"), simd(ADD), f32(code, 1.0), simd(ADD), set_("vp")
    # 2^n as 2^h 2^(n - h), h = n >> 1: each factor (e + 127) << 23 as float bits, in [2^-75, 2^64].
    get("vn"), simd(TRUNC_SAT), set_("vi")
    get("vi"), code.const(1), simd(I32_SHR_S), set_("vn")  # h, as int32 lanes
    get("vp"), get("vn"), i32(code, 127), simd(I32_ADD), code.const(23), simd(I32_SHL), simd(MUL)
    get("vi"), get("vn"), simd(I32_SUB), i32(code, 127), simd(I32_ADD), code.const(23), simd(I32_SHL), simd(MUL)
    set_("vq")


def emit_tanh(code):
    """vq = tanh(vx), four float32 lanes (locals vx, va, vz and those of ``emit_exp``)."""
    get, set_, simd = code.get, code.set, code.simd
    get("vx"), simd(ABS), set_("va")
    # large: 1 - 2 / (1 + exp(2|x|)), in vz
    get("va"), get("va"), simd(ADD), set_("vy")
    emit_exp(code)
    f32(code, 1.0), f32(code, 2.0), get("vq"), f32(code, 1.0), simd(ADD), simd(DIV), simd(SUB), set_("vz")
    # with x's sign: (bits of vz) | (bits of x & sign)
    get("vz"), get("vx"), i32(code, -(1 << 31)), simd(AND), simd(OR), set_("vz")
    # small: x + x (x^2 P(x^2)), in vq
    get("vx"), get("vx"), simd(MUL), set_("vr")  # x^2
    f32(code, TANH_POLYNOMIAL[0]), set_("vp")
    for coefficient in TANH_POLYNOMIAL[1:]:
        get("vp"), get("vr"), simd(MUL), f32(code, coefficient), simd(ADD), set_("vp")
    get("vp"), get("vr"), simd(MUL), get("vx"), simd(MUL), get("vx"), simd(ADD), set_("vq")
    # |x| < SMALL ? small : large (NaN compares false: the large form, NaN from exp)
    get("vq"), get("vz"), get("va"), f32(code, TANH_SMALL), simd(F32_LT), simd(BITSELECT), set_("vq")


def body(tanh=False):
    """exp_f32(arguments): out = exp(x) over ``count`` float32 elements (``tanh``: tanh_f32, out = tanh(x))."""
    code = Code(INDEX)
    get, set_, op, simd = code.get, code.set, code.op, code.simd
    for index, name in enumerate(ARGUMENTS):
        get("arguments"), op(0x28, 2, *uleb(4 * index)), set_(name)
    code.const(0)
    set_("offset")
    get("count"), code.const(4), op(0x6C), set_("count")  # in bytes from here on
    op(0x02, 0x40, 0x03, 0x40)
    get("offset"), get("count"), op(0x4F), op(0x0D, 1)
    get("x"), get("offset"), op(0x6A), simd(LOAD, 4, 0), set_("vx" if tanh else "vy")
    emit_tanh(code) if tanh else emit_exp(code)
    get("out"), get("offset"), op(0x6A), get("vq"), simd(STORE, 4, 0)
    code.next_vector_and_loop()
    return function_body(code, (I32_LOCALS, I32), (V128_LOCALS, V128))
