"""prod, any, all, cumprod, cummax, cummin and logcumsumexp (topos.model.reductions) where the
op_specs rows cannot place them: against JAX's values and derivatives at zeros and ties (first and
second order), numpy's truthiness at NaN, -0.0 and empty axes on every backend, logcumsumexp far
past exp's range and at -inf, and the scan kernel's cumulative entries on rows many workgroups long,
both strategies, holding NaN and infinities.

JAX differentiates prod through its pairwise tree and the running folds through its associative
scan; topos forms prod's derivative from running products and the folds' from the same scan
(topos.ops.associative_scan), so at a tie CumMax splits the cotangent exactly as jax.grad does.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tolerances import Bound, assert_close, elementwise_bound, gamma, library_bound, scaled_bound

import topos
from topos import Tape

jax.config.update("jax_enable_x64", True)

# Rows with one zero, two zeros, a tie of the running maximum (3.0 twice) and a -0.0.
AT_ZEROS = np.array([[2.0, 0.0, 3.0, -0.5, 1.5], [0.0, 1.2, 0.0, 0.7, -2.0], [1.0, 3.0, -1.0, 3.0, -0.0]])
COTANGENT = np.array([[0.3, -1.1, 0.8, 0.5, -0.2], [1.3, 0.4, -0.7, 0.9, 0.6], [-0.5, 0.2, 1.1, -0.9, 0.7]])

FUNCTIONS = {
    "prod": (lambda x: topos.prod(x, axis=1), lambda z: jnp.prod(z, axis=1)),
    "prod_columns_kept": (lambda x: topos.prod(x, axis=0, keepdims=True), lambda z: jnp.prod(z, 0, keepdims=True)),
    "prod_all": (lambda x: topos.prod(x), jnp.prod),
    "cumprod": (lambda x: topos.cumprod(x), lambda z: jax.lax.cumprod(z, 1)),
    "cumprod_reverse_axis0": (
        lambda x: topos.cumprod(x, 0, reverse=True),
        lambda z: jax.lax.cumprod(z, 0, reverse=True),
    ),
    "cummax": (lambda x: topos.cummax(x), lambda z: jax.lax.cummax(z, 1)),
    "cummin_reverse": (lambda x: topos.cummin(x, reverse=True), lambda z: jax.lax.cummin(z, 1, reverse=True)),
    "logcumsumexp": (lambda x: topos.logcumsumexp(x), lambda z: jax.lax.cumlogsumexp(z, 1)),
}


def weighted(f, x):
    """sum(f(x) * c), with c the cotangent cut to the result's shape: a loss whose gradient is f's VJP."""
    y = f(x)
    weights = COTANGENT.reshape(-1)[: y.size].reshape(y.shape)
    return y, weights


@pytest.mark.parametrize("name", FUNCTIONS)
def test_values_and_first_and_second_derivatives_are_jaxs_at_zeros_and_ties(name):
    mine, theirs = FUNCTIONS[name]
    tape = Tape()
    x = tape.parameter(AT_ZEROS)
    y, weights = weighted(mine, x)
    loss = topos.sum(y * weights)
    gradient = topos.grad(loss, x)
    # The Hessian times a direction: the gradient of <gradient, v>.
    direction = COTANGENT[::-1].copy()
    curvature = topos.grad(topos.sum(gradient * direction), x)
    network = tape.seal()
    run = network.forward(network.parameters(), {})
    got = [run.of(v).numpy() for v in (y, gradient, curvature)]

    def jax_loss(z):
        out = theirs(z)
        return jnp.sum(out * jnp.asarray(weights))

    jax_gradient = jax.grad(jax_loss)
    expected = [
        np.asarray(theirs(AT_ZEROS)),
        np.asarray(jax_gradient(AT_ZEROS)),
        np.asarray(jax.jvp(jax_gradient, (AT_ZEROS,), (direction,))[1]),
    ]
    # Products of up to 15 factors, sums of up to 15 products, and exp/log through the scan's tree:
    # each result within a few roundings per factor, two libraries' ulps for logcumsumexp.
    for what, value, want in zip(("value", "gradient", "second derivative"), got, expected):
        assert_close(value, want, library_bound(want, "float64", AT_ZEROS.size), f"{name} {what}")


def test_prod_gradient_at_zeros_is_the_product_of_the_others():
    tape = Tape()
    x = tape.parameter(AT_ZEROS[:2])
    gradient = topos.grad(topos.sum(topos.prod(x, axis=1)), x)
    network = tape.seal()
    got = network.forward(network.parameters(), {}).of(gradient).numpy()
    # Row 0 has one zero: its gradient is 2 * 3 * -0.5 * 1.5 and every other 0. Row 1 has two: all 0.
    assert np.array_equal(got, [[0.0, -4.5, 0.0, 0.0, 0.0], [0.0] * 5])


def test_prod_over_an_empty_axis_is_one_and_its_gradient_is_empty():
    tape = Tape()
    x = tape.parameter(np.zeros((3, 0)))
    p = topos.prod(x, axis=1)
    gradient = topos.grad(topos.sum(p), x)
    network = tape.seal()
    run = network.forward(network.parameters(), {})
    assert np.array_equal(run.of(p).numpy(), np.ones(3)) and run.of(gradient).numpy().shape == (3, 0)


TRUTHS = np.array([[np.nan, 0.0, 0.0], [0.0, -0.0, 0.0], [1e-30, 2.0, -1.0], [0.0, np.inf, 0.0]], np.float32)


@pytest.mark.parametrize("backend", ["numpy", "xla", "webgpu"])
def test_any_and_all_are_numpys_truthiness_on_every_backend(backend):
    tape = Tape("float32")
    x = tape.parameter(TRUTHS)
    empty = tape.parameter(np.zeros((2, 0), np.float32))
    outputs = [
        topos.any(x, axis=1),
        topos.all(x, axis=1),
        x.any(axis=0, keepdims=True),
        x.all(),
        topos.any(empty, axis=1),
        topos.all(empty, axis=1),
    ]
    network = tape.seal()
    plan = network.entry(outputs).lower()
    got = [np.asarray(v) for v in plan.run(network.parameters(), {}, backend=backend).outputs()]
    expected = [
        np.any(TRUTHS, 1),
        np.all(TRUTHS, 1),
        np.any(TRUTHS, 0, keepdims=True),
        np.all(TRUTHS),
        np.zeros(2, bool),
        np.ones(2, bool),
    ]
    for value, want in zip(got, expected):
        assert value.dtype == np.float32 and np.array_equal(value, want.astype(np.float32)), (backend, value, want)


def test_logcumsumexp_holds_past_exps_range_and_at_minus_infinity():
    data = np.array([[-np.inf, -np.inf, 1000.0, 1000.0, -1000.0], [-np.inf, 0.0, -np.inf, 5.0, 700.0]])
    tape = Tape()
    x = tape.parameter(data)
    y = topos.logcumsumexp(x)
    gradient = topos.grad(topos.sum(y), x)
    network = tape.seal()
    run = network.forward(network.parameters(), {})
    got, slope = run.of(y).numpy(), run.of(gradient).numpy()
    want = np.logaddexp.accumulate(data, 1)
    assert_close(got, want, elementwise_bound(want, "float64"), "logcumsumexp")
    # d out_j / d x_i = exp(x_i - out_j) for i <= j, as JAX's; where JAX's is NaN (a row opening with
    # two -inf, whose fold JAX forms as exp(-inf - -inf)), topos's is finite: the first element's
    # out_0 = x_0 passes 1, and a fold of two -inf passes nothing.
    expected = np.asarray(jax.grad(lambda z: jnp.sum(jax.lax.cumlogsumexp(z, 1)))(data))
    undefined = np.isnan(expected)
    assert undefined.sum() == 2 and np.array_equal(slope[undefined], [1.0, 0.0])
    known = np.where(undefined, 0.0, expected)
    # exp(x_i - out_j) with out_j near 1000 rounded to its ulp: a relative error of |out_j| u in the
    # exponent's argument, times a few roundings, is that much of each gradient.
    scale = 16 * np.finfo(np.float64).eps * np.max(np.abs(want[np.isfinite(want)]))
    assert_close(np.where(undefined, 0.0, slope), known, Bound(scale * np.abs(known), "16 |out| u"), "gradient")


FOLDS = {
    1: (np.multiply, lambda rng, shape: rng.uniform(0.97, 1.03, shape)),
    2: (np.maximum, lambda rng, shape: rng.standard_normal(shape)),
    3: (np.minimum, lambda rng, shape: rng.standard_normal(shape)),
    4: (np.logaddexp, lambda rng, shape: 3.0 * rng.standard_normal(shape)),
}


# 1000: 16 chunks of 64 for the workgroup entry; 4097: one past 64 chunks of 64 (the shared vectors
# stop at 1023 for these folds, to keep tests/cases/primitives.json small: CumSum's 4097 is there).
@pytest.mark.parametrize("n", [1000, 4097])
@pytest.mark.parametrize("strategy", ["serial", "workgroup"])
@pytest.mark.parametrize("fold", sorted(FOLDS))
def test_cumulative_kernels_on_long_rows_with_nan_and_infinities(fold, strategy, n):
    from topos.compiler.wgsl import scans
    from topos.webgpu import View, run_launches

    ufunc, draw = FOLDS[fold]
    rng = np.random.default_rng(fold)
    x = draw(rng, (4, n)).astype(np.float32)
    x[1, 700] = np.nan  # spreads to every later element
    x[2, 300] = np.inf
    x[3, 10] = -np.inf
    results = []
    for reverse in (False, True):
        launch = scans.cumulative(fold, View.of_buffer(0, x.shape), 9, reverse, strategy)
        out = run_launches([launch], {0: x}, {9: x.size}, {"out": View.of_buffer(9, x.shape)})["out"]
        results.append((reverse, out))
    for reverse, got in results:
        source = np.flip(x, 1) if reverse else x
        with np.errstate(all="ignore"):
            want = ufunc.accumulate(source.astype(np.float64), 1)
        want = np.flip(want, 1) if reverse else want
        # A product of up to n factors near 1: gamma(n) of it in float32; maximum and minimum exact;
        # log-sum-exp: a few ulps of each step's result, n steps of them against the largest result.
        if fold == 1:
            bound = Bound(gamma(n, "float32") * np.abs(want) + 1e-37, "gamma_n of each running product")
        elif fold in (2, 3):
            bound = Bound(0.0, "maximum and minimum are exact")
        else:
            bound = scaled_bound(want[np.isfinite(want)], "float32", n, k=8.0)
        assert_close(got, want, bound, f"fold {fold} {strategy} reverse={reverse}")


def test_the_kernels_reading_names_the_cumulative_entry_and_the_product_fold():
    tape = Tape("float32")
    x = tape.parameter(np.ones((3, 5), np.float32))
    outputs = [topos.cummax(x), topos.prod(x, 1)]
    network = tape.seal()
    text = network.entry(outputs).lower().kernels().describe()
    assert "cumulative" in text and "a * b" in text


@pytest.mark.parametrize("name", ["prod", "cumprod", "cummax", "cummin_reverse", "logcumsumexp"])
def test_gradients_run_in_kernels_and_agree_with_numpy(name):
    """The backward's every node (the scan's slices, pads, concatenations and folds; prod's running
    products) runs on WebGPU, within float32's library bound of the interpreter's gradient."""
    mine, _ = FUNCTIONS[name]
    data = np.random.default_rng(len(name)).uniform(-1.5, 1.5, (3, 9)).astype(np.float32)
    data[0, 4] = 0.0
    tape = Tape("float32")
    x = tape.parameter(data)
    y = mine(x)
    loss = topos.sum(y * y)
    network = tape.seal()
    plan = network.entry([topos.detach(loss)]).backward(topos.detach(loss)).lower()
    wrt = network.symbol(plan.gradients[0][0])
    expected = np.asarray(plan.run(network.parameters(), {}).gradient(wrt))
    run = plan.run(network.parameters(), {}, backend="webgpu")
    on_host = {plan.nodes[i].opcode for i, where in run.backends.items() if where != "webgpu"}
    on_host -= {"Parameter", "Input", "Leaf"}
    assert not on_host, f"{name}: backward nodes on the host: {on_host}"
    got = np.asarray(run.gradient(wrt))
    assert_close(got, expected, library_bound(expected, "float32", data.size), f"{name} gradient on WebGPU")
