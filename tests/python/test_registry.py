"""The op registry: every registered primitive declares every rule, and half an op fails loudly."""

import pytest
from op_specs import NOT_DIFFERENTIABLE

from topos.compiler.kernels import has_kernel_rule
from topos.ops import Primitive, lookup, missing_rules, primitives, register, unregister
from topos.ops.registry import REQUIRED_RULES

# The rules every primitive has had from the start. REQUIRED_RULES may only grow beyond these.
CORE_RULES = ("infer", "forward", "vjp")

# Ops with no derivative are listed on purpose in op_specs.NOT_DIFFERENTIABLE (as HIPS autograd lists
# its non-differentiable ops): an op that forgets its vjp must not pass by quietly declaring itself
# non-differentiable.
SOURCES = {"Parameter", "Input", "Leaf"}

# Ops the WebGPU backend declines, each for a reason (the numpy interpreter runs them there), listed on
# purpose as the non-differentiable ones are: an op that forgets its kernel rule must not pass quietly.
# (ScatterAdd was one, for its float atomics, until kernels/scatter.wgsl wrote it as a gather.)
# Lu (topos.ops.linalg_factor): its pivot search and row swaps are sequential; Qr and Svd
# (topos.ops.linalg_spectral): no Householder or Jacobi SVD kernel yet.
DECLINED_ON_WEBGPU = {"Lu", "Qr", "Svd", "Scan", "Cond", "While"}  # loops and branches: bodies run on the host


def rules_missing(primitive, rules):
    return [rule for rule in missing_rules(primitive) if rule in rules]


def test_required_rules_include_the_core_rules():
    assert set(CORE_RULES) <= set(REQUIRED_RULES)


@pytest.mark.parametrize("name", sorted(primitives()))
def test_primitive_declares_the_core_rules(name):
    assert rules_missing(lookup(name), CORE_RULES) == []


@pytest.mark.parametrize("name", sorted(primitives()))
def test_primitive_declares_every_required_rule(name):
    """Reads REQUIRED_RULES, so it tightens as rules are added to the registry."""
    assert missing_rules(lookup(name)) == []


def test_non_differentiable_primitives_are_exactly_the_listed_ones():
    declared = {name for name, p in primitives().items() if not p.differentiable}
    assert declared == NOT_DIFFERENTIABLE


def test_sources_are_exactly_parameter_input_and_leaf():
    assert {name for name, p in primitives().items() if p.is_source} == SOURCES
    assert all(lookup(name).arity == 0 for name in SOURCES)


@pytest.mark.parametrize("name", sorted(primitives()))
def test_primitive_is_registered_under_its_own_name_with_a_kernel_choice(name):
    primitive = lookup(name)
    assert primitive.name == name
    assert primitive.kernel is None or isinstance(primitive.kernel, str)
    assert primitive.arity is None or primitive.arity >= 0


@pytest.mark.parametrize("name", sorted(set(primitives()) - SOURCES))
def test_primitive_has_a_kernel_rule_or_is_listed_as_declined_on_webgpu(name):
    """A WGSL expression or a ``wgsl_launch`` of its own, in its block, for a kernel family it names."""
    primitive = lookup(name)
    if name in DECLINED_ON_WEBGPU:
        assert primitive.kernel is None and not has_kernel_rule(primitive)
    else:
        assert primitive.kernel is not None and has_kernel_rule(primitive), f"{name} has no kernel rule"
        assert primitive.kernel != "elementwise" or primitive.wgsl is not None, f"{name} has no WGSL expression"


def test_missing_rules_names_what_a_half_added_op_lacks():
    class HalfAdded(Primitive):
        name = "HalfAdded"
        arity = 1

        def infer(self, metas, attrs):
            return metas[0]

    missing = missing_rules(HalfAdded())
    assert "forward" in missing and "vjp" in missing
    assert set(missing) == set(REQUIRED_RULES) - {"infer"}


def test_a_non_differentiable_op_needs_no_vjp():
    class Flag(Primitive):
        name = "Flag"
        arity = 1
        differentiable = False

        def infer(self, metas, attrs):
            return metas[0]

        def forward(self, inputs, attrs):
            return inputs[0]

    assert "vjp" not in missing_rules(Flag())


def test_register_refuses_a_second_op_of_one_name():
    with pytest.raises(ValueError, match="'Add' is already registered"):

        @register
        class Add(Primitive):
            name = "Add"


def test_register_and_unregister_a_user_op():
    @register
    class Twice(Primitive):
        name = "TestTwice"
        arity = 1

    try:
        assert isinstance(lookup("TestTwice"), Twice)
    finally:
        unregister("TestTwice")
    with pytest.raises(KeyError, match="TestTwice"):
        lookup("TestTwice")


def test_lookup_of_an_unknown_op_names_it():
    with pytest.raises(KeyError, match="no primitive named 'Frobnicate'"):
        lookup("Frobnicate")


def test_a_missing_derivative_rule_fails_loudly():
    with pytest.raises(NotImplementedError, match="has no derivative rule"):
        Primitive().vjp(None, None, [], None, {})
