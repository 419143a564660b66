"""The playground sends each text reading as rows: the text of each row and the nodes it is about.

For every gallery example: the rows joined with newlines are the reading's text,
exactly; the text is what the producer prints (``describe()``, ``emit_stablehlo()``,
``kernels().describe()``, ``show.graph_text``); and each row names the nodes its
producer wrote it for. And the reading names agree between Python and the page
(``ReadingName`` and ``READING_NAMES`` in web/protocol.ts, which the pane registry and the worker use).
"""

import json
import re
from pathlib import Path

import pytest

from topos import playground, show
from topos.ops.bodies import Region

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "docs" / "examples").glob("[0-9]*.py"))
TEXT_READINGS = playground.READINGS


@pytest.fixture(scope="module", params=EXAMPLES, ids=[path.name for path in EXAMPLES])
def example(request):
    """``(the run's result, the readings it made)`` for one gallery example."""
    result = json.loads(playground.run(request.param.read_text(encoding="utf-8")))
    assert result["error"] is None, result["error"]
    return result, playground.latest_readings


#: The gradient pane's reason for a recording without parameters (docs/playground.md: the pane shows why).
NO_PARAMETERS = "the gradient reading differentiates with respect to parameters; this network has none"


def readable(result, readings):
    """The readings the example has: every one, less the gradient where the network has no parameters
    (the PCA of the digits only reads its data), whose pane must then say so."""
    if readings.network.parameter_symbols():
        return TEXT_READINGS
    assert NO_PARAMETERS in result["readings"]["gradient"]["error"], result["readings"]["gradient"]
    return [name for name in TEXT_READINGS if name != "gradient"]


def test_every_reading_of_every_example_comes_as_rows(example):
    result, readings = example
    assert set(result["readings"]) == set(TEXT_READINGS)
    for name in readable(result, readings):
        reading = result["readings"][name]
        assert "error" not in reading, f"{name}: {reading.get('error')}"
        assert "\n".join(row["text"] for row in reading["rows"]) == reading["text"], name
        for row in reading["rows"]:
            assert "\n" not in row["text"], f"{name}: a row holds two lines: {row['text']!r}"
            assert all(type(node) is int for node in row["nodes"]), f"{name}: {row}"


def test_the_text_is_what_the_producers_print(example):
    result, readings = example
    texts = {name: result["readings"][name]["text"] for name in readable(result, readings)}
    assert texts["spec"] == readings.network.describe()
    assert texts["graph"] == show.graph_text(result["readings"]["graph"]["graph"])
    assert texts["plan"] == readings.plan().describe()
    assert texts["hlo"] == readings.plan().emit_stablehlo()
    assert texts["kernels"] == readings.kernels().describe()
    if "gradient" not in readable(result, readings):
        return
    target = readings.network.symbol(readings.gradient_target())
    gradient = readings.entry().backward(target, readings.network.parameter_symbols()).lower()
    assert texts["gradient"] == gradient.describe()


def nodes_of(reading):
    return [row["nodes"] for row in reading["rows"]]


#: How far a body's lines are indented under the node that holds them; a node's own row starts
#: with its index right-aligned in four columns, so it never starts this far in.
BODY_INDENT = "      "


def grouped(rows):
    """``[(row, body lines)]``: each node's row with the lines of the bodies it holds (a Scan's step,
    a While's condition and step), which the readings print nested under it. A body line names the
    node that holds it: the body's nodes are numbered in the body's own count (another node of the
    recording has the same index), and the page maps a row's nodes to the editor's lines, where the
    loop's call is the line that recorded the body."""
    groups = []
    for row in rows:
        if groups and row["text"].startswith(BODY_INDENT) and row["nodes"] == groups[-1][0]["nodes"]:
            groups[-1][1].append(row)
        else:
            groups.append((row, []))
    return groups


def regions(node):
    return [value for value in node.attrs.values() if isinstance(value, Region)]


def spec_body_lines(node):
    """How many lines the spec prints under ``node``: a line a body, a row each of its nodes, nested."""
    return sum(1 + sum(1 + spec_body_lines(inner) for inner in region.nodes) for region in regions(node))


def test_spec_and_graph_rows_name_their_node(example):
    result, readings = example
    count = len(readings.network)
    groups = grouped(result["readings"]["spec"]["rows"])
    assert [row["nodes"] for row, _ in groups] == [[index] for index in range(count)] + [[]]
    for row, body in groups[:-1]:
        assert len(body) == spec_body_lines(readings.network.nodes()[row["nodes"][0]]), row
    assert nodes_of(result["readings"]["graph"]) == [[index] for index in range(count)]


def test_plan_rows_name_the_scheduled_node_and_summaries_none(example):
    result, readings = example
    plan = readings.plan()
    groups = grouped(result["readings"]["plan"]["rows"])
    assert [row["nodes"] for row, _ in groups] == [[index] for index in plan.schedule] + [[], []]
    for row, body in groups[: len(plan.schedule)]:
        assert int(row["text"].split()[0]) == row["nodes"][0]  # the row starts with the node it names
        assert bool(body) == bool(regions(plan.nodes[row["nodes"][0]])), row  # a body's step, under it


def test_hlo_rows_name_the_node_whose_lowering_wrote_them(example):
    result, readings = example
    rows = result["readings"]["hlo"]["rows"]
    assert [row["nodes"] for row in rows[:2]] == [[], []]  # module and func.func
    assert [row["nodes"] for row in rows[-3:]] == [[], [], []]  # return and the closing braces
    plan = readings.plan()
    named = set()
    for row in rows[2:-3]:
        [node] = row["nodes"]
        named.add(node)
        # A loop's regions (its body's lines, indented past the function's) define the body's own
        # values, numbered past the function's; every other line defines one of its own node's.
        in_body = regions(plan.nodes[node]) and not re.match(r"    %", row["text"])
        defined = re.match(r"\s*%v(\d+)(?:_\w+)? = ", row["text"])
        if defined and not in_body:  # a line that defines a value defines one of its own node's
            assert int(defined.group(1)) == node, row
    # Every node the plan evaluates writes a line, except the parameters and inputs (the arguments).
    arguments = set(plan.arguments())
    assert named == {index for index in plan.schedule if index not in arguments}


def test_kernels_rows_name_each_steps_nodes(example):
    result, readings = example
    kernels = readings.kernels()
    steps = kernels.program.steps
    expected = [list(getattr(step, "nodes", None) or [step.key]) for step in steps] + [[], []]
    assert nodes_of(result["readings"]["kernels"]) == expected


def test_the_gradient_rows_name_the_nodes_of_the_backward_plan(example):
    result, readings = example
    if "gradient" not in readable(result, readings):
        return
    rows = result["readings"]["gradient"]["rows"]
    described = [row for row, _ in grouped(rows) if row["nodes"]]
    assert [int(row["text"].split()[0]) for row in described] == [row["nodes"][0] for row in described]
    assert [row["nodes"] for row in rows[-2:]] == [[], []]  # the summary and the live volume


# The reading names, in Python and on the page ------------------------------------------------


def typescript_names(path, pattern):
    text = (ROOT / path).read_text(encoding="utf-8")
    found = re.search(pattern, text)
    assert found, f"{path}: no match for {pattern}"
    return re.findall(r'"(\w+)"', found.group(1))


def test_the_reading_names_agree_between_python_and_the_page():
    python = list(playground.READINGS)
    protocol = typescript_names("web/protocol.ts", r"export type ReadingName =([^;]+);")
    panes = typescript_names("web/protocol.ts", r"READING_NAMES: ReadingName\[\] = \[([^\]]+)\]")
    assert [name for name in python if name not in protocol] == [], "readings Python makes that protocol.ts lacks"
    assert [name for name in protocol if name not in python] == [], "readings protocol.ts names that Python lacks"
    assert protocol == python, "the same names, in another order"
    assert panes == python, (
        "READING_NAMES (the panes' tabs, the worker's order) lists other readings, or in another order"
    )
