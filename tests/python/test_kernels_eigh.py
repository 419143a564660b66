"""The Jacobi eigensolver kernel (kernels/eigh.wgsl) on lavapipe, against numpy.linalg.eigh in float64.

Each recording is float32 and every Eigh node must run in the kernel (never on the host); numpy's
float64 eigendecomposition of the same float32 matrix is the oracle, so the float32 input's own
rounding is not part of the error. The bounds follow from the method, not from a run:

- Jacobi's method is backward stable: the computed eigenvalues and vectors are exact for a matrix
  within ``c n u ||A||_2`` of A, with V orthogonal to ``c n u`` (Demmel and Veselic, "Jacobi's
  method is more accurate than QR", SIAM J. Matrix Anal. Appl. 13, 1992, section 3; Golub and
  Van Loan, 8.5). Each rotation rounds every element it touches by about 2 u (a two-term dot
  product, its c and s rounded), on both sides of A; an element is touched n - 1 times a sweep,
  and independent roundings add in quadrature over the sweeps (ten at most at these sizes,
  quadratic convergence: sqrt(10) ~ 3). So c = 2 sides x 2 u x 3, doubled for the slack of the
  stopping test (off(A) <= u ||A||_F <= sqrt(n) u ||A||_2): c = 16 (``BACKWARD``).
- By Weyl's theorem each eigenvalue is within that of the exact one; the residual
  ``A v - w v`` is within it (each element); a vector of an eigenvalue separated from the others
  by ``gap`` is within ``bound / gap`` of the exact one (Davis and Kahan's sin theta theorem).
- Where eigenvalues repeat the vectors are any basis of their space: the tests then check what does
  not depend on the basis (the residual, V^T V = I, the eigenvalues, their order).
"""

import numpy as np
import pytest

import topos
from topos.compiler.wgsl import eigh as eigh_build
from topos.compiler.wgsl.dispatch import LOOP_LIMIT
from topos.ops.linalg_spectral import fix_signs

UNIT = 2.0**-24
BACKWARD = 16  # c in c n u ||A||_2 (module docstring)
LARGEST = eigh_build.MAX_SIZE


def symmetric(rng, shape):
    a = rng.standard_normal(shape)
    return ((a + np.swapaxes(a, -1, -2)) / 2).astype(np.float32)


def with_spectrum(rng, values, batch=2):
    """Matrices Q diag(values) Q^T in float32 for random orthogonal Q (the same spectrum in each)."""
    n = len(values)
    q, _ = np.linalg.qr(rng.standard_normal((batch, n, n)))
    a = q @ (np.asarray(values, dtype=np.float64)[:, None] * np.swapaxes(q, -1, -2))
    return ((a + np.swapaxes(a, -1, -2)) / 2).astype(np.float32)


def on_webgpu(a, operand=lambda tape, x: x):
    """The packed Eigh value of float32 ``a`` run on WebGPU, and the plan; the node must run in the kernel."""
    tape = topos.Tape("float32")
    node = tape.apply("Eigh", [operand(tape, tape.parameter(a))])
    network = tape.seal()
    plan = network.entry([node]).lower()
    run = plan.run(network.parameters(), {}, backend="webgpu")
    eigh_nodes = [index for index in plan.schedule if plan.nodes[index].opcode == "Eigh"]
    assert eigh_nodes and all(run.backends[index] == "webgpu" for index in eigh_nodes), plan.kernels().describe()
    return np.asarray(run.of(node).numpy(), dtype=np.float64), plan


def unpacked(packed):
    return packed[..., 0, :], packed[..., 1:, :]


def bound(a):
    """c n u ||A||_2, a matrix at a time ([..., 1, 1])."""
    n = a.shape[-1]
    norm = np.linalg.norm(a.astype(np.float64), ord=2, axis=(-2, -1))
    return BACKWARD * n * UNIT * norm[..., None, None]


def assert_decomposes(a, w, v):
    """What holds whatever basis the vectors of a repeated eigenvalue take: ascending eigenvalues
    within the bound of numpy's, A V = V diag(w) and V^T V = I within it."""
    exact = np.linalg.eigvalsh(a.astype(np.float64))
    limit = bound(a)
    n = a.shape[-1]
    assert np.all(np.diff(w, axis=-1) >= 0), "the eigenvalues are not ascending"
    assert np.all(np.abs(w - exact) <= limit[..., 0]), np.abs(w - exact).max()
    residual = a.astype(np.float64) @ v - v * w[..., None, :]
    assert np.all(np.abs(residual) <= limit), np.abs(residual).max()
    gram = np.swapaxes(v, -1, -2) @ v - np.eye(n)
    assert np.all(np.abs(gram) <= BACKWARD * n * UNIT), np.abs(gram).max()


@pytest.mark.parametrize("n", [1, 2, 17, LARGEST])
def test_random_symmetric_matrices_decompose(n):
    a = symmetric(np.random.default_rng(n), (3, n, n))
    w, v = unpacked(on_webgpu(a)[0])
    assert_decomposes(a, w, v)


@pytest.mark.parametrize("n", [1, 2, 9, LARGEST])
def test_separated_eigenvalues_give_numpys_vectors_with_the_op_sign(n):
    # Eigenvalues 1 apart: each vector within bound / 1 of numpy's, whose sign the op's rule fixes.
    a = with_spectrum(np.random.default_rng(100 + n), np.arange(n) - n / 2)
    w, v = unpacked(on_webgpu(a)[0])
    exact_w, exact_v = np.linalg.eigh(a.astype(np.float64))
    limit = bound(a)
    assert np.all(np.abs(w - exact_w) <= limit[..., 0])
    assert np.all(np.abs(v - fix_signs(exact_v)) <= limit)


def test_batch_axes_and_a_strided_operand():
    # [2, 3, n, n] batch axes, read through a transposed view (a swap of the last two axes).
    a = symmetric(np.random.default_rng(7), (2, 3, 6, 6))
    a = a + np.tril(np.ones((6, 6), np.float32))  # not symmetric: the kernel reads the lower triangle
    packed, _ = on_webgpu(a, lambda tape, x: topos.swapaxes(x, -1, -2))
    transposed = np.swapaxes(a, -1, -2)
    w, v = unpacked(packed)
    lower = np.tril(transposed) + np.swapaxes(np.tril(transposed, -1), -1, -2)
    assert_decomposes(lower, w, v)
    forward = topos.ops.lookup("Eigh").forward([transposed.astype(np.float64)], {})
    assert np.all(np.abs(w - forward[..., 0, :]) <= bound(lower)[..., 0])


@pytest.mark.parametrize(
    "values",
    [
        [2.0, 2.0, 2.0, 2.0, 2.0],  # a multiple of the identity: every basis is one
        [-1.0, 3.0, 3.0, 3.0, 7.0, 7.0],
        [0.0] * 10
        + [
            1.0,
            4.0,
            9.0,
            16.0,
        ],  # a covariance of pixels that never vary: zeros repeated
    ],
)
def test_repeated_eigenvalues(values):
    a = with_spectrum(np.random.default_rng(len(values)), values)
    w, v = unpacked(on_webgpu(a)[0])
    assert_decomposes(a, w, v)


def test_the_zero_matrix_and_a_diagonal_one():
    a = np.stack([np.zeros((4, 4)), np.diag([3.0, -1.0, 2.0, 0.5])]).astype(np.float32)
    w, v = unpacked(on_webgpu(a)[0])
    # No rotation happens: the diagonal, sorted, and the identity's columns in that order, exactly.
    assert np.array_equal(w, [[0, 0, 0, 0], [-1.0, 0.5, 2.0, 3.0]])
    assert np.array_equal(v[0], np.eye(4)) and np.array_equal(v[1], np.eye(4)[:, [1, 3, 2, 0]])


def test_a_power_of_two_scales_the_eigenvalues_exactly():
    # The kernel scales each matrix by a power of two first: 2^k A gives 2^k w and the same V, bit for
    # bit, from 2^-100 to 2^100 (where A's own squares would underflow or overflow float32).
    a = symmetric(np.random.default_rng(3), (1, 8, 8))
    scaled = np.concatenate([a, a * np.float32(2.0**100), a * np.float32(2.0**-100)])
    packed, _ = on_webgpu(scaled)
    w, v = unpacked(packed)
    assert np.array_equal(w[1], w[0] * 2.0**100) and np.array_equal(w[2], w[0] * 2.0**-100)
    assert np.array_equal(v[1], v[0]) and np.array_equal(v[2], v[0])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_matrix_holding_nan_or_an_infinity_gives_nan_as_the_forward(bad):
    a = symmetric(np.random.default_rng(5), (3, 5, 5))
    a[1, 0, 4] = bad  # above the diagonal, which the decomposition does not read: still NaN, as numpy's check
    packed, _ = on_webgpu(a)
    forward = topos.ops.lookup("Eigh").forward([a], {})
    assert np.isnan(packed[1]).all() and np.isnan(forward[1]).all()
    assert np.isfinite(packed[[0, 2]]).all()


def test_the_kernels_reading_names_the_kernel_and_the_decline_above_the_largest_size():
    tape = topos.Tape("float32")
    small, _ = topos.linalg.eigh(tape.parameter(np.eye(LARGEST, dtype=np.float32)))
    large, _ = topos.linalg.eigh(tape.parameter(np.eye(LARGEST + 1, dtype=np.float32)))
    reading = tape.seal().entry([small, large]).lower().kernels()
    text = reading.describe()
    assert "eigh:eigh" in text
    assert f"a {LARGEST + 1} x {LARGEST + 1} matrix: the Jacobi kernel takes up to {LARGEST} x {LARGEST}" in text
    assert [reading.plan.nodes[i].shape for i, _ in reading.declined.items()] == [(LARGEST + 2, LARGEST + 1)]


def test_the_largest_size_is_where_the_sweeps_meet_the_loop_limit():
    # The busiest loop of MAX_SWEEPS sweeps fits lavapipe's limit at the largest size, not at the next even one.
    assert eigh_build.block_iterations(LARGEST) <= LOOP_LIMIT < eigh_build.block_iterations(LARGEST + 2)
    assert eigh_build.block_iterations(LARGEST - 1) == eigh_build.block_iterations(LARGEST)  # odd n pads to even
