"""The WGSL kernels through wgpu-py on raw numpy inputs, against numpy in float64.

Each kernel family is launched directly (``topos.compiler.wgsl.launch`` builders, no
plan; an elementwise op's expression is its primitive's ``wgsl``), over element counts at the edges of 64-wide workgroups (1, 7, 63, 64, 65,
1023, 4097), non-square and batched matrix products, broadcasts on every axis and
operands read through strides. Agreement is tests/cases/README.md's rule: 1e-5
relative, plus 4 sqrt(n) 2^-24 sum(|terms|) for a sum of n terms, plus 8 times
numpy's own float32 error where a formula loses precision in float32.

These tests need a WebGPU adapter (lavapipe here and in CI) and fail without one.
"""

import itertools
import math
import zlib

import numpy as np
import pytest
from op_specs import (
    check_operand,
    check_operands,
    derived_binary_rows,
    derived_unary_rows,
    example_arrays,
    example_row,
    example_rows,
    numpy_call,
    numpy_oracle,
    recorded,
    spread_sampler,
)

from topos import Tape, detach, webgpu
from topos.compiler.wgsl import launch as build
from topos.compiler.wgsl import windows
from topos.ops import lookup
from topos.webgpu import View, run_launches
from topos.webgpu.sources import entry_points, kernel_names, kernel_text, specialise, tokens

EDGE_SIZES = (1, 7, 63, 64, 65, 1023, 4097)
UNIT = 2.0**-24


@pytest.fixture
def rng(request):
    """Each test's own generator, seeded from its name (parameters included): a test's data do
    not depend on which tests ran before it, as they did with one generator for the module."""
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


def test_a_webgpu_adapter_is_present():
    assert webgpu.available(), (
        "no WebGPU adapter: the kernel tests need one (apt-get install mesa-vulkan-drivers gives lavapipe)"
    )


def assert_agrees(got, exact, rounded=None, terms=1, magnitude=None, what=""):
    """``got`` (float32) against ``exact`` (float64) by the documented rule."""
    exact = np.asarray(exact, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == exact.shape, f"{what}: shape {got.shape}, expected {exact.shape}"
    allowed = 1e-5 * np.abs(exact) + 1e-37
    if rounded is not None:
        allowed = np.maximum(allowed, 8.0 * np.abs(np.asarray(rounded, dtype=np.float64) - exact))
    if terms > 1:
        allowed = allowed + 4.0 * math.sqrt(terms) * UNIT * np.asarray(magnitude, dtype=np.float64)
    error = np.abs(got - exact)
    same_special = (np.isinf(exact) & (got == exact)) | (np.isnan(exact) & np.isnan(got))
    bad = ~same_special & ~(error <= allowed)
    assert not bad.any(), (
        f"{what}: {int(bad.sum())} of {got.size} elements disagree, e.g. got {got[bad][:3]} for {exact[bad][:3]}"
    )


def dense(buffer, shape):
    return View.of_buffer(buffer, shape)


def run_one(launches, arrays, out_shape, out_buffer=9, extra=None):
    launches = launches if isinstance(launches, list) else [launches]
    sizes = {out_buffer: max(int(np.prod(out_shape)), 1)}
    sizes.update(extra or {})
    return run_launches(launches, arrays, sizes, {"out": dense(out_buffer, out_shape)})["out"]


# Examples: each op_specs example of a row with a kernel, as a whole plan ---------------------

# Every example with a numpy spelling whose row has a kernel (no ``kernel_declined``), run on
# WebGPU in float32, every node in a kernel, against numpy in float64 (and numpy's own float32
# error); its sums are no longer than its largest operand.
KERNEL_EXAMPLES = [
    (key, example)
    for key, example in example_rows()
    if example.numpy is not None and example_row(key).kernel_declined is None
]


@pytest.mark.parametrize(("key", "example"), KERNEL_EXAMPLES, ids=[e.name for _, e in KERNEL_EXAMPLES])
def test_examples_run_in_kernels_and_agree_with_numpy(key, example):
    arrays = example_arrays(key, example)
    tape = Tape("float32")
    values = [tape.input(a, dtype=a.dtype.name) if a.dtype.kind in "iu" else tape.parameter(a) for a in arrays]
    out = detach(recorded(example)(tape, *values))
    network = tape.seal()
    plan = network.entry([out]).lower()
    run = plan.run(network.parameters(), {}, backend="webgpu")
    # A result of a dtype the op keeps on the host (its ``device_dtypes``: int32 indices reshaped,
    # as argmax's keepdims does) is the op's own stated choice; every other node runs in a kernel.
    computed = {
        index
        for index in plan.schedule
        if not plan.nodes[index].is_source and plan.nodes[index].dtype in lookup(plan.nodes[index].opcode).device_dtypes
    }
    on_host = {index: plan.nodes[index].opcode for index in computed if run.backends[index] != "webgpu"}
    assert not on_host, f"{example.name}: nodes ran on the host, not in a kernel: {on_host}"
    singles = [a if a.dtype.kind in "iu" else a.astype(np.float32) for a in arrays]
    exact = numpy_call(example)(*[a if a.dtype.kind in "iu" else a.astype(np.float64) for a in singles])
    terms = max(a.size for a in arrays)
    magnitude = max((float(np.max(np.abs(a), initial=0.0)) for a in singles if a.dtype.kind == "f"), default=0.0)
    assert_agrees(
        run.of(out),
        exact,
        numpy_call(example)(*singles),
        terms=terms,
        magnitude=terms * magnitude,
        what=example.name,
    )


# Elementwise ----------------------------------------------------------------------------

# The exceptions to the table's draw: a log-uniform one that reaches float32's smallest and largest
# magnitudes, where the op_specs spread is uniform. opcode: (input sampler, float64 formula).
UNARY = {
    "Log": (lambda rng, n: np.exp(rng.uniform(-8, 8, n)), np.log),
    "Rsqrt": (lambda rng, n: np.exp(rng.uniform(-8, 8, n)), lambda x: 1 / np.sqrt(x)),
}
# Every other elementwise op of one operand: its op_specs spread, its numpy function as the oracle.
UNARY.update(
    {
        opcode: (lambda rng, n, o=opcode: spread_sampler(o)(rng, n), numpy_oracle(opcode))
        for opcode in derived_unary_rows(UNARY)
    }
)


# Each op its own test (its opcode in the id), so a row added to op_specs shows by name here.
@pytest.mark.parametrize("n", EDGE_SIZES)
@pytest.mark.parametrize("opcode", UNARY)
def test_unary_ops_over_edge_sizes(opcode, n, rng):
    sample, formula = UNARY[opcode]
    x = check_operand(opcode, 0, sample(rng, n).astype(np.float32))
    got = run_one(build.elementwise(lookup(opcode).wgsl, 9, (n,), [dense(0, (n,))]), {0: x}, (n,))
    with np.errstate(all="ignore"):
        assert_agrees(got, formula(x.astype(np.float64)), formula(x), what=f"{opcode} of {n}")


# Every elementwise op of two operands: its op_specs numpy function (its own forward if none) as the oracle.
BINARY = {opcode: numpy_oracle(opcode) for opcode in derived_binary_rows(())}


@pytest.mark.parametrize("n", EDGE_SIZES)
@pytest.mark.parametrize("opcode", BINARY)
def test_binary_ops_over_edge_sizes_with_ties(opcode, n, rng):
    function = BINARY[opcode]
    if opcode == "Pow":
        x = rng.uniform(0.1, 4, n).astype(np.float32)
        y = rng.uniform(-3, 3, n).astype(np.float32)
    else:
        x = rng.integers(-3, 4, n).astype(np.float32) * 0.5  # many ties, no zero divisors below
        y = np.where((rng.random(n) < 0.3) & (x != 0), x, rng.integers(1, 4, n) * 0.75).astype(np.float32)
    check_operands(opcode, [x, y])
    got = run_one(build.elementwise(lookup(opcode).wgsl, 9, (n,), [dense(0, (n,)), dense(1, (n,))]), {0: x, 1: y}, (n,))
    exact = function(x.astype(np.float64), y.astype(np.float64)).astype(np.float64)
    assert_agrees(got, exact, function(x, y).astype(np.float64), what=f"{opcode} of {n}")


def test_pow_takes_negative_bases_to_integer_powers_as_numpy_does():
    x = np.array([-2.0, -1.5, -0.5, 0.0, 0.0, 0.0, 3.0, -2.0], dtype=np.float32)
    y = np.array([3.0, 2.0, -1.0, 2.0, 0.0, 1.5, 0.5, 0.5], dtype=np.float32)
    got = run_one(build.elementwise("power(x, y)", 9, (8,), [dense(0, (8,)), dense(1, (8,))]), {0: x, 1: y}, (8,))
    with np.errstate(invalid="ignore"):
        exact = np.power(x.astype(np.float64), y.astype(np.float64))
    assert np.isnan(got[-1]) and np.isnan(exact[-1])
    assert_agrees(got[:-1], exact[:-1], what="power")


def test_broadcast_on_every_axis_reads_through_zero_strides(rng):
    shape = (3, 4, 5)
    y = rng.normal(size=shape).astype(np.float32)
    for kept in itertools.product((False, True), repeat=3):
        x_shape = tuple(extent if keep else 1 for extent, keep in zip(shape, kept))
        x = rng.normal(size=x_shape).astype(np.float32)
        view = dense(0, x_shape).broadcast(shape)
        got = run_one(build.elementwise("x - y", 9, shape, [view, dense(1, shape)]), {0: x, 1: y}, shape)
        assert_agrees(got, x.astype(np.float64) - y, what=f"broadcast {x_shape}")
    # New leading axes (numpy's broadcasting of a lower rank).
    z = rng.normal(size=(5,)).astype(np.float32)
    got = run_one(
        build.elementwise("x * y", 9, shape, [dense(1, shape), dense(0, (5,)).broadcast(shape)]), {0: z, 1: y}, shape
    )
    assert_agrees(got, y.astype(np.float64) * z, what="leading axes")


def test_where_reads_transposed_sliced_and_constant_operands(rng):
    base = rng.normal(size=(6, 8)).astype(np.float32)
    condition = (rng.random((8, 6)) < 0.5).astype(np.float32)
    transposed = dense(0, (6, 8)).transpose((1, 0))  # [8, 6], strides (1, 8)
    sliced = dense(2, (8, 12)).slice((0, 1), (1, 2), (8, 6))
    wide = rng.normal(size=(8, 12)).astype(np.float32)
    got = run_one(
        build.elementwise("select(z, y, x != 0.0)", 9, (8, 6), [dense(1, (8, 6)), transposed, sliced]),
        {0: base, 1: condition, 2: wide},
        (8, 6),
    )
    assert_agrees(got, np.where(condition != 0, base.T, wide[:, 1:12:2]), what="where")
    constant = View.of_constant(2.5, (8, 6))
    got = run_one(build.elementwise("x * y", 9, (8, 6), [transposed, constant]), {0: base}, (8, 6))
    assert_agrees(got, base.T.astype(np.float64) * 2.5, what="constant")


# Copy and fill ------------------------------------------------------------------------------


@pytest.mark.parametrize("n", EDGE_SIZES)
def test_copy_materialises_transposes_and_slices(n, rng):
    x = rng.normal(size=(n, 3)).astype(np.float32)
    got = run_one(build.copy(dense(0, (n, 3)).transpose((1, 0)), dense(9, (3, n))), {0: x}, (3, n))
    assert np.array_equal(got, x.T)
    rows = (n + 1) // 2
    got = run_one(build.copy(dense(0, (n, 3)).slice((0, 1), (2, 1), (rows, 2)), dense(9, (rows, 2))), {0: x}, (rows, 2))
    assert np.array_equal(got, x[::2, 1:])


def test_copy_and_fill_write_into_windows_of_a_buffer(rng):
    a = rng.normal(size=(4, 3)).astype(np.float32)
    out = dense(9, (4, 7))
    launches = [
        build.fill(out, -1.0),
        build.copy(dense(0, (4, 3)), out.slice((0, 1), (1, 2), (4, 3))),
        build.fill(out.slice((1, 0), (2, 7), (2, 1)), 5.0),
    ]
    got = run_one(launches, {0: a}, (4, 7))
    expected = np.full((4, 7), -1.0, dtype=np.float32)
    expected[:, 1::2] = a
    expected[1::2, 0] = 5.0
    assert np.array_equal(got, expected)


# Reductions -------------------------------------------------------------------------------

STRATEGIES = ("serial", "workgroup", "two-pass")


def reduce_on_device(opcode, x, axes, strategy, scale=1.0, chunk=build.CHUNK_TERMS, view=None):
    view = view or dense(0, x.shape)
    kept = tuple(e for a, e in enumerate(view.shape) if a not in axes)
    scratch = iter(range(20, 30))
    sizes = {}

    def allocate(elements):
        buffer = next(scratch)
        sizes[buffer] = elements
        return buffer

    launches = build.reduce(opcode, view, axes, 9, scale=scale, allocate=allocate, strategy=strategy, chunk=chunk)
    return run_one(launches, {0: x}, kept, extra=sizes)


@pytest.mark.parametrize("n", EDGE_SIZES)
def test_sum_and_max_over_edge_sizes_with_every_strategy(n, rng):
    x = rng.normal(size=(n,)).astype(np.float32)
    for strategy in STRATEGIES:
        got = reduce_on_device("Sum", x, (0,), strategy, chunk=256)
        assert_agrees(got, x.astype(np.float64).sum(), terms=n, magnitude=np.abs(x).sum(), what=f"sum {strategy}")
        got = reduce_on_device("Max", x, (0,), strategy, chunk=256)
        assert got == x.max(), f"max {strategy} of {n}"


@pytest.mark.parametrize("axes", [(0,), (1,), (2,), (0, 2), (1, 2), (0, 1, 2)])
def test_reductions_over_axis_sets_read_strided_rows(axes, rng):
    x = rng.normal(size=(5, 65, 7)).astype(np.float32)
    terms = int(np.prod([x.shape[a] for a in axes]))
    for strategy in STRATEGIES:
        got = reduce_on_device("Sum", x, axes, strategy, scale=0.5, chunk=64)
        exact = 0.5 * x.astype(np.float64).sum(axis=axes)
        assert_agrees(got, exact, terms=terms, magnitude=0.5 * np.abs(x).sum(axis=axes), what=f"sum {axes} {strategy}")
        assert np.array_equal(reduce_on_device("Max", x, axes, strategy, chunk=64), x.max(axis=axes))


def test_a_two_pass_reduction_with_many_chunks_folds_them_in_a_workgroup(rng):
    x = rng.normal(size=(3, 4097)).astype(np.float32)
    got = reduce_on_device("Sum", x, (1,), "two-pass", chunk=64)  # 65 chunks: the second pass is a workgroup
    assert_agrees(got, x.astype(np.float64).sum(axis=1), terms=4097, magnitude=np.abs(x).sum(axis=1))


def test_reducing_a_transposed_view(rng):
    x = rng.normal(size=(7, 130)).astype(np.float32)
    view = dense(0, (7, 130)).transpose((1, 0))
    got = reduce_on_device("Sum", x, (0,), "workgroup", view=view)
    assert_agrees(got, x.astype(np.float64).sum(axis=1), terms=130, magnitude=np.abs(x).sum(axis=1))


# Matrix products ------------------------------------------------------------------------------

MATMUL_SHAPES = [
    # (batch, m, k, n)
    ((), 1, 1, 1),
    ((), 7, 63, 65),
    ((), 64, 64, 64),
    ((), 65, 33, 63),
    ((), 3, 1023, 5),
    ((), 2, 4097, 3),
    ((), 130, 7, 66),
    ((2, 3), 17, 9, 5),
    ((4,), 65, 16, 33),
]


@pytest.mark.parametrize("batch, m, k, n", MATMUL_SHAPES)
def test_matmul_simple_and_tiled_agree_with_numpy(batch, m, k, n, rng):
    a = rng.normal(size=batch + (m, k)).astype(np.float32)
    b = rng.normal(size=batch + (k, n)).astype(np.float32)
    exact = a.astype(np.float64) @ b
    magnitude = np.abs(a).astype(np.float64) @ np.abs(b)
    for strategy in ("simple", "tiled"):
        got = run_one(
            build.matmul(dense(0, a.shape), dense(1, b.shape), 9, strategy=strategy), {0: a, 1: b}, exact.shape
        )
        assert_agrees(got, exact, terms=k, magnitude=magnitude, what=f"{strategy} {batch} {m}x{k}x{n}")


# The tiled kernel's edges: 64 x 64 output tiles of 8 x 8 blocks (m and n at 1, 7, 8, 9, 63, 64,
# 65, 127, 129), k at 1, 15, 16, 17 and 1023, and a batch whose tiles are partly outside.
TILE_EDGE_SHAPES = [
    ((), 1, 1, 1023),
    ((), 1023, 1, 7),
    ((), 8, 15, 9),
    ((), 9, 17, 8),
    ((), 63, 15, 65),
    ((), 64, 16, 64),
    ((), 65, 17, 127),
    ((), 129, 1023, 63),
    ((3,), 127, 33, 129),
]


@pytest.mark.parametrize("batch, m, k, n", TILE_EDGE_SHAPES)
def test_tiled_matmul_at_tile_edges_writes_its_output_and_nothing_past_it(batch, m, k, n, rng):
    a = rng.normal(size=batch + (m, k)).astype(np.float32)
    b = rng.normal(size=batch + (k, n)).astype(np.float32)
    exact = a.astype(np.float64) @ b
    count = exact.size
    # The output buffer runs a whole tile past the product, filled with a marker the kernel must not touch.
    spare = 64 * 64
    marked = np.full(count + spare, 12345.0, dtype=np.float32)
    launch = build.matmul(dense(0, a.shape), dense(1, b.shape), 9, strategy="tiled")
    got = run_launches(
        [launch],
        {0: a, 1: b, 9: marked},
        outputs={"out": dense(9, exact.shape), "past": View(9, count, (spare,), (1,))},
    )
    magnitude = np.abs(a).astype(np.float64) @ np.abs(b)
    assert_agrees(got["out"], exact, terms=k, magnitude=magnitude, what=f"tiled {batch} {m}x{k}x{n}")
    assert np.all(got["past"] == 12345.0), "the tiled kernel wrote past the end of its output"


def test_matmul_selection_follows_the_rule_measured_on_lavapipe_and_swiftshader():
    # docs/kernels.md: tiled for a product whose output (in each batch) fills its blocks of 8 x 8
    # at least half and has at least 16 of them or a contraction of at least 256; simple otherwise,
    # unless k is past the simple kernel's loop limit, and simple for more batches than a grid
    # dimension holds.
    tiled = [(1, 32, 32, 32), (1, 48, 48, 48), (1, 8, 512, 512), (1, 256, 38, 32), (8, 32, 32, 32), (1, 512, 512, 2)]
    tiled += [(1, 16, 16, 256), (4, 8, 8, 2048)]
    simple = [(1, 24, 24, 24), (1, 16, 16, 255), (1, 1, 512, 512), (64, 16, 16, 8), (1, 2, 3, 4097), (1, 3, 512, 64)]
    for batch, m, n, k in tiled:
        assert build.matmul_strategy(batch, m, n, k) == "tiled", (batch, m, n, k)
    for batch, m, n, k in simple:
        assert build.matmul_strategy(batch, m, n, k) == "simple", (batch, m, n, k)
    assert build.matmul_strategy(1, 1, 1, build.LOOP_LIMIT + 1) == "tiled"
    assert build.matmul_strategy(70000, 64, 64, 64) == "simple"


def test_matmul_reads_transposed_operands_and_broadcast_batches_in_place(rng):
    a = rng.normal(size=(40, 70)).astype(np.float32)  # used as a^T: [70, 40]
    b = rng.normal(size=(40, 33)).astype(np.float32)  # broadcast over a batch of 3
    a_view = dense(0, (40, 70)).transpose((1, 0)).broadcast((3, 70, 40))
    b_view = dense(1, (40, 33)).broadcast((3, 40, 33))
    exact = np.broadcast_to(a.T.astype(np.float64) @ b, (3, 70, 33))
    magnitude = np.broadcast_to(np.abs(a.T).astype(np.float64) @ np.abs(b), (3, 70, 33))
    for strategy in ("simple", "tiled"):
        got = run_one(build.matmul(a_view, b_view, 9, strategy=strategy), {0: a, 1: b}, (3, 70, 33))
        assert_agrees(got, exact, terms=40, magnitude=magnitude, what=strategy)


# Rows: softmax, log-softmax, layer norm ------------------------------------------------------------


@pytest.mark.parametrize("n", EDGE_SIZES)
def test_fused_row_kernels_over_edge_lengths(n, rng):
    x = rng.normal(0, 4, size=(3, n)).astype(np.float32)
    x64 = x.astype(np.float64)
    shifted = x64 - x64.max(axis=1, keepdims=True)
    total = np.exp(shifted).sum(axis=1, keepdims=True)
    got = run_one(build.softmax(dense(0, x.shape), 9), {0: x}, x.shape)
    assert_agrees(got, np.exp(shifted) / total, terms=n, magnitude=np.exp(shifted) / total, what="softmax")
    got = run_one(build.log_softmax(dense(0, x.shape), 9), {0: x}, x.shape)
    exact = shifted - np.log(total)
    assert_agrees(got, exact, terms=n, magnitude=np.abs(x64).max(), what="log_softmax")
    got = run_one(build.layer_norm(dense(0, x.shape), 9, 1e-5), {0: x}, x.shape)
    centred = x64 - x64.mean(axis=1, keepdims=True)
    exact = centred / np.sqrt((centred**2).mean(axis=1, keepdims=True) + 1e-5)
    assert_agrees(got, exact, terms=n, magnitude=np.abs(exact).max(), what="layer_norm")


@pytest.mark.parametrize("n", EDGE_SIZES)
def test_row_derivative_kernels_over_edge_lengths(n, rng):
    """SoftmaxGrad, LogSoftmaxGrad and LayerNormGrad, each against its formula in float64."""
    g = rng.normal(0, 1, size=(3, n)).astype(np.float32)
    x = rng.normal(0, 3, size=(3, n)).astype(np.float32)
    g64, x64 = g.astype(np.float64), x.astype(np.float64)
    y = np.exp(x64 - x64.max(axis=1, keepdims=True))
    y = (y / y.sum(axis=1, keepdims=True)).astype(np.float32)
    y64 = y.astype(np.float64)
    got = run_one(build.softmax_grad(dense(0, g.shape), dense(1, y.shape), 9), {0: g, 1: y}, g.shape)
    exact = y64 * (g64 - (g64 * y64).sum(axis=1, keepdims=True))
    assert_agrees(got, exact, terms=n, magnitude=y64 * np.abs(g64).max(), what="softmax_grad")
    log_y = np.log(y).astype(np.float32)
    got = run_one(build.log_softmax_grad(dense(0, g.shape), dense(1, g.shape), 9), {0: g, 1: log_y}, g.shape)
    exact = g64 - np.exp(log_y.astype(np.float64)) * g64.sum(axis=1, keepdims=True)
    assert_agrees(got, exact, terms=n, magnitude=np.abs(g64).sum(axis=1, keepdims=True), what="log_softmax_grad")
    centred = x64 - x64.mean(axis=1, keepdims=True)
    scale64 = 1.0 / np.sqrt((centred**2).mean(axis=1, keepdims=True) + 1e-5)
    normed, scale = (centred * scale64).astype(np.float32), scale64.astype(np.float32)
    n64, r64 = normed.astype(np.float64), scale.astype(np.float64)
    launch = build.layer_norm_grad(dense(0, g.shape), dense(1, g.shape), dense(2, scale.shape), 9)
    got = run_one(launch, {0: g, 1: normed, 2: scale}, g.shape)
    exact = r64 * (g64 - g64.mean(axis=1, keepdims=True) - n64 * (g64 * n64).mean(axis=1, keepdims=True))
    magnitude = r64 * (np.abs(g64).max() + np.abs(n64) * np.abs(g64 * n64).max())
    assert_agrees(got, exact, terms=n, magnitude=magnitude, what="layer_norm_grad")


def test_row_derivative_kernels_read_each_operand_through_its_own_strides(rng):
    g = rng.normal(size=(5, 2, 4)).astype(np.float32)  # read as [2, 4, 5]: rows of 5 along a stride of 8
    normed = rng.normal(size=(2, 4, 5)).astype(np.float32)
    scale = rng.uniform(0.5, 2.0, size=(4, 2)).astype(np.float32)  # read as [2, 4, 1]
    g_view = dense(0, g.shape).transpose((1, 2, 0))
    scale_view = View(2, 0, (2, 4, 1), (1, 2, 1))  # scale.T with a row axis of one
    launch = build.layer_norm_grad(g_view, dense(1, normed.shape), scale_view, 9)
    got = run_one(launch, {0: g, 1: normed, 2: scale}, (2, 4, 5))
    g64, n64 = g.transpose(1, 2, 0).astype(np.float64), normed.astype(np.float64)
    r64 = scale.T.astype(np.float64)[..., None]
    exact = r64 * (g64 - g64.mean(axis=-1, keepdims=True) - n64 * (g64 * n64).mean(axis=-1, keepdims=True))
    assert_agrees(got, exact, terms=5, magnitude=r64 * 10.0, what="strided layer_norm_grad")


def test_gelu_grad_expression_over_edge_sizes(rng):
    c, k = math.sqrt(2 / math.pi), 0.044715
    for n in EDGE_SIZES:
        g = rng.normal(0, 1, n).astype(np.float32)
        x = rng.normal(0, 3, n).astype(np.float32)
        got = run_one(
            build.elementwise(lookup("GeluGrad").wgsl, 9, (n,), [dense(0, (n,)), dense(1, (n,))]), {0: g, 1: x}, (n,)
        )
        x64 = x.astype(np.float64)
        t = np.tanh(c * (x64 + k * x64**3))
        exact = g * (0.5 * (1 + t) + 0.5 * x64 * (1 - t * t) * c * (1 + 3 * k * x64**2))
        # Near x = -0.7518, where gelu'(x) = 0, the kernel's 1 + x (1 - t) (c + 3ck x^2) sums two
        # terms of about 1 to nearly 0: WGSL's tanh (within 2 ulps on lavapipe, numpy's within 1)
        # is then off by more than 8 times numpy's float32 error relative to the result, though
        # by a few ulps of the terms. So the tolerance is the documented one for a sum of two terms.
        terms = np.abs(g) * 0.5 * (1 + t) * (1 + np.abs(x64 * (1 - t) * (c + 3 * c * k * x64**2)))
        assert_agrees(
            got, exact, lookup("GeluGrad").forward([g, x], {}), terms=2, magnitude=terms, what=f"GeluGrad of {n}"
        )


def test_row_kernels_read_rows_through_strides(rng):
    x = rng.normal(size=(9, 2, 5)).astype(np.float32)
    view = dense(0, x.shape).transpose((1, 2, 0))  # rows of 9 along a stride of 10
    got = run_one(build.softmax(view, 9), {0: x}, (2, 5, 9))
    y = x.transpose(1, 2, 0).astype(np.float64)
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    assert_agrees(got, e / e.sum(axis=-1, keepdims=True), terms=9, magnitude=1.0)


# Gathers ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_take_gathers_along_any_axis(axis, rng):
    values = rng.normal(size=(4, 6, 3)).astype(np.float32)
    indices = rng.integers(0, values.shape[axis], size=(2, 5)).astype(np.int32)
    out_shape = values.shape[:axis] + indices.shape + values.shape[axis + 1 :]
    got = run_one(
        build.take(dense(0, values.shape), dense(1, indices.shape), axis, 9), {0: values, 1: indices}, out_shape
    )
    assert np.array_equal(got, np.take(values, indices, axis=axis))


def test_take_reads_zero_for_an_index_out_of_range_and_one_hot_marks_each_index(rng):
    values = rng.normal(size=(5, 2)).astype(np.float32)
    indices = np.array([4, -1, 5, 0], dtype=np.int32)
    got = run_one(build.take(dense(0, (5, 2)), dense(1, (4,)), 0, 9), {0: values, 1: indices}, (4, 2))
    assert np.array_equal(got, np.stack([values[4], np.zeros(2), np.zeros(2), values[0]]))
    labels = np.array([[3, 0], [6, 2]], dtype=np.int32)
    got = run_one(build.one_hot(dense(1, (2, 2)), 7, 9), {1: labels}, (2, 2, 7))
    assert np.array_equal(got, np.eye(7, dtype=np.float32)[labels])


# The files ---------------------------------------------------------------------------------------------


def test_every_kernel_file_documents_its_bindings_and_parameters():
    assert set(kernel_names()) >= {"copy", "elementwise", "gather", "layer_norm", "matmul", "reduce", "softmax"}
    for name in kernel_names():
        text = kernel_text(name)
        header = text.split("\n@group")[0]
        assert header.startswith(f'// topos kernel family "{name}"'), name
        assert "// Bindings (group 0):" in header and "// Parameters (u32 words):" in header, name
        # {{COMMON}} is the shared helpers (checked below); every other token is a specialisation.
        assert "kernels/common.wgsl" in header, name
        for token in tokens(text):
            if token != "COMMON":
                assert f"{{{{{token}}}}}" in header, f"{name}: the header does not explain {{{{{token}}}}}"


def test_every_kernel_file_takes_the_shared_helpers_from_common_rather_than_its_own_copy():
    import re

    common = kernel_text("common")

    def defined(text):
        return set(re.findall(r"(?m)^fn (\w+)\(", text)) | set(
            re.findall(r"(?m)^var<(?:private|workgroup)> (\w+)", text)
        )

    shared = defined(common)
    assert {"word", "element", "decode", "strided", "fold", "partial", "infinity", "not_a_number"} <= shared
    assert "@group" not in common, "common.wgsl reads the including file's bindings and declares none"
    for name in kernel_names():
        text = kernel_text(name)
        assert "{{COMMON}}" in text, name
        own = defined(text)
        assert not own & shared, f"{name}.wgsl defines {sorted(own & shared)} again"
        assert "{{COMMON}}" not in specialise(name, {t: "0.0" for t in tokens(text) if t != "COMMON"})


def test_every_entry_point_takes_its_prologue_and_the_parameter_block_from_the_loader():
    import re

    # The loader writes the signature, the index and its bound once (an entry line, expanded by
    # topos.webgpu.sources.expand_entries), and declares params with common.wgsl; a file that wrote
    # them out again would hold a copy that could drift. matmul_tiled (8 x 8 invocations) writes its own.
    own_signature = {"matmul_tiled"}
    for name in kernel_names():
        text = kernel_text(name)
        assert "var<uniform> params" not in text, f"{name}.wgsl declares the parameter block again"
        assert "@builtin(local_invocation_index)" not in text, f"{name}.wgsl writes an entry's prologue again"
        compiled = specialise(name, {t: "0.0" for t in tokens(text) if t != "COMMON"})
        assert compiled.count("var<uniform> params") == 1, name
        assert "{{" not in re.sub(r"//.*", "", compiled), f"{name}.wgsl holds a line the loader did not expand"
        declared = set(re.findall(r"@compute @workgroup_size\([^)]*\)\nfn (\w+)\(", compiled))
        lines = set(entry_points(name))
        assert len(lines) == len(entry_points(name)), f"{name}.wgsl names an entry point twice"
        assert declared - lines <= own_signature and lines <= declared, name


def test_each_primitive_names_a_kernel_family_with_a_file():
    from topos.ops import primitives

    families = {"elementwise", "reduce", "matmul", "copy", "gather", "softmax", "layer_norm", "scan"}
    families |= {"convolution", "random", "window", "scatter", "fft", "linalg", "eigh"}
    families |= {"sort"}
    for name, primitive in primitives().items():
        if primitive.is_source:
            continue
        assert primitive.kernel in families | {None}, f"{name} names an unknown kernel family {primitive.kernel!r}"
        if primitive.kernel == "elementwise":
            assert primitive.wgsl is not None, f"{name} has no elementwise expression"
    assert families <= set(kernel_names())
    with_expressions = {n for n, p in primitives().items() if p.wgsl is not None}
    assert with_expressions <= {n for n, p in primitives().items() if p.kernel == "elementwise"}


def test_long_sums_and_contractions_stay_within_the_loop_limit(rng):
    # lavapipe leaves any loop after 32767 iterations, silently: the builders split the work instead.
    ones = np.ones(40000, dtype=np.float32)
    with pytest.raises(ValueError, match="exceed the limit of 32767"):
        reduce_on_device("Sum", ones, (0,), "serial")
    n = 64 * build.LOOP_LIMIT + 100
    x = rng.normal(size=n).astype(np.float32)
    assert build.reduction_strategy(1, n) == "two-pass"
    got = reduce_on_device("Sum", x, (0,), None)
    assert_agrees(got, x.astype(np.float64).sum(), terms=n, magnitude=np.abs(x).sum(), what="long sum")
    # lavapipe counts a loop's iterations over all its runs in one invocation, so the tiled kernel
    # takes 16 steps of k an iteration past the limit; 70001 is past twice the limit, and not a
    # whole number of 16 steps, and there a is read through a transpose (as a gradient reads it).
    a = rng.normal(size=(2, 40000)).astype(np.float32)
    b = rng.normal(size=(40000, 3)).astype(np.float32)
    assert build.matmul_strategy(1, 2, 3, 40000) == "tiled"
    got = run_one(build.matmul(dense(0, a.shape), dense(1, b.shape), 9), {0: a, 1: b}, (2, 3))
    assert_agrees(got, a.astype(np.float64) @ b, terms=40000, magnitude=np.abs(a).astype(np.float64) @ np.abs(b))
    stored = rng.normal(size=(70001, 9)).astype(np.float32)  # used as a = stored^T: [9, 70001]
    b = rng.normal(size=(70001, 10)).astype(np.float32)
    a_view = dense(0, stored.shape).transpose((1, 0))
    got = run_one(build.matmul(a_view, dense(1, b.shape), 9), {0: stored, 1: b}, (9, 10))
    magnitude = np.abs(stored.T).astype(np.float64) @ np.abs(b)
    assert_agrees(got, stored.T.astype(np.float64) @ b, terms=70001, magnitude=magnitude, what="a^T @ b, k 70001")


# Windows (pooling) --------------------------------------------------------------------------------

#: Edge sizes of pooling: 1x1 images, a window as large as the image, strides past the window,
#: (low, high) padding, 1-D, and a batch and channels over more than one workgroup.
WINDOW_EDGES = [
    ((3, 2, 1, 1), (1, 1), (1, 1), ((0, 0), (0, 0))),
    ((2, 3, 5, 4), (5, 4), (1, 1), ((0, 0), (0, 0))),
    ((2, 2, 7, 7), (2, 2), (3, 3), ((1, 1), (0, 1))),
    ((2, 3, 6, 5), (3, 2), (2, 1), ((1, 2), (0, 1))),
    ((4, 3, 9), (3,), (1,), ((1, 1),)),
    ((8, 16, 8, 8), (2, 2), (2, 2), ((0, 0), (0, 0))),
]
WINDOW_OPS = {
    "WindowSum": "window_sum",
    "WindowMax": "window_max",
    "SelectAndGather": "select_gather",
    "SelectAndScatterAdd": "select_scatter_add",
}


@pytest.mark.parametrize("shape,window,strides,padding", WINDOW_EDGES)
def test_window_kernels_agree_with_numpy_at_edge_sizes_with_ties(shape, window, strides, padding, rng):
    attrs = dict(window=(1, 1) + window, strides=(1, 1) + strides, padding=((0, 0), (0, 0)) + padding)
    x = np.maximum(rng.normal(size=shape), 0.0).astype(np.float32)  # after a ReLU: ties at 0
    grid = lookup("WindowMax").forward([x], attrs).shape
    seconds = {"SelectAndGather": rng.normal(size=shape), "SelectAndScatterAdd": rng.normal(size=grid)}
    for opcode, entry in WINDOW_OPS.items():
        second = seconds.get(opcode)
        arrays = {0: x} if second is None else {0: x, 1: second.astype(np.float32)}
        out_shape = shape if opcode == "SelectAndScatterAdd" else grid
        view = None if second is None else dense(1, second.shape)
        got = run_one(windows.window(entry, attrs, dense(0, shape), 9, view), arrays, out_shape)
        operands = [x.astype(np.float64)] if second is None else [second, x.astype(np.float64)]
        exact = lookup(opcode).forward(operands, attrs)
        terms = int(np.prod(window)) if opcode != "SelectAndScatterAdd" else lookup(opcode).windows_per_element(attrs)
        magnitude = lookup(opcode).forward([np.abs(o) for o in operands[:1]] + operands[1:], attrs)
        assert_agrees(got, exact, terms=terms, magnitude=np.abs(magnitude), what=f"{opcode} {shape} {attrs}")


def test_window_kernels_read_a_transposed_operand_through_its_strides(rng):
    stored = rng.normal(size=(2, 3, 6, 5)).astype(np.float32)  # read as its transpose [2, 3, 5, 6]
    x_view = dense(0, stored.shape).transpose((0, 1, 3, 2))
    attrs = dict(window=(1, 1, 2, 3), strides=(1, 1, 2, 2), padding=((0, 0), (0, 0), (0, 1), (1, 0)))
    x = np.ascontiguousarray(stored.transpose(0, 1, 3, 2)).astype(np.float64)
    grid = lookup("WindowMax").forward([x], attrs).shape
    got = run_one(windows.window("window_max", attrs, x_view, 9), {0: stored}, grid)
    assert_agrees(got, lookup("WindowMax").forward([x], attrs), what="max of a transposed view")


# Scans (kernels/scan.wgsl) ------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["serial", "workgroup"])
@pytest.mark.parametrize("n", EDGE_SIZES)
def test_scan_kernels_over_edge_lengths_with_ties_and_nan(n, strategy, rng):
    from topos.compiler.wgsl import scans

    x = rng.normal(size=(3, n)).astype(np.float32)
    x[0, n // 2] = x[0, n - 1] = 9.0  # a tie for the largest: the lower index
    x[1, n // 3] = np.nan  # a NaN counts as the extreme
    x[2, 0] = x[2, n - 1] = -9.0  # a tie for the smallest
    view = dense(0, x.shape)
    for opcode, numpy in (("ArgMax", np.argmax), ("ArgMin", np.argmin)):
        got = run_one(scans.arg_extreme(opcode, view, 9, strategy), {0: x}, (3,)).view(np.int32)
        assert np.array_equal(got, numpy(x, axis=-1)), (opcode, got)
    k = min(n, 5)
    ordered = np.argsort(np.where(np.isnan(x), -np.inf, -x), axis=-1, kind="stable")[:, :k]
    got = run_one(scans.top_k(view, k, 9), {0: x}, (3, k)).view(np.int32)
    assert np.array_equal(got[[0, 2]], ordered[[0, 2]]) and got[1, 0] == n // 3
    finite = x[[0, 2]]
    for reverse in (False, True):
        got = run_one(scans.cumsum(dense(0, finite.shape), 9, reverse, strategy), {0: finite}, finite.shape)
        exact = (
            np.cumsum(finite.astype(np.float64)[:, ::-1], -1)[:, ::-1] if reverse else np.cumsum(finite, -1, np.float64)
        )
        assert_agrees(got, exact, terms=n, magnitude=np.abs(finite).astype(np.float64).sum(-1, keepdims=True))


def test_scan_kernels_read_rows_through_strides(rng):
    from topos.compiler.wgsl import scans

    x = rng.normal(size=(9, 2, 5)).astype(np.float32)
    view = dense(0, x.shape).transpose((1, 2, 0))  # rows of 9 along a stride of 10
    rows = x.transpose(1, 2, 0)
    for strategy in ("serial", "workgroup"):
        got = run_one(scans.arg_extreme("ArgMax", view, 9, strategy), {0: x}, (2, 5)).view(np.int32)
        assert np.array_equal(got, rows.argmax(-1))
    got = run_one(scans.cumsum(view, 9, strategy="workgroup"), {0: x}, (2, 5, 9))
    assert_agrees(
        got, np.cumsum(rows, -1, np.float64), terms=9, magnitude=np.abs(rows).astype(np.float64).sum(-1, keepdims=True)
    )


def test_scan_strategy_follows_the_rule_measured_on_lavapipe():
    from topos.compiler.wgsl.scans import scan_strategy

    assert scan_strategy(1, 32) == "serial" and scan_strategy(1, 33) == "workgroup"
    assert scan_strategy(7, 4097) == "workgroup" and scan_strategy(8, 4097) == "serial"
    assert scan_strategy(8, build.LOOP_LIMIT + 1) == "workgroup"  # one invocation's loop would run too long
