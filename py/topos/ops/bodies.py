"""Walking a body's nodes through an emitter: how a primitive that holds a body runs and differentiates it.

A transformation's function is recorded once (``topos.model.bodies.trace``); the
primitive that holds it (a loop, a custom derivative) holds its nodes, objects
with ``index``, ``opcode``, ``operands``, ``attrs``, ``shape``, ``dtype`` and
``payload`` (``topos.model.nodes.Node``; this layer reads them and imports
nothing above). ``inline`` applies them through any emitter: the eager one runs
the body on numpy arrays, the recording's and the compiler's append its nodes
to a tape, so one walk is the body's forward, its inlined copy and the place a
derivative rule re-records it.

``Region`` is a body as a node's attribute (``attributes.body`` its kind, which loading a
network checks; the checkpoint writes its nodes nested in the node's entry, the spec prints
them under the node's row): a ``Scan`` holds its step so, and a custom derivative its rules.
``body_cost`` sums the costs of one run of it.
"""

from dataclasses import dataclass

import numpy as np

from ..errors import ArgumentError
from .registry import Meta, lookup


def inline(e, nodes, sources):
    """Every node's handle after applying ``nodes`` through the emitter ``e``; a list, one a node.

    ``sources`` maps node indices to the handles that stand for them (the body's
    arguments and captured values); any other source node must be a ``Leaf``, which
    becomes a constant of its payload (``e.constant``). Nodes no output reads are
    applied too: a caller that wants fewer passes ``nodes`` cut to what it needs.
    """
    handles = []
    for node in nodes:
        if node.index in sources:
            handles.append(sources[node.index])
        elif not node.operands and node.opcode in ("Parameter", "Input", "Leaf"):
            if node.opcode != "Leaf":
                raise ArgumentError(f"a body's {node.opcode} node {node.index} has no value given for it")
            handles.append(e.constant(node.shape, node.dtype, node.payload))
        else:
            handles.append(e.apply(node.opcode, [handles[j] for j in node.operands], **node.attrs))
    return handles


def read_by(nodes, outputs):
    """A flag a node: whether ``outputs`` read it, directly or not (the outputs themselves included).
    What a body's run computes: its forward here, a plan's step schedule, its StableHLO region."""
    wanted = bytearray(len(nodes))
    for index in outputs:
        wanted[index] = 1
    for node in reversed(nodes):
        if wanted[node.index]:
            for j in node.operands:
                wanted[j] = 1
    return wanted


def evaluate(nodes, sources, outputs):
    """The body run on numpy arrays: ``sources`` maps source indices to arrays; the arrays of ``outputs``.

    Only the nodes some output reads are computed (a loop body's forward, every iteration)."""
    wanted = read_by(nodes, outputs)
    values = [None] * len(nodes)
    for node in nodes:
        if not wanted[node.index]:
            continue
        if node.index in sources:
            values[node.index] = sources[node.index]
        elif not node.operands and node.opcode == "Leaf":
            values[node.index] = node.payload
        elif not node.operands and node.opcode in ("Parameter", "Input"):
            raise ArgumentError(f"a body's {node.opcode} node {node.index} has no value given for it")
        else:
            values[node.index] = np.asarray(lookup(node.opcode).forward([values[j] for j in node.operands], node.attrs))
    return [values[i] for i in outputs]


@dataclass(frozen=True, eq=False)
class Region:
    """A body as the attribute of the node that holds it (a loop's step, a custom derivative's rule).

    Immutable: ``nodes`` (objects as ``inline`` reads them, numbered from 0 in the body),
    ``arguments`` (the indices of the placeholders that stand for the function's
    arguments, in order), ``captured`` (those of what it closed over, in the order the
    node's captured operands come) and ``outputs`` (what it returns, flattened; an index
    may repeat, or name a placeholder). StableHLO's word for a while loop's body is a
    region, and a ``Scan`` lowers its body into one. Its value in the spec is
    ``<12 nodes>``; the spec reading prints the nodes once, under the node that holds it.
    Two regions are the same attribute only when they are the same object.
    """

    nodes: tuple
    arguments: tuple
    captured: tuple
    outputs: tuple

    def __post_init__(self):
        for name in ("nodes", "arguments", "captured", "outputs"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    def __repr__(self):
        return f"<{len(self.nodes)} node{'' if len(self.nodes) == 1 else 's'}>"

    def metas(self, indices):
        """The ``Meta`` of each node in ``indices``."""
        return [Meta(self.nodes[i].shape, self.nodes[i].dtype) for i in indices]

    def with_outputs(self, outputs):
        """The same nodes returning ``outputs`` instead (a loop's carries kept at every step, say)."""
        return Region(self.nodes, self.arguments, self.captured, outputs)

    def problem(self):
        """What makes this region malformed (a phrase), or None: loading a network asks before it runs one."""
        count = len(self.nodes)
        for position, node in enumerate(self.nodes):
            if node.index != position or any(not (0 <= j < position) for j in node.operands):
                return f"its node {position} is numbered or reads out of order"
        placeholders = self.arguments + self.captured
        if len(set(placeholders)) != len(placeholders):
            return "a placeholder is named twice"
        for index in placeholders:
            if not (0 <= index < count) or self.nodes[index].opcode != "Input":
                return f"its placeholder {index} is not one of its Input nodes"
        for node in self.nodes:
            if node.opcode in ("Input", "Parameter") and node.index not in placeholders:
                return f"its {node.opcode} node {node.index} is no placeholder (a body reads only what it is given)"
        if any(not (0 <= index < count) for index in self.outputs):
            return "an output names no node of it"
        return None


def body_cost(region, cost_of):
    """``(flops, bytes)`` of one run of the nodes the outputs read: ``cost_of(node)`` each, summed."""
    wanted = bytearray(len(region.nodes))
    for index in region.outputs:
        wanted[index] = 1
    flops = moved = 0
    for node in reversed(region.nodes):
        if wanted[node.index]:
            for j in node.operands:
                wanted[j] = 1
            if node.operands:
                f, b = cost_of(node)
                flops, moved = flops + f, moved + b
    return flops, moved
