"""``topos.vmap`` of every primitive against a Python loop of unbatched recordings, from op_specs rows.

Each case is one call an op_specs row spells (every example of every row and composite, and
each plain elementwise row on its own spread, as test_torch_ops takes them). A batch of three
examples is drawn (the row's domains, each example from a generator of its own), recorded once
through ``vmap`` with the batch along axis 0, along each operand's last axis, and with one
operand shared by the batch (``in_axes`` None), and run; the loop records and runs each example
on a tape of its own. Both run the same numpy functions, but over other layouts (a batch along
the last axis is strided, a shared operand is broadcast), where numpy may take another loop
(SIMD over contiguous data, scalar over strided) and sums another order: values agree to a few
ulps of each result plus ``4 sqrt(n) u`` of the largest (``tolerances``), integers exactly.
Per-example gradients (``vmap`` of ``grad``) go through every derivative rule's nodes the same way.

A primitive has a batching rule or is in ``DECLINED``, one list with its reasons, and a call
that meets a stated decline must raise ``MissingRuleError`` with that reason: a new op cannot lack
a rule silently (``test_every_primitive_has_a_batching_rule_or_a_stated_decline``).
"""

from dataclasses import dataclass, replace

import numpy as np
import pytest
from op_specs import (
    NOT_DIFFERENTIABLE,
    OP_SPECS,
    derived_rows,
    example_arrays,
    example_rows,
    op_rng,
    public_name,
    recorded,
    recording,
    spread_sampler,
)
from tolerances import assert_close, elementwise_bound, scaled_bound

import topos
from topos import Tape, detach
from topos.errors import MissingRuleError
from topos.ops import Primitive, primitives

BATCH = 3

#: The primitives without a batching rule, and the calls a rule declines, each with the words its
#: ``MissingRuleError`` says. A source is never batched (vmap maps its placeholders to the caller's
#: values); a random draw of a batched key would be one Threefry stream an example, not written.
DECLINED = {
    "Parameter": "a source",
    "Input": "a source",
    "Leaf": "a source",
    "RandomBits": "a batched random key",
    "SplitKey": "a batched random key",
    "FoldIn": "a batched random key",
    "Uniform": "a batched random key",
    "RandomInt": "a batched random key",
    "BitField": "a batched random key",
}
#: Calls a rule declines for some operands only: the op, and the words its error says.
DECLINED_CALLS = {
    "SearchSorted": ("a batched sorted vector",),
}


@dataclass
class Case:
    name: str
    opcode: str
    draw: object  # draw(k) -> the operands of example k
    record: object  # record(tape, *values) -> one value


def derived_case(opcode):
    """A plain elementwise row on its spread, shaped as test_torch_ops takes it (a binary op's second
    operand [4], broadcast by recording)."""
    shapes = [(3, 4), (4,)][: len(OP_SPECS[opcode].operands)]

    def draw(k):
        rng = op_rng(f"{opcode} {k}")
        if OP_SPECS[opcode].ties:  # small integers, many ties
            return [rng.integers(-2, 3, shape).astype(float) for shape in shapes]
        return [spread_sampler(opcode, position)(rng, shape) for position, shape in enumerate(shapes)]

    return Case(public_name(opcode), opcode, draw, recording(opcode))


def example_case(key, example):
    # Each example of the batch is the row's draw under a name of its own; chosen values stay chosen.
    return Case(
        example.name,
        key,
        lambda k: example_arrays(key, replace(example, name=f"{example.name} {k}")),
        recorded(example),
    )


EXAMPLE_NAMES = {example.name for _, example in example_rows()}
CASES = [derived_case(op) for op in derived_rows({op for op in OP_SPECS if public_name(op) in EXAMPLE_NAMES})]
CASES += [example_case(key, example) for key, example in example_rows()]


def feed(tape, array):
    if array.dtype.kind in "iu":
        return tape.input(array, dtype=array.dtype.name)  # int32 indices, uint32 keys
    return tape.input(array)


def run(tape, outputs):
    network = tape.seal()
    result = network.forward(network.parameters(), {})
    return [result.of(detach(v)).numpy() for v in outputs]


def per_example(case, arrays, gradient):
    tape = Tape()
    values = [feed(tape, a) for a in arrays]
    return run(tape, gradient(case.record(tape, *values), values))


def batched(case, members, axes, gradient):
    """The batch through ``vmap``: operand i stacked along ``axes[i]`` (None: example 0's, shared)."""
    tape = Tape()
    values = []
    for position, axis in enumerate(axes):
        column = [m[position] for m in members]
        values.append(feed(tape, column[0] if axis is None else np.stack(column, axis=axis % (column[0].ndim + 1))))

    def one(*xs):
        return tuple(gradient(case.record(xs[0].tape, *xs), list(xs)))

    return run(tape, topos.vmap(one, in_axes=tuple(axes))(*values))


def value_only(out, values):
    return [out]


def per_example_gradient(out, values):
    """The gradient of sum(out * u) (u fixed, not all ones) with respect to each float operand."""
    u = np.linspace(0.5, 1.5, max(out.size, 1)).reshape(out.shape)
    floats = [v for v in values if v.dtype in ("float32", "float64")]
    return topos.grad(topos.sum(out * out.tape.leaf(u)), floats)


def variants(arity):
    """in_axes of each variant: the batch first, last, and each operand in turn shared."""
    shared = [tuple(None if i == j else 0 for i in range(arity)) for j in range(arity)] if arity > 1 else []
    return [("first", (0,) * arity), ("last", (-1,) * arity)] + [(f"shared {a.index(None)}", a) for a in shared]


def compare(case, members, axes, gradient):
    loops = [per_example(case, [m[i] if a is not None else members[0][i] for i, a in enumerate(axes)], gradient)
             for m in members]  # fmt: skip
    try:
        got = batched(case, members, axes, gradient)
    except MissingRuleError as error:
        stated = [f"{op} has no batching rule (vmap)" + (f": {why}" if why else "") for op, why in DECLINED.items()]
        stated += [
            f"{op} has no batching rule (vmap): {why}" for op, reasons in DECLINED_CALLS.items() for why in reasons
        ]
        assert any(words in str(error) for words in stated), str(error)
        return
    for position, value in enumerate(got):
        expected = np.stack([loop[position] for loop in loops])
        if expected.dtype.kind in "iu":
            np.testing.assert_array_equal(value, expected, err_msg=f"{case.name} output {position}")
            continue
        terms = max(sum(a.size for a in members[0]), 1)
        bound = elementwise_bound(expected, expected.dtype, ulps=4).plus(scaled_bound(expected, expected.dtype, terms))
        assert_close(value, expected, bound, f"{case.name} output {position}")


@pytest.mark.parametrize(
    "case, axes",
    [pytest.param(c, a, id=f"{c.name}-{v}") for c in CASES for v, a in variants(len(c.draw(0)))],
)
def test_vmap_equals_a_loop_of_examples(case, axes):
    members = [case.draw(k) for k in range(BATCH)]
    if any(m.ndim == 0 and a is not None and a < 0 for m, a in zip(members[0], axes)):
        axes = tuple(0 if a is not None else None for a in axes)  # a rank-0 example's last axis is its only one
    compare(case, members, axes, value_only)


def differentiable(case):
    return case.opcode not in NOT_DIFFERENTIABLE and any(a.dtype.kind == "f" for a in case.draw(0))


@pytest.mark.parametrize(
    "case, axes",
    [
        pytest.param(c, a, id=f"{c.name}-{v}")
        for c in CASES
        if differentiable(c)
        for v, a in variants(len(c.draw(0)))[:1] + variants(len(c.draw(0)))[2:3]
    ],
)
def test_vmap_of_grad_equals_a_loop_of_per_example_gradients(case, axes):
    members = [case.draw(k) for k in range(BATCH)]
    compare(case, members, axes, per_example_gradient)


def test_every_primitive_has_a_batching_rule_or_a_stated_decline():
    registered = primitives()
    sources = {name for name, p in registered.items() if p.is_source}
    without = sorted(name for name, p in registered.items() if type(p).batch is Primitive.batch and name not in sources)
    assert [name for name in without if name not in DECLINED] == [], "primitives with no batching rule nor a reason"
    assert sources <= set(DECLINED)
    for name, why in DECLINED.items():
        if name in sources or name not in registered:
            continue
        words = rf"{name} has no batching rule \(vmap\)" + (f": {why}" if why else "$")
        with pytest.raises(MissingRuleError, match=words):
            registered[name].batch(None, [None], [0], {})


def test_every_primitive_with_a_rule_is_exercised_by_a_case():
    recorded_ops = set()
    for case in CASES:
        tape = Tape()
        case.record(tape, *[feed(tape, a) for a in case.draw(0)])
        recorded_ops |= {node.opcode for node in tape.nodes()}
    missing = sorted(set(primitives()) - recorded_ops - set(DECLINED))
    assert missing == [], f"no op_specs case records these, so their batching rules are untested: {missing}"
