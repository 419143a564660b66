"""WebGPU without host steps: ScatterAdd as a device gather, and a training step as one submission.

``ScatterAdd`` runs as ``kernels/scatter.wgsl`` (each output element adds its updates in
increasing index order, as ``np.add.at`` does), so its results are numpy's to the bit; a
``DeviceTrainer`` step of the gallery transformer is then one submission and one read-back
(the loss). These tests need a WebGPU adapter (lavapipe here and in CI).
"""

import zlib

import numpy as np
import pytest
from test_plan_gallery import EXAMPLES, example

import topos
from topos import Tape
from topos.compiler.wgsl import scatter
from topos.compiler.wgsl.program import HostStep, Readback, run_counts
from topos.model import optim
from topos.webgpu import DeviceTrainer, View, run_launches

TRANSFORMER = next(p for p in EXAMPLES if p.name == "06_char_transformer.py")


@pytest.fixture
def rng(request):
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


def numpy_scatter_add(updates, indices, axis, extent):
    shape = updates.shape[:axis] + (extent,) + updates.shape[axis + indices.ndim :]
    out = np.zeros(shape, dtype=updates.dtype)
    flat = updates.reshape(updates.shape[:axis] + (-1,) + updates.shape[axis + indices.ndim :])
    np.add.at(np.moveaxis(out, axis, 0), indices.reshape(-1), np.moveaxis(flat, axis, 0))
    return out


def device_scatter_add(updates, indices, axis, extent):
    """The gather form's one launch on raw buffers."""
    out_shape = updates.shape[:axis] + (extent,) + updates.shape[axis + indices.ndim :]
    views = (View.of_buffer(0, updates.shape), View.of_buffer(1, indices.shape))
    launches = scatter.scatter_add(*views, axis, extent, 9, strategy="gather")
    assert len(launches) == 1
    sizes = {9: max(int(np.prod(out_shape)), 1)}
    return run_launches(launches, {0: updates, 1: indices}, sizes, {"out": View.of_buffer(9, out_shape)})["out"]


# (updates shape, indices shape, axis, extent): edges of the 64-lane workgroups and of the
# kernel's eight-index unrolling, one slot hit by every index, slots no index hits.
CASES = [
    ((1, 1), (1,), 0, 1),
    ((7, 3), (7,), 0, 2),
    ((9, 5), (9,), 0, 40),
    ((63, 1), (63,), 0, 5),
    ((64, 2), (64,), 0, 64),
    ((65, 3), (65,), 0, 7),
    ((4, 16, 8), (4, 16), 0, 65),
    ((3, 17, 2), (17,), 1, 4),
    ((2, 3, 5, 4), (3, 5), 1, 6),
    ((1023, 4), (1023,), 0, 3),
    ((5, 4097), (4097,), 1, 2),
]


@pytest.mark.parametrize("updates_shape, indices_shape, axis, extent", CASES)
def test_scatter_add_on_the_device_is_numpys_bit_for_bit(updates_shape, indices_shape, axis, extent, rng):
    updates = rng.normal(size=updates_shape).astype(np.float32)
    indices = rng.integers(0, extent, size=indices_shape).astype(np.int32)
    got = device_scatter_add(updates, indices, axis, extent)
    # The same additions in the same order (0.0, then each update in increasing index order): equal bits.
    assert np.array_equal(got, numpy_scatter_add(updates, indices, axis, extent))


def test_scatter_add_sums_every_repeat_of_one_index_and_leaves_other_slots_zero(rng):
    updates = rng.normal(size=(300, 3)).astype(np.float32)
    indices = np.full(300, 2, dtype=np.int32)
    got = device_scatter_add(updates, indices, 0, 4)
    assert np.array_equal(got[[0, 1, 3]], np.zeros((3, 3), dtype=np.float32))
    assert np.array_equal(got, numpy_scatter_add(updates, indices, 0, 4))
    np.testing.assert_allclose(got[2], updates.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-4)


def test_scatter_add_gives_the_same_bits_every_run(rng):
    updates = rng.normal(size=(2000, 7)).astype(np.float32)
    indices = rng.integers(0, 3, size=2000).astype(np.int32)
    first = device_scatter_add(updates, indices, 0, 3)
    assert all(np.array_equal(first, device_scatter_add(updates, indices, 0, 3)) for _ in range(3))


def test_scatter_add_declines_more_indices_than_its_loop_walks():
    def record(tape):
        updates = tape.input(np.zeros((scatter.MAX_SCATTER_INDICES + 1, 1), dtype=np.float32))
        ids = tape.input(np.zeros(scatter.MAX_SCATTER_INDICES + 1, dtype=np.int32), dtype="int32")
        return tape.apply("ScatterAdd", [updates, ids], axis=0, extent=2)

    network, out = Tape.record(record, dtype="float32")
    reading = network.entry([out]).lower().kernels()
    assert reading.declined == {
        out.index: f"{scatter.MAX_SCATTER_INDICES + 1} indices: the scatter kernel walks at most {scatter.MAX_SCATTER_INDICES}"
    }


def test_an_embedding_plan_runs_its_scatter_on_the_device_and_equals_numpy(rng):
    table = rng.normal(size=(11, 6)).astype(np.float32)
    ids = rng.integers(0, 11, size=(5, 9)).astype(np.int32)

    def record(tape):
        weight = tape.parameter(table, name="weight")
        tokens = tape.input(ids, dtype="int32")
        return topos.sum(topos.take(weight, tokens, axis=0) * 1.5)

    network, loss = Tape.record(record, dtype="float32")
    plan = network.entry([loss]).backward(loss).lower()
    assert not any(isinstance(step, HostStep) for step in plan.kernels().program.steps)
    weight = network.symbol(plan.gradients[0][0])
    on_device = plan.run(network.parameters(), {}, backend="webgpu").gradient(weight).numpy()
    on_host = plan.run(network.parameters(), {}, backend="numpy").gradient(weight).numpy()
    assert np.array_equal(on_device, on_host)


# A training step -----------------------------------------------------------------------------------


def test_a_transformer_training_step_is_one_submit_and_one_read_back():
    network, readables, loss, feeds = example(TRANSFORMER, "float32")
    plan = network.entry([loss]).backward(loss).lower()
    trainer = DeviceTrainer(plan, network.parameters(), optim.Adam(lr=1e-2))
    assert trainer.counts() is None
    # The plan's launches, then one optimizer launch for every parameter (all in one bank).
    expected = {"dispatches": len(plan.kernels().launches) + 1, "submits": 1, "readbacks": 1}
    assert trainer.program_counts() == expected
    # The program's one read-back is the loss, after every update launch.
    steps = trainer._program.steps
    assert [step.key for step in steps if isinstance(step, Readback)] == [loss.index]
    assert isinstance(steps[-1], Readback)
    trainer.step(feeds)
    first = trainer.counts()
    assert {name: first[name] for name in expected} == expected
    trainer.step(feeds)
    second = trainer.counts()
    assert {name: second[name] for name in expected} == expected
    # After the first step only the feeds go up (the parameters stay on the device), and 4 bytes come back.
    assert second["read_bytes"] == 4 and second["uploads"] == len(feeds)
    assert "a training step: " in trainer.describe() and "1 submit(s), 1 read-back(s)" in trainer.describe()


def test_a_reading_counts_what_a_run_asks_of_the_device():
    network, readables, loss, feeds = example(TRANSFORMER, "float32")
    reading = network.entry([loss]).backward(loss).lower().kernels()
    counts = reading.counts()
    assert counts == run_counts(reading.program)
    assert counts["dispatches"] == len(reading.launches) and counts["submits"] == 1
    assert counts["readbacks"] == sum(isinstance(step, Readback) for step in reading.program.steps)


def test_run_counts_reads_submits_from_where_the_host_must_wait():
    from topos.compiler.wgsl import launch as build
    from topos.compiler.wgsl.program import Buffer, Program, Upload

    fill = build.fill(View.of_buffer(0, (4,)), 1.0)
    steps = (Upload("a", 0), fill, fill, Readback("r", View.of_buffer(0, (4,))), HostStep("h"), Upload("h", 0), fill)
    program = Program((Buffer(0, 4),), steps + (Readback("s", View.of_buffer(0, (4,))),))
    assert run_counts(program) == {"dispatches": 3, "submits": 2, "readbacks": 2}
    assert run_counts(Program((), (HostStep("h"),))) == {"dispatches": 0, "submits": 0, "readbacks": 0}


def test_a_parameter_read_as_a_readable_is_read_before_its_update():
    def record(tape):
        w = tape.parameter(np.array([1.0, -2.0, 3.0]), name="w")
        return [w, topos.sum(w * w)]

    network, (w, loss) = Tape.record(record, dtype="float32")
    plan = network.entry([w, loss]).backward(loss).lower()
    trainer = DeviceTrainer(plan, network.parameters(), optim.SGD(lr=0.25))
    steps = trainer._program.steps
    # w is copied on the device before the update launches and read, with the loss, after them.
    assert [step.key for step in steps if isinstance(step, Readback)] == [loss.index, w.index]
    assert all(isinstance(step, Readback) for step in steps[-2:])
    copy = next(step for step in steps if getattr(step, "label", None) == "readable")
    update = next(step for step in steps if getattr(step, "kernel", None) == "optimizer")
    assert steps.index(copy) < steps.index(update) and copy.nodes == (w.index,)
    first = trainer.step()
    second = trainer.step()
    np.testing.assert_array_equal(first.of(w).numpy(), [1.0, -2.0, 3.0])
    # SGD on sum(w^2): w - 0.25 * 2w = w / 2, read back before the second step's update.
    np.testing.assert_array_equal(second.of(w).numpy(), [0.5, -1.0, 1.5])
    assert second.of(loss).scalar() == np.float32(0.25 + 1.0 + 2.25)
    assert trainer.counts()["submits"] == 1 and trainer.counts()["readbacks"] == 2


def sorted_scatter_add(updates, indices, axis, extent):
    """The sorted form's launches on raw buffers (keys and starts in scratch buffers 10 and 11)."""
    out_shape = updates.shape[:axis] + (extent,) + updates.shape[axis + indices.ndim :]
    scratch = {}

    def allocate(elements, dtype):
        buffer = 10 + len(scratch)
        scratch[buffer] = elements
        return buffer

    launches = scatter.scatter_add(
        View.of_buffer(0, updates.shape),
        View.of_buffer(1, indices.shape),
        axis,
        extent,
        9,
        strategy="sorted",
        allocate=allocate,
    )
    sizes = {9: max(int(np.prod(out_shape)), 1), **scratch}
    return run_launches(launches, {0: updates, 1: indices}, sizes, {"out": View.of_buffer(9, out_shape)})["out"]


@pytest.mark.parametrize("updates_shape, indices_shape, axis, extent", CASES)
def test_the_sorted_scatter_add_is_numpys_bit_for_bit_too(updates_shape, indices_shape, axis, extent, rng):
    updates = rng.normal(size=updates_shape).astype(np.float32)
    indices = rng.integers(0, extent, size=indices_shape).astype(np.int32)
    got = sorted_scatter_add(updates, indices, axis, extent)
    assert np.array_equal(got, numpy_scatter_add(updates, indices, axis, extent))


def test_a_large_table_takes_the_sorted_form_and_matches_numpy(rng):
    extent, count = 3000, 700
    assert scatter.scatter_strategy(extent, count, 5) == "sorted" and scatter.scatter_strategy(40, 256, 32) == "gather"
    updates = rng.normal(size=(count, 5)).astype(np.float32)
    indices = rng.integers(0, 40, size=count).astype(np.int32)  # many repeats, most slots empty
    indices[::7] = rng.integers(0, extent, size=len(indices[::7]))
    got = sorted_scatter_add(updates, indices, 0, extent)
    assert np.array_equal(got, numpy_scatter_add(updates, indices, 0, extent))
    assert all(np.array_equal(got, sorted_scatter_add(updates, indices, 0, extent)) for _ in range(2))
