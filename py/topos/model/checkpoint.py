"""Checkpoints: parameters as safetensors files, networks as versioned JSON.

Both formats are written here with the standard library and numpy alone (no
``safetensors`` at run time), and every write is atomic: the bytes go to a
temporary file in the target's directory, are flushed and fsynced, and only
then replace the target with ``os.replace``. A failure at any point leaves the
old file as it was and removes the temporary file.

The formats know nodes, not networks: ``network.save``, ``parameters.save``,
``Network.load`` and ``network.load_parameters`` (``topos.model.network``,
which builds on this module) call the functions here and make the network or
the table from what they read.

Reading checks everything before it hands anything back: a truncated,
corrupted or mismatched file raises ``CheckpointError`` naming the path and the
cause, and nothing is loaded.

The safetensors layout (https://github.com/huggingface/safetensors): an 8-byte
little-endian header length N, N bytes of JSON (``{name: {"dtype", "shape",
"data_offsets": [begin, end]}, "__metadata__": {str: str}}``, padded with
spaces so that the data starts 8-byte aligned, as the library writes it), then
the tensors' little-endian bytes, back to back, offsets counted from the end
of the header.

The network JSON (``"format": "topos.network"``, ``"version": 1``) lists every
node with its opcode, operands, shape, dtype, attributes, name, source line and,
for sources, the payload as base64 of its little-endian bytes. Attributes keep
their Python types: JSON has no tuples, so a tuple is written ``{"tuple": [...]}``
(a list stays a JSON array), a dict ``{"dict": {...}}`` and a non-finite float
``{"float": "nan"}``; numpy scalars are written as the Python numbers they equal.

Loading a network trusts nothing in the file: every node's attributes must be
exactly what recording gives (the primitive's own ``normalize`` returns them
unchanged, and a built-in primitive's attributes have the kinds and ranges listed
in ``BUILTIN_ATTRIBUTES``), its shape rule must accept them, and a document nested
deeper than ``MAX_NESTING`` is refused before it is parsed. A loaded network
therefore runs: a damaged file fails at load with ``CheckpointError`` naming the
node and the attribute, never later inside numpy.
"""

import base64
import json
import math
import os
import re

import numpy as np

from ..dtypes import DTYPES, FLOAT_DTYPES
from ..errors import CheckpointError
from ..ops import lookup
from ..ops.registry import Meta, Primitive
from ..tensor import frozen
from ..text import format_shape
from .nodes import Node

# Atomic writes ---------------------------------------------------------------------


def write_atomically(path, chunks):
    """Write the byte strings of ``chunks`` to ``path`` so that readers see the old file or the new, never part.

    ``chunks`` may be a generator: the data is produced while it is written. An
    ``OSError`` becomes a ``CheckpointError``; any other exception propagates as
    it is. Either way the temporary file is gone and the old file untouched.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    temporary, descriptor = _create_temporary(path, directory)
    try:
        with os.fdopen(descriptor, "wb") as file:
            for chunk in chunks:
                file.write(chunk)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        _remove_quietly(temporary)
        if isinstance(error, OSError):
            raise CheckpointError(f"cannot write {path}: {error}") from error
        raise
    _sync_directory(directory)


def _create_temporary(path, directory):
    """A new hidden file beside ``path``; created with ``O_EXCL`` so it is ours alone, and with the umask's mode."""
    base = os.path.basename(path)
    for _ in range(100):
        temporary = os.path.join(directory, f".{base}.{os.urandom(6).hex()}.tmp")
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        except FileExistsError:
            continue
        except OSError as error:
            raise CheckpointError(f"cannot write {path}: {error}") from error
        return temporary, descriptor
    raise CheckpointError(f"cannot write {path}: no free temporary file name in {directory}")


def _remove_quietly(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _sync_directory(directory):
    """Make the rename durable where the platform allows it (POSIX); elsewhere this is a no-op."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _read_file(path, what):
    path = os.fspath(path)
    try:
        with open(path, "rb") as file:
            return path, file.read()
    except OSError as error:
        raise CheckpointError(f"cannot read {what} {path}: {error}") from error


# safetensors --------------------------------------------------------------------------

SAFETENSORS_DTYPES = {"float32": "F32", "float64": "F64", "int32": "I32"}
#: Element sizes of the safetensors dtypes we can recognise (for offset checks and clear errors).
SAFETENSORS_SIZES = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "F8_E5M2": 1,
    "F8_E4M3": 1,
    "I16": 2,
    "U16": 2,
    "F16": 2,
    "BF16": 2,
    "I32": 4,
    "U32": 4,
    "F32": 4,
    "I64": 8,
    "U64": 8,
    "F64": 8,
}
#: The library refuses headers larger than this; so do we (a corrupted length must not allocate gigabytes).
MAX_HEADER_BYTES = 100_000_000


def _little_endian_bytes(array):
    """The array's elements in C order as little-endian bytes."""
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()


def save_parameters(parameters, path):
    """Write ``parameters`` as a safetensors file at ``path``, one tensor per parameter, atomically."""
    nodes = parameters.network.nodes()
    header = {"__metadata__": {"format": "topos"}}
    entries = []
    offset = 0
    for index, array in parameters.slots.items():
        name = nodes[index].name
        if name == "__metadata__":
            raise CheckpointError(
                f"cannot write {os.fspath(path)}: the name '__metadata__' is reserved, rename parameter {index}"
            )
        size = array.size * array.dtype.itemsize
        header[name] = {
            "dtype": SAFETENSORS_DTYPES[array.dtype.name],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + size],
        }
        entries.append(array)
        offset += size
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)

    def chunks():
        yield len(encoded).to_bytes(8, "little")
        yield encoded
        for array in entries:
            yield _little_endian_bytes(array)

    write_atomically(path, chunks())


def read_safetensors(path):
    """Read and validate a safetensors file: returns ``(tensors, metadata)``, tensors a dict name -> array.

    Every structural fault raises ``CheckpointError`` naming the path and the
    fault, before any tensor is returned. Tensors of dtypes topos does not
    record are returned as ``(dtype, shape)`` descriptions instead of arrays,
    so that the caller can name them in its error.
    """
    path, data = _read_file(path, "checkpoint")

    def fail(cause):
        raise CheckpointError(f"cannot load checkpoint {path}: {cause}")

    if len(data) < 8:
        fail(f"the file has {len(data)} bytes, too few for the 8-byte header length (truncated?)")
    header_length = int.from_bytes(data[:8], "little")
    if header_length > MAX_HEADER_BYTES:
        fail(f"the header length {header_length} is larger than the {MAX_HEADER_BYTES} bytes allowed (corrupted?)")
    if 8 + header_length > len(data):
        fail(f"the header claims {header_length} bytes but only {len(data) - 8} follow the length (truncated?)")
    header = _parse_header(data[8 : 8 + header_length], fail)
    buffer = memoryview(data)[8 + header_length :]

    metadata = header.pop("__metadata__", None)
    if metadata is not None and (
        not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values())
    ):
        fail("__metadata__ must map strings to strings")
    described = {name: _tensor_info(name, info, fail) for name, info in header.items()}

    # The tensors must tile the data buffer exactly, in offset order, as the library checks.
    position = 0
    for name, (dtype, shape, begin, end) in sorted(described.items(), key=lambda item: item[1][2:]):
        if begin != position:
            fail(f"tensor {name!r} starts at byte {begin}, expected {position} (wrong data_offsets)")
        expected = math.prod(shape) * SAFETENSORS_SIZES[dtype]
        if end - begin != expected:
            fail(f"tensor {name!r} has {end - begin} bytes of data, but {dtype} {format_shape(shape)} needs {expected}")
        position = end
    if position != len(buffer):
        fail(f"the tensors cover {position} bytes of data, the file has {len(buffer)} (size mismatch)")

    tensors = {}
    for name, (dtype, shape, begin, end) in described.items():
        numpy_dtype = next((np.dtype(k) for k, v in SAFETENSORS_DTYPES.items() if v == dtype), None)
        if numpy_dtype is None:
            tensors[name] = (dtype, shape)
            continue
        array = np.frombuffer(buffer[begin:end], dtype=numpy_dtype.newbyteorder("<")).reshape(shape)
        tensors[name] = frozen(array.astype(numpy_dtype, copy=False))
    return tensors, metadata or {}


def _parse_header(raw, fail):
    def unique_keys(pairs):
        result = {}
        for key, value in pairs:
            if key in result:
                fail(f"the header names {key!r} twice")
            result[key] = value
        return result

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        fail(f"the header is not UTF-8 text ({error.reason} at byte {error.start})")
    try:
        header = json.loads(text, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as error:
        fail(f"the header is not valid JSON ({error.msg} at character {error.pos})")
    except RecursionError:
        fail("the header nests too deeply to be a safetensors header")
    if not isinstance(header, dict):
        fail(f"the header is a JSON {type(header).__name__}, not an object")
    return header


def _is_whole(value):
    """An int that is not a bool: JSON's ``true`` is not the number 1 in a topos file."""
    return isinstance(value, int) and not isinstance(value, bool)


def _is_count(value):
    return _is_whole(value) and value >= 0


def _tensor_info(name, info, fail):
    """(dtype, shape, begin, end) of one header entry, each checked."""
    if not isinstance(info, dict):
        fail(f"the header entry of tensor {name!r} is not an object")
    for key in ("dtype", "shape", "data_offsets"):
        if key not in info:
            fail(f"the header entry of tensor {name!r} has no {key!r}")
    dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if dtype not in SAFETENSORS_SIZES:
        fail(f"tensor {name!r} has an unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
        fail(f"tensor {name!r} has a malformed shape {shape!r}")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_count(o) for o in offsets):
        fail(f"tensor {name!r} has malformed data_offsets {offsets!r}")
    if offsets[1] < offsets[0]:
        fail(f"tensor {name!r} has data_offsets {offsets!r} that end before they begin")
    return dtype, tuple(shape), offsets[0], offsets[1]


def read_parameters(network, path):
    """Read a safetensors file for ``network``'s parameters, checking names, shapes and dtypes.

    Returns ``{parameter node index: array}``, the slots of a ``Parameters`` table
    (``network.load_parameters`` makes the table).
    """
    tensors, _ = read_safetensors(path)
    path = os.fspath(path)
    nodes = network.nodes()
    expected = {nodes[s.index].name: nodes[s.index] for s in network.parameter_symbols()}
    problems = []
    for name, node in expected.items():
        if name not in tensors:
            problems.append(f"parameter {name!r} (node {node.index}) is missing from the file")
            continue
        tensor = tensors[name]
        dtype, shape = (
            (tensor[0], tensor[1])
            if isinstance(tensor, tuple)
            else (SAFETENSORS_DTYPES[tensor.dtype.name], tensor.shape)
        )
        wanted = SAFETENSORS_DTYPES[node.dtype]
        if dtype != wanted:
            problems.append(f"tensor {name!r} is {dtype}, the network's parameter is {wanted} ({node.dtype})")
        if tuple(shape) != node.shape:
            problems.append(
                f"tensor {name!r} has shape {format_shape(shape)}, "
                f"the network's parameter has {format_shape(node.shape)}"
            )
    for name in tensors:
        if name not in expected:
            problems.append(f"tensor {name!r} matches no parameter of the network")
    if problems:
        raise CheckpointError(f"cannot load checkpoint {path} into this network: " + "; ".join(problems))
    return {node.index: tensors[name] for name, node in expected.items()}


# The network spec as JSON ------------------------------------------------------------------

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
    raise CheckpointError(f"unrecognised attribute encoding {value!r}")


def _encode_node(node, path):
    try:
        attrs = {key: encode_attr(value) for key, value in node.attrs.items()}
    except CheckpointError as error:
        raise CheckpointError(f"cannot write {path}: node {node.index} ({node.opcode}): {error}") from None
    payload = None
    if node.payload is not None:
        payload = base64.b64encode(_little_endian_bytes(np.asarray(node.payload))).decode("ascii")
    return {
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


def save_network(network, path):
    """Write the network's spec as versioned JSON at ``path``, one node a line, atomically."""
    path = os.fspath(path)
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
    path, data = _read_file(path, "network")

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
    if not _is_whole(version) or version < 1:
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
    if not _is_count(entry["index"]) or entry["index"] != position:
        raise CheckpointError(f"the entry says index {entry['index']!r}")
    opcode = entry["opcode"]
    if not isinstance(opcode, str):
        raise CheckpointError(f"malformed opcode {opcode!r}")
    try:
        primitive = lookup(opcode)
    except KeyError as error:
        raise CheckpointError(error.args[0]) from None
    shape, dtype = entry["shape"], entry["dtype"]
    if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
        raise CheckpointError(f"malformed shape {shape!r}")
    if dtype not in DTYPES:
        raise CheckpointError(f"unsupported dtype {dtype!r}")
    operands = entry["operands"]
    if not isinstance(operands, list) or not all(_is_count(i) and i < position for i in operands):
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
        if not (isinstance(source, list) and len(source) == 2 and isinstance(source[0], str) and _is_count(source[1])):
            raise CheckpointError(f"malformed source {source!r}")
        source = (source[0], source[1])
    shape = tuple(shape)

    if primitive.is_source:
        if operands or attrs:
            raise CheckpointError(f"a {opcode} has no operands or attributes")
        if opcode == "Parameter" and name is None:
            raise CheckpointError("a parameter needs a name")
        payload = _decode_payload(entry["payload"], shape, dtype)
        return Node(position, opcode, (), shape, dtype, {}, payload=payload, name=name, source=source)

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
    return Node(position, opcode, operands, shape, dtype, attrs, name=name, source=source)


# Attributes at load time ----------------------------------------------------------------------
#
# Recording keeps what a primitive's ``normalize`` returns, so the attributes of every
# recorded node are already in normal form: ``normalize`` gives them back unchanged,
# types included (a tuple stays a tuple, ``True`` is not the axis 1). Loading holds
# every node to that, and holds the built-in primitives to the kinds and ranges below
# first, for an error that says what was expected. (These checks belong beside each
# primitive's rules in ``topos.ops``; until the primitives declare them, they are here.)


def _axes_text(meta):
    return f"{format_shape(meta.shape)} (rank {meta.rank})"


def _flag(value, metas):
    if not isinstance(value, bool):
        return "expected true or false"
    return None


def _extents(value, metas):
    if not (isinstance(value, tuple) and all(_is_whole(v) and v >= 0 for v in value)):
        return "expected a tuple of non-negative integers (a shape)"
    return None


def _per_axis(value, metas):
    meta = metas[0]
    if not (isinstance(value, tuple) and len(value) == meta.rank and all(_is_whole(v) and v >= 0 for v in value)):
        return f"expected a tuple of non-negative integers, one per axis of the operand {_axes_text(meta)}"
    return None


def _axis(value, metas):
    meta = metas[0]
    if not (_is_whole(value) and 0 <= value < meta.rank):
        return f"expected an axis of the operand {_axes_text(meta)}, counted from 0"
    return None


def _axes(value, metas):
    meta = metas[0]
    if not (
        isinstance(value, tuple)
        and all(_is_whole(a) and 0 <= a < meta.rank for a in value)
        and list(value) == sorted(set(value))
    ):
        return (
            f"expected a tuple of distinct axes of the operand {_axes_text(meta)}, counted from 0, in increasing order"
        )
    return None


def _permutation(value, metas):
    meta = metas[0]
    if not (isinstance(value, tuple) and all(_is_whole(a) for a in value) and sorted(value) == list(range(meta.rank))):
        return f"expected a tuple that orders the axes of the operand {_axes_text(meta)}, each once"
    return None


def _scatter_axis(value, metas):
    updates, indices = metas
    last = updates.rank - indices.rank
    if not (_is_whole(value) and 0 <= value <= last):
        return (
            f"expected an axis from 0 to {last}, where updates {format_shape(updates.shape)} "
            f"can hold indices {format_shape(indices.shape)}"
        )
    return None


def _count(value, metas):
    if not (_is_whole(value) and value >= 0):
        return "expected a non-negative integer"
    return None


def _positive(value, metas):
    if not (_is_whole(value) and value >= 1):
        return "expected a positive integer"
    return None


def _dtype_name(value, metas):
    if not (isinstance(value, str) and value in DTYPES):
        return f"expected one of {', '.join(DTYPES)}"
    return None


_REDUCTION = {"axes": _axes, "keepdims": _flag}

#: The attributes of each built-in primitive as recording leaves them, each with its check
#: (a function of the value and the operands' metas that returns what is wrong, or None).
#: A built-in primitive not listed here takes no attributes.
BUILTIN_ATTRIBUTES = {
    "Sum": _REDUCTION,
    "Max": _REDUCTION,
    "Reshape": {"shape": _extents},
    "Broadcast": {"shape": _extents},
    "Transpose": {"axes": _permutation},
    "Slice": {"start": _per_axis, "stop": _per_axis, "step": _per_axis},
    "Pad": {"low": _per_axis, "high": _per_axis, "interior": _per_axis},
    "Concatenate": {"axis": _axis},
    "Take": {"axis": _axis},
    "ScatterAdd": {"axis": _scatter_axis, "extent": _count},
    "OneHot": {"depth": _positive, "dtype": _dtype_name},
}


def is_builtin(primitive):
    """Whether topos defines ``primitive`` (in ``topos.ops``), rather than a user who registered it."""
    return type(primitive).__module__.startswith(Primitive.__module__.rpartition(".")[0] + ".")


def _checked_attributes(primitive, metas, attrs):
    """The node's attributes once they are exactly what recording gives, or ``CheckpointError`` naming the attribute.

    ``attrs`` are the decoded attributes of a file's entry and ``metas`` its operands'
    metas. Returns what the primitive's ``normalize`` returns (equal to ``attrs``).
    """
    opcode = primitive.name
    if is_builtin(primitive):
        expected = BUILTIN_ATTRIBUTES.get(opcode, {})
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
