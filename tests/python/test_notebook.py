"""docs/notebooks/cards.ipynb run in a real Jupyter kernel (nbclient): every card and object shows rich output.

The notebook makes every card (spec, graph, lines, plot, a log-y plot, hlo, text)
and shows every object (Tape, Network, Parameters, Run, Field, Plan). Each output
is checked for its MIME types and what they hold: the plain text is the reading's
own text, the card JSON is what ``to_json`` gives, the HTML is a table, an SVG or
escaped text. One kernel start (a few seconds) for the whole file.
"""

import base64
import pathlib
import re

import nbformat
import pytest
from nbclient import NotebookClient
from seed_texts import open_seed_tape, record_seed

from topos import Tape, show
from topos.display import MIME_TYPE, escape, rows_json

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "docs" / "notebooks" / "cards.ipynb"


seed_tape = open_seed_tape


def build(tape):
    return record_seed(tape, name="w")


@pytest.fixture(scope="module")
def outputs():
    """Each code cell's one result, by cell id, after running the notebook in a python3 kernel."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # The "python3" kernel spec runs this interpreter (jupyter_client puts sys.executable for "python").
    client = NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()
    results = {}
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        errors = [output for output in cell.outputs if output.output_type == "error"]
        assert not errors, f"{cell.id}: {errors}"
        shown = [output for output in cell.outputs if output.output_type == "execute_result"]
        assert len(shown) == 1, f"{cell.id} shows {len(shown)} results"
        results[cell.id] = shown[0].data
    return results


def test_the_notebook_is_stored_without_outputs_for_the_python3_kernel():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata.kernelspec.name == "python3"
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.id


def test_every_card_and_object_has_the_mime_types_it_should(outputs):
    cards = ["cell-02", "cell-03", "cell-08", "cell-09", "cell-10", "cell-11", "cell-12", "cell-13"]
    tables = ["cell-01", "cell-04", "cell-05", "cell-06", "cell-07", "cell-11"]
    for cell in cards:
        assert set(outputs[cell]) == {"text/plain", "text/html", MIME_TYPE}, cell
    for cell in tables:
        assert outputs[cell]["text/html"].startswith('<table class="topos-table'), cell
    for cell in ["cell-05", "cell-06", "cell-07"]:
        assert set(outputs[cell]) == {"text/plain", "text/html"}, cell


def test_an_image_card_also_carries_one_png(outputs):
    """The ramp 0..15 on the gray scale: byte 17 v, in the card's JSON and (enlarged) in the PNG."""
    data = outputs["cell-14"]
    assert set(data) == {"text/plain", "text/html", MIME_TYPE, "image/png"}
    card = data[MIME_TYPE]
    assert card["kind"] == "image" and card["title"] == "a 4x4 ramp"
    assert list(base64.b64decode(card["images"][0]["pixels"])) == [17 * v for v in range(16)]
    png = base64.b64decode(data["image/png"])
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert data["text/html"].startswith("<svg") and data["text/plain"].startswith("a 4x4 ramp: 4x4, gray scale")


def test_spec_of_the_tape_and_the_network(outputs):
    tape = seed_tape()
    for cell in ["cell-01", "cell-02"]:
        data = outputs[cell]
        assert data["text/plain"] == tape.describe()
        assert data[MIME_TYPE] == {"kind": "spec", "text": tape.describe(), "rows": rows_json(tape.describe_rows())}
    network, _ = Tape.record(build)
    table = outputs["cell-04"]
    assert table["text/plain"] == network.describe()
    for node in network.nodes():
        assert f"<tr><td>{node.index}</td><td>{node.opcode}</td>" in table["text/html"]
    assert "<caption>tape: 6 nodes, 1 parameter, 2 inputs</caption>" in table["text/html"]


def test_graph_card_is_an_svg_with_a_box_a_node(outputs):
    data = outputs["cell-03"]
    expected = show.graph(seed_tape())
    assert data["text/plain"] == str(expected)
    card, want = data[MIME_TYPE], expected.to_json()
    assert card["rows"] == want["rows"] and card["graph"]["edges"] == want["graph"]["edges"]
    # Each node's line is the notebook cell's line, and its scope the cell's top level (none): the rest is the same.
    where = ("line", "scope")
    without_line = [{k: v for k, v in node.items() if k not in where} for node in want["graph"]["nodes"]]
    assert [{k: v for k, v in node.items() if k not in where} for node in card["graph"]["nodes"]] == without_line
    assert [node["line"] for node in card["graph"]["nodes"]] == [5, 6, 7, 8, 8, 9]
    assert all(node.get("scope", []) == [] for node in card["graph"]["nodes"])
    svg = data["text/html"]
    assert svg.startswith("<svg")
    for node in expected.to_json()["graph"]["nodes"]:
        group = re.search(rf'<g class="topos-node" data-node="{node["index"]}">(.*?)</g>', svg).group(1)
        label = f"{node['index']}  {node['opcode']} {node['shape']}"
        assert "<rect" in group and f">{escape(label)}</text>" in group


def test_parameters_run_and_field(outputs):
    network, (w, x, y, loss) = Tape.record(build)
    parameters = network.parameters()
    run = network.forward(parameters, {})
    assert outputs["cell-05"]["text/plain"] == parameters._repr_mimebundle_()["text/plain"]
    assert "<td>w</td><td>[]</td><td>float64</td><td>0.5</td>" in outputs["cell-05"]["text/html"]
    assert outputs["cell-06"]["text/plain"] == run._repr_mimebundle_()["text/plain"]
    assert "<td>5</td><td>Mul</td><td>[]</td><td>float64</td><td>9</td>" in outputs["cell-06"]["text/html"]
    field = outputs["cell-07"]
    assert field["text/plain"].startswith("Field: d node 5 (Mul) / d each node")
    assert "<td>0</td><td>Parameter</td><td>w</td><td>[]</td><td>-12</td>" in field["text/html"]


def test_lines_text_and_hlo_cards(outputs):
    lines = outputs["cell-08"]
    assert lines[MIME_TYPE]["kind"] == "lines"
    assert lines["text/plain"].splitlines()[0] == "loss = (w x - y)^2           = 9.0"
    assert lines["text/html"].startswith('<pre class="topos-lines"')
    network, (_, _, _, loss) = Tape.record(build)
    plan = network.entry([loss]).lower()
    hlo = outputs["cell-12"]
    assert hlo["text/plain"] == plan.emit_stablehlo()
    assert hlo[MIME_TYPE] == show.hlo(plan).to_json()
    assert "tensor&lt;f64&gt;" in hlo["text/html"]
    assert outputs["cell-13"]["text/plain"] == "w learned: 2.000"


def test_plan_marks_its_peak(outputs):
    network, (_, _, _, loss) = Tape.record(build)
    plan = network.entry([loss]).lower()
    data = outputs["cell-11"]
    assert data["text/plain"] == plan.describe()
    assert data[MIME_TYPE]["kind"] == "plan" and data[MIME_TYPE]["rows"] == rows_json(plan.describe_rows())
    assert re.search(rf'<tr class="topos-marked"[^>]*><td>{plan.peak_node}</td>', data["text/html"])


def test_plots_are_svgs_with_a_path_a_line(outputs):
    linear, log = outputs["cell-09"], outputs["cell-10"]
    assert linear["text/plain"].startswith("training (step against loss)")
    assert log["text/plain"].startswith("training, log y (step against loss, log y)")
    assert linear["text/html"].count('class="topos-line"') == 1
    assert log["text/html"].count('class="topos-line"') == 2
    assert log[MIME_TYPE]["log_y"] is True and [layer["label"] for layer in log[MIME_TYPE]["layers"]] == [
        "loss",
        "loss / 10",
    ]
    ticks = re.findall(r'class="topos-tick topos-y-tick">.*?>([^<]+)</text>', log["text/html"])
    assert "1" in ticks and "0.01" in ticks
    assert all(re.fullmatch(r"1e-?\d+|0\.0*1|10*", tick) for tick in ticks)
    assert ">training, log y</text>" in log["text/html"]
