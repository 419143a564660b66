"""The six readings of the recording the panes read, as the page gets them.

- **plan**: ``network.entry(readables).lower()``;
- **gradient**: ``entry.backward(target, parameters).lower()``, where the target
  is the last rank-0 floating readable (the loss) and ``parameters`` are all of
  the network's parameters;
- **spec**, **graph**, **HLO** and **kernels** read the same network and plan;
  the HLO reading also carries, as its ``step``, the module of a whole training
  step (``emit_training_step``): the gradient reading's plan followed by the
  update of ``STEP_OPTIMIZER``, or the error that says why there is none.

A text reading comes as its text and its rows: ``{"text", "rows": [{"text",
"nodes"}]}``, where the rows' texts joined with newlines are the text, and each
row's ``nodes`` are the indices of the nodes it is about (none for a summary
line). The rows come from the same code that writes the text (``describe_rows``,
``emit_plan_rows``), so the page never reads nodes back out of the text.

Each reading is computed on its own: one that raises carries its error and the
others still show.

The page asks for the readings after every edit, and most edits do not change what
the script records (a comment, a print, a name): ``compute_reading`` keeps the
readings of the last few recordings by everything they are made of (see
``recording_key``), and a recording seen before gets its readings back without
lowering anything again. The page takes the readings one at a time, as each is
made (the pane in view first), so ``compute_reading`` makes one by name.
"""

import hashlib
import time

import numpy as np

from .. import show
from ..compiler.graph import Graph
from ..compiler.stablehlo import emit_plan_rows
from ..compiler.training_step import emit_training_step
from ..display import text_reading
from ..errors import ArgumentError
from ..model import optim
from ..ops import registry as primitive_registry
from ..ops.bodies import Region
from ..text import format_shape

#: The readings, in the page's order (``ReadingName`` in web/protocol.ts names the same).
READINGS = ("spec", "graph", "plan", "gradient", "hlo", "kernels")

#: The optimizer of the HLO reading's training step. The page cannot see which optimizer the
#: script builds (it may build none, or several), so the step shows this one's update.
STEP_OPTIMIZER = optim.Adam(lr=1e-3)


class Readings:
    """The six readings of one network, each computed on demand and at most once.

    ``filename`` is the user's file: the graph gives the lines of nodes recorded there.
    """

    def __init__(self, network, readables, filename):
        self.network = network
        self.readables = readables
        self.filename = filename
        self._plan = None
        self._gradient_plan = None
        self._kernels = None
        #: The readings cache's key for this recording (``readings_key``), once worked out.
        self.key = None

    def symbols(self, indices):
        return [self.network.symbol(i) for i in indices]

    def entry(self):
        return self.network.entry(self.symbols(self.readables))

    def plan(self):
        if self._plan is None:
            self._plan = self.entry().lower()
        return self._plan

    def gradient_plan(self):
        """The forward+backward plan of the gradient reading: the loss with respect to every parameter."""
        if self._gradient_plan is None:
            parameters = self.network.parameter_symbols()
            if not parameters:
                raise ArgumentError(
                    "the gradient reading differentiates with respect to parameters; this network has none"
                )
            target = self.network.symbol(self.gradient_target())
            self._gradient_plan = self.entry().backward(target, parameters).lower()
        return self._gradient_plan

    def kernels(self):
        if self._kernels is None:
            self._kernels = self.plan().kernels()
        return self._kernels

    def gradient_target(self):
        nodes = self.network.nodes()
        for index in reversed(self.readables):
            if nodes[index].shape == () and nodes[index].dtype in ("float32", "float64"):
                return index
        last = self.readables[-1]
        raise ArgumentError(
            f"the gradient reading needs a rank-0 floating value to differentiate; "
            f"the last value read, node {last}, is {format_shape(nodes[last].shape)} {nodes[last].dtype}"
        )

    def read_spec(self):
        return text_reading(self.network.describe_rows())

    def read_graph(self):
        nodes = self.network.nodes()
        data = show.graph_json(Graph.from_nodes(nodes))
        for node, recorded in zip(data["nodes"], nodes):
            if node.get("file", self.filename) != self.filename:
                node["line"] = None  # recorded inside topos, not by a line the editor shows
            # The calls it was recorded inside (layer_norm, the user's own functions): the drawing's groups.
            # The reading's text does not show them.
            node["scope"] = list(recorded.scope)
        return {"graph": data, **text_reading(show.graph_rows(data))}

    def read_plan(self):
        return text_reading(self.plan().describe_rows())

    def read_gradient(self):
        return text_reading(self.gradient_plan().describe_rows())

    def read_hlo(self):
        reading = text_reading(emit_plan_rows(self.plan()))
        try:
            reading["step"] = text_reading(emit_training_step(self.gradient_plan(), STEP_OPTIMIZER).rows)
        except MemoryError:
            raise
        except Exception as error:  # noqa: BLE001  (no training step: the forward module still shows)
            reading["step"] = {"error": reading_error(error)}
        return reading

    def read_kernels(self):
        return text_reading(self.kernels().describe_rows())


def reading_error(error):
    """A reading's error as its pane shows it. A reading is made by topos after the script has run, so
    the caller an argument error finds outside topos is never a line of the script (in the page there
    is none; natively, whatever called the playground): its message goes without that line. Errors
    that name a recorded node's line (``ShapeError`` from a node) keep it."""
    message = getattr(error, "message", None)
    return f"{type(error).__name__}: {message if isinstance(message, str) else error}"


def compute_reading(readings, name, cache=None):
    """One reading (or its error) by name, and the milliseconds it took.

    ``cache`` (``READINGS_CACHE`` unless given) answers a reading it has made before for
    the same recording, which then takes no time to make. Readings may be asked for in
    any order, and a run that is cut short leaves the ones it made for the next.
    """
    cache = READINGS_CACHE if cache is None else cache
    known = cache.results(readings_key(readings))
    if name in known:
        return known[name], 0.0
    started = time.perf_counter()
    try:
        reading = getattr(readings, f"read_{name}")()
    except MemoryError:
        raise
    except Exception as error:  # noqa: BLE001  (a reading that raises shows its error; the others still show)
        reading = {"error": reading_error(error)}
    known[name] = reading
    return reading, round((time.perf_counter() - started) * 1000, 2)


def compute_readings(readings, cache=None):
    """Every reading (or its error) by name, and the milliseconds each took (see ``compute_reading``)."""
    results, timings = {}, {}
    for name in READINGS:
        results[name], timings[name] = compute_reading(readings, name, cache)
    return results, timings


def readings_key(readings):
    """The cache's key for ``readings``: its recording (``recording_key``), worked out once."""
    if readings.key is None:
        # The functions that make the readings are part of the key: one replaced (a test's stand-in) makes new readings.
        producers = tuple(getattr(type(readings), f"read_{name}") for name in READINGS)
        readings.key = (producers, recording_key(readings.network, readings.readables, readings.filename))
    return readings.key


class ReadingsCache:
    """The readings of the last ``size`` recordings, the most recently used kept longest.

    A key holds the primitives registered when its readings were made (a script may
    register its own, and a primitive's rules make the plan and its text), so an entry
    answers only while exactly those primitive objects are registered; holding them
    also keeps their identities from being reused by others.
    """

    def __init__(self, size=4):
        self.size = size
        self._entries = {}

    def results(self, key):
        """The readings made so far for ``key``, by name: a dict to add the readings made next to."""
        results = self.get(key)
        if results is None:
            results = {}
            self.put(key, results)
        return results

    def get(self, key):
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        primitives, results = entry
        if not same_primitives(primitives, primitive_registry.snapshot()):
            return None
        self._entries[key] = entry  # back in last: the most recently used
        return results

    def put(self, key, results):
        self._entries.pop(key, None)
        self._entries[key] = (primitive_registry.snapshot(), results)
        while len(self._entries) > self.size:
            del self._entries[next(iter(self._entries))]

    def clear(self):
        self._entries.clear()


def same_primitives(saved, current):
    return saved.keys() == current.keys() and all(saved[name] is current[name] for name in saved)


def recording_key(network, readables, filename):
    """Everything the readings are made from: the user's file, the values read, and each node
    (opcode, operands, shape, dtype, attributes, name, source line, and a leaf's payload, which
    the HLO and kernels readings write out)."""
    return (filename, tuple(readables), network.dtype, tuple(node_key(node) for node in network.nodes()))


def node_key(node):
    payload = value_key(node.payload) if node.opcode == "Leaf" else None
    return (node.opcode, node.operands, node.shape, node.dtype, value_key(node.attrs), node.name, node.source, payload)


def value_key(value):
    """A hashable key equal for equal values: arrays by dtype, shape and a digest of their bytes."""
    if isinstance(value, np.ndarray):
        digest = hashlib.blake2b(np.ascontiguousarray(value).tobytes(), digest_size=16).digest()
        return ("array", value.dtype.str, value.shape, digest)
    if isinstance(value, Region):
        # A body (a Scan's step, a Cond's branches) by its nodes: its repr, "<10 nodes>", is the same
        # for two different steps of ten nodes, which would be handed each other's readings.
        body = tuple(node_key(node) for node in value.nodes)
        return ("region", body, value.arguments, value.captured, value.outputs)
    if isinstance(value, dict):
        return ("dict", tuple((key, value_key(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(value_key(item) for item in value))
    return (type(value).__qualname__, repr(value))


#: The cache ``compute_reading`` uses unless given another.
READINGS_CACHE = ReadingsCache()
