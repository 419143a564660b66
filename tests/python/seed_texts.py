"""The seed's texts, read from ``golden/`` (the one copy; see golden/README.md).

Each constant is the file's text without its final newline, as the readings give it
(``print`` adds the newline the files end with).
"""

from pathlib import Path

GOLDEN = Path(__file__).parent / "golden"


def golden_text(name):
    return (GOLDEN / name).read_text(encoding="utf-8")


# The seed's first example (an open tape) and its sealed form, as programs (they end with a newline).
SEED_RECORDING = golden_text("seed_recording.txt")
SEED_SEALED = golden_text("seed_sealed.txt")
# Its readings.
SEED_DESCRIBE = golden_text("seed_describe.txt").removesuffix("\n")
SEED_PLAN = golden_text("seed_plan.txt").removesuffix("\n")
SEED_HLO = golden_text("seed_hlo.txt").removesuffix("\n")


def record_seed(tape, w=0.5, x=2.0, y=4.0, name=None):
    """The seed's model, ``loss = (w x - y)^2``, recorded on ``tape`` (docs/api.md's first example,
    whose readings the texts above are): returns ``[w, x, y, loss]``. ``name`` names the parameter."""
    w = tape.parameter(w, name=name)
    x = tape.input(x)
    y = tape.input(y)
    error = w * x - y
    return [w, x, y, error * error]


def open_seed_tape():
    """The seed's model with zeros on a new tape, left open (the notebook's and ``show``'s first cell)."""
    from topos import Tape

    tape = Tape()
    record_seed(tape, 0.0, 0.0, 0.0)
    return tape
