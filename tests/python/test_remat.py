"""Rematerialisation (topos.checkpoint, entry.lower(remat=...)): the backward recomputes values from a
few kept ones, with the same bits and a lower peak, and every reading shows the copies for what they are.

Bit-identity is exact here, not within a tolerance: a recomputed value is the same op over the same
inputs in the same order, on the same machine, so the interpreter gives the same bits whatever the
CPU. XLA is held to the interpreter within test_stablehlo's dtype tolerance, as every plan is.
"""

import numpy as np
import pytest
from test_kernels_plans import assert_outputs_agree as assert_near_exact
from test_kernels_plans import float64_shadow
from test_stablehlo import assert_outputs_agree

import topos
from topos import Tape, webgpu
from topos.errors import ArgumentError, ArgumentTypeError
from topos.model.remat import RECOMPUTED
from topos.show.graph_card import nodes_json


def two_blocks(checkpointed, dtype="float64"):
    """Two tanh blocks in a row, optionally checkpointed, and a square loss; ``(network, loss, w, v)``."""

    def build(tape):
        rng = np.random.default_rng(3)
        x = tape.input(rng.standard_normal((6, 5)), name="x")
        w = tape.parameter(rng.standard_normal((5, 8)) / 3, name="w")
        v = tape.parameter(rng.standard_normal((8, 5)) / 3, name="v")

        def block(h):
            return h + topos.tanh(topos.exp(h @ w * 0.5) - 1.0) @ v

        step = topos.checkpoint(block) if checkpointed else block
        y = step(step(x))
        return topos.sum(y * y), w, v

    network, (loss, w, v) = Tape.record(build, dtype=dtype)
    return network, loss, w, v


def gradients(plan, network, symbols):
    run = plan.run(network.parameters())
    return [run.gradient(s).numpy() for s in symbols], run


def test_checkpointed_blocks_give_the_same_bits_with_a_lower_peak():
    plain_network, *plain_symbols = two_blocks(False)
    network, loss, w, v = two_blocks(True)
    assert [n.opcode for n in network.nodes()] == [n.opcode for n in plain_network.nodes()]
    plain = plain_network.entry([plain_symbols[0]]).backward(plain_symbols[0]).lower()
    plan = network.entry([loss]).backward(loss).lower()
    expected, _ = gradients(plain, plain_network, plain_symbols[1:])
    got, run = gradients(plan, network, [w, v])
    for want, have in zip(expected, got):
        np.testing.assert_array_equal(have, want)
    assert plan.recomputed and plan.peak < plain.peak
    assert run.peak_elements == plan.peak  # the interpreter holds what the plan predicts
    # The plan says what it would have held without recomputing: the plain plan's live volume.
    assert plan.without_remat == (plain.peak, plain.peak_node, plain.retain_all)
    unrecomputed = network.entry([loss]).backward(loss).lower(remat=None)
    assert not unrecomputed.recomputed and unrecomputed.without_remat is None
    assert (unrecomputed.peak, unrecomputed.retain_all) == (plain.peak, plain.retain_all)


def test_each_call_is_a_region_and_only_its_interior_is_recomputed():
    network, loss, w, v = two_blocks(True)
    nodes = network.nodes()
    regions = [[n for n in nodes if "checkpoint of block" + suffix in n.scope] for suffix in ("", " (2)")]
    assert all(regions) and not {n.index for n in regions[0]} & {n.index for n in regions[1]}
    plan = network.entry([loss]).backward(loss).lower()
    first_output = regions[0][-1].index  # the first block's result, which the second reads: kept
    copies = [plan.nodes[i] for i in plan.recomputed]
    assert all(c.index >= plan.forward_count and c.scope[-1] == RECOMPUTED for c in copies)
    assert all(first_output not in c.operands or c.scope[-2] == "checkpoint of block (2)" for c in copies)
    interior = [n for region in regions for n in region[:-1] if not n.is_source]
    for copy in copies:  # each a node of a region's interior: the same op with the same attributes
        assert any(n.opcode == copy.opcode and n.attrs == copy.attrs for n in interior), copy
    # The values the backward reads inside each block (tanh's and exp's results) are recomputed once each.
    assert sorted(c.opcode for c in copies if c.opcode in ("Tanh", "Exp")) == ["Exp", "Exp", "Tanh", "Tanh"]
    assert len(copies) <= len(interior)


def test_the_readings_mark_the_region_and_the_copies():
    network, loss, w, v = two_blocks(True)
    spec = network.describe().splitlines()
    assert sum("[checkpoint of block]" in row for row in spec) == sum(
        1 for n in network.nodes() if "checkpoint of block" in n.scope
    )
    plan = network.entry([loss]).backward(loss).lower()
    text = plan.describe()
    rows = {int(line.split()[0]): line for line in text.splitlines() if line[:4].strip().isdigit()}
    for index in plan.recomputed:
        assert rows[index].endswith("[recomputed for the backward: checkpoint of block]") or rows[index].endswith(
            "[recomputed for the backward: checkpoint of block (2)]"
        )
    peak, node, retain_all = plan.without_remat
    assert text.splitlines()[-1] == (
        f"remat checkpoint: {len(plan.recomputed)} nodes recomputed; without: peak {peak} elements at node {node}, "
        f"retain-all {retain_all}"
    )
    assert text.splitlines()[-2].startswith(f"live volume: peak {plan.peak} elements")
    scopes = {entry["index"]: entry["scope"] for entry in nodes_json(plan.nodes)["nodes"]}
    for index in plan.recomputed:  # the graph groups a copy under its region, then as recomputed
        assert scopes[index][-1] == RECOMPUTED
        assert any(entry.startswith("checkpoint of block") for entry in scopes[index])


def test_the_elementwise_policy_recomputes_cheap_values_of_an_unmarked_model():
    network, loss, w, v = two_blocks(False)
    plain = network.entry([loss]).backward(loss).lower(remat=None)
    plan = network.entry([loss]).backward(loss).lower(remat="elementwise")
    assert plan.recomputed
    for index in plan.recomputed:
        node = plan.nodes[index]
        assert topos.ops.lookup(node.opcode).wgsl is not None and "elementwise]" in plan.describe().splitlines()[index]
    expected, _ = gradients(plain, network, [w, v])
    got, _ = gradients(plan, network, [w, v])
    for want, have in zip(expected, got):
        np.testing.assert_array_equal(have, want)
    assert plan.peak <= plain.peak
    # A forward-only entry has no backward to recompute for, whatever the policy.
    assert not network.entry([loss]).lower(remat="elementwise").recomputed


def test_bad_arguments():
    network, loss, w, v = two_blocks(True)
    with pytest.raises(ArgumentError, match="remat is one of"):
        network.entry([loss]).backward(loss).lower(remat="everything")
    with pytest.raises(ArgumentTypeError, match="takes a function"):
        topos.checkpoint(3)
    with pytest.raises(ArgumentTypeError, match="no recorded value"):
        topos.checkpoint(lambda a: a)(2.0)


def test_nested_and_numbers_passed_through():
    def build(tape):
        x = tape.input(np.linspace(-1.0, 1.0, 12).reshape(3, 4), name="x")
        w = tape.parameter(np.linspace(-0.5, 0.5, 16).reshape(4, 4), name="w")
        inner = topos.checkpoint(lambda h, s: topos.tanh(h @ w) * s)

        def outer(h):
            return topos.exp(inner(h, 0.5)) @ w

        y = topos.checkpoint(outer)(x)
        return topos.sum(y * y), w

    network, (loss, w) = Tape.record(build)
    nodes = network.nodes()
    assert any(n.scope[-2:] == ("checkpoint of outer", "checkpoint of <lambda>") for n in nodes)
    plan = network.entry([loss]).backward(loss).lower()
    plain = network.entry([loss]).backward(loss).lower(remat=None)
    assert plan.recomputed
    np.testing.assert_array_equal(
        plan.run(network.parameters()).gradient(w).numpy(), plain.run(network.parameters()).gradient(w).numpy()
    )


def test_xla_runs_the_remat_plan_as_the_interpreter_does():
    network, loss, w, v = two_blocks(True)
    plan = network.entry([loss]).backward(loss).lower()
    assert plan.recomputed
    text = plan.emit_stablehlo()
    assert text.count("stablehlo.tanh") == 4  # two in the forward, two recomputed
    parameters = network.parameters()
    numpy_outputs = plan.run(parameters).outputs()
    xla_outputs = plan.run(parameters, backend="xla").outputs()
    assert_outputs_agree(numpy_outputs, xla_outputs, "float64", "remat plan on xla")


def test_a_saved_network_keeps_its_regions(tmp_path):
    network, loss, w, v = two_blocks(True)
    path = tmp_path / "remat.json"
    network.save(path)
    loaded = topos.Network.load(path)
    symbol = loaded.symbol(loss.index)
    plan = network.entry([loss]).backward(loss).lower()
    again = loaded.entry([symbol]).backward(symbol).lower()
    assert again.recomputed == plan.recomputed and again.describe() == plan.describe()


def test_webgpu_runs_the_remat_plan_as_numpy_does():
    assert webgpu.available(), "no WebGPU adapter (lavapipe): apt-get install mesa-vulkan-drivers"
    network, loss, w, v = two_blocks(True, "float32")
    plan = network.entry([loss]).backward(loss).lower()
    parameters = network.parameters()
    run = plan.run(parameters, backend="webgpu")
    assert set(run.backends.values()) == {"webgpu"}  # the copies too run on the device
    # test_kernels_plans's rule: within 1e-5 of the float64 values' scale, or 8 times numpy's own error.
    exact = float64_shadow(plan, parameters, {})
    assert_near_exact(plan, run.outputs(), plan.run(parameters).outputs(), exact, "remat plan on webgpu")
