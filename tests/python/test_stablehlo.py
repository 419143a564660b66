"""The StableHLO reading, held to XLA: every primitive, forward and forward+backward, f32 and f64.

Each case records one primitive on parameters (and int32 inputs where the op
takes indices), then a loss that weighs its output with a fixed random leaf so
the backward plan runs the primitive's derivative. Both plans are emitted,
compiled and executed by XLA on CPU (jaxlib), and must agree with the numpy
interpreter: float64 to 1e-12, float32 to 1e-5, relative to the largest
magnitude of each result (see ``assert_outputs_agree``).
"""

import numpy as np
import pytest
from op_specs import (
    COMPOSITES,
    OP_SPECS,
    XLA_TOLERANCE,
    check_operands,
    derived_rows,
    example_arrays,
    example_rows,
    recorded,
    spread_sampler,
)
from seed_texts import SEED_HLO

import topos
from topos import LoweringError, Tape, detach
from topos.compiler import Primitive, primitives, register, unregister
from topos.ops import Meta

SEED_STABLEHLO = SEED_HLO

TOLERANCE = XLA_TOLERANCE


def assert_outputs_agree(expected, actual, dtype, what=""):
    """Each result agrees to the dtype's tolerance, relative to its largest magnitude.

    A result smaller than sqrt(eps) times the largest magnitude among all the
    results is rounding noise around zero (a gradient whose terms cancel
    exactly, say); it is judged against that largest magnitude instead.
    """
    assert len(expected) == len(actual), what
    overall = max((float(np.max(np.abs(w), initial=0.0)) for w in expected), default=0.0)
    noise = np.sqrt(np.finfo(dtype).eps) * overall
    for position, (want, got) in enumerate(zip(expected, actual)):
        want, got = np.asarray(want), np.asarray(got)
        assert got.shape == want.shape and got.dtype == want.dtype, (what, position, got.shape, want.shape)
        scale = float(np.max(np.abs(want), initial=0.0))
        if scale < noise:
            scale = overall
        error = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)), initial=0.0))
        assert error <= TOLERANCE[dtype] * scale, f"{what} result {position}: error {error:.3g} at scale {scale:.3g}"


def check_against_xla(network, readables, target=None, feeds=None):
    """Forward plan, and forward+backward plan when there is a target: XLA agrees with numpy."""
    parameters = network.parameters()
    plans = [network.entry(readables).lower()]
    if target is not None:
        plans.append(network.entry(readables).backward(target).lower())
    for plan in plans:
        numpy_outputs = plan.run(parameters, feeds).outputs()
        xla_outputs = plan.run(parameters, feeds, backend="xla").outputs()
        assert_outputs_agree(numpy_outputs, xla_outputs, network.dtype, plan.summary())
    return plans


def test_seed_stablehlo_is_exactly_api_md(seed_model):
    network, (w, x, y, loss) = seed_model
    plan = network.entry([loss]).lower()
    assert plan.emit_stablehlo() == SEED_STABLEHLO
    assert plan.run(network.parameters(), {x: 3.0}, backend="xla").outputs() == [(0.5 * 3.0 - 4.0) ** 2]


# One case per primitive ------------------------------------------------------------------------


def uniform(rng, shape, low=-1.5, high=1.5):
    return rng.uniform(low, high, shape)


def unary(opcode, low=-1.5, high=1.5):
    def case(tape, rng):
        x = tape.parameter(check_operands(opcode, [uniform(rng, (3, 4), low, high)])[0])
        return tape.apply(opcode, [x])

    return case


def case_leaf(tape, rng):
    small = tape.leaf(uniform(rng, (2, 3)))
    large = tape.leaf(uniform(rng, (4, 6)))  # written as a hex blob
    tiny = tape.leaf(np.array([1e-300, 3.0, -0.0, 1e5, 2.5e-7, 0.1]).reshape(2, 3))
    x = tape.parameter(uniform(rng, (2, 3)))
    mixed = tape.apply("Add", [tape.apply("Mul", [x, small]), tiny])
    return tape.apply("Sum", [tape.apply("Mul", [large, large])], axes=(0, 1), keepdims=False), mixed


def case_input(tape, rng):
    return tape.apply("Mul", [tape.input(uniform(rng, (3,))), tape.parameter(uniform(rng, (3,)))])


# The cases an op_specs row cannot give: the sources (a parameter, an input, leaves written as
# literals and hex blobs), which are no call of an example but what every call reads. Every
# elementwise op of one or two operands is derived from its row below, every other primitive
# from its row's examples (products, scans, convolutions, windows, random draws, derivatives).
CASES = {
    "Parameter": [unary("Neg")],
    "Input": [case_input],
    "Leaf": [case_leaf],
}


def derived(opcode):
    """An elementwise op's case from its op_specs row: each operand drawn over its spread (its
    domain's draw unless given), with equal elements where the op decides ties (``ties``)."""
    row = OP_SPECS[opcode]

    def case(tape, rng):
        data = [spread_sampler(opcode, operand)(rng, (3, 4)) for operand in range(len(row.operands))]
        if row.ties:
            data[1][0] = data[0][0]
        return tape.apply(opcode, [tape.parameter(values) for values in data])

    return case


# Every elementwise op with no case above is lowered from its op_specs row.
CASES.update({opcode: [derived(opcode)] for opcode in derived_rows(CASES)})


def example_case(key, example):
    """A row's example as a case: its float operands parameters, its int32 (indices) and uint32
    (random keys) operands inputs of their dtype."""

    def case(tape, rng):
        arrays = example_arrays(key, example)
        values = [tape.input(a, dtype=a.dtype.name) if a.dtype.kind in "iu" else tape.parameter(a) for a in arrays]
        return recorded(example)(tape, *values)

    return case


# Every primitive with examples in its row is lowered from them.
for _key, _example in example_rows(table=OP_SPECS):
    CASES.setdefault(_key, []).append(example_case(_key, _example))

PARAMETRIZED = [(name, i) for name, cases in CASES.items() for i in range(len(cases))]


def record_case(name, position, dtype):
    def build(tape):
        rng = np.random.default_rng(len(name) * 100 + position)
        outputs = CASES[name][position](tape, rng)
        outputs = list(outputs) if isinstance(outputs, tuple) else [outputs]
        # loss = sum over outputs of sum(output * fixed random weights)
        loss = None
        for out in outputs:
            weights = tape.leaf(rng.uniform(-1.0, 1.0, out.shape))
            term = tape.apply("Sum", [tape.apply("Mul", [out, weights])], axes=None)
            loss = term if loss is None else tape.apply("Add", [loss, term])
        return outputs + [loss]

    tape = Tape(dtype)
    values = build(tape)
    return tape.seal(), detach(values)


def test_every_primitive_lowers_and_has_an_oracle_case():
    for name, primitive in primitives().items():
        assert type(primitive).stablehlo is not Primitive.stablehlo, f"{name} has no StableHLO lowering"
        assert name in CASES, f"{name} has no case in test_stablehlo.CASES"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,position", PARAMETRIZED, ids=[f"{n}{i or ''}" for n, i in PARAMETRIZED])
def test_primitive_forward_and_backward_agree_with_xla(name, position, dtype):
    network, symbols = record_case(name, position, dtype)
    *outputs, loss = symbols
    forward, backward = check_against_xla(network, outputs + [loss], loss)
    assert any(forward.nodes[i].opcode == name for i in forward.schedule)
    # The graph gradients are the eager gradients, bit for bit (one reverse scan, two emitters).
    parameters = network.parameters()
    planned = backward.run(parameters)
    field = network.forward(parameters).backward(loss)
    for symbol in network.parameter_symbols():
        assert np.asarray(planned.gradient(symbol)).tobytes() == np.asarray(field.of(symbol)).tobytes()


COMPOSITE_EXAMPLES = example_rows(table=COMPOSITES)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("key", "example"), COMPOSITE_EXAMPLES, ids=[e.name for _, e in COMPOSITE_EXAMPLES])
def test_composite_examples_agree_with_xla(key, example, dtype):
    """Every composite's examples (op_specs.COMPOSITES), forward and backward, XLA against numpy."""
    tape = Tape(dtype)
    out = example_case(key, example)(tape, None)
    loss = topos.sum(out * tape.leaf(np.random.default_rng(len(example.name)).uniform(-1.0, 1.0, out.shape)))
    network = tape.seal()
    check_against_xla(network, detach([out, loss]), detach(loss))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_composites_differentiated_in_closed_form_agree_with_xla_and_with_the_eager_scan(dtype):
    def build(tape):
        rng = np.random.default_rng(11)
        x = tape.parameter(uniform(rng, (2, 3, 5), -3.0, 3.0))
        w = tape.parameter(uniform(rng, (5,)))
        normed = topos.layer_norm(x, w)
        attended = topos.softmax(normed, axis=-1) * topos.gelu(normed)
        loss = topos.cross_entropy(attended * 4.0, np.array([[0, 4, 2], [1, 1, 3]]))
        return [attended, loss]

    network, (attended, loss) = Tape.record(build, dtype=dtype)
    forward, backward = check_against_xla(network, [attended, loss], loss)
    opcodes = {backward.nodes[i].opcode for i in backward.schedule}
    assert {"LayerNormGrad", "SoftmaxGrad", "LogSoftmaxGrad", "GeluGrad"} <= opcodes
    parameters = network.parameters()
    planned = backward.run(parameters)
    field = network.forward(parameters).backward(loss)
    for symbol in network.parameter_symbols():
        assert np.asarray(planned.gradient(symbol)).tobytes() == np.asarray(field.of(symbol)).tobytes()


def test_stablehlo_text_uses_explicit_broadcasts_regions_and_dimension_numbers():
    def build(tape):
        m = tape.parameter(np.ones((2, 3, 4)))
        n = tape.parameter(np.ones((2, 4, 5)))
        v = tape.parameter(np.ones(5))
        return [((m @ n) + v).sum(axis=2)]

    network, (total,) = Tape.record(build, dtype="float32")
    text = network.entry([total]).lower().emit_stablehlo()
    assert "stablehlo.broadcast_in_dim %arg2, dims = [2] : (tensor<5xf32>) -> tensor<2x3x5xf32>" in text
    assert "batching_dims = [0] x [0], contracting_dims = [2] x [1]" in text
    assert '"stablehlo.reduce"' in text and "stablehlo.return" in text and "dimensions = array<i64: 2>" in text


class Cube(Primitive):
    """A primitive without a lowering, registered for one test."""

    name = "TestCubeWithoutLowering"
    arity = 1

    def infer(self, metas, attrs):
        return Meta(metas[0].shape, metas[0].dtype)

    def forward(self, inputs, attrs):
        return inputs[0] ** 3

    def vjp(self, e, g, operands, out, attrs):
        x = operands[0]
        return [e.mul(g, e.mul(e.like(x, 3.0), e.mul(x, x)))]


def test_an_op_that_cannot_lower_raises_lowering_error_naming_node_and_opcode():
    register(Cube)
    try:

        def build(tape):
            x = tape.parameter([1.0, 2.0])
            return [tape.apply("TestCubeWithoutLowering", [x.exp()])]

        network, (cubed,) = Tape.record(build)
        plan = network.entry([cubed]).lower()
        with pytest.raises(LoweringError, match=r"node 2 \(TestCubeWithoutLowering\)") as caught:
            plan.emit_stablehlo()
        assert caught.value.node == 2 and caught.value.opcode == "TestCubeWithoutLowering"
        assert "test_stablehlo.py" in str(caught.value)  # the user's line
        assert plan.run(network.parameters()).of(cubed).numpy().tolist() == pytest.approx(np.exp([1.0, 2.0]) ** 3)
    finally:
        unregister("TestCubeWithoutLowering")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_constants_reach_xla_bit_for_bit(dtype):
    special = np.array([np.inf, -np.inf, -0.0, 0.0, 1e-310, 0.1, 1 / 3, -2.5e-8, 6.02e23], dtype=dtype)
    rng = np.random.default_rng(5)
    large = rng.normal(size=(5, 7)).astype(dtype)  # more than LITERAL_LIMIT elements: a hex blob
    large[0, :3] = [np.inf, -0.0, np.nan]

    def build(tape):
        return [tape.leaf(special), tape.leaf(large), tape.leaf(np.array([0.0, -0.0, 0.0])), tape.leaf(7.25)]

    tape = Tape(dtype)
    values = build(tape)
    network = tape.seal()
    plan = network.entry(detach(values)).lower()
    results = plan.run(network.parameters(), backend="xla").outputs()
    for value, result in zip(values, results):
        assert result.tobytes() == np.asarray(value.node.payload).tobytes()
