"""The sealed network and what running it hands back.

``Network`` is immutable, so any number of threads may ``forward`` one network
at once. What it caches (backward masks, and from a second run on the prepared
plans of its forward and backward) never changes a result; runs at once take
an arena each. ``Parameters``, ``Gradients`` (``topos.model.tables``), ``Run``
and ``Field`` (``topos.model.run``) are values: nothing the caller can read
changes after construction; this module re-exports them, where they have
always been imported from.

Running goes through the one numpy interpreter (``topos.model.interpreter``):
``forward`` and ``backward`` build their schedules here and with
``topos.model.lowering``, and run them plainly once, through a prepared plan
from the second run on (``PreparedOnSecondRun``). This module builds on the tape
(``reopen``, ``load``) and the checkpoint formats (``save``, ``load``,
``load_parameters``); the tape's ``seal`` makes a ``Network`` through
``register_network_class``. The compiler builds on this module, so the
``Entry`` that ``network.entry`` makes (a reading, not a run) is registered
here by the compiler (``register_entry_class``) rather than imported.
"""

import numbers
import threading
from collections.abc import Mapping

import numpy as np

from ..dtypes import FLOAT_DTYPES
from ..errors import ArgumentTypeError, FeedError, IndexingError
from ..frames import user_line
from ..text import format_shape
from .autodiff import needed_nodes
from .checkpoint import read_network, read_parameters, save_network
from .interpreter import PreparedOnSecondRun, Schedule, interpret
from .lowering import lower
from .nodes import Symbol, describe_node, describe_node_rows, describe_nodes
from .run import SHOWN_NODES, Field, Run
from .tables import Gradients, Parameters, SlotTable, convert_payload, related_networks, values_bundle
from .tape import Tape, register_network_class, spec_bundle
from .value import Value

__all__ = [
    "SHOWN_NODES",
    "Field",
    "Gradients",
    "Network",
    "Parameters",
    "Run",
    "SlotTable",
    "convert_payload",
    "register_entry_class",
    "related_networks",
    "values_bundle",
]

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
        # Prepared plans of the forward and of each backward target ("forward", or the target's index).
        self._prepared = PreparedOnSecondRun()
        # Guards the masks, so that threads running one network at once work each out once.
        self._cache_lock = threading.Lock()

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
            raise IndexingError(
                f"node {index} is out of range: this network has nodes 0..{len(self._nodes) - 1}", source=user_line()
            )
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
        every node (``topos.model.interpreter``): the values are written into an arena
        that the ``Run`` holds and hands back, for a later run, once it is gone.
        """
        self.check_parameters(parameters)
        feeds = self.check_feeds(feeds)
        prepared = self._prepared_plan("forward")
        if prepared is None:
            values, _, _, _ = interpret(self._every_node(), parameters.slots, feeds)
            return Run(self, parameters, values)
        values, workspace, _, _ = prepared.run(parameters.slots, feeds, hold=True)
        return Run(self, parameters, values, prepared, workspace)

    def _every_node(self):
        """The schedule of a forward: every node evaluated, and kept (a ``Run`` may read any)."""
        every = range(len(self._nodes))
        return Schedule(self._nodes, every, every)

    def _prepared_plan(self, key):
        """The prepared plan for ``key`` (``"forward"``, or a backward target's index), from its second use on.

        Returns None where the plain interpreter runs (``PreparedOnSecondRun``): the
        first time, and for a backward with respect to nothing (a network without
        float parameters or inputs).
        """
        return self._prepared.for_run(key, lambda: self._prepare(key))

    def _prepare(self, key):
        if not self._nodes:
            return None
        if key == "forward":
            return self._every_node().prepare(keep_inside=True)
        variables = self._parameter_indices + self._input_indices
        wrt = tuple(i for i in variables if self._nodes[i].dtype in FLOAT_DTYPES)
        if not wrt:
            return None
        nodes, schedule, gradients = lower(self, (), key, wrt)
        backward = Schedule(nodes, schedule, (), tuple(zip(wrt, gradients)), len(self._nodes))
        return backward.prepare(after_forward=True)

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
