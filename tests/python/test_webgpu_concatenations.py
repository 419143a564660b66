"""Concatenations of reshaped parts (``topos.compiler.wgsl.concatenations``): a ``Concatenate`` copies a
``Reshape`` that it alone reads straight from the Reshape's source into its window, so the Reshape launches
nothing of its own. The values are checked against numpy (the parts are copied, not computed: the same
numbers) and the launches against what the lowering promises. These tests need a WebGPU adapter (lavapipe
here)."""

import numpy as np
from tolerances import Bound, assert_close, elementwise_bound, sum_bound

import topos
from topos import Tape


def run_both_ways(build, values):
    """The plan of ``build``'s one readable over the inputs ``values``, and its value on the device."""

    def record(tape):
        return [build(*[tape.input(value, name=f"x{i}") for i, value in enumerate(values)])]

    network, (y,) = Tape.record(record, dtype="float32")
    plan = network.entry([y]).lower()
    run = plan.run(network.parameters(), {}, backend="webgpu")
    assert run.backends[y.index] == "webgpu"
    return plan, y, run.of(y).numpy()


def concatenate_launches(plan, node):
    return [launch for launch in plan.kernels().launches if node in launch.nodes]


def reshape_nodes(plan):
    return [node.index for node in plan.nodes if node.opcode == "Reshape"]


def test_reshaped_transposes_are_copied_from_where_they_lie_one_launch_a_part():
    rng = np.random.default_rng(0)
    a, b = (rng.normal(size=(3, 5, 2, 4)).astype(np.float32) for _ in range(2))
    c = rng.normal(size=(3, 5, 6)).astype(np.float32)

    def build(x0, x1, x2):
        # Heads merged back, as the attention's backward does: Reshape(Transpose(.)) cannot be a view.
        return topos.concatenate(
            [
                x0.transpose(0, 2, 1, 3).reshape(3, 2, 20),
                x2.reshape(3, 2, 15),
                x1.transpose(0, 2, 1, 3).reshape(3, 2, 20),
            ],
            axis=2,
        )

    plan, y, device = run_both_ways(build, [a, b, c])
    expected = np.concatenate(
        [a.transpose(0, 2, 1, 3).reshape(3, 2, 20), c.reshape(3, 2, 15), b.transpose(0, 2, 1, 3).reshape(3, 2, 20)],
        axis=2,
    )
    np.testing.assert_array_equal(device, expected)
    launches = plan.kernels().launches
    assert [launch.entry for launch in launches] == ["copy", "copy", "copy"]
    assert all(launch.label == "Concatenate" for launch in launches)
    # Each reshape is covered by its part's copy, which reads the transpose's strided view in its own shape.
    for reshape in reshape_nodes(plan):
        (through,) = [launch for launch in launches if reshape in launch.nodes]
        assert y.index in through.nodes
    strided = [dict(launch.views)["source"] for launch in launches if not dict(launch.views)["source"].is_contiguous]
    assert [view.shape for view in strided] == [(3, 2, 5, 4), (3, 2, 5, 4)]


def test_plain_operands_are_copied_into_their_windows():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(4, 3)).astype(np.float32)
    b = rng.normal(size=(4, 5)).astype(np.float32)

    def build(x0, x1):
        return topos.concatenate([x0 * 2.0, x1.transpose(1, 0).transpose(1, 0), x0], axis=1)

    plan, y, device = run_both_ways(build, [a, b])
    np.testing.assert_array_equal(device, np.concatenate([a * 2.0, b, a], axis=1))
    copies = [launch for launch in concatenate_launches(plan, y.index) if launch.entry == "copy"]
    assert len(copies) == 3 and all(launch.nodes == (y.index,) for launch in copies)


def test_a_reshape_read_by_two_nodes_is_still_made_and_read_by_both():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(2, 3, 4)).astype(np.float32)
    b = rng.normal(size=(2, 12)).astype(np.float32)

    def build(x0, x1):
        merged = x0.transpose(0, 2, 1).reshape(2, 12)
        return topos.concatenate([merged, x1], axis=0) * topos.sum(merged)

    plan, y, device = run_both_ways(build, [a, b])
    merged = a.transpose(0, 2, 1).reshape(2, 12)
    concatenated = np.concatenate([merged, b], axis=0)
    expected = concatenated * merged.sum()
    # The device sums the 12 terms in its own order; that sum's rounding scales each element, then one product.
    summed = sum_bound(np.abs(merged).astype(np.float64).sum(), merged.size, "float32")
    bound = Bound(summed.value * np.abs(concatenated), summed.why).plus(elementwise_bound(expected, "float32", 1))
    assert_close(device, expected, bound, "a concatenation scaled by the reshape's sum")
    (reshape,) = reshape_nodes(plan)
    (own,) = [launch for launch in plan.kernels().launches if reshape in launch.nodes]
    assert own.label == "Reshape" and own.entry == "copy"


def test_a_window_the_source_cannot_be_seen_in_takes_a_dense_copy_first():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(3, 4)).astype(np.float32)
    b = rng.normal(size=(2, 5)).astype(np.float32)

    def build(x0, x1):
        # [2, 6] from a transposed [4, 3]: the window [2, 6] of a [2, 11] is no [4, 3] box.
        return topos.concatenate([x0.transpose(1, 0).reshape(2, 6), x1], axis=1)

    plan, y, device = run_both_ways(build, [a, b])
    np.testing.assert_array_equal(device, np.concatenate([a.T.reshape(2, 6), b], axis=1))
    (reshape,) = reshape_nodes(plan)
    launches = plan.kernels().launches
    assert [launch.entry for launch in launches] == ["copy", "copy", "copy"]
    assert launches[0].nodes == (reshape,) and launches[1].nodes == (reshape, y.index)


def test_the_gradient_of_reshaped_slices_that_cut_a_value_end_to_end_matches_numpy():
    rng = np.random.default_rng(4)
    values = rng.normal(size=(8, 12)).astype(np.float32)
    weights = rng.normal(size=(3, 2, 4, 4)).astype(np.float32)

    def build(x):
        parts = [x[:, 4 * i : 4 * i + 4].reshape(2, 4, 4).transpose(0, 2, 1) for i in range(3)]
        return sum(topos.sum(part * weights[i]) for i, part in enumerate(parts))

    network, (loss,) = Tape.record(lambda tape: [build(tape.parameter(values, name="x"))], dtype="float32")
    plan = network.entry([loss]).backward(loss).lower()
    x = network.symbol(plan.gradients[0][0])
    device = plan.run(network.parameters(), {}, backend="webgpu")
    host = plan.run(network.parameters(), {}, backend="numpy")
    gradient = plan.gradients[0][1]
    assert plan.nodes[gradient].opcode == "Concatenate" and device.backends[gradient] == "webgpu"
    np.testing.assert_allclose(device.gradient(x).numpy(), host.gradient(x).numpy(), rtol=1e-6, atol=1e-7)
    expected = np.concatenate([w.transpose(0, 2, 1).reshape(8, 4) for w in weights], axis=1)
    np.testing.assert_allclose(device.gradient(x).numpy(), expected, rtol=1e-6)
    # One copy a part, and no part's reshape launched on its own.
    assert len([launch for launch in plan.kernels().launches if gradient in launch.nodes]) == 3
    assert not any(launch.label == "Reshape" for launch in plan.kernels().launches)
