"""The six readings of the recording the panes read, as the page gets them.

- **plan**: ``network.entry(readables).lower()``;
- **gradient**: ``entry.backward(target, parameters).lower()``, where the target
  is the last rank-0 floating readable (the loss) and ``parameters`` are all of
  the network's parameters;
- **spec**, **graph**, **HLO** and **kernels** read the same network and plan.

A text reading comes as its text and its rows: ``{"text", "rows": [{"text",
"nodes"}]}``, where the rows' texts joined with newlines are the text, and each
row's ``nodes`` are the indices of the nodes it is about (none for a summary
line). The rows come from the same code that writes the text (``describe_rows``,
``emit_plan_rows``), so the page never reads nodes back out of the text.

Each reading is computed on its own: one that raises carries its error and the
others still show.
"""

import time

from .. import show
from ..compiler.graph import Graph
from ..compiler.stablehlo import emit_plan_rows
from ..errors import ArgumentError
from ..text import format_shape

#: The readings, in the page's order (``ReadingName`` in web/protocol.ts names the same).
READINGS = ("spec", "graph", "plan", "gradient", "hlo", "kernels")


def text_reading(rows):
    """A text reading from its ``(line, node indices)`` rows: the text, and the rows as JSON."""
    return {
        "text": "\n".join(line for line, _ in rows),
        "rows": [{"text": line, "nodes": list(nodes)} for line, nodes in rows],
    }


class Readings:
    """The six readings of one network, each computed on demand and at most once.

    ``filename`` is the user's file: the graph gives the lines of nodes recorded there.
    """

    def __init__(self, network, readables, filename):
        self.network = network
        self.readables = readables
        self.filename = filename
        self._plan = None
        self._kernels = None

    def symbols(self, indices):
        return [self.network.symbol(i) for i in indices]

    def entry(self):
        return self.network.entry(self.symbols(self.readables))

    def plan(self):
        if self._plan is None:
            self._plan = self.entry().lower()
        return self._plan

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
        data = show.graph_json(Graph.from_nodes(self.network.nodes()))
        for node in data["nodes"]:
            if node.get("file", self.filename) != self.filename:
                node["line"] = None  # recorded inside topos, not by a line the editor shows
        return {"graph": data, **text_reading(show.graph_rows(data))}

    def read_plan(self):
        return text_reading(self.plan().describe_rows())

    def read_gradient(self):
        parameters = self.network.parameter_symbols()
        if not parameters:
            raise ArgumentError("the gradient reading differentiates with respect to parameters; this network has none")
        target = self.network.symbol(self.gradient_target())
        plan = self.entry().backward(target, parameters).lower()
        return text_reading(plan.describe_rows())

    def read_hlo(self):
        return text_reading(emit_plan_rows(self.plan()))

    def read_kernels(self):
        return text_reading(self.kernels().describe_rows())


def compute_readings(readings):
    """Every reading (or its error) by name, and the milliseconds each took."""
    results, timings = {}, {}
    for name in READINGS:
        started = time.perf_counter()
        try:
            results[name] = getattr(readings, f"read_{name}")()
        except MemoryError:
            raise
        except Exception as error:  # noqa: BLE001  (a reading that raises shows its error; the others still show)
            results[name] = {"error": f"{type(error).__name__}: {error}"}
        timings[name] = round((time.perf_counter() - started) * 1000, 2)
    return results, timings
