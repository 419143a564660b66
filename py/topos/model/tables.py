"""The parameter tables: ``Parameters`` (what a network trains) and ``Gradients`` (what optimizers read).

Both are ``SlotTable``s: read-only arrays keyed by parameter node, each checked
against its parameter when the table is made (``convert_payload``, which checks
feeds too). They are values: nothing the caller can read changes after
construction. ``Network`` (``topos.model.network``) makes them and imports this
module; a table knows a network as the class a tape seals into
(``topos.model.tape.is_network``).
"""

import numbers
from collections.abc import Mapping

import numpy as np

from ..display import bundle, table_html, text_table, values_text
from ..dtypes import FLOAT_DTYPES
from ..errors import ArgumentError, ArgumentTypeError, FeedError
from ..tensor import Tensor, freeze, frozen, immutable, integer_problem, numeric_array
from ..text import format_shape, plural
from .checkpoint import save_parameters
from .nodes import Symbol, describe_node
from .tape import is_network
from .value import Value


def related_networks(a, b):
    """Whether two networks share nodes (one is the other, or reopened from it)."""
    return a is b or set(a.lineages) <= set(b.lineages) or set(b.lineages) <= set(a.lineages)


def convert_payload(value, node, error_class, what, dtype=None):
    """``value`` as a read-only array of ``node``'s dtype (or ``dtype``) and shape (numpy's same_kind casting).

    The array is immutable: one the caller could still write (its own array, or
    a ``Tensor`` made from it) is copied, so that changing it later cannot
    change a run or a parameter table that was made from it.
    """
    dtype = dtype or node.dtype
    what = f"{what} {describe_node(node)}"
    array = numeric_array(value, what, error_class)
    # Whole numbers of any integer dtype may feed a uint32 value (a key, [0, 5]): the range check follows.
    words = dtype == "uint32" and array.dtype.kind in "iu"
    if not words and not np.can_cast(array.dtype, dtype, casting="same_kind"):
        raise error_class(f"{what}: cannot cast {array.dtype} to {dtype}")
    if tuple(array.shape) != node.shape:
        raise error_class(f"{what}: shape {format_shape(array.shape)} does not match {format_shape(node.shape)}")
    problem = integer_problem(array, dtype)
    if problem is not None:
        raise error_class(f"{what}: {problem}")
    # Comparing the dtype itself with the name is exact and much cheaper than reading ``dtype.name``.
    if array.dtype != dtype:
        return freeze(array.astype(dtype))
    if array.flags.owndata and not isinstance(value, (np.ndarray, Tensor)):
        return freeze(array)  # np.asarray made it from numbers or lists: nobody else holds it
    return immutable(array)


class SlotTable:
    """Read-only arrays keyed by parameter node: what ``Parameters`` and ``Gradients`` share.

    ``slots`` maps parameter node indices to arrays (numbers, lists, arrays or
    ``Tensor``s), each checked against its parameter's shape (``FeedError``
    otherwise). The table never shares memory that someone could still write:
    an array of the caller's is copied, so changing it later changes nothing here.
    """

    #: how ``of`` describes a node without a slot here
    missing_slot = "has no slot in this table"
    #: how errors name a slot's value
    slot_name = "slot of"

    def __init__(self, network, slots):
        if not is_network(network):
            raise ArgumentTypeError(f"{type(self).__name__} takes a Network first, got {type(network).__name__}")
        if not isinstance(slots, Mapping):
            raise ArgumentTypeError(f"{type(self).__name__} takes a mapping of slots, got {type(slots).__name__}")
        self.network = network
        self.slots = {index: self._checked(index, array) for index, array in slots.items()}

    @classmethod
    def _made_here(cls, network, slots):
        """A table of arrays that topos has just made or already checked and that nothing else
        writes: taken as they are (read-only), without the constructor's checks and copies."""
        table = cls.__new__(cls)
        table.network = network
        table.slots = {index: frozen(array) for index, array in slots.items()}
        return table

    def _parameter_node(self, index):
        nodes = self.network.nodes()
        if isinstance(index, bool) or not isinstance(index, numbers.Integral) or not 0 <= index < len(nodes):
            raise FeedError(f"slot {index!r} names no node of this network (it has {len(nodes)} nodes)")
        node = nodes[index]
        if node.opcode != "Parameter":
            raise FeedError(f"{describe_node(node)} is not a parameter: only parameters have slots")
        return node

    def _checked(self, index, array):
        node = self._parameter_node(index)
        return convert_payload(array, node, FeedError, self.slot_name, self._slot_dtype(node))

    def _slot_dtype(self, node):
        """The dtype of the slot of parameter ``node``."""
        return node.dtype

    def of(self, symbol):
        """The array in the slot of the parameter ``symbol`` names, as a ``Tensor`` of that parameter's shape.

        Raises ``FeedError`` if the node has no slot here or the symbol belongs to another network.
        """
        index = self.network.index_of(symbol)
        if index not in self.slots:
            raise FeedError(f"{describe_node(self.network.nodes()[index])} {self.missing_slot}")
        return Tensor(self.slots[index])

    def names(self):
        """The parameters' names (``p{index}`` unless named when recorded), in node order."""
        return [self.network.nodes()[i].name for i in self.slots]

    def symbols(self):
        """The parameters' symbols, in node order (the same order as ``names()``)."""
        return [self.network.symbol(i) for i in self.slots]

    def items(self):
        """(parameter name, ``Tensor``) pairs, one per slot, in node order."""
        nodes = self.network.nodes()
        return [(nodes[i].name, Tensor(array)) for i, array in self.slots.items()]

    def __len__(self):
        return len(self.slots)


class Parameters(SlotTable):
    """The trainable payloads, one slot per parameter node. Immutable: ``step`` makes a new table."""

    missing_slot = "is not a parameter"
    slot_name = "new value of"

    def __repr__(self):
        return f"<Parameters: {', '.join(self.names())}>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        nodes = self.network.nodes()
        cells = [
            (nodes[i].name, format_shape(array.shape), array.dtype.name, values_text(array))
            for i, array in self.slots.items()
        ]
        summary = f"Parameters: {plural(len(cells), 'slot')}"
        return values_bundle("parameters", summary, ["name", "shape", "dtype", "values"], cells)

    def replace(self, arrays):
        """A new table with some slots replaced, each checked against its parameter.

        ``arrays`` maps parameters to their new values; a parameter is named by its
        symbol (or a value of its tape), its name (``"w"``, ``"p0"``) or its node
        index. Raises ``FeedError`` for a key that names no parameter of this
        network, a parameter named twice, or a value that does not fit its
        parameter; this table is unchanged.
        """
        if not isinstance(arrays, Mapping):
            raise ArgumentTypeError(f"replace() takes a mapping of slots, got {type(arrays).__name__}")
        slots = dict(self.slots)
        replaced = set()
        for key, array in arrays.items():
            index = self._slot_index(key)
            if index in replaced:
                raise FeedError(f"replace() names {describe_node(self.network.nodes()[index])} twice")
            replaced.add(index)
            slots[index] = self._checked(index, array)
        return Parameters._made_here(self.network, slots)

    def _slot_index(self, key):
        """The node index of the parameter ``key`` names: a symbol, a value, a name or a node index."""
        if isinstance(key, (Symbol, Value)):
            return self.network.index_of(key)
        if isinstance(key, str):
            for index in self.network._parameter_indices:
                if self.network.nodes()[index].name == key:
                    return index
            raise FeedError(f"this network has no parameter named {key!r}")
        return key

    def step(self, gradients, fn):
        """A new table: ``fn(w, g)`` slot by slot (Tensors in, a Tensor or array out).

        ``gradients`` is a table (``Gradients``, or any table of slots) of this
        network, or of one it was reopened from or into: a table of another
        network raises ``FeedError``, as the optimizers do.
        """
        if not isinstance(gradients, SlotTable):
            raise ArgumentTypeError(f"step() takes a Gradients table, got {type(gradients).__name__}")
        if not related_networks(gradients.network, self.network):
            raise FeedError("these gradients belong to another network than the parameters")
        updated = {}
        for index, array in self.slots.items():
            g = gradients.slots.get(index)
            if g is None:
                g = np.zeros_like(array)
            result = fn(Tensor(array), Tensor(g))
            updated[index] = result
        return self.replace(updated)

    def save(self, path):
        """Write a safetensors file, one tensor per parameter, named as recorded; atomic."""
        save_parameters(self, path)


class Gradients(SlotTable):
    """Gradients projected onto parameter slots (what optimizers consume)."""

    missing_slot = "has no slot in these gradients"
    slot_name = "gradient of"

    def _slot_dtype(self, node):
        """A gradient is floating point: of the parameter's dtype, or the network's for an int32 parameter."""
        return node.dtype if node.dtype in FLOAT_DTYPES else self.network.dtype

    def global_norm(self):
        """The L2 norm of all gradients together, as a Python float."""
        total = 0.0
        for array in self.slots.values():
            total += float(np.sum(np.square(array, dtype=np.float64)))
        return float(np.sqrt(total))

    def scale(self, factor):
        """A new table with every gradient times ``factor`` (a number, cast to each slot's dtype)."""
        try:
            factor = float(factor)
        except (TypeError, ValueError):
            raise ArgumentError(f"scale() takes a number, got {factor!r}") from None
        return Gradients._made_here(self.network, {i: freeze(a * a.dtype.type(factor)) for i, a in self.slots.items()})


#: How many nodes the display of a run or a field lists (the rest are counted, not shown).
SHOWN_NODES = 12


def values_bundle(kind, summary, columns, cells, hidden=0):
    """A table of values for Jupyter: the summary and aligned rows as text, an HTML table, no card."""
    footer = [f"... and {plural(hidden, 'more node')}"] if hidden else []
    lines = [summary] + ["  " + line for line in text_table(cells)] + footer
    return bundle("\n".join(lines), table_html(kind, columns, cells, caption=[summary] + footer))
