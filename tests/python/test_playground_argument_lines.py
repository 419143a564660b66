"""A bad argument in the playground names the user's line in the output pane and marks it in the editor.

The page shows ``error.message`` in the output pane and marks ``error.line`` in the
editor, for the readings as the user types (``playground.run``) and for a Run
(``playground.run_main``). An ``ArgumentError`` (and the other argument errors) carries
``source`` as a ``ShapeError`` does, so both show ``main.py``'s line: for a call at
the top level, inside the user's own function, inside an optimizer's generated
``__init__`` and inside a card.
"""

import json

import pytest

from topos import playground

HEAD = "import numpy as np\nimport topos\nfrom topos import show\nfrom topos.model import optim\n"

# (the line that fails, the error's class): each is line 6 of its script, after HEAD and one more line.
BAD_LINES = [
    ("y = topos.conv2d(x, w, stride=-1)", "ArgumentError"),
    ("y = topos.conv2d(x, w, padding='full')", "ArgumentError"),
    ("opt = optim.SGD(lr=-1.0)", "ArgumentError"),
    ("show.progress(-1)", "ArgumentError"),
    ("topos.Tape(dtype='float16')", "DtypeError"),
]


def _script(bad_line, inside_a_function):
    setup = "tape = topos.Tape()\nx = tape.input(np.ones((1, 2, 6, 6)))\nw = tape.parameter(np.ones((2, 2, 3, 3)))\n"
    if inside_a_function:
        # The failing call is line 6 of the file, inside a function that the last line calls.
        return HEAD + "def build():\n    " + bad_line + "\n\n" + setup + "build()\n"
    return HEAD + setup[:-1].replace("\n", "; ") + "\n" + bad_line + "\n"


def _readings_error(code):
    return json.loads(playground.run(code))["error"]


def _run_error(code):
    return json.loads(playground.run_main(code, lambda text: None))["error"]


@pytest.mark.parametrize("inside_a_function", [False, True], ids=["top level", "in a function"])
@pytest.mark.parametrize("report", [_readings_error, _run_error], ids=["as you type", "run"])
@pytest.mark.parametrize(("bad_line", "error_class"), BAD_LINES, ids=[line for line, _ in BAD_LINES])
def test_an_argument_error_shows_and_marks_the_users_line(bad_line, error_class, report, inside_a_function):
    code = _script(bad_line, inside_a_function)
    assert code.splitlines()[5].strip() == bad_line
    error = report(code)
    assert error["type"] == error_class
    assert error["line"] == 6
    assert error["message"].endswith("(recorded at main.py:6)"), error["message"]
    assert error["traceback"].rstrip().endswith("(recorded at main.py:6)")
