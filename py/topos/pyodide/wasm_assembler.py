"""A few WebAssembly instructions as bytes: what wasm_gemm.py and wasm_gelu.py assemble with.

No toolchain: LEB128 numbers, sections and vectors as the binary format spells them, and a
function body written one instruction a call, locals named (``index`` maps names to indices).
"""

I32, V128 = 0x7F, 0x7B


def uleb(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def sleb(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if (value == 0 and not byte & 0x40) or (value == -1 and byte & 0x40):
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def name(text):
    data = text.encode()
    return uleb(len(data)) + data


def section(section_id, payload):
    return bytes([section_id]) + uleb(len(payload)) + payload


def vector(items):
    return uleb(len(items)) + b"".join(items)


class Code:
    """The function body, one instruction a call."""

    def __init__(self, index):
        self.out = bytearray()
        self.index = index

    def op(self, *data):
        self.out += bytes(data)

    def get(self, name):
        self.op(0x20, *uleb(self.index[name]))

    def set(self, name):
        self.op(0x21, *uleb(self.index[name]))

    def const(self, value):
        self.op(0x41, *sleb(value))

    def simd(self, opcode, *rest):
        self.out += b"\xfd" + uleb(opcode) + bytes(rest)

    def next_vector_and_loop(self, offset="offset"):
        """``offset`` += 16 bytes, back to the loop's start; then end the loop, its block and the function."""
        self.add_into(offset, offset, 16)
        self.op(0x0C, 0)
        self.op(0x0B, 0x0B)
        self.op(0x0B)

    def add_into(self, name, *operands):
        """name = operand0 + operand1 (i32), operands given as local names or ints."""
        for operand in operands:
            self.get(operand) if isinstance(operand, str) else self.const(operand)
        self.op(0x6A)
        self.set(name)


def function_body(code, *locals_by_type):
    """A code section's entry for ``code``: its locals, declared as ``(names, type)`` groups in
    the order of their indices, then its instructions, the whole prefixed by its size."""
    declared = vector([uleb(len(names)) + bytes([value_type]) for names, value_type in locals_by_type])
    payload = declared + bytes(code.out)
    return uleb(len(payload)) + payload
