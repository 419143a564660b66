"""The logical operators, ``topos.logical_and``, ``logical_or``, ``logical_not`` and
``logical_xor``, recorded as comparisons.

topos has no boolean dtype: a truth value is a float, 1.0 or 0.0, as the comparisons
(``topos.less``, ``topos.equal``...) give it. These read any float operand with numpy's
truthiness (non-zero is true, NaN is true, as ``numpy.logical_and`` reads a float array)
and give 1.0 or 0.0 in the operands' dtype. Each is recorded as ``NotEqual`` or ``Equal``
against 0 and combined with ``Mul``, ``Maximum`` or ``NotEqual``: the comparisons have no
derivative, so no gradient flows through a logical operator (as through a
``stop_gradient``; PyTorch's boolean results have none either), and a gradient
through one is zero.
"""

from . import arguments
from . import functions as F


def _truth(x):
    """1.0 where ``x`` is non-zero or NaN, else 0.0 (``NotEqual``: NaN differs from 0)."""
    return F.not_equal(x, 0.0)


def _operands(a, b):
    """``a`` and ``b`` as recorded values of one tape (a number or an array becomes a leaf)."""
    tape = arguments.tape_of(a, b)
    dtype = arguments.float_dtype(tape, [a, b])
    return arguments.as_value(tape, a, dtype), arguments.as_value(tape, b, dtype)


def logical_and(a, b):
    """1.0 where both ``a`` and ``b`` are true (non-zero or NaN), else 0.0, as ``numpy.logical_and``;
    operands broadcast numpy's way. No gradient flows through it."""
    a, b = _operands(a, b)
    return _truth(a) * _truth(b)


def logical_or(a, b):
    """1.0 where ``a`` or ``b`` is true (non-zero or NaN), else 0.0, as ``numpy.logical_or``;
    operands broadcast numpy's way. No gradient flows through it."""
    a, b = _operands(a, b)
    return F.maximum(_truth(a), _truth(b))


def logical_xor(a, b):
    """1.0 where exactly one of ``a`` and ``b`` is true (non-zero or NaN), else 0.0, as
    ``numpy.logical_xor``; operands broadcast numpy's way. No gradient flows through it."""
    a, b = _operands(a, b)
    return F.not_equal(_truth(a), _truth(b))


def logical_not(x):
    """1.0 where ``x`` is 0 (either sign), else 0.0, as ``numpy.logical_not``: NaN is true, so its
    ``logical_not`` is 0.0. No gradient flows through it."""
    return F.equal(arguments.recorded(x, "logical_not"), 0.0)


# Every public function records atomically (an error leaves the tape as it was).
for _name in ("logical_and", "logical_or", "logical_xor", "logical_not"):
    globals()[_name] = arguments.all_or_nothing(globals()[_name])
del _name
