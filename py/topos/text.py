"""The small text helpers every reading and error message shares.

They sit at the bottom of the package and import nothing of it, so that any
module (an op's shape rule, the tape, the compiler's readings) may use them.
"""


def plural(count, singular, plural_form=None):
    """``count`` and its noun, pluralised: ``1 node``, ``2 nodes``, ``3 leaves`` (with ``plural_form="leaves"``)."""
    word = singular if count == 1 else (plural_form or singular + "s")
    return f"{count} {word}"


def format_shape(shape):
    """A shape as the readings print it: ``[]`` for rank 0, ``[2, 3]`` otherwise."""
    return "[" + ", ".join(str(d) for d in shape) + "]"


def recorded_at(source):
    """Where a node was recorded, as errors name it: ``recorded at main.py:7`` for ``("main.py", 7)``."""
    return f"recorded at {source[0]}:{source[1]}"
