"""The graph reading: JSON for the playground, DOT for Graphviz, from a recording or a plan."""

import json
import re

import numpy as np

import topos
from topos import Graph, Tape, show
from topos.compiler import Graph as CompilerGraph


def build(tape):
    w = tape.parameter(np.ones((2, 3)), name="w")
    x = tape.input(np.ones(3), name="x")
    h = (w * x).tanh()
    return [h.sum(), h]


def test_graph_is_exported_from_topos_and_the_compiler():
    assert Graph is CompilerGraph
    assert "Graph" in topos.__all__


def test_graph_json_from_tape_nodes_has_index_opcode_shape_source_and_edges():
    tape = Tape()
    total, h = build(tape)
    nodes = tape.nodes()
    data = Graph.from_nodes(nodes).to_json()
    assert json.loads(json.dumps(data)) == data  # plain JSON
    assert [n["index"] for n in data["nodes"]] == list(range(len(nodes)))
    by_index = {n["index"]: n for n in data["nodes"]}
    for node in nodes:
        entry = by_index[node.index]
        assert entry["opcode"] == node.opcode
        assert entry["shape"] == "[" + ", ".join(str(d) for d in node.shape) + "]"
        assert entry["dims"] == list(node.shape)
        assert (entry["file"], entry["line"]) == node.source
        assert entry["file"].endswith("test_graph.py")
    assert by_index[0]["name"] == "w" and by_index[1]["name"] == "x"
    expected_edges = sorted([operand, node.index] for node in nodes for operand in node.operands)
    assert sorted(data["edges"]) == expected_edges
    summed = next(n for n in data["nodes"] if n["opcode"] == "Sum")
    assert summed["attrs"] == {"axes": [0, 1], "keepdims": False}


def test_graph_from_a_plan_reads_only_evaluated_nodes_with_direction_and_fate():
    network, (total, h) = Tape.record(build)
    plan = network.entry([total]).backward(total).lower()
    graph = plan.graph()
    assert [n["index"] for n in graph.nodes] == list(plan.schedule)
    directions = {n["index"]: n["direction"] for n in graph.nodes}
    assert all(directions[i] == ("forward" if i < plan.forward_count else "backward") for i in plan.schedule)
    assert "backward" in directions.values()
    assert {n["index"]: n["fate"] for n in graph.nodes} == {i: plan.fate(i) for i in plan.schedule}
    evaluated = set(plan.schedule)
    assert all(a in evaluated and b in evaluated for a, b in graph.edges)


def test_dot_form_names_every_node_and_edge():
    network, (total, h) = Tape.record(build)
    plan = network.entry([total]).backward(total).lower()
    graph = Graph.from_plan(plan)
    dot = graph.to_dot()
    assert dot.startswith("digraph topos {") and dot.endswith("}")
    declared = re.findall(r"^  n(\d+) \[label=\"(\d+) (\w+)\\n\[[\d, ]*\]\"(, style=dashed)?\];$", dot, re.M)
    assert [int(d[0]) for d in declared] == list(plan.schedule)
    assert all(d[0] == d[1] and d[2] == plan.nodes[int(d[0])].opcode for d in declared)
    assert all(bool(d[3]) == (int(d[0]) >= plan.forward_count) for d in declared)
    edges = re.findall(r"^  n(\d+) -> n(\d+);$", dot, re.M)
    assert [(int(a), int(b)) for a, b in edges] == graph.edges


def test_show_graph_renders_a_graph_card():
    network, (total, h) = Tape.record(build)
    card = show.graph(Graph.from_nodes(network.nodes()))
    text = str(card)
    assert "Tanh" in text and "Sum" in text


def _bodies(entry):
    return {key: value for key, value in entry.items() if isinstance(value, dict) and "fed_by" in value}


def test_a_body_says_which_operand_feeds_each_placeholder_so_an_expanded_body_is_wired_in():
    """Scan, While, Cond and CustomVjp each order their operands their own way; ``fed_by`` follows
    each: every placeholder is fed a node of its shape (a Scan's x a row of xs) and dtype, and a Cond's chosen
    branch run on the values so fed gives the node's own value."""
    tape = Tape()
    w = tape.parameter(np.array([[0.5, -0.25], [0.125, 1.0]]), name="w")
    x = tape.input(np.array([1.0, 2.0]), name="x")
    xs = tape.input(np.arange(6.0).reshape(3, 2), name="xs")
    limit = tape.input(3.0, name="limit")
    h, _ = topos.scan(lambda c, row: ((c @ w + row).tanh(), c.sum()), x, xs)
    chosen = topos.cond(topos.greater(topos.sum(x), limit), lambda a: a * w[0], lambda a: a - limit, h)
    last, _ = topos.while_loop(lambda c: topos.less(c[0].sum(), limit), lambda c: (c[0] * 2.0, c[1] + w[1]), (x, x))

    @topos.custom_vjp
    def clip(v):
        return v * 1.0

    clip.defvjp(lambda v: (v * 1.0, (v, w)), lambda saved, g: (topos.clip(g * saved[1][0], -1.0, 1.0),))
    topos.sum(clip(chosen) + last)
    nodes = tape.nodes()
    entries = {entry["index"]: entry for entry in Graph.from_nodes(nodes).to_json()["nodes"]}
    holders = {nodes[i].opcode: i for i in entries if _bodies(entries[i])}
    assert set(holders) == {"Scan", "Cond", "While", "CustomVjp"}
    for index in holders.values():
        for body in _bodies(entries[index]).values():
            placeholders = body["arguments"] + body["captured"]
            assert len(body["fed_by"]) == len(placeholders)
            for place, source in zip(placeholders, body["fed_by"]):
                assert source is None or source in nodes[index].operands
                if source is not None:  # a Scan's xs feed one step's row
                    stepped = (
                        nodes[index].opcode == "Scan" and place in body["arguments"][nodes[index].attrs["carries"] :]
                    )
                    assert body["nodes"][place]["dims"] == entries[source]["dims"][1 if stepped else 0 :]
                    assert body["nodes"][place]["dtype"] == entries[source]["dtype"]
    # The operands as the docstrings order them: the predicate is nobody's; a While's carries feed
    # both bodies; the custom backward's cotangent comes from no operand.
    cond = entries[holders["Cond"]]
    pred, operand = nodes[holders["Cond"]].operands[:2]
    assert pred not in cond["true_body"]["fed_by"] + cond["false_body"]["fed_by"]
    assert cond["true_body"]["fed_by"][0] == cond["false_body"]["fed_by"][0] == operand
    (stretched,) = cond["false_body"]["fed_by"][1:]  # the limit, broadcast to the operand's shape outside the branch
    assert nodes[stretched].opcode == "Broadcast" and list(nodes[stretched].operands) == [limit.index]
    loop = entries[holders["While"]]
    assert loop["cond_body"]["fed_by"][:2] == loop["body"]["fed_by"][:2] == [x.index, x.index]
    assert loop["cond_body"]["fed_by"][2:] == [limit.index]
    assert entries[holders["CustomVjp"]]["backward"]["fed_by"][-1] is None
    assert entries[holders["Scan"]]["body"]["fed_by"][:2] == [x.index, xs.index]
    # The chosen branch, run on what fed_by feeds it, gives the Cond's value.
    from topos.ops.bodies import evaluate

    network = tape.seal()
    run = network.forward(network.parameters())
    node = nodes[holders["Cond"]]
    branch = node.attrs["false_body"]  # sum(x) = 3 is not greater than the limit 3
    sources = {
        place: run.of(network.symbol(source)).numpy()
        for place, source in zip(branch.arguments + branch.captured, cond["false_body"]["fed_by"])
    }
    (value,) = evaluate(branch.nodes, sources, branch.outputs)
    np.testing.assert_array_equal(value.reshape(-1), run.of(network.symbol(node.index)).numpy())
