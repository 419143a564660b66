"""The tape: a notebook of operations that seals into a ``Network``.

Every expression over a ``Value`` appends one ``Node`` (opcode, operands,
shape), checked at the line that records it. Nodes remember that line, so every
reading can point back into the user's code.
"""

import itertools
import os
import sys

import numpy as np

from ..errors import ArgumentError, ArgumentTypeError, FeedError, RecordingError, SealedTapeError, ShapeError
from ..ops import lookup
from ..ops.registry import Meta, format_shape
from ..tensor import FLOAT_DTYPES, canonical_dtype, freeze, int32_problem, numeric_array

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep
_LINEAGE_IDS = itertools.count(1)
_INSIDE_PACKAGE = {}  # code filename -> whether it is a file of this package (a cache)


def _inside_package(filename):
    # Code filenames are spelled as the module was found on sys.path, which may hold
    # "..", a symlink or a relative path; compare real paths, once per filename.
    inside = _INSIDE_PACKAGE.get(filename)
    if inside is None:
        inside = os.path.realpath(filename).startswith(_PACKAGE_DIR)
        _INSIDE_PACKAGE[filename] = inside
    return inside


def user_source():
    """(filename, line) of the innermost caller outside the topos package."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _inside_package(filename):
            return (filename, frame.f_lineno)
        frame = frame.f_back
    return ("<unknown>", 0)


class Node:
    """One recorded operation. Nodes are never changed after recording."""

    __slots__ = ("index", "opcode", "operands", "shape", "dtype", "attrs", "payload", "name", "source")

    def __init__(self, index, opcode, operands, shape, dtype, attrs, payload=None, name=None, source=None):
        self.index = index
        self.opcode = opcode
        self.operands = tuple(operands)
        self.shape = tuple(shape)
        self.dtype = dtype
        self.attrs = attrs
        self.payload = payload
        self.name = name
        self.source = source

    @property
    def meta(self):
        """The node's ``Meta``: its shape and dtype, as ``Primitive.infer`` sees an operand."""
        return Meta(self.shape, self.dtype)

    @property
    def size(self):
        """The number of elements: the product of ``shape`` (1 for rank 0)."""
        size = 1
        for extent in self.shape:
            size *= extent
        return size

    @property
    def is_source(self):
        """Whether the node is a ``Parameter``, an ``Input`` or a ``Leaf``: it holds a payload and has no operands."""
        return self.opcode in ("Parameter", "Input", "Leaf")

    def describe_row(self, shape_width=0):
        """The row of ``describe()``: index, opcode, operands, shape (padded), attributes."""
        operands = ", ".join(str(i) for i in self.operands)
        shape = format_shape(self.shape)
        if shape_width:
            shape = f"{shape:<{shape_width}}"
        row = f"{self.index:>4}  {self.opcode:<15}{operands:<19}{shape}"
        return row

    def attrs_text(self):
        """The attributes as ``describe()`` prints them: space-separated ``key=repr(value)`` pairs.

        For a ``Sum`` over axis 1: ``axes=(1,) keepdims=False``; for a node without attributes, ``""``.
        """
        return " ".join(f"{key}={value!r}" for key, value in self.attrs.items())

    def __repr__(self):
        return f"Node({self.describe_row()})"


def plural(count, singular, plural_form=None):
    word = singular if count == 1 else (plural_form or singular + "s")
    return f"{count} {word}"


def tape_summary(nodes):
    counts = {"Parameter": 0, "Input": 0, "Leaf": 0}
    for node in nodes:
        if node.opcode in counts:
            counts[node.opcode] += 1
    parts = [
        plural(len(nodes), "node"),
        plural(counts["Parameter"], "parameter"),
        plural(counts["Input"], "input"),
    ]
    if counts["Leaf"]:
        parts.append(plural(counts["Leaf"], "leaf", "leaves"))
    return "tape: " + ", ".join(parts)


def describe_nodes(nodes):
    lines = []
    for node in nodes:
        row = node.describe_row()
        if node.attrs and not node.is_source:
            row += "  " + node.attrs_text()
        lines.append(row)
    lines.append(tape_summary(nodes))
    return "\n".join(lines)


class Tape:
    """Records operations on values. ``Tape(dtype="float32")`` for float32 values."""

    def __init__(self, dtype="float64", *, _nodes=(), _parent_lineages=()):
        self.dtype = canonical_dtype(dtype, FLOAT_DTYPES)
        self._nodes = list(_nodes)
        self._sealed = False
        self.lineages = tuple(_parent_lineages) + (next(_LINEAGE_IDS),)
        self._names = {node.name for node in self._nodes if node.name}

    # Sources ------------------------------------------------------------
    def parameter(self, value, name=None, dtype=None):
        """A trainable source; ``value`` is its initial payload. Named ``p{index}`` by default."""
        return self._source("Parameter", value, name, dtype)

    def input(self, value, name=None, dtype=None):
        """A source fed per run; ``value`` is its default. ``dtype="int32"`` for token ids."""
        return self._source("Input", value, name, dtype)

    def leaf(self, value, dtype=None):
        """A constant."""
        return self._source("Leaf", value, None, dtype)

    def value(self, symbol):
        """The value on this tape that ``symbol`` names.

        On a tape from ``network.reopen()`` this turns the network's symbols back
        into values, so more can be recorded on top of its nodes. A symbol of an
        unrelated network raises ``FeedError``.
        """
        from .network import Symbol

        if not isinstance(symbol, Symbol):
            raise ArgumentTypeError(f"value() takes a Symbol, got {type(symbol).__name__}")
        if symbol.lineage not in self.lineages:
            raise FeedError(f"symbol {symbol.index} belongs to another network, not to this tape")
        if not isinstance(symbol.index, int) or not 0 <= symbol.index < len(self._nodes):
            raise FeedError(f"symbol {symbol.index} names no node of this tape (it has {len(self._nodes)} nodes)")
        return Value(self, symbol.index)

    def _source(self, opcode, value, name, dtype):
        self._check_open()
        source = user_source()
        dtype = canonical_dtype(dtype) if dtype is not None else self.dtype
        what = f"{opcode.lower()}()" if dtype != "int32" else f"{opcode.lower()}(dtype='int32')"
        if isinstance(value, Value):
            raise ArgumentTypeError(f"{what} takes a payload (number, list, array), not a recorded value")
        try:
            array = numeric_array(value, what, RecordingError)
        except RecordingError as error:
            raise RecordingError(str(error), source) from None
        # A copy: the node keeps its payload however the caller's array changes later.
        payload = np.array(array, copy=True)
        if dtype == "int32":
            problem = int32_problem(payload)
            if problem is not None:
                raise RecordingError(f"{what} {problem}", source)
        payload = freeze(payload.astype(dtype, copy=False))
        index = len(self._nodes)
        if opcode == "Parameter":
            name = str(name) if name is not None else f"p{index}"
            if name in self._names:
                raise RecordingError(f"a parameter named {name!r} is already recorded on this tape", source)
            self._names.add(name)
        elif name is not None:
            name = str(name)
        node = Node(index, opcode, (), payload.shape, dtype, {}, payload=payload, name=name, source=source)
        self._nodes.append(node)
        return Value(self, index)

    # Recording ------------------------------------------------------------
    def apply(self, opcode, operands, **attrs):
        """Record ``opcode`` over values (the one path every operation takes)."""
        self._check_open()
        for operand in operands:
            if not isinstance(operand, Value):
                raise ArgumentTypeError(f"{opcode}: an operand is a {type(operand).__name__}, not a recorded value")
            if operand.tape is not self:
                raise RecordingError(f"{opcode}: an operand was recorded on another tape", user_source())
        index = self.append(opcode, [v.index for v in operands], attrs, user_source())
        return Value(self, index)

    def append(self, opcode, operand_indices, attrs, source):
        """Check and append one node over node indices; returns its index."""
        primitive = lookup(opcode)
        if primitive.is_source:
            raise ArgumentError(f"a {opcode} is recorded with tape.{opcode.lower()}(payload), not applied")
        metas = [self._nodes[i].meta for i in operand_indices]
        if primitive.arity is not None and len(metas) != primitive.arity:
            raise ArgumentError(f"{opcode} takes {primitive.arity} operands, got {len(metas)}")
        try:
            attrs = primitive.normalize(metas, attrs)
            meta = primitive.infer(metas, attrs)
        except ShapeError as error:
            # The same class (an AxisError stays one), now naming the user's line.
            raise type(error)(str(error), opcode=opcode, shapes=error.shapes, source=source) from None
        index = len(self._nodes)
        self._nodes.append(Node(index, opcode, operand_indices, meta.shape, meta.dtype, attrs, source=source))
        return index

    def _check_open(self):
        if self._sealed:
            raise SealedTapeError("this tape is sealed: reopen the network to record more", user_source())

    # Reading ----------------------------------------------------------------
    def nodes(self):
        """The recorded nodes, in order (a tuple; nodes are immutable)."""
        return tuple(self._nodes)

    def __len__(self):
        return len(self._nodes)

    def describe(self):
        """One line a node, then a summary (the spec reading)."""
        return describe_nodes(self._nodes)

    # Sealing --------------------------------------------------------------
    def seal(self):
        """Seal the tape into an immutable ``Network``; the tape records no more."""
        from .network import Network

        self._check_open()
        self._sealed = True
        return Network(tuple(self._nodes), self.dtype, self.lineages)

    @classmethod
    def record(cls, fn, dtype="float64"):
        """Make a tape, call ``fn(tape)``, seal it; return ``(network, symbols)``.

        ``symbols`` mirrors what ``fn`` returned (a list, a tuple or one value).
        """
        if not callable(fn):
            raise ArgumentTypeError(f"Tape.record() takes a function of the tape, got {type(fn).__name__}")
        tape = cls(dtype)
        returned = fn(tape)
        network = tape.seal()
        return network, detach(returned)


#: How deeply ``detach`` follows nested lists and tuples (a deeper nesting is a mistake, not a model).
MAX_NESTING = 100


def detach(values):
    """Turn values (one, or a list or tuple of them, nested) into ``Symbol``s."""
    return _detach(values, 0)


def _detach(values, depth):
    from .network import Symbol

    if isinstance(values, Value):
        return Symbol(values.tape.lineages[-1], values.index)
    if isinstance(values, Symbol):
        return values
    if isinstance(values, (list, tuple)):
        if depth >= MAX_NESTING:
            raise ArgumentError(f"detach() follows lists and tuples {MAX_NESTING} levels deep, these nest deeper")
        return type(values)(_detach(v, depth + 1) for v in values)
    if values is None:
        return None
    raise ArgumentTypeError(f"detach() takes recorded values, got {type(values).__name__}")


from .value import Value  # noqa: E402  (Value and Tape refer to each other)
