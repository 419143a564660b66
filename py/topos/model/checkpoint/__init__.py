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
unchanged, and its attributes have the names and kinds its primitive declares,
``Primitive.attributes``; ``BUILTIN_ATTRIBUTES`` lists the built-in ones), its shape rule must accept them, and a document nested
deeper than ``MAX_NESTING`` is refused before it is parsed. A loaded network
therefore runs: a damaged file fails at load with ``CheckpointError`` naming the
node and the attribute, never later inside numpy.

The package: this module writes and reads safetensors; ``network_spec`` writes and
reads the network JSON and holds its attributes to what each primitive declares;
``files`` has the atomic writes both share.
"""

import json
import math
import os

import numpy as np

from ...errors import CheckpointError
from ...tensor import frozen
from ...text import format_shape
from .files import is_count as _is_count
from .files import little_endian_bytes as _little_endian_bytes
from .files import read_file as _read_file
from .files import write_atomically
from .network_spec import (  # noqa: F401  (the network format's names, read here as before)
    BUILTIN_ATTRIBUTES,
    MAX_NESTING,
    NETWORK_FORMAT,
    NETWORK_VERSION,
    _encode_node,
    decode_attr,
    encode_attr,
    is_builtin,
    read_network,
    save_network,
)

# safetensors --------------------------------------------------------------------------

SAFETENSORS_DTYPES = {"float32": "F32", "float64": "F64", "int32": "I32", "uint32": "U32"}
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


def save_parameters(parameters, path):
    """Write ``parameters`` as a safetensors file at ``path``, one tensor per parameter, atomically."""
    nodes = parameters.network.nodes()
    tensors = {}
    for index, array in parameters.slots.items():
        name = nodes[index].name
        if name == "__metadata__":
            raise CheckpointError(
                f"cannot write {os.fspath(path)}: the name '__metadata__' is reserved, rename parameter {index}"
            )
        tensors[name] = array
    write_safetensors(path, tensors, {"format": "topos"})


def write_safetensors(path, tensors, metadata):
    """Write ``tensors`` (name -> array, in this order) and ``metadata`` (str -> str) as a safetensors
    file at ``path``, atomically (the optimizer's state files are written here too)."""
    header = {"__metadata__": metadata}
    offset = 0
    for name, array in tensors.items():
        size = array.size * array.dtype.itemsize
        header[name] = {
            "dtype": SAFETENSORS_DTYPES[array.dtype.name],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)

    def chunks():
        yield len(encoded).to_bytes(8, "little")
        yield encoded
        for array in tensors.values():
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
