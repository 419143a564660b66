"""``topos.shuffle`` against jax, and the numpy-like methods of ``Value`` that delegate to the functions.

jax 0.10 has no ``jax.random.shuffle`` (its old one shuffled each slice independently); topos's
``shuffle`` is ``jax.random.permutation(key, x, axis, independent=False)``, numpy's
``Generator.shuffle`` meaning: whole slices moved together. The orders are indices, so they must
be equal, for every key and shape. The methods must record what their functions record, so a
method equals its function exactly, and the function's numpy value.
"""

import jax
import numpy as np
import pytest

import topos
from topos import ArgumentError, AxisError, Tape, detach

KEYS = [(0, 0), (0, 42), (1, 2), (0xFFFFFFFF, 0xFFFFFFFF), (0x13198A2E, 0x03707344), (7, 2026), (2**31, 5)]
# (shape, axis): vectors either side of jax's one-round limit (1625), rows, columns, a middle axis,
# a negative axis, a length-1 axis and an empty one.
SHAPES = [((1,), 0), ((7,), 0), ((1626,), 0), ((5, 3), 0), ((3, 20), 1), ((2, 6, 4), 1), ((4, 5), -1)]
SHAPES += [((1, 4), 0), ((0, 3), 0)]


@pytest.fixture(autouse=True)
def jax_in_its_default_32_bits():
    """jax.random's own mode (other test files turn x64 on for the process; permutation does not
    depend on it, but the key's data type does)."""
    with jax.enable_x64(False):
        yield


def evaluated(build, *arrays, dtype="float32"):
    """The outputs of ``build(tape, *inputs)`` (a list) on numpy's backend, as arrays."""
    tape = Tape(dtype)
    inputs = [tape.input(array) for array in arrays]
    outs = detach(build(tape, *inputs))
    network = tape.seal()
    run = network.forward(network.parameters(), dict(zip(detach(inputs), arrays)))
    return [np.asarray(run.of(out)) for out in outs]


def jax_key(key):
    return jax.random.wrap_key_data(np.asarray(key, dtype=np.uint32))


def test_jax_has_no_shuffle_of_its_own():
    # If jax brings jax.random.shuffle back, its meaning must be checked against topos.shuffle's.
    assert not hasattr(jax.random, "shuffle"), jax.__version__


@pytest.mark.parametrize("key", KEYS)
def test_shuffle_equals_jax_permutation_with_slices_kept_together(key):
    arrays = [np.arange(np.prod(shape), dtype=np.float32).reshape(shape) for shape, _ in SHAPES]

    def build(tape, k, *values):
        return [topos.shuffle(k, x, axis=axis) for x, (_, axis) in zip(values, SHAPES)] + [topos.shuffle(k, 9)]

    got = evaluated(build, np.asarray(key, dtype=np.uint32), *arrays)
    for result, x, (shape, axis) in zip(got, arrays, SHAPES):
        want = np.asarray(jax.random.permutation(jax_key(key), x, axis=axis, independent=False))
        assert result.shape == shape and np.array_equal(result, want), (key, shape, axis)
    assert got[-1].dtype == np.int32 and np.array_equal(got[-1], np.asarray(jax.random.permutation(jax_key(key), 9)))


def test_shuffle_moves_whole_slices_and_equals_permutation():
    x = np.arange(60, dtype=np.float32).reshape(3, 20)

    def build(tape, k, v):
        return [topos.shuffle(k, v, axis=1), topos.permutation(k, v, axis=1)]

    shuffled, permuted = evaluated(build, np.asarray(KEYS[2], dtype=np.uint32), x)
    assert np.array_equal(shuffled, permuted)
    # Every row is moved by the same column order (independent=True would give each row its own).
    order = (shuffled[0] - x[0, 0]).astype(int)
    assert np.array_equal(shuffled, x[:, order]) and not np.array_equal(order, np.arange(20))


def test_shuffle_refuses_what_permutation_refuses_under_its_own_name():
    tape = Tape("float32")
    key = tape.input(topos.random_key(0))
    with pytest.raises(ArgumentError, match="shuffle of 16777216 elements"):
        topos.shuffle(key, 2**24)
    with pytest.raises(AxisError):
        topos.shuffle(key, tape.input(np.zeros((2, 3), np.float32)), axis=2)


# The methods ----------------------------------------------------------------------------------

ROWS = np.array([[3.0, 1.0, np.nan, 2.0, 1.0], [0.0, -1.0, 5.0, 5.0, -np.inf]])


@pytest.mark.parametrize(
    ("method", "function"),
    [
        (lambda x: x.sort(), lambda x: topos.sort(x)),
        (lambda x: x.sort(axis=0, descending=True), lambda x: topos.sort(x, axis=0, descending=True)),
        (lambda x: x.argsort(), lambda x: topos.argsort(x)),
        (lambda x: x.argsort(axis=None, descending=True), lambda x: topos.argsort(x, axis=None, descending=True)),
        (lambda x: x[1].sort().searchsorted(np.array([0.5, 5.0]), "right"), None),
        (lambda x: x.cummax(), lambda x: topos.cummax(x)),
        (lambda x: x.cummin(axis=0, reverse=True), lambda x: topos.cummin(x, axis=0, reverse=True)),
        (lambda x: x.swapaxes(0, 1), lambda x: topos.swapaxes(x, 0, 1)),
        (lambda x: abs(x), lambda x: topos.abs(x)),
    ],
)
def test_each_method_records_what_its_function_records(method, function):
    def build(tape, x):
        return [method(x)] + ([function(x)] if function else [])

    got = evaluated(build, ROWS)
    if function:
        np.testing.assert_array_equal(got[0], got[1])


def test_the_methods_give_numpy_s_values():
    def build(tape, x):
        return [x.sort(), x.argsort(), x[1].sort().searchsorted(np.array([0.5, 5.0]), "right"), x.cummax(), abs(x)]

    ordered, order, places, running, magnitudes = evaluated(build, ROWS, dtype="float64")
    np.testing.assert_array_equal(ordered, np.sort(ROWS, axis=-1))  # a NaN last, as numpy
    np.testing.assert_array_equal(order, np.argsort(ROWS, axis=-1, kind="stable"))
    np.testing.assert_array_equal(places, np.searchsorted(np.sort(ROWS[1]), [0.5, 5.0], "right"))
    np.testing.assert_array_equal(running, np.maximum.accumulate(ROWS, axis=-1))
    np.testing.assert_array_equal(magnitudes, np.abs(ROWS))
    assert order.dtype == np.int32 and places.dtype == np.int32


def test_a_numpy_user_s_methods_are_there():
    # ndarray's methods that topos has a function for: each is a method of Value too.
    for name in ("sort", "argsort", "searchsorted", "clip", "round", "prod", "any", "all", "cumsum", "cumprod"):
        assert callable(getattr(topos.Value, name)), name
    for name in ("trace", "diagonal", "flatten", "ravel", "argmin", "argmax", "repeat", "swapaxes", "__abs__"):
        assert callable(getattr(topos.Value, name)), name
