"""The factorisation kernels (kernels/linalg.wgsl) through wgpu-py, against numpy in float64.

Cholesky and TriangularSolve are launched directly (``topos.compiler.wgsl.linalg``) at 1 x 1,
2 x 2, a middle size past one 64-lane workgroup's rows, and the largest each kernel takes,
batched, through strided and transposed views, with every TriangularSolve attribute
combination; then as a float32 recording, whose kernels reading names the kernel.

The bounds are the textbook backward-error bounds (Higham, Accuracy and Stability of Numerical
Algorithms, 2nd ed.), with u = 2^-24 and gamma_k = k u / (1 - k u):

- a computed Cholesky factor l is the exact factor of a + da, |da| <= gamma_{n+1} |l| |l^T|
  (Theorem 10.3); a computed substitution x solves (t + dt) x = b, |dt| <= gamma_n |t|
  (Theorem 8.5), so |b - t x| <= gamma_n |t| |x| and, since x_exact - x = t^-1 (b - t x),
  |x - x_exact| <= |t^-1| gamma_n |t| |x|.
- Both theorems count one rounding of at most u an operation. WGSL rounds f32 +, - and *
  correctly, but lets a division be 2.5 ULP off and sqrt (inherited from 1 / inverseSqrt,
  2 ULP) 4.5 ULP off: k ULP is at most 2k u relative, and Lemma 3.1 lets an operation off by
  k u count as k roundings. So a division counts as DIVISION and a square root as SQUARE_ROOT
  roundings, and the symmetrising add of (a + a^T) / 2 as one more.
- The factor against numpy's: Sun's perturbation bound (Theorem 10.8), ||dl||_F / ||l||_2 <=
  2^-1/2 kappa_2(a) e / (1 - kappa_2(a) e), e = ||da||_F / ||a||_2, with da bounded as above.
- The residuals are evaluated in float64, whose own rounding (gamma_{n+1} at 2^-53) is added.

These tests need a WebGPU adapter (lavapipe here and in CI) and fail without one.
"""

import itertools
import zlib

import numpy as np
import pytest

import topos
from topos import Tape
from topos.compiler.wgsl import linalg as build
from topos.compiler.wgsl.dispatch import LOOP_LIMIT
from topos.ops import lookup
from topos.webgpu import View, run_launches

UNIT = 2.0**-24
DOUBLE = 2.0**-53
#: Roundings of u that one f32 division and one square root count as in WGSL (2.5 and 4.5 ULP).
DIVISION = 5
SQUARE_ROOT = 9
#: 1 x 1, 2 x 2, a size whose lanes own two rows and more than one column block, and the largest.
CHOLESKY_SIZES = (1, 2, 67, build.MAX_CHOLESKY)
SOLVE_SIZES = (1, 2, 67, build.MAX_SOLVE)
FLAGS = ("left_side", "lower", "transpose_a", "unit_diagonal")
EVERY_COMBINATION = [dict(zip(FLAGS, values)) for values in itertools.product((True, False), repeat=4)]


def gamma(k, unit=UNIT):
    return k * unit / (1 - k * unit)


@pytest.fixture
def rng(request):
    """Each test's own generator, seeded from its name (parameters included)."""
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


def run(launch, arrays, shape):
    """One launch on raw float32 arrays (buffer id -> array); the contiguous result in buffer 9."""
    outputs = {"out": View.of_buffer(9, shape)}
    return run_launches([launch], arrays, {9: int(np.prod(shape))}, outputs)["out"].astype(np.float64)


def positive_definite(rng, batch, n, skew=0.0):
    """Well-conditioned symmetric positive-definite matrices x x^T / n + I, in float32, plus ``skew``
    times an antisymmetric part, which the kernel's symmetrising removes."""
    x = rng.standard_normal(batch + (n, n))
    a = x @ np.swapaxes(x, -1, -2) / n + np.eye(n)
    k = rng.standard_normal(batch + (n, n))
    return (a + skew * (k - np.swapaxes(k, -1, -2))).astype(np.float32)


def symmetrised(a):
    a = a.astype(np.float64)
    return (a + np.swapaxes(a, -1, -2)) / 2


def assert_cholesky_bounds(factor, a, against_numpy=True):
    """``factor`` (float64 of the kernel's float32) against Higham's backward bound and (``against_numpy``)
    Sun's forward one."""
    n = a.shape[-1]
    sym = symmetrised(a)
    assert np.array_equal(np.triu(factor, 1), np.zeros_like(factor)), "the upper triangle is not 0"
    magnitude = np.abs(factor) @ np.abs(np.swapaxes(factor, -1, -2))
    allowed = (gamma(n + 1 + DIVISION + SQUARE_ROOT + 1) + gamma(n + 1, DOUBLE)) * magnitude
    residual = np.abs(factor @ np.swapaxes(factor, -1, -2) - sym)
    assert (residual <= allowed).all(), f"n={n}: backward error {np.max(residual / allowed)} of the bound"
    if not against_numpy:
        return
    exact = np.linalg.cholesky(sym)
    matrices = (v.reshape(-1, n, n) for v in (factor, exact, sym, allowed))
    for got, want, s, bound in zip(*matrices):
        kappa = np.linalg.cond(s, 2)
        e = np.linalg.norm(bound, "fro") / np.linalg.norm(s, 2)
        assert kappa * e < 0.5, "Sun's bound needs kappa e < 1"
        forward = 2**-0.5 * kappa * e / (1 - kappa * e) * np.linalg.norm(want, 2)
        assert np.linalg.norm(got - want, "fro") <= forward, f"n={n}: factor off numpy's by more than Sun's bound"


@pytest.mark.parametrize("n", CHOLESKY_SIZES)
def test_cholesky_kernel_within_highams_bound_batched(n, rng):
    batch = (3,) if n < 100 else (2,)
    a = positive_definite(rng, batch, n, skew=0.5)
    factor = run(build.cholesky(View.of_buffer(0, a.shape), 9), {0: a}, a.shape)
    assert_cholesky_bounds(factor, a)


def test_cholesky_kernel_reads_strided_transposed_batches(rng):
    # Stored [n, 2, 3, n] (matrix column, batch, batch, matrix row), read as [3, 2, n, n]: every stride
    # differs from a dense layout, and the matrices are read transposed.
    n = 67
    a = positive_definite(rng, (3, 2), n, skew=0.25)
    stored = np.ascontiguousarray(a.transpose(3, 1, 0, 2))
    view = View.of_buffer(0, stored.shape).transpose((2, 1, 3, 0))
    factor = run(build.cholesky(view, 9), {0: stored}, a.shape)
    assert_cholesky_bounds(factor, a)


def test_cholesky_kernel_numbers_matrices_past_one_grid_dimension(rng):
    # 70000 workgroups: a grid of 65535 x 2, numbered gx * wy + wx as every kernel's.
    a = positive_definite(rng, (70000,), 2)
    factor = run(build.cholesky(View.of_buffer(0, a.shape), 9), {0: a}, a.shape)
    assert build.cholesky(View.of_buffer(0, a.shape), 9).workgroups == (65535, 2, 1)
    assert_cholesky_bounds(factor, a, against_numpy=False)  # the backward bound alone: 70000 matrices


def test_cholesky_kernel_gives_nan_where_a_matrix_is_not_positive_definite(rng):
    a = positive_definite(rng, (4,), 5)
    a[1, 3, 3] = -2.0  # indefinite
    a[2] = np.diag([1.0, 0.0, 1.0, 1.0, 1.0])  # singular: a zero pivot
    a[3, 4, 0] = np.nan  # the symmetrising takes it to (0, 4) too
    factor = run(build.cholesky(View.of_buffer(0, a.shape), 9), {0: a}, a.shape)
    forward = lookup("Cholesky").forward([a.astype(np.float64)], {})
    assert np.isnan(factor[1:3]).all() and np.isnan(forward[1:3]).all()
    # A NaN is carried where the substitutions take it (the last row), not flagged: as numpy's
    # forward natively (OpenBLAS's potrf tests a pivot with <= 0 only), which the kernels reading is held to.
    assert np.array_equal(np.isnan(factor[3]), np.isnan(forward[3])) and np.isnan(factor[3, 4]).all()
    assert_cholesky_bounds(factor[3, :4, :4], a[3, :4, :4])
    assert_cholesky_bounds(factor[:1], a[:1])


def solve_bounds(t, b, x, attrs):
    """Higham's residual and forward bounds for x (float64 of the kernel's float32) solving the float64
    problem ``t``, ``b`` with ``attrs``: the triangle read, transposed and sided as the forward reads it."""
    n = t.shape[-1]
    exact = lookup("TriangularSolve").forward([t, b], attrs)
    tri = np.tril(t) if attrs["lower"] else np.triu(t)
    if attrs["unit_diagonal"]:
        tri = tri - np.eye(n) * np.diagonal(tri, axis1=-2, axis2=-1)[..., None] + np.eye(n)
    if attrs["transpose_a"]:
        tri = np.swapaxes(tri, -1, -2)
    if not attrs["left_side"]:  # x tri = b is tri^T x^T = b^T
        tri, b, x, exact = (np.swapaxes(v, -1, -2) for v in (tri, b, x, exact))
    scale = np.abs(tri) @ np.abs(x)
    allowed = gamma(n + DIVISION) * scale + gamma(n + 1, DOUBLE) * (np.abs(b) + scale)
    residual = np.abs(b - tri @ x)
    assert (residual <= allowed).all(), f"{attrs}: residual {np.max(residual / allowed)} of the bound"
    forward = np.abs(np.linalg.inv(tri)) @ allowed
    assert (np.abs(x - exact) <= forward).all(), f"{attrs}: off numpy's by {np.max(np.abs(x - exact) / forward)}"


@pytest.mark.parametrize("n", SOLVE_SIZES)
@pytest.mark.parametrize(
    "attrs",
    EVERY_COMBINATION,
    ids=lambda attrs: "-".join(k for k, v in attrs.items() if v),
)
def test_triangular_solve_kernel_within_highams_bound(n, attrs, rng):
    # a + 3 I over a draw from (-1, 1) / sqrt(n): a triangle far from singular at every n.
    t = (rng.uniform(-1, 1, (2, n, n)) / np.sqrt(n) + 3 * np.eye(n)).astype(np.float32)
    b = rng.standard_normal((2, n, 3) if attrs["left_side"] else (2, 3, n)).astype(np.float32)
    x = run(
        build.triangular_solve(View.of_buffer(0, t.shape), View.of_buffer(1, b.shape), attrs, 9),
        {0: t, 1: b},
        b.shape,
    )
    solve_bounds(t.astype(np.float64), b.astype(np.float64), x, attrs)


@pytest.mark.parametrize("left_side", [True, False])
def test_triangular_solve_kernel_reads_strided_operands(left_side, rng):
    # a stored transposed in a [n, 2, n] buffer with an offset; b every other column of a wider buffer.
    n, m = 67, 5
    attrs = {
        "left_side": left_side,
        "lower": False,
        "transpose_a": True,
        "unit_diagonal": False,
    }
    t = (rng.uniform(-1, 1, (2, n, n)) / np.sqrt(n) + 3 * np.eye(n)).astype(np.float32)
    stored = np.concatenate([np.zeros(7, np.float32), t.transpose(2, 0, 1).reshape(-1)])
    t_view = View(0, 7, (n, 2, n), (2 * n, n, 1)).transpose((1, 2, 0))
    shape = (2, n, m) if left_side else (2, m, n)
    wide = rng.standard_normal(shape[:-1] + (2 * shape[-1],)).astype(np.float32)
    b_view = View.of_buffer(1, wide.shape).slice((0, 0, 1), (1, 1, 2), shape)
    x = run(build.triangular_solve(t_view, b_view, attrs, 9), {0: stored, 1: wide}, shape)
    solve_bounds(t.astype(np.float64), wide[..., 1::2].astype(np.float64), x, attrs)


@pytest.mark.parametrize("left_side", [True, False])
def test_triangular_solve_kernel_gives_the_forwards_infinities_at_a_zero_diagonal(left_side, rng):
    n = 6
    attrs = {
        "left_side": left_side,
        "lower": True,
        "transpose_a": False,
        "unit_diagonal": False,
    }
    t = np.tril(rng.uniform(0.5, 1.5, (2, n, n))).astype(np.float32)
    t[0, 2, 2] = 0.0  # a nonzero over 0, then infinities of both signs meet: NaN
    t[1, 0, 0] = -0.0  # over -0 the infinity's sign flips
    b = rng.standard_normal((2, n, 4) if left_side else (2, 4, n)).astype(np.float32)
    b[1, 0, 0] = 0.0  # 0 over -0 (left) or a zero on the way: NaN where the forward has one
    launch = build.triangular_solve(View.of_buffer(0, t.shape), View.of_buffer(1, b.shape), attrs, 9)
    x = run(launch, {0: t, 1: b}, b.shape)
    with np.errstate(all="ignore"):
        exact = lookup("TriangularSolve").forward([t.astype(np.float64), b.astype(np.float64)], attrs)
    assert np.isnan(exact).any() and np.isinf(exact).any()
    for special in (np.isnan, np.isposinf, np.isneginf):
        assert np.array_equal(special(x), special(exact)), special.__name__
    finite = np.isfinite(exact)
    # The rows before the zero pivot: a few substitutions of a well-conditioned triangle.
    assert np.allclose(x[finite], exact[finite], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("attrs", EVERY_COMBINATION, ids=lambda attrs: "-".join(k for k, v in attrs.items() if v))
def test_triangular_solve_reads_no_element_outside_its_triangle(attrs, rng):
    # NaN and infinities in the triangle not read (and on a unit diagonal) reach neither the kernel's result
    # nor the forward's, which selects the triangle rather than multiplying by a mask (0 * inf is NaN).
    n = 5
    t = (rng.uniform(-1, 1, (2, n, n)) + 3 * np.eye(n)).astype(np.float32)
    unread = np.triu(np.ones((n, n), bool), 1) if attrs["lower"] else np.tril(np.ones((n, n), bool), -1)
    if attrs["unit_diagonal"]:
        unread |= np.eye(n, dtype=bool)
    t[:, unread] = np.resize(np.array([np.nan, np.inf, -np.inf], np.float32), (2, int(unread.sum())))
    b = rng.standard_normal((2, n, 3) if attrs["left_side"] else (2, 3, n)).astype(np.float32)
    launch = build.triangular_solve(View.of_buffer(0, t.shape), View.of_buffer(1, b.shape), attrs, 9)
    x = run(launch, {0: t, 1: b}, b.shape)
    assert np.isfinite(x).all()
    clean = np.where(unread, 0.0, t.astype(np.float64))
    exact = lookup("TriangularSolve").forward([t.astype(np.float64), b.astype(np.float64)], attrs)
    assert np.array_equal(exact, lookup("TriangularSolve").forward([clean, b.astype(np.float64)], attrs))
    solve_bounds(clean, b.astype(np.float64), x, attrs)


def test_the_largest_sizes_keep_within_lavapipes_loop_budget():
    assert (
        build.cholesky_iterations(build.MAX_CHOLESKY) <= LOOP_LIMIT < build.cholesky_iterations(2 * build.MAX_CHOLESKY)
    )
    assert build.solve_iterations(build.MAX_SOLVE) <= LOOP_LIMIT < build.solve_iterations(2 * build.MAX_SOLVE)


# As a recording: the kernels reading, the run, and the decline past the largest size ----------------


def record_chain(n, rng):
    """Cholesky of a float32 positive-definite [2, n, n], then both triangular solves of cho_solve."""
    a = positive_definite(rng, (2,), n)
    b = rng.standard_normal((2, n, 3)).astype(np.float32)
    tape = Tape("float32")
    factor = topos.linalg.cholesky(tape.parameter(a))
    x = topos.linalg.cho_solve(factor, tape.parameter(b))
    network = tape.seal()
    return network, factor, x, a, b


def test_a_float32_recording_runs_in_the_linalg_kernels(rng):
    network, factor, x, a, b = record_chain(9, rng)
    plan = network.entry([factor, x]).lower()
    text = plan.kernels().describe()
    assert "linalg:cholesky" in text and text.count("linalg:triangular_solve") == 2, text
    assert not [line for line in text.splitlines() if line.startswith("numpy")], text
    run_ = plan.run(network.parameters(), {}, backend="webgpu")
    assert {run_.backends[i] for i in plan.schedule if not plan.nodes[i].is_source} == {"webgpu"}
    assert_cholesky_bounds(np.asarray(run_.of(factor), np.float64), a)
    sym = symmetrised(a)
    exact = np.linalg.solve(sym, b.astype(np.float64))
    # Two substitutions and the factor's error: kappa times the backward errors, far below 1e-3 here.
    assert np.allclose(run_.of(x), exact, rtol=0, atol=1e-3 * np.abs(exact).max())


@pytest.mark.parametrize(
    ("opcode", "largest", "kernel"),
    [
        ("Cholesky", build.MAX_CHOLESKY, "Cholesky"),
        ("TriangularSolve", build.MAX_SOLVE, "triangular-solve"),
    ],
)
def test_the_kernels_reading_declines_just_past_the_largest_size(opcode, largest, kernel):
    for n, declined in ((largest, False), (largest + 1, True)):
        tape = Tape("float32")
        a = tape.parameter(np.eye(n, dtype=np.float32))
        if opcode == "Cholesky":
            out = topos.linalg.cholesky(a)
        else:
            out = topos.linalg.triangular_solve(a, tape.parameter(np.ones((n, 1), np.float32)))
        reading = tape.seal().entry([out]).lower().kernels()
        steps = [line for line in reading.describe().splitlines() if line.startswith("numpy")]
        if not declined:
            assert steps == [] and "linalg:" in reading.describe()
            continue
        (step,) = steps
        assert step.split()[1] == opcode
        assert f"a {n} x {n} matrix is larger than the {kernel} kernel's {largest} x {largest}" in step
