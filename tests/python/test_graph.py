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
