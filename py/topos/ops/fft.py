"""Discrete Fourier transforms over the last transformed axis: ``Fft``, ``Rfft`` and ``Irfft``.

The engine's dtypes are real and WGSL has no complex type, so a complex array is a real
array with a trailing axis of 2: element ``[..., k, 0]`` is the real part of entry k,
``[..., k, 1]`` its imaginary part (the pairs jax-js uses). Each transform works on the
axis just before that pair axis (``Rfft``'s real operand: its last axis); the public
functions (``topos.fft``) move any other axis there with ``Transpose``. Scaling is
numpy's default ("backward"): the forward transforms are unscaled, the inverse ones
divide by n.

Each transform is linear, so its derivative is its adjoint, written with the transforms
themselves (and ``Pad``/``Slice``), as JAX's ``_fft_transpose_rule`` does; derivatives of
any order are then graph nodes. StableHLO has ``stablehlo.fft`` over complex tensors:
the lowering packs the pairs with ``stablehlo.complex`` and unpacks the result with
``stablehlo.real``/``stablehlo.imag``.

On WebGPU each runs in ``kernels/fft.wgsl`` (launches in ``topos.compiler.wgsl.fft``), float32,
one workgroup a transform: a Stockham radix-2 transform where n is a power of two, the direct
O(n^2) sum for any other n, up to 1024 points (a workgroup's 16 KiB hold two arrays of n
complex values); a longer transform is declined with that reason and the interpreter runs it.
The kernel computes its twiddles from an exact integer reduction of the angle to a quarter
turn, so their error does not grow with n (the kernel's header says how).
"""

import math

import numpy as np

from ..text import format_shape
from . import attributes as kinds
from . import batching
from .registry import Meta, Primitive, bytes_moved, integer_attr, register, require_float

ELEMENT = {"float32": "f32", "float64": "f64"}


def complex_type(shape, dtype):
    """The MLIR type of a complex tensor whose parts are ``dtype``: ``tensor<4xcomplex<f64>>``."""
    return "tensor<" + "".join(f"{extent}x" for extent in shape) + f"complex<{ELEMENT[dtype]}>>"


def real_type(shape, dtype):
    return "tensor<" + "".join(f"{extent}x" for extent in shape) + f"{ELEMENT[dtype]}>"


COMPLEX = {"float32": np.complex64, "float64": np.complex128}


def to_complex(pairs):
    """numpy complex values from real/imaginary pairs (a trailing axis of 2): a view where the pairs are contiguous."""
    pairs = np.ascontiguousarray(pairs)
    return pairs.view(COMPLEX[pairs.dtype.name])[..., 0]


def to_pairs(values, dtype):
    """Real/imaginary pairs (a trailing axis of 2) of ``dtype`` from numpy complex values: a view of them."""
    values = np.ascontiguousarray(values, dtype=COMPLEX[np.dtype(dtype).name])
    return values.view(dtype).reshape(values.shape + (2,))


def pack(ctx, pairs, shape, dtype):
    """The complex tensor of ``shape`` whose parts are ``pairs`` (a value of ``shape + (2,)``)."""
    parts = []
    for part in (0, 1):
        start = ", ".join(["0"] * len(shape) + [str(part)])
        limit = ", ".join([str(extent) for extent in shape] + [str(part + 1)])
        strides = ", ".join(["1"] * (len(shape) + 1))
        cut = ctx.emit(
            f'"stablehlo.slice"({pairs}) {{start_indices = array<i64: {start}>, '
            f"limit_indices = array<i64: {limit}>, strides = array<i64: {strides}>}} : "
            f"({real_type(shape + (2,), dtype)}) -> {real_type(shape + (1,), dtype)}"
        )
        parts.append(ctx.reshape(cut, shape + (1,), shape, dtype))
    return ctx.emit(
        f"stablehlo.complex {parts[0]}, {parts[1]} : ({real_type(shape, dtype)}, {real_type(shape, dtype)}) "
        f"-> {complex_type(shape, dtype)}"
    )


def unpack(ctx, value, shape, dtype):
    """Real/imaginary pairs (``shape + (2,)``) of the complex tensor ``value``."""
    parts = []
    for op in ("stablehlo.real", "stablehlo.imag"):
        part = ctx.emit(f"{op} {value} : ({complex_type(shape, dtype)}) -> {real_type(shape, dtype)}")
        parts.append(ctx.reshape(part, shape, shape + (1,), dtype))
    rank = len(shape)
    return ctx.emit(
        f"stablehlo.concatenate {parts[0]}, {parts[1]}, dim = {rank} : "
        f"({real_type(shape + (1,), dtype)}, {real_type(shape + (1,), dtype)}) -> {real_type(shape + (2,), dtype)}"
    )


def require_pairs(primitive, metas):
    require_float(primitive, metas)
    (z,) = metas
    if z.rank < 2 or z.shape[-1] != 2:
        primitive.fail(f"needs complex values as real/imaginary pairs [..., n, 2], got {format_shape(z.shape)}", metas)
    if z.shape[-2] < 1:
        primitive.fail("needs a transformed axis of at least one element", metas)
    return z


def transform_flops(batch, n):
    # The usual count of a radix-2 complex transform: 5 n log2 n (n log2 n butterflies of a
    # complex multiply and two complex adds), at least the n complex values it writes.
    return batch * max(5 * n * math.log2(n), 2 * n) if n > 1 else batch * 2


@register
class Fft(Primitive):
    """The complex DFT along axis -2 of pairs ``[..., n, 2]`` (``inverse``: the inverse DFT, over n).

    ``y[k] = sum_j z[j] exp(-2 pi i j k / n)``; with ``inverse`` the sign is + and the sum
    is divided by n (numpy's ``fft``/``ifft``). The result is pairs of the same shape.
    """

    name = "Fft"
    arity = 1
    kernel = "fft"
    attributes = {"inverse": kinds.flag}
    batch = batching.leading

    def normalize(self, metas, attrs):
        return {"inverse": bool(attrs.get("inverse", False))}

    def infer(self, metas, attrs):
        return require_pairs(self, metas)

    def forward(self, inputs, attrs):
        (z,) = inputs
        transform = np.fft.ifft if attrs["inverse"] else np.fft.fft
        return to_pairs(transform(to_complex(z), axis=-1), z.dtype)

    def vjp(self, e, g, operands, out, attrs):
        # The adjoint of the unscaled DFT is n times the inverse DFT, and that of the inverse
        # DFT is the DFT over n (the matrices are conjugate-symmetric).
        n = e.shape(g)[-2]
        back = e.apply("Fft", [g], inverse=not attrs["inverse"])
        return [e.mul(back, e.like(back, 1.0 / n if attrs["inverse"] else float(n)))]

    def stablehlo(self, ctx, node):
        (z,) = ctx.operands(node)
        shape, dtype = node.shape[:-1], node.dtype
        kind = "IFFT" if node.attrs["inverse"] else "FFT"
        packed = pack(ctx, z, shape, dtype)
        done = ctx.emit(
            f"stablehlo.fft {packed}, type = {kind}, length = [{shape[-1]}] : "
            f"({complex_type(shape, dtype)}) -> {complex_type(shape, dtype)}"
        )
        return unpack(ctx, done, shape, dtype)

    def wgsl_launch(self, k, node, views):
        # kernels/fft.wgsl: Stockham radix 2 for a power-of-two n, the direct O(n^2) sum for any other,
        # one workgroup a transform; the same for Rfft and Irfft below.
        return k.fourier(node, views[0], node.shape[-2], node.attrs["inverse"])

    def wgsl_declines(self, k, node):
        # Past 1024 points (k.MAX_FFT_LENGTH) a workgroup's 16 KiB cannot hold the transform.
        return k.fourier_declines(node.shape[-2])

    def cost(self, operands, meta, attrs):
        n = meta.shape[-2]
        return round(transform_flops(meta.size // (2 * n), n)), bytes_moved(operands, meta)


@register
class Rfft(Primitive):
    """The DFT of real values along the last axis, ``[..., n]`` to pairs ``[..., n // 2 + 1, 2]``.

    numpy's ``rfft``: entries 0..n // 2 of the complex DFT, the rest being their conjugates.
    """

    name = "Rfft"
    arity = 1
    kernel = "fft"
    batch = batching.leading

    def infer(self, metas, attrs):
        require_float(self, metas)
        (x,) = metas
        if x.rank < 1 or x.shape[-1] < 1:
            self.fail(f"needs a last axis of at least one element, got {format_shape(x.shape)}", metas)
        return Meta(x.shape[:-1] + (x.shape[-1] // 2 + 1, 2), x.dtype)

    def forward(self, inputs, attrs):
        (x,) = inputs
        return to_pairs(np.fft.rfft(x, axis=-1), x.dtype)

    def vjp(self, e, g, operands, out, attrs):
        # Real part of the adjoint of the first m rows of the DFT: pad the cotangent's m
        # entries to n with zeros, and take n times the real part of their inverse DFT.
        n = e.shape(operands[0])[-1]
        shape = e.shape(g)
        m, rank = shape[-2], len(shape)
        padded = e.pad(g, (0,) * rank, (0,) * (rank - 2) + (n - m, 0), (0,) * rank)
        back = e.apply("Fft", [padded], inverse=True)
        real = e.slice(back, (0,) * rank, shape[:-2] + (n, 1), (1,) * rank)
        real = e.reshape(real, shape[:-2] + (n,))
        return [e.mul(real, e.like(real, float(n)))]

    def stablehlo(self, ctx, node):
        (x,) = ctx.operands(node)
        source = ctx.operand_node(node, 0)
        shape, dtype = node.shape[:-1], node.dtype
        done = ctx.emit(
            f"stablehlo.fft {x}, type = RFFT, length = [{source.shape[-1]}] : "
            f"({real_type(source.shape, dtype)}) -> {complex_type(shape, dtype)}"
        )
        return unpack(ctx, done, shape, dtype)

    def wgsl_launch(self, k, node, views):
        return k.fourier(node, views[0], k.operand_node(node, 0).shape[-1])

    def wgsl_declines(self, k, node):
        return k.fourier_declines(k.operand_node(node, 0).shape[-1])

    def cost(self, operands, meta, attrs):
        # Half a complex transform of the same length (the usual packing of a real one).
        n = operands[0].shape[-1]
        return round(transform_flops(operands[0].size // n, n) / 2), bytes_moved(operands, meta)


@register
class Irfft(Primitive):
    """The inverse of ``Rfft``: pairs ``[..., n // 2 + 1, 2]`` to ``n`` real values ``[..., n]``.

    numpy's ``irfft(z, n)``: the entries are taken as the first half of a conjugate-symmetric
    spectrum, so the imaginary parts of entry 0 (and, for even n, of entry n / 2) are ignored.
    """

    name = "Irfft"
    arity = 1
    kernel = "fft"
    attributes = {"n": kinds.positive}
    batch = batching.leading

    def normalize(self, metas, attrs):
        # The output length as an int of at least 1, so that recording and loading a file agree.
        n = integer_attr(self, metas, attrs.get("n"), "n")
        if n < 1:
            self.fail(f"n must be at least 1, got {n}", metas)
        return {"n": n}

    def infer(self, metas, attrs):
        z = require_pairs(self, metas)
        n = attrs["n"]
        if z.shape[-2] != n // 2 + 1:
            self.fail(f"needs n // 2 + 1 = {n // 2 + 1} entries for n = {n}, got {format_shape(z.shape)}", metas)
        return Meta(z.shape[:-2] + (n,), z.dtype)

    def forward(self, inputs, attrs):
        (z,) = inputs
        return np.fft.irfft(to_complex(z), attrs["n"], axis=-1).astype(z.dtype, copy=False)

    def vjp(self, e, g, operands, out, attrs):
        # JAX's _irfft_transpose: rfft of the cotangent over n, entries 1..m-2 counted twice
        # (they stand for their conjugates too), and the last twice only for odd n.
        n = attrs["n"]
        spectrum = e.apply("Rfft", [g])
        shape = e.shape(spectrum)
        m, rank = shape[-2], len(shape)
        twice = e.add(spectrum, spectrum)
        once_rows = [0] + ([m - 1] if n % 2 == 0 and m > 1 else [])
        for row in once_rows:
            start = (0,) * (rank - 2) + (row, 0)
            once = e.slice(spectrum, start, shape[:-2] + (row + 1, 2), (1,) * rank)
            once = e.pad(once, start, (0,) * (rank - 2) + (m - 1 - row, 0), (0,) * rank)
            twice = e.sub(twice, once)
        return [e.mul(twice, e.like(twice, 1.0 / n))]

    def stablehlo(self, ctx, node):
        (z,) = ctx.operands(node)
        source = ctx.operand_node(node, 0)
        shape, dtype = source.shape[:-1], node.dtype
        packed = pack(ctx, z, shape, dtype)
        return ctx.emit(
            f"stablehlo.fft {packed}, type = IRFFT, length = [{node.attrs['n']}] : "
            f"({complex_type(shape, dtype)}) -> {ctx.type(node)}"
        )

    def wgsl_launch(self, k, node, views):
        return k.fourier(node, views[0], node.attrs["n"], inverse=True)

    def wgsl_declines(self, k, node):
        return k.fourier_declines(node.attrs["n"])

    def cost(self, operands, meta, attrs):
        n = attrs["n"]
        return round(transform_flops(meta.size // n, n) / 2), bytes_moved(operands, meta)
