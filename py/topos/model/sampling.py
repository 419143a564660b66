"""The draws of ``jax.random`` beyond uniform, normal and bernoulli, the same numbers for the same key.

Each function records what its namesake in ``jax/_src/random/core.py`` (jax 0.10) computes, in the
same order, over topos's Threefry bits (``topos.model.randomness``), so a key gives jax's draws on
numpy, XLA and WebGPU: integers and indices exactly, floats to the rounding of the ``log`` they pass
through (numpy's, XLA's and WGSL's differ in the last bits). float64 draws take topos's 32-bit
uniforms (``topos.uniform``), which are not jax's 64-bit ones: they are the same distributions,
not jax's numbers.
"""

import math
import numbers

import numpy as np

from ..dtypes import FLOAT_DTYPES, INT32_MAX, INT32_MIN, canonical_dtype
from ..errors import ArgumentError, DtypeError, ShapeError
from ..ops.registry import axis_index
from ..text import format_shape
from . import arguments, elementwise_more, functions, randomness, scans, shape_functions, sorting, special
from .nodes import user_source


def _refuse_shape(what, message, value):
    raise ShapeError(f"{what}: {message}", opcode=what, shapes=[value.shape], source=user_source())


def gumbel(key, shape, dtype="float32"):
    """Standard Gumbel floats of ``shape``: ``-log(-log(u))``, as ``jax.random.gumbel(key, shape)``.

    ``u`` is ``uniform(key, shape, dtype, low=tiny, high=1)`` (``tiny`` the dtype's smallest normal
    number), jax's default ("low") mode: a zero uniform becomes ``tiny``, so no draw is infinite.
    """
    key = randomness._recorded_key(key, "gumbel")
    dtype = canonical_dtype(dtype, FLOAT_DTYPES)
    u = randomness.uniform(key, shape, dtype, low=float(np.finfo(dtype).tiny), high=1.0)
    return functions.neg(functions.log(functions.neg(functions.log(u))))


def exponential(key, shape, dtype="float32"):
    """Exponential floats of rate 1 and ``shape``: ``-log1p(-u)``, as ``jax.random.exponential(key, shape)``.

    ``u`` is ``uniform(key, shape, dtype)`` in [0, 1), so ``log1p`` meets (-1, 0] and no draw is infinite.
    """
    key = randomness._recorded_key(key, "exponential")
    u = randomness.uniform(key, shape, canonical_dtype(dtype, FLOAT_DTYPES))
    return functions.neg(elementwise_more.log1p(functions.neg(u)))


def truncated_normal(key, lower, upper, shape=(), dtype="float32"):
    """Standard normal floats conditioned on (lower, upper), as ``jax.random.truncated_normal``.

    jax's inversion: ``a, b = erf(lower / sqrt(2)), erf(upper / sqrt(2))`` (recorded, so the
    same erf runs as jax's does), ``u`` uniform on [a, b), ``sqrt(2) * erfinv(u)``, clipped to the
    floats just inside (lower, upper) so rounding never leaves the interval. ``lower`` and ``upper``
    are numbers (``-inf`` and ``inf`` allowed), ``lower < upper``.
    """
    key = randomness._recorded_key(key, "truncated_normal")
    dtype = canonical_dtype(dtype, FLOAT_DTYPES)
    if not (isinstance(lower, numbers.Real) and isinstance(upper, numbers.Real) and lower < upper):
        raise ArgumentError(f"truncated_normal needs numbers lower < upper, got lower={lower!r}, upper={upper!r}")
    shape = randomness._shape(shape, key, "truncated_normal")
    root2, bounds = np.asarray(math.sqrt(2), dtype), np.asarray([lower, upper], dtype=dtype)
    a, b = (special.erf(key.tape.leaf(bound / root2, dtype=dtype)) for bound in bounds)
    floats = key.tape.apply("Uniform", [randomness.random_bits(key, shape)], dtype=dtype)
    u = functions.add(functions.mul(floats, functions.sub(b, a)), a)
    z = functions.mul(special.erfinv(u), root2)
    inside = np.nextafter(bounds, np.asarray([np.inf, -np.inf], dtype=dtype))
    return functions.minimum(functions.maximum(z, inside[0]), inside[1])


def _logits(logits, what):
    logits = arguments.recorded(logits, what)
    if logits.dtype not in FLOAT_DTYPES:
        raise DtypeError(f"{what} takes floating-point logits, got {logits.dtype}")
    if not logits.shape:
        _refuse_shape(what, "the logits need an axis of categories, got a scalar", logits)
    return logits


def categorical(key, logits, axis=-1, shape=None, replace=True):
    """Category indices (int32) drawn with probabilities ``softmax(logits, axis)``, as ``jax.random.categorical``.

    The Gumbel-max trick: ``argmax(gumbel(key, ...) + logits, axis)``, one Gumbel draw per category
    and sample. ``shape`` (default: the logits' shape without ``axis``) may add leading axes for
    several draws from each distribution; its trailing axes broadcast with the logits' others.
    A logit of ``-inf`` is never drawn. ``replace=False`` draws the leading axes' ``k`` samples
    without replacement: the top ``k`` of ``logits + gumbel(key, logits.shape)`` (Gumbel top-k).
    """
    key = randomness._recorded_key(key, "categorical")
    logits = _logits(logits, "categorical")
    rank = len(logits.shape)
    axis = axis_index(axis, logits.shape, "categorical") - rank  # counted from the end, as jax counts it
    batch = logits.shape[: rank + axis] + logits.shape[rank + axis + 1 :]
    shape = batch if shape is None else arguments.integer_shape(shape, "categorical", logits)
    if len(shape) < len(batch) or _broadcast(shape, batch) != shape:
        _refuse_shape(
            "categorical", f"shape {format_shape(shape)} does not hold the batch {format_shape(batch)}", logits
        )
    prefix = shape[: len(shape) - len(batch)]
    if not replace:
        return _categorical_without_replacement(key, logits, axis % rank, shape, prefix, batch)
    drawn = list(shape[len(prefix) :])
    drawn.insert(axis % rank, logits.shape[axis])
    noise = gumbel(key, prefix + tuple(drawn), logits.dtype)
    return scans.argmax(functions.add(noise, functions.reshape(logits, (1,) * len(prefix) + logits.shape)), axis)


def _categorical_without_replacement(key, logits, axis, shape, prefix, batch):
    """jax's ``replace=False``: the top k of logits + Gumbel noise along ``axis`` (moved last), the
    k indices then moved to the front and laid out as ``shape`` = prefix + batch."""
    k, n, rank = math.prod(prefix), logits.shape[axis], len(logits.shape)
    if k > n or shape[len(prefix) :] != batch:
        raise ArgumentError(f"categorical without replacement cannot draw {k} of {n} categories into {shape}")
    scores = functions.add(logits, gumbel(key, logits.shape, logits.dtype))
    last = [d for d in range(rank) if d != axis] + [axis]
    _, indices = scans.top_k(shape_functions.transpose(scores, last), k)  # batch + (k,)
    front = shape_functions.transpose(indices, [rank - 1] + list(range(rank - 1)))
    return functions.reshape(front, shape)


def _broadcast(a, b):
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def _bound(value, what, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not INT32_MIN <= value <= INT32_MAX:
        raise ArgumentError(f"{what}: {name} must be a whole number in int32's range, got {value!r}")
    return int(value)


def randint(key, shape, minval, maxval):
    """int32 integers in [minval, maxval) of ``shape``, as ``jax.random.randint(key, shape, minval, maxval)``.

    jax's algorithm, bit for bit: the key splits in two, each key draws 32 bits an element, and
    ``RandomInt`` reduces the 64 bits modulo the span (the bias jax documents, below 2^-32 times the
    span). ``minval`` and ``maxval`` are whole numbers in int32's range; ``maxval <= minval`` gives
    ``minval`` everywhere, as jax.
    """
    key = randomness._recorded_key(key, "randint")
    low, high = _bound(minval, "randint", "minval"), _bound(maxval, "randint", "maxval")
    shape = randomness._shape(shape, key, "randint")
    keys = randomness.split_key(key, 2)
    words = [randomness.random_bits(keys[i], shape) for i in (0, 1)]
    both = functions.concatenate([functions.reshape(w, (1,) + shape) for w in words])
    return key.tape.apply("RandomInt", [both], low=low, high=high)


def _population(a, axis, what, key):
    """(n, a's recorded value or None) for choice's ``a``: a whole number n, or a value sampled along ``axis``."""
    if isinstance(a, numbers.Integral) and not isinstance(a, bool):
        return _bound(a, what, "a"), None, 0
    a = arguments.recorded(a, what)
    if not a.shape:
        _refuse_shape(what, "a must be a whole number or a value with at least one axis", a)
    axis = axis_index(axis, a.shape, what)
    return a.shape[axis], a, axis


def choice(key, a, shape=(), replace=True, p=None, axis=0):
    """Samples of ``a`` (``range(a)`` for a whole number) of ``shape``, as ``jax.random.choice``.

    With replacement and no ``p``: ``randint(key, shape, 0, n)``. With weights ``p`` (a recorded
    [n] value, summing to anything positive): the first index whose running sum reaches
    ``sum(p) * (1 - u)``, jax's ``searchsorted`` over ``cumsum(p)``. Without replacement and with
    ``p``: the ``prod(shape)`` largest of ``gumbel(key, (n,)) + log(p)`` (the Gumbel top-k trick);
    without either, the first ``prod(shape)`` of ``permutation(key, n)``.
    A value ``a`` is sampled along ``axis`` (``take``); a whole number gives the int32 indices.
    """
    key = randomness._recorded_key(key, "choice")
    n, values, axis = _population(a, axis, "choice", key)
    shape = arguments.integer_shape(shape, "choice", key)
    draws = math.prod(shape)
    if n <= 0 or (not replace and draws > n):
        raise ArgumentError(
            f"choice cannot draw {draws} samples from {n} {'with' if replace else 'without'} replacement"
        )
    if p is not None:
        p = _logits(p, "choice")
        if p.shape != (n,):
            _refuse_shape("choice", f"p must be a [{n}] value, got {format_shape(p.shape)}", p)
    if p is None and replace:
        indices = randint(key, shape, 0, n)
    elif p is None:
        indices = functions.reshape(_shuffled(key, n)[:draws], shape)  # jax: permutation(key, a)[:draws]
    elif replace:
        running = scans.cumsum(p)
        target = functions.mul(running[n - 1], functions.sub(1.0, randomness.uniform(key, shape, p.dtype)))
        # jax's searchsorted(running, target): the first index whose running sum is >= target (the last
        # one always is: target <= running[-1] because 1 - u <= 1 and a product rounds monotonically).
        reached = functions.greater_equal(running, functions.reshape(target, shape + (1,)))
        indices = scans.argmax(reached, axis=-1)
    else:
        scores = functions.add(gumbel(key, (n,), p.dtype), functions.log(p))
        indices = functions.reshape(scans.top_k(scores, draws)[1], shape)
    if values is None:
        return indices
    return functions.take(values, indices, axis=axis)


def _shuffled(key, n):
    """``arange(n)`` in jax's shuffled order (``jax.random._shuffle``), as int32.

    Each of jax's rounds splits the key, draws 32-bit sort keys and sorts stably by them; a float
    sort orders a uint32 key exactly as two stable passes over its 16-bit halves (``BitField``),
    the low half first (a radix sort), carrying ``arange(n)`` along as float32 (exact below 2^24).
    The int32 result is the inverse of the inverse permutation: two more argsorts.
    """
    tape = key.tape
    order = tape.leaf(np.arange(n), dtype="float32")
    rounds = math.ceil(3 * math.log(max(1, n)) / math.log(2**32 - 1))  # jax's: 1 round up to n = 1625
    for _ in range(rounds):
        keys = randomness.split_key(key, 2)
        key, bits = keys[0], randomness.random_bits(keys[1], (n,))
        low, high = (tape.apply("BitField", [bits], shift=s, width=16, dtype="float32") for s in (0, 16))
        by_low = sorting.argsort(low)
        order, high = functions.take(order, by_low), functions.take(high, by_low)
        order = functions.take(order, sorting.argsort(high))
    return sorting.argsort(tape.apply("IndexToFloat", [sorting.argsort(order)], dtype="float32"))


def permutation(key, x, axis=0):
    """``x`` shuffled along ``axis`` (``range(x)`` for a whole number, as int32), as ``jax.random.permutation``.

    jax's rounds of stable sorts by random 32-bit keys (one round up to 1625 elements, two up to
    about 2.6 million), each recorded as a split key, its bits and two ``Argsort`` passes over the
    bits' 16-bit halves; a value ``x`` is then taken in that order (``take``), as jax takes it.
    """
    return _permuted(key, x, axis, "permutation")


def _permuted(key, x, axis, what):
    key = randomness._recorded_key(key, what)
    n, values, axis = _population(x, axis, what, key)
    if n >= 2**24:
        raise ArgumentError(f"{what} of {n} elements: topos carries the order as float32, exact below 2^24")
    indices = _shuffled(key, n)
    return indices if values is None else functions.take(values, indices, axis=axis)


def shuffle(key, x, axis=0):
    """``x`` with its slices along ``axis`` in a random order: ``jax.random.permutation(key, x, axis,
    independent=False)``, the same order for the same key (``range(x)`` for a whole number, as int32).

    jax 0.10 has no ``jax.random.shuffle`` (deprecated in 0.4, then removed), and the one it had
    shuffled each slice along ``axis`` independently; topos's ``shuffle`` means what numpy's
    ``Generator.shuffle`` means, whole slices moved together, and what jax now spells with
    ``permutation``. It returns a new value: a recorded value is never changed in place.
    """
    return _permuted(key, x, axis, "shuffle")


# Each recording function records atomically, as topos.model.functions' do.
gumbel, exponential, truncated_normal = (arguments.all_or_nothing(f) for f in (gumbel, exponential, truncated_normal))
categorical, randint, choice, permutation, shuffle = (
    arguments.all_or_nothing(f) for f in (categorical, randint, choice, permutation, shuffle)
)
