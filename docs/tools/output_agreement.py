"""When does a rerun of a docs block print "the same" as the built docs?

The docs are built on one machine and checked on others (CI, a reader's browser
through Pyodide). numpy's vectorised exp/log and the BLAS's matrix products round
differently in the last bit on different CPUs (and Pyodide's numpy has no BLAS at
all), so a printed float can differ in its last digit, or a value that is pure
rounding noise (a gradient error of 1e-17) can differ entirely. The rule:

- The text around the numbers must be the same, spaces aside (numpy pads array
  columns to the widest number, so one wider number moves every column).
- An integer (digits alone, as in ``step 25``, ``[3, 4]``, ``249 nodes``) must be
  the same integer.
- A decimal number (with a point or an exponent) agrees when the two differ by at
  most the largest of: ``RELATIVE`` of the larger magnitude, ``ABSOLUTE``, and
  one unit in the last printed digit of either (so a rounding flip, 2.0091 against
  2.0092, agrees).

The same rule is written in TypeScript for the docs pages' "reproduced in your
browser" mark (``web/docs-site/output-agreement.ts``); both replay the cases in
``docs/tools/output-agreement-cases.json``.

What this does not forgive: a long float32 training run, whose last-bit differences
grow into different losses and different sampled text. Such runs print in float64,
or print nothing that depends on them (``docs/tools/build_docs.py`` says so).
"""

import math
import re

RELATIVE = 1e-6
ABSOLUTE = 1e-12

# A number as Python and numpy print one: an optional sign, digits with an optional point,
# an optional exponent; or nan / inf. A number glued to letters (W1, float32, 2x3) is text.
NUMBER = re.compile(
    r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])"
    r"|(?<![\w.])[-+]?(?:nan|inf)(?![\w.])"
)
SPACES = re.compile(r"[ \t]+")


def split_numbers(text):
    """Return ``(texts, numbers)``: the text between numbers (len(numbers) + 1 pieces) and the numbers' tokens."""
    texts, numbers, start = [], [], 0
    for match in NUMBER.finditer(text):
        texts.append(text[start : match.start()])
        numbers.append(match.group())
        start = match.end()
    texts.append(text[start:])
    return texts, numbers


def is_integer(token):
    return re.fullmatch(r"[-+]?\d+", token) is not None


def last_digit_unit(token):
    """One unit in the last printed digit: 0.0001 for "2.0091", 1e-22 for "4.388e-19", 1 for "12"."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 10.0 ** (int(exponent or 0) - decimals)


def numbers_agree(built, rerun):
    """True when two printed number tokens agree under the module's rule."""
    if is_integer(built) or is_integer(rerun):
        return is_integer(built) and is_integer(rerun) and int(built) == int(rerun)
    a, b = float(built), float(rerun)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    allowed = max(RELATIVE * max(abs(a), abs(b)), ABSOLUTE, last_digit_unit(built), last_digit_unit(rerun))
    return abs(a - b) <= allowed


def first_disagreement(built, rerun):
    """``None`` when the two outputs agree; else a line saying where they first differ."""
    built_lines, rerun_lines = built.split("\n"), rerun.split("\n")
    for number, (built_line, rerun_line) in enumerate(zip(built_lines, rerun_lines), start=1):
        problem = _line_disagreement(built_line, rerun_line)
        if problem:
            return f"line {number}: {problem}\n  built: {built_line}\n  rerun: {rerun_line}"
    if len(built_lines) != len(rerun_lines):
        return f"the built output has {len(built_lines)} lines, the rerun {len(rerun_lines)}"
    return None


def outputs_agree(built, rerun):
    return first_disagreement(built, rerun) is None


def _line_disagreement(built, rerun):
    built_texts, built_numbers = split_numbers(built)
    rerun_texts, rerun_numbers = split_numbers(rerun)
    if len(built_numbers) != len(rerun_numbers):
        return f"{len(built_numbers)} numbers against {len(rerun_numbers)}"
    for built_text, rerun_text in zip(built_texts, rerun_texts):
        if SPACES.sub("", built_text) != SPACES.sub("", rerun_text):
            return f"text {built_text.strip()!r} against {rerun_text.strip()!r}"
    for built_number, rerun_number in zip(built_numbers, rerun_numbers):
        if not numbers_agree(built_number, rerun_number):
            return f"{built_number} against {rerun_number}"
    return None
