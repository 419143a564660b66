"""topos.linalg's factorisations (Cholesky, triangular solves) against numpy, scipy, torch and XLA.

Values against numpy.linalg and scipy.linalg; first and second derivatives against torch.linalg
in float64 at rtol 1e-8 on well-conditioned inputs; XLA runs the StableHLO equal to the
interpreter; the documented conventions on a matrix that is not positive definite (NaNs) and a
zero on a triangle's diagonal (infinities, no error); the kernels reading names its decline.
"""

import itertools
import re
import runpy
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
import torch

import topos
from topos.ops import lookup
from topos.ops.linalg_factor import BLOCK

RTOL = 1e-8


def spd(rng, shape, n):
    """Symmetric positive-definite matrices, well conditioned: a a^T + n I."""
    a = rng.standard_normal(shape + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def triangle(rng, shape, n, lower):
    """A triangle with a diagonal of 2..3 in magnitude (a well-conditioned solve), the other triangle noise."""
    a = rng.standard_normal(shape + (n, n))
    a[..., range(n), range(n)] = np.sign(a[..., range(n), range(n)] + 0.1) * rng.uniform(2.0, 3.0, shape + (n,))
    return a


def run(build, *arrays, dtype="float64"):
    """``build``'s values, recorded over parameters holding ``arrays``."""
    tape = topos.Tape(dtype)
    params = [tape.parameter(x) for x in arrays]
    outputs = build(*params)
    network = tape.seal()
    result = network.forward(network.parameters())
    return [result.of(out).numpy() for out in (outputs if isinstance(outputs, (list, tuple)) else [outputs])]


def test_cholesky_is_numpys_batched_in_both_dtypes():
    rng = np.random.default_rng(0)
    a = spd(rng, (2, 3), 5)
    (factor64,) = run(topos.linalg.cholesky, a)
    np.testing.assert_allclose(factor64, np.linalg.cholesky(a), rtol=1e-12, atol=1e-12)
    (factor32,) = run(topos.linalg.cholesky, a, dtype="float32")
    assert factor32.dtype == np.float32
    np.testing.assert_allclose(factor32, np.linalg.cholesky(a), rtol=1e-4, atol=1e-4)


def test_cholesky_reads_both_triangles_as_jax_does():
    # (a + a^T) / 2 is factored: a matrix whose upper triangle differs gives the symmetrised factor.
    rng = np.random.default_rng(1)
    a = spd(rng, (), 4)
    skewed = a + np.triu(rng.standard_normal((4, 4)), 1)
    (factor,) = run(topos.linalg.cholesky, skewed)
    np.testing.assert_allclose(factor, np.linalg.cholesky((skewed + skewed.T) / 2), rtol=1e-12)


def test_cholesky_of_an_indefinite_matrix_is_nan_and_the_others_of_the_batch_are_kept():
    rng = np.random.default_rng(2)
    a = spd(rng, (2,), 3)
    a[1] = np.diag([1.0, -1.0, 1.0])
    (factor,) = run(topos.linalg.cholesky, a)
    np.testing.assert_allclose(factor[0], np.linalg.cholesky(a[0]), rtol=1e-12)
    assert np.isnan(factor[1]).all()


@pytest.mark.parametrize("left_side,lower,transpose_a,unit_diagonal", list(itertools.product([True, False], repeat=4)))
def test_triangular_solve_is_scipys_for_every_option(left_side, lower, transpose_a, unit_diagonal):
    rng = np.random.default_rng(3)
    a = triangle(rng, (2,), 4, lower)
    b = rng.standard_normal((2, 4, 3) if left_side else (2, 3, 4))
    options = dict(lower=lower, left_side=left_side, transpose_a=transpose_a, unit_diagonal=unit_diagonal)
    (x,) = run(lambda a, b: topos.linalg.triangular_solve(a, b, **options), a, b)
    for i in range(2):
        if left_side:
            expected = scipy.linalg.solve_triangular(
                a[i], b[i], trans=int(transpose_a), lower=lower, unit_diagonal=unit_diagonal
            )
        else:
            # x op(a) = b is op(a)^T x^T = b^T.
            expected = scipy.linalg.solve_triangular(
                a[i], b[i].T, trans=1 - int(transpose_a), lower=lower, unit_diagonal=unit_diagonal
            ).T
        np.testing.assert_allclose(x[i], expected, rtol=1e-12, atol=1e-12)


def test_a_vector_right_hand_side_and_cho_solve():
    rng = np.random.default_rng(4)
    a, b = spd(rng, (), 4), rng.standard_normal(4)
    (x,) = run(lambda a, b: topos.linalg.cho_solve(topos.linalg.cholesky(a), b), a, b)
    assert x.shape == (4,)
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-10)


def test_a_zero_on_the_diagonal_gives_infinities_not_an_error():
    a = np.array([[1.0, 0.0], [2.0, 0.0]])
    (x,) = run(lambda a, b: topos.linalg.triangular_solve(a, b), a, np.array([[1.0], [1.0]]))
    assert x[0, 0] == 1.0 and not np.isfinite(x[1, 0])


# Derivatives: first and second order against torch.linalg in float64 ---------------------------


def torch_cholesky(a):
    return torch.linalg.cholesky((a + a.mT) / 2)


def torch_solve(options):
    def solve(a, b):
        tri = a.tril() if options["lower"] else a.triu()
        upper = not options["lower"]
        if options["transpose_a"]:
            tri, upper = tri.mT, not upper
        return torch.linalg.solve_triangular(
            tri, b, upper=upper, left=options["left_side"], unitriangular=options["unit_diagonal"]
        )

    return solve


def gradients_both_orders(topos_fn, arrays, weights):
    """The gradient of sum(w * f) and of sum(gradient^2), the second through topos.grad."""
    tape = topos.Tape()
    params = [tape.parameter(x) for x in arrays]
    out = topos_fn(*params)
    loss = topos.sum(out * tape.leaf(weights))
    first = topos.grad(loss, params)
    second = topos.grad(topos.sum(sum(topos.sum(g * g) for g in first)), params)
    network = tape.seal()
    result = network.forward(network.parameters())
    return [result.of(g).numpy() for g in first], [result.of(g).numpy() for g in second]


def torch_both_orders(torch_fn, arrays, weights):
    tensors = [torch.tensor(x, requires_grad=True) for x in arrays]
    loss = (torch_fn(*tensors) * torch.tensor(weights)).sum()
    first = torch.autograd.grad(loss, tensors, create_graph=True)
    second = torch.autograd.grad(sum((g * g).sum() for g in first), tensors)
    return [g.detach().numpy() for g in first], [g.numpy() for g in second]


def assert_orders_agree(topos_fn, torch_fn, arrays, out_shape):
    weights = np.random.default_rng(9).standard_normal(out_shape)
    got_first, got_second = gradients_both_orders(topos_fn, arrays, weights)
    want_first, want_second = torch_both_orders(torch_fn, arrays, weights)
    for got, want in zip(got_first + got_second, want_first + want_second):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * np.abs(want).max())


def test_cholesky_derivatives_to_second_order_are_torchs():
    a = spd(np.random.default_rng(5), (2,), 4)
    assert_orders_agree(topos.linalg.cholesky, torch_cholesky, [a], a.shape)


@pytest.mark.parametrize("left_side,lower,transpose_a,unit_diagonal", list(itertools.product([True, False], repeat=4)))
def test_triangular_solve_derivatives_to_second_order_are_torchs(left_side, lower, transpose_a, unit_diagonal):
    rng = np.random.default_rng(6)
    a = triangle(rng, (2,), 3, lower)
    b = rng.standard_normal((2, 3, 2) if left_side else (2, 2, 3))
    options = dict(lower=lower, left_side=left_side, transpose_a=transpose_a, unit_diagonal=unit_diagonal)
    assert_orders_agree(
        lambda a, b: topos.linalg.triangular_solve(a, b, **options), torch_solve(options), [a, b], b.shape
    )


# Readings: XLA runs the StableHLO equal to the interpreter; the plan's cost; the kernels' decline ---


def recorded_chain(dtype):
    rng = np.random.default_rng(7)
    tape = topos.Tape(dtype)
    a = tape.parameter(spd(rng, (2,), 4))
    b = tape.parameter(rng.standard_normal((2, 4, 3)))
    x = topos.linalg.cho_solve(topos.linalg.cholesky(a), b)
    right = topos.linalg.triangular_solve(
        a, topos.transpose(b, (0, 2, 1)), lower=False, left_side=False, transpose_a=True, unit_diagonal=True
    )
    loss = topos.sum(x * x) + topos.sum(right)
    return tape.seal(), x, loss


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_xla_runs_the_stablehlo_equal_to_the_interpreter(dtype):
    network, x, loss = recorded_chain(dtype)
    plan = network.entry([x, loss]).backward(loss).lower()
    text = plan.emit_stablehlo()
    assert '"stablehlo.cholesky"' in text and '"stablehlo.triangular_solve"' in text
    ours = plan.run(network.parameters()).outputs()
    theirs = plan.run(network.parameters(), backend="xla").outputs()
    rtol = 1e-10 if dtype == "float64" else 2e-4
    for got, want in zip(theirs, ours):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=rtol * np.abs(want).max())


def test_the_plan_counts_a_third_of_n_cubed_for_cholesky():
    network, _, loss = recorded_chain("float64")
    plan = network.entry([loss]).lower()
    per_node = plan.costs().per_node
    (flops,) = [per_node[i][0] for i in per_node if plan.nodes[i].opcode == "Cholesky"]
    assert flops == 2 * (4**3 // 3 + 2 * 4 * 4)
    solves = [per_node[i][0] for i in per_node if plan.nodes[i].opcode == "TriangularSolve"]
    assert solves == [2 * 4 * 3 * 4] * 3


def test_the_kernels_reading_runs_them_in_the_linalg_kernels_in_float32_only():
    # tests/python/test_kernels_linalg.py holds the kernels' values; here, what the reading chooses.
    network, _, loss = recorded_chain("float32")
    text = network.entry([loss]).lower().kernels().describe()
    assert not [line for line in text.splitlines() if line.startswith("numpy")], text
    assert {"linalg:cholesky", "linalg:triangular_solve"} <= set(text.split())
    network, _, loss = recorded_chain("float64")
    text = network.entry([loss]).lower().kernels().describe()
    steps = [line for line in text.splitlines() if line.startswith("numpy")]
    assert {"Cholesky", "TriangularSolve"} <= {line.split()[1] for line in steps}
    assert all("float64: WGSL has no f64" in line for line in steps)


# LU with partial pivoting, and solve, inv, det, slogdet on it -----------------------------------


def general(rng, shape, n):
    """Well-conditioned general matrices: a draw plus n I (eigenvalues kept away from 0)."""
    return rng.standard_normal(shape + (n, n)) + n * np.eye(n)


def test_lu_is_scipys_with_lapacks_pivots():
    a = np.random.default_rng(10).standard_normal((3, 5, 5))
    p, lower, upper = run(topos.linalg.lu, a)
    for i in range(3):
        for got, want in zip((p[i], lower[i], upper[i]), scipy.linalg.lu(a[i])):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_lu_past_one_block_is_lapacks():
    # Lu's forward is blocked (topos.ops.linalg_factor.BLOCK columns a panel): sizes past a
    # panel, and not a multiple of it, take the panels' row swaps and trailing products.
    rng = np.random.default_rng(14)
    for n in (BLOCK + 1, 2 * BLOCK + 7):
        a = rng.standard_normal((2, n, n))
        packed = lookup("Lu").forward([a], {})
        for i in range(2):
            factors, pivots = scipy.linalg.lu_factor(a[i])
            np.testing.assert_allclose(packed[i, :, :n], factors, rtol=1e-10, atol=1e-10 * n)
            order = np.arange(n)
            for k, p in enumerate(pivots):
                order[[k, p]] = order[[p, k]]
            np.testing.assert_array_equal(packed[i, :, n : 2 * n], np.eye(n)[order])


def test_solve_inv_det_slogdet_are_numpys():
    rng = np.random.default_rng(11)
    a, b, v = rng.standard_normal((2, 4, 4)), rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 4))
    got = run(
        lambda a: (
            [topos.linalg.solve(a, b), topos.linalg.solve(a, v), topos.linalg.inv(a), topos.linalg.det(a)]
            + list(topos.linalg.slogdet(a))
        ),
        a,
    )
    sign, logabsdet = np.linalg.slogdet(a)
    want = [np.linalg.solve(a, b), np.linalg.solve(a, v[..., None])[..., 0], np.linalg.inv(a), np.linalg.det(a)]
    for g, w in zip(got, want + [sign, logabsdet]):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_a_singular_matrix_gives_numpys_slogdet_and_non_finite_solutions_not_an_error():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    sign, logabsdet, d, x = run(
        lambda a: [*topos.linalg.slogdet(a), topos.linalg.det(a), topos.linalg.solve(a, np.ones(2))], singular
    )
    assert (sign, logabsdet, d) == (0.0, -np.inf, 0.0)
    assert not np.isfinite(x).any()


@pytest.mark.parametrize("name", ["solve", "inv", "det", "slogdet", "lu"])
def test_lu_derivatives_to_second_order_are_torchs(name):
    rng = np.random.default_rng(12)
    a, b = general(rng, (2,), 4), rng.standard_normal((2, 4, 2))
    cases = {
        "solve": (lambda a: topos.linalg.solve(a, b), lambda a: torch.linalg.solve(a, torch.tensor(b)), b.shape),
        "inv": (topos.linalg.inv, torch.linalg.inv, a.shape),
        "det": (topos.linalg.det, torch.linalg.det, (2,)),
        "slogdet": (lambda a: topos.linalg.slogdet(a)[1], lambda a: torch.linalg.slogdet(a)[1], (2,)),
        # l + u: the two factors torch's and topos's rules both differentiate (p has no derivative).
        "lu": (lambda a: sum(topos.linalg.lu(a)[1:]), lambda a: sum(torch.linalg.lu(a)[1:]), a.shape),
    }
    topos_fn, torch_fn, shape = cases[name]
    assert_orders_agree(topos_fn, torch_fn, [a], shape)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_xla_runs_the_portable_lu_loop_equal_to_the_interpreter(dtype):
    rng = np.random.default_rng(13)
    tape = topos.Tape(dtype)
    a = tape.parameter(rng.standard_normal((2, 3, 5, 5)))
    packed = tape.apply("Lu", [a])
    loss = topos.sum(topos.linalg.solve(a, np.ones((2, 3, 5, 1)))) + topos.sum(topos.linalg.slogdet(a)[1])
    network = tape.seal()
    plan = network.entry([packed, loss]).backward(loss).lower()
    assert "stablehlo.while" in plan.emit_stablehlo() and "custom_call" not in plan.emit_stablehlo()
    ours = plan.run(network.parameters()).outputs()
    theirs = plan.run(network.parameters(), backend="xla").outputs()
    rtol = 1e-10 if dtype == "float64" else 1e-3
    for got, want in zip(theirs, ours):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=rtol * np.abs(want).max())


def test_the_plan_counts_two_thirds_of_n_cubed_for_lu():
    tape = topos.Tape()
    a = tape.parameter(np.eye(6)[None].repeat(3, 0))
    d = topos.sum(topos.linalg.det(a))
    plan = tape.seal().entry([d]).lower()
    per_node = plan.costs().per_node
    assert [per_node[i][0] for i in per_node if plan.nodes[i].opcode == "Lu"] == [3 * 2 * 6**3 // 3]


def test_the_gallery_gaussian_process_learns_the_noise_and_fits_the_sine(capsys):
    # docs/examples/09_gaussian_process.py: Adam through cholesky, cho_solve and slogdet finds the
    # samples' noise (0.1) and a posterior mean close to sin x between the samples.
    script = Path(__file__).parents[2] / "docs" / "examples" / "09_gaussian_process.py"
    runpy.run_path(str(script), run_name="__main__")
    printed = capsys.readouterr().out
    losses = [float(v) for v in re.findall(r"^step +\d+ +loss (\S+)", printed, re.M)]
    assert losses[-1] < losses[0] - 10.0
    noise = float(re.search(r"noise (\S+)", printed).group(1))
    assert 0.05 < noise < 0.2
    assert float(re.search(r"GP mean (\S+),", printed).group(1)) < 0.25
