"""The dot-product test for every differentiable primitive and the composites.

For a recorded function ``f`` and a random cotangent ``u`` the test records
``target = sum(f(x) * u)`` on the same tape, so the engine's reverse scan gives
``g = vjp(u)`` for every input. For a random direction ``v`` of one input,
``<g, v>`` must equal the central difference
``(target(x + eps v) - target(x - eps v)) / (2 eps)`` (HIPS autograd's
``check_vjp``). Everything runs in float64.

Shapes come from hypothesis, size-1 and broadcast axes included, and every
operation is recorded through the public recording functions, so ``Broadcast``,
``Reshape`` and ``Leaf`` nodes appear exactly as a user would record them.
Inputs are drawn inside each operation's smooth domain, as tests/python/op_specs.py
gives it: positive arguments for log, sqrt and the base of pow, and values kept
apart from kinks (relu at 0, max and maximum at ties).
"""

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes
from op_specs import (
    ANY_SHAPE,
    GRADCHECK_EPS,
    OP_SPECS,
    SEPARATED,
    Index,
    derived_rows,
    example_arrays,
    example_rows,
    public_function,
    recorded,
    smooth_sampler,
)

import topos
from topos import Tape, detach
from topos.ops import lookup, primitives

EPS = GRADCHECK_EPS
SETTINGS = settings(max_examples=50, deadline=None, derandomize=True, database=None)


@dataclass
class Case:
    """Arrays to record as inputs (int32 indices and uint32 keys are never perturbed) and the function over them.

    ``build(tape, *values)`` records the operation; ``tape`` is there for leaves.
    """

    arrays: list
    build: object


def check_vjp(case, seed):
    rng = np.random.default_rng(seed)
    tape = Tape()
    # int32 indices and uint32 random keys are inputs of their dtype, never perturbed.
    values = [tape.input(a, dtype=a.dtype.name if a.dtype.kind in "iu" else None) for a in case.arrays]
    out = case.build(tape, *values)
    cotangent = tape.leaf(rng.standard_normal(out.shape))
    target = topos.sum(out * cotangent)
    network = tape.seal()
    symbols, target = detach(values), detach(target)
    parameters = network.parameters()

    def target_at(feeds):
        return network.forward(parameters, feeds).of(target).scalar()

    run = network.forward(parameters, {})
    field = run.backward(target)
    # The cotangent is a leaf: its gradient (from the scan over constants) is the output itself.
    np.testing.assert_allclose(field.of(detach(cotangent)).numpy(), run.of(detach(out)).numpy(), rtol=1e-15)
    checked = 0
    for symbol, array in zip(symbols, case.arrays):
        if array.dtype.kind in "iu":
            continue
        direction = rng.standard_normal(array.shape)
        exact = float(np.vdot(field.of(symbol).numpy(), direction))
        plus = target_at({symbol: array + EPS * direction})
        minus = target_at({symbol: array - EPS * direction})
        numeric = (plus - minus) / (2 * EPS)
        scale = 1.0 + abs(exact) + abs(plus)
        assert abs(exact - numeric) <= 1e-7 * scale, (
            f"input {symbol.index}: vjp gives {exact!r}, central differences {numeric!r}\n{network.describe()}"
        )
        checked += 1
    assert checked, "the case has no differentiable input"
    return network


# Value strategies ---------------------------------------------------------------------------------


def normal(rng, shape, scale=1.0):
    return rng.standard_normal(shape) * scale


def distinct(rng, shape):
    """Values at least 0.4 apart, so that no max has a tie."""
    size = int(np.prod(shape, dtype=int))
    return (rng.permutation(size) * 0.5 + rng.uniform(0.0, 0.1, size)).reshape(shape) - size * 0.25


shapes = array_shapes(min_dims=ANY_SHAPE.min_rank, max_dims=ANY_SHAPE.max_rank, min_side=1, max_side=ANY_SHAPE.max_side)
seeds = st.integers(0, 2**32 - 1)


@st.composite
def unary(draw, function, values=normal):
    shape = draw(shapes)
    rng = np.random.default_rng(draw(seeds))
    return Case([values(rng, shape)], lambda tape, x: function(x))


@st.composite
def binary(draw, function, left=normal, right=normal):
    """Two operands of mutually broadcastable shapes (so Broadcast nodes are recorded)."""
    drawn = draw(mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=4))
    rng = np.random.default_rng(draw(seeds))
    a_shape, b_shape = drawn.input_shapes
    with_number = draw(st.booleans())
    if with_number:
        # A Python number on one side records a Leaf and its Broadcast.
        number = float(right(rng, ()))
        return Case([left(rng, a_shape)], lambda tape, a: function(a, number))
    return Case([left(rng, a_shape), right(rng, b_shape)], lambda tape, a, b: function(a, b))


def grid(offset):
    """Values on the grid offset + k/2: two grids 1/4 apart never tie (for maximum, minimum)."""

    def values(rng, shape):
        return rng.integers(-4, 5, shape) * 0.5 + offset

    return values


@st.composite
def where_case(draw):
    drawn = draw(mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, min_side=1, max_side=4))
    rng = np.random.default_rng(draw(seeds))
    c_shape, a_shape, b_shape = drawn.input_shapes
    condition = rng.integers(0, 2, c_shape).astype(float)
    return Case(
        [normal(rng, a_shape), normal(rng, b_shape)],
        lambda tape, a, b: topos.where(tape.leaf(condition), a, b),
    )


@st.composite
def matmul_case(draw):
    """numpy matmul shapes: broadcast batch axes, and 1-D operands on either side."""
    batches = draw(mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2, min_side=1, max_side=3))
    m, k, n = (draw(st.integers(1, 4)) for _ in range(3))
    a_batch, b_batch = batches.input_shapes
    a_shape = (k,) if draw(st.booleans()) and not a_batch else a_batch + (m, k)
    b_shape = (k,) if draw(st.booleans()) and not b_batch else b_batch + (k, n)
    rng = np.random.default_rng(draw(seeds))
    return Case([normal(rng, a_shape), normal(rng, b_shape)], lambda tape, a, b: a @ b)


@st.composite
def axes_of(draw, rank):
    """None, one axis (maybe negative) or a tuple of distinct axes."""
    kind = draw(st.sampled_from(["none", "one", "several"]))
    if kind == "none" or rank == 0:
        return None
    if kind == "one":
        return draw(st.integers(-rank, rank - 1))
    return tuple(draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True)))


@st.composite
def reduction(draw, method, values):
    shape = draw(shapes)
    axis = draw(axes_of(len(shape)))
    keepdims = draw(st.booleans())
    rng = np.random.default_rng(draw(seeds))
    return Case([values(rng, shape)], lambda tape, x: getattr(x, method)(axis=axis, keepdims=keepdims))


@st.composite
def reshape_case(draw):
    shape = draw(shapes)
    target = list(draw(st.permutations(shape)))
    target.insert(draw(st.integers(0, len(target))), 1)  # a new size-1 axis, so the shape always changes
    if target and draw(st.booleans()):
        target[draw(st.integers(0, len(target) - 1))] = -1
    rng = np.random.default_rng(draw(seeds))
    return Case([normal(rng, shape)], lambda tape, x: x.reshape(*target))


@st.composite
def broadcast_case(draw):
    """A target shape, and a source that drops some leading axes and has size 1 on some others."""
    target = draw(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    dropped = draw(st.integers(0, len(target)))
    source = tuple(1 if draw(st.booleans()) else extent for extent in target[dropped:])
    if source == target:
        target = (draw(st.integers(2, 3)),) + target
    rng = np.random.default_rng(draw(seeds))
    return Case([normal(rng, source)], lambda tape, x: x.broadcast_to(target))


@st.composite
def transpose_case(draw):
    shape = draw(array_shapes(min_dims=2, max_dims=4, min_side=1, max_side=3))
    axes = tuple(draw(st.permutations(range(len(shape)))))
    if axes == tuple(range(len(shape))):
        axes = axes[::-1]
    rng = np.random.default_rng(draw(seeds))
    return Case([normal(rng, shape)], lambda tape, x: x.transpose(*axes))


@st.composite
def slice_case(draw):
    """Basic indexing with steps, ints and None; axis 0 is always really sliced."""
    shape = draw(array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=5))
    index = []
    for axis, extent in enumerate(shape):
        if axis > 0 and draw(st.booleans()):
            index.append(draw(st.integers(-extent, extent - 1)))
            continue
        start = draw(st.integers(1 if axis == 0 else 0, extent - 1))
        stop = draw(st.integers(start + 1, extent))
        index.append(slice(start, stop, draw(st.integers(1, 3))))
    if draw(st.booleans()):
        index.insert(draw(st.integers(0, len(index))), None)
    index = tuple(index)
    rng = np.random.default_rng(draw(seeds))
    return Case([normal(rng, shape)], lambda tape, x: x[index])


@st.composite
def pad_case(draw):
    shape = draw(shapes)
    widths = st.lists(st.integers(0, 2), min_size=len(shape), max_size=len(shape)).map(tuple)
    low, high, interior = draw(widths), draw(widths), draw(widths)
    rng = np.random.default_rng(draw(seeds))
    return Case(
        [normal(rng, shape)],
        lambda tape, x: tape.apply("Pad", [x], low=low, high=high, interior=interior),
    )


@st.composite
def concatenate_case(draw):
    shape = draw(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    count = draw(st.integers(2, 3))
    rng = np.random.default_rng(draw(seeds))
    arrays = []
    for _ in range(count):
        part = list(shape)
        part[axis] = draw(st.integers(1, 3))
        arrays.append(normal(rng, tuple(part)))
    return Case(arrays, lambda tape, *xs: topos.concatenate(xs, axis))


@st.composite
def cumsum_case(draw):
    """A running sum along any axis, either way."""
    shape = draw(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    reverse = draw(st.booleans())
    rng = np.random.default_rng(draw(seeds))
    return Case([normal(rng, shape)], lambda tape, x: topos.cumsum(x, axis, reverse))


@st.composite
def cumulative_case(draw, function, values):
    """A running product, maximum, minimum or log-sum-exp along any axis, either way; a maximum's and
    minimum's values far apart (``distinct``), so that no step of eps changes which one leads."""
    shape = draw(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    reverse = draw(st.booleans())
    rng = np.random.default_rng(draw(seeds))
    return Case([values(rng, shape)], lambda tape, x: function(x, axis, reverse=reverse))


@st.composite
def polygamma_case(draw):
    """psi^(n) of order 1 to 3 away from its poles (the non-positive integers)."""
    order = draw(st.integers(1, 3))
    shape = draw(shapes)
    rng = np.random.default_rng(draw(seeds))
    return Case([rng.uniform(0.5, 5.0, shape)], lambda tape, x: topos.polygamma(order, x))


@st.composite
def fourier_case(draw, opcode):
    """A transform of any length along any axis: complex values as pairs (a trailing axis of 2) for
    ``Fft`` (either way) and ``Irfft``, real values for ``Rfft`` (topos.fft)."""
    shape = draw(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(draw(seeds))
    if opcode == "Rfft":
        return Case([normal(rng, shape)], lambda tape, x: topos.fft.rfft(x, axis=axis))
    if opcode == "Irfft":
        n = draw(st.integers(1, 8))
        return Case([normal(rng, shape + (2,))], lambda tape, z: topos.fft.irfft(z, n, axis))
    transform = topos.fft.ifft if draw(st.booleans()) else topos.fft.fft
    return Case([normal(rng, shape + (2,))], lambda tape, z: transform(z, axis=axis))


@st.composite
def factor_case(draw, opcode):
    """Cholesky of a well-conditioned symmetric positive-definite matrix (any batch, n 1..4), LU of a
    diagonally dominant one, or a triangular solve with a dominant diagonal and any of its options (topos.linalg)."""
    batch = draw(array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=2))
    n, m = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(seeds))
    a = normal(rng, batch + (n, n))
    if opcode == "Cholesky":
        return Case([a @ np.swapaxes(a, -1, -2) + n * np.eye(n)], lambda tape, x: topos.linalg.cholesky(x))
    if opcode == "Lu":
        # Both factors, of a matrix whose pivots are clear (a tie between rows would flip p).
        return Case([a + 2 * n * np.eye(n)], lambda tape, x: sum(topos.linalg.lu(x)[1:]))
    options = {flag: draw(st.booleans()) for flag in ("lower", "left_side", "transpose_a", "unit_diagonal")}
    b = normal(rng, batch + ((n, m) if options["left_side"] else (m, n)))
    a = a + 3 * np.sign(np.diag(rng.standard_normal(n)) + 1e-3) * np.eye(n)
    return Case([a, b], lambda tape, x, y: topos.linalg.triangular_solve(x, y, **options))


@st.composite
def eigh_case(draw):
    """The eigenvalues or eigenvectors (topos.linalg.eigh) of any batch of n x n matrices, n 1..4, whose
    symmetric parts have eigenvalues well apart (op_specs.SEPARATED on the diagonal)."""
    batch = draw(array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=2))
    n = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(seeds))
    a = normal(rng, batch + (n, n)) + np.diag(SEPARATED[:n])
    if draw(st.booleans()):
        return Case([a], lambda tape, x: topos.linalg.eigvalsh(x))
    return Case([a], lambda tape, x: topos.linalg.eigh(x)[1])


@st.composite
def qr_case(draw):
    """Q or R (topos.linalg.qr) of any batch of tall or square matrices with well independent columns."""
    batch = draw(array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=2))
    n = draw(st.integers(1, 3))
    m = draw(st.integers(n, 4))
    rng = np.random.default_rng(draw(seeds))
    a = normal(rng, batch + (m, n)) + 3 * np.eye(m, n)
    part = int(draw(st.booleans()))
    return Case([a], lambda tape, x: topos.linalg.qr(x)[part])


@st.composite
def svd_case(draw):
    """u, s or vh (topos.linalg.svd) of any batch of tall, wide or square matrices whose singular
    values lie well apart (a draw plus a diagonal 0, 20, 40, 60: its gaps keep 1 / (s_j^2 - s_i^2) moderate)."""
    batch = draw(array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=2))
    m, n = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(seeds))
    a = normal(rng, batch + (m, n))
    a[..., range(min(m, n)), range(min(m, n))] += 10.0 + SEPARATED[: min(m, n)]
    part = draw(st.integers(0, 2))
    return Case([a], lambda tape, x: topos.linalg.svd(x)[part])


@st.composite
def take_case(draw):
    """An embedding lookup along any axis; small extents make repeated indices likely."""
    shape = draw(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    index_shape = draw(array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=4))
    rng = np.random.default_rng(draw(seeds))
    indices = rng.integers(0, shape[axis], index_shape).astype(np.int32)
    return Case([normal(rng, shape), indices], lambda tape, x, ids: topos.take(x, ids, axis))


@st.composite
def scatter_add_case(draw):
    """Take's transpose, recorded directly (no recording function spells it)."""
    before = draw(array_shapes(min_dims=0, max_dims=1, min_side=1, max_side=3))
    after = draw(array_shapes(min_dims=0, max_dims=1, min_side=1, max_side=3))
    index_shape = draw(array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=4))
    extent = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(seeds))
    indices = rng.integers(0, extent, index_shape).astype(np.int32)
    axis = len(before)
    return Case(
        [normal(rng, before + index_shape + after), indices],
        lambda tape, updates, ids: tape.apply("ScatterAdd", [updates, ids], axis=axis, extent=extent),
    )


@st.composite
def sort_case(draw):
    """A sort along any axis, either way; a normal draw's values are distinct (a tie has no derivative)."""
    shape = draw(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    descending = draw(st.booleans())
    rng = np.random.default_rng(draw(seeds))
    return Case([normal(rng, shape)], lambda tape, x: topos.sort(x, axis=axis, descending=descending))


@st.composite
def along_axis_case(draw, opcode):
    """TakeAlongAxis or its transpose ScatterAddAlongAxis along any axis; small extents repeat indices."""
    shape = draw(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    axis = draw(st.integers(0, len(shape) - 1))
    extent, taken = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(seeds))
    index_shape = shape[:axis] + (taken,) + shape[axis + 1 :]
    indices = rng.integers(0, extent, index_shape).astype(np.int32)
    if opcode == "TakeAlongAxis":
        values = normal(rng, shape[:axis] + (extent,) + shape[axis + 1 :])
        return Case([values, indices], lambda tape, x, ids: topos.take_along_axis(x, ids, axis))
    return Case(
        [normal(rng, index_shape), indices],
        lambda tape, u, ids: tape.apply(opcode, [u, ids], axis=axis, extent=extent),
    )


@st.composite
def applied(draw, opcode, samplers, row_scale=False):
    """Operands of one shape (rank >= 1), recorded with ``tape.apply``: the backward primitives, which
    no recording function spells; ``row_scale`` adds a positive operand of one element a row ([..., 1])."""
    shape = draw(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    rng = np.random.default_rng(draw(seeds))
    arrays = [sample(rng, shape) for sample in samplers]
    if row_scale:
        arrays.append(smooth_sampler(opcode, len(samplers))(rng, shape[:-1] + (1,)))
    return Case(arrays, lambda tape, *operands: tape.apply(opcode, list(operands)))


@st.composite
def convolution_case(draw):
    """Any attribute of the primitive: 1 or 2 spatial axes, strides, negative and positive padding,
    both dilations, feature or batch groups (the backward's own convolutions have all of them)."""
    spatial = draw(st.integers(1, 2))
    groups = draw(st.integers(1, 2))
    batch_grouped = groups > 1 and draw(st.booleans())
    per_group = draw(st.integers(1, 2))
    channels = per_group * (1 if batch_grouped else groups)
    batch = draw(st.integers(1, 2)) * (groups if batch_grouped else 1)
    window = tuple(draw(st.integers(1, 3)) for _ in range(spatial))
    rhs_dilation = tuple(draw(st.integers(1, 2)) for _ in range(spatial))
    lhs_dilation = tuple(draw(st.integers(1, 2)) for _ in range(spatial))
    padding = tuple((draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(spatial))
    extents = []
    for k, rd, ld, (low, high) in zip(window, rhs_dilation, lhs_dilation, padding):
        span = (k - 1) * rd + 1
        # the smallest extent whose dilated, padded length holds the window
        least = max(1, -(-(span - low - high - 1) // ld) + 1)
        extents.append(draw(st.integers(least, least + 3)))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(spatial))
    out_channels = groups * draw(st.integers(1, 2))
    rng = np.random.default_rng(draw(seeds))
    x = normal(rng, (batch, channels) + tuple(extents))
    w = normal(rng, (out_channels, per_group) + window)
    attrs = dict(strides=strides, padding=padding, lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation)
    attrs.update(batch_groups=groups if batch_grouped else 1, feature_groups=1 if batch_grouped else groups)
    return Case([x, w], lambda tape, a, b: tape.apply("Convolution", [a, b], **attrs))


@st.composite
def reverse_case(draw):
    shape = draw(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    axes = tuple(draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True)))
    rng = np.random.default_rng(draw(seeds))
    return Case([normal(rng, shape)], lambda tape, x: tape.apply("Reverse", [x], axes=axes))


@st.composite
def scan_case(draw):
    """A tanh recurrence (topos.scan) over 1..4 steps of a [n] carry that starts at w and reads w at
    every step (a captured value), forwards or reversed; the stacked outputs plus the final carry."""
    steps, n = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    reverse = draw(st.booleans())
    rng = np.random.default_rng(draw(seeds))

    def build(tape, x, w):
        h, ys = topos.scan(lambda h, row: (topos.tanh(h * w + row),) * 2, w * 0.5, x, reverse=reverse)
        return ys + h

    return Case([normal(rng, (steps, n)), normal(rng, (n,))], build)


@st.composite
def cond_case(draw):
    """topos.cond on a predicate fixed when recording (a leaf, never perturbed), each branch reading w."""
    chosen = draw(st.sampled_from([1.0, -1.0]))
    rng = np.random.default_rng(draw(seeds))

    def build(tape, x, w):
        pred = topos.greater(tape.leaf(chosen), 0.0)
        return topos.cond(pred, lambda a: topos.sin(a * w) + w, lambda a: topos.exp(a) * w - a, x)

    return Case([normal(rng, (3,)), normal(rng, (3,))], build)


@st.composite
def while_case(draw):
    """topos.while_loop for 1..3 trips (a counter carried beside x, never perturbed), the body reading w."""
    trips = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(seeds))

    def build(tape, x, w):
        more = lambda c: topos.less(c[1], float(trips))  # noqa: E731
        step = lambda c: (topos.sin(c[0] * w) + c[0] * 0.5, c[1] + 1.0)  # noqa: E731
        return topos.while_loop(more, step, (x, tape.leaf(0.0)))[0]

    return Case([normal(rng, (3,)), normal(rng, (3,))], build)


@st.composite
def custom_vjp_case(draw):
    """topos.custom_vjp of log(1 + e^(x w)) whose backward (the user's, written with recorded ops, so it
    differentiates again) is the true derivative: g w s and g x s, s = 1 - 1 / (1 + e^(x w))."""
    rng = np.random.default_rng(draw(seeds))

    @topos.custom_vjp
    def softplus_of_product(x, w):
        return topos.log1p(topos.exp(x * w))

    def backward(residuals, g):
        x, w = residuals
        s = 1.0 - 1.0 / (1.0 + topos.exp(x * w))
        return g * w * s, g * x * s

    softplus_of_product.defvjp(lambda x, w: (softplus_of_product.fun(x, w), (x, w)), backward)
    return Case([normal(rng, (3,)), normal(rng, (3,))], lambda tape, x, w: softplus_of_product(x, w))


def wide(rng, shape):
    return normal(rng, shape, 2.0)


@st.composite
def window_case(draw, opcode):
    """A pooling window over [N, C, *spatial] (1 or 2 spatial axes): window, stride (past the window
    too) and (low, high) padding drawn per axis; distinct values, so that no window's maximum ties."""
    spatial = draw(st.integers(1, 2))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2))) + tuple(draw(st.integers(1, 5)) for _ in range(spatial))
    window, strides, padding = [1, 1], [1, 1], [(0, 0), (0, 0)]
    for n in shape[2:]:
        k = draw(st.integers(1, 3))
        lo, hi = draw(st.integers(0, k - 1)), draw(st.integers(0, k - 1))
        if n + lo + hi < k:
            hi = k - 1
            lo = max(0, k - n - hi)
        window.append(k)
        strides.append(draw(st.integers(1, 3)))
        padding.append((lo, hi))
    attrs = dict(window=tuple(window), strides=tuple(strides), padding=tuple(padding))
    rng = np.random.default_rng(draw(seeds))
    x = distinct(rng, shape)
    if opcode in ("WindowSum", "WindowMax"):
        return Case([x], lambda tape, v: tape.apply(opcode, [v], **attrs))
    grid = lookup("WindowMax").forward([x], attrs).shape
    second = normal(rng, grid if opcode == "SelectAndScatterAdd" else shape)
    return Case([second, x], lambda tape, a, v: tape.apply(opcode, [a, v], **attrs))


# Hypothesis strategies that draw shapes and attributes (broadcasts, axes, strides, paddings,
# groups, batches), which a row's few fixed examples cannot say; each row's examples run too
# (below). Every elementwise op of one or two operands is derived from its row.
PRIMITIVE_CASES = {
    "Where": where_case(),
    "MatMul": matmul_case(),
    "Sum": reduction("sum", normal),
    "Prod": reduction("prod", normal),
    "Polygamma": polygamma_case(),
    "Max": reduction("max", distinct),
    "Reshape": reshape_case(),
    "Broadcast": broadcast_case(),
    "Transpose": transpose_case(),
    "Slice": slice_case(),
    "Pad": pad_case(),
    "Concatenate": concatenate_case(),
    "Take": take_case(),
    "ScatterAdd": scatter_add_case(),
    "Sort": sort_case(),
    "TakeAlongAxis": along_axis_case("TakeAlongAxis"),
    "ScatterAddAlongAxis": along_axis_case("ScatterAddAlongAxis"),
    "GeluGrad": applied("GeluGrad", [normal, wide]),
    "SoftmaxGrad": applied("SoftmaxGrad", [normal, normal]),
    "LogSoftmaxGrad": applied("LogSoftmaxGrad", [normal, normal]),
    "LayerNormGrad": applied("LayerNormGrad", [normal, normal], row_scale=True),
    "CumSum": cumsum_case(),
    "CumProd": cumulative_case(topos.cumprod, normal),
    "CumMax": cumulative_case(topos.cummax, distinct),
    "CumMin": cumulative_case(topos.cummin, distinct),
    "LogCumSumExp": cumulative_case(topos.logcumsumexp, normal),
    "Fft": fourier_case("Fft"),
    "Rfft": fourier_case("Rfft"),
    "Irfft": fourier_case("Irfft"),
    "Convolution": convolution_case(),
    "Cholesky": factor_case("Cholesky"),
    "TriangularSolve": factor_case("TriangularSolve"),
    "Lu": factor_case("Lu"),
    "Eigh": eigh_case(),
    "Qr": qr_case(),
    "Svd": svd_case(),
    "Reverse": reverse_case(),
    "Scan": scan_case(),
    "Cond": cond_case(),
    "While": while_case(),
    "CustomVjp": custom_vjp_case(),
    "WindowSum": window_case("WindowSum"),
    "WindowMax": window_case("WindowMax"),
    "SelectAndScatterAdd": window_case("SelectAndScatterAdd"),
    "SelectAndGather": window_case("SelectAndGather"),
}


def derived_case(opcode):
    """A plain table row's case from its op_specs row: its public function over its smooth domains,
    or, for an op that decides between equal operands, over two grids that never tie."""
    row, function = OP_SPECS[opcode], public_function(opcode)
    if len(row.operands) == 1:
        return unary(function, smooth_sampler(opcode))
    if row.ties:
        return binary(function, left=grid(0.0), right=grid(0.25))
    return binary(function, left=smooth_sampler(opcode, 0), right=smooth_sampler(opcode, 1))


# Every differentiable elementwise op with no case above is checked from its op_specs row.
PRIMITIVE_CASES.update(
    {opcode: derived_case(opcode) for opcode in derived_rows(PRIMITIVE_CASES) if lookup(opcode).differentiable}
)


def differentiable_primitives():
    return sorted(
        name for name, primitive in primitives().items() if primitive.differentiable and not primitive.is_source
    )


def test_every_differentiable_primitive_has_a_case():
    assert set(differentiable_primitives()) <= set(PRIMITIVE_CASES)


@pytest.mark.parametrize("opcode", sorted(PRIMITIVE_CASES))
@SETTINGS
@given(data=st.data())
def test_primitive_vjp_matches_central_differences(opcode, data):
    network = check_vjp(data.draw(PRIMITIVE_CASES[opcode]), data.draw(seeds))
    assert opcode in {node.opcode for node in network.nodes()}, "the case did not record the primitive"


# Every example of a row (at its shapes and attributes) is checked too, besides the strategies
# above, which draw shapes and attributes far wider than a row's few examples. Left out: examples
# at ties or at a branch's edge, where a step of eps moves a value across it and central
# differences see both sides (a maximum's derivative splits the cotangent, an index picked or a
# window's maximum jumps, a Where condition at 0 turns true, relu at its kink), stop_gradient
# (whose derivative is 0 by definition, not its value's), and examples of index operands alone
# (one_hot), which have nothing to differentiate; round at its halves, where it jumps;
# and log1p, arcsin and arccos next to their poles (-1, +-1), where central differences' own error
# (eps^2 f''' / 6) passes the check's bound: torch's gradients (test_torch_ops) hold them there.
LEFT_OUT = {
    "relu",
    "maximum_ties",
    "minimum_ties",
    "stop_gradient",
    "max_ties",
    "max_ties_all",
    "argmax_ties",
    "argmax_ties_axis0",
    "argmax_ties_axis1",
    "argmax_ties_axis2",
    "argmin_ties_axis1",
    "argmin_ties_axis2",
    "top_k_ties_indices",
    "top_k_ties_indices_all",
    "sort_ties_descending",
    "argsort_ties",
    "argsort_ties_descending",
    "searchsorted_left",
    "searchsorted_right",
    "window_max_ties",
    "select_and_scatter_add_ties",
    "select_and_gather_ties",
    "where_condition_operand",
    "round_method_halves",
    "log1p_small",
    "arcsin_near_ends",
    "arccos_near_ends",
}
EXAMPLES = [
    (key, example)
    for key, example in example_rows(LEFT_OUT)
    if any(not isinstance(shape, Index) for shape in example.shapes)
]


@pytest.mark.parametrize(("key", "example"), EXAMPLES, ids=[example.name for _, example in EXAMPLES])
def test_example_vjp_matches_central_differences(key, example):
    check_vjp(Case(example_arrays(key, example), recorded(example)), seed=len(example.name))


def test_binary_cases_record_broadcast_nodes():
    """The broadcasting path is really exercised: [3, 1] + [4] records two Broadcast nodes."""
    case = Case([np.ones((3, 1)), np.ones(4)], lambda tape, a, b: a + b)
    network = check_vjp(case, seed=0)
    assert [node.opcode for node in network.nodes()].count("Broadcast") == 2


# Composites -------------------------------------------------------------------------------------


@st.composite
def last_axis_case(draw, function, scale=2.0):
    shape = draw(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(draw(seeds))
    return Case([normal(rng, shape, scale)], lambda tape, x: function(x, axis))


@st.composite
def layer_norm_case(draw):
    shape = draw(array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=5))
    rng = np.random.default_rng(draw(seeds))
    features = shape[-1:]
    return Case(
        [normal(rng, shape, 2.0), normal(rng, features), normal(rng, features)],
        lambda tape, x, weight, bias: topos.layer_norm(x, weight, bias),
    )


@st.composite
def cross_entropy_case(draw):
    batch = draw(array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=4))
    classes = draw(st.integers(2, 5))
    rng = np.random.default_rng(draw(seeds))
    targets = rng.integers(0, classes, batch).astype(np.int32)
    return Case(
        [normal(rng, batch + (classes,), 2.0), targets],
        lambda tape, logits, ids: topos.cross_entropy(logits, ids),
    )


@st.composite
def attention_case(draw, causal):
    batch = draw(array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=2))
    steps, width, value_width = (draw(st.integers(1, 4)) for _ in range(3))
    rng = np.random.default_rng(draw(seeds))
    return Case(
        [
            normal(rng, batch + (steps, width)),
            normal(rng, batch + (steps, width)),
            normal(rng, batch + (steps, value_width)),
        ],
        lambda tape, q, k, v: topos.attention(q, k, v, causal=causal),
    )


COMPOSITE_CASES = {
    "softmax": last_axis_case(topos.softmax),
    "log_softmax": last_axis_case(topos.log_softmax),
    "logsumexp": last_axis_case(topos.logsumexp),
    "var": last_axis_case(topos.var),
    "layer_norm": layer_norm_case(),
    "cross_entropy": cross_entropy_case(),
    "attention": attention_case(causal=False),
    "attention_causal": attention_case(causal=True),
}


@pytest.mark.parametrize("name", sorted(COMPOSITE_CASES))
@SETTINGS
@given(data=st.data())
def test_composite_vjp_matches_central_differences(name, data):
    check_vjp(data.draw(COMPOSITE_CASES[name]), data.draw(seeds))


@pytest.mark.parametrize(
    ("name", "fused"),
    [("softmax", "SoftmaxGrad"), ("log_softmax", "LogSoftmaxGrad"), ("layer_norm", "LayerNormGrad")],
)
def test_composites_are_differentiated_in_closed_form_and_agree_with_their_primitives_rules(name, fused):
    """The reverse scan differentiates a softmax, log-softmax or layer norm in one node; asked for
    a cotangent inside one, it applies the primitives' own rules, which agree to rounding."""
    rng = np.random.default_rng(3)
    tape = Tape()
    x = tape.input(rng.standard_normal((3, 5)) * 2.0)
    out = topos.layer_norm(x) if name == "layer_norm" else getattr(topos, name)(x)
    loss = topos.sum(out * tape.leaf(rng.standard_normal((3, 5))))
    network = tape.seal()
    x, out, loss = detach([x, out, loss])
    plan = network.entry([]).backward(loss, [x]).lower()
    backward = [node.opcode for node in plan.nodes[len(network) :]]
    assert fused in backward and "Exp" not in backward and "Rsqrt" not in backward
    run = network.forward(network.parameters(), {})
    field = run.backward(loss)
    gradient = field.of(x).numpy()
    np.testing.assert_allclose(plan.run(network.parameters(), {}).gradient(x).numpy(), gradient, rtol=1e-12)
    # The node just inside the root (the Sub, Div or Mul's first operand) has a cotangent of its own;
    # reading it makes the scan go through every primitive, and x's gradient stays the same.
    inner = network.symbol(network.nodes()[out.index].operands[0])
    assert np.abs(field.of(inner).numpy()).max() > 0
    np.testing.assert_allclose(field.of(x).numpy(), gradient, rtol=1e-10, atol=1e-12)
