"""Launches of the random kernel family (``kernels/random.wgsl``): Threefry-2x32 in u32.

``RandomBits``, ``SplitKey`` and ``FoldIn`` read their key, a [2] view of u32 words
(a strided one, as a key sliced from ``SplitKey``'s keys is), and write u32 words;
``Uniform`` reads bits through their view's strides and writes a float32 value's
bits; ``RandomInt`` reads two planes of bits so and writes int32 words, ``BitField`` a field of each
word as a float32. The parameter layout is the one the kernel file's header comment writes.
"""

from ...errors import ShapeError
from ...text import format_shape
from .dispatch import LANES, MAX_RANK, Binding, Launch, grid, merge_jointly, pack, padded
from .views import View, contiguous_strides, element_count

#: Word 15 of the block: FoldIn's data.
DATA_WORD = 15


def _key_words(key):
    """Words 8 and 9: where the key's first word is and how far its second lies."""
    return [key.offset, key.strides[0] if key.strides else 1]


def random(entry, source, out_buffer, shape, data=0, label="", extra=()):
    """The launch of the kernel's ``entry`` (bits, split, fold_in, uniform_floats, randint or bit_field)
    reading view ``source`` (the key, or the bits) into a new dense ``shape`` in ``out_buffer``; ``data``
    is fold_in's, ``extra`` randint's span, multiplier and low bound or bit_field's shift and mask (words
    16 on)."""
    shape = tuple(shape)
    count = element_count(shape)
    if entry in ("uniform_floats", "randint", "bit_field"):
        # randint reads [2, ...] words as their first plane, the second one plane stride (word 15) beyond.
        strides = source.strides[1:] if entry == "randint" else source.strides
        merged, (out_strides, strides) = merge_jointly(shape, [contiguous_strides(shape), strides])
        if len(merged) > MAX_RANK:
            raise ShapeError(f"{entry}: {format_shape(shape)} keeps more than {MAX_RANK} axes", shapes=[shape])
        words = [count, len(merged)] + padded(merged, MAX_RANK) + [source.offset] + padded(strides, MAX_RANK)
        data = source.strides[0] if entry == "randint" else data
    else:
        words = [count, 0] + [0] * MAX_RANK + _key_words(source) + [0] * (MAX_RANK - 1)
    words = padded(words, DATA_WORD) + [data] + list(extra)
    invocations = count // 2 if entry == "split" else 1 if entry == "fold_in" else count
    bindings = (Binding(1, out_buffer, "read_write"), Binding(2, source.buffer, "read"))
    return Launch(
        "random",
        entry,
        (),
        grid(-(-invocations // LANES)),
        bindings,
        pack(words),
        label=label,
        views=(("out", View.of_buffer(out_buffer, shape)), ("source", source)),
    )
