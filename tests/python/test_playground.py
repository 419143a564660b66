"""The playground's Python side: running the user's code, picking the recording, the readings."""

import json

import numpy as np
import pytest
from seed_texts import SEED_DESCRIBE, SEED_HLO, SEED_PLAN, SEED_RECORDING, SEED_SEALED

from topos import Tape, playground
from topos.playground import gpu
from topos.webgpu import NoAdapterError
from topos.webgpu import device as device_module

# The seed's first example and its readings, as the public contract (API.md) prints them.
SEED = SEED_RECORDING


def run(code):
    return json.loads(playground.run(code))


@pytest.mark.parametrize("code", [SEED, SEED_SEALED], ids=["open tape", "sealed network"])
def test_the_seed_shows_the_seed_readings(code):
    result = run(code)
    assert result["error"] is None
    readings = result["readings"]
    assert readings["spec"]["text"] == SEED_DESCRIBE
    assert readings["plan"]["text"] == SEED_PLAN
    assert readings["hlo"]["text"] == SEED_HLO
    assert readings["gradient"]["text"].splitlines()[-2].startswith("plan: forward+backward;")
    assert readings["gradient"]["text"].splitlines()[-2].endswith("1 readable, 1 gradient")
    assert [n["opcode"] for n in readings["graph"]["graph"]["nodes"]] == [
        "Parameter",
        "Input",
        "Input",
        "Mul",
        "Sub",
        "Mul",
    ]
    assert "error" not in readings["kernels"]
    # Both scripts record w, x, y on lines 4-6, error (Mul, Sub) on line 7 and the square on line 8.
    assert [node["line"] for node in result["nodes"]] == [4, 5, 6, 7, 7, 8]


def test_prints_and_cards_keep_their_order():
    result = run(SEED_SEALED + "from topos import show\nshow.lines(['a', 'b'])\nprint('after')\n")
    assert result["output"] == [
        {"kind": "print", "text": "9.0 -12.0 -3.0 6.0\n"},
        {"kind": "lines", "lines": ["a", "b"]},
        {"kind": "print", "text": "after\n"},
    ]


def test_the_last_sealed_network_wins_over_tapes():
    code = SEED + "\nnetwork, (a, b) = Tape.record(lambda t: [t.parameter([1.0, 2.0]), t.parameter(3.0).exp()])\n"
    result = run(code)
    assert result["recording"] == {"kind": "network", "nodes": 3, "readables": [2]}
    assert result["readings"]["spec"]["text"].startswith("   0  Parameter                         [2]")


def test_without_a_seal_the_last_tape_with_nodes_is_read():
    code = SEED + "\nempty = Tape()\n"
    result = run(code)
    assert result["recording"] == {"kind": "tape", "nodes": 6, "readables": [5]}


def test_readables_are_the_returned_values_less_sources():
    code = (
        "from topos import Tape\n"
        "def build(t):\n"
        "    w = t.parameter([1.0, 2.0])\n"
        "    h = w * 2.0\n"
        "    return [w, h, h.sum()]\n"
        "network, symbols = Tape.record(build)\n"
    )
    result = run(code)
    readables = result["recording"]["readables"]
    nodes = result["nodes"]
    assert [nodes[i]["opcode"] for i in readables] == ["Mul", "Sum"]
    assert "2 readable" in result["readings"]["plan"]["text"]


def test_a_script_that_records_nothing_says_so():
    result = run("print('hello')\n")
    assert result["error"] is None
    assert result["readings"]["spec"] == {"empty": "this script recorded no tape"}
    assert result["output"] == [{"kind": "print", "text": "hello\n"}]


def test_a_shape_error_names_the_users_line_and_brings_no_readings():
    code = SEED + "bad = error + tape.parameter([1.0, 2.0]) @ tape.parameter([1.0, 2.0, 3.0])\n"
    result = run(code)
    assert result["readings"] is None
    assert result["error"]["type"] == "ShapeError"
    assert result["error"]["line"] == 10
    assert "MatMul" in result["error"]["message"]
    assert result["output"][0]["text"].startswith("   0  Parameter")  # printed before the error
    assert 'File "main.py", line 10' in result["error"]["traceback"]


def test_a_syntax_error_names_its_line_and_column():
    result = run("x = 1\ny = (2,\n")
    assert result["error"]["type"] == "SyntaxError"
    assert result["error"]["line"] == 2
    assert result["error"]["column"] == 5


def test_an_error_inside_a_users_function_points_at_the_innermost_user_line():
    code = "def inner():\n    return 1 / 0\n\ndef outer():\n    return inner()\n\nouter()\n"
    result = run(code)
    assert result["error"]["type"] == "ZeroDivisionError"
    assert result["error"]["line"] == 2


def test_the_main_guard_does_not_run_and_tape_methods_are_restored():
    original = (Tape.__init__, Tape.seal, Tape.__dict__["record"])
    result = run("if __name__ == '__main__':\n    print('training')\nprint(__name__)\nraise RuntimeError('x')\n")
    assert result["output"] == [{"kind": "print", "text": "__playground__\n"}]
    assert (Tape.__init__, Tape.seal, Tape.__dict__["record"]) == original


def test_a_reading_that_raises_shows_its_error_and_the_others_still_show(monkeypatch):
    def broken(self):
        raise RuntimeError("the emitter broke")

    monkeypatch.setattr(playground.Readings, "read_hlo", broken)
    readings = run(SEED)["readings"]
    assert readings["hlo"] == {"error": "RuntimeError: the emitter broke"}
    assert readings["spec"]["text"] == SEED_DESCRIBE


def test_the_gradient_reading_needs_a_scalar_and_parameters():
    no_parameters = run("from topos import Tape\nt = Tape()\nx = t.input(1.0)\ny = x * x\n")
    # The readings are made after the script: the error names no caller's line (natively this test's,
    # in the page none), so the pane shows the same words in both.
    assert no_parameters["readings"]["gradient"]["error"] == (
        "ArgumentError: the gradient reading differentiates with respect to parameters; this network has none"
    )
    vector = run("from topos import Tape\nt = Tape()\nw = t.parameter([1.0, 2.0])\ny = w * w\n")
    assert "rank-0" in vector["readings"]["gradient"]["error"]
    assert "recorded at" not in vector["readings"]["gradient"]["error"]
    assert vector["readings"]["plan"]["text"]  # the other readings are unaffected


def test_kernel_launch_rows_name_their_nodes():
    code = SEED_SEALED.replace("Tape.record(build)", 'Tape.record(build, dtype="float32")')
    kernels = run(code)["readings"]["kernels"]
    launches = playground.latest_readings.kernels().launches
    assert launches, kernels["text"]
    # A launch's row starts with its number and kernel:entry, and names the nodes the launch covers.
    launch_rows = [row for row in kernels["rows"] if row["text"].split()[0].isdigit()]
    assert [row["text"].split()[:2] for row in launch_rows] == [
        [str(number), f"{launch.kernel}:{launch.entry}"] for number, launch in enumerate(launches)
    ]
    assert [row["nodes"] for row in launch_rows] == [list(launch.nodes) for launch in launches]
    assert all(row["nodes"] for row in launch_rows)


def test_the_webgpu_report_runs_a_float64_program_on_the_host_like_the_interpreter():
    # float64 runs entirely on the host: no launch, and the readable is the interpreter's exactly.
    run(SEED_SEALED)
    report = json.loads(playground.webgpu_report_json())
    assert report["ran"] is True, report
    assert report["launches"] == []
    assert report["outputs"] == [{"node": 5, "maxAbsDiff": 0.0}]


def test_the_webgpu_report_times_each_launch_and_holds_it_against_the_interpreter():
    code = SEED_SEALED.replace("Tape.record(build)", 'Tape.record(build, dtype="float32")')
    run(code)
    report = json.loads(playground.webgpu_report_json())
    launches = playground.latest_readings.kernels().launches
    assert report["ran"] is True, report
    assert report["detail"] == json.loads(playground.status_json())["detail"]
    assert [row["kernel"] for row in report["launches"]] == [f"{launch.kernel}:{launch.entry}" for launch in launches]
    assert [row["nodes"] for row in report["launches"]] == [list(launch.nodes) for launch in launches]
    assert all(row["ms"] >= 0.0 for row in report["launches"])
    # Each launch here finishes its own node, and agrees with the interpreter to float32 rounding.
    assert all(row["maxAbsDiff"] is not None and row["maxAbsDiff"] <= 1e-6 for row in report["launches"])
    assert [output["node"] for output in report["outputs"]] == [5]
    assert report["outputs"][0]["maxAbsDiff"] <= 1e-6


def test_the_webgpu_report_measures_a_difference_from_the_interpreter():
    run(SEED_SEALED.replace("Tape.record(build)", 'Tape.record(build, dtype="float32")'))
    kernels_run = playground.KernelsRun(playground.latest_readings)
    # The interpreter's loss made 0.5 larger: the device's value is then 0.5 away from it.
    kernels_run.expected[5] = np.asarray(kernels_run.expected[5], dtype=np.float32) + np.float32(0.5)
    kernels_run.run()
    assert kernels_run.outputs()[0]["maxAbsDiff"] == pytest.approx(0.5)
    assert kernels_run.launches[-1]["maxAbsDiff"] == pytest.approx(0.5)
    assert gpu.gap(np.zeros(2, np.float32), np.zeros(3)) is None
    assert gpu.gap(np.array([np.inf]), np.array([1.0])) == np.finfo(np.float64).max


def test_without_a_device_the_webgpu_report_says_why_and_that_numpy_ran(monkeypatch):
    def no_device():
        raise NoAdapterError("Python cannot wait for WebGPU here: this browser lacks JavaScript Promise Integration")

    monkeypatch.setattr(device_module, "device", no_device)
    run(SEED_SEALED.replace("Tape.record(build)", 'Tape.record(build, dtype="float32")'))
    assert json.loads(playground.status_json()) == {
        "available": False,
        "fallback": False,
        "reason": "no-adapter",
        "detail": "Python cannot wait for WebGPU here: this browser lacks JavaScript Promise Integration",
    }
    assert json.loads(playground.webgpu_report_json()) == {
        "ran": False,
        "detail": "Python cannot wait for WebGPU here: this browser lacks JavaScript Promise Integration; "
        "the numpy interpreter ran",
        "launches": [],
    }


def test_non_finite_numbers_are_spelled_as_text_for_json():
    # An attribute of a user-registered primitive may hold an infinity; JSON cannot.
    result = {"graph": {"attrs": {"low": float("-inf"), "high": float("nan"), "axes": [0, 1]}}, "text": "x"}
    cleaned = playground.finite(result)
    assert cleaned == {"graph": {"attrs": {"low": "-inf", "high": "nan", "axes": [0, 1]}}, "text": "x"}
    json.dumps(cleaned, allow_nan=False)
