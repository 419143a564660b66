"""Sums of paddings into disjoint windows (``topos.compiler.wgsl.pad_sums``): the gradient of a value cut
into parts is one buffer that each part's gradient is copied into. The gradients are checked against the
numpy backend's (the parts' gradients are copied, not computed: the same numbers, a negative zero aside)
and the launches against what the pattern promises. These tests need a WebGPU adapter (lavapipe here)."""

import numpy as np
from tolerances import assert_close, library_bound

import topos
from topos import Tape
from topos.compiler.wgsl.views import View, split_view


def gradient_both_ways(build, values):
    network, (loss,) = Tape.record(lambda tape: [build(tape.parameter(values, name="x"))], dtype="float32")
    plan = network.entry([loss]).backward(loss).lower()
    x = network.symbol(plan.gradients[0][0])
    device = plan.run(network.parameters(), {}, backend="webgpu")
    host = plan.run(network.parameters(), {}, backend="numpy")
    assert device.backends[plan.gradients[0][1]] == "webgpu"
    return plan, device.gradient(x).numpy(), host.gradient(x).numpy()


def pad_sum_launches(plan):
    return [launch for launch in plan.kernels().launches if launch.label == "Pad+Add"]


def test_three_parts_that_cover_the_whole_are_three_copies_and_no_fill():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(6, 12)).astype(np.float32)
    weights = rng.normal(size=(6, 4)).astype(np.float32)

    def build(x):
        # Interleaved (step 3): parts cut end to end would be one Concatenate of their gradients instead
        # (the autodiff's slice_tilings; tests/python/test_webgpu_concatenations.py).
        q, k, v = x[:, 0::3], x[:, 1::3], x[:, 2::3]
        return topos.sum(q * weights) + topos.sum(k * k) + topos.sum(topos.tanh(v))

    plan, device, host = gradient_both_ways(build, values)
    # tanh's derivative 1 - tanh^2 cancels where tanh nears 1, so the two libraries' few ulps of tanh grow
    # there: held to library_bound (each gradient element sums at most two parts).
    assert_close(device, host, library_bound(host, "float32", 2), "the gradient on WebGPU against numpy")
    np.testing.assert_allclose(device[:, 0::3], weights, rtol=1e-6)
    (pad_sum,) = plan.kernels().pad_sums.values()
    assert len(pad_sum.pads) == 3 and not pad_sum.gaps
    launches = pad_sum_launches(plan)
    assert [launch.entry for launch in launches] == ["copy", "copy", "copy"]
    assert not any(launch.entry == "fill" for launch in plan.kernels().launches)


def test_a_gap_is_filled_and_a_transposed_part_is_copied_straight_through_its_reshape():
    rng = np.random.default_rng(1)
    values = rng.normal(size=(8, 12)).astype(np.float32)
    weights = rng.normal(size=(2, 4, 4)).astype(np.float32)

    def build(x):
        # The first part's gradient is Reshape(Transpose(g)): strided, so the reshape cannot relabel it.
        first = x[:, 0:4].reshape(2, 4, 4).transpose(0, 2, 1)
        return topos.sum(first * weights) + topos.sum(topos.tanh(x[:, 8:12]))

    plan, device, host = gradient_both_ways(build, values)
    assert_close(device, host, library_bound(host, "float32", 2), "the gradient on WebGPU against numpy")
    np.testing.assert_array_equal(device[:, 4:8], 0.0)
    np.testing.assert_allclose(device[:, 0:4], weights.transpose(0, 2, 1).reshape(8, 4), rtol=1e-6)
    (pad_sum,) = plan.kernels().pad_sums.values()
    assert pad_sum.gaps and len(pad_sum.reshapes) == 1
    launches = pad_sum_launches(plan)
    assert [launch.entry for launch in launches] == ["fill", "copy", "copy"]
    # The reshape's part is read where the transpose left it, into the window seen in its shape.
    (reshape,) = pad_sum.reshapes.values()
    through = next(launch for launch in launches if reshape in launch.nodes)
    assert dict(through.views)["source"].shape == (2, 4, 4) and not dict(through.views)["source"].is_contiguous
    assert not any(launch.label == "Reshape" for launch in plan.kernels().launches)


def test_overlapping_parts_are_no_pad_sum_and_their_gradient_adds_up():
    rng = np.random.default_rng(2)
    values = rng.normal(size=(5, 12)).astype(np.float32)

    def build(x):
        return topos.sum(x[:, 0:8] * x[:, 0:8]) + topos.sum(topos.tanh(x[:, 4:12]))

    plan, device, host = gradient_both_ways(build, values)
    assert_close(device, host, library_bound(host, "float32", 2), "the gradient on WebGPU against numpy")
    assert plan.kernels().pad_sums == {}
    assert pad_sum_launches(plan) == []


def test_split_view_sees_a_strided_view_in_another_shape_where_numpy_can_without_a_copy():
    base = np.arange(1 << 15, dtype=np.float32)  # every case's elements lie inside it (asserted below)
    cases = [
        ((256, 32), (96, 1), 64, (16, 16, 4, 8)),
        ((16, 16, 4, 8), (512, 8, 128, 1), 0, (256, 32)),
        ((6, 4), (1, 6), 0, (24,)),
        ((6, 4), (8, 1), 3, (3, 2, 2, 2)),
        ((6, 1, 4), (8, 5, 1), 0, (2, 3, 4)),
        ((3, 4), (4, 1), 0, (12, 1)),
    ]
    for shape, strides, offset, new in cases:
        assert offset + sum((extent - 1) * stride for extent, stride in zip(shape, strides)) < base.size
        array = np.lib.stride_tricks.as_strided(base[offset:], shape, tuple(4 * s for s in strides))
        view = View(0, offset, shape, strides)
        seen = split_view(view, new)
        try:
            relabelled = array.view()
            relabelled.shape = new  # numpy raises where the reshape needs a copy
        except AttributeError:
            assert seen is None, (shape, strides, new)
            continue
        assert seen is not None, (shape, strides, new)
        got = np.lib.stride_tricks.as_strided(base[offset:], new, tuple(4 * s for s in seen.strides))
        np.testing.assert_array_equal(got, array.reshape(new))


def test_a_slice_reshaped_is_a_view_of_its_buffer_and_reads_as_numpy():
    values = np.arange(48, dtype=np.float32).reshape(4, 12)

    def build(tape):
        x = tape.input(values, name="x")
        return [x[:, 2:6].reshape(2, 2, 4) * 2.0]

    network, (y,) = Tape.record(build, dtype="float32")
    plan = network.entry([y]).lower()
    device = plan.run(network.parameters(), {}, backend="webgpu").of(y).numpy()
    np.testing.assert_array_equal(device, values[:, 2:6].reshape(2, 2, 4) * 2.0)
    assert [launch.kernel for launch in plan.kernels().launches] == ["elementwise"]
