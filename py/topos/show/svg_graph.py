"""The graph card drawn as SVG, for notebooks without the topos JupyterLab extension.

The layout is grandalf's (``pip install topos-autodiff[notebook]``): a pure-Python
Sugiyama layout, so the same code runs in CPython and in Pyodide, and the engine
keeps numpy as its only run-time dependency, because grandalf is imported only here,
when a graph is drawn. Nodes flow top to bottom in layers, as the playground's
dagre drawing does; each node is a ``<g>`` holding a ``<rect>`` and a ``<text>``
(its index, opcode and shape), each edge a ``<path>`` with an arrow head.
"""

from ..display import escape

#: Width of one label character and the padding around a label, in SVG units (a monospace font of 12).
CHARACTER_WIDTH = 7.2
PADDING = 10
NODE_HEIGHT = 26
#: Space between the connected parts of a graph that share no edge, and around the drawing.
GAP = 30


def node_label(node):
    return f"{node['index']}  {node['opcode']} {node['shape']}"


class _Box:
    """What grandalf lays out for a vertex: its size in, its centre (``xy``) out."""

    def __init__(self, w, h):
        self.w = w
        self.h = h
        self.xy = (0.0, 0.0)


class _Route:
    """What grandalf routes for an edge: the points it passes through."""

    def __init__(self):
        self.points = []

    def setpath(self, points):
        self.points = list(points)


def graph_svg(data):
    """The graph JSON (``graph_json``) as SVG text; raises ``ImportError`` without grandalf."""
    from grandalf.graphs import Edge, Graph, Vertex
    from grandalf.layouts import SugiyamaLayout

    nodes = data.get("nodes", [])
    vertices = {}
    for node in nodes:
        vertex = Vertex(node["index"])
        vertex.view = _Box(len(node_label(node)) * CHARACTER_WIDTH + 2 * PADDING, NODE_HEIGHT)
        vertices[node["index"]] = vertex
    # A node that reads one value twice (``Mul 4, 4``) is one edge in the drawing.
    pairs = list(dict.fromkeys((source, target) for source, target in data.get("edges", [])))
    edges = []
    for source, target in pairs:
        edge = Edge(vertices[source], vertices[target])
        edge.view = _Route()
        edges.append(edge)
    graph = Graph(list(vertices.values()), edges)

    # Lay out each connected part on its own, then place the parts side by side.
    left = GAP
    for part in graph.C:
        layout = SugiyamaLayout(part)
        layout.xspace, layout.yspace = 20, 30
        # optimize: each node moves down to just above its first reader (a parameter beside the matmul that reads it).
        layout.init_all(optimize=True)
        layout.draw()
        part_vertices = part.sV
        low = min(v.view.xy[0] - v.view.w / 2 for v in part_vertices)
        high = max(v.view.xy[0] + v.view.w / 2 for v in part_vertices)
        shift = left - low
        for vertex in part_vertices:
            x, y = vertex.view.xy
            vertex.view.xy = (x + shift, y + GAP)
        for edge in part.sE:
            edge.view.points = [(x + shift, y + GAP) for x, y in edge.view.points]
        left += high - low + GAP

    width = left
    height = max((v.view.xy[1] + v.view.h / 2 for v in vertices.values()), default=0) + GAP
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="topos-graph" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.1f} {height:.1f}" font-family="monospace" font-size="12">',
        '<defs><marker id="topos-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" '
        'orient="auto"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>',
    ]
    for (source, target), edge in zip(pairs, edges, strict=True):
        points = _clipped(edge.view.points, vertices[source].view, vertices[target].view)
        path = " ".join(f"{'M' if i == 0 else 'L'} {x:.1f} {y:.1f}" for i, (x, y) in enumerate(points))
        parts.append(
            f'<path class="topos-edge" data-from="{escape(source)}" data-to="{escape(target)}" d="{path}" '
            'fill="none" stroke="#555" marker-end="url(#topos-arrow)"/>'
        )
    for node in nodes:
        box = vertices[node["index"]].view
        x, y = box.xy
        parts.append(
            f'<g class="topos-node" data-node="{escape(node["index"])}">'
            f'<rect x="{x - box.w / 2:.1f}" y="{y - box.h / 2:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" '
            'rx="4" fill="#f4f6fa" stroke="#3b5b8c"/>'
            f'<text x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle">{escape(node_label(node))}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _clipped(points, source, target):
    """The route from the bottom edge of the source's box to the top edge of the target's."""
    if len(points) < 2:
        return points
    (x0, y0), (x1, y1) = points[0], points[-1]
    return [(x0, y0 + source.h / 2), *points[1:-1], (x1, y1 - target.h / 2)]
