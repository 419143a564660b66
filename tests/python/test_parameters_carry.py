"""Parameters that move between recordings (issue 14, part 2).

A model records at one batch size; to evaluate it at another it is recorded
again, and ``other.adopt(parameters)`` carries the trained table across by
parameter name. ``parameters.replace`` takes symbols and names as keys, and
``Tape.record`` takes a builder that returns a dict of named values.
"""

import json

import numpy as np
import pytest

import topos
from topos import ArgumentTypeError, FeedError, Parameters, Symbol, Tape, detach, playground


def record_model(batch, dtype="float64", hidden=3):
    """A linear layer and a squared error over ``batch`` rows; returns (network, named symbols)."""

    def build(tape):
        x = tape.input(np.zeros((batch, 2)), name="x")
        weight = tape.parameter(np.zeros((2, hidden)), name="weight")
        bias = tape.parameter(np.zeros(hidden), name="bias")
        out = x @ weight + bias
        return {"x": x, "weight": weight, "bias": bias, "out": out, "loss": (out * out).sum()}

    return Tape.record(build, dtype=dtype)


TRAINED_WEIGHT = np.arange(6.0).reshape(2, 3) / 10.0
TRAINED_BIAS = np.array([1.0, -1.0, 0.5])


def trained(network, values):
    return network.parameters().replace({values["weight"]: TRAINED_WEIGHT, "bias": TRAINED_BIAS})


# replace: symbols, names and indices ----------------------------------------------------------


def test_replace_takes_a_symbol_a_value_a_name_or_an_index():
    network, values = record_model(batch=4)
    weight = values["weight"]
    by_symbol = network.parameters().replace({weight: TRAINED_WEIGHT})
    by_name = network.parameters().replace({"weight": TRAINED_WEIGHT})
    by_index = network.parameters().replace({network.index_of(weight): TRAINED_WEIGHT})
    for table in (by_symbol, by_name, by_index):
        np.testing.assert_array_equal(table.of(weight).numpy(), TRAINED_WEIGHT)
        np.testing.assert_array_equal(table.of(values["bias"]).numpy(), np.zeros(3))


def test_replace_by_the_default_name_of_an_unnamed_parameter():
    network, w = Tape.record(lambda tape: tape.parameter(1.0))
    assert network.parameters().replace({"p0": 4.0}).of(w).scalar() == 4.0


def test_replace_by_a_value_of_the_recording_tape():
    tape = Tape()
    w = tape.parameter([1.0, 2.0], name="w")
    network = tape.seal()
    table = network.parameters().replace({w: [3.0, 4.0]})
    np.testing.assert_array_equal(table.of(w).numpy(), [3.0, 4.0])


def test_replace_refuses_an_unknown_name_a_non_parameter_and_a_parameter_named_twice():
    network, values = record_model(batch=4)
    parameters = network.parameters()
    with pytest.raises(FeedError, match="this network has no parameter named 'wieght'"):
        parameters.replace({"wieght": TRAINED_WEIGHT})
    with pytest.raises(FeedError, match="is not a parameter"):
        parameters.replace({values["x"]: np.ones((4, 2))})
    with pytest.raises(FeedError, match="names .*weight.* twice"):
        parameters.replace({"weight": TRAINED_WEIGHT, values["weight"]: TRAINED_WEIGHT})
    other, other_values = record_model(batch=4)
    with pytest.raises(FeedError, match="belongs to another network"):
        parameters.replace({other_values["weight"]: TRAINED_WEIGHT})
    with pytest.raises(FeedError, match="does not match"):
        parameters.replace({"bias": np.zeros(4)})
    # Nothing changed: the table is a value.
    np.testing.assert_array_equal(parameters.of(values["weight"]).numpy(), np.zeros((2, 3)))


# adopt: a table carried to another recording ---------------------------------------------------


def test_a_trained_table_evaluates_at_another_batch_size():
    network, values = record_model(batch=4)
    parameters = trained(network, values)
    other, other_values = record_model(batch=7)
    adopted = other.adopt(parameters)
    assert isinstance(adopted, Parameters) and adopted.network is other
    assert adopted.names() == ["weight", "bias"]
    rows = np.linspace(-1.0, 1.0, 14).reshape(7, 2)
    run = other.forward(adopted, {other_values["x"]: rows})
    expected = rows @ TRAINED_WEIGHT + TRAINED_BIAS
    np.testing.assert_allclose(run.of(other_values["out"]).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(run.of(other_values["loss"]).scalar(), np.sum(expected**2), rtol=1e-12)
    # The table it came from still belongs to the first network alone.
    with pytest.raises(FeedError, match="another network"):
        other.forward(parameters, {})


def test_adopt_casts_to_the_dtype_of_the_network_that_adopts():
    network, values = record_model(batch=4)
    parameters = trained(network, values)
    other, other_values = record_model(batch=2, dtype="float32")
    adopted = other.adopt(parameters)
    assert adopted.of(other_values["weight"]).dtype == "float32"
    np.testing.assert_allclose(adopted.of(other_values["weight"]).numpy(), TRAINED_WEIGHT, rtol=1e-7)


def test_adopt_names_every_missing_extra_and_mis_shaped_parameter_in_one_message():
    network, values = record_model(batch=4, hidden=3)

    def build(tape):
        x = tape.input(np.zeros((2, 2)), name="x")
        weight = tape.parameter(np.zeros((2, 5)), name="weight")  # mis-shaped: 5 columns, not 3
        scale = tape.parameter(np.ones(5), name="scale")  # missing from the table
        return (x @ weight * scale).sum()

    other, _ = Tape.record(build)
    with pytest.raises(FeedError) as caught:
        other.adopt(network.parameters())
    message = str(caught.value)
    assert message.startswith("cannot adopt these parameters into this network: ")
    assert "parameter 'weight' has shape [2, 3] in the table, [2, 5] in this network" in message
    assert "parameter 'scale' (node 2) is missing from the table" in message
    assert "the table's parameter 'bias' matches no parameter of this network" in message


def test_adopt_refuses_a_dtype_that_cannot_be_cast_and_what_is_not_a_table():
    ids, _ = Tape.record(lambda tape: tape.parameter([1, 2], name="ids", dtype="int32"))
    floats, _ = Tape.record(lambda tape: tape.parameter([1.5, 2.5], name="ids"))
    with pytest.raises(FeedError, match="parameter 'ids' is float64 in the table, int32 in this network"):
        ids.adopt(floats.parameters())
    with pytest.raises(ArgumentTypeError, match="adopt\\(\\) takes a Parameters table, got dict"):
        ids.adopt({"ids": [3, 4]})


# Tape.record and detach: a dict of named values --------------------------------------------------


def test_record_returns_a_dict_of_symbols_with_the_same_keys_in_the_same_order():
    network, values = record_model(batch=4)
    assert list(values) == ["x", "weight", "bias", "out", "loss"]
    assert all(isinstance(symbol, Symbol) for symbol in values.values())
    assert [network.node(values[key]).opcode for key in ("x", "weight", "loss")] == ["Input", "Parameter", "Sum"]


def test_detach_mirrors_nested_dicts_lists_and_none():
    tape = Tape()
    a, b = tape.input(1.0), tape.input(2.0)
    detached = detach({"pair": [a, b], "inner": {"b": b}, "none": None})
    assert list(detached) == ["pair", "inner", "none"]
    assert detached["pair"] == [detach(a), detach(b)] and detached["inner"] == {"b": detach(b)}
    assert detached["none"] is None
    with pytest.raises(topos.ArgumentTypeError, match="str"):
        detach({"name": "not a value"})


def test_the_playground_reads_a_returned_dict_in_its_order_less_sources():
    code = (
        "from topos import Tape\n"
        "def build(t):\n"
        "    w = t.parameter([1.0, 2.0])\n"
        "    h = w * 2.0\n"
        "    return {'total': h.sum(), 'w': w, 'doubled': h}\n"
        "network, named = Tape.record(build)\n"
    )
    result = json.loads(playground.run(code))
    assert result["error"] is None
    readables = result["recording"]["readables"]
    assert [result["nodes"][i]["opcode"] for i in readables] == ["Sum", "Mul"]
    assert "2 readable" in result["readings"]["plan"]["text"]
