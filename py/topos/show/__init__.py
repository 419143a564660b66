"""Cards: readings and results rendered for a notebook, a terminal or the playground.

Each ``show.*`` call returns a ``Card``. A card has three faces:

- ``str(card)``: plain text, for a terminal;
- ``card._repr_mimebundle_()``: rich output for Jupyter: the plain text, the
  card's JSON under ``application/vnd.topos.card+json`` (drawn by the topos
  JupyterLab extension) and a static HTML fallback for places without it: the
  graph as SVG (laid out by grandalf, ``svg_graph``), the plot as SVG
  (``svg_plot``), any other card as escaped ``<pre>`` text;
- ``card.to_json()``: a JSON-able dict that the playground renders.

Cards carry text and numbers only, never markup: whatever a user prints or
labels is data, and every renderer treats it as text.

While ``capture()`` is active (the playground does this around the user's
code), every card made is also appended to its list, so that ``show.lines(...)``
anywhere in a script reaches the output pane.

A card can change after it is made: ``card.update(value)`` shows ``value`` in it
from then on, as the function that made it would (a loss curve that grows while a
script trains). ``show.progress(step, total)`` reports how far a script is. While
``watch(watcher)`` is active (the playground's Run mode does this), the watcher is
told of every card made or changed and of every step reported, so that the page can
show them while the script runs.

The plot builder is immutable: every method returns a new builder::

    show.plot(Plot().layer(Line.y(losses).label("loss")).title("training").log_y())
"""

import base64
import math
import operator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np

from ..display import MIME_TYPE, pre_html, text_reading
from ..errors import ArgumentError, ArgumentTypeError, ShapeError
from ..frames import user_line

# The graph card's data lives in graph_card; the playground and the readings use its helpers as show.graph_json, ...
from .graph_card import (  # noqa: F401  (re-exported)
    INSTALL_HINT,
    MAX_DRAWN_NODES,
    graph_html,
    graph_json,
    graph_rows,
    graph_text,
    nodes_json,
)
from .pictures import heatmap_faces, image_faces
from .svg_image import card_png, card_svg
from .svg_plot import plot_problem, plot_svg

_captures = []
_watchers = []


@contextmanager
def capture(cards=None):
    """Collect every card made inside the ``with`` block into the yielded list.

    Pass a list to have the cards appended to it (the playground shares one
    list between cards and printed text, so that both keep their order).
    """
    cards = [] if cards is None else cards
    _captures.append(cards)
    try:
        yield cards
    finally:
        _captures.pop()


@contextmanager
def watch(watcher):
    """Tell ``watcher`` of every card made or changed, and every step reported, inside the ``with`` block.

    ``watcher.card(card)`` is called when a card is made and again each time it
    changes (``card.update(...)``); ``watcher.progress(step, total)`` each time the
    script calls ``show.progress``.
    """
    _watchers.append(watcher)
    try:
        yield watcher
    finally:
        _watchers.remove(watcher)


class Card:
    """One entry of the output: ``kind`` names how it is drawn, ``data`` what it holds."""

    def __init__(self, kind, data, text):
        if not isinstance(kind, str) or not isinstance(data, dict) or not isinstance(text, str):
            raise ArgumentTypeError(
                f"Card(kind, data, text) takes text, a dict and text, got {type(kind).__name__}, "
                f"{type(data).__name__} and {type(text).__name__}"
            )
        self.kind = kind
        self.data = data
        self._text = text
        for cards in _captures:
            cards.append(self)
        for watcher in _watchers:
            watcher.card(self)

    def update(self, value, **options):
        """Show ``value`` in this card from now on, as the ``show`` function that made it would; returns the card.

        A plot that grows while a script trains: ``curve = show.plot(...)`` once,
        then ``curve.update(Plot()...)`` with the points so far. The card's text and
        JSON are the new ones, and the playground's Run mode redraws it. An image or
        heatmap card keeps the options it was made with (captions, ranges, points),
        but those passed here: ``boundary.update(probabilities, title="step 200")``.
        """
        faces = _FACES.get(self.kind)
        if faces is None:
            raise ArgumentError(f"a {self.kind} card cannot be updated: only the cards of topos.show's functions can")
        if options and self.kind not in _OPTIONED:
            raise ArgumentError(f"a {self.kind} card's update() takes the new value alone, got {sorted(options)}")
        if self.kind in _OPTIONED:
            self._options = {**getattr(self, "_options", {}), **options}
            self.data, self._text = faces(value, **self._options)
        else:
            self.data, self._text = faces(value)
        for watcher in _watchers:
            watcher.card(self)
        return self

    def to_json(self):
        return {"kind": self.kind, **self.data}

    def __str__(self):
        return self._text

    def __repr__(self):
        return f"<{self.kind} card>\n{self._text}"

    def _repr_mimebundle_(self, include=None, exclude=None):
        faces = {"text/plain": self._text, "text/html": self._html(), MIME_TYPE: self.to_json()}
        if self.kind in _OPTIONED:
            faces["image/png"] = base64.b64encode(card_png(self.kind, self.data)).decode("ascii")
        return faces

    def _html(self):
        """The static HTML: a drawing for a graph or a plot, the text in a ``<pre>`` for the rest.

        A plot or graph whose data are not a plot's or a graph's (a script changed ``card.data``)
        is its text and why it is not drawn.
        """
        if self.kind == "plot":
            problem = plot_problem(self.data)
            return plot_svg(self.data) if problem is None else pre_html(self._text, "plot", f"Not drawn: {problem}.")
        if self.kind == "graph":
            return graph_html(self.data.get("graph"), self._text)
        if self.kind in _OPTIONED:
            return card_svg(self.kind, self.data, self._text)
        return pre_html(self._text, self.kind)


# Text cards -------------------------------------------------------------------


# Each kind of card has a function from what the user passed to the card's two faces,
# (its JSON data, its text): the function that makes the card and ``Card.update`` share it.


def spec(text):
    """The spec reading: ``tape.describe()`` or ``network.describe()``, or the tape or network itself.

    Given a tape or a network, the card also holds its rows (each line with the node it is about).
    """
    return Card("spec", *_described_faces(text))


def hlo(text):
    """StableHLO text (``plan.emit_stablehlo()``), or the plan itself (the card then also holds its rows)."""
    return Card("hlo", *_hlo_faces(text))


def lines(items):
    """Lines of text, one card: ``show.lines([f"loss = {loss}", ...])``."""
    return Card("lines", *_lines_faces(items))


def text(value):
    """Any value as plain text (what ``print`` would show)."""
    return Card("text", *_text_faces(value))


def _described_faces(value):
    describe_rows = getattr(value, "describe_rows", None)
    if not isinstance(value, str) and callable(describe_rows):
        return _rows_faces(describe_rows())
    text = _text_of(value)
    return {"text": text}, text


def _hlo_faces(value):
    from ..compiler.plan import Plan
    from ..compiler.stablehlo import emit_plan_rows

    if isinstance(value, Plan):
        return _rows_faces(emit_plan_rows(value))
    return _described_faces(value)


def _rows_faces(rows):
    """A text card's faces from ``(line, node indices)`` rows: the text and the rows as JSON."""
    reading = text_reading(rows)
    return reading, reading["text"]


def _lines_faces(items):
    if isinstance(items, str):
        raise ArgumentTypeError("show.lines() takes a list of strings; use show.lines([text]) for one line")
    try:
        items = [str(item) for item in items]
    except TypeError:
        raise ArgumentTypeError(f"show.lines() takes a list of strings, got {type(items).__name__}") from None
    return {"lines": items}, "\n".join(items)


def _text_faces(value):
    value = str(value)
    return {"text": value}, value


def _text_of(value):
    """Accept a string or anything with ``describe()`` (a tape, a network, a plan)."""
    if isinstance(value, str):
        return value
    describe = getattr(value, "describe", None)
    if callable(describe):
        text = describe()
        if isinstance(text, str):
            return text
        raise ArgumentTypeError(f"{type(value).__name__}.describe() returned {type(text).__name__}, not text")
    raise ArgumentTypeError(f"expected text or something with describe(), got {type(value).__name__}")


# Graph ------------------------------------------------------------------------


def graph(value):
    """The graph reading: a ``Graph``, or a tape, a network or nodes to make one from."""
    return Card("graph", *_graph_faces(value))


def _graph_faces(value):
    data = graph_json(value)
    reading = text_reading(graph_rows(data))
    return {"graph": data, "rows": reading["rows"]}, reading["text"]


# Plots ------------------------------------------------------------------------


def _numbers(values, what):
    """A flat list of floats; NaN and infinities become None (JSON has no such numbers).

    Anything but numbers (text, a ragged list, a recorded value that has not run)
    raises ``ArgumentError`` naming ``what`` took it.
    """
    from ..model.value import Value
    from ..tensor import numeric_array

    if isinstance(values, Value):
        raise ArgumentTypeError(f"{what} takes numbers; a recorded value has none until it runs (use run.of(value))")
    array = numeric_array(values, what, ArgumentError).astype(np.float64).reshape(-1)
    return [float(v) if math.isfinite(v) else None for v in array.tolist()]


@dataclass(frozen=True)
class Line:
    """One series of a plot: ``Line.y(values)`` (x = 0, 1, ...) or ``Line.xy(xs, ys)``."""

    xs: tuple
    ys: tuple
    name: str = ""

    @classmethod
    def y(cls, values):
        ys = _numbers(values, "Line.y")
        return cls(tuple(range(len(ys))), tuple(ys))

    @classmethod
    def xy(cls, xs, ys):
        xs, ys = _numbers(xs, "Line.xy"), _numbers(ys, "Line.xy")
        if len(xs) != len(ys):
            raise ShapeError(
                f"Line.xy needs as many x as y values, got {len(xs)} and {len(ys)}",
                shapes=[(len(xs),), (len(ys),)],
                source=user_line(),
            )
        return cls(tuple(xs), tuple(ys))

    def label(self, name):
        return replace(self, name=str(name))


@dataclass(frozen=True)
class Plot:
    """A line plot: layers of ``Line``s, a title, axis labels, a linear or log y axis."""

    layers: tuple = field(default=())
    title_text: str = ""
    x_label_text: str = ""
    y_label_text: str = ""
    log_scale_y: bool = False

    def layer(self, line):
        if not isinstance(line, Line):
            raise ArgumentTypeError(f"Plot.layer() takes a Line, got {type(line).__name__}")
        return replace(self, layers=self.layers + (line,))

    def title(self, text):
        return replace(self, title_text=str(text))

    def x_label(self, text):
        return replace(self, x_label_text=str(text))

    def y_label(self, text):
        return replace(self, y_label_text=str(text))

    def log_y(self, on=True):
        return replace(self, log_scale_y=bool(on))

    def to_json(self):
        layers = []
        for line in self.layers:
            ys = list(line.ys)
            if self.log_scale_y:
                # A log axis cannot place zero or a negative number: those points become gaps.
                ys = [v if v is not None and v > 0 else None for v in ys]
            layers.append({"label": line.name, "x": list(line.xs), "y": ys})
        return {
            "title": self.title_text,
            "x_label": self.x_label_text,
            "y_label": self.y_label_text,
            "log_y": self.log_scale_y,
            "layers": layers,
        }


def plot(value):
    """A plot card from a ``Plot`` builder (or a single ``Line``).

    A plot that grows while the script runs is one card, updated:
    ``curve = show.plot(Plot().title("loss"))``, then ``curve.update(Plot().layer(Line.y(losses)))``.
    """
    return Card("plot", *_plot_faces(value))


def _plot_faces(value):
    if isinstance(value, Line):
        value = Plot().layer(value)
    if not isinstance(value, Plot):
        raise ArgumentTypeError(f"show.plot() takes a Plot, got {type(value).__name__}")
    return value.to_json(), plot_text(value)


def plot_text(value):
    """A plot in words, for terminals: each line's length, first, last, least and largest value."""
    head = value.title_text or "plot"
    axes = f" ({value.x_label_text or 'x'} against {value.y_label_text or 'y'}{', log y' if value.log_scale_y else ''})"
    rows = [head + axes]
    for number, line in enumerate(value.layers):
        finite = [v for v in line.ys if v is not None]
        name = line.name or f"line {number + 1}"
        if not finite:
            rows.append(f"  {name}: {len(line.ys)} points, none finite")
            continue
        rows.append(
            f"  {name}: {len(line.ys)} points, first {finite[0]:.6g}, last {finite[-1]:.6g}, "
            f"min {min(finite):.6g}, max {max(finite):.6g}"
        )
    return "\n".join(rows)


# Images -----------------------------------------------------------------------


def image(values, captions=None, scale=None, range=None, title=""):  # noqa: A002 (range: as matplotlib names it)
    """An image card: grayscale ``[H, W]``, RGB ``[H, W, 3]``, or a grid ``[N, H, W]`` / ``[N, H, W, 3]``.

    ``values``: a numpy array, a ``Tensor`` or a run's result (``run.of(x)``); a last axis of
    1 is one channel, and ``[H, W, 3]`` is one RGB image unless ``scale`` is ``"gray"`` or
    ``"diverging"`` (then it is 3 images, each H x 3). ``captions``: one text an image
    (shown under it). ``scale``: ``"gray"``, ``"diverging"`` (signed data: white at zero,
    blue below, red above; the default where the data hold both signs) or ``"rgb"``.
    ``range``: ``(low, high)``, the values drawn as the scale's two ends (default: the
    data's). Large images are downsampled by block mean to at most 256x256, a grid draws
    its first 64 images (``topos.show.pictures``' module docstring has the rule); the text
    says so. ``card.update(new_values, **options)`` redraws it.
    """
    return _optioned("image", values, captions=captions, scale=scale, range=range, title=title)


def heatmap(values, x_range, y_range, points=None, classes=None, scale=None, range=None, title=""):  # noqa: A002
    """A heatmap card: ``values`` [H, W] over ``x_range`` x ``y_range``, with ``points`` [P, 2] over it.

    ``values[i, j]`` fills column ``j`` of ``W`` across ``x_range`` and row ``i`` of ``H`` up
    ``y_range`` (row 0 at the bottom): ``values[i, j] = f(xs[j], ys[i])``. ``classes``:
    one whole number a point, its colour. ``scale`` and ``range`` as ``show.image``'s; a
    classifier's probabilities read best as ``scale="diverging", range=(0, 1)``: white at
    0.5, the decision boundary. ``card.update(new_values, **options)`` redraws it (a
    boundary that moves while a network trains).
    """
    options = {"points": points, "classes": classes, "scale": scale, "range": range, "title": title}
    return _optioned("heatmap", values, x_range=x_range, y_range=y_range, **options)


def _optioned(kind, values, **options):
    """A card whose faces take options besides the value: the card keeps them for ``update``."""
    card_data, card_text = _FACES[kind](values, **options)
    card = Card(kind, card_data, card_text)
    card._options = options
    return card


_OPTIONED = ("image", "heatmap")

_FACES = {
    "spec": _described_faces,
    "hlo": _hlo_faces,
    "lines": _lines_faces,
    "text": _text_faces,
    "graph": _graph_faces,
    "plot": _plot_faces,
    "image": image_faces,
    "heatmap": heatmap_faces,
}


# Progress ---------------------------------------------------------------------


def progress(step, total=None):
    """Report that the script has done ``step`` steps (of ``total``, when it knows how many).

    The playground's Run mode shows the step and the steps per second; anywhere
    else this does nothing. A training loop calls it once a step:
    ``show.progress(step + 1, total=steps)``.
    """
    step = _whole_number(step, "step")
    if total is not None:
        total = _whole_number(total, "total")
    for watcher in _watchers:
        watcher.progress(step, total)


def _whole_number(value, name):
    try:
        number = operator.index(value)
    except TypeError:
        raise ArgumentTypeError(f"show.progress() takes a whole number as {name}, got {type(value).__name__}") from None
    if number < 0:
        raise ArgumentError(f"show.progress() takes a {name} of 0 or more, got {number}")
    return number


__all__ = [
    "Card",
    "Line",
    "Plot",
    "capture",
    "graph",
    "heatmap",
    "hlo",
    "image",
    "lines",
    "plot",
    "progress",
    "spec",
    "text",
    "watch",
]
