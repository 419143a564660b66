"""The same question gets the same bits: every read of a Run, Field or PlanRun is a pure function.

A node's gradient does not depend on which nodes were read before, in what order,
by which thread, through which arena, or whether the network ran once before (the
plain interpreter) or is on its prepared plan. Every comparison here is bitwise,
within one process (docs/training.md, "Reproducibility", says what is not promised:
the same bits on another CPU or another numpy build).
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import topos
from topos import Tape

THREADS = 16


def mlp(dtype="float64", seed=0):
    """An MLP with a layer norm and a cross-entropy loss: ``(network, parameter symbols, loss)``."""
    rng = np.random.default_rng(seed)

    def build(tape):
        x = tape.input(rng.normal(size=(32, 24)).astype(dtype), name="x")
        W1 = tape.parameter((rng.normal(size=(24, 48)) * 0.3).astype(dtype), name="W1")
        b1 = tape.parameter(np.zeros(48, dtype), name="b1")
        gain = tape.parameter(np.ones(48, dtype), name="gain")
        shift = tape.parameter(np.zeros(48, dtype), name="shift")
        W2 = tape.parameter((rng.normal(size=(48, 10)) * 0.3).astype(dtype), name="W2")
        hidden = topos.layer_norm(topos.tanh(x @ W1 + b1), gain, shift)
        loss = topos.cross_entropy(hidden @ W2, rng.integers(0, 10, size=32))
        return [[W1, b1, gain, shift, W2], loss]

    network, (weights, loss) = Tape.record(build, dtype=dtype)
    return network, weights, loss


def every_gradient(network, field, order=None):
    """Every node's gradient, by node index, read in ``order`` (node order by default)."""
    order = range(len(network)) if order is None else order
    return {index: np.array(field.of(network.symbol(index))) for index in order}


def every_value(network, run):
    return [np.array(run.of(network.symbol(index))) for index in range(len(network))]


def same_bits(a, b):
    """Whether two {index: array} (or lists of arrays) hold the same arrays to the last bit."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def differing(a, b):
    return [k for k in a if not np.array_equal(a[k], b[k])]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_parameters_gradient_does_not_change_after_reading_inner_nodes(dtype):
    # The reproducer: read W, then every node (the inner nodes of the layer norm and of
    # the log-softmax, the leaves), then W again.
    network, weights, loss = mlp(dtype)
    field = network.forward(network.parameters()).backward(loss)
    before = [np.array(field.of(w)) for w in weights]
    for index in range(len(network)):
        field.of(network.symbol(index))
    after = [np.array(field.of(w)) for w in weights]
    assert all(np.array_equal(a, b) for a, b in zip(before, after))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_field_reads_the_same_in_any_order(dtype):
    network, _, loss = mlp(dtype)
    parameters = network.parameters()
    forward_order = every_gradient(network, network.forward(parameters).backward(loss))
    backward_order = every_gradient(
        network, network.forward(parameters).backward(loss), order=range(len(network) - 1, -1, -1)
    )
    shuffled = np.random.default_rng(3).permutation(len(network))
    shuffled_order = every_gradient(network, network.forward(parameters).backward(loss), order=shuffled)
    assert differing(forward_order, backward_order) == []
    assert differing(forward_order, shuffled_order) == []


def test_threads_reading_one_shared_field_get_the_serial_bits():
    network, _, loss = mlp()
    parameters = network.parameters()
    serial = every_gradient(network, network.forward(parameters).backward(loss))
    shared = network.forward(parameters).backward(loss)
    with ThreadPoolExecutor(THREADS) as pool:
        # Each reader starts at another node, so that some reach an inner node before others
        # reach the parameters.
        orders = [np.roll(np.arange(len(network)), -k * 7) for k in range(2 * THREADS)]
        reads = list(pool.map(lambda order: every_gradient(network, shared, order), orders))
    assert [k for k, read in enumerate(reads) if not same_bits(read, serial)] == []


def test_threads_backward_from_one_shared_run_and_run_their_own_forwards_alike():
    network, _, loss = mlp()
    parameters = network.parameters()
    serial_values = every_value(network, network.forward(parameters))
    serial = every_gradient(network, network.forward(parameters).backward(loss))
    shared_run = network.forward(parameters)

    def from_the_shared_run(_):
        return every_gradient(network, shared_run.backward(loss))

    def from_a_run_of_its_own(_):
        run = network.forward(parameters)  # an arena of its own from the forward's pool
        return every_value(network, run), every_gradient(network, run.backward(loss))

    with ThreadPoolExecutor(THREADS) as pool:
        shared_reads = list(pool.map(from_the_shared_run, range(2 * THREADS)))
        own_reads = list(pool.map(from_a_run_of_its_own, range(2 * THREADS)))
    assert [k for k, read in enumerate(shared_reads) if not same_bits(read, serial)] == []
    assert [k for k, (values, _) in enumerate(own_reads) if not same_bits(values, serial_values)] == []
    assert [k for k, (_, read) in enumerate(own_reads) if not same_bits(read, serial)] == []


def test_threads_on_a_fresh_network_count_its_runs_and_prepare_each_plan_once():
    network, _, loss = mlp()
    parameters = network.parameters()
    with ThreadPoolExecutor(THREADS) as pool:
        fields = list(pool.map(lambda _: network.forward(parameters).backward(loss), range(2 * THREADS)))
    # One forward ran the plain interpreter, every other the one prepared plan.
    assert network._prepared["forward"] is not None and network._prepared["forward"] != "used once"
    plain = [field for field in fields if not field._gradients]
    assert len(plain) == 1
    reference = every_gradient(network, plain[0])
    assert all(same_bits(every_gradient(network, field), reference) for field in fields)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_prepared_plans_give_the_first_runs_bits(dtype):
    # A network's first forward and backward run the plain interpreter; the second and later go
    # through prepared plans and arenas. Every one reads the same.
    network, weights, loss = mlp(dtype)
    parameters = network.parameters()
    runs = [network.forward(parameters) for _ in range(3)]
    fields = [run.backward(loss) for run in runs]
    assert not fields[0]._gradients and fields[1]._gradients  # the first eager, the later prepared
    values = [every_value(network, run) for run in runs]
    gradients = [every_gradient(network, field) for field in fields]
    assert same_bits(values[0], values[1]) and same_bits(values[0], values[2])
    assert same_bits(gradients[0], gradients[1]) and same_bits(gradients[0], gradients[2])
    # The compiler's plan: its first run is the plain interpreter, the later ones its prepared form.
    plan = network.entry([loss]).backward(loss, weights).lower()
    outputs = [plan.run(parameters).outputs() for _ in range(3)]
    assert all(same_bits(outputs[0], later) for later in outputs[1:])
    assert np.array_equal(outputs[0][0], values[0][network.index_of(loss)])
    for w, gradient in zip(weights, outputs[0][1:]):
        assert np.array_equal(gradient, gradients[0][network.index_of(w)])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_run_gives_the_same_bits_through_an_arena_off_its_alignment(dtype):
    # Every arena starts on a 64-byte boundary; numpy's loops and BLAS must not need it for their bits.
    # Arenas placed 4..60 bytes past the boundary (misaligning every value in them) read as the aligned one.
    network, _, loss = mlp(dtype)
    parameters = network.parameters()
    plan = network.entry([loss]).backward(loss).lower()
    for _ in range(2):
        first_run = network.forward(parameters)
        first_run.backward(loss)
        plan.run(parameters)
    values, gradients = every_value(network, first_run), every_gradient(network, first_run.backward(loss))
    outputs = plan.run(parameters).outputs()
    del first_run
    forward, backward = network._prepared["forward"], network._prepared[network.index_of(loss)]
    itemsize = np.dtype(dtype).itemsize
    for offset in range(itemsize, 64, itemsize):
        for prepared in (forward, backward, plan.prepared()):
            prepared._pool[:] = [prepared._new_workspace(offset)]
            assert prepared._pool[0].block.ctypes.data % 64 == offset
        run = network.forward(parameters)
        assert same_bits(every_value(network, run), values), offset
        assert same_bits(every_gradient(network, run.backward(loss)), gradients), offset
        assert same_bits(plan.run(parameters).outputs(), outputs), offset
