"""Elementwise chains fused into one generated WGSL launch (``topos.compiler.wgsl.fusion``).

A chain's nodes run as one launch of the elementwise template (a ``let`` a node, the last
node's expression); its results are checked against numpy in float64 by the kernels'
documented rule (tests/cases/README.md: 1e-5 relative, plus 8 times numpy's own float32
error where a formula loses precision in float32) at the edges of 64-wide workgroups. These
tests need a WebGPU adapter (lavapipe here and in CI).
"""

import zlib

import numpy as np
import pytest

import topos
from topos import Tape
from topos.compiler.wgsl.fusion import MAX_FUSED_OPERANDS, find_chains, is_plain_elementwise

EDGE_SIZES = (1, 7, 63, 64, 65, 1023, 4097)


@pytest.fixture
def rng(request):
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


def assert_agrees(got, exact, rounded, magnitude=None):
    """float32 ``got`` against float64 ``exact``: 1e-5 relative, or 8 times numpy's float32 error (``rounded``),
    plus 8 units of 2^-24 of ``magnitude`` (a sum's |terms|, where terms cancel)."""
    exact = np.asarray(exact, dtype=np.float64)
    allowed = np.maximum(1e-5 * np.abs(exact) + 1e-37, 8.0 * np.abs(np.asarray(rounded, dtype=np.float64) - exact))
    if magnitude is not None:
        allowed = allowed + 8.0 * 2.0**-24 * np.asarray(magnitude, dtype=np.float64)
    error = np.abs(np.asarray(got, dtype=np.float64) - exact)
    assert got.shape == exact.shape and (error <= allowed).all(), f"largest error {error.max()} at {error.argmax()}"


def chain(x, y, z, module):
    """(x - y) * z + exp(-x) * tanh(y), then gelu of a third of it: nine elementwise nodes."""
    t = (x - y) * z + module.exp(-x) * module.tanh(y)
    return module.gelu(t / 3.0) if module is topos else numpy_gelu(t / 3.0)


def numpy_gelu(t):
    return 0.5 * t * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (t + 0.044715 * t**3)))


def record(arrays, build):
    def body(tape):
        values = [tape.input(a) for a in arrays]
        return build(*values)

    network, out = Tape.record(body, dtype="float32")
    return network, out


@pytest.mark.parametrize("n", EDGE_SIZES)
def test_a_fused_chain_equals_numpy_at_edge_sizes(n, rng):
    x, y, z = (rng.normal(size=n).astype(np.float32) for _ in range(3))
    network, out = record([x, y, z], lambda a, b, c: chain(a, b, c, topos))
    plan = network.entry([out]).lower()
    reading = plan.kernels()
    # One launch computes every elementwise node.
    elementwise = [i for i in plan.schedule if is_plain_elementwise(plan.nodes[i])]
    assert len(reading.launches) == 1 and sorted(reading.launches[0].nodes) == elementwise
    assert [chain.nodes for chain in reading.chains.values()] == [reading.launches[0].nodes]
    got = plan.run(network.parameters(), {}, backend="webgpu").of(out).numpy()
    x64, y64, z64 = (a.astype(np.float64) for a in (x, y, z))
    exact = chain(x64, y64, z64, np)
    # The sum's terms may cancel; gelu's slope stays below 1.2, and the sum is divided by 3.
    magnitude = (np.abs((x64 - y64) * z64) + np.abs(np.exp(-x64) * np.tanh(y64))) * 0.4
    assert_agrees(got, exact, chain(x, y, z, np), magnitude)


def test_a_chain_reads_broadcast_operands_and_constants_through_their_views(rng):
    a = rng.normal(size=(5, 65)).astype(np.float32)
    b = rng.normal(size=(65,)).astype(np.float32)
    network, out = record([a, b], lambda p, q: topos.maximum(p * 2.0 + q, 0.25) - topos.transpose(p.T))
    plan = network.entry([out]).lower()
    got = plan.run(network.parameters(), {}, backend="webgpu").of(out).numpy()
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert_agrees(got, np.maximum(a64 * 2.0 + b64, 0.25) - a64, np.maximum(a * 2.0 + b, 0.25) - a)
    assert len([launch for launch in plan.kernels().launches if launch.kernel == "elementwise"]) == 1


def test_the_reading_shows_the_fused_launch_and_the_nodes_in_it(rng):
    x, y, z = (rng.normal(size=64).astype(np.float32) for _ in range(3))
    network, out = record([x, y, z], lambda a, b, c: chain(a, b, c, topos))
    reading = network.entry([out]).lower().kernels()
    (launch,) = reading.launches
    text = reading.describe()
    row = next(line for line in text.splitlines() if line.startswith("0 "))
    nodes = sorted(launch.nodes)
    assert f"{nodes[0]}-" in row and f"-{nodes[-1]} " in row and "let t0 = " in row and "gelu(" in row
    assert launch.label == "+".join(network.nodes()[i].opcode for i in launch.nodes)
    assert "Sub+Mul+Neg+Exp+Tanh+Mul+Add+Div+Gelu" == launch.label


def test_a_value_read_outside_the_chain_joins_it_only_as_its_second_output(rng):
    x = rng.normal(size=65).astype(np.float32)

    def build(a):
        shared = topos.exp(a)  # read by the chain and by the sum, which comes after it
        inner = shared * 2.0 + 1.0
        return [topos.tanh(inner), inner, topos.sum(shared)]  # inner is an output too

    network, outs = record([x], build)
    plan = network.entry(outs).lower()
    reading = plan.kernels()
    shared = plan.nodes[outs[2].index].operands[0]  # the Sum's operand: the Exp
    (chain,) = reading.chains.values()
    # The chain writes tanh and, as its second output, inner; one second output a launch, so the Exp stays out.
    assert chain.root == outs[0].index and chain.extra == outs[1].index and shared not in chain.nodes
    (launch,) = [launch for launch in reading.launches if launch.nodes == chain.nodes]
    assert "extra[i] = " in dict(launch.specialisation)["BODY"]
    run = plan.run(network.parameters(), {}, backend="webgpu")
    x64 = x.astype(np.float64)
    exact_inner = np.exp(x64) * 2.0 + 1.0
    rounded_inner = np.exp(x) * np.float32(2.0) + np.float32(1.0)
    assert_agrees(run.of(outs[1]).numpy(), exact_inner, rounded_inner)
    assert_agrees(run.of(outs[0]).numpy(), np.tanh(exact_inner), np.tanh(rounded_inner))
    assert_agrees(run.of(outs[2]).numpy(), np.exp(x64).sum(), np.exp(x).sum(), magnitude=65 * np.exp(x64).sum())


def test_a_value_read_before_the_chain_ends_stays_out_of_it(rng):
    x = rng.normal(size=64).astype(np.float32)

    def build(a):
        e = topos.exp(a)
        total = topos.sum(e)  # reads e before the chain's root is computed
        return [topos.tanh(e * 2.0), total]

    network, outs = record([x], build)
    plan = network.entry(outs).lower()
    reading = plan.kernels()
    e = plan.nodes[outs[1].index].operands[0]
    assert all(e not in chain.nodes for chain in reading.chains.values())
    got = plan.run(network.parameters(), {}, backend="webgpu").of(outs[0]).numpy()
    assert_agrees(got, np.tanh(np.exp(x.astype(np.float64)) * 2.0), np.tanh(np.exp(x) * np.float32(2.0)))


def test_a_chain_keeps_to_the_templates_operand_slots(rng):
    arrays = [rng.normal(size=33).astype(np.float32) for _ in range(12)]

    def build(*values):
        total = values[0]
        for value in values[1:]:
            total = total * 0.5 + value
        return total

    network, out = record(arrays, build)
    plan = network.entry([out]).lower()
    launches = plan.kernels().launches
    assert len(launches) > 1
    assert all(len([b for b in launch.bindings if b.access == "read"]) <= MAX_FUSED_OPERANDS for launch in launches)
    got = plan.run(network.parameters(), {}, backend="webgpu").of(out).numpy()
    exact = build(*(a.astype(np.float64) for a in arrays))
    assert_agrees(got, exact, build(*arrays))


def test_find_chains_leaves_a_lone_elementwise_node_alone():
    network, out = record([np.ones(3, dtype=np.float32)], lambda a: topos.exp(a))
    plan = network.entry([out]).lower()
    assert find_chains(plan.nodes, plan.schedule, plan.outputs, lambda i: not plan.nodes[i].is_source) == {}
