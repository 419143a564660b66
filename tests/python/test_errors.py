"""Bad input gets a clear error naming the cause, the symbol and the user's line, and changes nothing."""

import inspect
import re

import numpy as np
import pytest

import topos
from topos import FeedError, ShapeError, Symbol, Tape, ToposError, detach


def next_line():
    """The line after the caller's: the line that records the operation under test."""
    return inspect.currentframe().f_back.f_lineno + 1


def build(tape):
    w = tape.parameter(0.5, name="w")
    x = tape.input(2.0, name="x")
    y = tape.input(4.0)
    ids = tape.input([0, 1], name="ids", dtype="int32")
    table = tape.leaf([[1.0], [2.0]])
    picked = topos.take(table, ids).sum()
    error = w * x - y
    return [w, x, y, ids, picked, error * error + picked]


@pytest.fixture
def seed():
    network, symbols = Tape.record(build)
    return network, symbols


def assert_feed_refused(network, feeds, *fragments):
    """The feed raises FeedError whose message holds every fragment; the network and a later run are unchanged."""
    before = network.describe()
    parameters = network.parameters()
    loss = network.symbol(len(network) - 1)
    reference = network.forward(parameters, {}).of(loss).scalar()
    with pytest.raises(FeedError) as caught:
        network.forward(parameters, feeds)
    for fragment in fragments:
        assert fragment in str(caught.value), str(caught.value)
    assert network.describe() == before
    assert network.forward(parameters, {}).of(loss).scalar() == reference
    assert parameters.of(network.symbol(0)).scalar() == 0.5
    return str(caught.value)


# Feeds ---------------------------------------------------------------------------------------------


def test_feed_for_a_parameter_names_it_and_says_it_is_not_an_input(seed):
    network, (w, x, y, ids, picked, loss) = seed
    assert_feed_refused(network, {x: 1.0, w: 1.0}, "parameter 0 'w'", "not an input")


def test_feed_for_a_computed_node_is_refused(seed):
    network, (w, x, y, ids, picked, loss) = seed
    assert_feed_refused(network, {loss: 1.0}, f"{network.node(loss).opcode.lower()} {loss.index}", "not an input")


def test_feed_for_a_symbol_of_another_network_is_refused(seed):
    network, _ = seed
    _, other_x = Tape.record(lambda tape: tape.input(0.0))
    assert_feed_refused(network, {other_x: 1.0}, f"symbol {other_x.index}", "another network")


def test_feed_for_an_unknown_node_is_refused(seed):
    network, (w, *_rest) = seed
    unknown = Symbol(w.lineage, 99)
    assert_feed_refused(network, {unknown: 1.0}, "symbol 99", "no node")


def test_feed_keyed_by_something_else_is_refused(seed):
    network, _ = seed
    assert_feed_refused(network, {"x": 1.0}, "expected a Symbol", "str")


def test_feed_of_the_wrong_shape_names_both_shapes(seed):
    network, (w, x, *_rest) = seed
    message = assert_feed_refused(network, {x: [1.0, 2.0, 3.0]}, "input 1 'x'", "shape [3]", "[]")
    # The input is named with the line that recorded it.
    assert re.search(r"recorded at .*test_errors\.py:\d+", message)


def test_float_feed_for_an_int32_input_cannot_be_cast(seed):
    network, (w, x, y, ids, *_rest) = seed
    assert_feed_refused(network, {ids: [0.0, 1.0]}, "input 3 'ids'", "cannot cast float64 to int32")


def test_int_feed_beyond_int32_is_refused_rather_than_wrapped(seed):
    network, (w, x, y, ids, *_rest) = seed
    assert_feed_refused(network, {ids: np.array([0, 2**40])}, "input 3 'ids'", "do not fit int32")


def test_feed_of_text_is_refused(seed):
    network, (w, x, *_rest) = seed
    assert_feed_refused(network, {x: "two"}, "input 1 'x'", "expected numbers")


def test_ragged_feed_is_refused(seed):
    network, (w, x, y, ids, *_rest) = seed
    assert_feed_refused(network, {ids: [[0], [1, 1]]}, "input 3 'ids'")


def test_malformed_feed_pairs_are_refused(seed):
    network, _ = seed
    assert_feed_refused(network, [1.0, 2.0], "(symbol, value) pairs")


def test_a_bad_feed_after_good_ones_changes_nothing(seed):
    network, (w, x, y, ids, picked, loss) = seed
    assert_feed_refused(network, [(x, 10.0), (y, 1.0), (ids, [5.5, 0.0])], "cannot cast")


def test_feeds_convert_where_numpy_same_kind_casting_allows(seed):
    network, (w, x, y, ids, picked, loss) = seed
    feeds = [(x, np.float32(3.0)), (y, 1), (ids, np.array([1, 1], dtype=np.int64))]
    run = network.forward(network.parameters(), feeds)
    assert run.of(x).dtype == "float64" and run.of(ids).dtype == "int32"
    # (0.5 * 3 - 1)^2 + (2 + 2)
    assert run.of(loss).scalar() == 0.25 + 4.0


def test_a_fed_array_changed_afterwards_does_not_change_the_run(seed):
    network, (w, x, y, ids, picked, loss) = seed
    fed = np.array([1, 0], dtype=np.int32)
    run = network.forward(network.parameters(), {ids: fed})
    fed[:] = 0
    assert run.of(ids).numpy().tolist() == [1, 0]


# Backward ------------------------------------------------------------------------------------------


def test_backward_needs_a_rank_0_target():
    tape = Tape()
    x = tape.input([1.0, 2.0])
    doubled = x * 2.0
    network = tape.seal()
    run = network.forward(network.parameters(), {})
    with pytest.raises(ValueError, match=r"rank-0 target.*shape \[2\]"):
        run.backward(detach(doubled))


def test_backward_needs_a_floating_point_target():
    tape = Tape()
    ids = tape.input(3, dtype="int32")
    network = tape.seal()
    with pytest.raises(ValueError, match="floating-point target"):
        network.forward(network.parameters(), {}).backward(detach(ids))


def test_backward_from_a_symbol_of_another_network_raises(seed):
    network, _ = seed
    _, other = Tape.record(lambda tape: tape.input(0.0))
    with pytest.raises(FeedError, match="another network"):
        network.forward(network.parameters(), {}).backward(other)


# Shapes at record time -------------------------------------------------------------------------------


def assert_shape_error(caught, line, opcode, *shapes):
    error = caught.value
    message = str(error)
    assert isinstance(error, ToposError) and isinstance(error, ValueError)
    assert opcode in message and error.opcode == opcode
    for shape in shapes:
        assert shape in message, message
    assert f"{__file__}:{line}" in message, message
    assert error.source == (__file__, line)


def test_broadcast_mismatch_names_both_shapes_the_opcode_and_the_line():
    tape = Tape()
    a = tape.input(np.zeros((2, 3)))
    b = tape.input(np.zeros(4))
    with pytest.raises(ShapeError) as caught:
        line = next_line()
        a + b
    assert_shape_error(caught, line, "Add", "[2, 3]", "[4]")


def test_matmul_mismatch_names_both_shapes_the_opcode_and_the_line():
    tape = Tape()
    a = tape.input(np.zeros((2, 3)))
    b = tape.input(np.zeros((4, 5)))
    with pytest.raises(ShapeError) as caught:
        line = next_line()
        a @ b
    assert_shape_error(caught, line, "MatMul", "[2, 3]", "[4, 5]")


def test_matmul_batch_mismatch_is_a_shape_error():
    tape = Tape()
    a = tape.input(np.zeros((2, 3, 4)))
    b = tape.input(np.zeros((3, 4, 5)))
    with pytest.raises(ShapeError) as caught:
        line = next_line()
        topos.matmul(a, b)
    assert_shape_error(caught, line, "MatMul", "[2, 3, 4]", "[3, 4, 5]")


def test_reshape_to_another_size_names_both_shapes():
    tape = Tape()
    a = tape.input(np.zeros((2, 3)))
    with pytest.raises(ShapeError) as caught:
        line = next_line()
        a.reshape(4)
    assert_shape_error(caught, line, "Reshape", "[2, 3]", "[4]")


def test_concatenate_mismatch_names_both_shapes():
    tape = Tape()
    a = tape.input(np.zeros((2, 3)))
    b = tape.input(np.zeros((3, 3)))
    with pytest.raises(ShapeError) as caught:
        line = next_line()
        topos.concatenate([a, b], axis=1)
    assert_shape_error(caught, line, "Concatenate", "[2, 3]", "[3, 3]")


def test_reduction_axis_out_of_range_is_a_shape_error():
    tape = Tape()
    a = tape.input(np.zeros((2, 3)))
    with pytest.raises(ShapeError) as caught:
        line = next_line()
        a.sum(axis=2)
    assert_shape_error(caught, line, "Sum", "[2, 3]")


def test_integer_operands_of_arithmetic_are_a_shape_error():
    tape = Tape()
    ids = tape.input([1, 2], dtype="int32")
    with pytest.raises(ShapeError, match="floating-point"):
        ids * 2.0


def test_a_shape_error_leaves_the_tape_usable():
    tape = Tape()
    a = tape.input(np.zeros((2, 3)))
    b = tape.input(np.zeros(4))
    with pytest.raises(ShapeError):
        a + b
    total = (a * 2.0).sum()
    network = tape.seal()
    assert network.forward(network.parameters(), {}).of(detach(total)).scalar() == 0.0


def test_a_failed_composite_records_nothing():
    # A Python list becomes a Leaf and a Broadcast before the Add fails; layer_norm records a dozen nodes
    # before its weight fails to broadcast. Neither may leave nodes behind.
    tape = Tape()
    a = tape.input(np.zeros((2, 3)))
    weight = tape.parameter(np.ones(2))
    before = tape.describe()
    with pytest.raises(ShapeError):
        a + [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(ShapeError):
        topos.layer_norm(a, weight=weight)
    with pytest.raises(ShapeError):
        a @ [[1.0, 2.0]]
    assert tape.describe() == before


# Sources --------------------------------------------------------------------------------------------


def test_two_parameters_of_one_name_are_refused():
    tape = Tape()
    tape.parameter(1.0, name="w")
    with pytest.raises(ValueError, match="'w' is already recorded"):
        tape.parameter(2.0, name="w")


def test_an_int32_source_needs_whole_numbers():
    with pytest.raises(ValueError, match="whole numbers"):
        Tape().input([1.5], dtype="int32")


def test_a_tape_of_an_unsupported_dtype_is_refused():
    with pytest.raises(ValueError, match="float16"):
        Tape(dtype="float16")
