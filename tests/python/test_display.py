"""Rich display (topos.display, the show cards' HTML, the objects' mime bundles): escaping, SVG, tables, rows."""

import json
import re
import subprocess
import sys

import numpy as np
from seed_texts import record_seed

from topos import Tape, show
from topos.compiler.stablehlo import emit_plan_rows
from topos.display import MIME_TYPE, escape, rows_json, table_html, text_card, values_text
from topos.show import INSTALL_HINT, MAX_DRAWN_NODES, Line, Plot, graph_html
from topos.show.svg_graph import graph_svg, node_label
from topos.show.svg_plot import plot_svg

SCRIPT = "<script>alert(1)</script>"


def build(tape):
    return record_seed(tape, name="w")


def seed():
    network, (w, x, y, loss) = Tape.record(build)
    return network, (w, x, y, loss)


def assert_no_markup_from_user(html):
    assert "<script" not in html
    assert escape(SCRIPT) in html


# topos.display -------------------------------------------------------------------------


def test_escape_quotes_and_tags():
    assert escape('<a href="x">&') == "&lt;a href=&quot;x&quot;&gt;&amp;"
    assert escape(3) == "3"


def test_table_escapes_every_cell_and_marks_rows():
    html = table_html("plan", ["name", "value"], [(SCRIPT, 1), ("b", 2)], caption=[SCRIPT], marked={1})
    assert_no_markup_from_user(html)
    rows = re.findall(r"<tr[^>]*>.*?</tr>", html)
    assert len(rows) == 3  # the head, then one a row
    assert "topos-marked" not in rows[1] and "topos-marked" in rows[2]


def test_values_text_shows_a_few_values():
    assert values_text(np.float64(0.5)) == "0.5"
    assert values_text(np.arange(3, dtype=np.int32)) == "[0, 1, 2]"
    assert values_text(np.arange(10.0).reshape(2, 5)) == "[0, 1, 2, 3, ...]"


def test_rows_json_is_the_playgrounds_row_json():
    rows = [("   0  Parameter", (0,)), ("tape: 1 node", ())]
    assert rows_json(rows) == [{"text": "   0  Parameter", "nodes": [0]}, {"text": "tape: 1 node", "nodes": []}]
    card = text_card("spec", rows)
    assert card["kind"] == "spec" and card["text"] == "\n".join(row["text"] for row in card["rows"])


# Cards with rows ---------------------------------------------------------------------------


def test_spec_card_of_a_tape_or_network_holds_its_rows():
    network, _ = seed()
    card = show.spec(network).to_json()
    assert card["text"] == network.describe()
    assert card["rows"] == rows_json(network.describe_rows())
    tape = network.reopen()
    assert show.spec(tape).to_json()["rows"] == card["rows"]
    # Text in, text out: no rows to give.
    assert show.spec(network.describe()).to_json() == {"kind": "spec", "text": network.describe()}


def test_hlo_card_of_a_plan_is_its_module_with_rows():
    network, (_, _, _, loss) = seed()
    plan = network.entry([loss]).lower()
    card = show.hlo(plan)
    assert str(card) == plan.emit_stablehlo()
    assert card.to_json()["rows"] == rows_json(emit_plan_rows(plan))
    assert show.hlo(plan.emit_stablehlo()).to_json() == {"kind": "hlo", "text": plan.emit_stablehlo()}


# The graph's SVG ---------------------------------------------------------------------------


def test_graph_card_html_draws_every_node_and_edge():
    network, _ = seed()
    card = show.graph(network)
    html = card._repr_mimebundle_()["text/html"]
    assert html.startswith("<svg")
    data = card.to_json()["graph"]
    for node in data["nodes"]:
        group = re.search(rf'<g class="topos-node" data-node="{node["index"]}">(.*?)</g>', html)
        assert group, node
        assert "<rect" in group.group(1) and f">{escape(node_label(node))}</text>" in group.group(1)
    # Mul 4, 4 reads one value twice: one edge drawn for it.
    drawn = re.findall(r'class="topos-edge" data-from="(\d+)" data-to="(\d+)"', html)
    assert sorted((int(a), int(b)) for a, b in drawn) == sorted({tuple(edge) for edge in data["edges"]})


def test_graph_svg_places_nodes_below_what_they_read_and_escapes_labels():
    data = {
        "nodes": [
            {"index": 0, "opcode": SCRIPT, "shape": "[]", "line": None},
            {"index": 1, "opcode": "Neg", "shape": "[]", "line": None},
            {"index": 2, "opcode": "Leaf", "shape": "[]", "line": None},
        ],
        "edges": [[0, 1]],
    }
    svg = graph_svg(data)
    assert_no_markup_from_user(svg)
    centres = {
        int(index): float(y) + height / 2
        for index, y, height in (
            (m[0], m[1], float(m[2]))
            for m in re.findall(r'data-node="(\d+)"><rect x="[^"]+" y="([^"]+)" width="[^"]+" height="([^"]+)"', svg)
        )
    }
    assert centres[1] > centres[0]  # a reader is drawn below what it reads
    assert len(centres) == 3  # the unconnected leaf is drawn too


def test_graph_without_grandalf_shows_its_text_and_how_to_draw_it(monkeypatch):
    network, _ = seed()
    card = show.graph(network)
    monkeypatch.setitem(sys.modules, "grandalf", None)  # makes `import grandalf` raise ImportError
    bundle = card._repr_mimebundle_()
    assert "<svg" not in bundle["text/html"]
    assert escape(str(card)) in bundle["text/html"] and escape(INSTALL_HINT) in bundle["text/html"]
    assert bundle["text/plain"] == str(card) and bundle[MIME_TYPE] == card.to_json()


def test_the_engine_never_imports_grandalf_until_a_graph_is_drawn():
    code = (
        "import sys\n"
        "from topos import Tape, show\n"
        "tape = Tape()\n"
        "w = tape.parameter(1.0)\n"
        "(w * w).sum()\n"
        "card = show.graph(tape)\n"
        "card.to_json(); str(card)\n"
        "assert 'grandalf' not in sys.modules, 'imported too early'\n"
        "card._repr_mimebundle_()\n"
        "assert 'grandalf' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_graph_too_large_to_draw_shows_its_text():
    count = MAX_DRAWN_NODES + 1
    data = {"nodes": [{"index": i, "opcode": "Leaf", "shape": "[]", "line": None} for i in range(count)], "edges": []}
    html = graph_html(data, "the text")
    assert "<svg" not in html and "the text" in html and f"{count} nodes" in html


# The plot's SVG ----------------------------------------------------------------------------


def path_commands(svg, layer):
    d = re.search(rf'class="topos-line" data-layer="{layer}" d="([^"]*)"', svg).group(1)
    return re.findall(r"[ML]", d)


def test_plot_svg_draws_a_path_a_line_with_gaps_title_labels_and_legend():
    plot = (
        Plot()
        .layer(Line.y([1.0, 2.0, float("nan"), 3.0, 4.0]).label("loss"))
        .layer(Line.y([4.0, 3.0]).label(SCRIPT))
        .title(SCRIPT)
        .x_label("step")
        .y_label("loss")
    )
    svg = show.plot(plot)._repr_mimebundle_()["text/html"]
    assert svg.startswith("<svg") and svg.count('class="topos-line"') == 2
    assert path_commands(svg, 0) == ["M", "L", "M", "L"]  # the NaN lifts the pen
    assert path_commands(svg, 1) == ["M", "L"]
    assert_no_markup_from_user(svg)
    assert ">step</text>" in svg and ">loss</text>" in svg
    assert svg.count('class="topos-legend"') == 2
    ticks = [float(t) for t in re.findall(r'class="topos-tick topos-y-tick">.*?>([^<]+)</text>', svg)]
    assert ticks[0] <= 1.0 and ticks[-1] >= 4.0


def test_log_plot_ticks_at_powers_of_ten_and_gaps_at_zero():
    data = Plot().layer(Line.y([100.0, 1.0, 0.0, 0.01])).log_y().to_json()
    svg = plot_svg(data)
    labels = re.findall(r'class="topos-tick topos-y-tick">.*?>([^<]+)</text>', svg)
    assert labels == ["0.01", "0.1", "1", "10", "100"]
    assert path_commands(svg, 0) == ["M", "L", "M"]
    many = plot_svg(Plot().layer(Line.y([1e-12, 1e12])).log_y().to_json())
    labels = re.findall(r'class="topos-tick topos-y-tick">.*?>([^<]+)</text>', many)
    assert labels[0] == "1e-12" and len(labels) <= 10
    assert all(re.fullmatch(r"1e-?\d+|0\.0*1|10*", label) for label in labels)


def test_an_empty_plot_still_draws_its_axes():
    svg = plot_svg(Plot().title("nothing yet").to_json())
    assert svg.startswith("<svg") and "nothing yet" in svg and 'class="topos-line"' not in svg


# The objects' bundles ----------------------------------------------------------------------


def test_tape_and_network_show_the_spec_table_and_card():
    network, _ = seed()
    for recording in (network, network.reopen()):
        bundle = recording._repr_mimebundle_()
        assert bundle["text/plain"] == recording.describe()
        assert bundle[MIME_TYPE] == text_card("spec", network.describe_rows())
        assert bundle["text/html"].count("<tr>") == 1 + len(network)
        assert "<td>Parameter</td><td>w</td>" in bundle["text/html"]
        json.dumps(bundle)
    assert re.fullmatch(r"<Tape: 6 nodes, float64, open>", repr(network.reopen()))


def test_names_are_escaped_in_the_spec_and_parameters_tables():
    tape = Tape()
    (tape.parameter([1.0, 2.0], name=SCRIPT) * 2.0).sum()
    assert_no_markup_from_user(tape._repr_mimebundle_()["text/html"])
    assert_no_markup_from_user(tape.seal().parameters()._repr_mimebundle_()["text/html"])


def test_plan_shows_its_rows_fates_and_peak():
    network, (_, _, _, loss) = seed()
    plan = network.entry([loss]).lower()
    bundle = plan._repr_mimebundle_()
    assert bundle["text/plain"] == plan.describe()
    assert bundle[MIME_TYPE] == text_card("plan", plan.describe_rows())
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", bundle["text/html"])[1:]
    assert len(rows) == len(plan.schedule)
    for index, row in zip(plan.schedule, rows, strict=True):
        assert f"<td>{plan.fate(index)}</td>" in row
    marked = re.findall(r'<tr class="topos-marked"[^>]*><td>(\d+)</td>', bundle["text/html"])
    assert marked == [str(plan.peak_node)]
    assert f"peak {plan.peak} elements at node {plan.peak_node}" in bundle["text/html"]


def test_parameters_run_and_field_say_what_they_hold():
    network, (w, x, y, loss) = seed()
    parameters = network.parameters().replace({"w": 0.25})
    table = parameters._repr_mimebundle_()
    assert table["text/plain"].splitlines() == ["Parameters: 1 slot", "  w  []  float64  0.25"]
    assert "<td>w</td><td>[]</td><td>float64</td><td>0.25</td>" in table["text/html"]
    assert repr(parameters) == "<Parameters: w>"  # unchanged: the docs print it

    run = network.forward(parameters, {})
    shown = run._repr_mimebundle_()
    assert shown["text/plain"].splitlines()[0] == "Run: the value of each of the network's 6 nodes"
    assert len(shown["text/plain"].splitlines()) == 1 + len(network)
    assert "<td>5</td><td>Mul</td><td>[]</td><td>float64</td><td>12.25</td>" in shown["text/html"]
    assert repr(run) == "<Run: 6 values, one per node of a float64 network>"

    field = run.backward(loss)
    gradients = field._repr_mimebundle_()
    lines = gradients["text/plain"].splitlines()
    assert lines[0].startswith("Field: d node 5 (Mul) / d each node")
    assert [line.split()[0] for line in lines[1:]] == ["0", "1", "2"]  # the parameter and the inputs
    assert lines[1].split()[-1] == values_text(field.of(w).numpy())
    assert repr(field) == "<Field: d node 5 / d each of 6 nodes>"


def test_a_large_run_lists_a_few_nodes_and_counts_the_rest():
    from topos.model.network import SHOWN_NODES

    tape = Tape()
    value = tape.parameter(1.0)
    for _ in range(SHOWN_NODES + 3):
        value = value * 2.0
    network = tape.seal()
    text = network.forward(network.parameters(), {})._repr_mimebundle_()["text/plain"]
    hidden = len(network) - SHOWN_NODES
    assert text.splitlines()[-1] == f"... and {hidden} more nodes"
    assert len(text.splitlines()) == 1 + SHOWN_NODES + 1
