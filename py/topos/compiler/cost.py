"""The cost of a plan: floating-point operations and bytes moved, per node and in total.

The model is deliberately simple, so that its numbers can be read:

- FLOPs: each primitive counts its own, beside its other rules (``Primitive.cost``):
  by default ``element_flops`` a result element, which is 1 for elementwise
  arithmetic, comparisons and selections (a transcendental counts one too), the
  steps of its formula for an op that fuses several (``Gelu``, ``GeluGrad``, the
  row derivatives), and 0 for an op that only moves elements; an op whose count
  is not per result element (``MatMul``, the reductions, ``ScatterAdd``, the
  sources) writes its own ``cost``, its count stated in its block.
- Bytes moved: each operand read once and the result written once, at the
  dtype's width (``bytes_moved``), unless the primitive says otherwise: sources
  move nothing (their values are already resident), and ``Reshape`` and
  ``StopGradient`` move nothing (they relabel memory).

A primitive registered from outside may define ``cost(self, operand_metas,
meta, attrs)`` returning ``(flops, bytes)`` the same way, or set
``element_flops``.
"""

from ..ops import lookup
from ..ops.registry import Meta
from ..text import plural


def node_cost(node, operand_nodes):
    """``(flops, bytes)`` of one node, as its primitive counts them."""
    operands = [Meta(n.shape, n.dtype) for n in operand_nodes]
    flops, moved = lookup(node.opcode).cost(operands, node.meta, node.attrs)
    return int(flops), int(moved)


class Costs:
    """FLOPs and bytes moved: ``per_node`` (index -> (flops, bytes)), ``flops`` and ``bytes`` in total."""

    def __init__(self, per_node):
        self.per_node = per_node
        self.flops = sum(f for f, _ in per_node.values())
        self.bytes = sum(b for _, b in per_node.values())

    def node_text(self, index):
        """How ``describe(costs=True)`` shows one node's cost: ``[48 flops, 208 bytes]``."""
        flops, moved = self.per_node[index]
        return f"[{plural(flops, 'flop')}, {plural(moved, 'byte')}]"

    def total_text(self):
        """The total line of ``describe(costs=True)``: ``cost: 63 flops, 408 bytes moved``."""
        return f"cost: {plural(self.flops, 'flop')}, {plural(self.bytes, 'byte')} moved"

    def __repr__(self):
        return f"<Costs: {self.total_text()}>"


def plan_costs(plan):
    nodes = plan.nodes
    per_node = {i: node_cost(nodes[i], [nodes[j] for j in nodes[i].operands]) for i in plan.schedule}
    return Costs(per_node)
