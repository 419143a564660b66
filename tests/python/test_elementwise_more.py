"""topos.ops.elementwise_more over the whole float range, in ulps, on WebGPU and XLA.

op_specs' rows run these ops in the six per-op suites, over a uniform spread and at chosen
places, to the house's 1e-5. Here each WGSL helper and each lowering composed of StableHLO ops
is swept log-uniformly from 1e-30 to where its result overflows, both signs, against numpy in
float64, and held to ``ULPS``: each formula is at most eight roundings (half an ulp each) plus
either WGSL's exp on a reduced argument |r| <= ln 2 / 2 (3 + 2|r| < 4 ulps by the WGSL spec), a
polynomial within 1e-7 (under 2 ulps), or XLA's own exp, expm1, log or log1p (within a few),
so under 16 together. A formula that cancels (Goldberg's log1p once a compiler folds (1 + x) - 1
into x: 60 ulps at x = 1/64) or rounds its argument (CHLO's exp(|x| + log(1/2)): 500 ulps in
float64) fails it. Non-finite results (overflow, NaN outside a domain) must be numpy's.
arcsin and arccos, composites, are held next to +-1 on every backend; the roundings at their
halves and past 2^23, and their zero derivative.
"""

import numpy as np
import pytest

import topos
from topos import Tape
from topos.compiler.wgsl import launch as build
from topos.ops import lookup
from topos.webgpu import View, run_launches

ULPS = 16.0


def log_uniform(rng, low, high, n):
    return np.exp(rng.uniform(np.log(low), np.log(high), n))


def sweep(opcode, dtype, n=20000):
    """Both signs from 1e-30 up to where the result overflows (log1p: down to -1 from below)."""
    rng = np.random.default_rng(len(opcode))
    largest = float(np.finfo(dtype).max)
    overflow = np.log(largest) + np.log(2.0)  # sinh and cosh pass the largest float here
    high = {"Expm1": np.log(largest), "Sinh": overflow, "Cosh": overflow}.get(opcode, largest)
    low_side = {"Log1p": 1.0}.get(opcode, high)
    x = np.concatenate([log_uniform(rng, 1e-30, high, n), -log_uniform(rng, 1e-30, low_side, n)])
    if opcode == "Tan":
        x = np.concatenate([x, rng.uniform(1.5, 1.65, n)])  # next to the pole at pi/2
    return x.astype(dtype)


NUMPY = {
    "Log1p": np.log1p,
    "Expm1": np.expm1,
    "Sinh": np.sinh,
    "Cosh": np.cosh,
    "Tan": np.tan,
    "Asinh": np.arcsinh,
    "Atan": np.arctan,
    "Trunc": np.trunc,
}


def assert_within_ulps(got, x, opcode, dtype, what):
    exact = NUMPY[opcode](x.astype(np.longdouble if dtype == "float64" else np.float64))
    with np.errstate(over="ignore"):
        rounded = exact.astype(dtype)
    got = np.asarray(got)
    finite = np.isfinite(rounded)
    spacing = np.spacing(np.abs(rounded[finite])).astype(np.float64)
    error = np.abs(got[finite].astype(np.longdouble) - exact[finite]).astype(np.float64) / spacing
    worst = int(np.argmax(error))
    assert error[worst] <= ULPS, f"{what}: {error[worst]:.1f} ulps at x = {x[finite][worst]!r}"
    assert np.array_equal(got[~finite], rounded[~finite], equal_nan=True), f"{what}: overflow or NaN differs"


def webgpu_elementwise(opcode, x):
    n = x.size
    launch = build.elementwise(lookup(opcode).wgsl, 9, (n,), [View.of_buffer(0, (n,))])
    return run_launches([launch], {0: x}, {9: n}, {"out": View.of_buffer(9, (n,))})["out"]


@pytest.mark.parametrize("opcode", ["Log1p", "Expm1", "Sinh", "Cosh", "Tan", "Asinh", "Atan"])
def test_each_wgsl_helper_is_within_a_few_ulps_over_the_float32_range(opcode):
    x = sweep(opcode, "float32")
    x = x[np.abs(x) >= np.finfo(np.float32).tiny]  # WGSL may read a subnormal as zero
    with np.errstate(all="ignore"):
        assert_within_ulps(webgpu_elementwise(opcode, x), x, opcode, "float32", f"{opcode} on WebGPU")


def run_on(function, arrays, dtype, backend):
    def record(tape):
        return function(*[tape.input(a) for a in arrays])

    network, out = Tape.record(record, dtype=dtype)
    with np.errstate(all="ignore"):
        return np.asarray(network.entry([out]).lower().run(network.parameters(), backend=backend).of(out))


# The lowerings composed here (XLA's own tan, atan2, log_plus_one and exponential_minus_one are
# XLA's, held by test_stablehlo to 1e-12 and 1e-5).
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("opcode", ["Sinh", "Cosh", "Asinh", "Trunc"])
def test_each_composed_lowering_is_within_a_few_ulps_on_xla(opcode, dtype):
    x = sweep(opcode, dtype)
    x = x[np.abs(x) >= np.finfo(dtype).tiny]  # XLA's CPU flushes subnormals
    function = {"Asinh": topos.arcsinh}.get(opcode) or getattr(topos, opcode.lower())
    assert_within_ulps(run_on(function, [x], dtype, "xla"), x, opcode, dtype, f"{opcode} {dtype} on XLA")


NEAR_ONE = np.array([1 - 2.0**-24, 1 - 2.0**-20, 1 - 2.0**-12, 0.999, 0.5, 1e-30, 0.0])


@pytest.mark.parametrize("backend", ["numpy", "xla", "webgpu"])
@pytest.mark.parametrize("name", ["arcsin", "arccos"])
def test_arcsin_and_arccos_keep_their_digits_next_to_one(name, backend):
    # 1 - x^2 would round near +-1: the angle's error would be sqrt(eps) there, not a few ulps.
    x = np.concatenate([NEAR_ONE, -NEAR_ONE, [1.0, -1.0, 1.0 + 2.0**-23, -2.0, np.inf, np.nan]]).astype(np.float32)
    got = run_on(getattr(topos, name), [x], "float32", backend)
    with np.errstate(invalid="ignore"):
        exact = getattr(np, name)(x.astype(np.float64))
    nan = np.isnan(exact)
    assert np.isnan(got[nan]).all(), f"{name} outside [-1, 1] on {backend}: {got[nan]}"
    # An atan2 of a few ulps, two square roots and a product: within 8 ulps of float32.
    assert np.abs(got[~nan] - exact[~nan]).max() <= 8 * np.spacing(np.float32(np.pi)), (got, exact)


HALVES = np.array([-2.5, -1.5, -0.5, -0.0, 0.5, 1.5, 2.5, 2.0**23 + 1, -(2.0**23) - 1, 1e30, np.inf, -np.inf, np.nan])


@pytest.mark.parametrize("backend", ["numpy", "xla", "webgpu"])
@pytest.mark.parametrize("name", ["floor", "ceil", "round", "trunc"])
def test_roundings_are_exact_at_halves_and_past_two_to_the_23(name, backend):
    x = HALVES.astype(np.float32)
    got = run_on(getattr(topos, name), [x], "float32", backend)
    want = getattr(np, name)(x)
    assert np.array_equal(got, want, equal_nan=True), f"{name} on {backend}: {got} for {want}"


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "trunc"])
def test_roundings_pass_no_gradient(name):
    # Piecewise constant: the derivative is zero everywhere (JAX's and PyTorch's rule), also off
    # the steps, where central differences would agree.
    def record(tape):
        x = tape.parameter(np.array([0.3, -1.7, 2.5]))
        return x, topos.sum(getattr(topos, name)(x) * 3.0 + x)

    network, (x, loss) = Tape.record(record)
    field = network.forward(network.parameters(), {}).backward(loss)
    assert np.array_equal(field.of(x).numpy(), np.ones(3))


@pytest.mark.parametrize("decimals", [-2, -1, 1, 3])
def test_round_takes_decimals_as_numpy_does(decimals):
    x = np.random.default_rng(decimals + 5).uniform(-500, 500, 40)
    got = run_on(lambda v: topos.round(v, decimals), [x], "float64", "numpy")
    assert np.array_equal(got, np.round(x, decimals))
