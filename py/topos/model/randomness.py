"""Random numbers: keys outside a recording, draws inside one.

A key is a ``uint32[2]`` array, JAX's threefry key layout: ``random_key(seed)``
is ``jax.random.PRNGKey(seed)``'s data. Outside a recording the key functions
take and give numpy arrays (``random_key``, ``split_key``, ``fold_in``). Inside
one the key is an input like any other, ``key = tape.input(topos.random_key(0))``,
and the draws (``random_bits``, ``uniform``, ``normal``, ``bernoulli``,
``dropout``) record Threefry-2x32 (``topos.ops.random``) over it: a run gives the
same bits on numpy, XLA and WebGPU, and feeding a new key draws new numbers
without recording again. ``split_key`` and ``fold_in`` work on a recorded key too.

A script that wants fresh numbers each training step feeds
``fold_in(base, step)`` as the key input of step ``step``: one base key, a new
key a step, and the whole run reproducible from the one seed.
"""

import math
import numbers

import numpy as np

from ..dtypes import FLOAT_DTYPES, UINT32_MAX, canonical_dtype
from ..errors import ArgumentError, ArgumentTypeError, DtypeError, ShapeError
from ..ops import random as threefry
from ..tensor import Tensor
from ..text import format_shape
from . import arguments, functions, special
from .nodes import user_source
from .value import Value

KEY_WORDS = "a key is a uint32 [2] array (topos.random_key(seed))"


# Keys ------------------------------------------------------------------------------------


def _numpy_key(key, what):
    """``key`` as a uint32 [2] numpy array, or a clear error naming ``what``."""
    if isinstance(key, Tensor):
        key = key.array
    try:
        array = np.asarray(key)
    except (TypeError, ValueError) as error:
        raise ArgumentTypeError(f"{what}: {KEY_WORDS}, got {type(key).__name__} ({error})") from None
    if array.dtype.kind not in "ui":
        raise DtypeError(f"{what}: {KEY_WORDS}, got {array.dtype} {format_shape(array.shape)}")
    if array.shape != (2,):
        raise ShapeError(
            f"{what}: {KEY_WORDS}, got shape {format_shape(array.shape)}", shapes=[array.shape], source=user_source()
        )
    if int(array.min()) < 0 or int(array.max()) > UINT32_MAX:
        raise ArgumentError(f"{what}: {KEY_WORDS}; its words {array.tolist()} do not fit uint32")
    return array.astype(np.uint32)


def _recorded_key(key, what):
    """``key`` itself once it is a recorded uint32 [2] value."""
    if not isinstance(key, Value):
        raise ArgumentTypeError(
            f"{what} draws inside a recording: its key is a recorded value, "
            f"key = tape.input(topos.random_key(seed)); got {type(key).__name__}"
        )
    if key.dtype != "uint32":
        raise DtypeError(f"{what}: {KEY_WORDS}, got a recorded {key.dtype} value {format_shape(key.shape)}")
    if key.shape != (2,):
        raise ShapeError(
            f"{what}: {KEY_WORDS}, got a recorded value of shape {format_shape(key.shape)}",
            opcode=what,
            shapes=[key.shape],
            source=user_source(),
        )
    return key


def _whole(value, low, high, what, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not low <= int(value) <= high:
        raise ArgumentError(f"{what}: {name} must be a whole number in {low}..{high}, got {value!r}")
    return int(value)


def random_key(seed):
    """A key from an integer seed: ``jax.random.PRNGKey(seed)``'s data, a uint32 [2] numpy array.

    The seed is read as a 64-bit word (a negative one in two's complement): the
    high 32 bits are word 0 and the low 32 bits word 1, so ``random_key(42)`` is
    ``[0, 42]``. Feed it to a recording as ``tape.input(topos.random_key(seed))``.
    """
    seed = _whole(seed, -(2**63), 2**64 - 1, "random_key", "the seed")
    word = seed % 2**64
    return np.array([word >> 32, word & UINT32_MAX], dtype=np.uint32)


def split_key(key, n=2):
    """``n`` new keys from ``key``, as ``jax.random.split(key, n)``: a [n, 2] uint32 array.

    A numpy key gives a numpy array; a recorded key records ``SplitKey`` and gives
    a recorded [n, 2] value (``keys[0]`` is the first key). Keys split from one key
    are independent of it and of each other; use each one once.
    """
    n = _whole(n, 1, UINT32_MAX, "split_key", "n")
    if isinstance(key, Value):
        key = _recorded_key(key, "split_key")
        return key.tape.apply("SplitKey", [key], count=n)
    return threefry.split(_numpy_key(key, "split_key"), n)


def fold_in(key, data):
    """A new key made of ``key`` and the whole number ``data`` (0..2**32-1), as ``jax.random.fold_in``.

    ``fold_in(base, step)`` gives each training step a key of its own from one base
    key. A numpy key gives a numpy key; a recorded key records ``FoldIn``.
    """
    data = _whole(data, 0, UINT32_MAX, "fold_in", "data")
    if isinstance(key, Value):
        key = _recorded_key(key, "fold_in")
        return key.tape.apply("FoldIn", [key], data=data)
    return threefry.fold_in(_numpy_key(key, "fold_in"), data)


# Draws inside a recording ------------------------------------------------------------------


def _shape(shape, key, what):
    shape = arguments.integer_shape(shape, what, key)
    if any(extent < 0 for extent in shape):
        # A negative extent would otherwise reach a reshape's error (or an empty draw), unsaid.
        raise ShapeError(
            f"{what}: shape {format_shape(shape)} has a negative extent",
            opcode=what,
            shapes=[key.shape],
            source=user_source(),
        )
    return shape


def random_bits(key, shape):
    """uint32 random bits of ``shape`` from a recorded key, as ``jax.random.bits(key, shape)`` (records ``RandomBits``).

    The layout is JAX's partitionable one (jax 0.10's default): element i of
    the flattened result is Threefry-2x32 of the counter i, its two words xored.
    """
    key = _recorded_key(key, "random_bits")
    return key.tape.apply("RandomBits", [key], shape=_shape(shape, key, "random_bits"))


def uniform(key, shape, dtype="float32", low=0.0, high=1.0):
    """Floats uniform in [low, high) of ``shape`` from a recorded key (records ``RandomBits`` and ``Uniform``).

    float32 on [0, 1) is ``jax.random.uniform(key, shape)`` bit for bit, on every
    backend: the top 23 of each element's 32 bits make the mantissa of a float in
    [1, 2), minus 1. Another range is that value times ``high - low`` (computed in
    ``dtype``) plus ``low``, as JAX computes it. float64 takes the same 32 bits as
    ``bits * 2**-32`` (exact, with 32 bits of resolution; JAX's float64 draws 64
    bits, which topos cannot hold), on numpy and XLA (WGSL has no f64).
    """
    key = _recorded_key(key, "uniform")
    dtype = canonical_dtype(dtype, FLOAT_DTYPES)
    if not (isinstance(low, numbers.Real) and isinstance(high, numbers.Real) and low < high):
        raise ArgumentError(f"uniform needs numbers low < high, got low={low!r}, high={high!r}")
    bits = key.tape.apply("RandomBits", [key], shape=_shape(shape, key, "uniform"))
    floats = key.tape.apply("Uniform", [bits], dtype=dtype)
    if (low, high) == (0.0, 1.0):
        return floats
    start = np.asarray(low, dtype=dtype)
    span = np.asarray(high, dtype=dtype) - start
    return functions.add(functions.mul(floats, span), start)


def normal(key, shape, dtype="float32"):
    """Standard normal floats of ``shape`` from a recorded key, as ``jax.random.normal(key, shape)``.

    jax's algorithm: ``sqrt(2) * erfinv(u)`` with ``u = uniform(key, shape, dtype, low, 1)`` and
    ``low`` the float just above -1 (so erfinv never meets -1 and no draw is infinite); it records
    ``RandomBits``, ``Uniform``, the affine map and ``ErfInv``. float32 draws are jax's to erfinv's
    rounding (a couple of ulps, the transcendental part of Giles' polynomials differing between
    numpy, XLA and WGSL), on every backend. topos drew Box-Muller pairs before erfinv was a
    primitive; those values are gone: the same key now gives jax's numbers. float64 maps
    topos's 32-bit uniforms the same way (jax's float64 draws 64 bits, which topos cannot hold).
    """
    key = _recorded_key(key, "normal")
    dtype = canonical_dtype(dtype, FLOAT_DTYPES)
    shape = _shape(shape, key, "normal")
    low = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = uniform(key, shape, dtype, low=float(low), high=1.0)
    return functions.mul(special.erfinv(u), np.asarray(math.sqrt(2), dtype=dtype))


def bernoulli(key, p, shape, dtype="float32"):
    """1.0 with probability ``p``, else 0.0, in ``shape``: ``uniform(key, shape, dtype) < p``.

    ``p`` is a number in [0, 1] or a recorded value that broadcasts to ``shape``.
    For float32 the draws are ``jax.random.bernoulli(key, p, shape)``'s.
    """
    key = _recorded_key(key, "bernoulli")
    if not isinstance(p, Value) and not (isinstance(p, numbers.Real) and 0.0 <= p <= 1.0):
        raise ArgumentError(f"bernoulli needs a probability p in [0, 1], got {p!r}")
    return functions.less(uniform(key, shape, dtype), p)


def dropout(x, rate, key):
    """Inverted dropout: each element of ``x`` zeroed with probability ``rate``, the kept ones scaled by 1 / (1 - rate).

    The mask is ``bernoulli(key, 1 - rate, x.shape)``, so the expected value is ``x``;
    ``where(mask, x / (1 - rate), 0)`` as flax writes it, so a dropped element is 0
    whatever it held and the gradient flows through the kept elements only (scaled
    the same). ``rate`` 0 returns ``x`` itself; ``rate`` 1 gives zeros (no division).
    Feed a new key each step (``fold_in(base, step)``) for a new mask.
    """
    arguments.recorded(x, "dropout")
    if x.dtype not in FLOAT_DTYPES:
        raise DtypeError(f"dropout takes floating-point values, got {x.dtype}")
    if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0.0 <= rate <= 1.0:
        raise ArgumentError(f"dropout needs a rate in [0, 1], got {rate!r}")
    key = _recorded_key(key, "dropout")
    if rate == 0:
        return x
    keep = 1.0 - float(rate)
    mask = bernoulli(key, keep, x.shape, x.dtype)
    kept = functions.div(x, keep) if keep > 0 else x
    return functions.where(mask, kept, 0.0)


# Each recording function records atomically, as topos.model.functions' do.
random_bits, uniform, normal, bernoulli, dropout = (
    arguments.all_or_nothing(f) for f in (random_bits, uniform, normal, bernoulli, dropout)
)
split_key, fold_in = (arguments.all_or_nothing(f) for f in (split_key, fold_in))
