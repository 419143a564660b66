"""The checklist of docs/extending.md ("Adding an op inside topos"), as a test.

Every primitive topos registers itself (its class lives in the ``topos`` package) has:

1. every rule ``REQUIRED_RULES`` asks for (``topos.compiler.missing_rules``);
2. a row in the tests' op spec table (``tests/python/op_specs.py``), with one domain an operand;
3. docs: its public spelling named where its row says (docs/api.md, or a guide page for the
   operators), or its row saying why it has none (a derivative only the engine records);
4. a kernel decision: a WGSL kernel family (``kernel``), or its row saying why WebGPU declines it.

A primitive registered from outside (docs/extending.md's SmoothRelu, a test's) is the user's, and
the checklist does not hold it.
"""

from pathlib import Path

import numpy as np
import pytest
from op_specs import OP_SPECS, REAL, OpSpec

from topos.compiler import Primitive, missing_rules, primitives, register, unregister

DOCS = Path(__file__).resolve().parents[2] / "docs"
SPEC_TABLE = "tests/python/op_specs.py"


def docs_page(page):
    return (DOCS / page).read_text(encoding="utf-8")


def gaps(primitive, specs=OP_SPECS):
    """What ``primitive`` lacks of the checklist, one sentence an item (empty when it has everything)."""
    name = primitive.name
    found = []
    rules = missing_rules(primitive)
    if rules:
        found.append(f"rules {', '.join(rules)} (REQUIRED_RULES in py/topos/ops/registry.py)")
    row = specs.get(name)
    if row is None:
        found.append(f"a row in the op spec table ({SPEC_TABLE}, OP_SPECS[{name!r}])")
        return found
    if primitive.arity is not None and len(row.operands) != primitive.arity and not primitive.is_source:
        found.append(
            f"one domain an operand in OP_SPECS[{name!r}] (it has {len(row.operands)}, arity {primitive.arity})"
        )
    if row.docs is None and not row.internal:
        found.append(f"docs: OP_SPECS[{name!r}] names neither where the docs spell it nor why it is internal")
    elif row.docs is not None and not row.docs.found_in(docs_page(row.docs.page)):
        found.append(f"docs: docs/{row.docs.page} does not name it as OP_SPECS[{name!r}] says ({row.docs})")
    if primitive.kernel is None and not row.kernel_declined:
        found.append(
            f"a kernel decision: no kernel family, and OP_SPECS[{name!r}] gives no reason for WebGPU to decline it"
        )
    elif primitive.kernel is not None and row.kernel_declined:
        found.append(
            f"a kernel decision: it runs the {primitive.kernel!r} kernel, but OP_SPECS[{name!r}] says WebGPU declines it"
        )
    return found


def inside_topos():
    return {name: p for name, p in primitives().items() if type(p).__module__.startswith("topos.")}


def checklist_failures():
    return {name: found for name, p in sorted(inside_topos().items()) if (found := gaps(p))}


def test_every_primitive_inside_topos_has_every_item_of_the_checklist():
    failures = checklist_failures()
    assert not failures, "primitives missing items of docs/extending.md's checklist:\n" + "\n".join(
        f"{name} lacks {'; '.join(found)}" for name, found in failures.items()
    )


def test_the_spec_table_names_no_primitive_topos_does_not_register():
    assert sorted(set(OP_SPECS) - set(inside_topos())) == []


def test_the_checklist_sees_every_built_in_primitive():
    # A selection that found nothing would pass the checklist without checking anything.
    assert {"Add", "Log", "MatMul", "GeluGrad", "ScatterAdd", "Parameter"} <= set(inside_topos())


# The checklist fails, naming the item, for a primitive that lacks each one ----------------------


class Dummy(Primitive):
    """An elementwise op with every item of the checklist; each test below takes one away."""

    name = "ChecklistDummy"
    arity = 1
    kernel = "elementwise"
    wgsl = "x"

    def infer(self, metas, attrs):
        return metas[0]

    def forward(self, inputs, attrs):
        return np.array(inputs[0])

    def vjp(self, e, g, operands, out, attrs):
        return [g]

    def stablehlo(self, ctx, node):
        return ctx.operands(node)[0]


Dummy.__module__ = "topos.ops.checklist_dummy"  # as if written inside topos
FULL_ROW = OpSpec((REAL,), docs=OP_SPECS["Exp"].docs)


def without_vjp():
    class NoVjp(Dummy):
        vjp = Primitive.vjp

    return NoVjp


def without_kernel():
    class NoKernel(Dummy):
        kernel = None

    return NoKernel


@pytest.fixture
def registered(monkeypatch):
    """Register ``cls`` as ChecklistDummy with ``row`` as its spec-table row (None: no row)."""

    def using(cls, row):
        cls.__module__ = Dummy.__module__
        register(cls)
        if row is not None:
            monkeypatch.setitem(OP_SPECS, Dummy.name, row)
        return cls

    yield using
    unregister(Dummy.name)


def checklist_message():
    with pytest.raises(AssertionError) as failure:
        test_every_primitive_inside_topos_has_every_item_of_the_checklist()
    return str(failure.value)


def test_a_primitive_with_every_item_passes(registered):
    registered(Dummy, FULL_ROW)
    assert "ChecklistDummy" not in checklist_failures()


def test_a_missing_rule_is_named(registered):
    registered(without_vjp(), FULL_ROW)
    assert "ChecklistDummy lacks rules vjp (REQUIRED_RULES in py/topos/ops/registry.py)" in checklist_message()


def test_a_missing_spec_table_row_is_named(registered):
    registered(Dummy, None)
    assert (
        "ChecklistDummy lacks a row in the op spec table (tests/python/op_specs.py, OP_SPECS['ChecklistDummy'])"
        in checklist_message()
    )


def test_missing_docs_are_named(registered):
    registered(Dummy, OpSpec((REAL,)))
    assert "ChecklistDummy lacks docs: OP_SPECS['ChecklistDummy'] names neither" in checklist_message()


def test_docs_that_do_not_name_the_op_are_named(registered):
    from op_specs import Api

    registered(Dummy, OpSpec((REAL,), docs=Api("topos.checklist_dummy")))
    assert "ChecklistDummy lacks docs: docs/api.md does not name it" in checklist_message()


def test_an_internal_op_needs_no_docs(registered):
    registered(Dummy, OpSpec((REAL,), internal="recorded only by the engine"))
    assert "ChecklistDummy" not in checklist_failures()


def test_a_missing_kernel_decision_is_named(registered):
    registered(without_kernel(), FULL_ROW)
    assert "ChecklistDummy lacks a kernel decision: no kernel family" in checklist_message()


def test_a_declined_kernel_with_its_reason_passes(registered):
    registered(without_kernel(), OpSpec((REAL,), docs=FULL_ROW.docs, kernel_declined="no portable WGSL for it"))
    assert "ChecklistDummy" not in checklist_failures()


def test_every_missing_item_is_named_at_once(registered):
    class Bare(without_kernel()):
        stablehlo = Primitive.stablehlo

    registered(Bare, OpSpec((REAL,)))
    message = checklist_message()
    assert "rules stablehlo" in message and "docs:" in message and "a kernel decision" in message
