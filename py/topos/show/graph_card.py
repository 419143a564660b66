"""The graph card's data: a graph's JSON form, checked, its text and its HTML.

``show.graph`` reads a ``Graph`` (``topos.compiler``), anything with ``nodes()``
(a tape, a network) or a list of recorded nodes. Whatever gives a ``to_json()``
is checked to have the graph JSON's form (nodes with an index, an opcode and a
shape; edges between those nodes) before a card holds it, so that the text, the
SVG drawing and the playground all read a graph they can draw.
"""

from ..display import pre_html
from ..errors import ArgumentError, ArgumentTypeError, ToposError

#: What the graph card's HTML says where grandalf, which lays out its SVG, is not installed.
INSTALL_HINT = "pip install topos-autodiff[notebook] draws this graph."
#: The most nodes the graph card's HTML draws: the layout's time grows faster than the graph
#: (a second for 500 nodes, seven for 1200), and a drawing that large is not read anyway.
MAX_DRAWN_NODES = 500
#: What every node of a graph's JSON holds (a ``Graph``'s nodes hold more).
NODE_KEYS = ("index", "opcode", "shape")


def graph_json(value):
    """The JSON form of a graph: ``{"nodes": [...], "edges": [...]}``.

    A ``Graph`` from ``topos.compiler`` gives its own JSON form; anything with
    ``nodes()`` (a tape, a network) or a sequence of nodes is read directly.
    """
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return checked_graph_json(to_json(), f"{type(value).__name__}.to_json()")
    nodes = value.nodes() if callable(getattr(value, "nodes", None)) else value
    if isinstance(nodes, (str, bytes)) or not hasattr(nodes, "__iter__"):
        raise ArgumentTypeError(
            f"show.graph() takes a Graph, a tape, a network or a list of their nodes, got {type(value).__name__}"
        )
    return nodes_json(list(nodes))


def checked_graph_json(data, origin):
    """``data`` if it has a graph JSON's form; raises otherwise, naming ``origin`` (where ``data`` came from).

    The form: a dict whose ``"nodes"`` is a list of dicts, each with an ``index`` (an int,
    no two the same), an ``opcode`` and a ``shape``, and whose ``"edges"`` (if any) are
    ``[operand, reader]`` pairs of those indices.
    """
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        got = "a dict without a list of nodes" if isinstance(data, dict) else type(data).__name__
        raise ArgumentTypeError(
            f"show.graph() takes a Graph, a tape, a network or a list of their nodes; {origin} "
            f"gave {got}, not a graph's JSON"
        )
    indices = set()
    for position, node in enumerate(data["nodes"]):
        if not isinstance(node, dict) or any(key not in node for key in NODE_KEYS):
            raise ArgumentError(f"show.graph(): node {position} of {origin} lacks an index, an opcode or a shape")
        index = node["index"]
        if not isinstance(index, int) or isinstance(index, bool):
            raise ArgumentError(f"show.graph(): node {position} of {origin} has index {index!r}, not an int")
        if index in indices:
            raise ArgumentError(f"show.graph(): {origin} has two nodes of index {index}")
        indices.add(index)
    edges = data.get("edges", [])
    if not isinstance(edges, (list, tuple)):
        raise ArgumentError(f"show.graph(): the edges of {origin} are {type(edges).__name__}, not a list of pairs")
    for edge in edges:
        pair = isinstance(edge, (list, tuple)) and len(edge) == 2
        if not pair or not all(isinstance(end, int) and end in indices for end in edge):
            raise ArgumentError(f"show.graph(): {origin} has an edge {edge!r} that is not a pair of its nodes")
    return data


def nodes_json(nodes):
    """Graph JSON straight from recorded nodes (the same fields the compiler's graph has)."""
    from ..model.nodes import Node
    from ..text import format_shape

    for node in nodes:
        if not isinstance(node, Node):
            raise ArgumentTypeError(f"a graph is made of recorded nodes (tape.nodes()), got a {type(node).__name__}")
    return {
        "nodes": [
            {
                "index": node.index,
                "opcode": node.opcode,
                "shape": format_shape(node.shape),
                "line": node.source[1] if node.source else None,
                # The calls it was recorded inside, outermost first: the drawing groups nodes by them.
                "scope": list(node.scope),
            }
            for node in nodes
        ],
        "edges": [[operand, node.index] for node in nodes for operand in node.operands],
    }


def graph_text(data):
    """A graph as text: one line a node, naming the nodes it reads."""
    return "\n".join(line for line, _ in graph_rows(data))


def graph_rows(data):
    """The lines of ``graph_text(data)``, each with the node it is about: ``(line, (index,))``."""
    readers = {}
    for source, target in data.get("edges", []):
        readers.setdefault(target, []).append(source)
    rows = []
    for node in data.get("nodes", []):
        operands = ", ".join(str(i) for i in readers.get(node["index"], []))
        arrow = f" <- {operands}" if operands else ""
        rows.append((f"{node['index']:>4}  {node['opcode']} {node['shape']}{arrow}", (node["index"],)))
    return rows


def graph_html(data, text):
    """The graph card's HTML: an SVG drawing, or the text and why there is none (too many nodes, no
    grandalf, data that a card changed after it was made and that is no longer a graph)."""
    try:
        checked_graph_json(data, "the card's graph")
    except ToposError as error:
        return pre_html(text, "graph", f"Not drawn: {error}")
    count = len(data["nodes"])
    if count > MAX_DRAWN_NODES:
        note = f"{count} nodes: too many to draw here (at most {MAX_DRAWN_NODES})."
        return pre_html(text, "graph", note)
    try:
        import grandalf  # noqa: F401  (an optional extra: the engine runs without it)
    except ImportError:
        return pre_html(text, "graph", INSTALL_HINT)
    from .svg_graph import graph_svg

    return graph_svg(data)
