"""topos.custom_vjp: the user's backward as the derivative, recorded once, shown as ordinary nodes.

The examples are JAX's (a numerically stable log1pexp, a clipped gradient, a straight-through
estimator), each checked against a torch.autograd.Function that states the same forward and
backward, and second order through a differentiable backward against torch's create_graph. The
float64 comparisons hold to 1e-12 relative: each side evaluates the same closed forms (sigmoid,
products) in a different library, a few roundings apart (a few 1e-16), far inside it.
"""

import numpy as np
import pytest
import torch
from test_kernels_plans import assert_outputs_agree as assert_near_exact
from test_kernels_plans import float64_shadow
from test_stablehlo import assert_outputs_agree

import topos
from topos import Tape, webgpu
from topos.errors import ArgumentError, ArgumentTypeError, ShapeError
from topos.show.graph_card import nodes_json

RTOL = 1e-12


@topos.custom_vjp
def log1pexp(x):
    return topos.log1p(topos.exp(x))


def _log1pexp_fwd(x):
    return log1pexp(x), x  # the decorated function, called inside fwd, records f plainly (as in JAX)


def _log1pexp_bwd(x, g):
    # d/dx log(1 + e^x) = 1 - 1 / (1 + e^x): no inf / inf where e^x overflows (JAX's docs' example).
    return (g * (1.0 - 1.0 / (1.0 + topos.exp(x))),)


log1pexp.defvjp(_log1pexp_fwd, _log1pexp_bwd)


@topos.custom_vjp
def clip_gradient(x, low, high):
    return x


clip_gradient.defvjp(lambda x, low, high: (x, (low, high)), lambda r, g: (topos.clip(g, r[0], r[1]), None, None))


@topos.custom_vjp
def straight_through_round(x):
    return topos.round(x)


straight_through_round.defvjp(lambda x: (topos.round(x), ()), lambda r, g: (g,))


class TorchLog1pExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.log1p(torch.exp(x))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (1.0 - 1.0 / (1.0 + torch.exp(x)))


class TorchClip(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g.clamp(-1.0, 1.0)


class TorchStraightThrough(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, g):
        return g


POINTS = np.array([-3.0, -1.25, -0.2, 0.4, 1.7, 2.6])
WEIGHTS = np.array([2.0, -3.0, 0.5, 4.0, -0.25, 1.5])


def topos_case(fn):
    """``sum(fn(x) * w)``, its gradient and second derivative recorded with topos.grad; every value."""

    def build(tape):
        x = tape.parameter(POINTS, name="x")
        y = topos.sum(fn(x) * WEIGHTS)
        g = topos.grad(y, x)
        return y, g, topos.grad(topos.sum(g * WEIGHTS), x), x

    network, symbols = Tape.record(build)
    run = network.forward(network.parameters())
    return network, symbols, [run.of(s).numpy() for s in symbols[:3]]


def torch_case(fn):
    x = torch.tensor(POINTS, requires_grad=True)
    w = torch.tensor(WEIGHTS)
    y = (fn(x) * w).sum()
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    # A backward that does not read x (the clip's, the straight-through's) has no second derivative.
    second = torch.autograd.grad((g * w).sum(), x, allow_unused=True)[0] if g.requires_grad else None
    second = torch.zeros_like(x) if second is None else second
    return [t.detach().numpy() for t in (y, g, second)]


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (log1pexp, TorchLog1pExp.apply),
        (lambda x: clip_gradient(x * 3.0, -1.0, 1.0), lambda x: TorchClip.apply(x * 3.0)),
        (straight_through_round, TorchStraightThrough.apply),
    ],
    ids=["log1pexp", "clip_gradient", "straight_through"],
)
def test_values_gradients_and_second_order_match_torch_functions(ours, theirs):
    _, _, got = topos_case(ours)
    for have, want in zip(got, torch_case(theirs)):
        np.testing.assert_allclose(have, want, rtol=RTOL, atol=RTOL * np.max(np.abs(want), initial=1.0))


def test_the_stable_backward_is_finite_where_the_forward_rules_give_nan():
    def build(tape):
        x = tape.parameter(np.array([-800.0, 0.0, 800.0]), name="x")
        return topos.sum(log1pexp(x)), topos.sum(topos.log1p(topos.exp(x))), x

    network, (custom, naive, x) = Tape.record(build)
    run = network.forward(network.parameters())
    np.testing.assert_array_equal(run.backward(custom).of(x).numpy(), [0.0, 0.5, 1.0])
    assert np.isnan(run.backward(naive).of(x).numpy()[2])  # inf / inf through Log1p's and Exp's own rules


def test_the_readings_show_the_pair_as_one_group_and_the_backward_as_ordinary_nodes():
    def build(tape):
        x = tape.parameter(POINTS, name="x")
        return topos.sum(log1pexp(x) * WEIGHTS), x

    network, (y, x) = Tape.record(build)
    nodes = network.nodes()
    (node,) = [n for n in nodes if n.opcode == "CustomVjp"]
    fwd_nodes = [n for n in nodes if n.opcode in ("Exp", "Log1p")]
    assert all("custom_vjp of log1pexp" in n.scope for n in fwd_nodes) and node.scope[-1] == "custom_vjp of log1pexp"
    assert node.operands[:2] == (fwd_nodes[-1].index, x.index)  # out, then the argument (the residual is x too)
    assert "backward of" in network.describe()  # the spec prints the held backward under its node
    plan = network.entry([y]).backward(y, [x]).lower()
    backward = [plan.nodes[i].opcode for i in plan.schedule if i >= plan.forward_count]
    # The user's backward (1 - 1 / (1 + exp(x))) as nodes of the gradient reading; Log1p's rule never ran.
    assert backward.count("Exp") == 1 and "Div" in backward and "Log1p" not in backward
    scopes = {entry["index"]: entry["scope"] for entry in nodes_json(nodes)["nodes"]}
    assert all("custom_vjp of log1pexp" in scopes[n.index] for n in fwd_nodes + [node])  # the graph's one group
    # The plan, the eager reverse scan and topos.grad agree to the last bit: one rule, three emitters.
    planned = plan.run(network.parameters()).gradient(x).numpy()
    eager = network.forward(network.parameters()).backward(y).of(x).numpy()
    np.testing.assert_array_equal(planned, eager)
    _, _, (_, recorded, _) = topos_case(log1pexp)
    np.testing.assert_array_equal(recorded, eager)


def test_xla_runs_the_gradient_plan_as_the_interpreter_does():
    def build(tape):
        x = tape.parameter(POINTS, name="x")
        return topos.sum(log1pexp(x) * clip_gradient(x * 4.0, -1.0, 1.0)), x

    network, (y, x) = Tape.record(build)
    plan = network.entry([y]).backward(y, [x]).lower()
    parameters = network.parameters()
    assert_outputs_agree(plan.run(parameters).outputs(), plan.run(parameters, backend="xla").outputs(), "float64")


def test_a_backward_closing_over_a_recorded_value_reads_it_as_an_operand():
    def build(tape):
        x = tape.parameter(POINTS, name="x")
        scale = tape.input(np.array(0.5), name="scale")

        @topos.custom_vjp
        def scaled_identity(v):
            return v

        scaled_identity.defvjp(lambda v: (v, ()), lambda r, g: (g * scale,))
        return topos.sum(scaled_identity(x)), x, scale

    network, (y, x, scale) = Tape.record(build)
    (node,) = [n for n in network.nodes() if n.opcode == "CustomVjp"]
    nodes = network.nodes()
    # g * scale broadcasts scale, which reads only an outer value: computed outside, read as an operand.
    assert any(scale.index in (j,) + nodes[j].operands for j in node.operands[2:])
    run = network.forward(network.parameters(), {scale: np.array(2.0)})
    np.testing.assert_array_equal(run.backward(y).of(x).numpy(), np.full(POINTS.shape, 2.0))


def test_bad_definitions_are_named():
    tape = Tape()
    x = tape.parameter(POINTS)

    @topos.custom_vjp
    def f(v):
        return v

    with pytest.raises(ArgumentError, match="defvjp"):
        f(x)
    f.defvjp(lambda v: v, lambda r, g: (g,))
    with pytest.raises(ArgumentTypeError, match="a pair"):
        f(x)
    f.defvjp(lambda v: (v, v), lambda r, g: (g, g))
    with pytest.raises(ArgumentTypeError, match="tuple of 1 cotangents"):
        f(x)
    f.defvjp(lambda v: (v, v), lambda r, g: (topos.sum(g),))
    with pytest.raises(ShapeError, match="cotangent of argument 0"):
        f(x)
    with pytest.raises(ArgumentTypeError, match="takes a function"):
        topos.custom_vjp(3)
    assert f(2.0) == 2.0  # no recorded argument: f itself runs, as JAX runs it outside differentiation


def test_a_saved_network_keeps_the_backward(tmp_path):
    def build(tape):
        x = tape.parameter(POINTS, name="x")
        return topos.sum(log1pexp(x) * clip_gradient(x * 4.0, -1.0, 1.0)), x

    network, (y, x) = Tape.record(build)
    path = tmp_path / "custom.json"
    network.save(path)
    loaded = topos.Network.load(path)
    assert loaded.describe() == network.describe()
    ly, lx = loaded.symbol(y.index), loaded.symbol(x.index)
    want = network.entry([y]).backward(y, [x]).lower().run(network.parameters()).gradient(x).numpy()
    got = loaded.entry([ly]).backward(ly, [lx]).lower().run(loaded.parameters()).gradient(lx).numpy()
    np.testing.assert_array_equal(got, want)


def test_webgpu_runs_the_gradient_plan_as_numpy_does():
    assert webgpu.available(), "no WebGPU adapter (lavapipe): apt-get install mesa-vulkan-drivers"

    def build(tape):
        x = tape.parameter(np.linspace(-2.0, 2.0, 12).reshape(3, 4), name="x")
        return topos.sum(log1pexp(x) * clip_gradient(x * 4.0, -1.0, 1.0)), x

    network, (y, x) = Tape.record(build, dtype="float32")
    plan = network.entry([y]).backward(y, [x]).lower()
    parameters = network.parameters()
    run = plan.run(parameters, backend="webgpu")
    assert set(run.backends.values()) == {"webgpu"}  # CustomVjp is a view of out there, the backward kernels
    # test_kernels_plans's rule: within 1e-5 of the float64 values' scale, or 8 times numpy's own error.
    exact = float64_shadow(plan, parameters, {})
    assert_near_exact(plan, run.outputs(), plan.run(parameters).outputs(), exact, "custom_vjp plan on webgpu")


def test_forward_mode_goes_through_the_users_backward():
    # topos.jvp is the double vjp (derivatives.py): the transpose of the user's backward, linear in g.
    # JAX refuses jvp of a custom_vjp function; here it is J v with J the user's: sigmoid(x) v, and v
    # itself through the straight-through round.
    tape = Tape()
    x = tape.parameter(POINTS, name="x")
    v = tape.input(WEIGHTS, name="v")
    smooth = topos.jvp(log1pexp(x), x, v)
    through = topos.jvp(straight_through_round(x), x, v)
    network = tape.seal()
    run = network.forward(network.parameters())
    sigmoid = 1.0 / (1.0 + np.exp(-POINTS))
    np.testing.assert_allclose(run.of(topos.detach(smooth)).numpy(), sigmoid * WEIGHTS, rtol=RTOL)
    np.testing.assert_array_equal(run.of(topos.detach(through)).numpy(), WEIGHTS)
