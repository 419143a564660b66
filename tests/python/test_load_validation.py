"""A network file that loads, runs: ``Network.load`` holds every attribute of every node
to what recording gives, and refuses anything else with ``CheckpointError`` naming the
node and the attribute, so that a damaged file never fails later inside numpy.

The damaged files are one-field edits of networks saved from the gallery (the
character transformer, recorded small) and of a small network with the primitives
the gallery does not record (Pad, Concatenate, ScatterAdd). A derandomised
hypothesis search edits random fields: every file it makes either is refused at
load or gives a network whose forward runs.
"""

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_plan_gallery import EXAMPLES, example, load_example

import topos
from topos import CheckpointError, Network, Tape
from topos.model import checkpoint
from topos.ops import attributes as kinds
from topos.ops import primitives
from topos.ops.registry import Meta, Primitive, register, unregister

TRANSFORMER = next(path for path in EXAMPLES if path.name == "06_char_transformer.py")


def small_transformer():
    """The gallery's transformer, recorded with small sizes (the same nodes, fewer numbers)."""
    namespace = load_example(TRANSFORMER)
    config = namespace["Config"](batch=2, context=4, embed=8, heads=2, layers=1, mlp=2)
    network, _ = Tape.record(lambda tape: namespace["build"](tape, config), dtype="float32")
    return network


def moving_network():
    """Pad, Concatenate and ScatterAdd, which the gallery does not record."""

    def build(tape):
        x = tape.parameter(np.arange(6.0).reshape(2, 3), name="x")
        ids = tape.input([1, 0, 1], dtype="int32", name="ids")
        padded = tape.apply("Pad", [x], low=(1, 0), high=(0, 2), interior=(0, 1))
        joined = topos.concatenate([padded, padded], axis=1)
        scattered = tape.apply("ScatterAdd", [joined[:, 0:3].T, ids], axis=0, extent=4)
        return [x, ids, scattered.sum()]

    network, _ = Tape.record(build)
    return network


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The saved documents, by name (each test edits its own copy)."""
    directory = tmp_path_factory.mktemp("saved")
    documents = {}
    for name, network in (("transformer", small_transformer()), ("moving", moving_network())):
        path = directory / f"{name}.json"
        network.save(path)
        documents[name] = json.loads(path.read_text())
    return documents


def first(document, opcode):
    return next(node for node in document["nodes"] if node["opcode"] == opcode)


def set_attr(opcode, key, value):
    def edit(document):
        first(document, opcode)["attrs"][key] = value

    return edit


def drop_attr(opcode, key):
    def edit(document):
        del first(document, opcode)["attrs"][key]

    return edit


def as_list(opcode, key):
    def edit(document):
        attrs = first(document, opcode)["attrs"]
        attrs[key] = attrs[key]["tuple"]

    return edit


def tuple_with(opcode, key, position, value):
    def edit(document):
        items = first(document, opcode)["attrs"][key]["tuple"]
        items[position] = value

    return edit


# name: (saved document, edit, opcode of the damaged node, the attribute the error must name)
DAMAGES = {
    "reduction axes as a list": ("transformer", as_list("Sum", "axes"), "Sum", "axes"),
    "reduction axis past the rank": ("transformer", set_attr("Sum", "axes", {"tuple": [7]}), "Sum", "axes"),
    "reduction axis counted from the end": ("transformer", set_attr("Max", "axes", {"tuple": [-1]}), "Max", "axes"),
    "reduction axis true": ("transformer", set_attr("Sum", "axes", {"tuple": [True]}), "Sum", "axes"),
    "reduction axes repeated": ("transformer", set_attr("Sum", "axes", {"tuple": [1, 1]}), "Sum", "axes"),
    "keepdims [true]": ("transformer", set_attr("Sum", "keepdims", [True]), "Sum", "keepdims"),
    "keepdims 1": ("transformer", set_attr("Max", "keepdims", 1), "Max", "keepdims"),
    "axes missing": ("transformer", drop_attr("Sum", "axes"), "Sum", "axes"),
    "an attribute too many": ("transformer", set_attr("Sum", "scale", 2), "Sum", "scale"),
    "elementwise with an attribute": ("transformer", set_attr("Gelu", "approximate", True), "Gelu", "approximate"),
    "reshape shape as a list": ("transformer", as_list("Reshape", "shape"), "Reshape", "shape"),
    "reshape shape with -1": ("transformer", tuple_with("Reshape", "shape", 0, -1), "Reshape", "shape"),
    "reshape shape with true": ("transformer", tuple_with("Reshape", "shape", 0, True), "Reshape", "shape"),
    "reshape to another size": ("transformer", tuple_with("Reshape", "shape", 0, 3), "Reshape", "shape"),
    "broadcast shape as text": ("transformer", set_attr("Broadcast", "shape", "[8]"), "Broadcast", "shape"),
    "transpose axes repeated": ("transformer", tuple_with("Transpose", "axes", 1, 0), "Transpose", "axes"),
    "transpose axis 7": ("transformer", tuple_with("Transpose", "axes", 3, 7), "Transpose", "axes"),
    "transpose axes as a list": ("transformer", as_list("Transpose", "axes"), "Transpose", "axes"),
    "slice start short": ("transformer", set_attr("Slice", "start", {"tuple": [0]}), "Slice", "start"),
    "slice stop past the end": ("transformer", tuple_with("Slice", "stop", 1, 999), "Slice", "stop"),
    "slice step zero": ("transformer", tuple_with("Slice", "step", 0, 0), "Slice", "step"),
    "slice step float": ("transformer", tuple_with("Slice", "step", 0, 1.0), "Slice", "step"),
    "take axis 7": ("transformer", set_attr("Take", "axis", 7), "Take", "axis"),
    "take axis true": ("transformer", set_attr("Take", "axis", True), "Take", "axis"),
    "take axis as text": ("transformer", set_attr("Take", "axis", "0"), "Take", "axis"),
    "take axis [0]": ("transformer", set_attr("Take", "axis", [0]), "Take", "axis"),
    "one-hot depth zero": ("transformer", set_attr("OneHot", "depth", 0), "OneHot", "depth"),
    "one-hot depth true": ("transformer", set_attr("OneHot", "depth", True), "OneHot", "depth"),
    "one-hot dtype float16": ("transformer", set_attr("OneHot", "dtype", "float16"), "OneHot", "dtype"),
    "pad low negative": ("moving", tuple_with("Pad", "low", 0, -1), "Pad", "low"),
    "pad interior for one axis": ("moving", set_attr("Pad", "interior", {"tuple": [1]}), "Pad", "interior"),
    "concatenate axis 2 of a matrix": ("moving", set_attr("Concatenate", "axis", 2), "Concatenate", "axis"),
    "concatenate axis 1.0": ("moving", set_attr("Concatenate", "axis", 1.0), "Concatenate", "axis"),
    "scatter axis past the updates": ("moving", set_attr("ScatterAdd", "axis", 5), "ScatterAdd", "axis"),
    "scatter extent negative": ("moving", set_attr("ScatterAdd", "extent", -1), "ScatterAdd", "extent"),
    "undecodable attribute": ("moving", set_attr("Pad", "low", {"set": [1]}), "Pad", "low"),
}


@pytest.mark.parametrize("case", sorted(DAMAGES))
def test_a_damaged_attribute_is_refused_at_load_naming_the_node_and_the_attribute(saved, tmp_path, case):
    name, edit, opcode, attribute = DAMAGES[case]
    document = copy.deepcopy(saved[name])
    edit(document)
    index = first(document, opcode)["index"]
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(document))
    with pytest.raises(CheckpointError) as caught:
        Network.load(path)
    message = str(caught.value)
    assert message.startswith(f"cannot load network {path}: node {index} ({opcode}): "), message
    assert f"'{attribute}'" in message.split(f"node {index} ({opcode}): ", 1)[1], message


@pytest.mark.parametrize("name", ["transformer", "moving"])
def test_the_undamaged_files_load_and_run_as_saved(saved, tmp_path, name):
    path = tmp_path / "good.json"
    path.write_text(json.dumps(saved[name]))
    loaded = Network.load(path)
    assert [checkpoint._encode_node(node, path) for node in loaded.nodes()] == saved[name]["nodes"]
    loaded.forward(loaded.parameters(), {})


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_every_gallery_network_loads_back_and_computes_the_same(tmp_path, path):
    network, readables, _, feeds = example(path, "float64")
    network.save(tmp_path / "network.json")
    loaded = Network.load(tmp_path / "network.json")
    assert loaded.describe() == network.describe()
    run = network.forward(network.parameters(), feeds)
    loaded_run = loaded.forward(loaded.parameters(), {loaded.symbol(s.index): v for s, v in feeds.items()})
    for symbol in readables:
        loaded_value = loaded_run.of(loaded.symbol(symbol.index)).numpy()
        np.testing.assert_allclose(loaded_value, run.of(symbol).numpy(), rtol=1e-12)


def test_every_built_in_primitive_with_attributes_has_its_checks():
    """A primitive that normalises attributes takes some: loading must know their kinds. One that
    declares attributes and keeps them as given (``Cond``, ``While``) takes only bodies: a ``Region``
    is its own normal form, which ``kinds.body`` checks whole; any other kind needs a ``normalize``
    (a number from a file, a list for a tuple) for loading to hold a file to what recording gives."""
    for name, primitive in primitives().items():
        if checkpoint.is_builtin(primitive):
            normalises = type(primitive).normalize is not Primitive.normalize
            declared = checkpoint.BUILTIN_ATTRIBUTES.get(name, {})
            if normalises:
                assert declared, f"{name} normalises attributes it does not declare"
            else:
                assert set(declared.values()) <= {kinds.body}, f"{name} keeps {sorted(declared)} as given"


class Clip(Primitive):
    """A user's primitive with float attributes: loading holds it to its own normalize alone."""

    name = "TestLoadClip"
    arity = 1

    def normalize(self, metas, attrs):
        return {"low": float(attrs["low"]), "high": float(attrs["high"])}

    def infer(self, metas, attrs):
        if not attrs["low"] <= attrs["high"]:
            self.fail("low is above high", metas)
        return Meta(metas[0].shape, metas[0].dtype)

    def forward(self, inputs, attrs):
        return np.clip(inputs[0], attrs["low"], attrs["high"])

    def vjp(self, e, g, operands, out, attrs):
        return [g]

    def stablehlo(self, ctx, node):
        raise NotImplementedError


@pytest.fixture
def clip_registered():
    register(Clip)
    yield
    unregister(Clip.name)


@pytest.mark.parametrize(
    "value, expected",
    [
        (-1.0, None),
        (float("-inf"), None),
        (-1, "attribute 'low': the file has -1, where recording gives -1.0"),
        (True, "attribute 'low': the file has True, where recording gives 1.0"),
        ({"tuple": [0.0]}, r"TestLoadClip does not accept attributes 'low', 'high' \(float\(\) argument"),
        (2.0, r"TestLoadClip does not accept operands \[0\] with attributes 'low', 'high' .*low is above high"),
    ],
)
def test_a_users_primitive_is_held_to_its_own_normalize(tmp_path, clip_registered, value, expected):
    network, _ = Tape.record(lambda tape: [tape.apply(Clip.name, [tape.parameter([0.5, 3.0])], low=0.0, high=1.0)])
    path = tmp_path / "clip.json"
    network.save(path)
    document = json.loads(path.read_text())
    document["nodes"][1]["attrs"]["low"] = checkpoint.encode_attr(value) if isinstance(value, float) else value
    path.write_text(json.dumps(document, allow_nan=False))
    if expected is None:
        loaded = Network.load(path)
        assert loaded.nodes()[1].attrs == {"low": value, "high": 1.0}
        loaded.forward(loaded.parameters(), {})
        return
    with pytest.raises(CheckpointError, match=rf"node 1 \({Clip.name}\): {expected}"):
        Network.load(path)


class Repeat(Primitive):
    """A user's primitive that declares its attribute's kind: loading holds it to that declaration too."""

    name = "TestLoadRepeat"
    arity = 1
    attributes = {"times": kinds.positive}

    def normalize(self, metas, attrs):
        return {"times": attrs["times"]}

    def infer(self, metas, attrs):
        return metas[0]

    def forward(self, inputs, attrs):
        return inputs[0] * attrs["times"]

    def vjp(self, e, g, operands, out, attrs):
        return [g]

    def stablehlo(self, ctx, node):
        raise NotImplementedError


@pytest.mark.parametrize("times, expected", [(3, None), (0, "expected a positive integer; the file has 0")])
def test_a_users_primitive_is_held_to_the_attributes_it_declares(tmp_path, times, expected):
    register(Repeat)
    try:
        network, _ = Tape.record(lambda tape: [tape.apply(Repeat.name, [tape.parameter([0.5, 3.0])], times=2)])
        path = tmp_path / "repeat.json"
        network.save(path)
        document = json.loads(path.read_text())
        document["nodes"][1]["attrs"]["times"] = times
        path.write_text(json.dumps(document))
        if expected is None:
            assert Network.load(path).nodes()[1].attrs == {"times": 3}
            return
        with pytest.raises(CheckpointError, match=rf"node 1 \({Repeat.name}\): attribute 'times': {expected}"):
            Network.load(path)
    finally:
        unregister(Repeat.name)


def nested(depth):
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [65, 10_000, 1_000_000])
def test_deeply_nested_json_is_refused_before_parsing(tmp_path, depth):
    path = tmp_path / "deep.json"
    path.write_text('{"format": "topos.network", "version": 1, "dtype": "float64", "nodes": ' + nested(depth) + "}")
    with pytest.raises(CheckpointError, match="nests arrays and objects more than 64 deep"):
        Network.load(path)


def test_deep_attributes_are_refused_and_brackets_in_strings_do_not_count(saved, tmp_path):
    document = copy.deepcopy(saved["moving"])
    # 900 levels: JSON parses them, and decoding them recursed past Python's limit.
    first(document, "Pad")["attrs"]["low"] = json.loads(nested(900))
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(document))
    with pytest.raises(CheckpointError, match="more than 64 deep"):
        Network.load(path)
    document = copy.deepcopy(saved["moving"])
    document["nodes"][0]["name"] = "[" * 100 + '\\"{'
    path.write_text(json.dumps(document))
    assert Network.load(path).nodes()[0].name == document["nodes"][0]["name"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("[1, 2]", "not a topos network"),
        ('"topos.network"', "not a topos network"),
        ("null", "not a topos network"),
        ('{"format": "topos.network", "version": true, "dtype": "float64", "nodes": []}', "version True"),
        ('{"format": "topos.network", "version": 1, "dtype": ["float64"], "nodes": []}', "network dtype"),
        ('{"format": "topos.network", "version": 1, "dtype": "float64", "nodes": {}}', '"nodes" is missing'),
        ('{"format": "topos.network", "version": 1, "dtype": "float64", "nodes": [NaN]}', "holds NaN"),
        ('{"format": "topos.network", "version": 1, "dtype": "float64", "nodes": [7]}', "node 0: the entry is not"),
    ],
)
def test_documents_of_the_wrong_shape_are_refused(tmp_path, text, expected):
    path = tmp_path / "wrong.json"
    path.write_text(text)
    with pytest.raises(CheckpointError, match=expected):
        Network.load(path)


@pytest.mark.parametrize(
    "field, value, expected",
    [
        ("index", True, "index True"),
        ("operands", [True], "must name earlier nodes"),
        ("shape", [True, 3], "malformed shape"),
        ("source", ["main.py", True], "malformed source"),
        ("opcode", ["Pad"], "malformed opcode"),
    ],
)
def test_bools_are_not_integers_anywhere_in_a_node(saved, tmp_path, field, value, expected):
    document = copy.deepcopy(saved["moving"])
    document["nodes"][1][field] = value
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(document))
    with pytest.raises(CheckpointError, match=f"node 1.*{expected}"):
        Network.load(path)


# A derandomised search over one-field edits ----------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 40)
    | st.floats(-4, 40)
    | st.sampled_from(["float32", "float64", "int32", "bool", "Sum", "Add", "Pad", "nan", ""]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.fixed_dictionaries({"tuple": st.lists(inner, max_size=4)})
        | st.dictionaries(st.sampled_from(["tuple", "dict", "float", "axes", "shape"]), inner, max_size=2)
    ),
    max_leaves=8,
)
NODE_FIELDS = ["index", "opcode", "operands", "shape", "dtype", "attrs", "name", "source", "payload"]


def near(value, data):
    """A value close to ``value``: one number in it moved a little, or turned into a bool or a list."""
    if isinstance(value, dict) and set(value) == {"tuple"} and value["tuple"]:
        items = list(value["tuple"])
        position = data.draw(st.integers(0, len(items) - 1))
        items[position] = near(items[position], data)
        return data.draw(st.sampled_from([{"tuple": items}, items]))
    if isinstance(value, list) and value:
        items = list(value)
        position = data.draw(st.integers(0, len(items) - 1))
        items[position] = near(items[position], data)
        return items
    if isinstance(value, bool):
        return data.draw(st.sampled_from([not value, int(value), [value]]))
    if isinstance(value, int):
        return data.draw(st.integers(-2, 8) | st.just(float(value)) | st.just(value == 1))
    return data.draw(JSON_VALUES)


@settings(max_examples=100, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_an_edited_file_is_refused_or_runs(saved, tmp_path_factory, data):
    name = data.draw(st.sampled_from(["transformer", "moving"]), label="network")
    document = copy.deepcopy(saved[name])
    nodes = document["nodes"]
    target = data.draw(st.sampled_from(["attribute"] * 4 + ["node"] * 2 + ["document"]), label="what")
    if target == "attribute":
        node = data.draw(st.sampled_from([n for n in nodes if n["attrs"]]), label="node")
        key = data.draw(st.sampled_from(sorted(node["attrs"])), label="attribute")
        node["attrs"][key] = near(node["attrs"][key], data)
    elif target == "node":
        node = nodes[data.draw(st.integers(0, len(nodes) - 1), label="node")]
        field = data.draw(st.sampled_from(NODE_FIELDS), label="field")
        node[field] = near(node[field], data) if data.draw(st.booleans()) else data.draw(JSON_VALUES)
    else:
        field = data.draw(st.sampled_from(["format", "version", "dtype", "nodes"]), label="field")
        document[field] = data.draw(JSON_VALUES)
    path = Path(tmp_path_factory.getbasetemp()) / f"edited-{name}.json"
    path.write_text(json.dumps(document, allow_nan=False))
    try:
        loaded = Network.load(path)
    except CheckpointError:
        return
    loaded.forward(loaded.parameters(), {})
