"""argmax, argmin, cumsum and top_k (topos.model.scans) against numpy, PyTorch and JAX, on every backend.

Indices are compared exactly: ties (the lower index wins), NaN (it counts as the
extreme, as numpy's argmax and argmin have it), rows of length 1, every axis,
keepdims and axis=None. cumsum's gradient is held to central differences, and its
second derivative (the gradient of its gradient, itself recorded with cumsum) to
central differences of topos's own gradient. XLA (and IREE) run the emitted
StableHLO and must give the interpreter's indices and running sums; WebGPU (lavapipe) runs
kernels/scan.wgsl, its int32 indices read back and equal to numpy's, its float32
running sums within the kernel tests' rule for a sum of n terms, for rows longer
than a workgroup's 64 lanes many times over. An accuracy computed with argmax is
recorded once and run on all three backends.
"""

import jax
import numpy as np
import pytest
import torch

import topos
from topos import ShapeError, Tape

jax.config.update("jax_enable_x64", True)

UNIT = 2.0**-24


def specials(rng, shape, dtype):
    """Normal values with ties, NaN and infinities placed in some rows."""
    x = rng.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1, shape[-1])
    if flat.shape[-1] >= 3 and flat.shape[0] >= 4:
        flat[0, 1] = flat[0, 2] = flat[0].max() + 1.0  # a tie for the largest
        flat[1, 0] = flat[1, -1] = flat[1].min() - 1.0  # a tie for the smallest
        flat[2, 2] = np.nan
        flat[2, 0] = np.nan  # two NaNs: the first wins
        flat[3, :] = -np.inf
    return flat.reshape(shape)


def lowered(outputs):
    """The sealed network of the outputs' tape and its plan reading them."""
    network = outputs[0].tape.seal()
    return network, network.entry(list(outputs)).lower()


def evaluate(network, plan, backend="numpy", feeds=None):
    result = plan.run(network.parameters(), feeds or {}, backend=backend)
    return [np.asarray(value) for value in result.outputs()], result


def run(outputs, backend="numpy"):
    return evaluate(*lowered(outputs), backend)


# Values against numpy and torch -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(6, 5), (4, 1), (1, 7), (5, 3, 4), (9,)])
def test_argmax_and_argmin_are_numpys_on_every_axis_with_ties_and_nan(shape, dtype):
    rng = np.random.default_rng(sum(shape))
    data = specials(rng, shape, dtype)
    tape = Tape(dtype=dtype)
    x = tape.parameter(data)
    cases = []
    for axis in list(range(-len(shape), len(shape))) + [None]:
        for keepdims in (False, True):
            cases.append((np.argmax, axis, keepdims, topos.argmax(x, axis=axis, keepdims=keepdims)))
            cases.append((np.argmin, axis, keepdims, topos.argmin(x, axis=axis, keepdims=keepdims)))
    cases.append((np.argmax, -1, False, x.argmax()))
    values, _ = run([case[-1] for case in cases])
    for (function, axis, keepdims, _), got in zip(cases, values):
        expected = function(data, axis=axis, keepdims=keepdims)
        assert got.dtype == np.int32 and got.shape == expected.shape, (function, axis, keepdims)
        assert np.array_equal(got, expected), (function.__name__, axis, keepdims, got, expected)


def test_argmax_and_argmin_agree_with_torch_on_ties_and_nan():
    data = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, np.nan, 2.0, np.nan], [-5.0, -5.0, 0.0, 7.0]])
    tape = Tape()
    x = tape.parameter(data)
    (largest, smallest, columns), _ = run([topos.argmax(x), topos.argmin(x), topos.argmin(x, axis=0)])
    t = torch.tensor(data)
    assert np.array_equal(largest, torch.argmax(t, dim=-1).numpy())
    assert np.array_equal(smallest, torch.argmin(t, dim=-1).numpy())
    assert np.array_equal(columns, torch.argmin(t, dim=0).numpy())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cumsum_is_torchs_along_every_axis_and_either_way(dtype):
    rng = np.random.default_rng(3)
    data = rng.standard_normal((3, 4, 5)).astype(dtype)
    tape = Tape(dtype=dtype)
    x = tape.parameter(data)
    cases = [(axis, reverse) for axis in (-3, -2, -1, 0, 1, 2) for reverse in (False, True)]
    values, _ = run([topos.cumsum(x, axis, reverse) for axis, reverse in cases] + [x.cumsum(1)])
    t = torch.tensor(data)
    tolerance = dict(rtol=1e-12, atol=1e-12) if dtype == "float64" else dict(rtol=1e-5, atol=1e-5)
    for (axis, reverse), got in zip(cases, values):
        expected = torch.flip(torch.cumsum(torch.flip(t, [axis]), axis), [axis]) if reverse else torch.cumsum(t, axis)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, expected.numpy(), **tolerance, err_msg=f"axis {axis} reverse {reverse}")
    np.testing.assert_allclose(values[-1], np.cumsum(data, 1), **tolerance)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_top_k_is_jaxs_with_ties_and_nan_and_torchs_without(dtype):
    rng = np.random.default_rng(5)
    data = specials(rng, (6, 7), dtype)
    data[4] = [2.0, 1.0, 2.0, 2.0, 0.5, 0.0, 1.0]  # three-way ties
    tape = Tape(dtype=dtype)
    x = tape.parameter(data)
    outputs = []
    for k in (0, 1, 3, 7):
        outputs.extend(topos.top_k(x, k))
    got = run(outputs)[0]
    for position, k in enumerate((0, 1, 3, 7)):
        values, indices = got[2 * position], got[2 * position + 1]
        expected_values, expected_indices = jax.lax.top_k(jax.numpy.asarray(data), k)
        assert indices.dtype == np.int32 and values.dtype == dtype
        assert np.array_equal(indices, np.asarray(expected_indices)), (k, indices, expected_indices)
        assert np.array_equal(values, np.asarray(expected_values), equal_nan=True), k
    # Signed zeros are equal, as numpy and IEEE compare them (jax.lax.top_k puts 0.0 first): index order.
    tape = Tape(dtype=dtype)
    _, indices = run(list(topos.top_k(tape.parameter(np.array([-0.0, 0.0, -1.0, -0.0], dtype)), 3)))[0]
    assert indices.tolist() == [0, 1, 3]
    # Without ties or NaN, torch.topk gives the same values and indices.
    plain = rng.standard_normal((5, 9)).astype(dtype)
    tape = Tape(dtype=dtype)
    values, indices = run(list(topos.top_k(tape.parameter(plain), 4)))[0]
    expected = torch.topk(torch.tensor(plain), 4)
    assert np.array_equal(indices, expected.indices.numpy())
    assert np.array_equal(values, expected.values.numpy())


def test_equal_compares_int32_values_exactly_as_floats_of_the_tapes_dtype():
    for dtype in ("float32", "float64"):
        tape = Tape(dtype=dtype)
        a = tape.input(np.array([0, 5, 16777217, -3], dtype=np.int32), dtype="int32")
        b = tape.input(np.array([0, 4, 16777217, -3], dtype=np.int32), dtype="int32")
        same, differ = topos.equal(a, b), topos.not_equal(a, b)
        assert same.dtype == dtype and differ.dtype == dtype
        (got_same, got_differ), _ = run([same, differ])
        np.testing.assert_array_equal(got_same, [1.0, 0.0, 1.0, 1.0])
        np.testing.assert_array_equal(got_differ, [0.0, 1.0, 0.0, 0.0])
    tape = Tape()
    with pytest.raises(ShapeError, match="IndexToFloat: converts int32 values, got float64"):
        tape.apply("IndexToFloat", [tape.parameter(1.0)], dtype="float64")


def test_bad_arguments_raise_errors_that_name_the_cause():
    tape = Tape()
    x = tape.parameter(np.zeros((2, 3)))
    with pytest.raises(ShapeError, match=r"TopK: k = 4 is outside 0\.\.3"):
        topos.top_k(x, 4)
    with pytest.raises(ShapeError, match="axis 1 of the operand is empty"):
        topos.argmax(tape.parameter(np.zeros((2, 0))))
    with pytest.raises(topos.AxisError, match="ArgMin: axis 2 is out of range"):
        topos.argmin(x, axis=2)
    with pytest.raises(topos.AxisError, match="CumSum: axis -3 is out of range"):
        topos.cumsum(x, axis=-3)
    ids = tape.input(np.zeros(3, dtype=np.int32), dtype="int32")
    with pytest.raises(ShapeError, match="ArgMax: needs floating-point operands, got int32"):
        topos.argmax(ids)
    with pytest.raises(ShapeError, match="TopK: needs an operand with at least one axis"):
        topos.top_k(tape.parameter(1.0), 1)
    with pytest.raises(topos.ArgumentTypeError, match="cumsum takes a recorded value"):
        topos.cumsum(np.zeros(3))


# Derivatives ------------------------------------------------------------------------------------------


def test_no_gradient_flows_through_the_indices_but_top_k_values_send_theirs_to_the_picked_elements():
    data = np.array([[0.5, 3.0, 1.0, 2.0], [4.0, -1.0, 4.0, 0.0]])
    tape = Tape()
    x = tape.parameter(data)
    values, indices = topos.top_k(x, 2)
    weights = np.array([[1.0, 10.0], [100.0, 1000.0]])
    loss = topos.sum(values * weights) + topos.sum(topos.one_hot(topos.argmax(x), 4) * x)
    network = tape.seal()
    field = network.forward(network.parameters(), {}).backward(topos.detach(loss))
    expected = np.array([[0.0, 1.0 + 1.0, 0.0, 10.0], [100.0 + 1.0, 0.0, 1000.0, 0.0]])
    np.testing.assert_array_equal(field.of(topos.detach(x)).numpy(), expected)
    t = torch.tensor(data, requires_grad=True)
    top = torch.topk(t, 2)
    (top.values * torch.tensor(weights)).sum().backward()
    np.testing.assert_array_equal(field.of(topos.detach(x)).numpy() - np.eye(4)[data.argmax(-1)], t.grad.numpy())
    del indices


def cumsum_loss(tape, x, c):
    """f(x) = sum(c * cumsum(x, 1)^3 + cumsum(x, 0, reverse))."""
    running = topos.cumsum(x, 1)
    return topos.sum(c * running * running * running) + topos.sum(topos.cumsum(x, 0, reverse=True) * c)


def test_cumsum_gradient_and_second_derivative_match_central_differences():
    rng = np.random.default_rng(8)
    data, c, u = (rng.standard_normal((3, 5)) for _ in range(3))
    eps = 1e-6

    def gradient(at):
        tape = Tape()
        x = tape.parameter(at)
        loss = cumsum_loss(tape, x, c)
        network = tape.seal()
        run_ = network.forward(network.parameters(), {})
        return run_.of(topos.detach(loss)).scalar(), run_.backward(topos.detach(loss)).of(topos.detach(x)).numpy()

    value, grad = gradient(data)
    numeric = (gradient(data + eps * u)[0] - gradient(data - eps * u)[0]) / (2 * eps)
    assert abs(float(np.vdot(grad, u)) - numeric) <= 1e-7 * (1 + abs(numeric))
    # The gradient written out with cumsum: its own gradient is the Hessian times u.
    tape = Tape()
    x = tape.parameter(data)
    running = topos.cumsum(x, 1)
    written = topos.cumsum(3.0 * c * running * running, 1, reverse=True) + topos.cumsum(tape.leaf(c), 0)
    hessian_u = topos.sum(written * tape.leaf(u))
    network = tape.seal()
    run_ = network.forward(network.parameters(), {})
    np.testing.assert_allclose(run_.of(topos.detach(written)).numpy(), grad, rtol=1e-12, atol=1e-12)
    exact = run_.backward(topos.detach(hessian_u)).of(topos.detach(x)).numpy()
    numeric = (gradient(data + eps * u)[1] - gradient(data - eps * u)[1]) / (2 * eps)
    np.testing.assert_allclose(exact, numeric, rtol=1e-6, atol=1e-6)
    # The gradient reading's backward of a cumsum is a cumsum the other way.
    plan = network.entry([topos.detach(hessian_u)]).backward(topos.detach(hessian_u)).lower()
    backward = [plan.nodes[i] for i in plan.schedule if plan.nodes[i].opcode == "CumSum"]
    assert {node.attrs["reverse"] for node in backward} == {False, True}


def test_cumsum_gradient_is_torchs():
    rng = np.random.default_rng(9)
    data, g = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    tape = Tape()
    x = tape.parameter(data)
    loss = topos.sum(topos.cumsum(x, 0) * tape.leaf(g)) + topos.sum(topos.cumsum(x, 1, reverse=True) ** 2.0)
    network = tape.seal()
    got = network.forward(network.parameters(), {}).backward(topos.detach(loss)).of(topos.detach(x)).numpy()
    t = torch.tensor(data, requires_grad=True)
    (
        (torch.cumsum(t, 0) * torch.tensor(g)).sum() + (torch.flip(torch.cumsum(torch.flip(t, [1]), 1), [1]) ** 2).sum()
    ).backward()
    np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-12, atol=1e-12)


# XLA and WebGPU ------------------------------------------------------------------------------------------


def record_everything(data, dtype):
    tape = Tape(dtype=dtype)
    x = tape.parameter(data)
    outputs = []
    for axis in range(data.ndim):
        outputs += [topos.argmax(x, axis), topos.argmin(x, axis, keepdims=True)]
        outputs += [topos.cumsum(x, axis), topos.cumsum(x, axis, reverse=True)]
    outputs += list(topos.top_k(x, min(3, data.shape[-1])))
    outputs += [topos.argmax(x.transpose()), topos.cumsum(x.transpose(), 0)]  # operands read through strides
    return outputs


def assert_same(expected, got, dtype, data, what=""):
    """Indices exactly; float results to the dtype's rounding of a running sum over ``data``'s longest
    axis (the kernel tests' rule: 1e-5 relative plus 4 sqrt(n) 2^-24 times the sum of |terms|)."""
    finite_data = np.where(np.isfinite(data), np.abs(data), 0.0).astype(np.float64)
    magnitude = max(float(finite_data.sum(axis).max()) for axis in range(data.ndim))
    terms = max(data.shape)
    for position, (want, have) in enumerate(zip(expected, got)):
        assert have.dtype == want.dtype and have.shape == want.shape, (what, position)
        if want.dtype == np.int32:
            assert np.array_equal(have, want), (what, position, np.argwhere(have != want)[:5])
            continue
        if dtype == "float64":
            np.testing.assert_allclose(have, want, rtol=1e-12, atol=1e-12, err_msg=f"{what} {position}")
            continue
        finite = np.isfinite(want)
        assert np.array_equal(np.isnan(have), np.isnan(want)), (what, position)
        assert np.array_equal(have[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)]), (what, position)
        allowed = 1e-5 * np.abs(want[finite]) + 4.0 * np.sqrt(terms) * UNIT * magnitude
        assert (np.abs(have[finite] - want[finite]) <= allowed).all(), (what, position)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(6, 5), (4, 1), (1, 7), (5, 3, 4)])
def test_xla_gives_the_interpreters_indices_and_running_sums(shape, dtype):
    rng = np.random.default_rng(len(shape) * 10 + shape[-1])
    data = specials(rng, shape, dtype)
    network, plan = lowered(record_everything(data, dtype))
    expected, _ = evaluate(network, plan)
    got, _ = evaluate(network, plan, "xla")
    assert_same(expected, got, dtype, data, what="xla")
    text = plan.emit_stablehlo()
    assert '"stablehlo.reduce"' in text and '"stablehlo.reduce_window"' in text and '"stablehlo.sort"' in text


@pytest.mark.parametrize(
    "shape",
    [(6, 5), (4, 1), (1, 7), (5, 3, 4), (3, 64), (2, 65), (7, 1023), (2, 3, 4097), (16, 300)],
    ids=lambda shape: "x".join(map(str, shape)),
)
def test_webgpu_runs_every_scan_on_the_device_and_reads_int32_indices_back(shape):
    rng = np.random.default_rng(sum(shape))
    data = specials(rng, shape, "float32")
    network, plan = lowered(record_everything(data, "float32"))
    expected, _ = evaluate(network, plan)
    got, result = evaluate(network, plan, "webgpu")
    scans = [i for i in plan.schedule if plan.nodes[i].opcode in ("ArgMax", "ArgMin", "CumSum", "TopK")]
    assert all(result.backends[i] == "webgpu" for i in scans), {i: result.backends[i] for i in scans}
    assert_same(expected, got, "float32", data, what="webgpu")
    launched = {launch.entry for launch in plan.kernels().launches if launch.kernel == "scan"}
    assert {entry.removesuffix("_serial") for entry in launched} == {"argmax", "argmin", "cumsum", "top_k"}


def test_webgpu_scans_rows_far_longer_than_a_workgroup():
    # 70001 elements a row: over a thousand chunks of 64 for cumsum, a long strided loop for argmax.
    rng = np.random.default_rng(70001)
    data = rng.standard_normal((2, 70001)).astype(np.float32)
    data[1, 50000] = 9.0
    data[1, 60000] = 9.0  # a tie far apart: the lower index wins
    tape = Tape(dtype="float32")
    x = tape.parameter(data)
    outputs = [topos.argmax(x), topos.argmin(x), topos.cumsum(x), topos.cumsum(x, reverse=True)]
    network, plan = lowered(outputs)
    got, result = evaluate(network, plan, "webgpu")
    assert set(result.backends.values()) == {"webgpu"}
    assert np.array_equal(got[0], data.argmax(-1)) and got[0][1] == 50000
    assert np.array_equal(got[1], data.argmin(-1))
    exact = np.cumsum(data.astype(np.float64), -1)
    magnitude = np.cumsum(np.abs(data.astype(np.float64)), -1)
    allowed = 1e-5 * np.abs(exact) + 4.0 * np.sqrt(70001) * UNIT * magnitude
    assert (np.abs(got[2] - exact) <= allowed).all()
    reverse = np.cumsum(data[:, ::-1].astype(np.float64), -1)[:, ::-1]
    assert (np.abs(got[3] - reverse) <= 1e-5 * np.abs(reverse) + 4.0 * np.sqrt(70001) * UNIT * magnitude[:, ::-1]).all()


def test_an_axis_past_the_kernels_loop_is_declined_and_runs_on_the_host():
    from topos.compiler.wgsl.dispatch import LANES, LOOP_LIMIT

    tape = Tape(dtype="float32")
    x = tape.parameter(np.zeros((1, LANES * LOOP_LIMIT + 1), dtype=np.float32))
    network, plan = lowered([topos.argmax(x), topos.cumsum(x)])
    declined = plan.kernels().declined
    reasons = {plan.nodes[i].opcode: reason for i, reason in declined.items()}
    assert reasons == {
        "ArgMax": f"an axis of {LANES * LOOP_LIMIT + 1} elements is longer than the scan kernel's loop",
        "CumSum": f"an axis of {LANES * LOOP_LIMIT + 1} elements is longer than the scan kernel's loop",
    }


# A classifier's accuracy ------------------------------------------------------------------------------


def test_an_accuracy_from_argmax_is_recorded_once_and_runs_on_every_backend():
    rng = np.random.default_rng(12)
    logits_data = rng.standard_normal((64, 10)).astype(np.float32)
    labels_data = rng.integers(0, 10, 64).astype(np.int32)
    labels_data[:40] = logits_data[:40].argmax(-1)  # 40 right, and some of the rest by chance
    tape = Tape(dtype="float32")
    logits = tape.input(logits_data)
    labels = tape.input(labels_data, dtype="int32")
    predicted = topos.argmax(logits)
    accuracy = topos.mean(topos.equal(predicted, labels))
    network, plan = lowered([accuracy, predicted])
    expected = float(np.mean(logits_data.argmax(-1) == labels_data))
    assert expected > 40 / 64
    for backend in ("numpy", "xla", "webgpu"):
        (value, indices), result = evaluate(network, plan, backend)
        assert float(value) == expected, backend
        assert np.array_equal(indices, logits_data.argmax(-1)), backend
        if backend == "webgpu":
            computed = [i for i in plan.schedule if not plan.nodes[i].is_source]
            assert {plan.nodes[i].opcode for i in computed} >= {"ArgMax", "IndexToFloat", "Equal"}
            assert all(result.backends[i] == "webgpu" for i in computed), result.backends


def test_a_gradient_through_cumsum_and_top_k_runs_on_webgpu_as_on_numpy():
    rng = np.random.default_rng(21)
    tape = Tape(dtype="float32")
    x = tape.parameter(rng.standard_normal((4, 70)).astype(np.float32))
    values, _ = topos.top_k(topos.cumsum(x, 0), 3)
    loss = topos.sum(values * values) + topos.sum(topos.cumsum(x, 1, reverse=True) ** 2.0)
    network = tape.seal()
    plan = network.entry([topos.detach(loss)]).backward(topos.detach(loss)).lower()
    want = plan.run(network.parameters(), {})
    got = plan.run(network.parameters(), {}, backend="webgpu")
    assert set(got.backends.values()) == {"webgpu"}
    backward = [plan.nodes[i] for i in plan.schedule if plan.nodes[i].opcode == "CumSum"]
    assert len(backward) == 4  # two forward, two in the gradient, each the other way
    gradient, expected = (np.asarray(r.gradient(topos.detach(x)), dtype=np.float64) for r in (got, want))
    np.testing.assert_allclose(gradient, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_iree_compiles_the_same_stablehlo_and_gives_the_same_indices_and_sums():
    # A second consumer of the emitted text (as tests/python/test_iree.py holds the gallery to it).
    import iree.compiler
    import iree.runtime

    rng = np.random.default_rng(33)
    data = specials(rng, (6, 5), "float32")
    network, plan = lowered(record_everything(data, "float32"))
    binary = iree.compiler.compile_str(
        plan.emit_stablehlo(),
        target_backends=["llvm-cpu"],
        input_type="stablehlo",
        extra_args=["--iree-llvmcpu-target-cpu=generic"],
    )
    module = iree.runtime.load_vm_flatbuffer(binary, driver="local-task")
    results = module.main(*plan.argument_values(network.parameters(), {}))
    got = [np.asarray(result.to_host()) for result in results]
    expected, _ = evaluate(network, plan)
    assert_same(expected, got, "float32", data, what="iree")
