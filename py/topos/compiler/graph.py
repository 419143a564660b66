"""The graph reading: nodes as a dataflow graph, in JSON (for the playground) and DOT.

``Graph.from_nodes(tape.nodes())`` reads a recording; ``Graph.from_plan(plan)``
reads the evaluated nodes of a plan and adds, per node, its direction (forward
or backward) and its fate. ``to_json()`` returns a JSON-ready dict::

    {"nodes": [{"index": 3, "opcode": "Mul", "shape": "[]", "dims": [], "dtype": "float64",
                "operands": [0, 1], "attrs": {}, "name": null, "file": "model.py", "line": 7}, ...],
     "edges": [[0, 3], [1, 3], ...]}

A node that holds a body (a ``Scan``'s step) has its body's graph under the attribute's name
(``"body": {"nodes", "edges", "arguments", "captured", "outputs", "fed_by"}``), numbered from 0;
``fed_by`` names the node's operand that feeds each placeholder, so a body drawn expanded is wired in.
Edges are ``[operand, reader]`` pairs, one per operand slot (a node that reads
a value twice has two edges from it). ``to_dot()`` is the same graph for Graphviz.
"""

import json

from ..errors import ArgumentTypeError
from ..model.nodes import Node
from ..ops.bodies import Region
from ..text import format_shape


def _json_value(value):
    if isinstance(value, (tuple, list)):
        return [_json_value(v) for v in value]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return str(value)


def node_entry(node):
    file, line = node.source if node.source else (None, None)
    entry = {
        "index": node.index,
        "opcode": node.opcode,
        "shape": format_shape(node.shape),
        "dims": list(node.shape),
        "dtype": node.dtype,
        "operands": list(node.operands),
        "attrs": {key: _json_value(value) for key, value in node.attrs.items()},
        "name": node.name,
        "file": file,
        "line": line,
    }
    # A node that holds a body (a Scan's step) carries the body's own graph, numbered from 0, so a
    # pane can draw the node as a group that expands into it; its attribute reads "<9 nodes>".
    bodies = {key: value for key, value in node.attrs.items() if isinstance(value, Region)}
    for key, region in bodies.items():
        entry[key] = {
            "nodes": [node_entry(inner) for inner in region.nodes],
            "edges": [[j, inner.index] for inner in region.nodes for j in inner.operands],
            "arguments": list(region.arguments),
            "captured": list(region.captured),
            "outputs": list(region.outputs),
            "fed_by": fed_by(node, key),
        }
    return entry


def fed_by(node, key):
    """The node (an operand of ``node``) that gives each placeholder of its body ``key`` its value, in the
    order ``arguments + captured``; None where no operand does (a custom backward's cotangent).

    Each primitive orders its operands its own way (its class's docstring), so the page can wire an
    expanded body to the node's operands without knowing the ops: every body's captured values come
    last, in the order of the attributes; the arguments are the leading operands, after a ``Cond``'s
    predicate, and a ``CustomVjp``'s are its residuals, after ``out`` and the arguments."""
    region, operands = node.attrs[key], list(node.operands)
    regions = [value for value in node.attrs.values() if isinstance(value, Region)]
    after = sum(len(other.captured) for other in regions[regions.index(region) + 1 :])
    end = len(operands) - after
    captured = operands[end - len(region.captured) : end]
    if node.opcode == "Cond":
        arguments = operands[1 : 1 + len(region.arguments)]
    elif node.opcode == "CustomVjp":
        start = 1 + node.attrs["arguments"]
        arguments = operands[start : start + len(region.arguments) - 1] + [None]
    else:  # Scan: carries then xs; While: its carries, for the predicate and the body alike
        arguments = operands[: len(region.arguments)]
    return arguments + captured


class Graph:
    """A dataflow graph: ``nodes`` (JSON-ready dicts, in index order) and ``edges`` (``(operand, reader)``)."""

    def __init__(self, nodes, edges):
        self.nodes = list(nodes)
        self.edges = list(edges)

    @classmethod
    def from_nodes(cls, nodes):
        """The graph of recorded nodes (``tape.nodes()``, ``network.nodes()``) in their order."""
        nodes = list(nodes)
        for node in nodes:
            if not isinstance(node, Node):
                raise ArgumentTypeError(f"Graph.from_nodes() takes recorded nodes (tape.nodes()), got {node!r}")
        entries = [node_entry(node) for node in nodes]
        edges = [(operand, node.index) for node in nodes for operand in node.operands]
        return cls(entries, edges)

    @classmethod
    def from_plan(cls, plan):
        """The evaluated nodes of a plan, each with its ``direction`` and ``fate``."""
        entries, edges = [], []
        for index in plan.schedule:
            node = plan.nodes[index]
            entry = node_entry(node)
            entry["direction"] = "forward" if index < plan.forward_count else "backward"
            entry["fate"] = plan.fate(index)
            entries.append(entry)
            edges.extend((operand, index) for operand in node.operands)
        return cls(entries, edges)

    def __len__(self):
        return len(self.nodes)

    def __repr__(self):
        return f"<Graph: {len(self.nodes)} nodes, {len(self.edges)} edges>"

    def to_json(self):
        """A JSON-ready dict: ``{"nodes": [...], "edges": [[operand, reader], ...]}``."""
        return {"nodes": self.nodes, "edges": [list(edge) for edge in self.edges]}

    def dumps(self):
        """``to_json()`` as compact JSON text."""
        return json.dumps(self.to_json(), separators=(",", ":"))

    def to_dot(self):
        """The graph in Graphviz's DOT language; backward nodes are drawn dashed."""
        lines = ["digraph topos {", '  node [shape=box, fontname="monospace"];']
        for entry in self.nodes:
            label = f"{entry['index']} {entry['opcode']}\\n{entry['shape']}"
            style = ", style=dashed" if entry.get("direction") == "backward" else ""
            lines.append(f'  n{entry["index"]} [label="{_dot_escape(label)}"{style}];')
        for operand, reader in self.edges:
            lines.append(f"  n{operand} -> n{reader};")
        lines.append("}")
        return "\n".join(lines)


def _dot_escape(text):
    return text.replace('"', '\\"')
