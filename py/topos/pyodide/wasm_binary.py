"""Add, Sub, Mul, Div and Where over float32 in WebAssembly SIMD, for numpy in Pyodide: broadcast operands read in place.

numpy in Pyodide runs its float32 loops as scalar wasm, and a small binary op with a broadcast
operand costs it 3-5 times native numpy (the training step's Add row, 27 calls of [256, 32]
and smaller, 29 us a call; natively 6). Five functions, part of the module wasm_gemm.py
writes, each taking the address of int32 arguments: outer, rows and cols, then for out and
each operand its address and byte strides along those three axes (outer, row, col):

    add_f32, sub_f32, mul_f32, div_f32   out = x op y      (3 + 4 * 3 values)
    where_f32                            out = c != 0 ? x : y, operands x, y, c  (3 + 4 * 4)

out[o, i, j] is at out + o * out_outer + i * out_row + j * 4 (its col stride must be 4), an
operand's element at address + o * outer + i * row + j * col with col 4 (a row read as
vectors) or 0 (one element a row, splat). Any outer, rows >= 0 and cols >= 0; the last
cols % 4 elements of a row one at a time. out may be an operand itself (same addresses), not
partly overlap one. Each element is the one IEEE single operation numpy does (f32x4.add .. div,
f32.add .. div): the same bits as numpy's, NaNs aside (a NaN's payload may differ). Where
copies x's or y's bits; c != 0 is true for NaN, as numpy has it.
"""

from .wasm_assembler import I32, V128, Code, function_body, uleb

F32 = 0x7D
# Per op: the SIMD opcode (after 0xFD) and the f32 one.
OPS = {"add": (0xE4, 0x92), "sub": (0xE5, 0x93), "mul": (0xE6, 0x94), "div": (0xE7, 0x95)}
AXES = ("address", "outer", "row", "col")
SHAPE = ("outer_count", "rows", "cols")
LOAD, STORE, LOAD_SPLAT, F32X4_NE, BITSELECT = 0x00, 0x0B, 0x09, 0x42, 0x52
F32_LOAD, F32_STORE, F32_NE, SELECT = 0x2A, 0x38, 0x5C, 0x1B
I32_ADD, I32_MUL, I32_AND, I32_GE_U = 0x6A, 0x6C, 0x71, 0x4F


def operands(op):
    return ("x", "y", "c") if op == "where" else ("x", "y")


def arguments(op):
    """The argument names, in the order the kernel reads them."""
    return SHAPE + tuple(f"{operand}_{axis}" for operand in ("out",) + operands(op) for axis in AXES)


def _index(op):
    names = operands(op)
    i32 = arguments(op) + ("o", "i", "j", "col_bytes", "vector_bytes")
    i32 += tuple(f"{n}_base" for n in ("out",) + names) + tuple(f"{n}_p" for n in ("out",) + names)
    f32 = tuple(f"{n}_f" for n in names)
    v128 = tuple(f"{n}_v" for n in names)
    return i32, f32, v128, {name: index for index, name in enumerate(("arguments",) + i32 + f32 + v128)}


def _loop_until(code, counter, limit):
    code.op(0x02, 0x40, 0x03, 0x40)
    code.get(counter), code.get(limit), code.op(I32_GE_U), code.op(0x0D, 1)


def _end_loop(code):
    code.op(0x0C, 0, 0x0B, 0x0B)


def _element(code, op, names, vectors, simd):
    """The op over the operands' values on the stack: a vector (``simd``) or one f32."""
    for name, vector in zip(names, vectors):
        if not vector:
            code.get(f"{name}_v" if simd else f"{name}_f")
        elif simd:
            code.get(f"{name}_p"), code.get("j"), code.op(I32_ADD), code.simd(LOAD, 0, 0)
        else:
            code.get(f"{name}_p"), code.get("j"), code.op(I32_ADD), code.op(F32_LOAD, 2, 0)
    if op == "where":  # x, y, c on the stack: c != 0 ? x : y
        if simd:
            code.simd(0x0C, *bytes(16)), code.simd(F32X4_NE), code.simd(BITSELECT)
        else:
            code.op(0x43, 0, 0, 0, 0), code.op(F32_NE), code.op(SELECT)
    else:
        vector_op, scalar_op = OPS[op]
        code.simd(vector_op) if simd else code.op(scalar_op)


def _variant(code, op, vectors):
    """The whole loop nest for one pattern of operands (``vectors``: which are read as vectors)."""
    names = operands(op)
    everyone = ("out",) + names
    get, set_, op_ = code.get, code.set, code.op
    op_(0x41, 0), set_("o")
    _loop_until(code, "o", "outer_count")
    for name in everyone:
        get(f"{name}_address"), get("o"), get(f"{name}_outer"), op_(I32_MUL), op_(I32_ADD), set_(f"{name}_base")
    op_(0x41, 0), set_("i")
    _loop_until(code, "i", "rows")
    for name in everyone:
        get(f"{name}_base"), get("i"), get(f"{name}_row"), op_(I32_MUL), op_(I32_ADD), set_(f"{name}_p")
    for name, vector in zip(names, vectors):
        if not vector:
            get(f"{name}_p"), code.simd(LOAD_SPLAT, 2, 0), set_(f"{name}_v")
            get(f"{name}_p"), op_(F32_LOAD, 2, 0), set_(f"{name}_f")
    op_(0x41, 0), set_("j")
    _loop_until(code, "j", "vector_bytes")
    get("out_p"), get("j"), op_(I32_ADD)
    _element(code, op, names, vectors, simd=True)
    code.simd(STORE, 0, 0)
    code.add_into("j", "j", 16)
    _end_loop(code)
    _loop_until(code, "j", "col_bytes")
    get("out_p"), get("j"), op_(I32_ADD)
    _element(code, op, names, vectors, simd=False)
    op_(F32_STORE, 2, 0)
    code.add_into("j", "j", 4)
    _end_loop(code)
    code.add_into("i", "i", 1)
    _end_loop(code)
    code.add_into("o", "o", 1)
    _end_loop(code)


def _dispatch(code, op, names, chosen):
    """if name_col { ...vector... } else { ...splat... }, operand by operand, then the variant."""
    if len(chosen) == len(names):
        _variant(code, op, chosen)
        return
    code.get(f"{names[len(chosen)]}_col")
    code.op(0x04, 0x40)  # if
    _dispatch(code, op, names, chosen + (True,))
    code.op(0x05)  # else
    _dispatch(code, op, names, chosen + (False,))
    code.op(0x0B)


def body(op):
    """The function for ``op`` ("add", "sub", "mul", "div" or "where")."""
    i32, f32, v128, index = _index(op)
    code = Code(index)
    for position, argument in enumerate(arguments(op)):
        code.get("arguments"), code.op(0x28, 2, *uleb(4 * position)), code.set(argument)
    code.get("cols"), code.const(4), code.op(I32_MUL), code.set("col_bytes")
    code.get("col_bytes"), code.const(-16), code.op(I32_AND), code.set("vector_bytes")
    _dispatch(code, op, operands(op), ())
    code.op(0x0B)
    return function_body(code, (i32, I32), (f32, F32), (v128, V128))


# The module's exports, by op.
KERNELS = {op: f"{op}_f32" for op in (*OPS, "where")}
