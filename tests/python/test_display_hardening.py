"""Every face of every card and object draws whatever data it holds, or says in words why not (issue 18, §4).

``show.plot(show.Line.y([1.0, 1.7e308]))._repr_mimebundle_()`` once raised
``OverflowError``: the SVG's axis spanned more than the largest float. Here
hypothesis feeds every card constructor of ``topos.show`` and every object with a
``_repr_mimebundle_`` (Tape, Network, Parameters, Run, Field, Plan) NaN, both
infinities, the largest finite floats, subnormals, huge and zero ranges, log axes
over zeros and negatives, empty series and single points, and text holding quotes,
markup and control characters. Each call either makes a card or raises a
``ToposError``; each face that comes back is well-formed (the HTML and SVG parse
as XML), holds the user's text as text, and places every point it draws inside the
plotting area where an exact decimal oracle puts it; a point it cannot place (NaN,
an infinity, a non-positive value on a log axis) is a gap, and counted in words.
"""

import json
import math
import re
import warnings
import xml.etree.ElementTree as ET
from decimal import Decimal, localcontext

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import topos
from topos import Tape, show
from topos.compiler import Graph
from topos.display import MIME_TYPE
from topos.show import Line, Plot
from topos.show.svg_graph import graph_svg, node_label
from topos.show.svg_plot import BOTTOM, HEIGHT, LEFT, RIGHT, TOP, WIDTH

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, database=None)
MODEL_SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None)

LARGEST = float(np.finfo(np.float64).max)
EXTREMES = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    LARGEST,
    -LARGEST,
    1.7e308,
    1e308,
    -1e308,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    1e20,
    1e20 + 65536,
    math.nan,
    math.inf,
    -math.inf,
]
numbers = st.one_of(
    st.sampled_from(EXTREMES),
    st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True),
    st.integers(-(2**53), 2**53),
)
series = st.lists(numbers, max_size=10)
#: Text a user may write: markup, both quotes, an ampersand, control characters, a lone surrogate.
HOSTILE = ['"', "'", "<", ">", "&", "</text><script>alert(1)</script>", "]]>", "&amp;", "\x00", "\x1b[31m", "\ud800"]
texts = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(st.characters(codec="utf-8"), max_size=12),
    st.text(st.sampled_from("\"'<>&\x00\x07\x1b\r\n\t ab"), max_size=8),
)

NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def visible(text):
    """``text`` as an XML parser reads it back from a face: characters no XML may hold are
    U+FFFD, and a carriage return is a line end."""
    return NOT_XML.sub("\ufffd", str(text)).replace("\r\n", "\n").replace("\r", "\n")


def parsed(html):
    """A face's HTML as one element tree: every face is well-formed XML, a table's as an SVG's."""
    return ET.fromstring(f"<faces>{html}</faces>")


def by_class(tree, name):
    return [element for element in tree.iter() if name in (element.get("class") or "").split()]


def text_of(element):
    return "".join(element.itertext())


def check_bundle(bundle):
    """The faces every bundle has: plain text, HTML that parses (returned as a tree), JSON without NaN."""
    assert isinstance(bundle["text/plain"], str)
    tree = parsed(bundle["text/html"])
    assert not [element for element in tree.iter() if element.tag.rsplit("}", 1)[-1] == "script"]
    if MIME_TYPE in bundle:
        json.dumps(bundle[MIME_TYPE], allow_nan=False)
    return tree


def placeable(value, log_y=False):
    return math.isfinite(value) and (value > 0 or not log_y)


# Plots ---------------------------------------------------------------------------------------------------


def path_points(path):
    """A path's ``d`` as runs of points: a new run at each ``M``."""
    runs = []
    for command, x, y in re.findall(r"([ML]) (\S+) (\S+)", path.get("d")):
        if command == "M":
            runs.append([])
        runs[-1].append((float(x), float(y)))
    return runs


def expected_runs(xs, ys, log_y):
    """The runs of consecutive points that a line through (xs, ys) draws, gaps between them."""
    runs, pen_down = [], False
    for x, y in zip(xs, ys, strict=True):
        if placeable(x) and placeable(y, log_y):
            if not pen_down:
                runs.append([])
            runs[-1].append((x, y))
            pen_down = True
        else:
            pen_down = False
    return runs


def tick_labels(tree, axis):
    return [text_of(group) for group in by_class(tree, f"topos-{axis}-tick")]


def linear_pixel(value, low, high, start, length):
    """Where an exact decimal oracle puts ``value`` on an axis from ``low`` to ``high``."""
    with localcontext() as context:
        context.prec = 60
        return float(start + (Decimal(value) - low) / (high - low) * length)


def check_linear_axis(labels, values, start, length, pixels):
    """Ticks rise and cover the values; each value is drawn where the decimal oracle puts it."""
    ticks = [Decimal(label) for label in labels]
    assert ticks == sorted(ticks) and len(set(ticks)) == len(ticks), labels
    if values:
        assert ticks[0] <= Decimal(min(values)) and ticks[-1] >= Decimal(max(values)), (labels, values)
    for value, pixel in zip(values, pixels, strict=True):
        assert abs(pixel - linear_pixel(value, ticks[0], ticks[-1], start, length)) <= 0.051, (value, pixel, labels)


def plot_from(layers, log_y):
    """A plot of ``(xs, ys)`` layers: ``Line.y(ys)`` where xs is None, ``Line.xy(xs, ys)`` otherwise."""
    plot = Plot()
    for xs, ys in layers:
        plot = plot.layer(Line.y(ys) if xs is None else Line.xy(xs, ys))
    return plot.log_y(log_y)


def check_plot_svg(svg_tree, layers, log_y):
    """Every point that can be placed is drawn, where the oracle puts it; every other is a gap, counted."""
    plot_width, plot_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    paths = by_class(svg_tree, "topos-line")
    assert len(paths) == len(layers)
    drawn, pixels, undrawn = [], [], 0
    for path, (xs, ys) in zip(paths, layers, strict=True):
        xs = list(range(len(ys))) if xs is None else xs
        runs, expected = path_points(path), expected_runs(xs, ys, log_y)
        assert [len(run) for run in runs] == [len(run) for run in expected]  # gaps where the data have them
        for run, points in zip(runs, expected, strict=True):
            for (pixel_x, pixel_y), (x, y) in zip(run, points, strict=True):
                assert (
                    LEFT - 0.05 <= pixel_x <= WIDTH - RIGHT + 0.05 and TOP - 0.05 <= pixel_y <= HEIGHT - BOTTOM + 0.05
                )
                drawn.append((x, y))
                pixels.append((pixel_x, pixel_y))
        undrawn += len(ys) - sum(len(run) for run in expected)
    drawn_xs, drawn_ys = [x for x, _ in drawn], [y for _, y in drawn]
    pixels_x, pixels_y = [x for x, _ in pixels], [y for _, y in pixels]
    check_linear_axis(tick_labels(svg_tree, "x"), drawn_xs, LEFT, plot_width, pixels_x)
    if log_y:
        # Each tick is a power of ten (0.01, 1, 1e-324), rising; the first is at or below the least value.
        ticks = [Decimal(label) for label in tick_labels(svg_tree, "y")]
        powers = [tick.adjusted() for tick in ticks]
        assert ticks == [Decimal(1).scaleb(power) for power in powers] and powers == sorted(set(powers))
        if drawn_ys:
            assert ticks[0] <= Decimal(repr(min(drawn_ys)))  # the value as written: 1e-12 has its tick
        # A larger value is drawn higher up (a smaller SVG y), to the rounding of a tenth of a pixel.
        order = sorted(range(len(drawn_ys)), key=lambda i: drawn_ys[i])
        assert all(pixels_y[a] >= pixels_y[b] - 0.1 for a, b in zip(order, order[1:], strict=False))
    else:
        check_linear_axis(tick_labels(svg_tree, "y"), drawn_ys, HEIGHT - BOTTOM, -plot_height, pixels_y)
    notes = [text_of(note) for note in by_class(svg_tree, "topos-note")]
    if undrawn:
        point = "point" if undrawn == 1 else "points"
        assert len(notes) == 1 and notes[0].startswith(f"{undrawn} {point} not drawn: NaN or infinite"), notes
    else:
        assert not notes


layer_of_ys = series.map(lambda ys: (None, ys))
layer_of_xys = st.lists(st.tuples(numbers, numbers), max_size=10).map(
    lambda pairs: ([x for x, _ in pairs], [y for _, y in pairs])
)


@SETTINGS
@given(layers=st.lists(st.one_of(layer_of_ys, layer_of_xys), max_size=3), log_y=st.booleans())
@example(layers=[(None, [1.0, 1.7e308])], log_y=False)
@example(layers=[(None, [-1e308, 1e308])], log_y=False)
@example(layers=[(None, [LARGEST, LARGEST])], log_y=False)
@example(layers=[(None, [5e-324, 1e-323])], log_y=False)
@example(layers=[([1e308, -1e308], [0.0, 0.0])], log_y=True)
@example(layers=[(None, [999999999999998.0])], log_y=True)  # a float log10 rounds it up to 15.0
def test_a_plot_draws_any_numbers_each_point_where_an_exact_oracle_puts_it(layers, log_y):
    card = show.plot(plot_from(layers, log_y))
    tree = check_bundle(card._repr_mimebundle_())
    svgs = [element for element in tree if element.tag.endswith("svg")]
    assert len(svgs) == 1
    check_plot_svg(svgs[0], layers, log_y)
    # The text face names each line and says where none of its values is finite.
    for number, (_, ys) in enumerate(layers):
        row = str(card).splitlines()[1 + number]
        assert row.startswith(f"  line {number + 1}: {len(ys)} points")
        if not any(math.isfinite(y) for y in ys):
            assert row.endswith("none finite")


@pytest.mark.parametrize(
    "ys",
    [[1.0, 1.7e308], [-1e308, 1e308], [LARGEST, LARGEST], [5e-324, 1e-323], [1e20, 1e20 + 65536]],
    ids=["to 1.7e308", "-1e308 to 1e308", "the largest float twice", "subnormals", "1e20 and a step"],
)
def test_the_plots_that_raised_now_draw_with_ticks_that_tell_apart(ys):
    tree = check_bundle(show.plot(Line.y(ys))._repr_mimebundle_())
    labels = tick_labels(tree, "y")
    assert len(set(labels)) == len(labels) >= 2
    assert len(path_points(by_class(tree, "topos-line")[0])[0]) == len(ys)


def test_a_plot_with_no_number_it_can_place_draws_its_axes_and_says_why():
    for plot, why in [
        (Plot().layer(Line.y([math.nan, math.inf, -math.inf])), "3 points not drawn: NaN or infinite"),
        (Plot().layer(Line.y([0.0, -1.0])).log_y(), "2 points not drawn: NaN or infinite, or not positive on the log"),
        (Plot().layer(Line.y([])), None),
    ]:
        tree = check_bundle(show.plot(plot)._repr_mimebundle_())
        assert len(tick_labels(tree, "x")) >= 2 and len(tick_labels(tree, "y")) >= 2
        notes = [text_of(note) for note in by_class(tree, "topos-note")]
        if why is None:
            assert notes == []  # an empty line has no point to leave out
        else:
            assert len(notes) == 1 and notes[0].startswith(why), notes


def test_a_plots_axes_ignore_the_users_decimal_context():
    import decimal

    expected = show.plot(Line.y([0.1, 0.3, 1e308]))._repr_mimebundle_()["text/html"]
    with decimal.localcontext() as context:
        context.prec, context.rounding = 2, decimal.ROUND_UP
        context.traps[decimal.Inexact] = True
        assert show.plot(Line.y([0.1, 0.3, 1e308]))._repr_mimebundle_()["text/html"] == expected


# Every card constructor -----------------------------------------------------------------------------------


def _shaped(values):
    """``values`` as an array of some shape (rank 0 to 4) that holds them all, drawn."""
    count = len(values)
    shapes = [(), (count,), (1, count), (count, 1), (1, 1, count), (1, 1, count, 1), (1, count, 1, 1)]
    if count == 6:
        shapes += [(2, 3), (3, 2, 1), (1, 2, 3), (2, 1, 1, 3)]
    return st.sampled_from([shape for shape in shapes if int(np.prod(shape)) == count]).map(
        lambda shape: np.array(values, dtype=np.float64).reshape(shape)
    )


#: Each card constructor's call with the drawn argument: the heatmap also takes its two ranges.
MAKERS = {"heatmap": lambda value: show.heatmap(value, (-1.0, 1.0), (0.0, 2.0))}

#: What each card constructor of topos.show is given here: hypothesis draws its argument.
CARD_ARGUMENTS = {
    "spec": st.one_of(texts, st.integers()),
    "hlo": st.one_of(texts, st.none()),
    "lines": st.one_of(st.lists(st.one_of(texts, numbers), max_size=4), texts, numbers),
    "text": st.one_of(texts, numbers, st.lists(numbers, max_size=3).map(np.array)),
    "graph": st.one_of(texts, st.integers(), st.lists(st.integers(), max_size=3)),
    "plot": st.one_of(series.map(Line.y), texts, numbers),
    # Images and heatmaps: any floats (NaN, infinities and the largest included), any shape of rank 0 to 4.
    "image": st.one_of(st.lists(numbers, min_size=1, max_size=24).flatmap(_shaped), texts, numbers),
    "heatmap": st.one_of(st.lists(numbers, min_size=1, max_size=24).flatmap(_shaped), texts, numbers),
}


def test_the_sweep_covers_every_card_constructor():
    not_cards = {"Card", "Line", "Plot", "capture", "progress", "watch"}
    assert set(show.__all__) - not_cards == set(CARD_ARGUMENTS)


@SETTINGS
@given(data=st.data(), kind=st.sampled_from(sorted(CARD_ARGUMENTS)))
def test_every_card_constructor_makes_a_card_that_draws_or_raises_a_topos_error(data, kind):
    value = data.draw(CARD_ARGUMENTS[kind])
    try:
        card = MAKERS.get(kind, getattr(show, kind))(value)
    except topos.ToposError:
        return
    tree = check_bundle(card._repr_mimebundle_())
    if kind in ("spec", "hlo", "lines", "text"):
        # A text card's HTML is its text in a <pre>, every character of it read back as text.
        assert [text_of(pre) for pre in tree.iter("pre")] == [visible(card)]


graph_nodes = st.lists(st.integers(-(10**12), 10**12), unique=True, max_size=7).flatmap(
    lambda indices: st.tuples(
        st.tuples(*[st.tuples(st.just(index), texts, texts) for index in indices]),
        st.lists(st.tuples(st.sampled_from(indices), st.sampled_from(indices)), max_size=10)
        if indices
        else st.just([]),
    )
)


@SETTINGS
@given(graph=graph_nodes)
def test_a_graph_of_any_nodes_draws_each_node_once_and_each_edge(graph):
    nodes, edges = graph
    entries = [{"index": index, "opcode": opcode, "shape": shape} for index, opcode, shape in nodes]
    card = show.graph(Graph(entries, edges))
    tree = check_bundle(card._repr_mimebundle_())
    drawn = {int(group.get("data-node")): text_of(group) for group in by_class(tree, "topos-node")}
    assert drawn == {entry["index"]: visible(node_label(entry)) for entry in entries}
    arrows = {(int(path.get("data-from")), int(path.get("data-to"))) for path in by_class(tree, "topos-edge")}
    assert arrows == set(edges)


@pytest.mark.parametrize(
    "value, error_class, message",
    [
        (Plot(), topos.ArgumentTypeError, r"Plot.to_json\(\) gave a dict without a list of nodes"),
        (Graph([{"index": 0, "opcode": "Neg"}], []), topos.ArgumentError, "node 0 .* lacks an index, an opcode or a"),
        (Graph([{"index": "0", "opcode": "Neg", "shape": "[]"}], []), topos.ArgumentError, "has index '0', not an int"),
        (Graph([{"index": 0, "opcode": "A", "shape": "[]"}] * 2, []), topos.ArgumentError, "two nodes of index 0"),
        (Graph([{"index": 0, "opcode": "A", "shape": "[]"}], [(0, 3)]), topos.ArgumentError, r"edge \[0, 3\] that"),
    ],
    ids=["a plot", "a node without a shape", "a text index", "an index twice", "an edge to no node"],
)
def test_a_graph_that_is_not_one_is_refused_by_name_before_a_card_holds_it(value, error_class, message):
    with pytest.raises(error_class, match=message):
        show.graph(value)


# Every object with a mime bundle ---------------------------------------------------------------------------

payloads = st.lists(numbers, min_size=0, max_size=5).map(lambda values: np.array(values, dtype=np.float64))


@MODEL_SETTINGS
@given(
    values=payloads,
    weight_name=texts,
    input_name=texts,
    dtype=st.sampled_from(["float64", "float32"]),
)
@example(values=np.array([1.7e308, -1e308, math.nan]), weight_name='w"<&>', input_name="x'", dtype="float32")
def test_every_objects_bundle_parses_names_its_nodes_and_states_non_finite_values(
    values, weight_name, input_name, dtype
):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # The model's own arithmetic may overflow (1e308 * 1e308): what matters here is the display.
        warnings.simplefilter("ignore", RuntimeWarning)
        stored = np.asarray(values, dtype=dtype)
        tape = Tape(dtype)
        w = tape.parameter(values, name=weight_name)
        x = tape.input(values, name=input_name)
        loss = (w * x).sum()
        tape_bundle = tape._repr_mimebundle_()
        network = tape.seal()
        parameters = network.parameters()
        run = network.forward(parameters)
        field = run.backward(loss)
        plan = network.entry([loss]).backward(loss).lower()
        objects = {"network": network, "parameters": parameters, "run": run, "field": field, "plan": plan}
        bundles = {name: value._repr_mimebundle_() for name, value in objects.items()}
        cards = {"spec": show.spec(network), "graph": show.graph(network), "hlo": show.hlo(plan)}
        bundles.update({f"{name} card": card._repr_mimebundle_() for name, card in cards.items()})
    bundles["tape"] = tape_bundle
    rows = {name: table_rows(check_bundle(bundle)) for name, bundle in bundles.items()}
    for name in ("tape", "network", "parameters", "field"):
        assert visible(weight_name) in [row[2 if name in ("tape", "network", "field") else 0] for row in rows[name]]
    for name in ("tape", "network", "field"):
        assert visible(input_name) in [row[2] for row in rows[name]]
    # A non-finite value is written in words in the table of values (nan, inf), never dropped.
    (parameter_row,) = rows["parameters"]
    for value in stored[:4]:
        if not math.isfinite(value):
            assert ("nan" if math.isnan(value) else f"{value:g}") in parameter_row[-1]
    assert len(rows["run"]) == len(network)


def table_rows(tree):
    """The cells of each body row of the tables in a face, as text."""
    return [[text_of(cell) for cell in row.iter("td")] for row in tree.iter("tr") if row.find("td") is not None]


# Escaping ------------------------------------------------------------------------------------------------

#: Markup, both quotes, an ampersand, an entity and a control character (a terminal's colour code).
MARKUP = "a\"b'c<d>e&f</text><script>x</script>&amp;\x1b[31m"
SHOWN = visible(MARKUP)


def test_markup_in_every_user_string_comes_back_as_text_and_attributes_are_quoted():
    plot = (
        Plot().layer(Line.y([1.0, 2.0]).label(MARKUP)).title(MARKUP + "t").x_label(MARKUP + "x").y_label(MARKUP + "y")
    )
    tree = check_bundle(show.plot(plot)._repr_mimebundle_())
    assert [text_of(element) for element in by_class(tree, "topos-legend")] == [SHOWN]
    for name, suffix in [("topos-title", "t"), ("topos-x-label", "x"), ("topos-y-label", "y")]:
        assert [text_of(element) for element in by_class(tree, name)] == [SHOWN + suffix]
    for card in (show.lines([MARKUP, MARKUP]), show.text(MARKUP), show.spec(MARKUP), show.hlo(MARKUP)):
        assert [text_of(pre) for pre in check_bundle(card._repr_mimebundle_()).iter("pre")] == [visible(card)]
    tape = Tape()
    w = tape.parameter([1.0], name=MARKUP)
    loss = (w * tape.input([2.0], name=MARKUP + "x")).sum()
    network = tape.seal()
    run = network.forward(network.parameters())
    for recording, column in [(network, 2), (network.parameters(), 0), (run.backward(loss), 2)]:
        names = [row[column] for row in table_rows(check_bundle(recording._repr_mimebundle_()))]
        assert SHOWN in names
    check_bundle(run._repr_mimebundle_())
    entries = [{"index": 0, "opcode": MARKUP, "shape": MARKUP}, {"index": 1, "opcode": "Neg", "shape": "[]"}]
    tree = check_bundle(show.graph(Graph(entries, [(0, 1)]))._repr_mimebundle_())
    assert visible(node_label(entries[0])) in [text_of(node) for node in by_class(tree, "topos-node")]


def test_the_graph_svg_quotes_its_data_attributes_whatever_they_hold():
    # graph_svg draws whatever JSON it is given; show.graph checks the form first, the writer escapes anyway.
    data = {
        "nodes": [
            {"index": MARKUP, "opcode": "A", "shape": "[]"},
            {"index": '1" onload="x', "opcode": "B", "shape": "[]"},
        ],
        "edges": [[MARKUP, '1" onload="x']],
    }
    tree = parsed(graph_svg(data))
    assert {group.get("data-node") for group in by_class(tree, "topos-node")} == {SHOWN, '1" onload="x'}
    (edge,) = by_class(tree, "topos-edge")
    assert (edge.get("data-from"), edge.get("data-to"), edge.get("onload")) == (SHOWN, '1" onload="x', None)


# Cards whose data a script changed, and the playground's error report --------------------------------------


@pytest.mark.parametrize(
    "kind, data, why",
    [
        ("plot", {"layers": "many"}, "Not drawn: its data hold no list of layers."),
        ("plot", {"layers": [{"x": [0, 1], "y": [1.0]}]}, "Not drawn: layer 0 has 2 x and 1 y values."),
        (
            "plot",
            {"layers": [{"x": [0], "y": ["a"]}]},
            "Not drawn: layer 0 holds 'a', neither a finite float nor None.",
        ),
        ("plot", {"layers": [{"x": [0], "y": [math.inf]}]}, "Not drawn: layer 0 holds inf, neither a finite float"),
        ("plot", {"layers": [{"x": [10**400], "y": [1.0]}]}, "Not drawn: layer 0 holds 1000"),
        ("graph", {"graph": {"nodes": [{"index": 0}]}}, "Not drawn: show.graph(): node 0 of the card's graph lacks"),
        ("graph", {"graph": "none"}, "Not drawn: show.graph() takes a Graph"),
        ("graph", {}, "Not drawn: show.graph() takes a Graph"),
    ],
    ids=[
        "layers that are text",
        "unequal x and y",
        "text for a number",
        "an infinity",
        "a huge int",
        "a node without a shape",
        "a graph that is text",
        "no graph",
    ],
)
def test_a_card_whose_data_are_not_its_kinds_shows_its_text_and_why_it_is_not_drawn(kind, data, why):
    card = getattr(show, kind)(Line.y([1.0]) if kind == "plot" else Tape().nodes())
    card.data = data
    tree = parsed(card._repr_mimebundle_()["text/html"])
    assert [text_of(pre) for pre in tree.iter("pre")] == [str(card)]
    (hint,) = [text_of(element) for element in by_class(tree, "topos-hint")]
    assert hint.startswith(why)


def test_a_card_is_made_of_a_kind_a_dict_and_its_text():
    with pytest.raises(topos.ArgumentTypeError, match=r"takes text, a dict and text, got str, list and str"):
        show.Card("custom", [1], "text")
    check_bundle(show.Card("custom", {"n": 1}, MARKUP)._repr_mimebundle_())


def test_the_playground_reports_an_exception_whose_message_cannot_be_written():
    from topos import playground

    code = "class Odd(Exception):\n    def __str__(self):\n        raise ValueError('no')\n\nraise Odd()\n"
    error = json.loads(playground.run(code))["error"]
    assert error["type"] == "Odd" and error["line"] == 5
    assert error["message"] == "(no message: Odd.__str__ raised ValueError)"
