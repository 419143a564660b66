"""The sealed network and what running it hands back.

``Network`` is immutable, so any number of threads may ``forward`` one network
at once. What it caches (backward masks, and from a second run on the prepared
plans of its forward and backward, ``topos.compiler.program``) never changes a
result; runs at once take an arena each. ``Parameters``, ``Run``, ``Field`` and
``Gradients`` are values: nothing the caller can read changes after construction.

This module builds on the tape (``reopen``, ``load``) and the checkpoint formats
(``save``, ``load``, ``load_parameters``); the tape's ``seal`` makes a ``Network``
through ``register_network_class``. The compiler builds on this module, so the
``Entry`` that ``network.entry`` makes is registered here by the compiler
(``register_entry_class``) rather than imported.
"""

import numbers
import threading
import weakref
from collections.abc import Mapping

import numpy as np

from ..display import bundle, table_html, text_table, values_text
from ..dtypes import FLOAT_DTYPES
from ..errors import ArgumentError, ArgumentTypeError, FeedError, IndexingError, ShapeError, located
from ..ops import lookup
from ..tensor import Tensor, freeze, frozen, immutable, int32_problem, numeric_array
from ..text import format_shape, plural
from .autodiff import EagerEmitter, ancestors, check_backward, needed_nodes, reverse_scan
from .checkpoint import read_network, read_parameters, save_network, save_parameters
from .composites import inner_nodes, network_composites
from .nodes import Symbol, describe_node, describe_node_rows, describe_nodes, source_value
from .tape import Tape, register_network_class, spec_bundle
from .value import Value

# What ``Network.entry`` makes ---------------------------------------------------------------

_entry_class = None


def register_entry_class(entry_class):
    """Class decorator: ``network.entry(readables)`` returns ``entry_class(network, readables)`` from now on.

    ``topos.compiler.entry.Entry`` registers itself so: the compiler builds on
    this module, which therefore cannot import it. Importing ``topos`` (or any
    of its modules) imports the compiler, so the entry is always registered.
    """
    global _entry_class
    _entry_class = entry_class
    return entry_class


def related_networks(a, b):
    """Whether two networks share nodes (one is the other, or reopened from it)."""
    return a is b or set(a.lineages) <= set(b.lineages) or set(b.lineages) <= set(a.lineages)


@register_network_class
class Network:
    """A sealed tape: the spec every reading reads."""

    def __init__(self, nodes, dtype, lineages):
        self._nodes = tuple(nodes)
        self.dtype = dtype
        self.lineages = tuple(lineages)
        self._parameter_indices = tuple(n.index for n in self._nodes if n.opcode == "Parameter")
        self._input_indices = tuple(n.index for n in self._nodes if n.opcode == "Input")
        # Backward masks by target: the network never changes, so each is worked out once.
        self._needed_by_target = {}
        # Prepared plans of the forward and of each backward target: a run count until the second run.
        self._prepared = {}
        # Guards both caches, so that threads running one network at once count its runs and prepare each plan once.
        self._cache_lock = threading.RLock()

    # Reading -------------------------------------------------------------
    def nodes(self):
        """The recorded nodes, in order: a tuple of immutable ``Node``s, node ``i`` at position ``i``."""
        return self._nodes

    def __len__(self):
        return len(self._nodes)

    def describe(self):
        """One line a node, then a summary (the spec reading, as ``Tape.describe`` writes it)."""
        return describe_nodes(self._nodes)

    def describe_rows(self):
        """The lines of ``describe()``, each with the nodes it is about: ``(line, (index,))``, ``(summary, ())``."""
        return describe_node_rows(self._nodes)

    def __repr__(self):
        return f"<Network: {len(self._nodes)} nodes, {self.dtype}>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        return spec_bundle(self._nodes)

    def index_of(self, symbol):
        """The node index a symbol (or a value of this network's tape) names; raises otherwise."""
        if isinstance(symbol, Value):
            lineage, index = symbol.tape.lineages[-1], symbol.index
        elif isinstance(symbol, Symbol):
            lineage, index = symbol.lineage, symbol.index
        else:
            raise FeedError(f"expected a Symbol, got {type(symbol).__name__}")
        if lineage not in self.lineages:
            raise FeedError(f"symbol {index} belongs to another network, not to this one")
        if not isinstance(index, int) or not 0 <= index < len(self._nodes):
            raise FeedError(f"symbol {index} names no node of this network (it has {len(self._nodes)} nodes)")
        return index

    def node(self, symbol):
        """The ``Node`` that ``symbol`` (a ``Symbol``, or a value of this network's tape) names.

        Raises ``FeedError`` for anything else, or for a symbol of another network.
        """
        return self._nodes[self.index_of(symbol)]

    def symbol(self, index):
        """The symbol of node ``index`` (for nodes recorded without keeping a value).

        Raises ``IndexingError`` (an ``IndexError``) for an index that names no node.
        """
        if isinstance(index, bool) or not isinstance(index, numbers.Integral):
            raise ArgumentTypeError(f"symbol() takes a node index, an int, got {type(index).__name__}")
        if not 0 <= index < len(self._nodes):
            raise IndexingError(f"node {index} is out of range: this network has nodes 0..{len(self._nodes) - 1}")
        return Symbol(self.lineages[-1], int(index))  # a numpy integer names the node as an int does

    def parameter_symbols(self):
        """The symbols of the ``Parameter`` nodes, in node order."""
        return [self.symbol(i) for i in self._parameter_indices]

    def input_symbols(self):
        """The symbols of the ``Input`` nodes, in node order."""
        return [self.symbol(i) for i in self._input_indices]

    # Running -------------------------------------------------------------
    def parameters(self):
        """The recorded initial payloads as a ``Parameters`` table."""
        return Parameters._made_here(self, {i: self._nodes[i].payload for i in self._parameter_indices})

    def check_feeds(self, feeds):
        """Validate and convert feeds; returns {input index: array}. Raises ``FeedError``."""
        if feeds is None:
            return {}
        pairs = feeds.items() if isinstance(feeds, Mapping) else feeds
        if isinstance(pairs, (str, bytes)) or not hasattr(pairs, "__iter__"):
            raise FeedError(f"feeds are a mapping or (symbol, value) pairs, got {type(feeds).__name__}")
        converted = {}
        for pair in pairs:
            try:
                symbol, value = pair
            except (TypeError, ValueError):
                raise FeedError(f"feeds are a mapping or (symbol, value) pairs, got {pair!r}") from None
            index = self.index_of(symbol)
            node = self._nodes[index]
            if node.opcode != "Input":
                raise FeedError(f"{describe_node(node)} is not an input: only inputs take feeds")
            converted[index] = convert_payload(value, node, FeedError, "feed for")
        return converted

    def check_parameters(self, parameters):
        """Return ``parameters`` unchanged if this network can run with it; raise otherwise.

        A table of this network, or of a network this one was reopened from, fits.
        Raises ``ArgumentTypeError`` (a ``TypeError``) if ``parameters`` is not a
        ``Parameters`` table and ``FeedError`` if it belongs to another network.
        """
        if not isinstance(parameters, Parameters):
            raise ArgumentTypeError(f"expected a Parameters table, got {type(parameters).__name__}")
        if parameters.network is not self and not set(parameters.network.lineages) <= set(self.lineages):
            raise FeedError("these parameters belong to another network")
        return parameters

    def forward(self, parameters, feeds=None):
        """Evaluate every node; ``feeds`` overlays the inputs' defaults for this run.

        From a network's second forward on, the run goes through a prepared plan of
        every node (``topos.compiler.program``): the values are written into an arena
        that the ``Run`` holds and hands back, for a later run, once it is gone.
        """
        self.check_parameters(parameters)
        feeds = self.check_feeds(feeds)
        prepared = self._prepared_plan("forward")
        if prepared is None:
            return Run(self, parameters, evaluate(self._nodes, parameters.slots, feeds))
        values, workspace, _, _ = prepared.run(parameters.slots, feeds, hold=True)
        return Run(self, parameters, values, prepared, workspace)

    def _prepared_plan(self, key):
        """The prepared plan for ``key`` (``"forward"``, or a backward target's index), from its second use on.

        The first use only counts, so that a network run once pays no lowering.
        Returns None where the plain interpreter runs: the first time, and for a
        backward with respect to nothing (a network without float parameters or inputs).
        """
        with self._cache_lock:
            state = self._prepared.get(key)
            if state is None:
                self._prepared[key] = "used once"
                return None
            if state == "used once":
                state = self._prepare(key) or "plain"
                self._prepared[key] = state
        return None if state == "plain" else state

    def _prepare(self, key):
        if not self._nodes:
            return None
        if key == "forward":
            every = [self.symbol(i) for i in range(len(self._nodes))]
            return self.entry(every).lower().prepare(keep_inside=True)
        variables = self._parameter_indices + self._input_indices
        wrt = [self.symbol(i) for i in variables if self._nodes[i].dtype in FLOAT_DTYPES]
        if not wrt:
            return None
        return self.entry([]).backward(self.symbol(key), wrt).lower().prepare(after_forward=True)

    def reopen(self):
        """A new open tape holding this network's nodes; old symbols still name them."""
        return Tape(self.dtype, _nodes=self._nodes, _parent_lineages=self.lineages)

    def _needed_for(self, target):
        """The nodes whose cotangents a backward from ``target`` forms: those on a path
        from a parameter or an input to it (an immutable mask, cached per target)."""
        with self._cache_lock:
            needed = self._needed_by_target.get(target)
            if needed is None:
                variables = self._parameter_indices + self._input_indices
                needed = bytes(needed_nodes(self._nodes, target, variables))
                self._needed_by_target[target] = needed
        return needed

    # Readings and files (the compiler and checkpoint modules) -----------------
    def entry(self, readables):
        """A ``topos.compiler.Entry`` that reads the nodes ``readables`` names.

        ``readables`` is a list or tuple of symbols, in the order of the results
        (one symbol alone counts as a list of one; a set or a dict raises
        ``TypeError``). ``network.entry([loss]).backward(loss).lower()`` gives a
        ``Plan`` that reads the loss and its gradient with respect to every parameter.
        """
        return _entry_class(self, readables)

    def save(self, path):
        """Write the spec (nodes, payloads, sources) as versioned JSON, atomically."""
        save_network(self, path)

    @classmethod
    def load(cls, path):
        """Read a spec written by ``save`` into a new ``Network``, checking every node.

        The new network is a lineage of its own: symbols of the saved one do not
        name its nodes (take them from ``parameter_symbols()``, ``input_symbols()``
        or ``symbol(index)``). Every opcode it uses must be registered. Raises
        ``CheckpointError`` naming the file and the cause.
        """
        dtype, nodes = read_network(path)
        return Tape(dtype, _nodes=nodes).seal()

    def load_parameters(self, path):
        """Read a safetensors checkpoint into a ``Parameters`` table of this network."""
        return Parameters(self, read_parameters(self, path))

    def adopt(self, parameters):
        """A ``Parameters`` table of this network holding the arrays of ``parameters``, matched by name.

        ``parameters`` is a table of another recording of the same model (at
        another batch size, say): every parameter of this network takes the array
        of the parameter of the same name, cast to its dtype where numpy's
        ``same_kind`` casting allows. Raises ``FeedError`` naming every parameter
        that is missing from the table, every one of the table that this network
        lacks, and every one whose shape or dtype does not fit, in one message.
        """
        if not isinstance(parameters, Parameters):
            raise ArgumentTypeError(f"adopt() takes a Parameters table, got {type(parameters).__name__}")
        offered = dict(zip(parameters.names(), parameters.slots.values()))
        wanted = {self._nodes[i].name: self._nodes[i] for i in self._parameter_indices}
        problems = []
        for name, node in wanted.items():
            if name not in offered:
                problems.append(f"parameter {name!r} (node {node.index}) is missing from the table")
                continue
            array = offered[name]
            if tuple(array.shape) != node.shape:
                problems.append(
                    f"parameter {name!r} has shape {format_shape(array.shape)} in the table, "
                    f"{format_shape(node.shape)} in this network"
                )
            elif not np.can_cast(array.dtype, node.dtype, casting="same_kind"):
                problems.append(f"parameter {name!r} is {array.dtype} in the table, {node.dtype} in this network")
        for name in offered:
            if name not in wanted:
                problems.append(f"the table's parameter {name!r} matches no parameter of this network")
        if problems:
            raise FeedError("cannot adopt these parameters into this network: " + "; ".join(problems))
        return Parameters(self, {node.index: offered[name] for name, node in wanted.items()})


def convert_payload(value, node, error_class, what, dtype=None):
    """``value`` as a read-only array of ``node``'s dtype (or ``dtype``) and shape (numpy's same_kind casting).

    The array is immutable: one the caller could still write (its own array, or
    a ``Tensor`` made from it) is copied, so that changing it later cannot
    change a run or a parameter table that was made from it.
    """
    dtype = dtype or node.dtype
    what = f"{what} {describe_node(node)}"
    array = numeric_array(value, what, error_class)
    if not np.can_cast(array.dtype, dtype, casting="same_kind"):
        raise error_class(f"{what}: cannot cast {array.dtype} to {dtype}")
    if tuple(array.shape) != node.shape:
        raise error_class(f"{what}: shape {format_shape(array.shape)} does not match {format_shape(node.shape)}")
    if dtype == "int32":
        problem = int32_problem(array)
        if problem is not None:
            raise error_class(f"{what}: {problem}")
    # Comparing the dtype itself with the name is exact and much cheaper than reading ``dtype.name``.
    if array.dtype != dtype:
        return freeze(array.astype(dtype))
    if array.flags.owndata and not isinstance(value, (np.ndarray, Tensor)):
        return freeze(array)  # np.asarray made it from numbers or lists: nobody else holds it
    return immutable(array)


def evaluate(nodes, parameter_slots, feeds):
    """The numpy interpreter: every node in order. Returns the list of values (read-only arrays)."""
    values = [None] * len(nodes)
    with np.errstate(all="ignore"):
        for node in nodes:
            if node.is_source:
                values[node.index] = source_value(node, parameter_slots, feeds)
            else:
                inputs = [values[j] for j in node.operands]
                try:
                    value = lookup(node.opcode).forward(inputs, node.attrs)
                except ShapeError as error:  # an index out of range, say: name the line that recorded the node
                    raise located(error, node.source) from None
                # Made by this run and held by it alone: read-only in place, so a caller cannot change a run.
                values[node.index] = freeze(value)
    return values


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
        if not isinstance(network, Network):
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


class Run:
    """The values of one forward evaluation.

    A run made by a prepared plan (a network's second forward and later) keeps
    its values in that plan's arena and holds the arena until the run is gone;
    then the next forward may reuse it. So that nothing the caller holds can
    change when that happens, ``of`` and ``values`` hand out copies of the
    values that lie in the arena.
    """

    def __init__(self, network, parameters, values, prepared=None, workspace=None):
        self.network = network
        self.parameters = parameters
        self._values = values
        self._in_arena = None
        if prepared is not None:
            self._in_arena = prepared.in_arena
            weakref.finalize(self, prepared.release, workspace)

    def _readable(self, index):
        """Node ``index``'s value as the caller may hold it: read-only, and never in the arena."""
        value = self._values[index]
        if self._in_arena is not None and self._in_arena[index]:
            return freeze(np.array(value))
        return value

    def of(self, symbol):
        """The value of the node that ``symbol`` names in this run, as a ``Tensor``.

        Raises ``FeedError`` for a symbol of another network.
        """
        return Tensor(self._readable(self.network.index_of(symbol)))

    def values(self):
        """Every node's value, by index (read-only arrays)."""
        return [self._readable(index) for index in range(len(self._values))]

    def backward(self, target):
        """The reverse scan from a rank-0 ``target``; returns a ``Field`` (a gradient per node)."""
        index = self.network.index_of(target)
        check_backward(self.network.nodes(), index)
        return Field(self, index)

    def __repr__(self):
        return f"<Run: {plural(len(self._values), 'value')}, one per node of a {self.network.dtype} network>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        nodes = self.network.nodes()
        cells = []
        for node in nodes[:SHOWN_NODES]:
            value = self._readable(node.index)
            cells.append((node.index, node.opcode, format_shape(node.shape), value.dtype.name, values_text(value)))
        summary = f"Run: the value of each of the network's {plural(len(nodes), 'node')}"
        columns = ["node", "opcode", "shape", "dtype", "values"]
        return values_bundle("run", summary, columns, cells, hidden=len(nodes) - len(cells))


class Field:
    """One gradient per node of d target / d node, read through symbols.

    A field is a value: what ``of`` gives for a node depends on the run and the
    target alone, never on which nodes were read before, in what order, or by
    which thread. Each node's gradient is defined once:

    - a node on a path from a parameter or an input to the target gets the
      reverse scan's cotangent, in which a softmax, log-softmax or layer norm is
      differentiated in closed form (``topos.model.composites``);
    - a node inside such a group, or one that depends on constants alone (a
      leaf, say), gets the cotangent of a second scan over every ancestor of the
      target that applies each primitive's own rule; it never replaces a
      gradient of the first scan;
    - a node with no path to the target gets zeros.

    Each scan runs at most once, when a read first needs it, under the field's
    lock. From a network's second backward from a target on, the gradients of
    the parameters and float inputs come from a prepared plan of the backward
    nodes (``topos.compiler.program``), which reads the run's forward values and
    writes each gradient into a buffer of its own: the graph's rules are the
    first scan's, applied in the same order, so both give the same gradients to
    the last bit.
    """

    def __init__(self, run, target):
        self.run = run
        self.target = target
        self._needed = run.network._needed_for(target)
        self._lock = threading.Lock()
        self._cotangents = None  # the first scan's, by node index (formed on first need)
        self._complete = None  # the second scan's, over every ancestor (formed on first need)
        self._gradients = {}
        prepared = run.network._prepared_plan(target)
        if prepared is None:
            self._cotangents = self._scan(self._needed, network_composites(run.network))
        else:
            values, _, _, _ = prepared.run({}, {}, bound_values=run._values)
            self._gradients = {wrt: values[gradient] for wrt, gradient in prepared.plan.gradients}

    def _scan(self, needed, composites=None):
        nodes = self.run.network.nodes()
        values = self.run._values
        seed = np.ones((), dtype=nodes[self.target].dtype)
        with np.errstate(all="ignore"):
            return reverse_scan(nodes, self.target, EagerEmitter(), values, needed, seed, composites)

    def _first_scan(self):
        """The cotangents of the nodes on a path from a variable to the target, composites in closed form."""
        if self._cotangents is None:
            with self._lock:
                if self._cotangents is None:
                    self._cotangents = self._scan(self._needed, network_composites(self.run.network))
        return self._cotangents

    def _second_scan(self):
        """The cotangents of every ancestor of the target, each primitive by its own rule."""
        if self._complete is None:
            with self._lock:
                if self._complete is None:
                    self._complete = self._scan(ancestors(self.run.network.nodes(), self.target))
        return self._complete

    def _array(self, index):
        gradient = self._gradients.get(index)
        if gradient is not None:
            return gradient
        node = self.run.network.nodes()[index]
        array = self._first_scan().get(index)
        if array is None and (not self._needed[index] or index in inner_nodes(network_composites(self.run.network))):
            # The first scan forms no cotangent inside a composite, nor for a node that depends on constants alone.
            array = self._second_scan().get(index)
        if array is None:
            return np.zeros(node.shape, dtype=node.dtype if node.dtype != "int32" else self.run.network.dtype)
        if array.shape != node.shape:
            array = np.broadcast_to(array, node.shape)
        return array

    def of(self, symbol):
        """d target / d the node that ``symbol`` names, as a ``Tensor`` of that node's shape.

        A node with no path to the target gets zeros (an ``int32`` node, zeros
        of the network's dtype). Raises ``FeedError`` for a symbol of another network.
        """
        return Tensor(self._array(self.run.network.index_of(symbol)))

    def __repr__(self):
        return f"<Field: d node {self.target} / d each of {plural(len(self.run.network), 'node')}>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        nodes = self.run.network.nodes()
        sources = [node for node in nodes if node.opcode in ("Parameter", "Input")]
        cells = []
        for node in sources[:SHOWN_NODES]:
            gradient = self._array(node.index)
            cells.append((node.index, node.opcode, node.name or "", format_shape(node.shape), values_text(gradient)))
        target = nodes[self.target]
        summary = f"Field: d node {self.target} ({target.opcode}) / d each node, shown for the parameters and inputs"
        columns = ["node", "opcode", "name", "shape", "gradient"]
        return values_bundle("field", summary, columns, cells, hidden=len(sources) - len(cells))

    def parameters(self, parameters=None):
        """The gradients of the parameter slots, as a ``Gradients`` table."""
        parameters = parameters if parameters is not None else self.run.parameters
        self.run.network.check_parameters(parameters)
        return Gradients._made_here(self.run.network, {index: self._array(index) for index in parameters.slots})
