"""The playground's readings are kept by recording: an edit that records the same thing reuses them."""

import json

from topos import playground
from topos.playground.readings import READINGS_CACHE, ReadingsCache

MODEL = """from topos import Tape

tape = Tape()
w = tape.parameter([1.0, 2.0, 3.0])
x = tape.input([0.5, 0.5, 0.5])
c = tape.leaf(LEAF)
y = (w * x + c).sum()
"""


def readings_of(code):
    return json.loads(playground.run(code))["readings"]


def fresh_readings_of(code):
    READINGS_CACHE.clear()
    return readings_of(code)


def test_an_edit_that_records_the_same_reuses_every_reading():
    code = MODEL.replace("LEAF", "2.0")
    READINGS_CACHE.clear()
    readings_of(code)
    readings_of(code + "# a comment\nprint('hello')\n")
    assert len(READINGS_CACHE._entries) == 1  # one recording, one entry, made once
    assert readings_of(code + "# another comment\n") == fresh_readings_of(code)


def test_a_changed_leaf_payload_changes_the_readings_that_write_it():
    two = readings_of(MODEL.replace("LEAF", "2.0"))
    three = readings_of(MODEL.replace("LEAF", "3.0"))
    assert two["spec"] == three["spec"]  # the spec shows shapes, not values
    assert two["hlo"] != three["hlo"]
    assert three == fresh_readings_of(MODEL.replace("LEAF", "3.0"))


def test_a_node_recorded_on_another_line_changes_the_graph_lines():
    code = MODEL.replace("LEAF", "2.0")
    moved = readings_of(code.replace("tape = Tape()\n", "tape = Tape()\n\n"))
    in_place = readings_of(code)
    assert [node["line"] for node in moved["graph"]["graph"]["nodes"]] != [
        node["line"] for node in in_place["graph"]["graph"]["nodes"]
    ]
    assert moved == fresh_readings_of(code.replace("tape = Tape()\n", "tape = Tape()\n\n"))


def test_the_cache_keeps_the_most_recently_used_recordings():
    cache = ReadingsCache(size=2)
    cache.put("a", {"spec": 1})
    cache.put("b", {"spec": 2})
    assert cache.get("a") == {"spec": 1}  # "a" is now the most recently used
    cache.put("c", {"spec": 3})
    assert cache.get("b") is None
    assert cache.get("a") == {"spec": 1}
    assert cache.get("c") == {"spec": 3}


LOOP = """import topos
from topos import Tape


def build(tape):
    w = tape.parameter([[0.5, 0.0], [0.0, 0.5]])
    xs = tape.input([[1.0, -1.0], [2.0, 0.5], [-0.5, 1.5]])

    def step(h, x):
        h = STEP
        return h, h.sum()

    h, ys = topos.scan(step, tape.leaf([0.0, 0.0]), xs)
    return [ys.sum()]


network, (loss,) = Tape.record(build)
"""


def test_two_loops_whose_steps_differ_in_their_nodes_are_two_recordings():
    # The same nodes outside the loop, on the same lines, and steps of the same size: only the
    # bodies differ (a Tanh or a Sin), and the readings that print them must follow.
    tanh = readings_of(LOOP.replace("STEP", "topos.tanh(h @ w + x)"))
    sine = readings_of(LOOP.replace("STEP", "topos.sin(h @ w + x)"))
    assert "Tanh" in tanh["spec"]["text"] and "Sin " in sine["spec"]["text"]
    assert sine == fresh_readings_of(LOOP.replace("STEP", "topos.sin(h @ w + x)"))
