"""Extending topos from outside the package: a new primitive with every rule (docs/extending.md).

``Softplus`` is registered here, in user code, exactly as docs/extending.md
shows; it then records, runs, differentiates (checked against central
differences), lowers forward+backward, prints its own cost, and emits
StableHLO that XLA runs to the same numbers.
"""

import numpy as np
import pytest
from test_stablehlo import assert_outputs_agree

from topos import Tape
from topos.compiler import Primitive, missing_rules, primitives, register, unregister
from topos.compiler.xla import execute_plan


class Softplus(Primitive):
    """softplus(x) = log(1 + e^x), elementwise."""

    name = "Softplus"
    arity = 1

    def infer(self, metas, attrs):
        (x,) = metas
        if x.dtype not in ("float32", "float64"):
            self.fail(f"needs floating-point values, got {x.dtype}", metas)
        return x

    def forward(self, inputs, attrs):
        x = inputs[0]
        return np.logaddexp(x, np.zeros((), dtype=x.dtype))

    def vjp(self, e, g, operands, out, attrs):
        # d softplus(x) / dx = sigmoid(x)
        return [e.mul(g, e.apply("Sigmoid", [operands[0]]))]

    def stablehlo(self, ctx, node):
        # max(x, 0) + log1p(exp(-|x|)): no overflow for large |x|
        (x,) = ctx.operands(node)

        def op(name, *operands):
            return ctx.elementwise(name, node, list(operands))

        zero = ctx.splat(0.0, node.shape, node.dtype)
        tail = op("stablehlo.log_plus_one", op("stablehlo.exponential", op("stablehlo.negate", op("stablehlo.abs", x))))
        return op("stablehlo.add", op("stablehlo.maximum", x, zero), tail)

    def cost(self, operand_metas, meta, attrs):
        # abs, negate, exp, log1p, max, add: six flops an element; one read and one write
        return 6 * meta.size, 2 * meta.size * (4 if meta.dtype == "float32" else 8)


def softplus(value):
    """The user-facing function: records one Softplus node."""
    return value.tape.apply("Softplus", [value])


@pytest.fixture
def registered():
    register(Softplus)
    try:
        yield
    finally:
        unregister("Softplus")


def build(tape):
    w = tape.parameter(np.array([[-30.0, -1.0, 0.0], [0.5, 2.0, 40.0]]), name="w")
    x = tape.input(np.array([1.0, -2.0, 0.25]), name="x")
    y = softplus(w * x)
    return [w, x, y, y.sum()]


def test_a_registered_primitive_has_every_rule(registered):
    assert "Softplus" in primitives()
    assert missing_rules(primitives()["Softplus"]) == []
    with pytest.raises(ValueError, match="already registered"):
        register(Softplus)


def test_it_records_runs_and_differentiates(registered):
    network, (w, x, y, loss) = Tape.record(build)
    assert "Softplus" in network.describe()
    run = network.forward(network.parameters())
    z = np.array([[-30.0, -1.0, 0.0], [0.5, 2.0, 40.0]]) * np.array([1.0, -2.0, 0.25])
    assert np.allclose(run.of(y).numpy(), np.log1p(np.exp(z)), rtol=1e-15, atol=0)
    gradient = run.backward(loss).of(w).numpy()
    # central differences on each element of w
    eps = 1e-6
    w0 = network.parameters().of(w).numpy()
    numeric = np.zeros_like(w0)
    for index in np.ndindex(w0.shape):
        step = np.zeros_like(w0)
        step[index] = eps
        plus = network.forward(network.parameters().replace({0: w0 + step})).of(loss).scalar()
        minus = network.forward(network.parameters().replace({0: w0 - step})).of(loss).scalar()
        numeric[index] = (plus - minus) / (2 * eps)
    assert np.allclose(gradient, numeric, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_it_lowers_emits_and_runs_on_xla(registered, dtype):
    network, (w, x, y, loss) = Tape.record(build, dtype=dtype)
    plan = network.entry([y, loss]).backward(loss, [w, x]).lower()
    text = plan.emit_stablehlo()
    assert "stablehlo.log_plus_one" in text
    parameters = network.parameters()
    result = plan.run(parameters)
    assert_outputs_agree(result.outputs(), execute_plan(plan, parameters), dtype, "softplus")
    row = next(r for r in plan.describe(costs=True).splitlines() if "Softplus" in r)
    width = 4 if dtype == "float32" else 8
    assert row.endswith(f"  [36 flops, {12 * width} bytes]")
