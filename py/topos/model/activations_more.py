"""Elementwise functions recorded as the primitives they are made of: ``topos.clip``,
``topos.fmod``, ``topos.mod`` (and ``remainder``), ``topos.logaddexp`` and the activations jax.nn has beside relu and gelu (``silu``,
``leaky_relu``, ``elu``, ``selu``, ``softsign``, ``hard_tanh``).

Each is written as JAX writes it (``jax/_src/nn/functions.py``, ``jnp.clip``,
``jnp.logaddexp``), so that every reading shows the real work and the derivative
comes from the primitives' rules: none needs a rule of its own. Where JAX guards a
branch that ``where`` does not take (elu's exp of a large positive input), the
guard is recorded too, so that no infinity of the unselected branch reaches the
gradient as ``0 * inf``.
"""

from . import arguments, elementwise_more
from . import functions as F

#: jax.nn.selu's constants (Klambauer et al. 2017), to float64's precision.
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def clip(a, a_min=None, a_max=None):
    """``a`` limited to ``[a_min, a_max]``, elementwise, as ``numpy.clip`` (records ``Maximum``, then ``Minimum``).

    Either bound may be None (no limit on that side) or a value of its own that broadcasts with
    ``a``; with both None, ``a`` is returned as it is (numpy 2's answer). As numpy, the lower
    bound is applied first, so where ``a_min > a_max`` the result is ``a_max``; a NaN in ``a`` or
    in a bound is NaN. The gradient is JAX's: 1 strictly inside, 0 outside (it goes to the bound
    that was taken, where that is a recorded value), and 1/2 to each at a bound itself, since
    ``maximum`` and ``minimum`` split a tie (PyTorch's ``clamp`` gives 1 there).
    """
    arguments.tape_of(a, a_min, a_max)  # one of them is a recorded value
    if a_min is not None:
        a = F.maximum(a, a_min)
    if a_max is not None:
        a = F.minimum(a, a_max)
    return a


def fmod(a, b):
    """The remainder of ``a / b`` truncated toward zero, with ``a``'s sign, elementwise, as
    ``numpy.fmod`` and C's ``fmod`` (records ``Rem``, ``lax.rem``); operands broadcast numpy's way.

    Exact, as C's: a primitive rather than ``a - b * trunc(a / b)``, which rounds. A zero ``b``, an
    infinite ``a`` or a NaN gives NaN; an infinite ``b`` gives ``a``. The gradient is 1 and
    ``-trunc(a / b)``, as JAX's and PyTorch's.
    """
    # The functions module's broadcasting recorder: fmod is one elementwise primitive as add is.
    return F._elementwise("Rem", a, b)


def mod(a, b):
    """The remainder of ``a / b`` with ``b``'s sign (floored division), elementwise, as
    ``numpy.mod``/``numpy.remainder`` and Python's ``%``; ``value % b`` records it too.

    Recorded as JAX's ``jnp.remainder``: ``fmod(a, b)``, plus ``b`` where that is non-zero and its
    sign is not ``b``'s, so it is exact (``fmod`` is). An exact zero takes ``b``'s sign, as numpy's
    (JAX's and PyTorch's keep ``a``'s). A zero ``b``, an infinite ``a`` or a NaN gives NaN;
    ``mod(-1, inf)`` is inf, as numpy's. The gradient is JAX's: 1 and ``-floor(a / b)``.
    """
    tape, (a, b) = F._broadcast_all("mod", [a, b])
    truncated = tape.apply("Rem", [a, b])
    below = F.less(b, 0.0)
    fix = F.not_equal(F.less(truncated, 0.0), below) * F.not_equal(truncated, 0.0)
    floored = F.where(fix, truncated + b, truncated)
    return F.where(F.equal(floored, 0.0), F.where(below, -0.0, 0.0), floored)


def logaddexp(a, b):
    """``log(exp(a) + exp(b))``, elementwise, as ``numpy.logaddexp``, without overflow.

    Recorded as ``max + softplus(min - max)`` (softplus is ``log1p(exp(.))``, accurate for
    a tiny tail), which is JAX's ``amax + log1p(exp(-|a - b|))``; where ``a - b`` is NaN (a NaN
    operand, or two infinities of one sign) it is ``a + b``, so ``logaddexp(-inf, -inf)`` is
    -inf and ``logaddexp(inf, inf)`` inf, as numpy's. The gradient is ``sigmoid(a - b)`` and
    ``sigmoid(b - a)``, 1/2 each at a tie.
    """
    high, low = F.maximum(a, b), F.minimum(a, b)
    gap = low - high
    return F.where(F.not_equal(gap, gap), F.add(a, b), high + F.softplus(gap))


def silu(x):
    """``x * sigmoid(x)``, elementwise (SiLU, or swish), as ``jax.nn.silu`` and PyTorch's ``silu``.

    ``silu(-inf)`` is NaN (``-inf * 0``), as in both of them.
    """
    x = arguments.recorded(x, "silu")
    return x * F.sigmoid(x)


def leaky_relu(x, negative_slope=0.01):
    """``x`` where ``x >= 0``, else ``negative_slope * x``, elementwise, as ``jax.nn.leaky_relu``.

    The gradient at 0 is 1, as JAX's (PyTorch's is ``negative_slope``); a NaN stays NaN.
    """
    x = arguments.recorded(x, "leaky_relu")
    return F.where(F.greater_equal(x, 0.0), x, x * negative_slope)


def elu(x, alpha=1.0):
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``, elementwise, as ``jax.nn.elu``.

    Recorded as JAX's: ``Expm1`` (accurate near 0, where ``exp(x) - 1`` would lose ``x``'s
    digits) of ``where(x > 0, 0, x)``, so a large ``x`` sends no overflow through the branch it
    does not take. The gradient at 0 is ``alpha``, as JAX's and PyTorch's.
    """
    x = arguments.recorded(x, "elu")
    positive = F.greater(x, 0.0)
    return F.where(positive, x, elementwise_more.expm1(F.where(positive, 0.0, x)) * alpha)


def selu(x):
    """``scale * elu(x, alpha)`` with jax.nn.selu's constants (alpha 1.6732..., scale 1.0507...)."""
    return elu(arguments.recorded(x, "selu"), SELU_ALPHA) * SELU_SCALE


def softsign(x):
    """``x / (|x| + 1)``, elementwise, as ``jax.nn.soft_sign`` and PyTorch's ``softsign``.

    At an infinity it is NaN (``inf / inf``), as in both of them.
    """
    x = arguments.recorded(x, "softsign")
    return x / (F.abs(x) + 1.0)


def hard_tanh(x):
    """``x`` limited to ``[-1, 1]``, elementwise, as ``jax.nn.hard_tanh``: 1 above 1, -1 below -1.

    Recorded as JAX's two ``where``s, so the gradient is 1 on ``[-1, 1]``, bounds included (as
    JAX's; PyTorch's ``hardtanh`` gives 0 at the bounds), and 0 outside; a NaN stays NaN.
    """
    x = arguments.recorded(x, "hard_tanh")
    return F.where(F.greater(x, 1.0), 1.0, F.where(F.less(x, -1.0), -1.0, x))


# Every public function records atomically (an error leaves the tape as it was).
for _name in ("clip", "fmod", "mod", "logaddexp", "silu", "leaky_relu", "elu", "selu", "softsign", "hard_tanh"):
    globals()[_name] = arguments.all_or_nothing(globals()[_name])
del _name
#: numpy's other name for ``mod`` (the wrapped function).
remainder = mod
