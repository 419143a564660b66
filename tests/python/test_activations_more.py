"""The composite activations and logical operators where the op_specs suites do not look.

Their rows in tests/python/op_specs.py (COMPOSITES) run them in the six per-op suites against
torch, XLA, WebGPU, central differences and the special values. Held here: what those suites'
bounds are too loose to see or their draws cannot place. elu's and logaddexp's tails to a few
ulps of the result (the suites judge against a row's largest magnitude), the logical operators
on NaN (the kernels' error scale cannot hold a NaN operand), their zero gradient, clip at its
bounds, fmod and mod exact past the precision with numpy's signs, their gradients, and
``where`` with one argument refused at the user's line.
"""

import traceback

import numpy as np
import pytest

import topos
from topos import ArgumentError, Tape, detach

BACKENDS = ("numpy", "xla", "webgpu")


def run_each(build, arrays, dtype, backends=BACKENDS):
    """{backend: the value of ``build(*inputs)``} with ``arrays`` fed as inputs (WebGPU: float32 only)."""
    tape = Tape(dtype)
    inputs = [tape.input(a) for a in arrays]
    out = detach(build(*inputs))
    network = tape.seal()
    plan = network.entry([out]).lower()
    feeds = dict(zip(detach(inputs), arrays))
    results = {}
    for backend in backends:
        if backend == "webgpu" and dtype != "float32":
            continue
        run = plan.run(network.parameters(), feeds, backend=backend)
        computed = [index for index in plan.schedule if not plan.nodes[index].is_source]
        assert {run.backends[index] for index in computed} == {backend}, (backend, run.backends)
        results[backend] = np.asarray(run.of(out))
    return results


def ulps(got, want, dtype):
    """|got - want| in units of the dtype's machine epsilon relative to |want| (want in float64)."""
    return np.abs(np.asarray(got, np.float64) - want) / (np.abs(want) * np.finfo(dtype).eps)


# elu's exp(x) - 1 is recorded as Expm1 (JAX's form): numpy's expm1, XLA's
# exponential_minus_one and kernels/elementwise.wgsl's precise_expm1 are each within a few ulps;
# alpha's product (and selu's scale) round once each: 8 ulps hold it. exp(x) - 1 itself would be
# off by 6e-8 / |x| in float32: 6% at -1e-6.
NEAR_ZERO = np.array([-1e-30, -1e-12, -3e-9, -1e-6, -2e-4, -0.01, -0.3, -5.0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["elu", "selu"])
def test_elu_keeps_the_digits_of_small_inputs(name, dtype):
    x = NEAR_ZERO.astype(dtype)
    alpha, scale = (
        (1.0, 1.0) if name == "elu" else (1.6732632423543772848170429916717, 1.0507009873554804934193349852946)
    )
    want = scale * alpha * np.expm1(x.astype(np.float64))
    for backend, got in run_each(getattr(topos, name), [x], dtype).items():
        assert np.max(ulps(got, want, dtype)) <= 8, (backend, got, want)


# logaddexp is max + softplus(min - max); softplus is log1p(exp(.)) in numpy and XLA (a few ulps)
# and, in WGSL, a series below e^-|x| = 1/64 whose relative error is under 4e-6 (the Softplus row's
# comment in py/topos/ops/elementwise.py), so the result is within 4e-6 plus a few ulps there.
TAILS = (np.array([0.0, -1000.0, 3.0, 20.0, -745.0]), np.array([-40.0, -1040.0, 3.0, -700.0, -745.0]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logaddexp_keeps_its_tail(dtype):
    a, b = (t.astype(dtype) for t in TAILS)
    want = np.logaddexp(a.astype(np.float64), b.astype(np.float64))
    for backend, got in run_each(topos.logaddexp, [a, b], dtype).items():
        allowed = 8 * np.finfo(dtype).eps + (4e-6 if backend == "webgpu" else 0.0)
        assert np.all(np.abs(got - want) <= allowed * np.abs(want)), (backend, got, want)


# numpy's truthiness: NaN and the infinities are true, zeros of either sign false.
TRUTH_VALUES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor", "logical_not"])
def test_logical_operators_read_floats_as_numpy_does(name, dtype):
    a = np.repeat(TRUTH_VALUES, len(TRUTH_VALUES)).astype(dtype)
    b = np.tile(TRUTH_VALUES, len(TRUTH_VALUES)).astype(dtype)
    arrays = [a] if name == "logical_not" else [a, b]
    with np.errstate(invalid="ignore"):
        want = getattr(np, name)(*arrays).astype(dtype)
    for backend, got in run_each(getattr(topos, name), arrays, dtype).items():
        assert got.dtype == np.dtype(dtype), backend
        np.testing.assert_array_equal(got, want, err_msg=backend)


def test_logical_operators_pass_no_gradient():
    tape = Tape()
    x = tape.parameter(np.array([0.0, 1.5, -2.0]))
    y = tape.parameter(np.array([3.0, 0.0, -1.0]))
    loss = topos.sum((topos.logical_and(x, y) + topos.logical_or(x, y) + topos.logical_xor(x, y)) * x)
    loss = loss + topos.sum(topos.logical_not(y) * 5.0)
    network = tape.seal()
    field = network.forward(network.parameters()).backward(detach(loss))
    # Only the trailing `* x` carries a gradient: d/dx = and + or + xor, nothing through the operators.
    np.testing.assert_array_equal(field.of(detach(x)).numpy(), [0.0 + 1.0 + 1.0, 1.0 + 1.0 + 0.0, 1.0 + 1.0 + 0.0])
    np.testing.assert_array_equal(field.of(detach(y)).numpy(), [0.0, 0.0, 0.0])


def test_clip_gradient_at_a_bound_is_half_as_jax():
    tape = Tape()
    x = tape.parameter(np.array([-2.0, -1.0, 0.0, 1.0, 2.0]))
    loss = topos.sum(topos.clip(x, -1.0, 1.0))
    network = tape.seal()
    field = network.forward(network.parameters()).backward(detach(loss))
    # jax.grad of jnp.clip: maximum and minimum split a tie evenly.
    np.testing.assert_array_equal(field.of(detach(x)).numpy(), [0.0, 0.5, 1.0, 0.5, 0.0])


def test_clip_without_bounds_is_the_value_itself():
    x = Tape().input(np.ones(3))
    assert topos.clip(x) is x
    assert x.clip() is x


@pytest.mark.parametrize("arguments", [1, 2], ids=["condition_alone", "one_branch"])
def test_where_without_both_branches_is_refused_at_the_users_line(arguments):
    tape = Tape()
    condition = tape.input(np.array([0.0, 1.0, 2.0]))
    before = len(tape.nodes())
    with pytest.raises(ArgumentError) as caught:
        topos.where(*[condition, condition][:arguments])
    line = next(frame.lineno for frame in traceback.extract_tb(caught.tb) if frame.filename == __file__)
    assert caught.value.source == (__file__, line)
    assert len(tape.nodes()) == before
    if arguments == 1:
        # Why (the shape depends on the values) and what to use instead.
        assert "cannot know before it runs" in str(caught.value)
        assert "topos.where(condition, x, 0.0)" in str(caught.value)


# Quotients far past 2^24 and 2^53, where a - b * trunc(a / b) is off by whole multiples of b:
# fmod (numpy's, XLA's stablehlo.remainder, the WGSL exact_fmod) has no rounding to make.
HUGE_QUOTIENTS = (
    np.array([3e38, -1e30, 1e10, -7.25e15, 123456789.0, 5.0, -5.0]),
    np.array([1e-30, 7.0, -3.0, 0.1, 1e-3, -3.0, 3.0]),
)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["fmod", "mod"])
def test_remainders_are_exact_past_the_precision(name, dtype):
    a, b = (t.astype(dtype) for t in HUGE_QUOTIENTS)
    want = getattr(np, name)(a, b)
    for backend, got in run_each(getattr(topos, name), [a, b], dtype).items():
        np.testing.assert_array_equal(got, want, err_msg=backend)
        # numpy's sign: fmod keeps a's, mod takes b's.
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=backend)


def test_remainder_gradients_are_jaxs():
    a = np.array([5.0, -5.0, 7.5, -7.5])
    b = np.array([3.0, 3.0, -2.0, -2.0])
    tape = Tape()
    x, y = tape.parameter(a), tape.parameter(b)
    loss = topos.sum(topos.fmod(x, y)) + topos.sum(topos.mod(x, y) * 10.0)
    network = tape.seal()
    field = network.forward(network.parameters()).backward(detach(loss))
    # d/da is 1 for both; d/db is -trunc(a / b) for fmod, -floor(a / b) for mod (jax.grad's).
    np.testing.assert_array_equal(field.of(detach(x)).numpy(), [11.0] * 4)
    np.testing.assert_array_equal(field.of(detach(y)).numpy(), -np.trunc(a / b) - 10.0 * np.floor(a / b))
