"""Checkpoints: safetensors parameters (against the safetensors library), network JSON, atomic writes."""

import json
import math
import os

import numpy as np
import pytest
import safetensors.numpy

import topos
from topos import CheckpointError, Network, Tape
from topos.model import checkpoint


def build_model(dtype="float64", seed=0):
    """A small model whose nodes carry many kinds of attributes (tuples, ints, bools, strings)."""
    rng = np.random.default_rng(seed)

    def build(tape):
        embed = tape.parameter(rng.normal(size=(5, 4)), name="embed")
        weight = tape.parameter(rng.normal(size=(4, 3)), name="w")
        bias = tape.parameter(rng.normal(size=3))  # default name p2
        ids = tape.input([0, 3, 1], dtype="int32", name="ids")
        targets = tape.input([2, 0, 1], dtype="int32")
        hidden = topos.layer_norm(topos.take(embed, ids))
        logits = hidden @ weight + bias
        window = logits.T.reshape(9)[1:7]
        loss = topos.cross_entropy(logits, targets) + (window * window).sum() * 0.01
        return [embed, weight, bias, ids, loss]

    return Tape.record(build, dtype=dtype)


def listing(directory):
    return sorted(os.listdir(directory))


# Parameters as safetensors ------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_parameters_round_trip_bit_exactly(tmp_path, dtype):
    network, symbols = build_model(dtype)
    parameters = network.parameters().replace({0: np.full((5, 4), np.pi), 2: [np.nan, -0.0, np.inf]})
    path = tmp_path / "model.safetensors"
    parameters.save(path)
    loaded = network.load_parameters(path)
    assert loaded.names() == ["embed", "w", "p2"]
    for index, array in parameters.slots.items():
        assert loaded.slots[index].dtype == np.dtype(dtype)
        assert loaded.slots[index].tobytes() == array.tobytes()
    loss = symbols[-1]
    assert network.forward(loaded).of(loss).numpy().tobytes() == network.forward(parameters).of(loss).numpy().tobytes()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_safetensors_library_reads_our_files_bit_exactly(tmp_path, dtype):
    network, _ = build_model(dtype)
    parameters = network.parameters()
    path = tmp_path / "ours.safetensors"
    parameters.save(path)
    theirs = safetensors.numpy.load_file(str(path))
    assert sorted(theirs) == ["embed", "p2", "w"]
    for name, tensor in parameters.items():
        assert theirs[name].dtype == np.dtype(dtype)
        assert theirs[name].shape == tensor.shape
        assert theirs[name].tobytes() == tensor.numpy().tobytes()
    with safetensors.safe_open(str(path), framework="numpy") as opened:
        assert opened.metadata() == {"format": "topos"}


def test_our_header_is_padded_to_eight_bytes_with_spaces(tmp_path):
    network, _ = build_model()
    path = tmp_path / "ours.safetensors"
    network.parameters().save(path)
    data = path.read_bytes()
    length = int.from_bytes(data[:8], "little")
    assert length % 8 == 0
    header = data[8 : 8 + length].decode("utf-8")
    assert json.loads(header)["w"] == {"dtype": "F64", "shape": [4, 3], "data_offsets": [160, 256]}
    stripped = header.rstrip(" ")
    assert stripped.endswith("}") and len(header) - len(stripped) < 8


def test_we_read_files_the_safetensors_library_wrote(tmp_path):
    network, (embed, weight, bias, _, _) = build_model("float32")
    rng = np.random.default_rng(7)
    arrays = {"embed": rng.normal(size=(5, 4)), "w": rng.normal(size=(4, 3)), "p2": rng.normal(size=3)}
    arrays = {name: a.astype(np.float32) for name, a in arrays.items()}
    path = tmp_path / "theirs.safetensors"
    safetensors.numpy.save_file(arrays, str(path), metadata={"note": "written by the library"})
    loaded = network.load_parameters(path)
    for symbol, name in [(embed, "embed"), (weight, "w"), (bias, "p2")]:
        assert loaded.of(symbol).numpy().tobytes() == arrays[name].tobytes()
        assert not loaded.of(symbol).numpy().flags.writeable


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda a: a.pop("w"), r"parameter 'w' \(node 1\) is missing"),
        (lambda a: a.update(extra=np.zeros(2)), r"tensor 'extra' matches no parameter"),
        (lambda a: a.update(w=np.zeros((3, 4))), r"'w' has shape \[3, 4\], the network's parameter has \[4, 3\]"),
        (lambda a: a.update(p2=np.zeros(3, np.float32)), r"tensor 'p2' is F32, the network's parameter is F64"),
        (lambda a: a.update(p2=np.zeros(3, np.int64)), r"tensor 'p2' is I64"),
    ],
)
def test_mismatched_checkpoints_are_refused_naming_the_tensor(tmp_path, change, expected):
    network, _ = build_model()
    arrays = {name: np.array(t) for name, t in network.parameters().items()}
    change(arrays)
    path = tmp_path / "mismatch.safetensors"
    safetensors.numpy.save_file(arrays, str(path))
    with pytest.raises(CheckpointError, match=expected) as caught:
        network.load_parameters(path)
    assert str(path) in str(caught.value)


def write_raw(path, header, data, length=None):
    """A safetensors file from a header (dict or raw bytes) and data bytes, faults included."""
    encoded = header if isinstance(header, bytes) else json.dumps(header).encode()
    length = len(encoded) if length is None else length
    path.write_bytes(length.to_bytes(8, "little") + encoded + data)
    return path


def good_header_and_data():
    network, _ = build_model()
    header, data = {}, b""
    for name, tensor in network.parameters().items():
        raw = tensor.numpy().tobytes()
        header[name] = {"dtype": "F64", "shape": list(tensor.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    return network, header, data


def _with(header, name, **changes):
    changed = json.loads(json.dumps(header))
    changed[name].update(changes)
    return changed


CORRUPTIONS = {
    "empty file": (lambda h, d: b"", "too few for the 8-byte header length"),
    "cut in the length": (lambda h, d: (64).to_bytes(8, "little")[:5], "too few"),
    "cut in the header": (lambda h, d: (400).to_bytes(8, "little") + json.dumps(h).encode()[:100], "truncated"),
    "huge header length": (lambda h, d: (2**60).to_bytes(8, "little") + b"{}", "larger than"),
    "bad JSON": (lambda h, d: b"{'w': 1}", "not valid JSON"),
    "not UTF-8": (lambda h, d: b'{"\xff": 1}', "not UTF-8"),
    "a JSON list": (lambda h, d: b"[1, 2]", "not an object"),
    "duplicate name": (lambda h, d: b'{"w": {}, "w": {}}', "names 'w' twice"),
    "deep nesting": (lambda h, d: b"[" * 100000 + b"]" * 100000, "nests too deeply"),
    "no dtype": (lambda h, d: {"w": {"shape": [4, 3], "data_offsets": [0, 96]}}, "has no 'dtype'"),
    "unknown dtype": (lambda h, d: _with(h, "w", dtype="F99"), "unknown dtype 'F99'"),
    "negative extent": (lambda h, d: _with(h, "w", shape=[-4, 3]), "malformed shape"),
    "offsets reversed": (lambda h, d: _with(h, "w", data_offsets=[256, 160]), "end before they begin"),
    "offsets with a gap": (lambda h, d: _with(h, "w", data_offsets=[168, 264]), "wrong data_offsets"),
    "offsets overlapping": (lambda h, d: _with(h, "w", data_offsets=[152, 248]), "wrong data_offsets"),
    "size too small for shape": (lambda h, d: _with(h, "w", shape=[4, 4]), "needs 128"),
    "trailing bytes": (lambda h, d: (h, d + b"\0" * 8), "size mismatch"),
    "data cut short": (lambda h, d: (h, d[:-3]), "size mismatch"),
    "bad metadata": (lambda h, d: dict(h, __metadata__={"k": 3}), "__metadata__"),
}


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_corrupted_safetensors_raise_checkpoint_error_with_path_and_cause(tmp_path, case):
    network, header, data = good_header_and_data()
    make, expected = CORRUPTIONS[case]
    made = make(header, data)
    path = tmp_path / "corrupt.safetensors"
    if isinstance(made, tuple):
        write_raw(path, made[0], made[1])
    elif isinstance(made, dict):
        write_raw(path, made, data)
    elif made.startswith((b"{", b"[")):
        write_raw(path, made, b"")
    else:
        path.write_bytes(made)
    with pytest.raises(CheckpointError, match=expected) as caught:
        network.load_parameters(path)
    assert str(path) in str(caught.value)


def test_the_corruption_fixture_is_itself_a_good_file(tmp_path):
    network, header, data = good_header_and_data()
    loaded = network.load_parameters(write_raw(tmp_path / "good.safetensors", header, data))
    assert [name for name, _ in loaded.items()] == ["embed", "w", "p2"]


def test_a_missing_file_raises_checkpoint_error(tmp_path):
    network, _ = build_model()
    with pytest.raises(CheckpointError, match="cannot read checkpoint .*nowhere.safetensors"):
        network.load_parameters(tmp_path / "nowhere.safetensors")
    with pytest.raises(CheckpointError, match="cannot write"):
        network.parameters().save(tmp_path / "no-such-directory" / "x.safetensors")
    assert listing(tmp_path) == []


# Atomic writes ---------------------------------------------------------------------------


def _old_checkpoint(tmp_path):
    network, _ = build_model()
    path = tmp_path / "model.safetensors"
    network.parameters().save(path)
    return network, path, path.read_bytes()


def test_a_crash_in_the_middle_of_writing_leaves_the_old_file(tmp_path, monkeypatch):
    network, path, old = _old_checkpoint(tmp_path)
    before = listing(tmp_path)
    calls = []
    real = checkpoint._little_endian_bytes

    def crash_on_second_tensor(array):
        calls.append(array.shape)
        if len(calls) == 2:
            raise RuntimeError("simulated crash while writing")
        return real(array)

    monkeypatch.setattr(checkpoint, "_little_endian_bytes", crash_on_second_tensor)
    changed = network.parameters().replace({0: np.zeros((5, 4))})
    with pytest.raises(RuntimeError, match="simulated crash"):
        changed.save(path)
    assert len(calls) == 2  # the header and the first tensor were already written to the temporary file
    assert path.read_bytes() == old
    assert listing(tmp_path) == before


@pytest.mark.parametrize("failing", ["fsync", "replace", "write"])
def test_a_failing_system_call_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch, failing):
    network, path, old = _old_checkpoint(tmp_path)
    before = listing(tmp_path)

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    if failing == "write":
        real_fdopen = os.fdopen

        class FailingFile:
            def __init__(self, file):
                self.file = file

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.file.close()

            def write(self, chunk):
                self.file.write(chunk[: len(chunk) // 2])
                fail()

        monkeypatch.setattr(os, "fdopen", lambda *a, **k: FailingFile(real_fdopen(*a, **k)))
    else:
        monkeypatch.setattr(os, failing, fail)
    with pytest.raises(CheckpointError, match="cannot write .*model.safetensors.*No space left"):
        network.parameters().replace({0: np.ones((5, 4))}).save(path)
    monkeypatch.undo()
    assert path.read_bytes() == old
    assert listing(tmp_path) == before
    assert network.load_parameters(path).slots[0].tobytes() == network.parameters().slots[0].tobytes()


def test_a_crash_while_saving_a_network_leaves_the_old_spec(tmp_path, monkeypatch):
    network, _ = build_model()
    path = tmp_path / "model.json"
    network.save(path)
    old = path.read_bytes()
    other, _ = build_model(seed=5)
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(5, "Input/output error")))
    with pytest.raises(CheckpointError, match="Input/output error"):
        other.save(path)
    assert path.read_bytes() == old
    assert listing(tmp_path) == ["model.json"]


def test_saving_replaces_an_existing_file_with_the_umask_mode(tmp_path):
    network, path, _ = _old_checkpoint(tmp_path)
    newer = network.parameters().replace({1: np.full((4, 3), 2.5)})
    newer.save(path)
    assert network.load_parameters(path).slots[1].tobytes() == newer.slots[1].tobytes()
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask
    assert listing(tmp_path) == ["model.safetensors"]


# Networks as JSON --------------------------------------------------------------------------


def assert_same_attrs(a, b):
    """Equal values of the same types all the way down (a tuple must not come back a list)."""
    assert type(a) is type(b), (a, b)
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same_attrs(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            assert_same_attrs(a[key], b[key])
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    else:
        assert a == b


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_saved_network_loads_identically(tmp_path, dtype):
    network, (embed, weight, bias, ids, loss) = build_model(dtype)
    path = tmp_path / "model.json"
    network.save(path)
    loaded = Network.load(path)
    assert isinstance(loaded, Network)
    assert loaded.dtype == network.dtype
    assert loaded.describe() == network.describe()
    assert any(isinstance(v, tuple) for n in loaded.nodes() for v in n.attrs.values())
    for old, new in zip(network.nodes(), loaded.nodes(), strict=True):
        assert (new.index, new.opcode, new.operands, new.shape, new.dtype) == (
            old.index,
            old.opcode,
            old.operands,
            old.shape,
            old.dtype,
        )
        assert (new.name, new.source) == (old.name, old.source)
        assert_same_attrs(old.attrs, new.attrs)
        if old.payload is not None:
            assert new.payload.dtype == old.payload.dtype and new.payload.tobytes() == old.payload.tobytes()
    # Forward and backward give the same bits; symbols of the loaded network come from it by index.
    feeds_old, feeds_new = {ids: [4, 4, 2]}, {loaded.symbol(ids.index): [4, 4, 2]}
    run_old = network.forward(network.parameters(), feeds_old)
    run_new = loaded.forward(loaded.parameters(), feeds_new)
    for index in range(len(network)):
        assert run_new.values()[index].tobytes() == run_old.values()[index].tobytes()
    grads_old = run_old.backward(loss).parameters()
    grads_new = run_new.backward(loaded.symbol(loss.index)).parameters()
    for index in grads_old.slots:
        assert grads_new.slots[index].tobytes() == grads_old.slots[index].tobytes()
    # A parameters checkpoint of the original network loads into the reloaded one.
    network.parameters().save(tmp_path / "p.safetensors")
    assert loaded.load_parameters(tmp_path / "p.safetensors").names() == ["embed", "w", "p2"]


def test_the_spec_is_versioned_json_with_base64_payloads(tmp_path):
    network, _ = build_model()
    path = tmp_path / "model.json"
    network.save(path)
    document = json.loads(path.read_text())
    assert (document["format"], document["version"], document["dtype"]) == ("topos.network", 1, "float64")
    assert len(document["nodes"]) == len(network)
    first = document["nodes"][0]
    # "scope" (the calls a node was recorded inside) is written only where a node has one.
    keys = {"index", "opcode", "operands", "shape", "dtype", "attrs", "name", "source", "payload"}
    for entry, node in zip(document["nodes"], network.nodes()):
        assert set(entry) == keys | ({"scope"} if node.scope else set())
        assert entry.get("scope", []) == list(node.scope)
    assert [node.scope for node in Network.load(path).nodes()] == [node.scope for node in network.nodes()]
    import base64

    payload = np.frombuffer(base64.b64decode(first["payload"]), dtype="<f8").reshape(first["shape"])
    np.testing.assert_array_equal(payload, network.nodes()[0].payload)
    assert all(n["payload"] is None for n in document["nodes"] if n["opcode"] not in ("Parameter", "Input", "Leaf"))


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -3,
        1.5,
        1e-300,
        "float32",
        (),
        (1,),
        (0, (2, 3)),
        [1, (2,)],
        {"a": (1,), "b": [None]},
        float("nan"),
        float("inf"),
        -float("inf"),
        {"tuple": [1]},
    ],
)
def test_attributes_round_trip_with_their_types(value):
    encoded = json.loads(json.dumps(checkpoint.encode_attr(value), allow_nan=False))
    assert_same_attrs(checkpoint.decode_attr(encoded), value)


def _edit_saved(tmp_path, edit):
    network, _ = build_model()
    path = tmp_path / "model.json"
    network.save(path)
    document = json.loads(path.read_text())
    edit(document)
    path.write_text(json.dumps(document))
    return path


def _node(document, opcode):
    return next(n for n in document["nodes"] if n["opcode"] == opcode)


SPEC_CORRUPTIONS = {
    "future version": (lambda d: d.update(version=2), "format version 2, written by a newer topos"),
    "version zero": (lambda d: d.update(version=0), "not a positive integer"),
    "wrong format": (lambda d: d.update(format="onnx"), "not a topos network"),
    "bad dtype": (lambda d: d.update(dtype="float16"), "network dtype 'float16'"),
    "unknown opcode": (lambda d: _node(d, "MatMul").update(opcode="Frobnicate"), "no primitive named 'Frobnicate'"),
    "operand ahead": (lambda d: _node(d, "MatMul").update(operands=[0, 99]), "must name earlier nodes"),
    "lying shape": (lambda d: _node(d, "MatMul").update(shape=[3, 4]), r"MatMul gives \[3, 3\] float64"),
    "bad attrs": (lambda d: _node(d, "Reshape").update(attrs={"shape": {"set": [9]}}), "unrecognised attribute"),
    "short payload": (lambda d: d["nodes"][0].update(payload="AAAA"), "payload has 3 bytes"),
    "not base64": (lambda d: d["nodes"][0].update(payload="%%%"), "not valid base64"),
    "missing key": (lambda d: d["nodes"][1].pop("source"), "has no 'source'"),
    "duplicate parameter": (lambda d: d["nodes"][1].update(name="embed"), "second parameter named 'embed'"),
}


@pytest.mark.parametrize("case", sorted(SPEC_CORRUPTIONS))
def test_corrupted_or_future_specs_are_refused(tmp_path, case):
    edit, expected = SPEC_CORRUPTIONS[case]
    path = _edit_saved(tmp_path, edit)
    with pytest.raises(CheckpointError, match=expected) as caught:
        Network.load(path)
    assert str(path) in str(caught.value)


def test_a_truncated_spec_is_refused(tmp_path):
    network, _ = build_model()
    path = tmp_path / "model.json"
    network.save(path)
    text = path.read_bytes()
    path.write_bytes(text[: len(text) // 2])
    with pytest.raises(CheckpointError, match="not valid JSON.*truncated"):
        Network.load(path)
    with pytest.raises(CheckpointError, match="cannot read network"):
        Network.load(tmp_path / "absent.json")
