"""Random numbers in the recording: the Threefry-2x32 counter-based generator, as JAX has it.

A key is a ``uint32[2]`` value (JAX's threefry key layout, ``jax.random.PRNGKey``'s
data), usually an input of the recording. Every primitive here is a pure function
of its key: the same key gives the same bits on numpy, XLA (integer StableHLO)
and WebGPU (``kernels/random.wgsl``, in ``u32``), so a run that draws random
numbers is reproducible on every backend. Nothing here is differentiable.

- ``threefry2x32(key, x0, x1)``: the hash, 20 rounds (Salmon et al., "Parallel random
  numbers: as easy as 1, 2, 3", SC 2011; Random123's reference values hold for it);
- ``RandomBits(key)``, attribute ``shape``: uint32 bits in JAX's *partitionable* layout
  (``jax_threefry_partitionable=True``, jax 0.10's default): element i of the flat
  result hashes the 64-bit counter i as (hi, lo) = (i >> 32, i & 0xffffffff), and its
  bits are the two output words xored, as ``jax.random.bits(key, shape)``;
- ``SplitKey(key)``, attribute ``count``: ``count`` new keys [count, 2], key j the two
  words of counter (0, j), as JAX's partitionable ``split``;
- ``FoldIn(key)``, attribute ``data``: the key hashed with counter (0, data), as
  ``jax.random.fold_in``;
- ``Uniform(bits)``, attribute ``dtype``: floats in [0, 1). float32 is JAX's
  ``_uniform``: the top 23 bits as the mantissa of a float in [1, 2), minus 1, exact
  on every backend. float64 (which JAX draws from 64 bits; topos has no 64-bit
  integers) is ``bits * 2**-32``: the same 32 bits, exact in float64, not JAX's stream;
- ``RandomInt(bits)``, attributes ``low`` and ``high``: int32 in [low, high) from [2, ...]
  words (two draws from a split key), JAX's ``_randint``: the 64 bits reduced modulo the span;
- ``BitField(bits)``, attributes ``shift``, ``width`` and ``dtype``: the whole number
  ``(bits >> shift) & (2**width - 1)`` as a float, exact for a width up to 24: a uint32 sort key
  in two 16-bit halves that a float sort orders exactly (``permutation``'s rounds).
"""

import math
import numbers

import numpy as np

from ..dtypes import FLOAT_DTYPES, canonical_dtype
from ..text import format_shape
from . import batching
from .registry import Meta, Primitive, integer_attr, integer_tuple_attr, register

#: The rotation amounts of the 2x32 variant's rounds, four to a group, the two groups alternating.
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
#: Threefish's key schedule constant: the third key word is k0 ^ k1 ^ PARITY.
PARITY = 0x1BD11BDA
#: The counters one draw may use: a flat index must fit the low word (the high word is then 0).
MAX_DRAW = 2**32
#: 1.0 as float32 bits: the exponent of [1, 2) that ``Uniform`` gives 23 random mantissa bits.
ONE_BITS = 0x3F800000


def threefry2x32(key, x0, x1):
    """Threefry-2x32 with 20 rounds: the words ``(y0, y1)`` that key ``(k0, k1)`` makes of counters ``(x0, x1)``.

    ``x0`` and ``x1`` are uint32 arrays of one shape; the words are uint32 arrays of
    it. The rounds are JAX's unrolled lowering (``jax._src.random.threefry2x32``): five
    groups of four rounds, a key injection after each.
    """
    words = np.asarray(key, dtype=np.uint32).reshape(2)
    k0, k1 = words[0:1], words[1:2]  # 1-element arrays: numpy wraps array arithmetic silently
    schedule = (k0, k1, k0 ^ k1 ^ np.uint32(PARITY))
    x0 = np.asarray(x0, dtype=np.uint32) + schedule[0]
    x1 = np.asarray(x1, dtype=np.uint32) + schedule[1]
    for group in range(5):
        for rotation in ROTATIONS[group % 2]:
            x0 = x0 + x1
            x1 = (x1 << np.uint32(rotation)) | (x1 >> np.uint32(32 - rotation))
            x1 = x0 ^ x1
        x0 = x0 + schedule[(group + 1) % 3]
        x1 = x1 + schedule[(group + 2) % 3] + np.uint32(group + 1)
    return x0, x1


def counters(size):
    """The partitionable layout's counters of ``size`` elements: (hi, lo) of 0..size-1 (hi is 0)."""
    return np.zeros(size, dtype=np.uint32), np.arange(size, dtype=np.uint32)


def random_bits(key, shape):
    """``jax.random.bits(key, shape)`` (uint32, partitionable layout) in numpy."""
    size = math.prod(shape)
    y0, y1 = threefry2x32(key, *counters(size))
    return (y0 ^ y1).reshape(shape)


def split(key, count):
    """``count`` keys [count, 2] from ``key``, as JAX's partitionable ``jax.random.split``."""
    y0, y1 = threefry2x32(key, *counters(count))
    return np.stack([y0, y1], axis=-1)


def fold_in(key, data):
    """``jax.random.fold_in(key, data)``: the key hashed with counter (0, data), a new key."""
    y0, y1 = threefry2x32(key, np.zeros(1, np.uint32), np.full(1, data, dtype=np.uint32))
    return np.concatenate([y0, y1])


def uniform_floats(bits, dtype):
    """Floats in [0, 1) from uint32 ``bits`` (``Uniform``'s forward)."""
    if dtype == "float32":
        mantissa = (bits >> np.uint32(9)) | np.uint32(ONE_BITS)
        return mantissa.view(np.float32) - np.float32(1.0)
    return bits.astype(np.float64) * np.float64(2.0**-32)


def randint_words(low, high):
    """JAX's ``_randint`` constants for int32 bounds: the span (1 when ``high <= low``, so every draw
    is ``low``) and the multiplier, meant as ``2**32 % span`` and computed as jax does, in uint32:
    ``(2**16 % span)**2`` wraps to 0 for a span above 2**16, and that 0 is jax's multiplier then."""
    span = (high - low) % 2**32 if high > low else 1
    return span, (2**16 % span) ** 2 % 2**32 % span


def random_integers(bits, low, high):
    """int32 in [low, high) from uint32 ``bits`` [2, ...] (``RandomInt``'s forward): with hi, lo the two
    planes, ``low + ((hi % span) * multiplier + lo % span) % span``, every operation in uint32 wrapping
    as XLA's, and the sum with ``low`` taken in uint32 and read as int32 (exact: it lies in [low, high))."""
    span, multiplier = (np.uint32(w) for w in randint_words(low, high))
    hi, lo = bits.reshape(2, -1)  # planes as arrays: numpy wraps array arithmetic silently, not a scalar's
    offset = ((hi % span) * multiplier + lo % span) % span
    return (offset + np.uint32(low % 2**32)).view(np.int32).reshape(bits.shape[1:])


def _require_key(primitive, metas):
    key = metas[0]
    if key.dtype != "uint32" or key.shape != (2,):
        primitive.fail(
            f"takes a key, a uint32 [2] value (topos.random_key), got {key.dtype} {format_shape(key.shape)}", metas
        )


def _shape_kind(value, metas):
    if not (isinstance(value, tuple) and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)):
        return "expected a tuple of non-negative integers (a shape)"
    return None


def _count_kind(value, metas):
    if not (isinstance(value, int) and not isinstance(value, bool) and 1 <= value < MAX_DRAW):
        return "expected a number of keys, 1 or more"
    return None


def _word_kind(value, metas):
    if not (isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**32):
        return "expected a whole number in 0..2**32-1"
    return None


def _int32_kind(value, metas):
    if not (isinstance(value, int) and not isinstance(value, bool) and -(2**31) <= value < 2**31):
        return "expected a whole number in int32's range"
    return None


def _float_dtype_kind(value, metas):
    if value not in FLOAT_DTYPES:
        return f"expected one of {', '.join(FLOAT_DTYPES)}"
    return None


class RandomPrimitive(Primitive):
    arity = 1
    differentiable = False
    kernel = "random"
    device_dtypes = ("uint32",)
    element_flops = 60  # 20 rounds of add, rotate (two shifts and an or) and xor, and the key injections
    # A batch of keys would be one Threefry stream an example (JAX's batched keys), not written:
    # a key every example shares records its draw once, unbatched, without a rule.
    batch = batching.declined("a batched random key (split the key outside vmap, or pass it unbatched)")


class ThreefryLowering:
    """Writes Threefry-2x32 over ``shape`` as integer StableHLO (``ui32``), as JAX lowers it unrolled."""

    def __init__(self, ctx, shape):
        self.ctx, self.shape = ctx, tuple(shape)
        self.type = ctx.tensor_type(self.shape, "uint32")

    def op(self, name, a, b):
        return self.ctx.emit(f"stablehlo.{name} {a}, {b} : {self.type}")

    def splat(self, value):
        return self.ctx.splat(int(value), self.shape, "uint32")

    def key_word(self, key, position):
        """Word ``position`` of the [2] key, spread over the shape."""
        ctx = self.ctx
        one = ctx.emit(f"stablehlo.slice {key} [{position}:{position + 1}:1] : (tensor<2xui32>) -> tensor<1xui32>")
        scalar = ctx.reshape(one, (1,), (), "uint32")
        return ctx.broadcast_in_dim(scalar, (), self.shape, "uint32", ())

    def counter(self):
        """The flat index of each element (the low counter word), in row-major order."""
        ctx, size = self.ctx, math.prod(self.shape)
        flat = ctx.emit(f"stablehlo.iota dim = 0 : {ctx.tensor_type((size,), 'uint32')}")
        return ctx.reshape(flat, (size,), self.shape, "uint32") if self.shape != (size,) else flat

    def hash(self, key, x0, x1):
        k0, k1 = self.key_word(key, 0), self.key_word(key, 1)
        schedule = (k0, k1, self.op("xor", self.op("xor", k0, k1), self.splat(PARITY)))
        x0, x1 = self.op("add", x0, schedule[0]), self.op("add", x1, schedule[1])
        for group in range(5):
            for rotation in ROTATIONS[group % 2]:
                x0 = self.op("add", x0, x1)
                left = self.op("shift_left", x1, self.splat(rotation))
                right = self.op("shift_right_logical", x1, self.splat(32 - rotation))
                x1 = self.op("xor", x0, self.op("or", left, right))
            x0 = self.op("add", x0, schedule[(group + 1) % 3])
            x1 = self.op("add", self.op("add", x1, schedule[(group + 2) % 3]), self.splat(group + 1))
        return x0, x1


@register
class RandomBits(RandomPrimitive):
    """``RandomBits(key)``: uint32 bits of ``shape``, ``jax.random.bits(key, shape)`` in JAX's partitionable layout."""

    name = "RandomBits"
    attributes = {"shape": _shape_kind}

    def normalize(self, metas, attrs):
        shape = integer_tuple_attr(self, metas, attrs.get("shape"), "shape")
        if any(extent < 0 for extent in shape):
            self.fail(f"shape {format_shape(shape)} has a negative extent", metas)
        if math.prod(shape) > MAX_DRAW:
            self.fail(f"a draw of shape {format_shape(shape)} needs more than 2**32 counters", metas)
        return {"shape": shape}

    def infer(self, metas, attrs):
        _require_key(self, metas)
        return Meta(attrs["shape"], "uint32")

    def forward(self, inputs, attrs):
        return random_bits(inputs[0], attrs["shape"])

    def stablehlo(self, ctx, node):
        if math.prod(node.shape) == 0:
            return ctx.splat(0, node.shape, "uint32")
        writer = ThreefryLowering(ctx, node.shape)
        y0, y1 = writer.hash(ctx.operands(node)[0], writer.splat(0), writer.counter())
        return writer.op("xor", y0, y1)

    def wgsl_launch(self, k, node, views):
        return k.random("bits", node, views[0])


@register
class SplitKey(RandomPrimitive):
    """``SplitKey(key)``: ``count`` new keys [count, 2], as JAX's partitionable ``jax.random.split``."""

    name = "SplitKey"
    attributes = {"count": _count_kind}

    def normalize(self, metas, attrs):
        count = integer_attr(self, metas, attrs.get("count", 2), "count")
        if not 1 <= count < MAX_DRAW:
            self.fail(f"count must be 1 or more, got {count}", metas)
        return {"count": count}

    def infer(self, metas, attrs):
        _require_key(self, metas)
        return Meta((attrs["count"], 2), "uint32")

    def forward(self, inputs, attrs):
        return split(inputs[0], attrs["count"])

    def stablehlo(self, ctx, node):
        count = node.attrs["count"]
        writer = ThreefryLowering(ctx, (count,))
        y0, y1 = writer.hash(ctx.operands(node)[0], writer.splat(0), writer.counter())
        columns = [ctx.reshape(y, (count,), (count, 1), "uint32") for y in (y0, y1)]
        column_type = ctx.tensor_type((count, 1), "uint32")
        return ctx.emit(
            f"stablehlo.concatenate {columns[0]}, {columns[1]}, dim = 1 : ({column_type}, {column_type}) -> {ctx.type(node)}"
        )

    def wgsl_launch(self, k, node, views):
        return k.random("split", node, views[0])


@register
class FoldIn(RandomPrimitive):
    """``FoldIn(key)``: a new key, the key hashed with counter (0, ``data``), as ``jax.random.fold_in``."""

    name = "FoldIn"
    attributes = {"data": _word_kind}

    def normalize(self, metas, attrs):
        data = attrs.get("data")
        if isinstance(data, numbers.Integral) and not isinstance(data, bool):
            data = int(data)
        if not (isinstance(data, int) and not isinstance(data, bool) and 0 <= data < 2**32):
            self.fail(f"data must be a whole number in 0..2**32-1, got {data!r}", metas)
        return {"data": data}

    def infer(self, metas, attrs):
        _require_key(self, metas)
        return Meta((2,), "uint32")

    def forward(self, inputs, attrs):
        return fold_in(inputs[0], attrs["data"])

    def stablehlo(self, ctx, node):
        writer = ThreefryLowering(ctx, (1,))
        y0, y1 = writer.hash(ctx.operands(node)[0], writer.splat(0), writer.splat(node.attrs["data"]))
        one = ctx.tensor_type((1,), "uint32")
        return ctx.emit(f"stablehlo.concatenate {y0}, {y1}, dim = 0 : ({one}, {one}) -> {ctx.type(node)}")

    def wgsl_launch(self, k, node, views):
        return k.random("fold_in", node, views[0])


@register
class Uniform(RandomPrimitive):
    """``Uniform(bits)``: floats in [0, 1) of ``dtype`` from uint32 bits (JAX's ``_uniform`` for float32)."""

    name = "Uniform"
    attributes = {"dtype": _float_dtype_kind}
    device_dtypes = ("float32",)
    element_flops = 3  # a shift, an or and a subtraction

    def normalize(self, metas, attrs):
        return {"dtype": canonical_dtype(attrs.get("dtype", "float32"), FLOAT_DTYPES)}

    def infer(self, metas, attrs):
        if metas[0].dtype != "uint32":
            self.fail(f"takes uint32 bits (random_bits), got {metas[0].dtype}", metas)
        return Meta(metas[0].shape, attrs["dtype"])

    def forward(self, inputs, attrs):
        return uniform_floats(inputs[0], attrs["dtype"])

    def stablehlo(self, ctx, node):
        (bits,) = ctx.operands(node)
        words = ctx.tensor_type(node.shape, "uint32")
        if node.dtype == "float64":
            wide = ctx.convert(bits, node.shape, "uint32", "float64")
            return ctx.elementwise("stablehlo.multiply", node, [wide, ctx.splat(2.0**-32, node.shape, "float64")])
        shifted = ctx.emit(f"stablehlo.shift_right_logical {bits}, {ctx.splat(9, node.shape, 'uint32')} : {words}")
        mantissa = ctx.emit(f"stablehlo.or {shifted}, {ctx.splat(ONE_BITS, node.shape, 'uint32')} : {words}")
        floats = ctx.emit(f"stablehlo.bitcast_convert {mantissa} : ({words}) -> {ctx.type(node)}")
        return ctx.elementwise("stablehlo.subtract", node, [floats, ctx.splat(1.0, node.shape, "float32")])

    def wgsl_launch(self, k, node, views):
        return k.random("uniform_floats", node, views[0])


@register
class RandomInt(RandomPrimitive):
    """``RandomInt(bits)``: int32 in [``low``, ``high``) from uint32 words [2, ...], ``jax.random.randint``'s reduction."""

    name = "RandomInt"
    attributes = {"low": _int32_kind, "high": _int32_kind}
    device_dtypes = ("int32",)
    element_flops = 6  # three remainders, a product and two sums

    def normalize(self, metas, attrs):
        bounds = {}
        for name in ("low", "high"):
            value = attrs.get(name)
            if _int32_kind(value, metas) is not None:
                self.fail(f"{name} must be a whole number in int32's range, got {value!r}", metas)
            bounds[name] = value
        return bounds

    def infer(self, metas, attrs):
        bits = metas[0]
        if bits.dtype != "uint32" or bits.shape[:1] != (2,):
            self.fail(f"takes uint32 words [2, ...] (two draws), got {bits.dtype} {format_shape(bits.shape)}", metas)
        return Meta(bits.shape[1:], "int32")

    def forward(self, inputs, attrs):
        return random_integers(inputs[0], attrs["low"], attrs["high"])

    def stablehlo(self, ctx, node):
        (bits,) = ctx.operands(node)
        shape, words = node.shape, ctx.tensor_type(node.shape, "uint32")
        plane_type = ctx.tensor_type((1,) + shape, "uint32")
        source_type = ctx.tensor_type((2,) + shape, "uint32")

        def plane(index):
            box = ", ".join([f"{index}:{index + 1}:1"] + [f"0:{extent}:1" for extent in shape])
            one = ctx.emit(f"stablehlo.slice {bits} [{box}] : ({source_type}) -> {plane_type}")
            return ctx.reshape(one, (1,) + shape, shape, "uint32")

        def op(name, a, b):
            return ctx.emit(f"stablehlo.{name} {a}, {b} : {words}")

        span, multiplier = (ctx.splat(w, shape, "uint32") for w in randint_words(node.attrs["low"], node.attrs["high"]))
        hi, lo = plane(0), plane(1)
        offset = op("add", op("multiply", op("remainder", hi, span), multiplier), op("remainder", lo, span))
        shifted = op("add", op("remainder", offset, span), ctx.splat(node.attrs["low"] % 2**32, shape, "uint32"))
        return ctx.emit(f"stablehlo.bitcast_convert {shifted} : ({words}) -> {ctx.type(node)}")

    def wgsl_launch(self, k, node, views):
        span, multiplier = randint_words(node.attrs["low"], node.attrs["high"])
        return k.random("randint", node, views[0], (span, multiplier, node.attrs["low"] % 2**32))


@register
class BitField(RandomPrimitive):
    """``BitField(bits)``: ``(bits >> shift) & (2**width - 1)`` as ``dtype`` floats, exact (a width up to 24)."""

    name = "BitField"
    attributes = {"shift": _word_kind, "width": _word_kind, "dtype": _float_dtype_kind}
    device_dtypes = ("float32",)
    element_flops = 3  # a shift, a mask and a conversion

    def normalize(self, metas, attrs):
        shift, width = attrs.get("shift", 0), attrs.get("width", 16)
        for name, value, top in (("shift", shift, 31), ("width", width, 24)):
            if isinstance(value, bool) or not isinstance(value, int) or not int(name == "width") <= value <= top:
                self.fail(f"{name} must be a whole number up to {top}, got {value!r}", metas)
        return {"shift": shift, "width": width, "dtype": canonical_dtype(attrs.get("dtype", "float32"), FLOAT_DTYPES)}

    def infer(self, metas, attrs):
        if metas[0].dtype != "uint32":
            self.fail(f"takes uint32 bits (random_bits), got {metas[0].dtype}", metas)
        return Meta(metas[0].shape, attrs["dtype"])

    def forward(self, inputs, attrs):
        field = (inputs[0] >> np.uint32(attrs["shift"])) & np.uint32(2 ** attrs["width"] - 1)
        return field.astype(attrs["dtype"])

    def stablehlo(self, ctx, node):
        (bits,) = ctx.operands(node)
        words = ctx.tensor_type(node.shape, "uint32")
        shifted = ctx.emit(
            f"stablehlo.shift_right_logical {bits}, {ctx.splat(node.attrs['shift'], node.shape, 'uint32')} : {words}"
        )
        mask = ctx.splat(2 ** node.attrs["width"] - 1, node.shape, "uint32")
        field = ctx.emit(f"stablehlo.and {shifted}, {mask} : {words}")
        return ctx.convert(field, node.shape, "uint32", node.dtype)

    def wgsl_launch(self, k, node, views):
        return k.random("bit_field", node, views[0], (node.attrs["shift"], 2 ** node.attrs["width"] - 1))
