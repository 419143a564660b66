"""topos.linalg.eigh and eigvalsh (the ``Eigh`` primitive, topos.ops.linalg_spectral): values against
numpy.linalg, first and second derivatives against torch.linalg in float64, the behaviour at
repeated eigenvalues, and XLA's run of the LAPACK custom call against the interpreter."""

import numpy as np
import pytest
import torch
from tolerances import gamma

import topos
from topos.ops.linalg_spectral import fix_signs

RTOL = 1e-8


@pytest.fixture
def rng():
    return np.random.default_rng(31)


def eigen_bound(a, dtype):
    """How far two backward-stable eigensolvers' results may lie apart: n u ||a|| over the smallest gap
    (Golub and Van Loan, 8.1), the gradient's 1 / (w_j - w_i) terms multiplying it once more."""
    w = np.linalg.eigvalsh(a)
    n = a.shape[-1]
    gap = np.min(np.diff(w, axis=-1))
    return 8 * gamma(n, dtype) * np.abs(w).max() * max(1.0, np.abs(w).max() / gap) ** 2


def symmetric(rng, shape):
    """A symmetric matrix (batch) with well-separated eigenvalues: the derivative's 1 / (w_j - w_i) stays moderate."""
    n = shape[-1]
    q, _ = np.linalg.qr(rng.normal(size=shape))
    w = np.arange(1.0, n + 1.0) * 1.5 + rng.uniform(-0.2, 0.2, shape[:-1])
    return (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)


def run_eigh(a, dtype="float64"):
    tape = topos.Tape(dtype)
    x = tape.parameter(a)
    w, v = topos.linalg.eigh(x)
    network = tape.seal()
    run = network.forward(network.parameters())
    return run.of(w).numpy(), run.of(v).numpy()


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 5), (3, 2, 4, 4)])
def test_eigh_equals_numpy_with_signs_fixed(rng, shape):
    a = rng.normal(size=shape)
    w, v = run_eigh(a)
    expected_w, expected_v = np.linalg.eigh((a + np.swapaxes(a, -1, -2)) / 2)
    np.testing.assert_allclose(w, expected_w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(v, fix_signs(expected_v), rtol=1e-10, atol=1e-12)
    largest = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
    assert np.all(largest > 0)


def test_eigh_float32_reconstructs_its_matrix(rng):
    a = symmetric(rng, (2, 6, 6)).astype(np.float32)
    w, v = run_eigh(a, "float32")
    assert w.dtype == np.float32 and v.dtype == np.float32
    reconstructed = (v * w[..., None, :]) @ np.swapaxes(v, -1, -2)
    np.testing.assert_allclose(reconstructed, a, atol=8 * gamma(6, "float32") * np.abs(a).max())


def eigvalsh_values(a):
    tape = topos.Tape()
    w = topos.linalg.eigvalsh(tape.parameter(a))
    network = tape.seal()
    return network.forward(network.parameters()).of(w).numpy()


def test_eigvalsh_equals_numpy(rng):
    a = symmetric(rng, (3, 4, 4))
    np.testing.assert_allclose(eigvalsh_values(a), np.linalg.eigvalsh(a), rtol=1e-12)


def torch_loss(x, cw, cv):
    """The loss the topos tests record, in torch: eigenvectors with the same sign rule (a constant sign)."""
    w, v = torch.linalg.eigh((x + x.transpose(-1, -2)) / 2)
    largest = torch.gather(v, -2, v.abs().argmax(dim=-2, keepdim=True))
    v = v * torch.where(largest < 0, -1.0, 1.0).to(v.dtype).detach()
    return (w * cw).sum() + (v * cv).sum()


def topos_loss(x, cw, cv):
    w, v = topos.linalg.eigh(x)
    return topos.sum(w * cw) + topos.sum(v * cv)


def test_gradient_and_second_derivative_equal_torch(rng):
    a = symmetric(rng, (2, 4, 4)) + 0.1 * rng.normal(size=(2, 4, 4))
    cw, cv, direction = rng.normal(size=(2, 4)), rng.normal(size=(2, 4, 4)), rng.normal(size=(2, 4, 4))
    tape = topos.Tape()
    x = tape.parameter(a)
    loss = topos_loss(x, tape.leaf(cw), tape.leaf(cv))
    g = topos.grad(loss, x)
    hvp = topos.grad(topos.sum(g * tape.leaf(direction)), x)
    network = tape.seal()
    run = network.forward(network.parameters())

    xt = torch.tensor(a, requires_grad=True)
    (gt,) = torch.autograd.grad(torch_loss(xt, torch.tensor(cw), torch.tensor(cv)), xt, create_graph=True)
    (hvpt,) = torch.autograd.grad((gt * torch.tensor(direction)).sum(), xt)
    np.testing.assert_allclose(run.of(g).numpy(), gt.detach().numpy(), rtol=RTOL, atol=1e-10)
    np.testing.assert_allclose(run.of(hvp).numpy(), hvpt.numpy(), rtol=RTOL, atol=1e-10)


def test_repeated_eigenvalues_give_non_finite_vector_gradients_and_finite_value_gradients():
    a = np.diag([1.0, 2.0, 2.0])
    tape = topos.Tape()
    x = tape.parameter(a)
    _, v = topos.linalg.eigh(x)
    through_vectors = topos.grad(topos.sum(v * tape.leaf(np.arange(9.0).reshape(3, 3))), x)
    through_values = topos.grad(topos.sum(topos.linalg.eigvalsh(x) * tape.leaf(np.array([1.0, 2.0, 3.0]))), x)
    network = tape.seal()
    run = network.forward(network.parameters())
    assert not np.all(np.isfinite(run.of(through_vectors).numpy()))
    # d(sum c_i w_i)/da = V diag(c) V^T: finite, and the identity's eigenvectors are its columns.
    values_gradient = run.of(through_values).numpy()
    assert np.all(np.isfinite(values_gradient))
    np.testing.assert_allclose(np.trace(values_gradient), 6.0, rtol=1e-12)


def test_eigh_needs_square_matrices():
    tape = topos.Tape()
    with pytest.raises(topos.ShapeError, match="square"):
        topos.linalg.eigh(tape.parameter(np.ones((2, 3))))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_xla_runs_the_lapack_call_equal_to_the_interpreter(rng, dtype):
    a = symmetric(rng, (2, 5, 5))
    tape = topos.Tape(dtype)
    x = tape.parameter(a)
    w, v = topos.linalg.eigh(x)
    loss = topos.sum(w * tape.leaf(rng.normal(size=(2, 5)))) + topos.sum(v * tape.leaf(rng.normal(size=(2, 5, 5))))
    network = tape.seal()
    plan = network.entry([w, v, loss]).backward(loss).lower()
    assert "@lapack_" in plan.emit_stablehlo()
    numpy_outputs = plan.run(network.parameters()).outputs()
    xla_outputs = plan.run(network.parameters(), backend="xla").outputs()
    tolerance = eigen_bound(a, dtype)
    for ours, theirs in zip(numpy_outputs, xla_outputs):
        np.testing.assert_allclose(np.asarray(theirs), np.asarray(ours), rtol=tolerance, atol=tolerance)


def test_the_plan_costs_nine_n_cubed_a_matrix(rng):
    tape = topos.Tape()
    w, _ = topos.linalg.eigh(tape.parameter(symmetric(rng, (3, 8, 8))))
    plan = tape.seal().entry([w]).lower()
    text = plan.describe(costs=True)
    line = next(row for row in text.splitlines() if " Eigh " in row)
    assert f"[{9 * 3 * 8**3} flops" in line


def test_the_kernels_reading_runs_eigh_on_its_kernel_and_says_why_qr_and_svd_are_declined(rng):
    tape = topos.Tape("float32")
    a = tape.parameter(symmetric(rng, (4, 4)))
    w, _ = topos.linalg.eigh(a)
    _, r = topos.linalg.qr(a)
    singular = topos.linalg.svdvals(a)
    reading = tape.seal().entry([w, r, singular]).lower().kernels().describe()
    assert "eigh:eigh" in reading
    assert "no Householder QR kernel yet" in reading and "no Jacobi SVD kernel yet" in reading


# QR ------------------------------------------------------------------------------------------------


def tall(rng, shape):
    """A tall (or square) draw whose columns are well independent: R stays far from singular."""
    return rng.normal(size=shape) + 3 * np.eye(shape[-2], shape[-1])


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 3), (2, 3, 4, 2)])
def test_qr_equals_numpy(rng, shape):
    a = tall(rng, shape)
    tape = topos.Tape()
    q, r = topos.linalg.qr(tape.parameter(a))
    network = tape.seal()
    run = network.forward(network.parameters())
    expected_q, expected_r = np.linalg.qr(a)
    np.testing.assert_allclose(run.of(q).numpy(), expected_q, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(run.of(r).numpy(), expected_r, rtol=1e-12, atol=1e-12)


def test_qr_gradient_and_second_derivative_equal_torch(rng):
    a, cq, cr, direction = (
        tall(rng, (2, 5, 3)),
        rng.normal(size=(2, 5, 3)),
        rng.normal(size=(2, 3, 3)),
        rng.normal(size=(2, 5, 3)),
    )
    tape = topos.Tape()
    x = tape.parameter(a)
    q, r = topos.linalg.qr(x)
    g = topos.grad(topos.sum(q * tape.leaf(cq)) + topos.sum(r * tape.leaf(cr)), x)
    hvp = topos.grad(topos.sum(g * tape.leaf(direction)), x)
    network = tape.seal()
    run = network.forward(network.parameters())

    xt = torch.tensor(a, requires_grad=True)
    qt, rt = torch.linalg.qr(xt)
    (gt,) = torch.autograd.grad((qt * torch.tensor(cq)).sum() + (rt * torch.tensor(cr)).sum(), xt, create_graph=True)
    (hvpt,) = torch.autograd.grad((gt * torch.tensor(direction)).sum(), xt)
    np.testing.assert_allclose(run.of(g).numpy(), gt.detach().numpy(), rtol=RTOL, atol=1e-10)
    np.testing.assert_allclose(run.of(hvp).numpy(), hvpt.numpy(), rtol=RTOL, atol=1e-10)


def test_qr_of_a_wide_matrix_equals_numpy_and_its_gradient_torch(rng):
    a, cq, cr = rng.normal(size=(2, 3, 5)) + 3 * np.eye(3, 5), rng.normal(size=(2, 3, 3)), rng.normal(size=(2, 3, 5))
    tape = topos.Tape()
    x = tape.parameter(a)
    q, r = topos.linalg.qr(x)
    g = topos.grad(topos.sum(q * tape.leaf(cq)) + topos.sum(r * tape.leaf(cr)), x)
    network = tape.seal()
    run = network.forward(network.parameters())
    expected_q, expected_r = np.linalg.qr(a)
    np.testing.assert_allclose(run.of(q).numpy(), expected_q, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(run.of(r).numpy(), expected_r, rtol=1e-12, atol=1e-12)
    xt = torch.tensor(a, requires_grad=True)
    qt, rt = torch.linalg.qr(xt)
    (gt,) = torch.autograd.grad((qt * torch.tensor(cq)).sum() + (rt * torch.tensor(cr)).sum(), xt)
    np.testing.assert_allclose(run.of(g).numpy(), gt.numpy(), rtol=RTOL, atol=1e-10)


def test_the_qr_primitive_refuses_wide_matrices():
    tape = topos.Tape()
    with pytest.raises(topos.ShapeError, match="m >= n"):
        tape.apply("Qr", [tape.parameter(np.ones((2, 3)))])


def test_qr_of_dependent_columns_has_a_non_finite_gradient():
    a = np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])  # a zero column: R has an exact 0 on its diagonal
    tape = topos.Tape()
    x = tape.parameter(a)
    q, _ = topos.linalg.qr(x)
    g = topos.grad(topos.sum(q), x)
    network = tape.seal()
    assert not np.all(np.isfinite(network.forward(network.parameters()).of(g).numpy()))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_xla_runs_geqrf_and_orgqr_equal_to_the_interpreter(rng, dtype):
    a = tall(rng, (2, 5, 3))
    tape = topos.Tape(dtype)
    x = tape.parameter(a)
    q, r = topos.linalg.qr(x)
    loss = topos.sum(q * tape.leaf(rng.normal(size=(2, 5, 3)))) + topos.sum(r * tape.leaf(rng.normal(size=(2, 3, 3))))
    network = tape.seal()
    plan = network.entry([q, r, loss]).backward(loss).lower()
    assert "@lapack_" in plan.emit_stablehlo() and "geqrf" in plan.emit_stablehlo()
    numpy_outputs = plan.run(network.parameters()).outputs()
    xla_outputs = plan.run(network.parameters(), backend="xla").outputs()
    # Householder QR is backward stable: each result within a few n u of the interpreter's, times
    # R's condition number for the gradient's solve with R^T (about 2 for these draws).
    bound = 64 * gamma(5, dtype) * np.linalg.cond(a).max() * max(np.abs(np.asarray(o)).max() for o in numpy_outputs)
    for ours, theirs in zip(numpy_outputs, xla_outputs):
        np.testing.assert_allclose(np.asarray(theirs), np.asarray(ours), atol=bound)


# Least squares ---------------------------------------------------------------------------------


@pytest.mark.parametrize("a_shape,b_shape", [((5, 3), (5,)), ((2, 6, 2), (2, 6, 3)), ((4, 4), (4, 1))])
def test_lstsq_equals_numpy(rng, a_shape, b_shape):
    a, b = tall(rng, a_shape), rng.normal(size=b_shape)
    tape = topos.Tape()
    x = topos.linalg.lstsq(tape.parameter(a), tape.parameter(b))
    network = tape.seal()
    ours = network.forward(network.parameters()).of(x).numpy()
    if len(a_shape) == 2:
        expected = np.linalg.lstsq(a, b, rcond=None)[0]
    else:
        expected = np.stack([np.linalg.lstsq(ai, bi, rcond=None)[0] for ai, bi in zip(a, b)])
    np.testing.assert_allclose(ours, expected, rtol=1e-10, atol=1e-12)


def test_lstsq_gradient_and_second_derivative_equal_torch(rng):
    a, b, c = tall(rng, (6, 3)), rng.normal(size=(6, 2)), rng.normal(size=(3, 2))
    tape = topos.Tape()
    x, y = tape.parameter(a), tape.parameter(b)
    loss = topos.sum(topos.linalg.lstsq(x, y) * tape.leaf(c))
    ga, gb = topos.grad(loss, [x, y])
    hvp = topos.grad(topos.sum(ga * ga), x)
    network = tape.seal()
    run = network.forward(network.parameters())

    at, bt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    lt = (torch.linalg.lstsq(at, bt).solution * torch.tensor(c)).sum()
    gat, gbt = torch.autograd.grad(lt, [at, bt], create_graph=True)
    (hvpt,) = torch.autograd.grad((gat * gat).sum(), at)
    np.testing.assert_allclose(run.of(ga).numpy(), gat.detach().numpy(), rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(run.of(gb).numpy(), gbt.detach().numpy(), rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(run.of(hvp).numpy(), hvpt.numpy(), rtol=RTOL, atol=1e-12)


# SVD -------------------------------------------------------------------------------------------


def torch_svd_signs_fixed(x):
    """torch's reduced SVD under topos's sign rule: u[:, i]'s largest component positive, vh[i] flipped with it."""
    u, s, vh = torch.linalg.svd(x, full_matrices=False)
    largest = torch.gather(u, -2, u.abs().argmax(dim=-2, keepdim=True))
    sign = torch.where(largest < 0, -1.0, 1.0).to(u.dtype).detach()
    return u * sign, s, vh * sign.transpose(-1, -2)


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (5, 3), (3, 5), (2, 2, 4, 2)])
def test_svd_equals_numpy_with_signs_fixed(rng, shape):
    a = rng.normal(size=shape)
    tape = topos.Tape()
    u, s, vh = topos.linalg.svd(tape.parameter(a))
    network = tape.seal()
    run = network.forward(network.parameters())
    expected_u, expected_s, expected_vh = np.linalg.svd(a, full_matrices=False)
    sign = np.sign(np.take_along_axis(expected_u, np.argmax(np.abs(expected_u), axis=-2)[..., None, :], axis=-2))
    np.testing.assert_allclose(run.of(s).numpy(), expected_s, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(run.of(u).numpy(), expected_u * sign, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(run.of(vh).numpy(), expected_vh * np.swapaxes(sign, -1, -2), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(5, 3), (3, 4), (2, 3, 3)])
def test_svd_gradient_and_second_derivative_equal_torch(rng, shape):
    a, direction = rng.normal(size=shape), rng.normal(size=shape)
    m, n = shape[-2:]
    k = min(m, n)
    cu, cs, cv = (rng.normal(size=shape[:-2] + extra) for extra in ((m, k), (k,), (k, n)))
    tape = topos.Tape()
    x = tape.parameter(a)
    u, s, vh = topos.linalg.svd(x)
    loss = topos.sum(u * tape.leaf(cu)) + topos.sum(s * tape.leaf(cs)) + topos.sum(vh * tape.leaf(cv))
    g = topos.grad(loss, x)
    hvp = topos.grad(topos.sum(g * tape.leaf(direction)), x)
    network = tape.seal()
    run = network.forward(network.parameters())

    xt = torch.tensor(a, requires_grad=True)
    ut, st, vht = torch_svd_signs_fixed(xt)
    lt = (ut * torch.tensor(cu)).sum() + (st * torch.tensor(cs)).sum() + (vht * torch.tensor(cv)).sum()
    (gt,) = torch.autograd.grad(lt, xt, create_graph=True)
    (hvpt,) = torch.autograd.grad((gt * torch.tensor(direction)).sum(), xt)
    np.testing.assert_allclose(run.of(g).numpy(), gt.detach().numpy(), rtol=RTOL, atol=1e-10)
    np.testing.assert_allclose(run.of(hvp).numpy(), hvpt.numpy(), rtol=RTOL, atol=1e-9)


def test_svdvals_gradient_is_u_vh_and_finite_at_repeated_values():
    a = np.diag([2.0, 2.0, 1.0])
    tape = topos.Tape()
    x = tape.parameter(a)
    g_values = topos.grad(topos.sum(topos.linalg.svdvals(x)), x)
    _, _, vh = topos.linalg.svd(x)
    g_vectors = topos.grad(topos.sum(vh * tape.leaf(np.arange(9.0).reshape(3, 3))), x)
    network = tape.seal()
    run = network.forward(network.parameters())
    # d(sum s)/da = u vh, which is the identity for a positive diagonal a.
    np.testing.assert_allclose(run.of(g_values).numpy(), np.eye(3), atol=1e-12)
    assert not np.all(np.isfinite(run.of(g_vectors).numpy()))


def test_svd_refuses_full_matrices_of_a_non_square_matrix():
    tape = topos.Tape()
    with pytest.raises(topos.ArgumentError, match="full_matrices"):
        topos.linalg.svd(tape.parameter(np.ones((3, 2))), full_matrices=True)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 4)])
def test_xla_runs_gesdd_equal_to_the_interpreter(rng, dtype, shape):
    a = rng.normal(size=shape)
    m, n = shape[-2:]
    k = min(m, n)
    tape = topos.Tape(dtype)
    x = tape.parameter(a)
    u, s, vh = topos.linalg.svd(x)
    weights = [tape.leaf(rng.normal(size=shape[:-2] + extra)) for extra in ((m, k), (k,), (k, n))]
    loss = topos.sum(u * weights[0]) + topos.sum(s * weights[1]) + topos.sum(vh * weights[2])
    network = tape.seal()
    plan = network.entry([u, s, vh, loss]).backward(loss).lower()
    assert "gesdd_ffi" in plan.emit_stablehlo()
    numpy_outputs = plan.run(network.parameters()).outputs()
    xla_outputs = plan.run(network.parameters(), backend="xla").outputs()
    # Backward-stable SVDs agree to about k u |a| over the smallest gap between singular values
    # (the vectors' sensitivity), squared for the gradient's 1 / (s_j^2 - s_i^2).
    values = np.linalg.svd(a, compute_uv=False)
    gap = min(np.min(-np.diff(values, axis=-1)), np.min(values))
    bound = 8 * gamma(k, dtype) * np.abs(values).max() * max(1.0, np.abs(values).max() / gap) ** 2
    for ours, theirs in zip(numpy_outputs, xla_outputs):
        np.testing.assert_allclose(np.asarray(theirs), np.asarray(ours), atol=bound * max(1.0, np.abs(ours).max()))
