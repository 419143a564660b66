"""The special functions (topos.ops.special) against mpmath over their whole float range, on numpy,
XLA and WebGPU, and their derivatives to the third order.

The per-op suites hold each op to torch and scipy over its op_specs spread; here each is held to
the exact value (mpmath at 30 digits, test-time only) from the smallest normal magnitudes to the
largest, by the bound a rounded evaluation of a well-conditioned formula meets:

    |got - f(x)| <= K u (floor + |f(x)| + |x f'(x)|)

with u the unit roundoff. ``|x f'(x)|`` carries the argument's own rounding (x enters the forms
through x^2, 1 - x^2 or x - k, each within u of x's relative size) through f's slope; ``|f(x)|``
the rounding of the formula's steps, each within u (numpy's and XLA's exp, log, sin and cos
within an ulp), along a path of at most K/2 operations; and ``floor`` = 1 for lgamma, digamma and
polygamma, whose Lanczos and reflection terms (of order 1 to 10) cancel to the value near its
zeros, absolutely (0 for the erf family, relative everywhere). K = 64 (the Lanczos and series
forms' longest path, about 30 operations, twice) and 32 for the erf forms (about 15). Results
below the smallest normal are left out: XLA's CPU and WebGPU flush them to zero.
"""

import math

import mpmath
import numpy as np
import pytest
from tolerances import unit_roundoff

import topos
from topos import Tape
from topos.ops import lookup

mpmath.mp.dps = 30
rng = np.random.default_rng(32)


def log_uniform(low, high, n, sign=1.0):
    return sign * np.exp(rng.uniform(math.log(low), math.log(high), n))


def draws(dtype, *parts):
    return np.concatenate(parts).astype(dtype)


# name: (record, exact value and slope at an mpf, draw per dtype, K, floor)
FUNCTIONS = {
    "erf": (
        topos.erf,
        lambda x: (mpmath.erf(x), 2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-x * x)),
        lambda d, big: draws(d, rng.uniform(-6, 6, 300), log_uniform(1e-30, 6, 150), log_uniform(1e-30, 6, 150, -1)),
        32,
        0.0,
    ),
    "erfc": (
        topos.erfc,
        lambda x: (mpmath.erfc(x), -2 / mpmath.sqrt(mpmath.pi) * mpmath.exp(-x * x)),
        lambda d, big: draws(d, rng.uniform(-6, 9, 300), log_uniform(1e-30, 9 if big < 1e300 else 26, 300)),
        32,
        0.0,
    ),
    "erfinv": (
        topos.erfinv,
        lambda x: (mpmath.erfinv(x), mpmath.sqrt(mpmath.pi) / 2 * mpmath.exp(mpmath.erfinv(x) ** 2)),
        lambda d, big: draws(d, rng.uniform(-1, 1, 300), 1 - log_uniform(1e-15 if big > 1e300 else 1e-7, 1, 300)),
        32,
        0.0,
    ),
    "lgamma": (
        topos.lgamma,
        lambda x: (mpmath.loggamma(x).real, mpmath.digamma(x)),
        lambda d, big: draws(
            d, rng.uniform(-20, 20, 300), log_uniform(1e-30, big, 200), log_uniform(1e-30, 1e6, 100, -1)
        ),
        64,
        1.0,
    ),
    "digamma": (
        topos.digamma,
        lambda x: (mpmath.digamma(x), mpmath.polygamma(1, x)),
        lambda d, big: draws(
            d, rng.uniform(-20, 20, 300), log_uniform(1e-30, big, 200), log_uniform(1e-30, 1e5, 100, -1)
        ),
        64,
        1.0,
    ),
}
for _n in (1, 2, 3):
    FUNCTIONS[f"polygamma{_n}"] = (
        lambda v, n=_n: topos.polygamma(n, v),
        lambda x, n=_n: (mpmath.polygamma(n, x), mpmath.polygamma(n + 1, x)),
        lambda d, big: draws(
            d, rng.uniform(-10, 20, 300), log_uniform(1e-6, 1e4, 150), log_uniform(1e-3, 1e3, 150, -1)
        ),
        64,
        1.0,
    )
CASES = [(name, dtype) for name in FUNCTIONS for dtype in ("float64", "float32")]


def exact(name, x):
    """f(x) and x f'(x) in float64 (mpmath at 30 digits); NaN at the poles."""
    values, slopes = [], []
    for v in x.astype(np.float64):
        try:
            f, slope = FUNCTIONS[name][1](mpmath.mpf(float(v)))
            values.append(float(f))
            slopes.append(float(v * slope))
        except (ValueError, ZeroDivisionError):
            values.append(math.nan)
            slopes.append(math.nan)
    return np.array(values), np.array(slopes)


def assert_within_bound(name, dtype, x, got, what):
    want, x_slope = exact(name, x)
    _, _, _, k, floor = FUNCTIONS[name]
    info = np.finfo(dtype)
    # Left out: poles, results past the dtype's range, and results below its smallest normal.
    kept = np.isfinite(want) & np.isfinite(x_slope) & (np.abs(want) < info.max) & (np.abs(want) > info.tiny)
    with np.errstate(all="ignore"):  # the bound overflows where lgamma's slope term does: those are left out
        bound = k * unit_roundoff(dtype) * (floor + np.abs(want) + np.abs(x_slope))
        error = np.abs(np.asarray(got, dtype=np.float64) - want)
    bad = kept & ~(error <= bound)
    assert not bad.any(), (
        f"{name} {dtype} on {what}: {int(bad.sum())} of {int(kept.sum())} beyond K u (floor + |f| + |x f'|), "
        f"e.g. at x = {x[bad][:3]}: got {np.asarray(got)[bad][:3]}, want {want[bad][:3]}"
    )


def run(name, x, backend):
    tape = Tape(x.dtype.name)
    value = tape.input(x)
    out = topos.detach(FUNCTIONS[name][0](value))
    network = tape.seal()
    return network.entry([out]).lower().run(network.parameters(), {}, backend=backend).of(out)


@pytest.mark.parametrize(("name", "dtype"), CASES, ids=[f"{n}-{d}" for n, d in CASES])
def test_the_forms_are_within_their_conditioning_over_the_whole_range(name, dtype):
    x = FUNCTIONS[name][2](np.dtype(dtype), float(np.finfo(dtype).max) / 10)
    assert_within_bound(name, dtype, x, run(name, x, "numpy"), "numpy")


@pytest.mark.parametrize(("name", "dtype"), CASES, ids=[f"{n}-{d}" for n, d in CASES])
def test_xla_runs_the_same_forms_within_the_same_bound(name, dtype):
    x = FUNCTIONS[name][2](np.dtype(dtype), float(np.finfo(dtype).max) / 10)
    assert_within_bound(name, dtype, x, run(name, x, "xla"), "XLA")


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_webgpu_runs_the_forms_in_float32_within_the_same_bound(name):
    x = FUNCTIONS[name][2](np.dtype("float32"), 3e37)
    assert_within_bound(name, "float32", x, run(name, x, "webgpu"), "WebGPU")


def test_erfinv_in_float32_is_xlas_erf_inv_to_a_few_ulps():
    """What topos.normal (part C) needs to equal jax.random.normal: on a dense grid of (-1, 1) the
    float32 forward is jax's ``lax.erf_inv`` but for log1p's last bit, which numpy and XLA each
    round within an ulp and the polynomial carries with a slope under 1: 4 ulps."""
    jax = pytest.importorskip("jax")
    x = np.concatenate([np.linspace(-1, 1, 200001), 1 - np.logspace(-7, 0, 2001)]).astype(np.float32)
    ours = lookup("ErfInv").forward([x], {})
    theirs = np.asarray(jax.lax.erf_inv(x))
    finite = np.isfinite(theirs)
    assert np.array_equal(np.isinf(ours), np.isinf(theirs)) and np.array_equal(ours[~finite], theirs[~finite])
    ulps = np.abs(ours[finite].view(np.int32).astype(np.int64) - theirs[finite].view(np.int32).astype(np.int64))
    assert ulps.max() <= 4, f"{ulps.max()} ulps at {x[finite][np.argmax(ulps)]}"


def test_lgamma_differentiates_to_digamma_and_the_polygammas():
    """lgamma' = digamma, lgamma'' = polygamma(1), lgamma''' = polygamma(2), recorded by topos.grad
    and run: each within the forward bound above of mpmath's."""
    x = np.array([-3.7, -1.5, -0.25, 0.1, 0.5, 1.0, 1.4616, 2.0, 3.3, 40.0])
    tape = Tape("float64")
    value = tape.input(x)
    first = topos.grad(topos.sum(topos.lgamma(value)), value)
    second = topos.grad(topos.sum(first), value)
    third = topos.grad(topos.sum(second), value)
    outs = [topos.detach(v) for v in (first, second, third)]
    network = tape.seal()
    results = network.entry(outs).lower().run(network.parameters(), {}).outputs()
    for name, got in zip(("digamma", "polygamma1", "polygamma2"), results):
        assert_within_bound(name, "float64", x, got, "lgamma's derivatives")


def test_polygamma_takes_a_whole_order_and_order_zero_is_digamma():
    tape = Tape("float64")
    value = tape.input(np.array([0.5, 2.0]))
    assert topos.polygamma(0, value).node.opcode == "Digamma"
    with pytest.raises(topos.ArgumentError, match="whole number"):
        topos.polygamma(1.5, value)
    with pytest.raises(topos.ArgumentError, match="whole number"):
        topos.polygamma(-1, value)


# The forms are plain StableHLO (no CHLO), so IREE compiles them too: forward and backward in
# float32 at ordinary values, against the interpreter by test_stablehlo's rule.
IREE_VALUES = {
    "erf": np.linspace(-3, 3, 12),
    "erfc": np.linspace(-2, 8, 12),
    "erfinv": np.linspace(-0.99, 0.99, 12),
    "lgamma": np.array([-3.7, -1.5, -0.25, 0.1, 0.5, 1.0, 1.5, 2.0, 3.3, 9.0, 40.0, 1e4]),
    "digamma": np.array([-3.7, -1.5, -0.25, 0.1, 0.5, 1.0, 1.5, 2.0, 3.3, 9.0, 40.0, 1e4]),
    "polygamma2": np.array([-3.7, -1.5, -0.25, 0.1, 0.5, 1.0, 1.5, 2.0, 3.3, 9.0, 40.0, 1e4]),
}


@pytest.mark.parametrize("name", list(IREE_VALUES))
def test_iree_runs_the_forms_and_their_derivatives(name):
    iree = pytest.importorskip("test_iree")
    from test_stablehlo import assert_outputs_agree

    tape = Tape("float32")
    x = tape.parameter(IREE_VALUES[name].astype(np.float32))
    y = FUNCTIONS[name][0](x)
    loss = topos.sum(y)
    network = tape.seal()
    plan = network.entry([topos.detach(y), topos.detach(loss)]).backward(topos.detach(loss)).lower()
    parameters = network.parameters()
    got = iree.run_on_iree(
        iree.compile_for_cpu(plan.emit_stablehlo(portable=True)), plan.argument_values(parameters, {})
    )
    assert_outputs_agree(plan.run(parameters, {}).outputs(), got, "float32", f"{name} on IREE")
