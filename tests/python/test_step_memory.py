"""A training step reuses memory nobody holds any more, and never memory someone does.

Three places reuse memory from step to step without the caller asking (issue 22):
an optimizer step that is not donated writes into the arrays of the state before
last once nothing refers to them (``take_unheld``); a prepared backward writes its
gradients into a kept block that it takes again once the gradients of an earlier run
are gone; and the optimizer reads those gradients where they lie when they lie end to
end in its layout. Each must give the bits the plain path gives, and must never
change what a caller still holds.
"""

import numpy as np
import pytest
from tolerances import assert_close, blocked_sum_bound

import topos
from topos import Tape
from topos.model import optim
from topos.model.network import Gradients
from topos.ops import lookup


def mlp(dtype="float32", seed=0):
    rng = np.random.default_rng(seed)

    def build(tape):
        x = tape.input(rng.normal(size=(16, 6)).astype(dtype), name="x")
        W1 = tape.parameter((rng.normal(size=(6, 12)) * 0.3).astype(dtype), name="W1")
        b1 = tape.parameter(np.zeros(12, dtype), name="b1")
        W2 = tape.parameter((rng.normal(size=(12, 3)) * 0.3).astype(dtype), name="W2")
        hidden = topos.layer_norm(topos.gelu(x @ W1 + b1))
        return topos.cross_entropy(hidden @ W2, rng.integers(0, 3, size=16))

    network, loss = Tape.record(build, dtype=dtype)
    return network, loss


def address(array):
    return np.asarray(array).__array_interface__["data"][0]


def gradients_of(network, loss, parameters):
    return network.forward(parameters).backward(loss).parameters(parameters)


def train(network, loss, optimizer, steps, keep=False, copy_gradients=False):
    """``steps`` steps; returns the last table, the tables and states kept (if ``keep``), and the
    address of the new parameters after each step."""
    parameters = network.parameters()
    state = optimizer.init(parameters)
    kept, addresses = [], []
    for _ in range(steps):
        gradients = gradients_of(network, loss, parameters)
        if copy_gradients:  # arrays of their own: the optimizer gathers them
            gradients = Gradients(network, {i: np.array(g) for i, g in gradients.slots.items()})
        parameters, state = optimizer.step(parameters, gradients, state)
        if keep:
            kept.append((parameters, state))
        addresses.append(address(next(iter(state._flats.values())).arrays["param"]))
        del gradients
    return parameters, kept, addresses


@pytest.mark.parametrize("optimizer", [optim.Adam(lr=0.01), optim.AdamW(lr=0.01), optim.SGD(lr=0.1, momentum=0.9)])
def test_a_loop_that_lets_go_writes_into_the_same_memory_and_gets_the_same_bits(optimizer):
    network, loss = mlp()
    last, _, addresses = train(network, loss, optimizer, 8)
    held, kept, held_addresses = train(network, loss, optimizer, 8, keep=True)
    # Letting go: after the first steps the new parameters alternate between two arrays.
    assert addresses[4] == addresses[2] and addresses[5] == addresses[3] and addresses[4] != addresses[5]
    # Holding every table and state: every step writes into new memory.
    assert len(set(held_addresses)) == len(held_addresses)
    for index in last.slots:
        assert np.array_equal(last.slots[index], held.slots[index])


def test_tables_and_states_someone_holds_are_never_written():
    network, loss = mlp()
    optimizer = optim.Adam(lr=0.01)
    parameters = network.parameters()
    state = optimizer.init(parameters)
    history = []
    for step in range(8):
        parameters, state = optimizer.step(parameters, gradients_of(network, loss, parameters), state)
        if step == 3:  # hold one table, a slot state, and a tensor read from the table
            first = network.parameter_symbols()[0]
            history = [parameters, state.slots, parameters.of(first).numpy()]
            snapshot = {i: np.array(a) for i, a in parameters.slots.items()}
            moments = {i: np.array(slot.exp_avg) for i, slot in state.slots.items()}
    table, slots, tensor = history
    assert all(np.array_equal(table.slots[i], snapshot[i]) for i in snapshot)
    assert all(np.array_equal(slots[i].exp_avg, moments[i]) for i in moments)
    assert np.array_equal(tensor, snapshot[network.index_of(network.parameter_symbols()[0])])


def test_gradients_read_where_they_lie_give_the_gathered_bits(monkeypatch):
    monkeypatch.setattr(optim, "IN_PLACE_ELEMENTS", 0)  # read in place however small the parameters
    read = []
    lying_end_to_end = optim.Layout.lying_end_to_end
    monkeypatch.setattr(optim.Layout, "lying_end_to_end", lambda *a: read.append(lying_end_to_end(*a)) or read[-1])
    network, loss = mlp()
    optimizer = optim.Adam(lr=0.01)
    in_place, _, _ = train(network, loss, optimizer, 5)
    assert sum(flat is not None for flat in read) == 4  # every step but the first (a plain backward)
    gathered, _, _ = train(network, loss, optimizer, 5, copy_gradients=True)
    assert all(np.array_equal(in_place.slots[i], gathered.slots[i]) for i in in_place.slots)


def test_a_prepared_backwards_gradients_lie_end_to_end_in_the_optimizers_layout():
    network, loss = mlp()
    parameters = network.parameters()
    state = optim.Adam().init(parameters)
    layout = next(iter(state._flats.values())).layout
    # The first backward runs plainly: arrays of their own.
    assert layout.lying_end_to_end(gradients_of(network, loss, parameters).slots) is None
    whole = layout.lying_end_to_end(gradients_of(network, loss, parameters).slots)
    assert whole is not None and not whole.flags.writeable


def test_a_backwards_kept_block_is_taken_again_only_once_nobody_holds_its_gradients():
    network, loss = mlp()
    parameters = network.parameters()
    for _ in range(2):
        gradients_of(network, loss, parameters)
    first = gradients_of(network, loss, parameters)
    copies = {i: np.array(g) for i, g in first.slots.items()}
    held_at = address(next(iter(first.slots.values())))
    other = parameters.replace({i: np.asarray(a) * 1.5 for i, a in parameters.slots.items()})
    for _ in range(3):  # runs while the first gradients are held: they never change
        second = gradients_of(network, loss, other)
        assert address(next(iter(second.slots.values()))) != held_at
        del second
    assert all(np.array_equal(first.slots[i], copies[i]) for i in copies)
    del first
    again = {address(next(iter(gradients_of(network, loss, other).slots.values()))) for _ in range(3)}
    assert held_at in again  # let go of, its block is taken again


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "shape, axes, keepdims",
    [
        ((64, 32), (1,), True),
        ((64, 32), (0,), False),
        ((4, 8, 16), (1, 2), True),
        ((4, 8, 16), (0, 1), False),
        ((300,), (0,), False),
        ((8, 1024), (1,), True),
        ((8, 1025), (1,), True),
        ((6, 5, 4), (0, 2), True),
    ],
)
def test_sum_as_a_product_with_ones_matches_numpys_sum(dtype, shape, axes, keepdims):
    x = np.random.default_rng(0).normal(size=shape).astype(dtype)
    primitive = lookup("Sum")
    attrs = {"axes": axes, "keepdims": keepdims}
    expected = np.sum(x.astype(np.float64), axis=axes, keepdims=keepdims)
    result = primitive.forward([x], attrs)
    into = primitive.forward_into([x], attrs, np.full(expected.shape, np.nan, dtype))
    assert result.shape == expected.shape and result.dtype == np.dtype(dtype)
    assert np.array_equal(result, into)
    # A product with ones (BLAS) and numpy's reduction each sum in an order of their own, which depends on
    # the CPU's vector width: both are held to the rounding of a blocked sum of the reduced terms.
    magnitude = np.sum(np.abs(x.astype(np.float64)), axis=axes, keepdims=keepdims)
    bound = blocked_sum_bound(magnitude, x.size // expected.size, dtype)
    assert_close(result, expected, bound, "a sum as a product with ones")
    transposed = np.ascontiguousarray(x.T).T  # not C-contiguous: numpy's reduction
    assert_close(primitive.forward([transposed], attrs), expected, bound, "numpy's sum of a transposed array")


@pytest.mark.parametrize(
    "rows, extent, special",
    [
        (256, 40, None),
        (16, 16, None),
        (1000, 3, None),
        (64, 1, None),
        (2000, 1000, None),
        (256, 40, np.nan),
        (256, 40, np.inf),
    ],
)
def test_scatter_add_sums_repeated_indices_as_np_add_at_does(rows, extent, special):
    # A product with a one-hot matrix (small, finite), the sorted sums (a large one-hot matrix, or a
    # NaN or infinity, which the product would spread to every index), np.add.at (a few rows).
    rng = np.random.default_rng(1)
    updates = rng.normal(size=(rows, 5))
    if special is not None:
        updates[7, 2] = special
    indices = rng.integers(0, extent, size=rows).astype(np.int32)
    expected = np.zeros((extent, 5))
    np.add.at(expected, indices, updates)
    primitive = lookup("ScatterAdd")
    result = primitive.forward([updates, indices], {"axis": 0, "extent": extent})
    np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-12)
    zeros = primitive.forward([np.full((rows, 5), -0.0), indices], {"axis": 0, "extent": extent})
    assert not np.signbit(zeros).any()
