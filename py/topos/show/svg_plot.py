"""The plot card drawn as SVG, for notebooks without the topos JupyterLab extension.

It reads the plot card's JSON (``Plot.to_json()``), the same data the playground
draws with uPlot: one ``<path>`` a line (a None is a gap: the path lifts its pen),
axes with ticks, the title, the axis labels and a legend. A log y axis has its
ticks at powers of ten. Plain string building: no plotting library.
"""

import math

from ..display import escape

WIDTH, HEIGHT = 640, 360
#: The plotting area's distance from the left, right, top and bottom edges.
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 50
#: The most ticks a log axis has: beyond, it labels every second power of ten (or third, ...).
MAX_LOG_TICKS = 10
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


def plot_svg(data):
    """The plot JSON as SVG text."""
    log_y = bool(data.get("log_y"))
    layers = data.get("layers", [])
    xs = [x for layer in layers for x, y in zip(layer["x"], layer["y"], strict=True) if x is not None and y is not None]
    ys = [y for layer in layers for y in layer["y"] if y is not None and (y > 0 or not log_y)]
    x_low, x_high = _span(xs)
    if log_y:
        y_low, y_high = _span([math.log10(y) for y in ys])
        y_low, y_high = math.floor(y_low), math.ceil(y_high)
        if y_low == y_high:
            y_high = y_low + 1
        # Every power of ten when there are few, every second or third one and so on when there are many.
        every = math.ceil((y_high - y_low + 1) / MAX_LOG_TICKS)
        y_ticks = [(float(power), _power_label(power)) for power in range(y_low, y_high + 1, every)]
    else:
        y_low, y_high, ticks = _linear_axis(*_span(ys))
        y_ticks = [(tick, f"{tick:g}") for tick in ticks]
    x_low, x_high, ticks = _linear_axis(x_low, x_high)
    x_ticks = [(tick, f"{tick:g}") for tick in ticks]

    def to_x(x):
        return LEFT + (x - x_low) / (x_high - x_low) * (WIDTH - LEFT - RIGHT)

    def to_y(y):
        value = math.log10(y) if log_y else y
        return HEIGHT - BOTTOM - (value - y_low) / (y_high - y_low) * (HEIGHT - TOP - BOTTOM)

    def tick_y(position):
        return HEIGHT - BOTTOM - (position - y_low) / (y_high - y_low) * (HEIGHT - TOP - BOTTOM)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="topos-plot" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
        f'<rect x="{LEFT}" y="{TOP}" width="{WIDTH - LEFT - RIGHT}" height="{HEIGHT - TOP - BOTTOM}" '
        'fill="none" stroke="#999"/>',
    ]
    for position, label in y_ticks:
        y = tick_y(position)
        parts.append(
            f'<g class="topos-tick topos-y-tick"><line x1="{LEFT - 4}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
            f'stroke="#ddd"/><text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(label)}</text></g>'
        )
    for position, label in x_ticks:
        x = to_x(position)
        parts.append(
            f'<g class="topos-tick topos-x-tick"><line x1="{x:.1f}" y1="{HEIGHT - BOTTOM}" x2="{x:.1f}" '
            f'y2="{HEIGHT - BOTTOM + 4}" stroke="#999"/>'
            f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">{escape(label)}</text></g>'
        )
    for number, layer in enumerate(layers):
        colour = COLOURS[number % len(COLOURS)]
        path = _path(layer["x"], layer["y"], to_x, to_y, log_y)
        parts.append(
            f'<path class="topos-line" data-layer="{number}" d="{path}" fill="none" stroke="{colour}" '
            'stroke-width="1.5"/>'
        )
    parts.extend(_legend(layers))
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


def _span(values):
    """The least and largest value, widened when they are equal (and 0 to 1 when there are none)."""
    if not values:
        return 0.0, 1.0
    low, high = min(values), max(values)
    if low == high:
        return low - 0.5, high + 0.5
    return low, high


def _linear_axis(low, high, count=5):
    """An axis around [low, high] with about ``count`` round ticks (steps of 1, 2 or 5 times a power
    of ten), widened to the ticks just outside: ``(low, high, ticks)``."""
    rough = (high - low) / count
    power = 10 ** math.floor(math.log10(rough))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= rough)
    first = math.floor(low / step)
    last = math.ceil(high / step)
    # round() takes off the error of k * step (0.30000000000000004 for 3 * 0.1), relative to the step.
    digits = 12 - math.floor(math.log10(step))
    ticks = [round(k * step, digits) for k in range(first, last + 1)]
    return first * step, last * step, ticks


def _power_label(power):
    """A power of ten as a tick reads it: 0.01, 1, 100 near one, 1e-5 or 1e6 further away."""
    if -3 <= power <= 4:
        return f"{10.0**power:g}"
    return f"1e{power}"


def _path(xs, ys, to_x, to_y, log_y):
    """A path through the points, the pen lifted (a new ``M``) after each gap."""
    commands = []
    pen_down = False
    for x, y in zip(xs, ys, strict=True):
        if x is None or y is None or (log_y and y <= 0):
            pen_down = False
            continue
        commands.append(f"{'L' if pen_down else 'M'} {to_x(x):.1f} {to_y(y):.1f}")
        pen_down = True
    return " ".join(commands)


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
