"""Every node remembers the calls it was recorded inside (its scope), which the graph's drawing groups by.

The scope is the user's own functions on the stack, outermost first, and then the public topos
function that the innermost of them called (``topos.layer_norm``); a method (``x + y``) and the
module's top level name none. The graph reading and ``show.graph`` send it with each node; the
reading's text does not change.
"""

import json

import topos
from topos import Tape, playground, show

PROGRAM = """\
import numpy as np
import topos
from topos import Tape


def block(x, weight, bias):
    def scaled(value):
        return value * 2.0

    normed = topos.layer_norm(x, weight, bias)
    return scaled(normed) + x


def build(tape):
    x = tape.input(np.ones((2, 4)))
    weight = tape.parameter(np.ones(4))
    bias = tape.parameter(np.zeros(4))
    y = block(x, weight, bias)
    return [y.sum()]


network, (loss,) = Tape.record(build)
"""


def test_the_graph_reading_sends_each_nodes_scope_and_keeps_its_text():
    result = json.loads(playground.run(PROGRAM))
    assert result["error"] is None, result["error"]
    reading = result["readings"]["graph"]
    nodes = reading["graph"]["nodes"]
    scopes = [(node["opcode"], tuple(node["scope"])) for node in nodes]
    # The input and parameters, recorded by build itself.
    assert scopes[:3] == [("Input", ("build",)), ("Parameter", ("build",)), ("Parameter", ("build",))]
    # topos.layer_norm's nodes, called by block, called by build.
    assert {scope for _, scope in scopes[3:-5]} == {("build", "block", "layer_norm")}
    # The nested function, named without "<locals>"; the residual addition and the sum are methods: no scope of their own.
    assert scopes[-5:] == [
        ("Leaf", ("build", "block", "block.scaled")),
        ("Broadcast", ("build", "block", "block.scaled")),
        ("Mul", ("build", "block", "block.scaled")),
        ("Add", ("build", "block")),
        ("Sum", ("build",)),
    ]
    assert reading["text"] == show.graph_text(reading["graph"])
    assert "layer_norm" not in reading["text"]


def test_show_graph_sends_the_scopes_of_a_tapes_nodes():
    tape = Tape()
    w = tape.parameter(2.0)
    topos.tanh(w * w)
    data = show.graph(tape).to_json()["graph"]
    # This file is the user's: the test function names the outermost scope.
    here = "test_show_graph_sends_the_scopes_of_a_tapes_nodes"
    assert [node["scope"] for node in data["nodes"]] == [[here], [here], [here, "tanh"]]


def test_a_sealed_networks_nodes_keep_their_scope():
    network, _ = Tape.record(lambda tape: [topos.softmax(tape.input([1.0, 2.0]), axis=0)])
    # The lambda names no scope, and the walk ends at Tape.record: this test function is not counted.
    assert network.nodes()[0].scope == ()
    assert {node.scope for node in network.nodes()[1:]} == {("softmax",)}
