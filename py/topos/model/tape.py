"""The tape: a notebook of operations that seals into a ``Network``.

Every expression over a ``Value`` appends one ``Node`` (opcode, operands,
shape), checked at the line that records it. Nodes remember that line, so every
reading can point back into the user's code.

Two hooks keep this module below the ones that build on it:

- ``observe(observer)`` tells a ``TapeObserver`` of every tape made, sealed and
  recorded while a ``with`` block runs (the playground watches a script so, as
  ``show.capture`` collects its cards);
- ``seal`` returns a ``topos.model.network.Network``, a module that builds on
  this one (a network reopens into a tape), so ``Network`` registers itself here
  with ``register_network_class`` rather than being imported.
"""

import itertools
from contextlib import contextmanager

import numpy as np

from ..display import bundle, table_html, text_card
from ..dtypes import FLOAT_DTYPES, INTEGER_DTYPES, canonical_dtype
from ..errors import ArgumentError, ArgumentTypeError, FeedError, RecordingError, SealedTapeError, ShapeError
from ..ops import lookup
from ..tensor import freeze, integer_problem, numeric_array
from ..text import format_shape, plural
from .nodes import Node, Symbol, describe_node_rows, describe_nodes, recording_scope, user_source
from .value import Value

_LINEAGE_IDS = itertools.count(1)


# Watching tapes ---------------------------------------------------------------------------


class TapeObserver:
    """What ``observe`` reports to. Each method is called after its event; override those you need."""

    def made(self, tape):
        """``tape`` was made: ``Tape(...)``, ``Tape.record``, ``network.reopen()``, a compiler's gradient tape."""

    def sealed(self, tape, network):
        """``tape`` was sealed into ``network``."""

    def recorded(self, network, symbols):
        """``Tape.record`` sealed ``network`` and turned what its function returned into ``symbols``."""


_observers = []


@contextmanager
def observe(observer):
    """Report every tape made, sealed and recorded inside the ``with`` block to ``observer``, a ``TapeObserver``.

    Observers nest: each one active is told of every event, in the order they began.
    """
    _observers.append(observer)
    try:
        yield observer
    finally:
        _observers.remove(observer)


# What a tape seals into --------------------------------------------------------------------

_network_class = None


def register_network_class(network_class):
    """Class decorator: ``Tape.seal`` returns ``network_class(nodes, dtype, lineages)`` from now on.

    ``topos.model.network.Network`` registers itself when it is defined, which
    importing ``topos`` (or any of its modules) always does first.
    """
    global _network_class
    _network_class = network_class
    return network_class


def encloses(outer, tape):
    """Whether ``tape`` is ``outer`` or a body's tape made inside it, directly or not (``topos.model.bodies``)."""
    while tape is not None:
        if tape is outer:
            return True
        tape = getattr(tape, "outer", None)
    return False


def innermost(tapes):
    """The one of ``tapes`` made inside all the others (a body's tape inside its callers'), or None
    where two are unrelated: the tape an operation over values of all of them records on."""
    inner = tapes[0]
    for tape in tapes[1:]:
        if encloses(inner, tape):
            inner = tape
        elif not encloses(tape, inner):
            return None
    return inner


def is_network(value):
    """Whether ``value`` is a sealed network (of the class ``Tape.seal`` makes)."""
    return _network_class is not None and isinstance(value, _network_class)


class Tape:
    """Records operations on values. ``Tape(dtype="float32")`` for float32 values."""

    def __init__(self, dtype="float64", *, _nodes=(), _parent_lineages=()):
        self.dtype = canonical_dtype(dtype, FLOAT_DTYPES)
        self._nodes = list(_nodes)
        self._sealed = False
        self.lineages = tuple(_parent_lineages) + (next(_LINEAGE_IDS),)
        self._names = {node.name for node in self._nodes if node.name}
        for observer in _observers:
            observer.made(self)

    # Sources ------------------------------------------------------------
    def parameter(self, value, name=None, dtype=None):
        """A trainable source; ``value`` is its initial payload. Named ``p{index}`` by default."""
        return self._source("Parameter", value, name, dtype)

    def input(self, value, name=None, dtype=None):
        """A source fed per run; ``value`` is its default. ``dtype="int32"`` for token ids.

        A uint32 array (a random key, ``topos.random_key(seed)``) records a uint32 input
        without a ``dtype``: keys are words, never the tape's floats.
        """
        return self._source("Input", value, name, dtype)

    def leaf(self, value, dtype=None):
        """A constant (a uint32 array, a random key, stays uint32 without a ``dtype``)."""
        return self._source("Leaf", value, None, dtype)

    def value(self, symbol):
        """The value on this tape that ``symbol`` names.

        On a tape from ``network.reopen()`` this turns the network's symbols back
        into values, so more can be recorded on top of its nodes. A symbol of an
        unrelated network raises ``FeedError``.
        """
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
        if dtype is None and opcode != "Parameter" and str(getattr(value, "dtype", "")) == "uint32":
            dtype = "uint32"  # a random key, fed or constant: words, not the tape's floats
        dtype = canonical_dtype(dtype) if dtype is not None else self.dtype
        what = f"{opcode.lower()}()" if dtype not in INTEGER_DTYPES else f"{opcode.lower()}(dtype={dtype!r})"
        if isinstance(value, Value):
            raise ArgumentTypeError(f"{what} takes a payload (number, list, array), not a recorded value")
        try:
            array = numeric_array(value, what, RecordingError)
        except RecordingError as error:
            raise RecordingError(error.message, source) from None
        # A copy: the node keeps its payload however the caller's array changes later.
        payload = np.array(array, copy=True)
        problem = integer_problem(payload, dtype)
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
        scope = recording_scope()
        node = Node(index, opcode, (), payload.shape, dtype, {}, payload=payload, name=name, source=source, scope=scope)
        self._nodes.append(node)
        return Value(self, index)

    # Recording ------------------------------------------------------------
    def apply(self, opcode, operands, **attrs):
        """Record ``opcode`` over values (the one path every operation takes)."""
        self._check_open()
        for operand in operands:
            if not isinstance(operand, Value):
                raise ArgumentTypeError(f"{opcode}: an operand is a {type(operand).__name__}, not a recorded value")
        inner = innermost([operand.tape for operand in operands] + [self])
        if inner is None:
            raise RecordingError(f"{opcode}: an operand was recorded on another tape", user_source())
        if inner is not self:
            # A body's value meets one of a tape it was made inside: the body records it
            # (``topos.model.bodies``), lifting the outer values in.
            return inner.apply(opcode, operands, **attrs)
        index = self.append(opcode, [v.index for v in operands], attrs, user_source(), recording_scope())
        return Value(self, index)

    def append(self, opcode, operand_indices, attrs, source, scope=()):
        """Check and append one node over node indices; returns its index.

        ``scope`` is the calls it is recorded inside (``recording_scope()``)."""
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
        self._nodes.append(
            Node(index, opcode, operand_indices, meta.shape, meta.dtype, attrs, source=source, scope=scope)
        )
        return index

    def append_leaf(self, payload, source, scope=()):
        """Append a ``Leaf`` holding ``payload`` (read-only), recorded at ``source`` inside ``scope``.

        What a derivative rule's constants become (``e.like``): the gradient reading's
        tape and the recording tape's ``topos.grad`` both append them here."""
        self._check_open()
        index = len(self._nodes)
        self._nodes.append(
            Node(index, "Leaf", (), payload.shape, payload.dtype.name, {}, payload=payload, source=source, scope=scope)
        )
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

    def describe_rows(self):
        """The lines of ``describe()``, each with the nodes it is about: ``(line, (index,))``, ``(summary, ())``."""
        return describe_node_rows(self._nodes)

    def __repr__(self):
        state = "sealed" if self._sealed else "open"
        return f"<Tape: {plural(len(self._nodes), 'node')}, {self.dtype}, {state}>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        return spec_bundle(self._nodes)

    # Sealing --------------------------------------------------------------
    def seal(self):
        """Seal the tape into an immutable ``Network``; the tape records no more."""
        self._check_open()
        self._sealed = True
        network = _network_class(tuple(self._nodes), self.dtype, self.lineages)
        for observer in _observers:
            observer.sealed(self, network)
        return network

    @classmethod
    def record(cls, fn, dtype="float64"):
        """Make a tape, call ``fn(tape)``, seal it; return ``(network, symbols)``.

        ``symbols`` mirrors what ``fn`` returned: a list, a tuple, one value, or a
        dict of named values (``{"loss": loss}`` gives ``{"loss": symbol}``, the
        keys in the same order).
        """
        if not callable(fn):
            raise ArgumentTypeError(f"Tape.record() takes a function of the tape, got {type(fn).__name__}")
        tape = cls(dtype)
        returned = fn(tape)
        network = tape.seal()
        symbols = detach(returned)
        for observer in _observers:
            observer.recorded(network, symbols)
        return network, symbols


def spec_bundle(nodes):
    """The spec reading of ``nodes`` for Jupyter: its text, an HTML table a node, and the spec card."""
    rows = describe_node_rows(nodes)
    cells = [
        (
            node.index,
            node.opcode,
            node.name or "",
            ", ".join(str(i) for i in node.operands),
            format_shape(node.shape),
            node.dtype,
            node.attrs_text() if node.attrs and not node.is_source else "",
        )
        for node in nodes
    ]
    columns = ["node", "opcode", "name", "reads", "shape", "dtype", "attributes"]
    card = text_card("spec", rows)
    return bundle(card["text"], table_html("spec", columns, cells, caption=[rows[-1][0]]), card)


#: How deeply ``detach`` follows nested lists and tuples (a deeper nesting is a mistake, not a model).
MAX_NESTING = 100


def detach(values):
    """Turn values (one, or a list, tuple or dict of them, nested) into ``Symbol``s.

    A dict comes back as a dict with the same keys, in the same order.
    """
    return _detach(values, 0)


def _detach(values, depth):
    if isinstance(values, Value):
        return Symbol(values.tape.lineages[-1], values.index)
    if isinstance(values, Symbol):
        return values
    if isinstance(values, (list, tuple, dict)) and depth >= MAX_NESTING:
        raise ArgumentError(f"detach() follows lists, tuples and dicts {MAX_NESTING} levels deep, these nest deeper")
    if isinstance(values, (list, tuple)):
        return type(values)(_detach(v, depth + 1) for v in values)
    if isinstance(values, dict):
        return {key: _detach(value, depth + 1) for key, value in values.items()}
    if values is None:
        return None
    raise ArgumentTypeError(f"detach() takes recorded values, got {type(values).__name__}")
