"""The plot card drawn as SVG, for notebooks without the topos JupyterLab extension.

It reads the plot card's JSON (``Plot.to_json()``), the same data the playground
draws with uPlot: one ``<path>`` a line (a None is a gap: the path lifts its pen),
axes with ticks, the title, the axis labels and a legend. A log y axis has its
ticks at powers of ten. The axes are exact decimals (``axes``), so any finite
values draw, the largest floats too; the points that cannot be placed (NaN and
infinities, which the JSON holds as None, and on a log axis zero and negative
values) are gaps, and a note in the plot's lower left corner counts them.
Plain string building: no plotting library.
"""

import sys

from ..display import escape
from ..text import plural
from .axes import linear_axis, log_axis

WIDTH, HEIGHT = 640, 360
#: The plotting area's distance from the left, right, top and bottom edges.
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 50
#: The largest finite float: a number in a plot's JSON is at most this large either way.
LARGEST_FLOAT = sys.float_info.max
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


def plot_svg(data):
    """The plot JSON as SVG text, for any finite values (a None is a point not drawn)."""
    log_y = bool(data.get("log_y"))
    layers = data.get("layers", [])
    points = [_drawable(layer, log_y) for layer in layers]
    x_axis = linear_axis([x for layer in points for x, _ in layer])
    ys = [y for layer in points for _, y in layer]
    y_axis = log_axis(ys) if log_y else linear_axis(ys)
    plot_width, plot_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def to_x(fraction):
        return LEFT + fraction * plot_width

    def to_y(fraction):
        return HEIGHT - BOTTOM - fraction * plot_height

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="topos-plot" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
        f'<rect x="{LEFT}" y="{TOP}" width="{WIDTH - LEFT - RIGHT}" height="{HEIGHT - TOP - BOTTOM}" '
        'fill="none" stroke="#999"/>',
    ]
    for fraction, label in y_axis.ticks:
        y = to_y(fraction)
        parts.append(
            f'<g class="topos-tick topos-y-tick"><line x1="{LEFT - 4}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
            f'stroke="#ddd"/><text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(label)}</text></g>'
        )
    for fraction, label in x_axis.ticks:
        x = to_x(fraction)
        parts.append(
            f'<g class="topos-tick topos-x-tick"><line x1="{x:.1f}" y1="{HEIGHT - BOTTOM}" x2="{x:.1f}" '
            f'y2="{HEIGHT - BOTTOM + 4}" stroke="#999"/>'
            f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">{escape(label)}</text></g>'
        )
    for number, layer in enumerate(layers):
        colour = COLOURS[number % len(COLOURS)]
        path = _path(layer, log_y, lambda x, y: (to_x(x_axis.fraction(x)), to_y(y_axis.fraction(y))))
        parts.append(
            f'<path class="topos-line" data-layer="{number}" d="{path}" fill="none" stroke="{colour}" '
            'stroke-width="1.5"/>'
        )
    parts.extend(_legend(layers))
    parts.extend(_undrawn_note(layers, points, log_y))
    title = data.get("title") or ""
    parts.append(
        f'<text class="topos-title" x="{WIDTH / 2}" y="{TOP - 16}" text-anchor="middle" font-size="14">'
        f"{escape(title)}</text>"
    )
    parts.append(
        f'<text class="topos-x-label" x="{LEFT + (WIDTH - LEFT - RIGHT) / 2}" y="{HEIGHT - 12}" '
        f'text-anchor="middle">{escape(data.get("x_label") or "")}</text>'
    )
    middle = TOP + (HEIGHT - TOP - BOTTOM) / 2
    parts.append(
        f'<text class="topos-y-label" x="16" y="{middle}" text-anchor="middle" '
        f'transform="rotate(-90 16 {middle})">{escape(data.get("y_label") or "")}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def plot_problem(data):
    """Why ``data`` is not a plot card's JSON (``Plot.to_json()``), in words; None when it is one.

    ``show.plot`` always makes one; a card whose data a script changed afterwards may hold anything.
    """
    if not isinstance(data, dict) or not isinstance(data.get("layers", []), list):
        return "its data hold no list of layers"
    for number, layer in enumerate(data.get("layers", [])):
        if not isinstance(layer, dict) or not isinstance(layer.get("x"), list) or not isinstance(layer.get("y"), list):
            return f"layer {number} has no list of x and of y values"
        if len(layer["x"]) != len(layer["y"]):
            return f"layer {number} has {len(layer['x'])} x and {len(layer['y'])} y values"
        odd = next((value for value in layer["x"] + layer["y"] if not _number_or_gap(value)), None)
        if odd is not None:
            return f"layer {number} holds {odd!r}, neither a finite float nor None"
    return None


def _number_or_gap(value):
    """A value a plot card's JSON holds: None (a gap) or a finite number a float can hold."""
    if value is None:
        return True
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return abs(value) <= LARGEST_FLOAT  # an int compares exactly; NaN and infinities fail


def _placeable(x, y, log_y):
    """Whether the plot can place a point: x and y finite (not None), and y positive on a log axis."""
    return x is not None and y is not None and (y > 0 or not log_y)


def _drawable(layer, log_y):
    """The layer's points that the plot can place."""
    return [(x, y) for x, y in zip(layer["x"], layer["y"], strict=True) if _placeable(x, y, log_y)]


def _path(layer, log_y, place):
    """A path through the layer's points, the pen lifted (a new ``M``) after each point not drawn."""
    commands = []
    pen_down = False
    for x, y in zip(layer["x"], layer["y"], strict=True):
        if not _placeable(x, y, log_y):
            pen_down = False
            continue
        left, top = place(x, y)
        commands.append(f"{'L' if pen_down else 'M'} {left:.1f} {top:.1f}")
        pen_down = True
    return " ".join(commands)


def _undrawn_note(layers, points, log_y):
    """The points left out, in words (a gap at a line's end would not show it): none, or one ``<text>``."""
    undrawn = sum(len(layer["y"]) for layer in layers) - sum(len(drawn) for drawn in points)
    if not undrawn:
        return []
    why = "NaN or infinite, or not positive on the log axis" if log_y else "NaN or infinite"
    note = f"{plural(undrawn, 'point')} not drawn: {why}"
    # Inside the plotting area, bottom left: the legend is top right, the axis labels outside.
    return [f'<text class="topos-note" x="{LEFT + 6}" y="{HEIGHT - BOTTOM - 6}" fill="#a33">{escape(note)}</text>']


def _legend(layers):
    """One line a layer, top right inside the plotting area: a short stroke in its colour, then its label."""
    parts = []
    for number, layer in enumerate(layers):
        label = layer.get("label") or f"line {number + 1}"
        y = TOP + 14 + 16 * number
        x = WIDTH - RIGHT - 150
        colour = COLOURS[number % len(COLOURS)]
        parts.append(
            f'<g class="topos-legend"><line x1="{x}" y1="{y - 4}" x2="{x + 20}" y2="{y - 4}" stroke="{colour}" '
            f'stroke-width="2"/><text x="{x + 26}" y="{y}">{escape(label)}</text></g>'
        )
    return parts
