"""The portable StableHLO of the factorisations (``plan.emit_stablehlo(portable=True)``), run by XLA on the CPU.

The default reading lowers Cholesky and TriangularSolve to ``stablehlo.cholesky`` and
``stablehlo.triangular_solve`` and Eigh, Qr and Svd to XLA CPU's LAPACK custom calls; the
portable one writes ``stablehlo.while`` loops of ops every consumer has (topos/ops/*_lowering.py).
Here XLA compiles the portable text (none of those ops in it) and runs it against the numpy
interpreter, whose forwards call LAPACK, in float32 and float64, at 1x1, 2x2, 5x5, batched, and
tall and wide for Qr and Svd; on repeated eigenvalues and singular values through what does not
depend on the basis (the values, the projector on each eigenspace, the reconstruction); and on
NaN, indefinite and singular inputs, where the portable form gives what the forward gives.

Two algorithms do not round alike, so the bounds come from perturbation theory on top of each
algorithm's backward error (tolerances.py's terms; Higham, *Accuracy and Stability*, 2nd ed.): the
factors of a matrix perturbed by ``e ||A||`` move by the condition number times that, and two
computations, each that close to the exact factors, differ by twice as much.
"""

import numpy as np
import pytest
from tolerances import Bound, assert_close, gamma

import topos
from topos import Tape
from topos.xla.runtime import compile_module, to_device, to_host

#: What the portable text must not hold: the ops only XLA (or only XLA on a CPU) runs.
XLA_ONLY = ("stablehlo.custom_call", "stablehlo.cholesky", "stablehlo.triangular_solve")
DTYPES = ("float32", "float64")


@pytest.fixture
def rng():
    return np.random.default_rng(314)


def record(function, arrays, dtype, backward):
    """The recording of ``function`` on parameters; with ``backward``, plus a loss weighing every
    output with fixed random leaves, so that the plan runs the derivative's primitives too."""

    def build(tape):
        values = [tape.parameter(array, name=f"a{i}") for i, array in enumerate(arrays)]
        out = function(*values)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if not backward:
            return outs
        weights = np.random.default_rng(7)
        loss = sum(topos.sum(value * tape.leaf(weights.normal(size=value.shape))) for value in outs)
        return outs + [loss]

    return Tape.record(build, dtype=dtype)


def both(function, arrays, dtype, backward=False):
    """(interpreter outputs, portable text's outputs on XLA): the function's results, then, with
    ``backward``, the loss and its gradients with respect to every operand."""
    network, outs = record(function, arrays, dtype, backward)
    entry = network.entry(outs)
    plan = entry.backward(outs[-1]).lower() if backward else entry.lower()
    text = plan.emit_stablehlo(portable=True)
    assert "stablehlo.while" in text and not [op for op in XLA_ONLY if op in text]
    expected = [np.asarray(value) for value in plan.run(network.parameters()).outputs()]
    compiled = compile_module(text, optimize=False)
    arguments = [to_device(value) for value in plan.argument_values(network.parameters())]
    return expected, [np.asarray(to_host(value)) for value in compiled.execute(arguments)]


def per_matrix(values, shape):
    """A bound computed per matrix of the batch, spread over each matrix's elements."""
    values = np.asarray(values, dtype=np.float64)
    return np.broadcast_to(values.reshape(values.shape + (1,) * (len(shape) - values.ndim)), shape)


def norm2(a):
    return np.linalg.norm(np.asarray(a, dtype=np.float64), ord=2, axis=(-2, -1))


def cond2(a):
    return np.linalg.cond(np.asarray(a, dtype=np.float64))


def spd(rng, shape):
    """Symmetric positive definite, well conditioned: x x^T + n I."""
    x = rng.normal(size=shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


# Cholesky and TriangularSolve ---------------------------------------------------------------------


def cholesky_bound(a, shape, dtype):
    """Cholesky is backward stable, ``L L^T = A + dA`` with ``||dA|| <= n gamma_{n+1} ||A||_2`` (Higham 10.3,
    ``|| |L| |L^T| || <= n ||A||``); then ``||dL|| <= kappa(A) / sqrt(2) ||dA|| / ||A|| ||L||`` to first order
    (Higham 10.8), with ``||L||_2 = sqrt(||A||_2)``. Two such factors differ by twice that."""
    n = a.shape[-1]
    value = 2 * cond2(a) / np.sqrt(2) * n * gamma(n + 1, dtype) * np.sqrt(norm2(a))
    return Bound(
        per_matrix(value, shape),
        f"2 kappa(A) n gamma_{n + 1} ||L|| / sqrt(2) (Higham 10.3, 10.8)",
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 5), (3, 4, 4)])
def test_cholesky_equals_the_interpreter(rng, dtype, shape):
    a = spd(rng, shape)
    (want,), (got,) = both(topos.linalg.cholesky, [a], dtype)
    assert_close(got, want, cholesky_bound(a, shape, dtype), f"cholesky {shape} {dtype}")


def triangle(rng, shape, lower):
    """A triangle with diagonal 2..3 in magnitude (well conditioned), the other triangle noise never read."""
    a = rng.normal(size=shape) * 0.5
    n = shape[-1]
    diagonal = rng.uniform(2.0, 3.0, shape[:-1]) * rng.choice([-1.0, 1.0], shape[:-1])
    a[..., np.arange(n), np.arange(n)] = diagonal
    return a


def solve_bound(a, x, options, dtype):
    """Substitution is backward stable, ``(T + dT) x = b`` with ``|dT| <= gamma_n |T|`` (Higham 8.5), so
    ``||dx|| <= kappa_inf(T) gamma_n ||x||`` to first order, per column; twice that between two orders."""
    n = a.shape[-1]
    t = np.tril(a) if options["lower"] else np.triu(a)
    if options["unit_diagonal"]:
        t[..., np.arange(n), np.arange(n)] = 1.0
    kappa = np.linalg.cond(t, np.inf)
    value = 2 * kappa * gamma(n, dtype) * np.abs(x).max(axis=(-2, -1))
    return Bound(per_matrix(value, x.shape), f"2 kappa_inf(T) gamma_{n} max|x| (Higham 8.5)")


OPTIONS = [
    {"left_side": left, "lower": lower, "transpose_a": transpose, "unit_diagonal": unit}
    for left in (True, False)
    for lower in (True, False)
    for transpose in (True, False)
    for unit in (True, False)
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "-".join(k for k, v in o.items() if v) or "plain")
def test_triangular_solve_equals_the_interpreter_for_every_option(rng, dtype, options):
    for shape in [(1, 1), (2, 2), (5, 5), (2, 4, 4)]:
        a = triangle(rng, shape, options["lower"])
        n = shape[-1]
        b = rng.normal(size=shape[:-2] + ((n, 3) if options["left_side"] else (3, n)))
        (want,), (got,) = both(lambda a, b: topos.linalg.triangular_solve(a, b, **options), [a, b], dtype)
        assert_close(
            got,
            want,
            solve_bound(a, want, options, dtype),
            f"solve {shape} {options} {dtype}",
        )


# Eigh -------------------------------------------------------------------------------------------------


def symmetric(rng, shape, values=None):
    """Q diag(values) Q^T: by default well-separated eigenvalues 1.5, 3, 4.5, ... with a little noise."""
    n = shape[-1]
    q, _ = np.linalg.qr(rng.normal(size=shape))
    if values is None:
        values = np.arange(1.0, n + 1.0) * 1.5 + rng.uniform(-0.2, 0.2, shape[:-1])
    values = np.broadcast_to(values, shape[:-1])
    return (q * values[..., None, :]) @ np.swapaxes(q, -1, -2)


def backward_error(a, dtype, terms):
    """Each solver returns the exact answer for ``A + dA`` with ``||dA||_2 <= terms u ||A||_2``:
    ``terms = n^2`` covers syevd's p(n) (Golub and Van Loan 8.3) and the Jacobi loop's, whose stopping
    test leaves ``n u ||A||_F <= n^1.5 u ||A||_2`` off the diagonal, plus its rotations' rounding."""
    return gamma(terms, dtype) * norm2(a)


def eigen_bounds(a, w, dtype):
    """Values: Weyl's theorem, ``|dw| <= ||dA||_2``. Vectors: Davis and Kahan, ``||dv|| <= ||dA||_2 / gap``.
    Both solvers are that close to exact, so they are within twice that of each other."""
    n = a.shape[-1]
    error = 2 * backward_error(a, dtype, n * n)
    gap = np.min(np.diff(w, axis=-1), axis=-1) if n > 1 else np.ones(w.shape[:-1])
    why = f"2 gamma_{n * n} ||A||_2 (Weyl)"
    return Bound(per_matrix(error, w.shape), why), Bound(
        per_matrix(error / gap, a.shape), why + " / the gap (Davis-Kahan)"
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 5), (7, 7), (3, 4, 4)])
def test_eigh_equals_the_interpreter_with_the_same_order_and_signs(rng, dtype, shape):
    a = rng.normal(size=shape)
    (w, v), (got_w, got_v) = both(topos.linalg.eigh, [a], dtype)
    # The op reads the lower triangle, as syevd: the bounds are the symmetric matrix's.
    lower = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
    values_bound, vectors_bound = eigen_bounds(lower, np.linalg.eigvalsh(lower), dtype)
    assert_close(got_w, w, values_bound, f"eigh values {shape} {dtype}")
    assert_close(got_v, v, vectors_bound, f"eigh vectors {shape} {dtype}")


def projector(v, columns):
    picked = v[..., columns]
    return picked @ np.swapaxes(picked, -1, -2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh_at_repeated_eigenvalues_agrees_on_what_the_basis_does_not_change(rng, dtype):
    values = np.array([-1.0, 2.0, 2.0, 2.0, 5.0, 5.0])
    a = symmetric(rng, (2, 6, 6), values)
    (w, v), (got_w, got_v) = both(topos.linalg.eigh, [a], dtype)
    error = 2 * backward_error(a, dtype, 36)
    assert_close(
        got_w,
        w,
        Bound(per_matrix(error, w.shape), "2 gamma_36 ||A||_2 (Weyl)"),
        f"repeated {dtype}",
    )
    # Each eigenspace's projector is unique; its error is dA over the gap to the other eigenvalues (3 here).
    for columns in ([0], [1, 2, 3], [4, 5]):
        bound = Bound(
            per_matrix(error / 3.0, a.shape),
            "2 gamma_36 ||A||_2 / 3, the gap around each eigenspace",
        )
        assert_close(
            projector(got_v, columns),
            projector(v, columns),
            bound,
            f"eigenspace {columns} {dtype}",
        )
    rebuilt = (got_v * got_w[..., None, :]) @ np.swapaxes(got_v, -1, -2)
    bound = Bound(
        per_matrix(error + 6 * gamma(6, dtype) * norm2(a), a.shape),
        "dA and the product's own rounding",
    )
    assert_close(rebuilt, a, bound, f"V diag(w) V^T {dtype}")


# Qr ---------------------------------------------------------------------------------------------------


def qr_bounds(a, dtype):
    """Householder QR is backward stable, ``Q R = A + dA`` with ``||da_j|| <= gamma_{mn} ||a_j||`` (Higham
    19.4); ``||dR|| <= sqrt(2) kappa(A) ||dA||`` and ``||dQ|| <= sqrt(2) kappa(A) ||dA|| / ||A||`` to first
    order (Higham 19.9, after Sun). Two such factorisations differ by twice that."""
    m, n = a.shape[-2:]
    relative = 2 * np.sqrt(2) * cond2(a) * gamma(m * n, dtype) * np.sqrt(n)
    why = f"2 sqrt(2) kappa(A) sqrt(n) gamma_{m * n} (Higham 19.4, 19.9)"
    q_shape, r_shape = a.shape[:-2] + (m, min(m, n)), a.shape[:-2] + (min(m, n), n)
    return Bound(per_matrix(relative, q_shape), why), Bound(per_matrix(relative * norm2(a), r_shape), why + " ||A||")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 5), (2, 4, 4), (7, 3), (2, 6, 4), (3, 7)])
def test_qr_equals_the_interpreter_with_lapacks_signs(rng, dtype, shape):
    a = rng.normal(size=shape)
    (q, r), (got_q, got_r) = both(topos.linalg.qr, [a], dtype)
    q_bound, r_bound = qr_bounds(a if shape[-2] >= shape[-1] else a[..., : shape[-2]], dtype)
    if shape[-2] < shape[-1]:  # qr of a wide matrix: the square part's, then Q^T times the rest
        r_bound = Bound(
            per_matrix(np.max(r_bound.value) * np.sqrt(shape[-1]) * 2, r.shape),
            r_bound.why + ", through Q^T",
        )
    assert_close(got_q, q, q_bound, f"qr q {shape} {dtype}")
    assert_close(got_r, r, r_bound, f"qr r {shape} {dtype}")


# Svd --------------------------------------------------------------------------------------------------


def svd_bounds(a, dtype):
    """Values: Weyl for singular values, ``|ds| <= ||dA||_2`` with both solvers backward stable to
    ``gamma_{mn} ||A||_2`` (gesdd; Householder QR then Jacobi rotations). Vectors: Wedin,
    ``||du||, ||dv|| <= ||dA||_2 / gap``, the gap between singular values (and to 0 when m != n)."""
    m, n = a.shape[-2:]
    s = np.linalg.svd(a, compute_uv=False)
    error = 2 * gamma(m * n, dtype) * norm2(a)
    gaps = np.abs(np.diff(s, axis=-1)) if s.shape[-1] > 1 else np.full(s.shape, np.inf)
    gap = np.min(gaps, axis=-1)
    if m != n:
        gap = np.minimum(gap, s[..., -1])
    gap = np.minimum(gap, norm2(a))
    why = f"2 gamma_{m * n} ||A||_2 (Weyl)"
    k = min(m, n)
    values = Bound(per_matrix(error, s.shape), why)
    vectors = Bound(
        per_matrix(error / gap, a.shape[:-2] + (max(m, n), k)),
        why + " / the gap (Wedin)",
    )
    return values, vectors


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 5), (3, 4, 4), (7, 3), (3, 7), (2, 6, 4), (12, 40)])
def test_svd_equals_the_interpreter_sorted_descending_with_the_same_signs(rng, dtype, shape):
    a = rng.normal(size=shape)
    (u, s, vh), (got_u, got_s, got_vh) = both(lambda a: topos.linalg.svd(a, full_matrices=False), [a], dtype)
    values, vectors = svd_bounds(a, dtype)
    assert_close(got_s, s, values, f"svd s {shape} {dtype}")
    assert_close(
        got_u,
        u,
        Bound(vectors.value[..., : shape[-2], :], vectors.why),
        f"svd u {shape} {dtype}",
    )
    vh_bound = np.swapaxes(vectors.value[..., : shape[-1], :], -1, -2)
    assert_close(got_vh, vh, Bound(vh_bound, vectors.why), f"svd vh {shape} {dtype}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_svd_at_repeated_and_zero_singular_values_agrees_on_what_the_basis_does_not_change(rng, dtype):
    u, _ = np.linalg.qr(rng.normal(size=(7, 5)))
    v, _ = np.linalg.qr(rng.normal(size=(5, 5)))
    sigma = np.array([3.0, 3.0, 1.0, 0.0, 0.0])
    a = (u * sigma) @ v.T
    a[:, 4] = 0.0  # an exactly zero column too: the Jacobi loop leaves it zero, and u is completed
    s_exact = np.linalg.svd(a, compute_uv=False)
    (_, s, _), (got_u, got_s, got_vh) = both(lambda a: topos.linalg.svd(a, full_matrices=False), [a], dtype)
    error = 2 * gamma(35, dtype) * norm2(a)
    assert_close(got_s, s, Bound(error, "2 gamma_35 ||A||_2 (Weyl)"), f"repeated s {dtype}")
    # u stays orthonormal, completed where s is 0, and u diag(s) vh rebuilds a.
    eye = np.eye(5)
    assert_close(
        np.swapaxes(got_u, -1, -2) @ got_u,
        eye,
        Bound(4 * gamma(35, dtype), "orthonormal to gamma_35"),
        f"u^T u {dtype}",
    )
    rebuilt = (got_u * got_s) @ got_vh
    assert_close(
        rebuilt,
        a,
        Bound(error + 5 * gamma(5, dtype) * s_exact[0], "dA and the product's rounding"),
        f"usv {dtype}",
    )
    # The leading pair's left and right subspaces are unique; their gap to the next value is 2.
    bound = Bound(error / 2.0, "2 gamma_35 ||A||_2 / 2, the gap below the repeated pair")
    want_u, _, want_vh = np.linalg.svd(a)
    assert_close(projector(got_u, [0, 1]), projector(want_u, [0, 1]), bound, f"left pair {dtype}")
    right = np.swapaxes(got_vh, -1, -2)
    assert_close(
        projector(right, [0, 1]),
        projector(want_vh.T, [0, 1]),
        bound,
        f"right pair {dtype}",
    )


# What the forwards give where the matrix is not a good one ----------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_non_finite_indefinite_and_singular_inputs_give_what_the_forward_gives(dtype):
    """NaN where the forward has NaN, infinities where it has them, and its values elsewhere: an
    indefinite matrix's factor is all NaN (the batch's others kept); a NaN pivot spreads as OpenBLAS's
    potrf (numpy's) lets it; Eigh and Svd of a matrix holding NaN or an infinity are all NaN; Qr
    carries NaN through the arithmetic; a zero on a triangle's diagonal gives infinities and NaN."""
    exact = Bound(4 * gamma(4, dtype) * 4.0, "a few roundings of values of order 4")
    cases = [
        (
            topos.linalg.cholesky,
            [np.array([[[4.0, 2.0], [2.0, 3.0]], [[1.0, 2.0], [2.0, 1.0]]])],
        ),
        (topos.linalg.cholesky, [np.array([[4.0, 2.0], [2.0, np.nan]])]),
        (topos.linalg.cholesky, [np.array([[np.nan, 2.0], [2.0, 1.0]])]),
        (topos.linalg.eigh, [np.array([[1.0, np.nan], [np.nan, 2.0]])]),
        (
            lambda a: topos.linalg.svd(a, full_matrices=False),
            [np.array([[1.0, 2.0], [np.inf, 3.0], [0.0, 1.0]])],
        ),
        (topos.linalg.qr, [np.array([[1.0, 2.0], [np.nan, 3.0], [0.0, 1.0]])]),
        (topos.linalg.qr, [np.zeros((3, 2))]),
        (topos.linalg.svd, [np.zeros((2, 2))]),
        (topos.linalg.eigh, [np.zeros((3, 3))]),
    ]
    for function, arrays in cases:
        wants, gots = both(function, arrays, dtype)
        for want, got in zip(wants, gots):
            assert_close(got, want, exact, f"{function} on {arrays[0].tolist()} {dtype}")
    a = np.array([[2.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 3.0]])
    (want,), (got,) = both(
        lambda a, b: topos.linalg.triangular_solve(a, b, lower=True),
        [a, np.ones((3, 2))],
        dtype,
    )
    assert not np.isfinite(want).all()
    assert_close(got, want, exact, f"a zero on the diagonal {dtype}")


# The derivatives: made of the same primitives, so the backward plans lower portably too --------------


def test_the_backward_plans_run_portably_equal_to_the_interpreter(rng):
    """Gradients of a weighted sum of each factorisation's results, in float64. Each gradient is a
    handful of products and solves of the factors: the factors' own error (kappa gamma_{n^2}, as above)
    carried through one more solve or 1 / gap, so kappa^2 gamma_{n^2} of the gradient's magnitude, 8 for
    the handful of steps (kappa of Eigh is ||A|| over the smallest gap, Davis and Kahan's)."""
    a = symmetric(rng, (4, 4))
    tall = rng.normal(size=(6, 4))
    cases = [
        (topos.linalg.cholesky, [a], cond2(a)),
        (
            lambda a, b: topos.linalg.triangular_solve(a, b, lower=False),
            [triangle(rng, (4, 4), False), tall[:4]],
            3.0,
        ),
        (topos.linalg.eigh, [a], norm2(a) / np.min(np.diff(np.linalg.eigvalsh(a)))),  # ||A|| / the gap
        (topos.linalg.qr, [tall], cond2(tall)),
        (lambda a: topos.linalg.svd(a, full_matrices=False), [tall], cond2(tall)),
    ]
    for function, arrays, kappa in cases:
        wants, gots = both(function, arrays, "float64", backward=True)
        for want, got in zip(wants, gots):
            scale = max(float(np.max(np.abs(want))), 1e-300)
            bound = Bound(
                8 * kappa**2 * gamma(16, "float64") * scale,
                "8 kappa^2 gamma_16 of the largest gradient",
            )
            assert_close(got, want, bound, f"backward of {function}")
