"""Extending topos from outside the package: a new primitive with every rule (docs/extending.md).

``SmoothRelu`` is registered here, in user code, exactly as docs/extending.md
shows; it then records, runs, differentiates (checked against central
differences), lowers forward+backward, prints its own cost, emits StableHLO
that XLA runs to the same numbers, and runs on WebGPU from its WGSL expression
(lavapipe here and in CI: that test fails, not skips, without an adapter).
"""

import numpy as np
import pytest
from test_stablehlo import assert_outputs_agree

from topos import Tape, webgpu
from topos.compiler import (
    Executor,
    PlanRun,
    Primitive,
    missing_rules,
    primitives,
    register,
    register_executor,
    unregister,
    unregister_backend,
)
from topos.compiler.backends import NumpyExecutor
from topos.compiler.wgsl.fusion import renamed
from topos.xla import run_plan

SMOOTH_RELU_WGSL = "max(x, 0.0) + log(1.0 + exp(-abs(x)))"


class SmoothRelu(Primitive):
    """smooth_relu(x) = log(1 + e^x) (a softplus of its own), elementwise."""

    name = "SmoothRelu"
    arity = 1
    kernel = "elementwise"
    wgsl = SMOOTH_RELU_WGSL  # WebGPU's elementwise template computes it for every element

    def infer(self, metas, attrs):
        (x,) = metas
        if x.dtype not in ("float32", "float64"):
            self.fail(f"needs floating-point values, got {x.dtype}", metas)
        return x

    def forward(self, inputs, attrs):
        x = inputs[0]
        return np.logaddexp(x, np.zeros((), dtype=x.dtype))

    def vjp(self, e, g, operands, out, attrs):
        # d smooth_relu(x) / dx = sigmoid(x)
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


def smooth_relu(value):
    """The user-facing function: records one SmoothRelu node."""
    return value.tape.apply("SmoothRelu", [value])


@pytest.fixture
def registered():
    register(SmoothRelu)
    try:
        yield
    finally:
        unregister("SmoothRelu")


def build(tape):
    w = tape.parameter(np.array([[-30.0, -1.0, 0.0], [0.5, 2.0, 40.0]]), name="w")
    x = tape.input(np.array([1.0, -2.0, 0.25]), name="x")
    y = smooth_relu(w * x)
    return [w, x, y, y.sum()]


def test_a_registered_primitive_has_every_rule(registered):
    assert "SmoothRelu" in primitives()
    assert missing_rules(primitives()["SmoothRelu"]) == []
    with pytest.raises(ValueError, match="already registered"):
        register(SmoothRelu)


def test_it_records_runs_and_differentiates(registered):
    network, (w, x, y, loss) = Tape.record(build)
    assert "SmoothRelu" in network.describe()
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
    assert_outputs_agree(result.outputs(), run_plan(plan, parameters).outputs(), dtype, "smooth_relu")
    row = next(r for r in plan.describe(costs=True).splitlines() if "SmoothRelu" in r)
    width = 4 if dtype == "float32" else 8
    assert row.endswith(f"  [36 flops, {12 * width} bytes]")


def test_it_runs_on_webgpu_from_its_wgsl_expression(registered):
    assert webgpu.available(), "no WebGPU adapter: this test needs one (mesa-vulkan-drivers gives lavapipe)"
    network, (w, x, y, loss) = Tape.record(build, dtype="float32")
    plan = network.entry([y, loss]).backward(loss, [w]).lower()
    reading = plan.kernels()
    (smooth_relu_node,) = [i for i in plan.schedule if plan.nodes[i].opcode == "SmoothRelu"]
    assert smooth_relu_node not in reading.declined
    # Its expression ends its launch's row: alone, or as the last node of a fused chain (its operand renamed).
    names = ["x"] + [f"t{k}" for k in range(8)]
    assert any(
        line.startswith("elementwise:main", 8) and any(line.endswith(renamed(SMOOTH_RELU_WGSL, [n])) for n in names)
        for line in reading.describe().splitlines()
    )
    parameters = network.parameters()
    run = plan.run(parameters, backend="webgpu")
    assert run.backends[smooth_relu_node] == "webgpu"
    assert {run.backends[i] for i in plan.schedule if not plan.nodes[i].is_source} == {"webgpu"}
    reference = plan.run(parameters, backend="numpy")
    # WGSL's log is only held to an absolute error near 1, and log(1 + e^-30) is 0 in float32: absolute slack too.
    for got, expected in zip(run.outputs(), reference.outputs()):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_an_elementwise_primitive_without_an_expression_stays_on_the_host():
    class Cube(Primitive):
        name = "TestCube"
        arity = 1
        kernel = "elementwise"

        def infer(self, metas, attrs):
            return metas[0]

        def forward(self, inputs, attrs):
            return inputs[0] ** 3

    register(Cube)
    try:
        network, (y,) = Tape.record(
            lambda tape: [tape.apply("TestCube", [tape.parameter([1.0, 2.0])])], dtype="float32"
        )
        reading = network.entry([y]).lower().kernels()
        assert reading.declined[y.index] == "no elementwise expression for TestCube"
        Cube.wgsl = "x * x * x"
        reading = network.entry([y]).lower().kernels()
        assert y.index not in reading.declined and "x * x * x" in reading.describe()
    finally:
        unregister("TestCube")


class Doubling(Executor):
    """A whole-plan backend: runs the plan on the interpreter, then says it ran every node itself."""

    name = "doubling"

    def run_plan(self, parameters, feeds):
        run = NumpyExecutor(self.plan).run_plan(parameters, feeds)
        return PlanRun(
            self.plan,
            {i: 2 * run.outputs()[k] for k, i in enumerate(self.plan.outputs)},
            dict.fromkeys(run.backends, self.name),
            run.peak_elements,
            run.peak_node,
        )


def test_a_whole_plan_executor_is_the_one_protocol_plan_run_asks_for():
    network, (total,) = Tape.record(lambda tape: [tape.parameter([1.0, 2.0]).sum()])
    plan = network.entry([total]).lower()
    register_executor("test-doubling", Doubling)
    try:
        run = plan.run(network.parameters(), backend="test-doubling")
    finally:
        unregister_backend("test-doubling")
    assert run.of(total).scalar() == 6.0
    assert set(run.backends.values()) == {"doubling"}


def test_a_backend_registered_the_wrong_way_names_the_other_way():
    network, (total,) = Tape.record(lambda tape: [tape.parameter([1.0, 2.0]).sum()])
    plan = network.entry([total]).lower()
    register_executor("test-node-by-node", lambda plan: NumpyExecutor(plan).run)
    try:
        with pytest.raises(
            TypeError, match="not an Executor: register a node-by-node accelerator with register_backend"
        ):
            plan.run(network.parameters(), backend="test-node-by-node")
    finally:
        unregister_backend("test-node-by-node")
