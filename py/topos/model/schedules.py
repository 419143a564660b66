"""Learning-rate schedules: the rate as a function of the step count, named and meant as optax's.

```python
rate = schedules.warmup_cosine_decay_schedule(0.0, 1e-2, warmup_steps=100, decay_steps=1000)
opt = optim.Adam(lr=rate)  # lr is a number or a schedule
```

A schedule is called with the number of steps taken before the step it is
for (0 for the first step, as optax counts), and returns a Python float. The
optimizer asks it on the host, once a step, and every trainer gets that same
float (``Optimizer.rate``): the numpy step, the XLA module (where the rate is an
argument, not a constant of the program) and the WebGPU launch all use one
number, so a schedule is the same schedule on each. Any function of the step
count works as ``lr``; the ones here are frozen dataclasses, so they compare
equal and print their arguments.

The same rules as optax (``optax.schedules``), computed in Python floats:
``linear_schedule`` holds ``init_value`` until ``transition_begin``, moves
linearly to ``end_value`` over ``transition_steps`` and holds it after;
``cosine_decay_schedule`` goes from ``init_value`` to ``alpha * init_value``
over ``decay_steps`` along half a cosine; ``exponential_decay`` multiplies by
``decay_rate`` every ``transition_steps`` (continuously, or in whole stairs
with ``staircase=True``), bounded by ``end_value``;
``piecewise_constant_schedule`` multiplies by each boundary's scale from that
step on; ``join_schedules`` runs each schedule from its boundary, counting its
steps from there; ``warmup_cosine_decay_schedule`` joins a linear warm-up to a
cosine decay that ends at ``end_value`` at step ``decay_steps``.
"""

import math
import numbers
from dataclasses import dataclass

from ..errors import ArgumentError

__all__ = [
    "Schedule",
    "constant_schedule",
    "linear_schedule",
    "cosine_decay_schedule",
    "warmup_cosine_decay_schedule",
    "exponential_decay",
    "piecewise_constant_schedule",
    "join_schedules",
]


def _number(schedule, name, value):
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ArgumentError(f"{schedule}: {name} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise ArgumentError(f"{schedule}: {name} must be finite, got {value!r}")
    return number


def _count(schedule, name, value, least=0):
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ArgumentError(f"{schedule}: {name} must be a whole number >= {least}, got {value!r}")
    return value


def as_rate(owner, value):
    """``lr`` as an optimizer keeps it: a schedule (any function of the step count) as it is, else a
    non-negative float; ``ArgumentError`` naming ``owner`` (the optimizer's kind) otherwise."""
    if callable(value):
        return value
    try:
        rate = float(value)
    except (TypeError, ValueError):
        raise ArgumentError(f"{owner}: lr must be a number or a schedule, got {value!r}") from None
    if not rate >= 0.0:  # also refuses NaN
        raise ArgumentError(f"{owner}: lr must be non-negative, got {rate}")
    return rate


def rate_at(owner, lr, count):
    """The rate of the step after ``count`` steps: ``lr`` itself, or what the schedule ``lr`` says then,
    checked (a non-negative finite number), as a Python float."""
    if not callable(lr):
        return lr
    rate = lr(count)
    if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0.0 <= rate < math.inf:
        raise ArgumentError(f"{owner}: lr({count}) must be a non-negative finite number, got {rate!r}")
    return float(rate)


class Schedule:
    """Base class of the schedules here: ``schedule(count)`` is the rate of the step after ``count`` steps.

    Each is a class named as optax's function and called as that function is (``linear_schedule(...)``),
    so that a schedule is a value: it compares equal to one made alike and prints its arguments.
    """


@dataclass(frozen=True)
class constant_schedule(Schedule):
    """``value`` at every step."""

    value: float

    def __post_init__(self):
        object.__setattr__(self, "value", _number("constant_schedule", "value", self.value))

    def __call__(self, count):
        return self.value


@dataclass(frozen=True)
class linear_schedule(Schedule):
    """``init_value`` until ``transition_begin``, then linearly to ``end_value`` over ``transition_steps``
    steps, then ``end_value`` (``transition_steps`` 0: ``init_value`` throughout, as optax)."""

    init_value: float
    end_value: float
    transition_steps: int
    transition_begin: int = 0

    def __post_init__(self):
        for name in ("init_value", "end_value"):
            object.__setattr__(self, name, _number("linear_schedule", name, getattr(self, name)))
        _count("linear_schedule", "transition_steps", self.transition_steps)
        _count("linear_schedule", "transition_begin", self.transition_begin)

    def __call__(self, count):
        if self.transition_steps == 0:
            return self.init_value
        done = min(max(count - self.transition_begin, 0), self.transition_steps)
        return (self.init_value - self.end_value) * (1 - done / self.transition_steps) + self.end_value


@dataclass(frozen=True)
class cosine_decay_schedule(Schedule):
    """``init_value * ((1 - alpha) * c ** exponent + alpha)`` with ``c = (1 + cos(pi * t / decay_steps)) / 2``,
    ``t`` the step count held at ``decay_steps``."""

    init_value: float
    decay_steps: int
    alpha: float = 0.0
    exponent: float = 1.0

    def __post_init__(self):
        for name in ("init_value", "alpha", "exponent"):
            object.__setattr__(self, name, _number("cosine_decay_schedule", name, getattr(self, name)))
        _count("cosine_decay_schedule", "decay_steps", self.decay_steps, least=1)

    def __call__(self, count):
        cosine = 0.5 * (1 + math.cos(math.pi * min(count, self.decay_steps) / self.decay_steps))
        return self.init_value * ((1 - self.alpha) * cosine**self.exponent + self.alpha)


@dataclass(frozen=True)
class exponential_decay(Schedule):
    """``init_value * decay_rate ** ((t - transition_begin) / transition_steps)`` from ``transition_begin`` on
    (the exponent floored with ``staircase``), ``init_value`` before; ``end_value`` bounds it (from below
    when ``decay_rate < 1``, from above otherwise)."""

    init_value: float
    transition_steps: int
    decay_rate: float
    transition_begin: int = 0
    staircase: bool = False
    end_value: float = None

    def __post_init__(self):
        for name in ("init_value", "decay_rate"):
            object.__setattr__(self, name, _number("exponential_decay", name, getattr(self, name)))
        if self.decay_rate <= 0.0:
            raise ArgumentError(f"exponential_decay: decay_rate must be positive, got {self.decay_rate}")
        _count("exponential_decay", "transition_steps", self.transition_steps, least=1)
        _count("exponential_decay", "transition_begin", self.transition_begin)
        object.__setattr__(self, "staircase", bool(self.staircase))
        if self.end_value is not None:
            object.__setattr__(self, "end_value", _number("exponential_decay", "end_value", self.end_value))

    def __call__(self, count):
        elapsed = count - self.transition_begin
        if elapsed <= 0:
            rate = self.init_value
        else:
            power = elapsed / self.transition_steps
            rate = self.init_value * self.decay_rate ** (math.floor(power) if self.staircase else power)
        if self.end_value is not None:
            rate = max(rate, self.end_value) if self.decay_rate < 1.0 else min(rate, self.end_value)
        return rate


@dataclass(frozen=True)
class piecewise_constant_schedule(Schedule):
    """``init_value`` times the scale of every boundary the step count has reached (``{boundary: scale}``;
    from step ``boundary`` on, as optax computes it): a step decay."""

    init_value: float
    boundaries_and_scales: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "init_value", _number("piecewise_constant_schedule", "init_value", self.init_value))
        pairs = self.boundaries_and_scales
        pairs = pairs.items() if isinstance(pairs, dict) else pairs or ()
        try:
            pairs = tuple(sorted((boundary, scale) for boundary, scale in pairs))
        except (TypeError, ValueError):
            raise ArgumentError(
                f"piecewise_constant_schedule: boundaries_and_scales is {{boundary: scale}}, got {pairs!r}"
            ) from None
        checked = []
        for boundary, scale in pairs:
            _count("piecewise_constant_schedule", "a boundary", boundary)
            scale = _number("piecewise_constant_schedule", f"the scale at {boundary}", scale)
            if scale < 0.0:
                raise ArgumentError(f"piecewise_constant_schedule: the scale at {boundary} must be >= 0, got {scale}")
            checked.append((boundary, scale))
        object.__setattr__(self, "boundaries_and_scales", tuple(checked))

    def __call__(self, count):
        rate = self.init_value
        for boundary, scale in self.boundaries_and_scales:
            if count >= boundary:
                rate = rate * scale
        return rate


@dataclass(frozen=True)
class join_schedules(Schedule):
    """``schedules[0]`` until ``boundaries[0]``, then ``schedules[1]`` counted from that boundary, and so on."""

    schedules: tuple
    boundaries: tuple

    def __post_init__(self):
        schedules, boundaries = tuple(self.schedules), tuple(self.boundaries)
        if not all(callable(schedule) for schedule in schedules):
            raise ArgumentError("join_schedules: schedules must be functions of the step count")
        if len(boundaries) != len(schedules) - 1:
            raise ArgumentError(
                f"join_schedules: {len(schedules)} schedules take {len(schedules) - 1} boundaries, got {len(boundaries)}"
            )
        for boundary in boundaries:
            _count("join_schedules", "a boundary", boundary)
        object.__setattr__(self, "schedules", schedules)
        object.__setattr__(self, "boundaries", boundaries)

    def __call__(self, count):
        rate = self.schedules[0](count)
        for boundary, schedule in zip(self.boundaries, self.schedules[1:]):
            if count >= boundary:
                rate = schedule(count - boundary)
        return rate


def warmup_cosine_decay_schedule(init_value, peak_value, warmup_steps, decay_steps, end_value=0.0, exponent=1.0):
    """A linear warm-up from ``init_value`` to ``peak_value`` over ``warmup_steps``, then a cosine decay to
    ``end_value`` at step ``decay_steps`` (which counts the warm-up, as optax's does)."""
    peak_value = _number("warmup_cosine_decay_schedule", "peak_value", peak_value)
    end_value = _number("warmup_cosine_decay_schedule", "end_value", end_value)
    _count("warmup_cosine_decay_schedule", "warmup_steps", warmup_steps)
    if not isinstance(decay_steps, int) or isinstance(decay_steps, bool) or decay_steps <= warmup_steps:
        raise ArgumentError(
            f"warmup_cosine_decay_schedule: decay_steps must be a whole number past warmup_steps ({warmup_steps}), "
            f"got {decay_steps!r}"
        )
    alpha = 0.0 if peak_value == 0.0 else end_value / peak_value
    warmup = linear_schedule(init_value, peak_value, warmup_steps)
    decay = cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha, exponent)
    return join_schedules((warmup, decay), (warmup_steps,))
