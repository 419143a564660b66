"""No silent wrong values (issue 9): indices out of range are refused, and runs hand back read-only arrays.

``one_hot`` used to turn an index out of range into a row of zeros, so
``cross_entropy`` with a bad target silently added 0; ``ScatterAdd`` wrapped a
negative index. PyTorch raises for both. The numpy forward and the WebGPU
backend (which checks indices on the host before it uploads them) now refuse in
the same words, naming the operation, the index, where it sits, the range and
the user's line. The WebGPU tests need an adapter (lavapipe here and in CI).
"""

import linecache

import numpy as np
import pytest
from tolerances import assert_close, library_bound

import topos
from topos import Tape
from topos.compiler import backends
from topos.model import optim
from topos.tensor import is_immutable
from topos.webgpu.trainer import DeviceTrainer

CLASSES = 4


def classifier():
    def build(tape):
        logits = tape.parameter(np.linspace(-1.0, 1.0, 3 * CLASSES).reshape(3, CLASSES), name="logits")
        targets = tape.input(np.array([0, 1, 2]), dtype="int32", name="targets")
        return [logits, targets, topos.cross_entropy(logits, targets)]

    return Tape.record(build, dtype="float32")


def one_hot_node(network):
    return next(node for node in network.nodes() if node.opcode == "OneHot")


def test_cross_entropy_refuses_a_target_out_of_range_naming_the_op_the_index_the_range_and_the_line():
    network, (logits, targets, loss) = classifier()
    with pytest.raises(topos.IndexingError) as caught:
        network.forward(network.parameters(), {targets: [0, 7, 2]})
    source = one_hot_node(network).source
    assert "cross_entropy" in linecache.getline(source[0], source[1])  # the user's line, not topos's
    assert str(caught.value) == (
        f"OneHot: index 7 at [1] is out of range for depth {CLASSES}: allowed 0..{CLASSES - 1} "
        f"(recorded at {source[0]}:{source[1]})"
    )
    assert caught.value.source == source and caught.value.opcode == "OneHot"
    assert isinstance(caught.value, IndexError)


def test_one_hot_refuses_a_negative_index_rather_than_give_a_row_of_zeros():
    tape = Tape()
    ids = tape.input(np.array([[0, 1], [2, -1]]), dtype="int32", name="ids")
    encoded = topos.one_hot(ids, 3)
    network = tape.seal()
    with pytest.raises(
        topos.IndexingError,
        match=r"OneHot: index -1 at \[1, 1\] is out of range for depth 3: "
        r"allowed 0\.\.2 \(recorded at ",
    ):
        network.forward(network.parameters(), {})
    good = network.forward(network.parameters(), {ids: [[0, 1], [2, 0]]})
    np.testing.assert_array_equal(good.of(encoded).numpy(), np.eye(3)[[[0, 1], [2, 0]]])
    tape = Tape()
    nothing = topos.one_hot(tape.input(np.zeros((2, 0), dtype=np.int32), dtype="int32"), 3)
    empty = tape.seal()
    assert empty.forward(empty.parameters(), {}).of(nothing).shape == (2, 0, 3)  # no index, nothing to refuse


def test_a_plan_refuses_on_numpy_and_on_webgpu_in_the_same_words():
    network, (logits, targets, loss) = classifier()
    plan = network.entry([loss]).backward(loss).lower()
    assert plan.kernels().backends[one_hot_node(network).index] == "webgpu"  # the device runs it: the host checks
    messages = []
    for backend in ("numpy", "webgpu"):
        with pytest.raises(topos.IndexingError) as caught:
            plan.run(network.parameters(), {targets: [0, 4, -2]}, backend=backend)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert messages[0].startswith(
        f"OneHot: index 4 at [1] is out of range for depth {CLASSES}: "
        f"allowed 0..{CLASSES - 1}; 1 more index is out of range (recorded at "
    )
    # Indices in range run on both, and agree.
    runs = [plan.run(network.parameters(), {targets: [3, 0, 1]}, backend=b) for b in ("numpy", "webgpu")]
    # Cross-entropy's exp and log in WGSL and in numpy, and its sums over 4 classes and 3 rows.
    want = runs[0].of(loss).numpy()
    assert_close(runs[1].of(loss).numpy(), want, library_bound(want, "float32", 4 * 3), "the loss on WebGPU")


def test_take_names_the_index_and_the_axis_on_both_backends():
    def build(tape):
        table = tape.parameter(np.arange(8.0).reshape(4, 2), name="table")
        ids = tape.input(np.array([0, 3]), dtype="int32", name="ids")
        return [ids, topos.take(table, ids, axis=0) * 2.0]

    network, (ids, taken) = Tape.record(build, dtype="float32")
    plan = network.entry([taken]).lower()
    for backend in ("numpy", "webgpu"):
        with pytest.raises(
            topos.IndexingError,
            match=r"Take: index 4 at \[1\] is out of range for axis 0 of "
            r"\[4, 2\]: allowed 0\.\.3 \(recorded at .*:\d+\)$",
        ):
            plan.run(network.parameters(), {ids: [1, 4]}, backend=backend)


def test_scatter_add_refuses_a_negative_index_rather_than_wrap_it():
    tape = Tape()
    updates = tape.input(np.ones((2, 3)), name="updates")
    ids = tape.input(np.array([0, 2]), dtype="int32", name="ids")
    summed = tape.apply("ScatterAdd", [updates, ids], axis=0, extent=3)
    network = tape.seal()
    np.testing.assert_array_equal(
        network.forward(network.parameters(), {}).of(summed).numpy(), [[1, 1, 1], [0, 0, 0], [1, 1, 1]]
    )
    with pytest.raises(
        topos.IndexingError,
        match=r"ScatterAdd: index -1 at \[1\] is out of range for axis 0 "
        r"of \[3, 3\]: allowed 0\.\.2",
    ):
        network.forward(network.parameters(), {ids: [0, -1]})


# What a run hands back is read-only ---------------------------------------------------------------------


def regression():
    def build(tape):
        w = tape.parameter(np.array([0.5, -1.0, 2.0]), name="w")
        x = tape.input(np.array([1.0, 2.0, 3.0]), name="x")
        prediction = w * x
        return [w, x, prediction, (prediction * prediction).sum()]

    return Tape.record(build, dtype="float32")


@pytest.mark.parametrize("backend", ["numpy", "webgpu"])
def test_plan_run_outputs_are_read_only(backend):
    network, (w, x, prediction, loss) = regression()
    run = network.entry([prediction, loss]).backward(loss).lower().run(network.parameters(), backend=backend)
    outputs = run.outputs()
    assert len(outputs) == 3
    before = [output.copy() for output in outputs]
    for output in outputs:
        assert is_immutable(output)
        with pytest.raises(ValueError, match="read-only"):
            output[...] = 0.0
    np.testing.assert_array_equal(run.of(prediction).numpy(), before[0])
    np.testing.assert_array_equal(run.gradient(w).numpy(), before[2])


def test_a_backend_that_keeps_its_arrays_cannot_change_a_run():
    held = []

    class Keeper:
        """Runs Mul itself and keeps the arrays it returns (as a buffer pool would)."""

        name = "keeper"

        def run(self, node, inputs):
            if node.opcode != "Mul":
                return None
            out = np.multiply(*inputs)
            held.append(out)
            return out

    backends.register_backend("keeper", lambda plan: Keeper())
    try:
        network, (w, x, prediction, loss) = regression()
        run = network.entry([prediction]).lower().run(network.parameters(), backend="keeper")
        assert run.backends[network.index_of(prediction)] == "keeper"
        expected = run.of(prediction).numpy().copy()
        for array in held:
            array[...] = 99.0  # the backend reuses its buffer
        np.testing.assert_array_equal(run.outputs()[0], expected)
        np.testing.assert_array_equal(run.of(prediction).numpy(), expected)
    finally:
        backends.unregister_backend("keeper")


def test_a_device_trainer_step_names_the_gradient_it_did_not_read_back():
    network, (w, x, prediction, loss) = regression()
    plan = network.entry([loss]).backward(loss).lower()
    run = DeviceTrainer(plan, network.parameters(), optim.SGD(lr=0.1)).step()
    assert is_immutable(run.of(loss).array)
    with pytest.raises(
        topos.FeedError,
        match="this run did not read the gradient with respect to parameter 0 'w' .*back from its device",
    ):
        run.gradient(w)
