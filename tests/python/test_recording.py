"""Recording, sealing, symbols, reopening, Tensor and threads (API.md's rules beside the seed)."""

import inspect
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, basic_indices, mutually_broadcastable_shapes

import topos
from topos import FeedError, Network, Symbol, Tape, Tensor, detach


def build(tape):
    w = tape.parameter(0.5, name="w")
    x = tape.input(2.0, name="x")
    y = tape.input(4.0, name="y")
    error = w * x - y
    return [w, x, y, error * error]


# Sealing -------------------------------------------------------------------------------------------


def test_a_sealed_tape_refuses_new_nodes():
    tape = Tape()
    x = tape.input(1.0)
    doubled = x * 2.0
    network = tape.seal()
    for record in (
        lambda: tape.input(1.0),
        lambda: tape.parameter(1.0),
        lambda: tape.leaf(1.0),
        lambda: x + doubled,
        lambda: x * 3.0,
        lambda: topos.exp(x),
        lambda: tape.seal(),
    ):
        with pytest.raises(RuntimeError, match="sealed"):
            record()
    assert len(tape) == len(network) == 3
    assert tape.describe() == network.describe()


def test_record_seals_and_returns_a_network():
    network, _ = Tape.record(build)
    assert isinstance(network, Network)
    assert len(network) == 6


@pytest.mark.parametrize(
    "returned, kind",
    [(lambda w, x: [w, x], list), (lambda w, x: (w, x), tuple), (lambda w, x: w, Symbol)],
)
def test_record_returns_symbols_mirroring_what_fn_returned(returned, kind):
    def fn(tape):
        return returned(tape.parameter(1.0), tape.input(2.0))

    network, symbols = Tape.record(fn)
    assert type(symbols) is kind
    flat = [symbols] if kind is Symbol else list(symbols)
    assert all(isinstance(s, Symbol) for s in flat)
    run = network.forward(network.parameters(), {})
    assert [run.of(s).scalar() for s in flat] == [1.0, 2.0][: len(flat)]


def test_record_mirrors_nested_lists_and_none():
    def fn(tape):
        return [tape.parameter(1.0), (tape.input(2.0), tape.input(3.0)), None]

    network, (w, (x, y), nothing) = Tape.record(fn)
    assert nothing is None
    assert [network.node(s).opcode for s in (w, x, y)] == ["Parameter", "Input", "Input"]


def test_record_uses_the_dtype_it_is_given():
    network, loss = Tape.record(lambda tape: tape.input(1.5) * 2.0, dtype="float32")
    run = network.forward(network.parameters(), {})
    assert run.of(loss).dtype == "float32"
    assert str(run.of(loss)) == "3.0"


def test_detach_refuses_what_is_not_a_value():
    with pytest.raises(TypeError, match="str"):
        detach("w")


def test_values_and_symbols_are_hashable_dictionary_keys():
    tape = Tape()
    a, b = tape.input(1.0), tape.input(2.0)
    keys = {a: "a", b: "b"}
    assert keys[a] == "a" and keys[b] == "b"
    assert {detach(a): 1}[detach(a)] == 1
    with pytest.raises(TypeError, match="no truth value"):
        bool(a)


def test_a_numpy_array_on_the_left_records_rather_than_loops():
    tape = Tape()
    x = tape.input([1.0, 2.0])
    total = np.array([3.0, 4.0]) * x
    network = tape.seal()
    assert network.forward(network.parameters(), {}).of(detach(total)).numpy().tolist() == [3.0, 8.0]


def test_every_node_remembers_the_line_that_recorded_it():
    tape = Tape()
    x = tape.input(1.0)
    line = inspect.currentframe().f_lineno + 1
    y = topos.exp(x) + 1.0
    # The Exp, the Leaf for 1.0 and the Add all point at the line that recorded them.
    assert [node.source for node in tape.nodes()[1:]] == [(__file__, line)] * 3
    assert y.node.opcode == "Add"


# Symbols and reopening -------------------------------------------------------------------------


def test_reopen_keeps_the_old_symbols_valid():
    network, (w, x, y, loss) = Tape.record(build)
    tape = network.reopen()
    doubled = tape.value(loss) * 2.0
    bigger = tape.seal()
    doubled = detach(doubled)
    assert bigger.describe().splitlines()[:6] == network.describe().splitlines()[:6]
    run = bigger.forward(bigger.parameters(), {x: 3.0})
    assert run.of(loss).scalar() == (0.5 * 3.0 - 4.0) ** 2
    assert run.of(doubled).scalar() == 2 * (0.5 * 3.0 - 4.0) ** 2
    # d doubled / d w = 4 (w x - y) x
    assert run.backward(doubled).of(w).scalar() == 4 * (0.5 * 3.0 - 4.0) * 3.0
    # The old network's parameter table runs the reopened network too.
    assert bigger.forward(network.parameters(), {}).of(loss).scalar() == 9.0


def test_the_old_network_does_not_know_the_new_nodes():
    network, (w, x, y, loss) = Tape.record(build)
    tape = network.reopen()
    doubled = detach(tape.value(loss) * 2.0)
    bigger = tape.seal()
    run = network.forward(network.parameters(), {})
    with pytest.raises(FeedError, match="another network"):
        run.of(doubled)
    with pytest.raises(FeedError, match="another network"):
        network.forward(bigger.parameters(), {})


def test_a_symbol_of_an_unrelated_network_raises_everywhere():
    network, (w, x, y, loss) = Tape.record(build)
    other, (other_w, *_rest) = Tape.record(build)
    run = network.forward(network.parameters(), {})
    field = run.backward(loss)
    for read in (run.of, field.of, network.node, network.parameters().of, field.parameters().of, run.backward):
        with pytest.raises(FeedError, match="another network"):
            read(other_w)
    with pytest.raises(FeedError, match="another network"):
        network.reopen().value(other_w)
    with pytest.raises(FeedError, match="another network"):
        network.forward(other.parameters(), {})


def test_two_reopenings_do_not_share_their_new_nodes():
    network, (w, x, y, loss) = Tape.record(build)
    first_tape, second_tape = network.reopen(), network.reopen()
    first = detach(first_tape.value(loss) + 1.0)
    second_tape.value(loss) - 1.0
    second = second_tape.seal()
    with pytest.raises(FeedError, match="another network"):
        second.forward(second.parameters(), {}).of(first)


def test_a_value_of_a_sealed_tape_cannot_be_used_on_the_reopened_one():
    tape = Tape()
    x = tape.input(1.0)
    network = tape.seal()
    reopened = network.reopen()
    with pytest.raises(ValueError, match="different tapes"):
        reopened.value(detach(x)) + x


# Tensor --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [9.0, -12.0, 0.1, 1e-20, 2.5e30])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_str_of_a_rank_0_tensor_is_str_of_the_numpy_scalar(value, dtype):
    scalar = np.dtype(dtype).type(value)
    assert str(Tensor(scalar)) == str(scalar)
    assert f"{Tensor(scalar)}" == str(scalar)


def test_a_python_number_makes_a_float64_tensor():
    assert Tensor(0.02).dtype == "float64"
    assert str(Tensor(9.0)) == "9.0"


def test_scalar_gives_a_python_number_and_refuses_more_than_one_element():
    assert type(Tensor(0.02).scalar()) is float and Tensor(0.02).scalar() == 0.02
    assert Tensor([[3.0]]).scalar() == 3.0
    with pytest.raises(ValueError, match=r"\[2\]"):
        Tensor([1.0, 2.0]).scalar()


def test_np_asarray_of_a_tensor_is_zero_copy_and_read_only():
    network, (w, x, y, loss) = Tape.record(build)
    run = network.forward(network.parameters(), {x: 3.0})
    tensor = run.of(loss)
    array = np.asarray(tensor)
    assert np.shares_memory(array, tensor.numpy())
    assert np.shares_memory(np.asarray(tensor, dtype="float64"), tensor.numpy())
    assert not array.flags.writeable
    big = Tensor(np.arange(6.0).reshape(2, 3))
    assert np.asarray(big) is big.numpy()


def test_tensor_arithmetic_with_tensors_and_numbers():
    t = Tensor(2.0)
    assert (t * 3).scalar() == 6.0
    assert (1.0 - t).scalar() == -1.0
    assert (t / Tensor(4.0)).scalar() == 0.5
    assert (-t).scalar() == -2.0
    assert (t**2).scalar() == 4.0
    assert (Tensor([1.0, 2.0]) + Tensor([3.0, 4.0])).numpy().tolist() == [4.0, 6.0]


# Threads ------------------------------------------------------------------------------------------


def test_many_threads_forward_one_network_with_different_feeds():
    def model(tape):
        w = tape.parameter(np.linspace(-1.0, 1.0, 12).reshape(3, 4), name="w")
        x = tape.input(np.zeros((5, 3)), name="x")
        hidden = topos.tanh(x @ w)
        return [w, x, hidden, (hidden * hidden).sum()]

    network, (w, x, hidden, loss) = Tape.record(model)
    parameters = network.parameters()
    weights = parameters.of(w).numpy()
    start = threading.Barrier(8)

    def work(seed):
        if seed < 8:
            start.wait()  # the first eight begin together
        feed = np.random.default_rng(seed).standard_normal((5, 3))
        run = network.forward(parameters, {x: feed})
        gradient = run.backward(loss).of(w).numpy()
        expected_hidden = np.tanh(feed @ weights)
        expected_gradient = feed.T @ (2 * expected_hidden * (1 - expected_hidden**2))
        return np.allclose(run.of(hidden).numpy(), expected_hidden, rtol=1e-12, atol=1e-14) and np.allclose(
            gradient, expected_gradient, rtol=1e-12, atol=1e-14
        )

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(work, range(200)))
    assert all(results)


# Recording reads like numpy ---------------------------------------------------------------------

NUMPY_SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None)


def run_one(build_fn, *arrays):
    """Record ``build_fn`` over inputs holding ``arrays``; return its output as a numpy array."""
    tape = Tape()
    out = build_fn(*(tape.input(a) for a in arrays))
    network = tape.seal()
    return network.forward(network.parameters(), {}).of(detach(out)).numpy()


@st.composite
def array_and_index(draw):
    shape = draw(array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5))
    index = draw(basic_indices(shape, allow_ellipsis=True, allow_newaxis=True))
    array = np.arange(np.prod(shape, dtype=int), dtype=float).reshape(shape)
    return array, index


@NUMPY_SETTINGS
@given(array_and_index())
def test_basic_indexing_matches_numpy(drawn):
    array, index = drawn
    expected = array[index]
    # Negative steps too (a Reverse, then a Slice);
    # empty slices and empty arrays give empty values, as in numpy (assert_array_equal compares shapes).
    np.testing.assert_array_equal(run_one(lambda x: x[index], array), expected)


@NUMPY_SETTINGS
@given(mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, min_side=1, max_side=4), st.integers(0, 99))
def test_binary_operators_broadcast_as_numpy_does(shapes, seed):
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal(shape) for shape in shapes.input_shapes)
    got = run_one(lambda x, y: (x - y) * x / (1.0 + y * y), a, b)
    np.testing.assert_allclose(got, (a - b) * a / (1.0 + b * b), rtol=1e-15)


@NUMPY_SETTINGS
@given(
    mutually_broadcastable_shapes(signature=np.matmul.signature, max_dims=3, max_side=4),
    st.integers(0, 99),
)
def test_matmul_follows_numpy_shapes(shapes, seed):
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal(shape) for shape in shapes.input_shapes)
    np.testing.assert_allclose(run_one(lambda x, y: x @ y, a, b), a @ b, rtol=1e-13, atol=1e-14)


@NUMPY_SETTINGS
@given(array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4), st.data())
def test_reductions_match_numpy(shape, data):
    rank = len(shape)
    axis = data.draw(
        st.none() | st.lists(st.integers(-rank, rank - 1), unique_by=lambda a: a % rank, max_size=rank).map(tuple)
        if rank
        else st.none()
    )
    keepdims = data.draw(st.booleans())
    array = np.random.default_rng(rank).standard_normal(shape)
    for method in ("sum", "max", "min", "mean", "var"):
        got = run_one(lambda x, method=method: getattr(x, method)(axis=axis, keepdims=keepdims), array)
        expected = getattr(np, method)(array, axis=axis, keepdims=keepdims)
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-14, err_msg=method)


def test_a_deep_chain_runs_forward_and_backward_without_recursion():
    tape = Tape()
    x = tape.parameter(1.0)
    value = x
    for _ in range(5000):
        value = value * 1.0001 + 0.0
    network = tape.seal()
    run = network.forward(network.parameters(), {})
    gradient = run.backward(detach(value)).of(detach(x)).scalar()
    assert gradient == pytest.approx(1.0001**5000, rel=1e-12)


def test_np_asarray_keeps_numpy_2_copy_semantics():
    tensor = Tensor(np.arange(3.0))
    assert np.asarray(tensor, copy=False) is tensor.numpy()
    copied = np.array(tensor, copy=True)
    assert not np.shares_memory(copied, tensor.numpy()) and copied.flags.writeable
    assert np.asarray(tensor, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(tensor, dtype=np.float32, copy=False)
