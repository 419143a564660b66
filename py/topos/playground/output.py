"""What a run printed and the cards it made: one list, in order, kept up to a limit.

Printed text and ``topos.show`` cards go to the same list, so they keep their
order. Where printed text passes the limit, one ``OutputCut`` says so and counts
every character left out after it.
"""

import io
import math

#: The characters of printed output a run keeps, unless told otherwise (``topos.playground.run``
#: reads ``topos.playground.MAX_OUTPUT_CHARACTERS`` when it starts).
MAX_OUTPUT_CHARACTERS = 200_000


class OutputWriter(io.TextIOBase):
    """A text stream that appends to the shared output list (cards go to the same list).

    It keeps at most ``limit`` characters (``MAX_OUTPUT_CHARACTERS`` unless told); where
    the text passes the limit an ``OutputCut`` goes into the list, and it counts every
    character left out after it.
    """

    def __init__(self, output, limit=MAX_OUTPUT_CHARACTERS):
        self.output = output
        self.limit = limit
        self.characters = 0
        self.cut = None

    def writable(self):
        return True

    def write(self, text):
        kept = text[: max(self.limit - self.characters, 0)]
        if kept:
            self.characters += len(kept)
            if self.output and isinstance(self.output[-1], str):
                self.output[-1] += kept
            else:
                self.output.append(kept)
        if len(kept) < len(text):
            if self.cut is None:
                self.cut = OutputCut(self.limit)
                self.output.append(self.cut)
            self.cut.characters += len(text) - len(kept)
        return len(text)


class OutputCut:
    """The place where printed output passed the limit, and how many characters were left out.

    It reads as one line of its own, after the last character kept: in the output
    text (as a card does) and in the output JSON (as printed text).
    """

    def __init__(self, limit):
        self.limit = limit
        self.characters = 0

    def __str__(self):
        plural = "" if self.characters == 1 else "s"
        return f"… output cut here: {self.characters:,} more character{plural} not shown (the limit is {self.limit:,})"

    def to_json(self):
        return {"kind": "print", "text": str(self) + "\n"}


def output_text(output):
    """The output as plain text: printed text as printed, each card's text on lines of its own.

    The same rule as the docs builder's ``output_text``, so an embed can compare
    what it printed with the output a docs page shows.
    """
    text = ""
    for item in output:
        if isinstance(item, str):
            text += item
        else:
            if text and not text.endswith("\n"):
                text += "\n"
            text += str(item) + "\n"
    return text


def output_json(output):
    items = []
    for item in output:
        if isinstance(item, str):
            items.append({"kind": "print", "text": item})
        else:
            items.append(item.to_json())
    return items


def finite(value):
    """``value`` with every non-finite float replaced by its text (``"nan"``, ``"inf"``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value
