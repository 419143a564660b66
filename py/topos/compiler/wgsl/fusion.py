"""Elementwise chains: consecutive elementwise nodes computed by one generated launch.

A plan's elementwise nodes each read their operands and write a value. Where a
node's value is read by elementwise nodes of one chain alone, is no output of
the plan, and has the chain's shape, the chain can compute it itself, once, in
registers: the chain becomes one launch of the elementwise template whose body
holds a ``let`` for each absorbed node and whose expression is the last node's
(``kernels/elementwise.wgsl``: up to seven operands). The chain's operands are
the values its nodes read from outside it, each read once per element.

Each node's expression is its primitive's own ``wgsl`` text with its operands
renamed, so a fused chain computes what its nodes compute one launch at a time,
in float32 throughout (a driver may contract a product and a sum into one fused
multiply-add, which rounds once instead of twice: within the kernels' tolerance).

Finding chains reads the plan only; it never changes it.
"""

import re
from dataclasses import dataclass

from ...ops import Primitive, lookup
from .launch import OPERAND_NAMES

#: The most operands a fused launch reads (the template's operand slots).
MAX_FUSED_OPERANDS = len(OPERAND_NAMES)
_NAME = re.compile(r"\b[xyz]\b")


@dataclass(frozen=True)
class Chain:
    """Elementwise nodes computed by one launch: ``nodes`` in schedule order (the last, ``root``,
    is the value the launch writes; ``extra``, if any, a second value it writes), ``operands``
    the nodes they read from outside the chain."""

    nodes: tuple
    operands: tuple
    #: a node of the chain whose value is read outside it too: the launch writes it as a second output
    extra: object = None

    @property
    def root(self):
        return self.nodes[-1]

    def program(self, plan_nodes):
        """``(body, expression)``: the let statements of the absorbed nodes and the root's expression,
        over the template's operand names (operand ``k`` of the chain is ``OPERAND_NAMES[k]``)."""
        names = {node: OPERAND_NAMES[k] for k, node in enumerate(self.operands)}

        def expression(index):
            node = plan_nodes[index]
            return renamed(lookup(node.opcode).wgsl, [names[j] for j in node.operands])

        lets = []
        for position, index in enumerate(self.nodes[:-1]):
            lets.append(f"let t{position} = {expression(index)};")
            names[index] = f"t{position}"
            if index == self.extra:
                lets.append(f"extra[i] = t{position};")
        return " ".join(lets), expression(self.root)


def renamed(expression, operands):
    """An op's ``wgsl`` expression over x, y, z with those names replaced by ``operands``, all at once."""
    return _NAME.sub(lambda match: operands["xyz".index(match.group(0))], expression)


def is_plain_elementwise(node):
    """A node the elementwise template computes from its primitive's ``wgsl`` expression alone."""
    primitive = lookup(node.opcode)
    return (
        primitive.kernel == "elementwise"
        and primitive.wgsl is not None
        and type(primitive).wgsl_launch is Primitive.wgsl_launch
    )


def find_chains(nodes, schedule, outputs, on_device, excluded=()):
    """The fused chains of a plan, keyed by root: only chains of two nodes or more.

    ``on_device(index)`` says whether the device runs a node; ``excluded`` holds nodes another
    fusion already covers. Walking the schedule from its end, each elementwise node not yet
    absorbed roots a chain, which absorbs its operands while they qualify (read only by the
    chain's nodes; no output; the chain's shape) and the chain's outside operands stay within
    ``MAX_FUSED_OPERANDS``. One node read outside the chain too (or an output) may join as the
    chain's second output (``Chain.extra``) when every outside reader comes after the chain's
    root; the chain then reads one operand fewer.
    """
    readers = {}
    for index in schedule:
        for operand in nodes[index].operands:
            readers.setdefault(operand, set()).add(index)
    position = {index: place for place, index in enumerate(schedule)}
    outputs = set(outputs)
    excluded = set(excluded)

    def candidate(index):
        node = nodes[index]
        return on_device(index) and index not in excluded and is_plain_elementwise(node)

    absorbed = set()
    chains = {}
    for root in reversed(schedule):
        if root in absorbed or not candidate(root):
            continue
        growing = _Growing(nodes, readers, position, outputs, candidate, root)
        while growing.grow(as_extra=False) or (growing.extra is None and growing.grow(as_extra=True)):
            pass
        members = growing.members
        if len(members) > 1:
            absorbed |= members - {root}
            order = tuple(index for index in schedule if index in members)
            # The operands in the order the chain's nodes first read them: x, y, z, ... read left to right.
            reads = [j for index in order for j in nodes[index].operands if j not in members]
            chains[root] = Chain(order, tuple(dict.fromkeys(reads)), growing.extra)
    return chains


class _Growing:
    """A chain being grown from its root: its members, its outside operands, its extra output."""

    def __init__(self, nodes, readers, position, outputs, candidate, root):
        self.nodes, self.readers, self.position, self.outputs = nodes, readers, position, outputs
        self.candidate = candidate
        self.root = root
        self.members = {root}
        self.operands = list(dict.fromkeys(nodes[root].operands))
        self.extra = None

    def inside(self, operand):
        """Read by the chain's nodes alone, and no output."""
        return operand not in self.outputs and self.readers.get(operand, set()) <= self.members

    def later(self, operand):
        """Every reader outside the chain comes after its root (so the launch has written the value)."""
        outside = self.readers.get(operand, set()) - self.members
        return all(self.position[reader] > self.position[self.root] for reader in outside)

    def grow(self, as_extra):
        """Absorb one operand (``as_extra``: one read outside too, as the second output); True if one was."""
        shape = self.nodes[self.root].shape
        room = MAX_FUSED_OPERANDS - (1 if as_extra or self.extra is not None else 0)
        for operand in self.operands:
            node = self.nodes[operand]
            if node.shape != shape or not self.candidate(operand):
                continue
            if as_extra == self.inside(operand) or (as_extra and not self.later(operand)):
                continue
            widened = [j for j in self.operands if j != operand] + [
                j for j in node.operands if j not in self.operands and j not in self.members
            ]
            if len(widened) > room:
                continue
            self.members.add(operand)
            self.operands = list(dict.fromkeys(widened))
            if as_extra:
                self.extra = operand
            return True
        return False
