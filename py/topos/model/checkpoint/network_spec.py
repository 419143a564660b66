"""The network spec as versioned JSON: ``save_network`` writes it, ``read_network`` reads it back, checking every node.

See ``topos.model.checkpoint`` for the format; each node's attributes are held to its
primitive's declaration (``Primitive.attributes``, its kinds in ``topos.ops.attributes``).
"""

import base64
import json
import math
import re

import numpy as np

from ...dtypes import DTYPES, FLOAT_DTYPES
from ...errors import CheckpointError
from ...ops import lookup, primitives
from ...ops.attributes import is_whole
from ...ops.bodies import Region
from ...ops.registry import Meta, Primitive
from ...tensor import frozen
from ...text import format_shape
from ..nodes import Node
from .files import file_path, is_count, little_endian_bytes, read_file, write_atomically

NETWORK_FORMAT = "topos.network"
NETWORK_VERSION = 1


def encode_attr(value):
    """An attribute value as JSON, keeping tuples, dicts and non-finite floats distinguishable.

    A value of any other type raises ``CheckpointError``.
    """
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, tuple):
        return {"tuple": [encode_attr(v) for v in value]}
    if isinstance(value, list):
        return [encode_attr(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: encode_attr(v) for k, v in value.items()}}
    if isinstance(value, Region):
        return {"body": _encode_region(value)}
    raise CheckpointError(f"an attribute of type {type(value).__name__} cannot be saved")


def decode_attr(value):
    """The inverse of ``encode_attr``; raises ``CheckpointError`` on anything it would not write."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [decode_attr(v) for v in value]
    if isinstance(value, dict) and len(value) == 1:
        ((tag, body),) = value.items()
        if tag == "tuple" and isinstance(body, list):
            return tuple(decode_attr(v) for v in body)
        if tag == "dict" and isinstance(body, dict):
            return {k: decode_attr(v) for k, v in body.items()}
        if tag == "float" and body in ("nan", "inf", "-inf"):
            return float(body)
        if tag == "body" and isinstance(body, dict):
            return _decode_region(body)
    raise CheckpointError(f"unrecognised attribute encoding {value!r}")


def _encode_node(node, path):
    try:
        attrs = {key: encode_attr(value) for key, value in node.attrs.items()}
    except CheckpointError as error:
        raise CheckpointError(f"cannot write {path}: node {node.index} ({node.opcode}): {error}") from None
    payload = None
    if node.payload is not None:
        payload = base64.b64encode(little_endian_bytes(np.asarray(node.payload))).decode("ascii")
    entry = {
        "index": node.index,
        "opcode": node.opcode,
        "operands": list(node.operands),
        "shape": list(node.shape),
        "dtype": node.dtype,
        "attrs": attrs,
        "name": node.name,
        "source": list(node.source) if node.source is not None else None,
        "payload": payload,
    }
    # The calls it was recorded inside (the graph's groups, a derivative's "[grad of ...]" mark):
    # written only where there are some, so a network without them saves as it always has.
    if node.scope:
        entry["scope"] = list(node.scope)
    return entry


# Bodies (a loop's step: ``topos.ops.bodies.Region``) --------------------------------------------
#
# A body is written inside its node's attribute as a network is: its nodes, each entry checked
# on load as a network's are (against the body's earlier nodes), and the indices of its
# placeholders and outputs. A placeholder holds no payload worth keeping (zeros), so it is
# written without one and given zeros again on load.

_REGION_KEYS = ("nodes", "arguments", "captured", "outputs")


def _encode_region(region):
    placeholders = set(region.arguments + region.captured)
    entries = []
    for node in region.nodes:
        entry = _encode_node(node, "a body")
        if node.index in placeholders:
            entry["payload"] = None
        entries.append(entry)
    return {
        "nodes": entries,
        "arguments": list(region.arguments),
        "captured": list(region.captured),
        "outputs": list(region.outputs),
    }


def _decode_region(body):
    if sorted(body) != sorted(_REGION_KEYS):
        raise CheckpointError(f"a body holds exactly {', '.join(_REGION_KEYS)}, got {sorted(body)}")
    lists = [body[key] for key in _REGION_KEYS]
    if not all(isinstance(items, list) for items in lists) or not all(is_whole(i) for i in sum(lists[1:], [])):
        raise CheckpointError("a body's nodes, arguments, captured and outputs are lists (of indices)")
    placeholders = set(body["arguments"] + body["captured"])
    nodes = []
    for position, entry in enumerate(body["nodes"]):
        try:
            if position in placeholders and isinstance(entry, dict) and entry.get("payload") is None:
                entry = dict(entry, payload=_zeros_text(entry))
            nodes.append(_decode_node(position, entry, nodes))
        except (CheckpointError, ValueError, TypeError) as error:
            raise CheckpointError(f"body {_node_label(position, entry)}: {error}") from None
    for index in placeholders:
        if 0 <= index < len(nodes) and nodes[index].opcode == "Input":
            node = nodes[index]
            zeros = np.broadcast_to(np.zeros((), dtype=node.dtype), node.shape)
            nodes[index] = Node(index, "Input", (), node.shape, node.dtype, {}, payload=zeros, source=node.source)
    return Region(nodes, body["arguments"], body["captured"], body["outputs"])


def _zeros_text(entry):
    """The base64 of zeros of an entry's shape and dtype (a placeholder's payload, for ``_decode_node``'s checks)."""
    shape, dtype = entry.get("shape"), entry.get("dtype")
    if not (isinstance(shape, list) and all(is_count(d) for d in shape) and dtype in DTYPES):
        return None
    return base64.b64encode(np.zeros(math.prod(shape), dtype=np.dtype(dtype)).tobytes()).decode("ascii")


def save_network(network, path):
    """Write the network's spec as versioned JSON at ``path``, one node a line, atomically."""
    path = file_path(path, "save()")
    nodes = [json.dumps(_encode_node(node, path), allow_nan=False) for node in network.nodes()]
    head = json.dumps({"format": NETWORK_FORMAT, "version": NETWORK_VERSION, "dtype": network.dtype})
    text = head[:-1] + ', "nodes": [\n' + ",\n".join(nodes) + "\n]}\n"
    write_atomically(path, [text.encode("utf-8")])


#: How deeply a network document may nest arrays and objects. A saved network nests
#: six deep (document, node list, node, attributes, a tuple's tag and its list); a user
#: primitive's attributes may nest a few levels more. Anything deeper is refused before
#: it is parsed, so that neither the JSON parser nor ``decode_attr`` can run out of stack.
MAX_NESTING = 64

# A JSON string, escapes included (brackets inside strings do not nest anything).
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")


def _nesting_depth(text):
    """How deeply the arrays and objects of the JSON ``text`` nest, counted without parsing it."""
    brackets = _NOT_A_BRACKET.sub("", _JSON_STRING.sub("", text)).encode("ascii")
    if not brackets:
        return 0
    # The running sum of +1 per opening and -1 per closing bracket is the depth; numpy sums
    # it at once, where a Python loop would take a while over a large network's brackets.
    codes = np.frombuffer(brackets, dtype=np.uint8)
    steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1)
    return int(np.cumsum(steps).max())


def read_network(path):
    """Read a spec written by ``save_network``, checking every node; returns ``(dtype, nodes)``.

    ``Network.load`` seals them into a new network.
    """
    path, data = read_file(path, "network")

    def fail(cause):
        raise CheckpointError(f"cannot load network {path}: {cause}")

    def refuse_constant(name):
        fail(f'the file holds {name}, which is not JSON (a saved network writes {{"float": "{name.lower()}"}})')

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        fail(f"the file is not UTF-8 text ({error.reason} at byte {error.start})")
    if _nesting_depth(text) > MAX_NESTING:
        fail(f"the file nests arrays and objects more than {MAX_NESTING} deep, which no topos network does")
    try:
        document = json.loads(text, parse_constant=refuse_constant)
    except json.JSONDecodeError as error:
        fail(f"the file is not valid JSON ({error.msg} at line {error.lineno}, column {error.colno}; truncated?)")
    if not isinstance(document, dict) or document.get("format") != NETWORK_FORMAT:
        fail(f'the file is not a topos network (no "format": "{NETWORK_FORMAT}")')
    version = document.get("version")
    if not is_whole(version) or version < 1:
        fail(f"the version {version!r} is not a positive integer")
    if version > NETWORK_VERSION:
        fail(f"it is format version {version}, written by a newer topos; this topos reads version {NETWORK_VERSION}")
    dtype = document.get("dtype")
    if dtype not in FLOAT_DTYPES:
        fail(f"the network dtype {dtype!r} is not one of {', '.join(FLOAT_DTYPES)}")
    entries = document.get("nodes")
    if not isinstance(entries, list):
        fail('"nodes" is missing or not a list')
    nodes = []
    names = set()
    for position, entry in enumerate(entries):
        try:
            node = _decode_node(position, entry, nodes)
        except (CheckpointError, ValueError, TypeError) as error:
            # The entry's own fault (a CheckpointError naming it), or one no check foresaw: either way the file's.
            fail(f"{_node_label(position, entry)}: {error}")
        if node.opcode == "Parameter":
            if node.name in names:
                fail(f"node {position} (Parameter): a second parameter named {node.name!r}")
            names.add(node.name)
        nodes.append(node)
    return dtype, nodes


def _node_label(position, entry):
    """``node 7 (Sum)`` for an error message; the opcode only where the entry has one."""
    opcode = entry.get("opcode") if isinstance(entry, dict) else None
    return f"node {position} ({opcode})" if isinstance(opcode, str) else f"node {position}"


_NODE_KEYS = ("index", "opcode", "operands", "shape", "dtype", "attrs", "name", "source", "payload")


def _decode_node(position, entry, earlier):
    """One node from its JSON entry, checked against the nodes before it.

    Raises ``CheckpointError`` naming what is wrong with the entry; ``read_network``
    adds the file and the node to the message.
    """
    if not isinstance(entry, dict):
        raise CheckpointError("the entry is not an object")
    missing = [key for key in _NODE_KEYS if key not in entry]
    if missing:
        raise CheckpointError(f"the entry has no {', '.join(repr(k) for k in missing)}")
    if not is_count(entry["index"]) or entry["index"] != position:
        raise CheckpointError(f"the entry says index {entry['index']!r}")
    opcode = entry["opcode"]
    if not isinstance(opcode, str):
        raise CheckpointError(f"malformed opcode {opcode!r}")
    try:
        primitive = lookup(opcode)
    except KeyError as error:
        raise CheckpointError(error.args[0]) from None
    shape, dtype = entry["shape"], entry["dtype"]
    if not isinstance(shape, list) or not all(is_count(d) for d in shape):
        raise CheckpointError(f"malformed shape {shape!r}")
    if dtype not in DTYPES:
        raise CheckpointError(f"unsupported dtype {dtype!r}")
    operands = entry["operands"]
    if not isinstance(operands, list) or not all(is_count(i) and i < position for i in operands):
        raise CheckpointError(f"operands {operands!r} must name earlier nodes")
    if not isinstance(entry["attrs"], dict):
        raise CheckpointError("attrs is not an object")
    attrs = {}
    for key, value in entry["attrs"].items():
        try:
            attrs[key] = decode_attr(value)
        except CheckpointError as error:
            raise CheckpointError(f"attribute {key!r}: {error}") from None
    name = entry["name"]
    if name is not None and not isinstance(name, str):
        raise CheckpointError(f"malformed name {name!r}")
    source = entry["source"]
    if source is not None:
        if not (isinstance(source, list) and len(source) == 2 and isinstance(source[0], str) and is_count(source[1])):
            raise CheckpointError(f"malformed source {source!r}")
        source = (source[0], source[1])
    shape = tuple(shape)
    scope = entry.get("scope", [])
    if not (isinstance(scope, list) and all(isinstance(call, str) for call in scope)):
        raise CheckpointError(f"malformed scope {scope!r}")
    scope = tuple(scope)

    if primitive.is_source:
        if operands or attrs:
            raise CheckpointError(f"a {opcode} has no operands or attributes")
        if opcode == "Parameter" and name is None:
            raise CheckpointError("a parameter needs a name")
        payload = _decode_payload(entry["payload"], shape, dtype)
        return Node(position, opcode, (), shape, dtype, {}, payload=payload, name=name, source=source, scope=scope)

    if entry["payload"] is not None:
        raise CheckpointError(f"a {opcode} node has no payload")
    # Re-derive the node's meta from its operands: a file edited by hand or corrupted
    # in a way JSON does not notice must not give a network whose shapes lie.
    if primitive.arity is not None and len(operands) != primitive.arity:
        raise CheckpointError(f"{opcode} takes {primitive.arity} operands, the entry has {len(operands)}")
    metas = [earlier[i].meta for i in operands]
    attrs = _checked_attributes(primitive, metas, attrs)
    try:
        inferred = primitive.infer(metas, attrs)
    except Exception as error:  # noqa: BLE001  (any rule failure means the entry is inconsistent)
        raise CheckpointError(
            f"{opcode} does not accept operands {format_shape(operands)} with {_attribute_names(attrs)} ({error})"
        ) from None
    if inferred != Meta(shape, dtype):
        raise CheckpointError(
            f"{opcode} gives {format_shape(inferred.shape)} {inferred.dtype}, "
            f"the entry says {format_shape(shape)} {dtype}"
        )
    return Node(position, opcode, operands, shape, dtype, attrs, name=name, source=source, scope=scope)


# Attributes at load time ----------------------------------------------------------------------
#
# Recording keeps what a primitive's ``normalize`` returns, so the attributes of every
# recorded node are already in normal form: ``normalize`` gives them back unchanged,
# types included (a tuple stays a tuple, ``True`` is not the axis 1). Loading holds
# every node to that, and first to the attributes its primitive declares
# (``Primitive.attributes``: their names and kinds), for an error that says what was expected.


def is_builtin(primitive):
    """Whether topos defines ``primitive`` (in ``topos.ops``), rather than a user who registered it."""
    return type(primitive).__module__.startswith(Primitive.__module__.rpartition(".")[0] + ".")


def declared_attributes(primitive):
    """The attributes ``primitive`` takes, each name with its kind; None where it does not declare them.

    A built-in primitive that declares none takes none; a user's is held to its ``normalize`` alone.
    """
    if primitive.attributes is None and is_builtin(primitive):
        return {}
    return primitive.attributes


#: Each built-in primitive that takes attributes, with their kinds (as each declares them).
BUILTIN_ATTRIBUTES = {
    name: primitive.attributes
    for name, primitive in primitives().items()
    if is_builtin(primitive) and primitive.attributes
}


def _checked_attributes(primitive, metas, attrs):
    """The node's attributes once they are exactly what recording gives, or ``CheckpointError`` naming the attribute.

    ``attrs`` are the decoded attributes of a file's entry and ``metas`` its operands'
    metas. Returns what the primitive's ``normalize`` returns (equal to ``attrs``).
    """
    opcode = primitive.name
    expected = declared_attributes(primitive)
    if expected is not None:
        for key in attrs:
            if key not in expected:
                raise CheckpointError(f"attribute {key!r}: {opcode} has no attribute of that name")
        for key, check in expected.items():
            if key not in attrs:
                raise CheckpointError(f"attribute {key!r} is missing")
            problem = check(attrs[key], metas)
            if problem:
                raise CheckpointError(f"attribute {key!r}: {problem}; the file has {attrs[key]!r}")
    try:
        normal = primitive.normalize(metas, dict(attrs))
    except KeyError as error:
        raise CheckpointError(f"attribute {error.args[0]!r} is missing") from None
    except Exception as error:  # noqa: BLE001  (a user's normalize may raise anything)
        raise CheckpointError(f"{opcode} does not accept {_attribute_names(attrs)} ({error})") from None
    if not isinstance(normal, dict):
        raise CheckpointError(f"{opcode}'s normalize returned {type(normal).__name__}, not a dict of attributes")
    for key in [*attrs, *(key for key in normal if key not in attrs)]:
        if key not in normal:
            raise CheckpointError(f"attribute {key!r}: {opcode} has no attribute of that name")
        if key not in attrs:
            raise CheckpointError(f"attribute {key!r} is missing (recording gives {normal[key]!r})")
        if not _same_attribute(attrs[key], normal[key]):
            raise CheckpointError(
                f"attribute {key!r}: the file has {attrs[key]!r}, where recording gives {normal[key]!r}"
            )
    return normal


def _same_attribute(first, second):
    """Whether two attribute values are the same value of the same types (1 is not True, 1.0 or (1,))."""
    try:
        return json.dumps(encode_attr(first), sort_keys=True) == json.dumps(encode_attr(second), sort_keys=True)
    except CheckpointError:
        return False


def _attribute_names(attrs):
    if not attrs:
        return "no attributes"
    names = ", ".join(repr(key) for key in attrs)
    return f"attribute {names}" if len(attrs) == 1 else f"attributes {names}"


def _decode_payload(text, shape, dtype):
    if not isinstance(text, str):
        raise CheckpointError("a source node needs its payload (base64 text)")
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise CheckpointError("the payload is not valid base64") from None
    numpy_dtype = np.dtype(dtype)
    expected = math.prod(shape) * numpy_dtype.itemsize
    if len(raw) != expected:
        raise CheckpointError(f"the payload has {len(raw)} bytes, {dtype} {format_shape(shape)} needs {expected}")
    array = np.frombuffer(raw, dtype=numpy_dtype.newbyteorder("<")).reshape(shape)
    return frozen(array.astype(numpy_dtype, copy=False))
