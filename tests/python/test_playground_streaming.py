"""The page's worker streams the readings: ``start_run`` runs the code, ``read_reading``
gives one reading at a time in the order the page asks, ``finish_run`` ends the run."""

import json

import pytest

from topos import playground
from topos.playground import READINGS, NoReadingsError
from topos.playground.readings import READINGS_CACHE, readings_key

MODEL = """from topos import Tape

tape = Tape()
w = tape.parameter([1.0, 2.0, 3.0])
x = tape.input([0.5, 0.5, WIDTH])
y = (w * x).sum()
print("recorded")
"""


def streamed(code, order):
    head = json.loads(playground.start_run(code))
    readings = {}
    if head["error"] is None:
        for name in order:
            answer = json.loads(playground.read_reading(name))
            assert set(answer) == {"reading", "ms"}
            readings[name] = answer["reading"]
    finished = json.loads(playground.finish_run())
    return head, readings, finished["timings"]


def test_streamed_readings_are_the_readings_run_gives_in_any_order():
    code = MODEL.replace("WIDTH", "0.25")
    whole = json.loads(playground.run(code))
    READINGS_CACHE.clear()
    head, readings, timings = streamed(code, reversed(READINGS))
    assert head["readings"] is None
    assert head["output_text"] == whole["output_text"] == "recorded\n"
    assert head["nodes"] == whole["nodes"]
    assert head["recording"] == whole["recording"]
    assert readings == whole["readings"]
    assert set(READINGS) <= set(timings) and "total" in timings


def test_a_run_cut_short_leaves_the_readings_it_made_for_the_next_run_of_that_recording():
    code = MODEL.replace("WIDTH", "0.75")
    READINGS_CACHE.clear()
    streamed(code, ["graph"])
    key = readings_key(playground.latest_readings)
    assert set(READINGS_CACHE.get(key)) == {"graph"}
    _, readings, timings = streamed(code + "# an edit that records the same\n", ["graph", "plan"])
    assert timings["graph"] == 0.0  # made by the run cut short
    assert set(READINGS_CACHE.get(key)) == {"graph", "plan"}
    assert readings == {name: json.loads(playground.run(code))["readings"][name] for name in ("graph", "plan")}


def test_a_script_that_recorded_nothing_streams_why_each_reading_is_empty():
    _, readings, _ = streamed("print('no tape')\n", READINGS)
    assert readings == dict.fromkeys(READINGS, {"empty": "this script recorded no tape"})


def test_code_that_raises_has_no_readings_to_stream():
    head = json.loads(playground.start_run("x = 1\nraise ValueError('bad')\n"))
    assert head["error"]["line"] == 2
    with pytest.raises(NoReadingsError, match="the code raised, so there is no spec reading"):
        playground.read_reading("spec")
    playground.finish_run()
    with pytest.raises(NoReadingsError, match="no run to read the spec reading of"):
        playground.read_reading("spec")


def test_the_readings_are_made_by_topos_as_it_was_before_the_script_changed_it():
    code = MODEL.replace("WIDTH", "0.5")
    READINGS_CACHE.clear()
    plain = json.loads(playground.run(code))["readings"]["spec"]
    READINGS_CACHE.clear()
    patched = "import topos\ntopos.Network.describe_rows = lambda self: [('patched', [])]\n" + code
    head, readings, _ = streamed(patched, ["spec"])
    assert head["error"] is None
    assert readings["spec"] == plain
