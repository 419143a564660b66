"""Engine hardening: every deliberate error is a ToposError, no silent wrong values, and
degenerate points (all -inf rows, x ** 0 at 0, empty tensors) read as PyTorch gives them.

Hostile inputs are fed to each public entry point, some drawn by hypothesis: each
call either works or raises a ``topos.ToposError`` whose message names the cause,
never a bare ``ValueError``, ``TypeError``, ``IndexError``, ``RuntimeError``,
``ZeroDivisionError`` or ``RecursionError``.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

import topos
from topos import Gradients, Tape, Tensor, detach
from topos.compiler import Primitive, register, unregister
from topos.model import optim
from topos.xla import run_plan

SETTINGS = settings(max_examples=80, deadline=None, derandomize=True, database=None)


def deeply_nested(depth):
    value = [1.0]
    for _ in range(depth):
        value = [value]
    return value


class Opaque:
    """An object that is no number."""


# The error classes ---------------------------------------------------------------------------------

BUILT_IN_BASES = {
    "ShapeError": ValueError,
    "AxisError": IndexError,
    "IndexingError": IndexError,
    "DtypeError": ValueError,
    "FeedError": ValueError,
    "RecordingError": ValueError,
    "SealedTapeError": RuntimeError,
    "ArgumentError": ValueError,
    "ArgumentTypeError": TypeError,
    "UnknownOpcodeError": KeyError,
    "MissingRuleError": NotImplementedError,
}


@pytest.mark.parametrize("name", sorted(BUILT_IN_BASES))
def test_every_error_class_is_a_topos_error_and_keeps_its_built_in_base(name):
    error_class = getattr(topos, name)
    assert name in topos.__all__
    assert issubclass(error_class, topos.ToposError)
    assert issubclass(error_class, BUILT_IN_BASES[name])


def test_an_axis_error_is_a_shape_error_and_a_sealed_tape_error_a_recording_error():
    assert issubclass(topos.AxisError, topos.ShapeError) and issubclass(topos.IndexingError, topos.ShapeError)
    assert issubclass(topos.SealedTapeError, topos.RecordingError)


def test_an_unknown_opcode_reads_as_a_sentence():
    with pytest.raises(topos.UnknownOpcodeError) as caught:
        topos.compiler.lookup("Frobnicate")
    assert str(caught.value) == "no primitive named 'Frobnicate' is registered"


# Hostile inputs, one entry point at a time ---------------------------------------------------------------


def case_id(part):
    """A case's label names it in pytest's report; its other parts add nothing there."""
    return part if isinstance(part, str) and " " in part else ""


def recording_cases():
    """(label, call on a fresh tape holding x [3, 1], v [2] and int32 ids [1], expected class, a message fragment)."""
    return [
        ("ragged payload", lambda t, x, v, ids: t.input([[1.0], [2.0, 3.0]]), topos.RecordingError, "inhomogeneous"),
        ("text payload", lambda t, x, v, ids: t.parameter("abc"), topos.RecordingError, "expected numbers"),
        ("object payload", lambda t, x, v, ids: t.leaf(Opaque()), topos.RecordingError, "expected numbers"),
        ("None payload", lambda t, x, v, ids: t.input(None), topos.RecordingError, "expected numbers"),
        ("complex payload", lambda t, x, v, ids: t.input(1j), topos.RecordingError, "complex"),
        ("deeply nested payload", lambda t, x, v, ids: t.input(deeply_nested(200)), topos.RecordingError, "input()"),
        (
            "int32 beyond range",
            lambda t, x, v, ids: t.input(2**40, dtype="int32"),
            topos.RecordingError,
            "do not fit int32",
        ),
        (
            "int32 array beyond range",
            lambda t, x, v, ids: t.leaf(np.array([1, -(2**33)]), dtype="int32"),
            topos.RecordingError,
            "do not fit int32",
        ),
        (
            "int32 from a huge float",
            lambda t, x, v, ids: t.input(1e20, dtype="int32"),
            topos.RecordingError,
            "do not fit int32",
        ),
        (
            "int32 from infinity",
            lambda t, x, v, ids: t.input(float("inf"), dtype="int32"),
            topos.RecordingError,
            "not finite",
        ),
        ("int32 from text", lambda t, x, v, ids: t.input("1", dtype="int32"), topos.RecordingError, "expected numbers"),
        ("unknown dtype", lambda t, x, v, ids: t.input(1.0, dtype="junk"), topos.DtypeError, "float32, float64, int32"),
        (
            "unsupported dtype",
            lambda t, x, v, ids: t.input(1.0, dtype="float16"),
            topos.DtypeError,
            "float32, float64, int32",
        ),
        (
            "a parameter name twice",
            lambda t, x, v, ids: [t.parameter(1.0, name="w"), t.parameter(1.0, name="w")],
            topos.RecordingError,
            "'w' is already recorded",
        ),
        ("a value as a payload", lambda t, x, v, ids: t.parameter(x), topos.ArgumentTypeError, "not a recorded value"),
        ("values of two tapes", lambda t, x, v, ids: x + Tape().input(1.0), topos.RecordingError, "different tapes"),
        (
            "values of two tapes in a gather",
            lambda t, x, v, ids: topos.take(x, Tape().input([0], dtype="int32")),
            topos.RecordingError,
            "another tape",
        ),
        ("text operand", lambda t, x, v, ids: x + "a", topos.ArgumentTypeError, "str"),
        ("ragged operand", lambda t, x, v, ids: x * [[1.0], [1.0, 2.0]], topos.RecordingError, "inhomogeneous"),
        ("a number where a value goes", lambda t, x, v, ids: topos.sum(1.0), topos.ArgumentTypeError, "Sum"),
        ("no value at all", lambda t, x, v, ids: topos.maximum(1.0, 2.0), topos.ArgumentTypeError, "recorded value"),
        ("concatenate nothing", lambda t, x, v, ids: topos.concatenate([]), topos.ArgumentError, "at least one"),
        ("stack nothing", lambda t, x, v, ids: topos.stack([]), topos.ArgumentError, "at least one"),
        ("reshape with an empty axis and -1", lambda t, x, v, ids: x.reshape(0, -1), topos.ShapeError, "(0, -1)"),
        ("reshape to text", lambda t, x, v, ids: x.reshape("a"), topos.ShapeError, "tuple of integers"),
        ("broadcast to text", lambda t, x, v, ids: x.broadcast_to("ab"), topos.ShapeError, "tuple of integers"),
        (
            "one_hot of depth text",
            lambda t, x, v, ids: topos.one_hot(ids, "a"),
            topos.ShapeError,
            "depth must be an integer",
        ),
        (
            "one_hot of an unsupported dtype",
            lambda t, x, v, ids: topos.one_hot(ids, 3, "int32"),
            topos.DtypeError,
            "float32, float64",
        ),
        ("an index out of range", lambda t, x, v, ids: v[5], topos.IndexingError, "index 5 is out of range"),
        ("a float index", lambda t, x, v, ids: v[1.0], topos.IndexingError, "unsupported index 1.0"),
        ("a recorded mask", lambda t, x, v, ids: v[v], topos.IndexingError, "topos.where"),
        ("a slice of text", lambda t, x, v, ids: v["a":], topos.IndexingError, "slice"),
        ("too many indices", lambda t, x, v, ids: v[0, 0], topos.IndexingError, "too many indices"),
        (
            "attention over vectors",
            lambda t, x, v, ids: topos.attention(v, v, v),
            topos.ShapeError,
            "at least two axes",
        ),
        (
            "a causal mask of negative size",
            lambda t, x, v, ids: topos.causal_mask(t, -1),
            topos.ArgumentError,
            "n >= 0",
        ),
        ("detach of text", lambda t, x, v, ids: detach("a"), topos.ArgumentTypeError, "str"),
        (
            "detach of a deep nesting",
            lambda t, x, v, ids: detach(deeply_nested(5000)),
            topos.ArgumentError,
            "levels deep",
        ),
        ("the truth of a value", lambda t, x, v, ids: bool(x), topos.ArgumentTypeError, "no truth value"),
        ("apply of an unknown opcode", lambda t, x, v, ids: t.apply("Frob", [x]), topos.UnknownOpcodeError, "Frob"),
        ("apply of too few operands", lambda t, x, v, ids: t.apply("Add", [x]), topos.ArgumentError, "2 operands"),
        ("apply without attributes", lambda t, x, v, ids: t.apply("Reshape", [x]), topos.ShapeError, "target shape"),
        ("apply of a source", lambda t, x, v, ids: t.apply("Leaf", []), topos.ArgumentError, "tape.leaf"),
    ]


@pytest.mark.parametrize("label, call, error_class, fragment", recording_cases(), ids=case_id)
def test_a_hostile_recording_raises_its_topos_error_and_records_nothing(label, call, error_class, fragment):
    tape = Tape()
    x = tape.input(np.zeros((3, 1)), name="x")
    v = tape.input([1.0, 2.0], name="v")
    ids = tape.input([1], name="ids", dtype="int32")
    before = tape.describe()
    with pytest.raises(topos.ToposError) as caught:
        call(tape, x, v, ids)
    assert isinstance(caught.value, error_class), repr(caught.value)
    assert fragment in str(caught.value), str(caught.value)
    if label != "a parameter name twice":
        assert tape.describe() == before


def test_recording_errors_name_the_users_line():
    tape = Tape()
    x = tape.input(1.0)
    with pytest.raises(topos.RecordingError) as caught:
        tape.input("two")
    assert caught.value.source[0] == __file__
    with pytest.raises(topos.RecordingError) as caught:
        x + Tape().input(1.0)
    assert f"{__file__}:" in str(caught.value)


def test_recording_on_a_sealed_tape_is_a_sealed_tape_error_and_still_a_runtime_error():
    tape = Tape()
    x = tape.input(1.0)
    tape.seal()
    for record in (lambda: tape.input(1.0), lambda: x * 2.0, lambda: tape.seal()):
        with pytest.raises(topos.SealedTapeError, match="sealed") as caught:
            record()
        assert isinstance(caught.value, RuntimeError)


def test_the_unsupported_dtype_message_lists_the_supported_ones():
    with pytest.raises(topos.DtypeError, match=r"'float16': topos records float32, float64 \(recorded at "):
        Tape(dtype="float16")
    with pytest.raises(topos.DtypeError, match=r"'int32': topos records float32, float64 \(recorded at "):
        Tape(dtype="int32")
    with pytest.raises(topos.DtypeError, match="topos records float32, float64, int32"):
        Tensor(1.0, dtype="junk")


def seed_network():
    def build(tape):
        w = tape.parameter([1.0, 2.0], name="w")
        x = tape.input([3.0, 4.0], name="x")
        ids = tape.input([0, 1], name="ids", dtype="int32")
        return [w, x, ids, (w * x).sum()]

    return Tape.record(build)


def int32_run():
    network, _ = Tape.record(lambda tape: tape.input(3, dtype="int32"))
    return network.forward(network.parameters(), {})


def running_cases():
    """(label, call on (network, symbols, parameters, run), expected class, fragment)."""
    return [
        ("parameters of text", lambda n, s, p, r: n.forward("p"), topos.ArgumentTypeError, "Parameters table"),
        ("feeds of a number", lambda n, s, p, r: n.forward(p, 5), topos.FeedError, "(symbol, value) pairs"),
        (
            "a deeply nested feed",
            lambda n, s, p, r: n.forward(p, {s[1]: deeply_nested(200)}),
            topos.FeedError,
            "input 1 'x'",
        ),
        (
            "an int32 feed beyond range",
            lambda n, s, p, r: n.forward(p, {s[2]: np.array([0, 2**40])}),
            topos.FeedError,
            "do not fit int32",
        ),
        ("a node index out of range", lambda n, s, p, r: n.symbol(99), topos.IndexingError, "nodes 0..4"),
        ("a node index of text", lambda n, s, p, r: n.symbol("a"), topos.ArgumentTypeError, "int"),
        ("backward from a vector", lambda n, s, p, r: r.backward(s[0]), topos.ShapeError, "rank-0 target"),
        (
            "backward from int32",
            lambda n, s, p, r: (lambda ids: ids.backward(ids.network.symbol(0)))(int32_run()),
            topos.DtypeError,
            "floating-point",
        ),
        ("an entry of a set", lambda n, s, p, r: n.entry({s[3]}), topos.ArgumentTypeError, "list or tuple"),
        (
            "backward twice",
            lambda n, s, p, r: n.entry([s[3]]).backward(s[3]).backward(s[3]),
            topos.ArgumentError,
            "already has",
        ),
        ("an entry that reads nothing", lambda n, s, p, r: n.entry([]).lower(), topos.ArgumentError, "reads nothing"),
        (
            "an unknown backend",
            lambda n, s, p, r: n.entry([s[3]]).lower().run(p, backend="tpu"),
            topos.ArgumentError,
            "unknown backend 'tpu'",
        ),
        (
            "a slot that is no parameter",
            lambda n, s, p, r: p.replace({1: [0.0, 0.0]}),
            topos.FeedError,
            "not a parameter",
        ),
        ("a slot beyond the network", lambda n, s, p, r: p.replace({9: 1.0}), topos.FeedError, "names no node"),
        (
            "a table of the wrong shape",
            lambda n, s, p, r: topos.Parameters(n, {0: np.zeros(3)}),
            topos.FeedError,
            "shape [3] does not match [2]",
        ),
        (
            "gradients of text",
            lambda n, s, p, r: p.step("g", lambda w, g: w),
            topos.ArgumentTypeError,
            "Gradients table",
        ),
        ("a scale of text", lambda n, s, p, r: r.backward(s[3]).parameters().scale("a"), topos.ArgumentError, "number"),
        ("a learning rate of text", lambda n, s, p, r: optim.SGD(lr="a"), topos.ArgumentError, "lr must be a number"),
        ("a negative learning rate", lambda n, s, p, r: optim.Adam(lr=-1.0), topos.ArgumentError, "non-negative"),
        (
            "a max_norm of text",
            lambda n, s, p, r: optim.clip_by_global_norm(r.backward(s[3]).parameters(), "a"),
            topos.ArgumentError,
            "max_norm",
        ),
        ("a tensor of text", lambda n, s, p, r: Tensor("abc"), topos.ArgumentError, "numbers"),
        ("a ragged tensor", lambda n, s, p, r: Tensor([[1.0], [1.0, 2.0]]), topos.ArgumentError, "numbers"),
        ("a tensor's scalar of two elements", lambda n, s, p, r: Tensor([1.0, 2.0]).scalar(), topos.ShapeError, "[2]"),
        ("a tensor index out of range", lambda n, s, p, r: Tensor([1.0])[5], topos.IndexingError, "out of bounds"),
        ("a tensor sum over axis 5", lambda n, s, p, r: Tensor([1.0]).sum(axis=5), topos.AxisError, "axis 5"),
        (
            "a tensor reshape of another size",
            lambda n, s, p, r: Tensor([1.0]).reshape(5),
            topos.ShapeError,
            "[1] into [5]",
        ),
        ("a graph of text", lambda n, s, p, r: topos.Graph.from_nodes("ab"), topos.ArgumentTypeError, "recorded nodes"),
        ("a record of no function", lambda n, s, p, r: Tape.record(5), topos.ArgumentTypeError, "function"),
    ]


@pytest.mark.parametrize("label, call, error_class, fragment", running_cases(), ids=case_id)
def test_a_hostile_call_after_recording_raises_its_topos_error(label, call, error_class, fragment):
    network, symbols = seed_network()
    parameters = network.parameters()
    run = network.forward(parameters, {})
    with pytest.raises(topos.ToposError) as caught:
        call(network, symbols, parameters, run)
    assert isinstance(caught.value, error_class), repr(caught.value)
    assert fragment in str(caught.value), str(caught.value)


def hostile_payloads():
    numbers = st.one_of(st.floats(allow_nan=True), st.integers(min_value=-(2**70), max_value=2**70))
    leaves = st.one_of(
        numbers,
        st.text(max_size=3),
        st.none(),
        st.complex_numbers(),
        st.binary(max_size=3),
        st.builds(Opaque),
        st.dictionaries(st.text(max_size=1), numbers, max_size=2),
    )
    return st.recursive(leaves, lambda children: st.lists(children, max_size=3), max_leaves=8)


@SETTINGS
@given(hostile_payloads(), st.sampled_from(["float64", "float32", "int32"]))
def test_any_payload_is_recorded_or_refused_with_a_topos_error(payload, dtype):
    tape = Tape()
    x = tape.input(0.0)
    for record in (
        lambda: tape.input(payload, dtype=dtype),
        lambda: tape.leaf(payload, dtype=dtype),
        lambda: x + payload,
        lambda: topos.maximum(x, payload),
        lambda: Tensor(payload),
    ):
        try:
            result = record()
        except topos.ToposError:
            continue
        array = np.asarray(
            result.node.payload
            if hasattr(result, "node") and result.node.payload is not None
            else getattr(result, "array", 0.0)
        )
        assert array.dtype.kind in "biuf"


@SETTINGS
@given(hostile_payloads())
def test_any_feed_or_new_parameter_value_is_taken_or_refused_with_a_feed_error(payload):
    network, (w, x, ids, total) = seed_network()
    parameters = network.parameters()
    for call in (
        lambda: network.forward(parameters, {x: payload}),
        lambda: network.forward(parameters, {ids: payload}),
        lambda: parameters.replace({w.index: payload}),
    ):
        try:
            call()
        except topos.FeedError:
            continue


# Axes: one rule for every op, never wrapped modulo the rank ----------------------------------------------


def test_squeeze_of_an_axis_out_of_range_names_the_axis_and_the_shape():
    # [3, 1] squeezed at axis 5 used to squeeze axis 1 (5 % 2): a silent wrong value.
    tape = Tape()
    x = tape.input(np.zeros((3, 1)))
    with pytest.raises(topos.AxisError, match=r"axis 5 is out of range for \[3, 1\]"):
        x.squeeze(axis=5)
    with pytest.raises(topos.AxisError, match=r"axis -3 is out of range for \[3, 1\]"):
        topos.squeeze(x, -3)


AXIS_OPS = {
    # name: (topos function of (value, axis), numpy function of (array, axis), whether the axis is a new one)
    "squeeze": (lambda v, a: topos.squeeze(v, a), lambda x, a: np.squeeze(x, a), False),
    "expand_dims": (lambda v, a: topos.expand_dims(v, a), lambda x, a: np.expand_dims(x, a), True),
    "sum": (lambda v, a: topos.sum(v, a), lambda x, a: np.sum(x, a), False),
    "max": (lambda v, a: topos.max(v, a), lambda x, a: np.max(x, a), False),
    "min": (lambda v, a: topos.min(v, a), lambda x, a: np.min(x, a), False),
    "mean": (lambda v, a: topos.mean(v, a), lambda x, a: np.mean(x, a), False),
    "var": (lambda v, a: topos.var(v, a), lambda x, a: np.var(x, a), False),
    "softmax": (lambda v, a: topos.softmax(v, a), lambda x, a: x, False),
    "log_softmax": (lambda v, a: topos.log_softmax(v, a), lambda x, a: x, False),
    "logsumexp": (lambda v, a: topos.logsumexp(v, a), lambda x, a: np.sum(x, a), False),
    "layer_norm": (lambda v, a: topos.layer_norm(v, axis=a), lambda x, a: np.sum(x, a, keepdims=True) * x, False),
    "concatenate": (lambda v, a: topos.concatenate([v, v], a), lambda x, a: np.concatenate([x, x], a), False),
    "stack": (lambda v, a: topos.stack([v, v], a), lambda x, a: np.stack([x, x], a), True),
    "take": (lambda v, a: topos.take(v, [0], a), lambda x, a: np.take(x, [0], a), False),
    "swapaxes": (lambda v, a: topos.swapaxes(v, 0, a), lambda x, a: np.swapaxes(x, 0, a), False),
    "transpose": (
        lambda v, a: topos.transpose(v, (a,) + tuple(range(1, v.ndim))),
        lambda x, a: np.transpose(x, (a,) + tuple(range(1, x.ndim))),
        False,
    ),
}


@SETTINGS
@given(
    st.sampled_from(sorted(AXIS_OPS)), array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3), st.integers(-6, 6)
)
def test_every_op_taking_an_axis_refuses_one_out_of_range_and_agrees_with_numpy_inside(name, shape, axis):
    record, reference, new_axis = AXIS_OPS[name]
    rank = len(shape) + (1 if new_axis else 0)
    array = np.ones(shape)
    tape = Tape()
    value = tape.input(array)
    before = tape.describe()
    if not -rank <= axis < rank:
        with pytest.raises(topos.AxisError) as caught:
            record(value, axis)
        message = str(caught.value)
        assert f"axis {axis}" in message and "[" + ", ".join(map(str, shape)) + "]" in message, message
        assert caught.value.source[0] == __file__
        assert tape.describe() == before
        return
    try:
        expected = reference(array, axis)
    except ValueError:  # numpy's squeeze of an axis that is not 1 long
        with pytest.raises(topos.ShapeError, match="not 1"):
            record(value, axis)
        return
    assert record(value, axis).shape == np.shape(expected)


def test_a_repeated_or_non_integer_axis_is_a_shape_error():
    tape = Tape()
    x = tape.input(np.zeros((2, 3)))
    with pytest.raises(topos.ShapeError, match="repeated axis"):
        x.sum(axis=(1, -1))
    for bad in (1.5, "a", True):
        with pytest.raises(topos.AxisError, match="not an integer"):
            x.sum(axis=bad)
        with pytest.raises(topos.AxisError, match="not an integer"):
            x.squeeze(axis=bad)


# Record-time int32 range, step's network check, and no aliasing ------------------------------------------


def test_a_recorded_int32_value_out_of_range_is_refused_rather_than_wrapped():
    tape = Tape()
    with pytest.raises(topos.RecordingError, match=r"1099511627776\.\.1099511627776 do not fit int32"):
        tape.input(2**40, dtype="int32")
    for value in (2**31 - 1, -(2**31)):
        ids = tape.leaf([value], dtype="int32")
        assert ids.node.payload.tolist() == [value]


def test_parameters_step_refuses_gradients_of_another_network():
    network, (w, x, ids, total) = seed_network()
    other, (w2, x2, ids2, total2) = seed_network()
    parameters = network.parameters()
    foreign = other.forward(other.parameters(), {}).backward(total2).parameters()
    with pytest.raises(topos.FeedError, match="another network"):
        parameters.step(foreign, lambda w, g: w - g)
    # A reopened network's gradients are the same network's: they fit.
    own = network.forward(parameters, {}).backward(total).parameters()
    assert parameters.step(own, lambda w, g: w - g).of(w).numpy().tolist() == [-2.0, -2.0]


def test_a_parameters_table_never_aliases_an_array_the_caller_holds():
    network, (w, x, ids, total) = seed_network()
    parameters = network.parameters()
    gradients = network.forward(parameters, {}).backward(total).parameters()
    source = np.array([5.0, 6.0])
    tables = [
        parameters.step(gradients, lambda w, g: Tensor(source)),  # fn hands back a Tensor of its own array
        parameters.step(gradients, lambda w, g: source),
        parameters.replace({w.index: Tensor(source)}),
        topos.Parameters(network, {w.index: source}),
        topos.Parameters(network, {w.index: Tensor(source)}),
    ]
    source[:] = -1.0
    for table in tables:
        assert table.of(w).numpy().tolist() == [5.0, 6.0]
    # The table's own arrays pass from table to table without a copy.
    again = parameters.replace({w.index: parameters.of(w)})
    assert np.shares_memory(again.slots[w.index], parameters.slots[w.index])


def test_a_gradients_table_and_a_run_never_alias_an_array_the_caller_holds():
    network, (w, x, ids, total) = seed_network()
    fed = np.array([7.0, 8.0])
    run = network.forward(network.parameters(), {x: Tensor(fed)})
    gradient = np.array([1.0, 1.0])
    gradients = Gradients(network, {w.index: gradient})
    fed[:] = 0.0
    gradient[:] = 0.0
    assert run.of(x).numpy().tolist() == [7.0, 8.0] and run.of(total).scalar() == 23.0
    assert gradients.of(w).numpy().tolist() == [1.0, 1.0]
    for value in run.values():  # numpy scalars (a full reduction's) are immutable already
        assert isinstance(value, np.generic) or not value.flags.writeable


# Degenerate points, as PyTorch gives them --------------------------------------------------------------------


def test_logsumexp_of_rows_of_minus_infinity_matches_torch_forward_and_backward():
    rows = np.array([[-np.inf] * 3, [1.0, -np.inf, 2.0], [np.inf, 1.0, 2.0], [0.5, 1.5, -0.5]])
    network, (x, total, per_row) = Tape.record(
        lambda tape: (lambda x: [x, topos.logsumexp(x, -1).sum(), topos.logsumexp(x, -1)])(tape.parameter(rows))
    )
    run = network.forward(network.parameters(), {})
    gradient = run.backward(total).of(x).numpy()
    expected_x = torch.tensor(rows, requires_grad=True)
    expected = torch.logsumexp(expected_x, -1)
    expected.sum().backward()
    np.testing.assert_allclose(run.of(per_row).numpy(), expected.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(gradient, expected_x.grad.numpy(), rtol=1e-12, equal_nan=True)
    assert run.of(per_row).numpy()[0] == -np.inf  # not NaN: a fully masked row stays -inf
    # The plan and XLA read the same.
    plan = network.entry([per_row]).lower()
    assert np.array_equal(plan.run(network.parameters()).outputs()[0], run.of(per_row).numpy())
    np.testing.assert_allclose(run_plan(plan, network.parameters()).outputs()[0], run.of(per_row).numpy(), rtol=1e-12)


@pytest.mark.parametrize("exponent", [0.0, 1.0, 2.0, -1.0, 0.5])
def test_the_gradients_of_a_power_at_a_zero_base_match_torch(exponent):
    bases = np.array([0.0, 2.0, -1.0])
    exponents = np.full(3, exponent)
    network, (a, b, total) = Tape.record(
        lambda tape: (lambda a, b: [a, b, (a**b).sum()])(tape.parameter(bases), tape.parameter(exponents))
    )
    field = network.forward(network.parameters(), {}).backward(total)
    torch_a = torch.tensor(bases, requires_grad=True)
    torch_b = torch.tensor(exponents, requires_grad=True)
    (torch_a**torch_b).sum().backward()
    np.testing.assert_allclose(field.of(a).numpy(), torch_a.grad.numpy(), rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(field.of(b).numpy(), torch_b.grad.numpy(), rtol=1e-12, equal_nan=True)


def test_the_gradient_of_x_to_the_power_0_is_0_at_0():
    network, (x, total) = Tape.record(lambda tape: (lambda x: [x, (x**0.0).sum()])(tape.parameter([0.0, 3.0])))
    assert network.forward(network.parameters(), {}).backward(total).of(x).numpy().tolist() == [0.0, 0.0]
    plan = network.entry([total]).backward(total).lower()
    assert plan.run(network.parameters()).gradient(x).numpy().tolist() == [0.0, 0.0]


# Empty tensors: supported end to end -------------------------------------------------------------------------


def empty_programs():
    """(name, build(tape) -> ([parameters], loss), the loss as PyTorch computes it from the same payloads)."""

    def slice_nothing(tape):
        x = tape.parameter(np.ones((4, 3)))
        return [x], x[3:1:2, ::2].sum() + (x[1:1] * 2.0).sum() + x.sum()

    def join_an_empty_block(tape):
        x = tape.parameter(np.ones((2, 3)))
        empty = tape.parameter(np.zeros((0, 3)))
        return [x, empty], (topos.concatenate([x, empty, x], 0) ** 2.0).sum()

    def contract_nothing(tape):
        a, b = tape.parameter(np.zeros((2, 0))), tape.parameter(np.zeros((0, 3)))
        return [a, b], (a @ b + 1.0).sum()

    def reduce_empty_rows(tape):
        x = tape.parameter(np.zeros((2, 0)))
        return [x], topos.logsumexp(x, -1).sum() + x.max(axis=-1).sum() + x.sum()

    def mean_of_nothing(tape):
        x = tape.parameter(np.zeros((0, 4)))
        return [x], x.mean() + topos.softmax(x).sum() + topos.layer_norm(x).sum()

    def gather_nothing(tape):
        x = tape.parameter(np.ones((3, 2)))
        return [x], topos.take(x, tape.input(np.zeros(0), dtype="int32")).sum() + x.sum()

    def attend_to_nothing(tape):
        x = tape.parameter(np.zeros((3, 0, 2)))
        return [x], topos.attention(x, x, x).sum() + x.reshape(-1, 2).T.sum()

    return [
        ("slice_nothing", slice_nothing, lambda x: x[3:1:2, ::2].sum() + (x[1:1] * 2).sum() + x.sum()),
        ("join_an_empty_block", join_an_empty_block, lambda x, e: (torch.cat([x, e, x]) ** 2).sum()),
        ("contract_nothing", contract_nothing, lambda a, b: (a @ b + 1).sum()),
        (
            "reduce_empty_rows",
            reduce_empty_rows,
            lambda x: torch.logsumexp(x, -1).sum() + x.sum() + torch.full((2,), -math.inf, dtype=x.dtype).sum(),
        ),  # torch.amax refuses an empty axis; topos gives -inf
        ("mean_of_nothing", mean_of_nothing, lambda x: x.mean() + torch.softmax(x, -1).sum()),
        ("gather_nothing", gather_nothing, lambda x: x[torch.zeros(0, dtype=torch.long)].sum() + x.sum()),
        ("attend_to_nothing", attend_to_nothing, lambda x: x.sum()),
    ]


@pytest.mark.parametrize("name, build, torch_loss", empty_programs(), ids=[p[0] for p in empty_programs()])
def test_a_recording_with_an_empty_axis_runs_differentiates_lowers_and_runs_on_xla(name, build, torch_loss):
    network, (parameters, loss) = Tape.record(build)
    table = network.parameters()
    run = network.forward(table, {})
    field = run.backward(loss)
    tensors = [torch.tensor(np.asarray(table.of(p)), requires_grad=True) for p in parameters]
    expected = torch_loss(*tensors)
    expected.backward()
    np.testing.assert_allclose(run.of(loss).numpy(), expected.detach().numpy(), rtol=1e-12, equal_nan=True)
    for symbol, tensor in zip(parameters, tensors):
        gradient = field.of(symbol).numpy()
        assert gradient.shape == tuple(tensor.shape)
        if name != "attend_to_nothing" and name != "mean_of_nothing":  # torch's grad of a NaN loss is NaN there
            np.testing.assert_allclose(gradient, tensor.grad.numpy(), rtol=1e-12, equal_nan=True)

    plan = network.entry([loss]).backward(loss, parameters).lower()
    outputs = plan.run(table).outputs()
    for got, want in zip(outputs, [run.of(loss).numpy()] + [field.of(p).numpy() for p in parameters]):
        assert np.array_equal(got, want, equal_nan=True)
    assert "tensor<" in plan.emit_stablehlo()
    for got, want in zip(run_plan(plan, table, optimize=False).outputs(), outputs):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
    assert "kernels:" in plan.kernels().describe()


def test_an_empty_constant_is_emitted_as_mlirs_empty_literal():
    def build(tape):
        return [(tape.input(np.zeros((2, 3))) + tape.leaf(np.zeros((2, 0))).sum()).sum()]

    network, (total,) = Tape.record(build)
    text = network.entry([total]).lower().emit_stablehlo()
    assert "stablehlo.constant dense<> : tensor<2x0xf64>" in text
    assert run_plan(network.entry([total]).lower(), network.parameters()).outputs()[0] == 0.0


def test_an_entry_that_reads_nothing_is_refused_but_gradients_alone_are_fine():
    network, (w, x, ids, total) = seed_network()
    with pytest.raises(topos.ArgumentError, match="reads nothing"):
        network.entry([]).lower()
    with pytest.raises(topos.ArgumentError, match="reads nothing"):
        network.entry([]).backward(total, []).lower()
    plan = network.entry([]).backward(total).lower()
    assert plan.run(network.parameters()).gradient(w).numpy().tolist() == [3.0, 4.0]
    assert "peak" in plan.describe() and "at node None" not in plan.describe()


# Rules a primitive lacks --------------------------------------------------------------------------------------


def test_a_primitive_without_a_derivative_rule_raises_a_missing_rule_error_in_backward():
    @register
    class HardeningNoVjp(Primitive):
        name = "HardeningNoVjp"
        arity = 1

        def infer(self, metas, attrs):
            return metas[0]

        def forward(self, inputs, attrs):
            return inputs[0] * 2.0

    try:
        tape = Tape()
        x = tape.parameter([1.0, 2.0])
        total = tape.apply("HardeningNoVjp", [x]).sum()
        network = tape.seal()
        run = network.forward(network.parameters(), {})
        with pytest.raises(topos.MissingRuleError, match="HardeningNoVjp has no derivative rule"):
            run.backward(detach(total))
        with pytest.raises(topos.LoweringError, match="HardeningNoVjp"):
            network.entry([detach(total)]).lower().emit_stablehlo()
    finally:
        unregister("HardeningNoVjp")
