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
