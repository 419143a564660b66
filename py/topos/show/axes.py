"""A plot's axes in exact decimal arithmetic, so that any finite floats have an axis.

A float axis overflows where the data reach the largest floats: the span of
``[-1e308, 1e308]`` is infinite, and the round tick just above ``1.7e308`` is
past the largest float. Here the ends, the step and the ticks are ``Decimal``
numbers (exact for every float, with an exponent range far beyond a float's),
in a context of this module's own, so that neither the span nor a tick can
overflow, and a user's ``decimal.getcontext()`` changes nothing. Only a point's
place on the axis, a fraction between 0 and 1, is a float again.

A log axis works on ``log10`` of the positive finite values, which is finite
for every one of them (from about -323.3 to 308.3), so plain floats do there.
"""

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal, localcontext

#: Enough digits for the ratio of any float to a tick step of its axis (a float has 17).
DECIMAL_CONTEXT = Context(prec=40, Emax=100_000, Emin=-100_000)
#: The most ticks a log axis has: beyond, it labels every second power of ten (or third, ...).
MAX_LOG_TICKS = 10
#: How far a flat axis (every value the same, ``v``) reaches either side: half a unit, or a
#: thousandth of ``v`` when that is more (half a unit beside 1e308 would not show).
FLAT_PAD, FLAT_FRACTION = Decimal("0.5"), Decimal("0.001")
#: The axis lengths, and how far from zero an axis may reach in lengths, where floats place points.
FLOAT_SPANS, FLOAT_REACH = (Decimal("1e-290"), Decimal("1e290")), Decimal(10**6)
#: The significant digits a float writes back exactly: a label with more is written from the decimal.
FLOAT_DIGITS = 15


class LinearAxis:
    """An axis from ``low`` to ``high`` (``Decimal``, ``low < high``).

    ``ticks`` are ``(fraction, label)`` pairs; ``fraction(value)`` is how far along the axis
    a finite ``value`` lies, 0 at ``low`` and 1 at ``high``.
    """

    def __init__(self, low, high, ticks):
        self.low, self.high = low, high
        # Floats place a point to a tiny fraction of a pixel, and much faster, when the axis's
        # length is an ordinary float and its ends are not far from zero compared with it;
        # elsewhere (near the largest floats, 1e20 + 1 to 1e20 + 2) the decimals do.
        with localcontext(DECIMAL_CONTEXT):
            span, largest = high - low, max(abs(low), abs(high))
            floats_place = FLOAT_SPANS[0] < span < FLOAT_SPANS[1] and largest < span * FLOAT_REACH
        self.fraction = self._decimal_fraction
        if floats_place:
            self.fraction = _float_fraction(float(low), float(span))
        self.ticks = [(self._decimal_fraction(tick), label) for tick, label in ticks]

    def _decimal_fraction(self, value):
        with localcontext(DECIMAL_CONTEXT):
            return float((Decimal(value) - self.low) / (self.high - self.low))


def _float_fraction(low, span):
    def fraction(value):
        return (value - low) / span

    return fraction


class LogAxis:
    """An axis of powers of ten from ``10**low`` to ``10**high`` (ints, ``low < high``).

    ``ticks`` are ``(fraction, label)`` pairs; ``fraction(value)`` places a positive finite value.
    """

    def __init__(self, low, high, powers):
        self.low, self.high = low, high
        self.ticks = [((power - low) / (high - low), _power_label(power)) for power in powers]

    def fraction(self, value):
        return (math.log10(value) - self.low) / (self.high - self.low)


def linear_axis(values, count=5):
    """An axis around the finite ``values`` with about ``count`` round ticks (steps of 1, 2 or 5
    times a power of ten), widened to the ticks just outside the values; 0 to 1 when there are none."""
    with localcontext(DECIMAL_CONTEXT):
        low, high = _span(values)
        rough = (high - low) / count
        power = Decimal(1).scaleb(rough.adjusted())  # the power of ten at or below ``rough``
        step = next((m * power for m in (1, 2, 5) if m * power >= rough), 10 * power)
        first = int((low / step).to_integral_value(ROUND_FLOOR))
        last = int((high / step).to_integral_value(ROUND_CEILING))
        ticks = [k * step for k in range(first, last + 1)]
        digits = _label_digits(ticks, step)
        return LinearAxis(first * step, last * step, [(tick, _decimal_label(tick, digits)) for tick in ticks])


def log_axis(values):
    """An axis of powers of ten around the positive finite ``values``; 1 to 10 when there are none.

    Each tick is a power: every one when there are few, every second or third and so on
    when there are many, at most ``MAX_LOG_TICKS``.
    """
    low, high = 0, 1
    if values:
        # The powers of ten at or below the least value and at or above the largest, read from
        # each value as Python writes it (its shortest decimal: 1e-12, not the float just below):
        # a float log10 would round 999999999999998 up to 15.0.
        least, largest = Decimal(repr(float(min(values)))), Decimal(repr(float(max(values))))
        low, high = least.adjusted(), largest.adjusted()
        if largest != Decimal(1).scaleb(high):
            high += 1
    if low == high:
        high = low + 1
    every = -(-(high - low + 1) // MAX_LOG_TICKS)  # the ceiling of the quotient, in ints
    return LogAxis(low, high, range(low, high + 1, every))


def _span(values):
    """The least and largest value, widened when they are equal (and 0 to 1 when there are none)."""
    if not values:
        return Decimal(0), Decimal(1)
    # The least and largest float are exact as decimals: only the two ends are converted.
    low, high = Decimal(min(values)), Decimal(max(values))
    if low == high:
        pad = max(FLAT_PAD, abs(low) * FLAT_FRACTION)
        return low - pad, high + pad
    return low, high


def _label_digits(ticks, step):
    """Significant digits that tell neighbouring ticks apart: six, as ``:g`` writes, or more
    when the ticks lie close together far from zero (1e20 + 1, 1e20 + 2, ...)."""
    largest = max((abs(tick) for tick in ticks if tick), default=step)
    return max(6, largest.adjusted() - step.adjusted() + 1)


def _decimal_label(tick, digits):
    """A tick as ``:g`` writes a float (``0.2``, ``1e+06``), or as the decimal itself where the
    float would not show it: past the largest float, among the subnormals, or with more digits
    than a float holds."""
    if digits <= FLOAT_DIGITS:
        label = f"{float(tick):.{digits}g}"
        if label not in ("inf", "-inf") and Decimal(label) == tick:
            return label
    return f"{tick.normalize(DECIMAL_CONTEXT):.{digits}g}"


def _power_label(power):
    """A power of ten as a tick reads it: 0.01, 1, 100 near one, 1e-5 or 1e6 further away."""
    if -3 <= power <= 4:
        return f"{10.0**power:g}"
    return f"1e{power}"
