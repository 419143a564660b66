"""jax.random's other draws in topos (``topos.model.sampling``): randint, gumbel, exponential,
categorical, choice, permutation, normal and truncated_normal equal to jax.random's for the same key, on numpy, XLA and WebGPU (lavapipe).

jax 0.10 (threefry, partitionable layout) is the oracle. Integers and indices must be equal; floats
that pass through ``log`` may differ by the rounding of the libraries' ``log`` (numpy's, XLA's,
WGSL's), and each bound below is derived from what each library promises of one ``log``:

- numpy's and XLA's float32 ``log`` are each within 2 ulps of the exact value (so two of them 4
  ulps apart, tolerances.elementwise_bound); WGSL promises 2^-21 absolutely on [0.5, 2] and 3 ulps
  elsewhere (the WGSL spec's accuracy table), which is far wider near 1.
- gumbel is ``g = -log(L)``, ``L = -log(u)``: an error dL in L moves g by dL / L, and g's own log
  adds its error; exponential is ``-log1p(-u)``, one log1p (a few ulps of the result, as below).
- An index drawn by an argmax (categorical, choice's top-k) equals jax's unless the two best scores
  lie within their bounds of each other; where they differ, the test checks exactly that.
The WebGPU tests need an adapter and fail without one.
"""

import jax
import numpy as np
import pytest
from tolerances import sum_bound

import topos
from topos import ArgumentError, ArgumentTypeError, AxisError, DtypeError, ShapeError, Tape
from topos.ops import random as threefry

KEYS = [(0, 0), (0, 42), (1, 2), (0xFFFFFFFF, 0xFFFFFFFF), (0x13198A2E, 0x03707344), (7, 2026), (2**31, 5)]
SHAPES = [(), (1,), (7,), (3, 5), (2, 3, 4), (65,), (0,), (2, 0)]
# (minval, maxval): small, negative, a power of two, spans past 2^16 (the multiplier wraps to 0),
# the whole int32 range, an empty range (minval everywhere, as jax), and one of width 1.
RANGES = [(0, 10), (-5, 5), (0, 256), (100, 70_000), (0, 2**31 - 1), (-(2**31), 2**31 - 1), (7, 2), (3, 4)]
EPS32 = float(np.finfo(np.float32).eps)
TINY32 = float(np.finfo(np.float32).tiny)
LIBRARY_ULPS = 2  # numpy's or XLA's float32 log against the exact value


@pytest.fixture(autouse=True)
def jax_in_its_default_32_bits():
    """jax.random's own mode, as a user of jax meets it: its draws differ with jax_enable_x64 (randint and
    choice draw in 64 bits then), which other test files turn on for the whole process."""
    with jax.enable_x64(False):
        yield


def jax_key(key):
    return jax.random.wrap_key_data(np.asarray(key, dtype=np.uint32))


def draws(key, draw, backend="numpy", host=()):
    """The outputs of a recording whose key input ``key`` feeds ``draw(tape, key)`` (a list), on ``backend``
    (on WebGPU every node runs on the device but those of the opcodes in ``host``)."""

    def build(tape):
        return list(draw(tape, tape.input(np.asarray(key, dtype=np.uint32), name="key")))

    network, outputs = Tape.record(build, dtype="float32")
    plan = network.entry(outputs).lower()
    run = plan.run(network.parameters(), backend=backend)
    if backend == "webgpu":
        # Every drawing node runs on the device: the kernels reading has no host step for them.
        on_host = {plan.nodes[i].opcode for i, where in run.backends.items() if where != "webgpu"}
        assert on_host <= set(host), on_host
    return [np.asarray(v) for v in run.outputs()]


def log_error(x, result, wgsl=False):
    """The most one float32 ``log(x)`` (= ``result``) may be off: 2 ulps, or WGSL's promise."""
    x, result = np.asarray(x, np.float64), np.abs(np.asarray(result, np.float64))
    ulps = LIBRARY_ULPS * EPS32 * np.maximum(result, TINY32)
    if not wgsl:
        return ulps
    return np.where((x >= 0.5) & (x <= 2.0), 2.0**-21, 3 * EPS32 * np.maximum(result, TINY32))


def gumbel_bound(u, wgsl=False):
    """How far two float32 Gumbel draws from the uniform ``u`` may lie: each log's error as above (for
    two libraries, both of theirs), the inner one carried through ``-log`` as its error over L."""
    u = np.asarray(u, np.float64)
    inner = -np.log(u)
    outer = -np.log(inner)
    carried = (log_error(u, inner) + log_error(u, inner, wgsl)) / inner
    return carried + log_error(inner, outer) + log_error(inner, outer, wgsl) + EPS32 * np.abs(outer)


def jax_uniform_tiny(key, shape):
    return np.asarray(jax.random.uniform(jax_key(key), shape, np.float32, minval=TINY32, maxval=1.0))


def assert_argmax_within(got, want, scores, bound, axis):
    """``got`` equals ``want`` (indices along ``axis`` of ``scores``) wherever the best score leads by
    more than ``bound``; elsewhere the score ``got`` picked lies within ``bound`` of the best."""
    got, want = np.asarray(got), np.asarray(want)
    if np.array_equal(got, want):
        return
    picked = np.take_along_axis(scores, np.expand_dims(got, axis), axis)
    best = np.take_along_axis(scores, np.expand_dims(want, axis), axis)
    slack = np.take_along_axis(bound, np.expand_dims(got, axis), axis) + np.take_along_axis(
        bound, np.expand_dims(want, axis), axis
    )
    assert np.all(picked >= best - slack), "an index differs where its score was resolved"


# randint: integers, bit for bit ------------------------------------------------------------------


@pytest.mark.parametrize("key", KEYS)
def test_randint_equals_jax_random_randint_for_every_range_and_shape(key):
    for low, high in RANGES:
        recorded = draws(key, lambda t, k, low=low, high=high: [topos.randint(k, s, low, high) for s in SHAPES])
        for got, shape in zip(recorded, SHAPES):
            want = np.asarray(jax.random.randint(jax_key(key), shape, low, high, dtype=np.int32))
            assert got.dtype == np.int32 and got.shape == want.shape
            assert np.array_equal(got, want), (key, low, high, shape)


def test_randint_runs_the_same_on_xla_and_webgpu():
    ranges = RANGES[:6]
    for key in KEYS[:3]:
        for backend in ("xla", "webgpu"):
            recorded = draws(key, lambda t, k: [topos.randint(k, (3, 67), lo, hi) for lo, hi in ranges], backend)
            for got, (low, high) in zip(recorded, ranges):
                want = np.asarray(jax.random.randint(jax_key(key), (3, 67), low, high, dtype=np.int32))
                assert np.array_equal(got, want), (backend, key, low, high)


def test_randint_constants_are_jaxs_including_the_wrapped_multiplier():
    assert threefry.randint_words(0, 10) == (10, 6)  # 2^32 % 10
    assert threefry.randint_words(0, 2**16) == (2**16, 0)
    assert threefry.randint_words(100, 70_000) == (69_900, 0)  # (2^16)^2 wraps to 0 in uint32, as jax's
    assert threefry.randint_words(-(2**31), 2**31 - 1) == (2**32 - 1, 0)
    assert threefry.randint_words(5, 5) == (1, 0)


def test_randint_is_recorded_as_a_split_two_draws_and_the_reduction():
    def build(tape):
        return topos.randint(tape.input(topos.random_key(0)), (4,), 0, 6)

    network, value = Tape.record(build)
    plan = network.entry([value]).lower()
    opcodes = [node.opcode for node in network.nodes()]
    assert opcodes.count("SplitKey") == 1 and opcodes.count("RandomBits") == 2 and opcodes[-1] == "RandomInt"
    assert network.node(value).dtype == "int32"
    text = plan.emit_stablehlo()
    assert "stablehlo.remainder" in text and "tensor<4xi32>" in text
    assert "random:randint" in plan.kernels().describe() and "0 host steps" in plan.kernels().summary()


# gumbel and exponential: floats to log's rounding --------------------------------------------------


@pytest.mark.parametrize("key", KEYS)
def test_gumbel_and_exponential_equal_jaxs_to_the_rounding_of_log(key):
    shapes = [(5,), (3, 40), (2, 3, 7)]
    recorded = draws(key, lambda t, k: [topos.gumbel(k, s) for s in shapes] + [topos.exponential(k, s) for s in shapes])
    for got, shape in zip(recorded[:3], shapes):
        want = np.asarray(jax.random.gumbel(jax_key(key), shape, np.float32))
        bound = gumbel_bound(jax_uniform_tiny(key, shape))
        assert got.dtype == np.float32 and np.all(np.abs(got - want) <= bound), (key, shape)
    for got, shape in zip(recorded[3:], shapes):
        want = np.asarray(jax.random.exponential(jax_key(key), shape, np.float32))
        bound = log1p_error(want, "xla") + log1p_error(want, "numpy")
        assert np.all(np.abs(got - want) <= bound) and np.all(got >= 0), (key, shape)


def test_gumbel_and_exponential_on_xla_and_webgpu():
    shape = (4, 300)
    u = jax_uniform_tiny((5, 6), shape)
    for backend in ("xla", "webgpu"):
        wgsl = backend == "webgpu"
        gumbels, exponentials = draws(
            (5, 6), lambda t, k: [topos.gumbel(k, shape), topos.exponential(k, shape)], backend
        )
        want = np.asarray(jax.random.gumbel(jax_key((5, 6)), shape, np.float32))
        assert np.all(np.abs(gumbels - want) <= gumbel_bound(u, wgsl)), backend
        want = np.asarray(jax.random.exponential(jax_key((5, 6)), shape, np.float32))
        bound = log1p_error(want, "xla") + log1p_error(want, backend)
        assert np.all(np.abs(exponentials - want) <= bound), backend


def test_gumbel_and_exponential_have_their_moments_in_float64():
    n = 100_000

    def build(tape):
        key = tape.input(topos.random_key(3))
        return [topos.gumbel(key, (n,), "float64"), topos.exponential(key, (n,), "float64")]

    network, outputs = Tape.record(build)
    g, e = (np.asarray(v) for v in network.entry(outputs).lower().run(network.parameters()).outputs())
    # Five standard errors: Gumbel's mean is Euler's gamma, its variance pi^2 / 6; Exp(1)'s both 1.
    assert abs(g.mean() - np.euler_gamma) < 5 * np.sqrt(np.pi**2 / 6 / n)
    # A sample variance's variance is (mu4 - sigma^4) / n: Gumbel's mu4 is 5.4 sigma^4 (excess kurtosis 12/5).
    assert abs(g.var() - np.pi**2 / 6) < 5 * np.sqrt(4.4 * (np.pi**2 / 6) ** 2 / n)
    assert abs(e.mean() - 1) < 5 * np.sqrt(1 / n) and abs(e.var() - 1) < 5 * np.sqrt(8 / n)
    assert np.all(np.isfinite(g)) and np.all(e >= 0)


# normal: sqrt(2) erfinv(u), jax's algorithm -----------------------------------------------------------

# How far a float32 log1p (exponential's, and erfinv's w = -log1p(-u^2)) may be from exact, in ulps of
# its result: numpy's and XLA's 2; WGSL's special_log1p is precise_log's few (say 4, with Goldberg's
# product and quotient). In erfinv's tail piece WGSL's sqrt (2.5 ulps, as 1 / inverseSqrt) moves w
# by twice its own error, 5 ulps more.
LOG1P_ULPS = {"numpy": 2, "xla": 2, "webgpu": 4}
TAIL_SQRT_ULPS = {"numpy": 0, "xla": 0, "webgpu": 5}


def log1p_error(result, backend):
    """The most one float32 ``log1p`` of ``backend`` (= ``result``) may be off."""
    return LOG1P_ULPS[backend] * EPS32 * np.maximum(np.abs(np.asarray(result, np.float64)), TINY32)


def normal_bound(u, backend):
    """How far a float32 ``sqrt(2) erfinv(u)`` of ``backend`` may lie from jax's (XLA's).

    erfinv(u) = u p(w), with w = -log1p(-u^2) the one library-dependent step (Giles' polynomial is
    evaluated in the same order everywhere): an error dw moves erfinv by |d ln p / dw| dw relatively,
    computed here in float64 from p(w) = erfinv(s) / s, s = sqrt(1 - e^-w). Both libraries' w
    errors add; the polynomial's last operations, the product by u and by sqrt(2) may round on either
    side (4 eps more).
    """
    from scipy.special import erfinv

    s = np.abs(np.asarray(u, np.float64))
    w = -np.log1p(-(s**2))
    z = erfinv(s)
    slope = np.sqrt(np.pi) / 2 * np.exp(z**2)  # d erfinv / ds
    ds_dw = np.where(s > 0, np.exp(-w) / (2 * np.maximum(s, TINY32)), 0.0)
    dlnp_dw = np.abs((slope / np.maximum(z, TINY32) - 1 / np.maximum(s, TINY32)) * ds_dw)
    dw = (LOG1P_ULPS["xla"] + LOG1P_ULPS[backend] + TAIL_SQRT_ULPS[backend]) * EPS32 * w
    return np.sqrt(2) * z * (dlnp_dw * dw + 4 * EPS32)


def jax_normal_uniforms(key, shape):
    low = np.nextafter(np.float32(-1), np.float32(0))
    return np.asarray(jax.random.uniform(jax_key(key), shape, np.float32, minval=low, maxval=1.0))


@pytest.mark.parametrize("backend", ["numpy", "xla", "webgpu"])
def test_normal_equals_jax_random_normal_to_erfinvs_rounding(backend):
    shapes = [(), (7,), (3, 5), (4, 2500)]
    for key in KEYS if backend == "numpy" else KEYS[:3]:
        for got, shape in zip(draws(key, lambda t, k: [topos.normal(k, s) for s in shapes], backend), shapes):
            want = np.asarray(jax.random.normal(jax_key(key), shape, np.float32))
            bound = normal_bound(jax_normal_uniforms(key, shape), backend)
            assert got.dtype == np.float32 and got.shape == want.shape
            assert np.all(np.abs(got.astype(np.float64) - want) <= bound), (backend, key, shape)
            assert np.all(np.isfinite(got))  # u never reaches -1


def test_normal_is_recorded_as_a_uniform_on_its_open_interval_and_erfinv():
    def build(tape):
        return topos.normal(tape.input(topos.random_key(0)), (3,))

    network, value = Tape.record(build, dtype="float32")
    opcodes = [node.opcode for node in network.nodes()]
    assert opcodes[:3] == ["Input", "RandomBits", "Uniform"] and "ErfInv" in opcodes and opcodes[-1] == "Mul"
    # The smallest uniform is the float above -1: every draw is finite, the largest about 5.42 in size.
    low = np.nextafter(np.float32(-1), np.float32(0))
    assert np.float32(0.0) * np.float32(1.0 - low) + low == low


# truncated_normal: jax's inversion through erf and erfinv ---------------------------------------------

TRUNCATIONS = [(-2.0, 2.0), (0.0, 1.0), (-np.inf, 0.5), (1.0, 3.0), (-1.0, np.inf), (3.0, 6.0)]


def truncated_bound(key, shape, lower, upper, backend):
    """How far topos's float32 truncated normal may lie from jax's: erf(lower / sqrt 2) and
    erf(upper / sqrt 2) each within 2 ulps in either library (a, b off by 4 ulps), the affine map
    u = f (b - a) + a rounding on either side (2 eps (|a| + |b|)), carried through sqrt(2) erfinv
    by its slope sqrt(2 pi)/2 exp(erfinv(u)^2), plus erfinv's own rounding (normal_bound)."""
    from scipy.special import erf, erfinv

    a, b = (np.float32(erf(np.float32(v) / np.float32(np.sqrt(2)))) for v in (lower, upper))
    f = np.asarray(jax.random.uniform(jax_key(key), shape, np.float32), np.float64)
    u = f * (float(b) - float(a)) + float(a)
    du = 4 * EPS32 * (abs(a) + f * (abs(a) + abs(b))) + 2 * EPS32 * (abs(a) + abs(b))
    slope = np.sqrt(2 * np.pi) / 2 * np.exp(np.minimum(erfinv(np.clip(np.abs(u) + du, 0, 1)) ** 2, 700))
    return slope * du + normal_bound(u, backend)


@pytest.mark.parametrize("backend", ["numpy", "xla", "webgpu"])
def test_truncated_normal_equals_jax_random_truncated_normal_to_erfs_rounding(backend):
    for key in KEYS if backend == "numpy" else KEYS[:2]:
        drawn = draws(key, lambda t, k: [topos.truncated_normal(k, lo, hi, (500,)) for lo, hi in TRUNCATIONS], backend)
        for got, (lower, upper) in zip(drawn, TRUNCATIONS):
            want = np.asarray(jax.random.truncated_normal(jax_key(key), lower, upper, (500,), np.float32))
            bound = truncated_bound(key, (500,), lower, upper, backend)
            assert np.all(np.abs(got.astype(np.float64) - want) <= bound), (backend, key, lower, upper)
            assert np.all((got > lower) & (got < upper)), (lower, upper)  # the open interval, clipped


# categorical and choice: indices equal to jax's ------------------------------------------------------

LOGITS = np.random.default_rng(0).normal(size=(4, 6)).astype(np.float32)
LOGITS[1, 2] = -np.inf  # never drawn


def gumbel_scores(key, logits, axis, shape):
    """jax's noisy scores of categorical (its Gumbel draws plus the logits) and their bound."""
    rank = logits.ndim
    axis = axis % rank - rank
    batch = tuple(np.delete(logits.shape, axis))
    shape = batch if shape is None else shape
    prefix = shape[: len(shape) - len(batch)]
    drawn = list(shape[len(prefix) :])
    drawn.insert(axis % rank, logits.shape[axis])
    full = tuple(prefix) + tuple(drawn)
    noise = np.asarray(jax.random.gumbel(jax_key(key), full, np.float32))
    bound = gumbel_bound(jax_uniform_tiny(key, full)) + EPS32 * np.abs(noise + logits)
    return (noise + logits).astype(np.float64), bound, axis


CATEGORICAL_CASES = [(-1, None), (0, None), (-1, (10, 4)), (1, (3, 4)), (0, (5, 1, 6))]


@pytest.mark.parametrize("key", KEYS)
def test_categorical_equals_jax_random_categorical(key):
    recorded = draws(
        key,
        lambda t, k: [topos.categorical(k, t.input(LOGITS), axis=a, shape=s) for a, s in CATEGORICAL_CASES],
    )
    for got, (axis, shape) in zip(recorded, CATEGORICAL_CASES):
        want = np.asarray(jax.random.categorical(jax_key(key), LOGITS, axis=axis, shape=shape))
        assert got.dtype == np.int32 and got.shape == want.shape
        scores, bound, axis = gumbel_scores(key, LOGITS, axis, shape)
        assert_argmax_within(got, want, scores, bound, axis)
        # The -inf logit (category 2 of row 1 along axis -1, category 1 of column 2 along axis 0).
        assert np.all(got[..., 1] != 2) if axis == -1 else np.all(got[..., 2] != 1)


@pytest.mark.parametrize("backend", ["numpy", "xla", "webgpu"])
def test_categorical_without_replacement_equals_jaxs_gumbel_top_k(backend):
    # The top k of six noisy scores: equal to jax's wherever no two of them lie within their bounds
    # (gumbel_bound, a few ulps), which holds for these keys (a tie that close has odds near 1e-6).
    cases = [(-1, (3, 4)), (0, (2, 6)), (-1, (6, 4)), (1, (1, 4))]
    for key in KEYS if backend == "numpy" else KEYS[:2]:
        drawn = draws(
            key,
            lambda t, k: [topos.categorical(k, t.input(LOGITS), a, s, replace=False) for a, s in cases],
            backend,
            host=("Transpose", "Reshape"),  # the int32 indices laid out as shape
        )
        for got, (axis, shape) in zip(drawn, cases):
            want = jax.random.categorical(jax_key(key), LOGITS, axis=axis, shape=shape, replace=False)
            assert np.array_equal(got, np.asarray(want)), (backend, key, axis, shape)
            assert all(len(set(column)) == len(column) for column in got.reshape(got.shape[0], -1).T)


def test_categorical_on_xla_and_webgpu():
    for backend in ("xla", "webgpu"):
        for key in KEYS[:3]:
            (got,) = draws(key, lambda t, k: [topos.categorical(k, t.input(LOGITS), shape=(50, 4))], backend)
            want = np.asarray(jax.random.categorical(jax_key(key), LOGITS, shape=(50, 4)))
            scores, bound, axis = gumbel_scores(key, LOGITS, -1, (50, 4))
            if backend == "webgpu":
                u = jax_uniform_tiny(key, scores.shape)
                bound = gumbel_bound(u, wgsl=True) + EPS32 * np.abs(scores)
            assert_argmax_within(got, want, scores, bound, axis)


def test_categorical_follows_the_softmax_of_its_logits():
    n = 40_000

    def build(tape):
        return topos.categorical(tape.input(topos.random_key(8)), tape.input(LOGITS[0]), shape=(n,))

    network, value = Tape.record(build, dtype="float32")
    drawn = np.asarray(network.forward(network.parameters()).of(value))
    p = np.exp(LOGITS[0] - LOGITS[0].max()) / np.exp(LOGITS[0] - LOGITS[0].max()).sum()
    frequencies = np.bincount(drawn, minlength=6) / n
    assert np.all(np.abs(frequencies - p) < 5 * np.sqrt(p * (1 - p) / n))  # five standard errors


P = np.array([0.25, 0.125, 0.5, 0.125], np.float32)  # dyadic: cumsum is exact in every order
POPULATION = np.arange(12.0, dtype=np.float32).reshape(4, 3)


def choices(t, k):
    p, a = t.input(P), t.input(POPULATION)
    out = [topos.choice(k, 10, s) for s in [(), (6,), (2, 3)]]
    out += [topos.choice(k, 4, (7,), p=p), topos.choice(k, a, (2, 5), p=p), topos.choice(k, a, (3,), axis=1)]
    out += [topos.choice(k, 4, (3,), replace=False, p=p), topos.choice(k, a, (2,), replace=False, p=p, axis=0)]
    return out


def jax_choices(key):
    k, a = jax_key(key), jax.numpy.asarray(POPULATION)
    out = [jax.random.choice(k, 10, s) for s in [(), (6,), (2, 3)]]
    out += [
        jax.random.choice(k, 4, (7,), p=P),
        jax.random.choice(k, a, (2, 5), p=P),
        jax.random.choice(k, a, (3,), axis=1),
    ]
    out += [jax.random.choice(k, 4, (3,), replace=False, p=P), jax.random.choice(k, a, (2,), replace=False, p=P)]
    return [np.asarray(v) for v in out]


@pytest.mark.parametrize("backend", ["numpy", "xla", "webgpu"])
def test_choice_equals_jax_random_choice(backend):
    # With dyadic weights the running sums and their targets are exact, and the Gumbel top-k of
    # choice without replacement is resolved for these keys: equality, not a bound.
    for key in KEYS if backend == "numpy" else KEYS[:2]:
        for got, want in zip(draws(key, choices, backend), jax_choices(key)):
            assert got.shape == want.shape and np.array_equal(got, want.astype(got.dtype)), (backend, key)


def test_choice_with_any_weights_picks_where_the_running_sum_reaches_the_target():
    weights = np.random.default_rng(4).uniform(0.1, 1.0, 9).astype(np.float32)
    for key in KEYS:
        (got,) = draws(key, lambda t, k: [topos.choice(k, 9, (200,), p=t.input(weights))])
        want = np.asarray(jax.random.choice(jax_key(key), 9, (200,), p=weights))
        # jax's cumsum may sum in another order (within sum_bound of ours) and the target rounds once
        # more: where the indices differ they are neighbours, and the running sum between them lies
        # within that rounding of the target.
        running = np.cumsum(weights.astype(np.float64))
        slack = sum_bound(running[-1], weights.size, "float32").value + EPS32 * running[-1]
        differ = got != want
        u = np.asarray(jax.random.uniform(jax_key(key), (200,), np.float32))[differ]
        targets = running[-1] * (1 - u.astype(np.float64))
        assert np.all(np.abs(got - want)[differ] == 1)
        assert np.all(np.abs(running[np.minimum(got, want)[differ]] - targets) <= slack)


# permutation: jax's rounds of stable sorts by random keys ----------------------------------------------

# 1625 is the last length jax shuffles in one round, 1626 the first of two.
LENGTHS = [1, 2, 7, 100, 1000, 1625, 1626, 3000]


@pytest.mark.parametrize("key", KEYS)
def test_permutation_equals_jax_random_permutation(key):
    values = np.arange(60.0, dtype=np.float32).reshape(3, 20)

    def drawn(t, k):
        x = t.input(values)
        return [topos.permutation(k, n) for n in LENGTHS] + [topos.permutation(k, x), topos.permutation(k, x, axis=1)]

    recorded = draws(key, drawn)
    for got, n in zip(recorded, LENGTHS):
        want = np.asarray(jax.random.permutation(jax_key(key), n))
        assert got.dtype == np.int32 and np.array_equal(got, want), (key, n)
    for got, axis in zip(recorded[len(LENGTHS) :], (0, 1)):
        assert np.array_equal(got, np.asarray(jax.random.permutation(jax_key(key), values, axis=axis))), axis


@pytest.mark.parametrize("backend", ["xla", "webgpu"])
def test_permutation_and_choice_without_replacement_on_xla_and_webgpu(backend):
    # WebGPU sorts rows up to 1024 (kernels/sort.wgsl); choice's int32 slice of the order runs on the host.
    lengths = [7, 1000] if backend == "webgpu" else LENGTHS
    for key in KEYS[:3]:
        drawn = draws(
            key,
            lambda t, k: [topos.permutation(k, n) for n in lengths] + [topos.choice(k, 50, (4, 5), replace=False)],
            backend,
            host=("Slice", "Reshape"),
        )
        for got, n in zip(drawn, lengths):
            assert np.array_equal(got, np.asarray(jax.random.permutation(jax_key(key), n))), (backend, key, n)
        assert np.array_equal(drawn[-1], np.asarray(jax.random.choice(jax_key(key), 50, (4, 5), replace=False)))


def test_permutation_is_recorded_as_sorts_over_the_keys_halves():
    def build(tape):
        return topos.permutation(tape.input(topos.random_key(0)), 10)

    network, value = Tape.record(build)
    opcodes = [node.opcode for node in network.nodes()]
    assert opcodes.count("BitField") == 2 and opcodes.count("Argsort") == 4 and opcodes[-1] == "Argsort"
    assert network.node(value).dtype == "int32"
    assert "stablehlo.sort" in network.entry([value]).lower().emit_stablehlo()


# Read six ways in the playground ------------------------------------------------------------------------


def test_the_playground_reads_a_recording_of_the_new_draws_and_prints_jaxs_numbers():
    import json

    from topos import playground

    code = (
        "import numpy as np\n"
        "import topos\n"
        "from topos import Tape\n"
        "def build(tape):\n"
        "    key = tape.input(topos.random_key(3), name='key')\n"
        "    logits = tape.input(np.float32([[0.0, 1.0, -1.0], [2.0, 0.0, 0.5]]))\n"
        "    return [key, topos.randint(key, (6,), -3, 3), topos.categorical(key, logits, shape=(4, 2)),\n"
        "            topos.permutation(key, 8)]\n"
        "network, (key, ints, picks, order) = Tape.record(build, dtype='float32')\n"
        "run = network.forward(network.parameters())\n"
        "for value in (ints, picks, order):\n"
        "    print(run.of(value).numpy().tolist())\n"
    )
    result = json.loads(playground.run(code))
    assert result["error"] is None, result["error"]
    printed = result["output_text"].strip().splitlines()
    key, logits = jax_key((0, 3)), np.float32([[0.0, 1.0, -1.0], [2.0, 0.0, 0.5]])
    assert printed[0] == str(np.asarray(jax.random.randint(key, (6,), -3, 3)).tolist())
    # Equal, not within a bound: these eight draws' best Gumbel scores lead by far more than gumbel_bound.
    assert printed[1] == str(np.asarray(jax.random.categorical(key, logits, shape=(4, 2))).tolist())
    assert printed[2] == str(np.asarray(jax.random.permutation(key, 8)).tolist())
    readings = result["readings"]
    opcodes = {node["opcode"] for node in readings["graph"]["graph"]["nodes"]}
    assert {"RandomInt", "BitField", "Argsort", "ArgMax"} <= opcodes
    assert "stablehlo.remainder" in readings["hlo"]["text"] and "stablehlo.sort" in readings["hlo"]["text"]
    assert "random:randint" in readings["kernels"]["text"] and "random:bit_field" in readings["kernels"]["text"]


# Refusals --------------------------------------------------------------------------------------------


def test_bad_arguments_raise_topos_errors_and_record_nothing():
    tape = Tape()
    key, logits = tape.input(topos.random_key(0)), tape.input(LOGITS)
    indices, short = tape.input(np.arange(3), dtype="int32"), tape.input(P[:3])
    cases = [
        (lambda: topos.randint(key, (3,), 0.5, 4), ArgumentError),
        (lambda: topos.randint(key, (3,), 0, 2**31), ArgumentError),
        (lambda: topos.randint(topos.random_key(0), (3,), 0, 4), ArgumentTypeError),
        (lambda: topos.categorical(key, logits, shape=(3,)), ShapeError),
        (lambda: topos.categorical(key, logits, axis=2), AxisError),
        (lambda: topos.categorical(key, indices), DtypeError),
        (lambda: topos.categorical(key, logits, shape=(7, 4), replace=False), ArgumentError),
        (lambda: topos.choice(key, 3, (4,), replace=False, p=short), ArgumentError),
        (lambda: topos.choice(key, 4, (2,), p=short), ShapeError),
        (lambda: topos.choice(key, 0, (2,)), ArgumentError),
        (lambda: topos.gumbel(key, (-1,)), ShapeError),
        (lambda: topos.exponential(key, (2,), dtype="int32"), DtypeError),
        (lambda: topos.permutation(key, 2**24), ArgumentError),
        (lambda: topos.truncated_normal(key, 1.0, -1.0, (2,)), ArgumentError),
        (lambda: topos.permutation(key, logits, axis=3), AxisError),
    ]
    before = len(tape.nodes())
    for call, error in cases:
        with pytest.raises(error):
            call()
        assert len(tape.nodes()) == before, call
