"""Cards (topos.show): plain text for terminals, a mime bundle for Jupyter, JSON for the playground."""

import json
import math

import numpy as np
import pytest
from seed_texts import open_seed_tape

from topos import show
from topos.compiler import Graph
from topos.show import MIME_TYPE, Line, Plot

MARKUP = '<img src=x onerror="alert(1)">'


seed_tape = open_seed_tape


def test_show_is_exported_from_topos():
    import topos

    assert topos.show is show
    assert "show" in topos.__all__


def test_spec_card_has_three_faces():
    tape = seed_tape()
    card = show.spec(tape.describe())
    assert str(card) == tape.describe()
    assert card.to_json() == {"kind": "spec", "text": tape.describe()}
    bundle = card._repr_mimebundle_()
    assert bundle["text/plain"] == tape.describe()
    assert bundle[MIME_TYPE] == card.to_json()
    json.dumps(bundle)  # every face is JSON-able


def test_spec_and_hlo_take_anything_that_describes_itself():
    tape = seed_tape()
    assert str(show.spec(tape)) == tape.describe()
    assert show.hlo("module @topos {}").to_json() == {"kind": "hlo", "text": "module @topos {}"}
    with pytest.raises(TypeError, match="describe"):
        show.spec(42)


def test_markup_in_text_is_escaped_in_html_and_kept_as_data():
    card = show.lines([MARKUP, "second"])
    assert str(card) == MARKUP + "\nsecond"
    assert card.to_json() == {"kind": "lines", "lines": [MARKUP, "second"]}
    html = card._repr_mimebundle_()["text/html"]
    assert "<img" not in html and "&lt;img" in html


def test_lines_rejects_a_bare_string():
    with pytest.raises(TypeError, match="list of strings"):
        show.lines("one line")
    assert show.lines([1, 2.5]).to_json()["lines"] == ["1", "2.5"]


def test_graph_card_reads_the_compilers_graph():
    tape = seed_tape()
    graph = Graph.from_nodes(tape.nodes())
    card = show.graph(graph)
    data = card.to_json()
    assert data["kind"] == "graph" and data["graph"] == graph.to_json()
    # Each line of the text is a row about its node, as the playground's readings give them.
    assert data["rows"] == [{"text": line, "nodes": [index]} for index, line in enumerate(str(card).splitlines())]
    assert str(card).splitlines() == [
        "   0  Parameter []",
        "   1  Input []",
        "   2  Input []",
        "   3  Mul [] <- 0, 1",
        "   4  Sub [] <- 3, 2",
        "   5  Mul [] <- 4, 4",
    ]
    # A tape (anything with nodes()) makes the same nodes and edges.
    direct = show.graph(tape).to_json()["graph"]
    assert [n["opcode"] for n in direct["nodes"]] == [n["opcode"] for n in graph.to_json()["nodes"]]
    assert direct["edges"] == graph.to_json()["edges"]


def test_plot_builder_is_immutable_and_serialises():
    losses = [4.0, 1.0, float("nan"), 0.25, 0.0]
    base = Plot()
    plot = base.layer(Line.y(losses).label("loss")).title("training").x_label("step").y_label("loss").log_y()
    assert base.layers == () and base.title_text == ""  # the builder returned new plots
    card = show.plot(plot)
    data = card.to_json()
    assert data["kind"] == "plot" and data["title"] == "training" and data["log_y"] is True
    assert data["x_label"] == "step" and data["y_label"] == "loss"
    # NaN cannot travel as JSON, and a log axis cannot place zero: both become gaps.
    assert data["layers"] == [{"label": "loss", "x": [0, 1, 2, 3, 4], "y": [4.0, 1.0, None, 0.25, None]}]
    json.dumps(data, allow_nan=False)
    assert str(card) == "training (step against loss, log y)\n  loss: 5 points, first 4, last 0, min 0, max 4"


def test_plot_takes_arrays_tensors_and_xy_lines():
    from topos import Tensor

    line = Line.xy(np.arange(3), Tensor([1.0, 2.0, 4.0]))
    data = show.plot(Plot().layer(line)).to_json()
    assert data["layers"][0]["x"] == [0.0, 1.0, 2.0] and data["layers"][0]["y"] == [1.0, 2.0, 4.0]
    assert show.plot(Line.y([math.inf, 1.0])).to_json()["layers"][0]["y"] == [None, 1.0]
    with pytest.raises(ValueError, match="as many x as y"):
        Line.xy([1, 2], [1])
    with pytest.raises(TypeError, match="Line"):
        Plot().layer([1, 2])


def test_capture_collects_cards_in_order_and_stops_after():
    with show.capture() as cards:
        first = show.lines(["a"])
        second = show.spec("   0  Leaf                              []")
    after = show.lines(["b"])
    assert cards == [first, second]
    assert after not in cards
    shared = ["printed text"]
    with show.capture(shared):
        card = show.text("x")
    assert shared == ["printed text", card]
