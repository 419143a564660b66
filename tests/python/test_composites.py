"""Composites (``topos.ops.composites``): each declares the nodes it records as a pattern, and
the one generic matcher finds them; no pass tests opcode names of its own."""

import os
import re

import numpy as np
import pytest

import topos
from topos.compiler.cost import node_cost
from topos.ops.composites import DIFFERENTIATED, FUSED, LAYER_NORM, LOG_SOFTMAX, MEAN, SOFTMAX, Composite, Matcher
from topos.ops.composites.pattern import Any, Op, Ref, readers_of

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PASSES = [
    "py/topos/model/composites.py",
    "py/topos/compiler/wgsl/patterns.py",
    "py/topos/compiler/kernels.py",
    "py/topos/compiler/gradient.py",
]


def recorded(function, shape=(3, 5)):
    tape = topos.Tape()
    x = tape.input(np.linspace(-1.0, 1.0, int(np.prod(shape))).reshape(shape), name="x")
    y = function(tape, x)
    return tape.seal().nodes(), y.node.index


def groups(nodes, composites):
    indices = range(len(nodes))
    return Matcher(nodes, readers_of(nodes, indices)).find(composites, indices)


@pytest.mark.parametrize(
    "composite, function",
    [
        (SOFTMAX, lambda t, x: topos.softmax(x)),
        (LOG_SOFTMAX, lambda t, x: topos.log_softmax(x)),
        (LAYER_NORM, lambda t, x: topos.layer_norm(x)),
        (MEAN, lambda t, x: topos.mean(x, 0)),
    ],
)
def test_the_matcher_finds_each_composite_in_what_its_function_records(composite, function):
    nodes, root = recorded(function)
    (group,) = groups(nodes, [composite]).values()
    assert group.composite is composite and group.kind == composite.name
    assert group.root == root and group.source == 0
    # Every node the function recorded is covered, except the source and the constants it reads.
    covered = set(group.covered)
    assert {i for i in range(1, root + 1) if nodes[i].opcode != "Leaf"} == covered


def test_a_softmax_over_another_axis_is_not_a_row_composite():
    nodes, _ = recorded(lambda t, x: topos.softmax(x, 0))
    assert groups(nodes, [SOFTMAX, LOG_SOFTMAX, LAYER_NORM]) == {}


def test_the_layer_norm_group_holds_its_eps_and_its_row_scale():
    nodes, _ = recorded(lambda t, x: topos.layer_norm(x, eps=1e-3))
    (group,) = groups(nodes, [LAYER_NORM]).values()
    assert group.constant == pytest.approx(1e-3)
    assert nodes[group.scale].opcode == "Rsqrt"


class Square(Composite):
    """A composite declared outside topos: ``x * x``, the pattern alone."""

    name = "square"
    pattern = Op("Mul", Any("x"), Ref("x"))


def test_a_new_composite_is_a_pattern_and_the_same_matcher_finds_it():
    square = Square()
    nodes, root = recorded(lambda t, x: topos.square(x))
    (group,) = groups(nodes, [square]).values()
    assert (group.root, group.covered, group.source) == (root, (root,), 0)
    # A name bound once must be the same node everywhere: x * y is no square.
    tape = topos.Tape()
    product = tape.input(np.ones(3)) * tape.input(np.ones(3))
    assert groups(tape.seal().nodes(), [square]) == {}
    assert product.node.opcode == "Mul"


def test_a_composite_whose_inner_value_is_read_elsewhere_is_not_found():
    def softmax_by_hand(also_read_inside):
        tape = topos.Tape()
        x = tape.input(np.ones((2, 3)))
        shifted = topos.exp(x - topos.stop_gradient(topos.max(x, -1, keepdims=True)))
        y = shifted / topos.sum(shifted, -1, keepdims=True)
        if also_read_inside:
            y = y + shifted
        return tape.seal().nodes()

    assert len(groups(softmax_by_hand(False), [SOFTMAX])) == 1
    assert groups(softmax_by_hand(True), [SOFTMAX]) == {}


def test_the_fused_cost_counts_the_covered_flops_and_moves_only_the_source_and_the_result():
    nodes, root = recorded(lambda t, x: topos.softmax(x), shape=(4, 8))
    (group,) = groups(nodes, [SOFTMAX]).values()
    flops, moved = SOFTMAX.cost(nodes, group)
    assert flops == sum(node_cost(nodes[i], [nodes[j] for j in nodes[i].operands])[0] for i in group.covered)
    assert flops > 0
    assert moved == 2 * 4 * 8 * 8  # float64 [4, 8] read once and written once


def test_the_passes_hold_no_opcode_tests_of_their_own():
    for path in PASSES:
        with open(os.path.join(ROOT, path), encoding="utf-8") as file:
            text = file.read()
        assert "is_op(" not in text, path
        assert "getattr(build" not in text, path
        assert not re.search(r'kind == "', text), path


def test_the_passes_look_for_the_composites_that_say_so():
    assert all(c.differentiated for c in DIFFERENTIATED)
    assert all(c.pattern is not None and c.kernel for c in FUSED)
    assert [c.name for c in DIFFERENTIATED] == ["layer_norm", "softmax", "log_softmax"]
