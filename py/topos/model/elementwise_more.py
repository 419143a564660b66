"""The recording functions of ``topos.ops.elementwise_more``'s rows, under numpy's names.

``topos.log1p``, ``expm1``, ``floor``, ``ceil``, ``round``, ``trunc``, ``arctan``, ``tan``,
``sinh``, ``cosh`` and ``arcsinh`` record one primitive each; ``arcsin`` and ``arccos`` are
composites of ``Atan2`` and ``Sqrt`` (so every reading shows their work), written in the forms
that keep their digits near +-1, where ``1 - x^2`` would round.
"""

import numbers

from ..errors import ArgumentTypeError
from . import arguments
from .functions import _unary, atan2, sqrt


def log1p(v):
    """``log(1 + v)``, elementwise, accurate where ``1 + v`` would round (records ``Log1p``), as
    ``numpy.log1p``: -inf at -1, NaN below. Its derivative is ``1 / (1 + v)``."""
    return _unary("Log1p", v)


def expm1(v):
    """``exp(v) - 1``, elementwise, accurate where ``exp(v)`` is near 1 (records ``Expm1``), as
    ``numpy.expm1``. Its derivative is ``exp(v)``, formed as the result plus 1."""
    return _unary("Expm1", v)


def floor(v):
    """The largest whole number not above each element, as ``numpy.floor`` (records ``Floor``).

    Its derivative is zero everywhere (a step function's, as JAX's and PyTorch's): no
    gradient flows through it. NaN and the infinities are kept."""
    return _unary("Floor", v)


def ceil(v):
    """The smallest whole number not below each element, as ``numpy.ceil`` (records ``Ceil``);
    its derivative is zero everywhere, as ``floor``'s."""
    return _unary("Ceil", v)


def trunc(v):
    """Each element with its fraction dropped (towards zero), as ``numpy.trunc`` (records
    ``Trunc``); its derivative is zero everywhere, as ``floor``'s."""
    return _unary("Trunc", v)


def round(v, decimals=0):  # noqa: A001  (numpy's name)
    """Each element rounded to ``decimals`` decimal places, halves to even, as ``numpy.round``.

    ``decimals=0`` records ``RoundNearestEven`` (2.5 rounds to 2, -0.5 to -0); other values
    record numpy's own steps, ``RoundNearestEven(v * 10**decimals) / 10**decimals`` (or ``v /
    10**-decimals`` then ``* 10**-decimals`` for a negative one), so they round as numpy's do,
    binary fractions and all. Its derivative is zero everywhere, as ``floor``'s."""
    if isinstance(decimals, bool) or not isinstance(decimals, numbers.Integral):
        raise ArgumentTypeError(f"round takes a whole number of decimals, got {type(decimals).__name__}")
    v = arguments.recorded(v, "round")
    if decimals == 0:
        return _unary("RoundNearestEven", v)
    if decimals > 0:
        factor = 10.0 ** int(decimals)
        return _unary("RoundNearestEven", v * factor) / factor
    factor = 10.0 ** -int(decimals)
    return _unary("RoundNearestEven", v / factor) * factor


def tan(v):
    """The tangent, elementwise, of an angle in radians, as ``numpy.tan`` (records ``Tan``); its
    derivative is ``1 + tan(v)^2``."""
    return _unary("Tan", v)


def arctan(v):
    """The angle in (-pi/2, pi/2) whose tangent is each element, as ``numpy.arctan`` (records
    ``Atan``; its derivative is ``1 / (1 + v^2)``)."""
    return _unary("Atan", v)


def arcsin(v):
    """The angle in [-pi/2, pi/2] whose sine is each element, as ``numpy.arcsin``; NaN outside [-1, 1].

    Recorded as ``atan2(v, sqrt((1 - v) * (1 + v)))``: a composite (``Atan2``, ``Sqrt``, three
    arithmetic nodes) whose derivative is ``1 / sqrt(1 - v^2)``, inf at +-1 (as PyTorch's).
    ``(1 - v) (1 + v)`` rather than ``1 - v^2``, which rounds near +-1 and costs the angle
    half its digits there."""
    v = arguments.recorded(v, "arcsin")
    return atan2(v, sqrt((1.0 - v) * (1.0 + v)))


def arccos(v):
    """The angle in [0, pi] whose cosine is each element, as ``numpy.arccos``; NaN outside [-1, 1].

    Recorded as ``2 atan2(sqrt(1 - v), sqrt(1 + v))`` (half the angle's tangent is
    ``sqrt((1 - v) / (1 + v))``): both square roots are of exact or once-rounded operands, so
    the angle keeps its digits near 0 and near pi, and -1 gives pi with no special case. Its
    derivative is ``-1 / sqrt(1 - v^2)``, inf at +-1 (as PyTorch's)."""
    v = arguments.recorded(v, "arccos")
    return 2.0 * atan2(sqrt(1.0 - v), sqrt(1.0 + v))


def sinh(v):
    """The hyperbolic sine, elementwise, as ``numpy.sinh`` (records ``Sinh``; its derivative is ``cosh``)."""
    return _unary("Sinh", v)


def cosh(v):
    """The hyperbolic cosine, elementwise, as ``numpy.cosh`` (records ``Cosh``; its derivative is ``sinh``)."""
    return _unary("Cosh", v)


def arcsinh(v):
    """The inverse hyperbolic sine, elementwise, as ``numpy.arcsinh`` (records ``Asinh``).

    Computed as ``log1p(|v| + v^2 / (1 + sqrt(1 + v^2)))`` with ``v``'s sign, which keeps the
    digits of small results, and as ``log(|v|) + log 2`` where ``1 + v^2`` rounds to ``v^2``.
    Its derivative is ``1 / sqrt(v^2 + 1)``, written as PyTorch writes it: 0 where ``v^2``
    overflows (past 1.8e19 in float32)."""
    return _unary("Asinh", v)
