"""Node patterns: the shape of the graph a composite records, as data, and the one matcher that finds it.

A composite declares the nodes its recording function writes as a small tree:

- ``Op(opcode, *operands, name=None, where=None)`` matches a node of that opcode whose
  operands match ``operands`` in order; ``where(matcher, index)`` is a further
  condition on the node (its attributes, a constant operand), and ``name`` binds it.
- ``Any(name)`` matches any node and binds it; where the same name appears again
  (an ``Any`` or a ``Ref``), it must be the same node.
- ``Ref(name)`` matches only the node bound to ``name`` earlier in the walk (the walk
  is depth-first, operands in order, so a ``Ref`` comes after what it names).
- ``Constant(name=None)`` matches a leaf of one repeated float value, or a broadcast
  or reshape of one, and binds its value.

An ``Op`` node is covered by the match (the fused kernel computes it); an ``Any`` or
a ``Ref`` is not (it is read), and a ``Constant`` is covered when it is a broadcast.
Matching reads node opcodes and attributes only; it never changes the nodes.
"""

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np


@dataclass(frozen=True, init=False)
class Op:
    """A node of ``opcode`` whose operands match ``operands``, and for which ``where(matcher, index)`` holds."""

    opcode: str
    operands: tuple
    name: str = None
    where: object = None

    def __init__(self, opcode, *operands, name=None, where=None):
        object.__setattr__(self, "opcode", opcode)
        object.__setattr__(self, "operands", operands)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "where", where)


@dataclass(frozen=True)
class Any:
    """Any node, bound to ``name`` (the same node wherever the name appears)."""

    name: str


@dataclass(frozen=True)
class Ref:
    """The node bound to ``name`` earlier in the walk."""

    name: str


@dataclass(frozen=True)
class Constant:
    """A node of one repeated float value (a leaf, or a broadcast or reshape of one); its value is bound."""

    name: str = None


class Match(NamedTuple):
    """What one pattern found at ``root``: the ``covered`` nodes (sorted) and the ``bound`` names."""

    root: int
    covered: tuple
    bound: dict


@dataclass(frozen=True)
class Group:
    """A composite found in a graph: its ``composite``, its ``root`` (the node whose value it
    produces), the ``covered`` nodes (root included), the ``source`` node it reads, a ``constant``
    (the layer norm's eps, a mean's 1 / divisor) and, for a layer norm, its ``scale`` node
    (``rsqrt(var + eps)``, a row each)."""

    composite: object
    root: int
    covered: tuple
    source: int
    constant: float = 0.0
    scale: int = None
    #: the nodes (and constants) the pattern named, by name
    bound: dict = field(default=None, compare=False)

    @property
    def kind(self):
        """The composite's name (``"softmax"``): the label of its fused launch."""
        return self.composite.name

    def vjp(self, e, g, values):
        """The closed-form derivative: ``(source, cotangent)`` from the root's cotangent ``g``."""
        return self.source, self.composite.vjp(e, g, self, values)


# Conditions a pattern's ``where`` may name -------------------------------------------------


def last_axis_keepdims(matcher, index):
    """A reduction over its operand's last axis alone, keeping it (``axes=(rank - 1,)``, ``keepdims``)."""
    node = matcher.nodes[index]
    rank = len(matcher.nodes[node.operands[0]].shape) if node.operands else 0
    return rank >= 1 and node.attrs.get("axes") == (rank - 1,) and node.attrs.get("keepdims") is True


def divides_by_row_length(matcher, index):
    """``total / n`` where n is the length of the last axis that ``total`` summed."""
    total, divisor = matcher.nodes[index].operands
    terms = matcher.nodes[total].operands[0]
    return matcher.constant(divisor) == float(matcher.nodes[terms].shape[-1])


def divides_by_nonzero(matcher, index):
    """``x / c`` for a constant c that is not zero."""
    return bool(matcher.constant(matcher.nodes[index].operands[1]))


class Matcher:
    """Finds patterns among ``nodes``: ``accepts(index)`` says whether a node may be covered by one
    (the WebGPU selection accepts the nodes the device runs), ``readers`` lists who reads each node,
    and ``outputs`` are values someone outside reads (which therefore cannot be inner ones)."""

    def __init__(self, nodes, readers, outputs=(), accepts=None):
        self.nodes = nodes
        self.readers = readers
        self.outputs = set(outputs)
        self.accepts = accepts
        self._constants = {}

    def constant(self, index):
        """The value of a constant node (a leaf of one repeated value, or a broadcast or reshape of one),
        or None; worked out once a node (nodes never change)."""
        if index not in self._constants:
            self._constants[index] = constant_value(self.nodes, index)
        return self._constants[index]

    def match(self, pattern, root):
        """The ``Match`` of ``pattern`` with its top at node ``root``, or None."""
        bound = {}
        covered = []
        if not self._walk(pattern, root, bound, covered):
            return None
        return Match(root, tuple(sorted(covered)), bound)

    def _walk(self, pattern, index, bound, covered):
        kind = type(pattern)
        if kind is Ref:
            return bound.get(pattern.name) == index
        if kind is Any:
            return bound.setdefault(pattern.name, index) == index
        node = self.nodes[index]
        if kind is Constant:
            value = self.constant(index)
            if value is None:
                return False
            if pattern.name is not None:
                bound[pattern.name] = value
            if node.opcode == "Broadcast":
                covered.append(index)
            return True
        if node.opcode != pattern.opcode or len(node.operands) != len(pattern.operands):
            return False
        if self.accepts is not None and not self.accepts(index):
            return False
        for operand_pattern, operand in zip(pattern.operands, node.operands):
            if not self._walk(operand_pattern, operand, bound, covered):
                return False
        if pattern.where is not None and not pattern.where(self, index):
            return False
        if pattern.name is not None and bound.setdefault(pattern.name, index) != index:
            return False
        covered.append(index)
        return True

    def private(self, covered, root):
        """True when no node outside ``covered`` reads an inner node, and none is an output."""
        inner = set(covered) - {root}
        return all(i not in self.outputs and set(self.readers.get(i, ())) <= set(covered) for i in inner)

    def find(self, composites, order):
        """The groups of ``composites`` found, trying each composite's pattern at the roots in
        ``order``, keyed by the first node each covers; a node belongs to at most one group."""
        taken = set()
        groups = {}
        for composite in composites:
            pattern = composite.pattern
            for root in order:
                # Most nodes fail at the top: a quick look at the opcode spares the walk.
                if self.nodes[root].opcode != pattern.opcode:
                    continue
                found = self.match(pattern, root)
                if found is None or taken & set(found.covered) or not self.private(found.covered, root):
                    continue
                taken.update(found.covered)
                groups[min(found.covered)] = composite.group(found)
        return groups


def constant_value(nodes, index):
    """The value of node ``index`` if it is a leaf of one repeated float value, or a broadcast or
    reshape of one; None otherwise."""
    node = nodes[index]
    while node.opcode in ("Broadcast", "Reshape"):
        node = nodes[node.operands[0]]
    if node.opcode != "Leaf" or node.dtype not in ("float32", "float64") or node.payload is None:
        return None
    payload = np.asarray(node.payload)
    if payload.size == 0:
        return None
    first = payload.reshape(-1)[0]
    return float(first) if np.all(payload == first) else None


def readers_of(nodes, indices):
    """Node index -> the indices among ``indices`` that read it."""
    readers = {index: [] for index in indices}
    for index in indices:
        for operand in nodes[index].operands:
            readers.setdefault(operand, []).append(index)
    return readers
